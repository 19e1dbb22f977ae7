// The attribute on something other than a function is an error that says where it goes.

#[strads::parallel_for]
struct Model {
    lr: f32,
}

fn main() {}
