use super::macros::inline_format_args;
use proc_macro2::TokenStream;
use quote::quote;
use strads_analysis::Subscript;

/// The walk of the loop in `item`, with the array names by index.
fn walked(item: TokenStream) -> (super::Walked, Vec<String>) {
    let item: syn::ItemFn = syn::parse2(item).expect("a function");
    let cx = crate::ctxt::Ctxt::new();
    let f = crate::front::LoopFn::from_syn(&cx, &item, TokenStream::new()).expect("a loop");
    let walked = super::walk(&f);
    crate::check::check(&cx, &f, &walked);
    cx.check().expect("no errors");
    let names = f.arrays.iter().map(|a| a.ident.to_string()).collect();
    (walked, names)
}

/// Each access of the loop in `item`: the array's name and the subscripts the walk
/// found, `Indirect` as `?`, affine forms as their coefficients and constant.
fn accesses(item: TokenStream) -> Vec<String> {
    let (walked, names) = walked(item);
    walked
        .accesses
        .iter()
        .map(|a| {
            let subs: Vec<String> = a
                .subscripts
                .iter()
                .map(|s| match s {
                    Subscript::Affine(f) => format!("{:?}+{}", f.coeffs, f.constant),
                    Subscript::Full => "*".into(),
                    Subscript::Indirect => "?".into(),
                })
                .collect();
            format!("{}[{}]", names[a.array], subs.join(", "))
        })
        .collect()
}

/// A local changed after its `let` holds another value at the subscript than the one
/// it was bound to: not affine (it used to be analysed as `i`, a wrong 1D plan).
#[test]
fn mutated_locals_are_not_affine() {
    let found = accesses(quote! {
        fn f(c: &DistArray<bool, 1>, a: &mut DistArray<f32, 1>, n: usize) {
            for i in 0..n {
                let mut j = i;
                if c[i] {
                    j += 1;
                }
                a[j] += 1.0;
                let mut k = i;
                k.add_assign(2);
                a[k] += 1.0;
                let mut l = i;
                bump(&mut l);
                a[l] += 1.0;
                let mut m = (i, i);
                m.0 = 3;
                a[m.0] += 1.0;
                let mut q = i;
                unknown_macro!(q);
                a[q] += 1.0;
                let r = i + 1;
                a[r] += 1.0;
                let mut s = i + 2;
                a[s] += 1.0;
            }
        }
    });
    assert_eq!(
        found,
        [
            "c[[1]+0]", "a[?]", "a[?]", "a[?]", "a[?]", "a[?]", "a[[1]+1]", "a[[1]+2]"
        ]
    );
}

/// The loop's own index bound `mut` and changed is not the index either.
#[test]
fn mutated_loop_indices_are_not_affine() {
    let found = accesses(quote! {
        fn f(a: &mut DistArray<f32, 2>, n: usize) {
            for i in 0..n {
                for mut j in 0..n {
                    j = j / 2;
                    a[[i, j]] += 1.0;
                }
            }
        }
    });
    assert_eq!(found, ["a[[1, 0]+0, ?]"]);
    let found = accesses(quote! {
        fn f(a: &mut DistArray<f32, 1>, n: usize) {
            for mut i in 0..n {
                if i > 3 {
                    i -= 1;
                }
                a[i] += 1.0;
            }
        }
    });
    assert_eq!(found, ["a[?]"]);
    let found = accesses(quote! {
        fn f(r: &SparseArray<f32, 2>, a: &mut DistArray<f32, 2>) {
            for ([mut u, i], &x) in r {
                u = u / 2;
                a[[u, i]] += x;
            }
        }
    });
    assert_eq!(found, ["a[?, [0, 1]+0]"]);
}

/// Casts into narrow integers wrap and casts into floats round: not affine.
#[test]
fn narrowing_casts_are_not_affine() {
    let found = accesses(quote! {
        fn f(a: &mut DistArray<f32, 1>, n: usize) {
            for i in 0..n {
                a[(i as u8) as usize] += 1.0;
                a[(i as f32) as usize] += 1.0;
                a[(i as u64) as usize] += 1.0;
            }
        }
    });
    assert_eq!(found, ["a[?]", "a[?]", "a[[1]+0]"]);
}

#[test]
fn format_args() {
    assert_eq!(
        inline_format_args("{lr} {{x}} {0} {k:.3} {}"),
        vec!["lr".to_string(), "k".to_string()]
    );
    assert_eq!(
        inline_format_args("{:>width$} {x:.prec$} {:1$} {:x>5}"),
        vec!["width".to_string(), "x".to_string(), "prec".to_string()]
    );
}
