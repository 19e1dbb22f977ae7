// A method with `self` is an error at `&mut self`: the macro goes on a free function that
// takes the fields it needs.

use strads::prelude::*;

struct Model {
    w: DistArray<f32, 2>,
}

impl Model {
    #[strads::parallel_for]
    fn epoch(&mut self, ratings: &SparseArray<f32, 2>, lr: f32) {
        for ([u, _i], &r) in ratings {
            self.w[[u, 0]] += lr * r;
        }
    }
}

fn main() {}
