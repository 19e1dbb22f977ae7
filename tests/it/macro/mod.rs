//! What `#[parallel_for]` accepts and refuses: trybuild's compile-fail cases with their exact
//! diagnostics, the loop IR, loops once refused, edge cases of spaces, reconnaissance
//! fallbacks, features combined, and panics that name the user's line.

mod bridged;
mod combinations;
mod edge_cases;
mod fallback;
mod loop_ir;
mod loops_accepted;
mod out_of_bounds;
mod panic_safety;
mod ui;
