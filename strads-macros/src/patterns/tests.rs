//! The types `bindings` gives the names of `let`s, and the fixes it writes.

use super::show::show;
use super::{Fix, bindings};

/// Each name the last `let` of `src` binds, as `name: type`, or `name: ?` and its fix;
/// the `let`s before it are the known variables.
fn typed(src: &str) -> Vec<String> {
    let block: syn::Block = syn::parse_str(&format!("{{ {src} }}")).expect("statements");
    // The variables before: each name's type, when known.
    let mut known: Vec<(syn::Ident, Option<syn::Type>)> = Vec::new();
    let mut last = Vec::new();
    for stmt in &block.stmts {
        let syn::Stmt::Local(local) = stmt else {
            panic!("only `let`s");
        };
        let lookup = |name: &str| {
            known
                .iter()
                .rev()
                .find(|(i, _)| i == name)
                .and_then(|(_, t)| t.clone())
        };
        last = bindings(local, &lookup)
            .into_iter()
            .map(|b| {
                let m = if b.mutable { "mut " } else { "" };
                let ty = match (&b.ty, &b.fix) {
                    (Some(t), _) => show(t),
                    (None, Fix::Single) => "? let".to_owned(),
                    (None, Fix::Shape { decl, part }) => format!("? {decl}{}", plus(*part)),
                    (None, Fix::Rebind { decl, part }) => format!("? {decl}{}", plus(*part)),
                    (None, Fix::Array { decl }) => format!("? array {decl}"),
                };
                let line = format!("{m}{}: {ty}", b.ident);
                known.retain(|(i, _)| *i != b.ident);
                known.push((b.ident, b.ty));
                line
            })
            .collect();
    }
    last
}

/// ` (or evident)` when the fix may also be an evident part of the value.
fn plus(part: bool) -> &'static str {
    if part { " (or evident)" } else { "" }
}

#[test]
fn tuples() {
    assert_eq!(
        typed("let (lo, hi) = (1.0f32, 5.0f32);"),
        ["lo: f32", "hi: f32"]
    );
    assert_eq!(
        typed("let (lo, hi): (f32, f32) = (1.0, 5.0);"),
        ["lo: f32", "hi: f32"]
    );
    assert_eq!(
        typed("let (h, w) = (x.shape()[0], x.shape()[1]);"),
        ["h: usize", "w: usize"]
    );
    assert_eq!(
        typed("let ((a, b), c) = ((1u32, 2u32), 3.0f64);"),
        ["a: u32", "b: u32", "c: f64"]
    );
    assert_eq!(
        typed("let (mut s, t) = (0.0f64, 1u8);"),
        ["mut s: f64", "t: u8"]
    );
    assert_eq!(typed("let (one,) = (n as i32,);"), ["one: i32"]);
    assert_eq!(
        typed("let n: usize = 4; let (a, b) = (n, n * 2);"),
        ["a: usize", "b: usize"]
    );
}

/// `_` in the annotation takes the value's part; an alias is not split, so the value's
/// parts count (and only types no coercion changes).
#[test]
fn annotations() {
    assert_eq!(
        typed("let (a, b): (f32, _) = (1.0, 2u8);"),
        ["a: f32", "b: u8"]
    );
    assert_eq!(
        typed("let ((a, b), c): ((_, u16), (f64)) = ((1i8, 2), 3.0);"),
        ["a: i8", "b: u16", "c: f64"]
    );
    assert_eq!(
        typed("let (a, b): Pair = (1.0, 2u8);"),
        ["a: ? let (a, b): (Type, u8) = ..; (or evident)", "b: u8"]
    );
    assert_eq!(
        typed("let (a, b): Pair = (1.0f32, 2u8);"),
        ["a: f32", "b: u8"]
    );
    assert_eq!(
        typed("let s: &String = todo!(); let (a, b): Pair = (s, 2u8);"),
        ["a: ? let (a, b): (Type, u8) = ..;", "b: u8"]
    );
    assert_eq!(
        typed("let s: &String = todo!(); let (a, b) = (s, 2u8);"),
        ["a: &String", "b: u8"]
    );
    assert_eq!(
        typed("let p: (f32, u8) = todo!(); let (a, b) = p;"),
        ["a: f32", "b: u8"]
    );
    assert_eq!(typed("let x: _ = 3u8;"), ["x: u8"]);
}

#[test]
fn arrays() {
    assert_eq!(typed("let [a, b] = [0.5f32, 2.0];"), ["a: f32", "b: f32"]);
    assert_eq!(typed("let [a, b] = [0.5, 2.0f32];"), ["a: f32", "b: f32"]);
    assert_eq!(
        typed("let [a, b]: [f64; 2] = [1.0, 2.0];"),
        ["a: f64", "b: f64"]
    );
    assert_eq!(
        typed("let [first, rest @ ..] = [1u8, 2, 3];"),
        ["first: u8", "rest: [u8; 2]"]
    );
    assert_eq!(typed("let [a, .., z] = [0u16; 5];"), ["a: u16", "z: u16"]);
    assert_eq!(
        typed("let [(a, b), (c, d)] = [(1u8, 2.0f32), (3, 4.0)];"),
        ["a: u8", "b: f32", "c: u8", "d: f32"]
    );
    assert_eq!(
        typed("let [a, b] = [1.0, 2.0];"),
        [
            "a: ? let [a, b]: [Type; 2] = ..; (or evident)",
            "b: ? let [a, b]: [Type; 2] = ..; (or evident)"
        ]
    );
    assert_eq!(typed("let w = [0.5f32, 2.0];"), ["w: [f32; 2]"]);
    assert_eq!(typed("let z = [0u64; 3];"), ["z: [u64; 3]"]);
    assert_eq!(
        typed("let p = (1u8, (2.0f32, true));"),
        ["p: (u8, (f32, bool))"]
    );
}

