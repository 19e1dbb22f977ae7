// Control flow that stays inside one iteration is fine: `break` and `continue` of an inner
// loop, `continue` of the parallel loop (plain and labelled), and `return` / `?` inside a
// closure. The result equals the serial loop's.

use strads::prelude::*;

#[strads::parallel_for]
fn row_prefix(x: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>, limit: f32) {
    'rows: for i in 0..out.len() {
        if x[[i, 0]] < 0.0 {
            continue;
        }
        if x[[i, 0]] > 100.0 {
            continue 'rows;
        }
        let clamp = |v: f32| -> f32 {
            if v > limit {
                return limit;
            }
            v
        };
        let parse =
            |s: &str| -> Result<f32, std::num::ParseFloatError> { Ok(s.parse::<f32>()? + 0.0) };
        let mut acc = parse("0").unwrap_or(0.0);
        for k in 0..4 {
            let v = x[[i, k]];
            if v == 0.0 {
                continue;
            }
            if v < 0.0 {
                break;
            }
            acc += clamp(v);
        }
        let mut n = 0;
        while n < 3 {
            n += 1;
            if n == 2 {
                break;
            }
        }
        loop {
            break;
        }
        out[i] = acc + n as f32;
    }
}

fn main() {
    let x = DistArray::from_vec(
        [4, 4],
        vec![
            1.0, 0.0, 9.0, -1.0, // 1 + 0 (skipped) + clamp(9) = 6, then break
            -1.0, 5.0, 5.0, 5.0, // skipped by `continue`
            200.0, 1.0, 1.0, 1.0, // skipped by `continue 'rows`
            2.0, 3.0, 4.0, 6.0, // 2 + 3 + 4 + 5
        ],
    )
    .unwrap();
    let mut out = DistArray::from_fn([4], |_| -7.0);
    row_prefix(&x, &mut out, 5.0);
    assert_eq!(out.as_slice(), &[8.0, -7.0, -7.0, 16.0]);
}
