// `sync = ".."` (STRADS-AP's data-parallel SyncFor): the modes it knows, `batch` only with
// it, and not beside `buffer(..)`, each an error at the option with what to write instead;
// `merge` only with `sync`, and a function. A `sync` loop that writes integers cannot
// average them, and a `"hybrid"` one cannot share a replica of elements without an atomic
// counterpart.

use strads::prelude::*;

#[strads::parallel_for(buffer(out), sync = "bsp")]
fn with_buffer(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

#[strads::parallel_for(sync = "hybrid", merge = strads::merge::sum)]
fn hybrid_u16(x: &DistArray<u16, 1>, out: &mut DistArray<u16, 1>) {
    for i in 0..x.len() {
        out[x[i] as usize] += 1;
    }
}

#[strads::parallel_for(sync = "asp")]
fn unknown(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

#[strads::parallel_for(batch = 64)]
fn batch_alone(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

#[strads::parallel_for(sync = "ssp(2)", batch = 0)]
fn no_batch(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

#[strads::parallel_for(sync = "bsp")]
fn counts(x: &DistArray<u32, 1>, out: &mut DistArray<u32, 1>) {
    for i in 0..x.len() {
        out[x[i] as usize] += 1;
    }
}

#[strads::parallel_for(merge = strads::merge::sum)]
fn merge_alone(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

#[strads::parallel_for(sync = "bsp", merge = "sum")]
fn merge_string(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