/// A struct's fields show their types only in its definition: a struct literal of the
/// same path gives them (types no coercion changes), nothing else does.
#[test]
fn structs() {
    assert_eq!(
        typed("let Point { x, y: (a, b) } = Point { x: 1.0f32, y: (2u8, 3u8) };"),
        ["x: f32", "a: u8", "b: u8"]
    );
    assert_eq!(
        typed("let Point { x, y }: Point = make();"),
        [
            "x: ? let Point { x, y }: Point = ..; let x: Type = x;",
            "y: ? let Point { x, y }: Point = ..; let y: Type = y;"
        ]
    );
    assert_eq!(
        typed("let Point { x, .. } = Point { x: 1.0, y: 2.0 };"),
        ["x: ? let Point { x, .. } = ..; let x: Type = x; (or evident)"]
    );
    assert_eq!(
        typed("let Point { x, y } = Other { x: 1.0f32, y: 2.0f32 };"),
        [
            "x: ? let Point { x, y } = ..; let x: Type = x;",
            "y: ? let Point { x, y } = ..; let y: Type = y;"
        ]
    );
    assert_eq!(
        typed("let s: &String = todo!(); let Named { name } = Named { name: s };"),
        ["name: ? let Named { name } = ..; let name: Type = name;"]
    );
    assert_eq!(
        typed("let Pair(a, mut b) = Pair(1.0f32, 2u8);"),
        ["a: f32", "mut b: u8"]
    );
    assert_eq!(
        typed("let Some(x) = opt else { return; };"),
        ["x: ? let Some(x) = .. else { .. }; let x: Type = x;"]
    );
}

/// `ref`, `_`, `..`, `x @ p`, and references: written ones are followed, unwritten
/// ones make bindings references (default binding modes) unless `mut` or `ref` makes
/// that depend on the edition.
#[test]
fn sub_patterns() {
    assert_eq!(
        typed("let (ref a, _, .., z) = (1.0f32, 2u8, 3u8, 4i64);"),
        ["a: &f32", "z: i64"]
    );
    assert_eq!(typed("let (a, b) = &(1.0f32, 2u8);"), ["a: &f32", "b: &u8"]);
    assert_eq!(typed("let &(a, b) = &(1.0f32, 2u8);"), ["a: f32", "b: u8"]);
    assert_eq!(
        typed("let (a, b): &(f32, u8) = &(1.0, 2);"),
        ["a: &f32", "b: &u8"]
    );
    assert_eq!(
        typed("let (mut a, b) = &(1.0f32, 2u8);"),
        [
            "mut a: ? let (mut a, b) = ..; let mut a: Type = a;",
            "b: &u8"
        ]
    );
    assert_eq!(
        typed("let p @ (a, _) = (1u8, 2u8);"),
        ["p: (u8, u8)", "a: u8"]
    );
    assert_eq!(
        typed("let (a, ..) = bounds();"),
        ["a: ? let (a, ..) = ..; let a: Type = a;"]
    );
    assert_eq!(
        typed("let (Ok(x) | Err(x)) = r;"),
        ["x: ? let (Ok(x) | Err(x)) = ..; let x: Type = x;"]
    );
}

/// Unknown parts get a fix written for the pattern's shape, with the known parts'
/// types filled in.
#[test]
fn fixes() {
    assert_eq!(
        typed("let (lo, hi) = bounds();"),
        [
            "lo: ? let (lo, hi): (Type, _) = ..;",
            "hi: ? let (lo, hi): (_, Type) = ..;"
        ]
    );
    assert_eq!(
        typed("let (lo, (mid, hi)) = (step(), (1u8, 2.0));"),
        [
            "lo: ? let (lo, (mid, hi)): (Type, (u8, _)) = ..; (or evident)",
            "mid: u8",
            "hi: ? let (lo, (mid, hi)): (_, (u8, Type)) = ..; (or evident)"
        ]
    );
    assert_eq!(typed("let step = step_of(lr);"), ["step: ? let"]);
    assert_eq!(
        typed("let (a, s): (DistArray<f32, 1>, f32) = make();"),
        ["a: ? array let a: DistArray<f32, 1> = ..;", "s: f32"]
    );
    assert_eq!(typed("let n = 3usize; let n = n * 2;"), ["n: usize"]);
}

#[test]
fn shown() {
    let t: syn::Type = syn::parse_str("&'a mut std::vec::Vec<(f32, [u8; 2])>").unwrap();
    assert_eq!(show(&t), "&'a mut std::vec::Vec<(f32, [u8; 2])>");
    for src in [
        "(mut lo, ref hi)",
        "&mut (a, _)",
        "Some(x)",
        "Point { x: (a, b), .. }",
        "[first, rest @ ..]",
        "E::A(x) | E::B(x)",
    ] {
        let p = syn::parse::Parser::parse_str(syn::Pat::parse_multi, src).unwrap();
        assert_eq!(show(&p), src);
    }
}

#[test]
fn advice() {
    let ex = "`0u64`";
    assert_eq!(
        Fix::Single.advice("step", false, "", ex),
        "write `let step: Type = ..;`, or give the value an evident type (`0u64`)"
    );
    let shape = Fix::Shape {
        decl: "let (lo, hi): (Type, f32) = ..;".into(),
        part: true,
    };
    assert_eq!(
        shape.advice("lo", false, " (`f32`)", ex),
        "write `let (lo, hi): (Type, f32) = ..;` (`f32`), or give `lo`'s part of the \
         value an evident type (`0u64`)"
    );
}
