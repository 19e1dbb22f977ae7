//! Compile-fail and pass cases of `#[strads::parallel_for]`: every error points at the one
//! offending token and says what to write instead; every pass case compiles and runs.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/fail_*.rs");
    t.pass("tests/ui/*/pass_*.rs");
}
