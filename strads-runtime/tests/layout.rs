//! The workspace's layout keeps its shape, in each of its three library crates (the
//! runtime, the macros, the analysis): no source file over 600 lines (tests included), and
//! no module that uses one which uses it back (the graph of `crate::` and `super::` paths
//! between the top-level modules of a crate, and between the files of each folder at every
//! depth, has no cycle). Modules compiled only for tests (`#[cfg(test)] mod x;`, or an
//! inline `#[cfg(test)] mod tests { .. }`) may reach anywhere and are left out of the
//! graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `src` folders of the crates the layout rules hold for.
fn crates() -> Vec<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["strads-runtime", "strads-macros", "strads-analysis"]
        .iter()
        .map(|c| here.join("..").join(c).join("src"))
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("an entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a source file: `walk/eval.rs` is `walk::eval`, `walk/mod.rs` is
/// `walk`, `lib.rs` is the crate root (empty).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Whether the file is a module its parent declares only for tests.
fn test_only(src: &Path, file: &Path) -> bool {
    let m = module_of(src, file);
    let Some(name) = m.last() else {
        return false;
    };
    let parent_dir = if file.ends_with("mod.rs") {
        file.parent().and_then(Path::parent)
    } else {
        file.parent()
    }
    .expect("a folder");
    let parents = [
        parent_dir.join("mod.rs"),
        parent_dir.join("lib.rs"),
        parent_dir.with_extension("rs"),
    ];
    let declaration = format!("#[cfg(test)]\nmod {name};");
    parents
        .iter()
        .filter(|p| p.as_path() != file)
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .any(|text| text.contains(&declaration))
}

/// Code without comments (a doc link is not a dependency) and without an inline
/// `#[cfg(test)] mod tests` (the last item of a file).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn words(path: &str) -> Vec<String> {
    path.split("::")
        .map(|seg| {
            seg.trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .take_while(|s| !s.is_empty())
        .collect()
}

/// Every path after `root` (`"crate::"`, `"super::"`) in `code`, also each item of a group
/// (`use crate::{a, b::c}`), as its words.
fn paths(code: &str, root: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(root) {
        let after = &rest[i + root.len()..];
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            out.extend(group[..end].split(',').map(words).filter(|p| !p.is_empty()));
        } else {
            let path = words(after);
            if !path.is_empty() {
                out.push(path);
            }
        }
        rest = after;
    }
    out
}

/// The dependency graph between the modules just below `prefix` (the top-level modules for
/// an empty prefix, else the files of folder `prefix`).
fn graph(src: &Path, prefix: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.retain(|f| !test_only(src, f));
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (f, m) in files.iter().zip(&modules) {
        if m.len() <= prefix.len() || m[..prefix.len()] != *prefix {
            continue;
        }
        let from = m[prefix.len()].clone();
        let code = code(&std::fs::read_to_string(f).expect("readable"));
        let mut deps = paths(&code, "crate::");
        deps.retain(|p| p.len() > prefix.len() && p[..prefix.len()] == *prefix);
        // `super::x` in a file of the folder names sibling `x` (from `a/x/mod.rs`, `super`
        // is the folder itself: an item of `a/mod.rs`, no sibling).
        if !prefix.is_empty() && m.len() == prefix.len() + 1 {
            deps.extend(
                paths(&code, "super::")
                    .into_iter()
                    .map(|p| [prefix, &p].concat()),
            );
        }
        let entry = g.entry(from.clone()).or_default();
        for p in deps {
            let Some(to) = p.get(prefix.len()) else {
                continue;
            };
            let is_module = modules
                .iter()
                .any(|m| m.get(..=prefix.len()) == Some(&p[..=prefix.len()]));
            if *to != from && is_module {
                entry.insert(to.clone());
            }
        }
    }
    g
}

/// A cycle in `graph`, if any.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, bool>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), false);
        stack.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            match state.get(m) {
                Some(false) => {
                    let from = stack.iter().position(|s| s == m).expect("on the stack");
                    let mut c = stack[from..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                Some(true) => {}
                None => {
                    if let Some(c) = visit(m, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.to_string(), true);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n) {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_file_is_over_600_lines() {
    let mut long = Vec::new();
    for src in crates() {
        let mut files = Vec::new();
        sources(&src, &mut files);
        for f in files {
            let n = std::fs::read_to_string(&f)
                .expect("readable")
                .lines()
                .count();
            if n > 600 {
                long.push(format!("{} ({n} lines)", f.display()));
            }
        }
    }
    assert!(long.is_empty(), "files over 600 lines: {long:?}");
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let (mut checked, mut cycles) = (0, Vec::new());
    for src in crates() {
        let top = graph(&src, &[]);
        assert!(top.len() > 1, "{}: {top:?}", src.display());
        let mut files = Vec::new();
        sources(&src, &mut files);
        // The crate root, and every folder at every depth.
        let folders: BTreeSet<Vec<String>> = files
            .iter()
            .map(|f| module_of(&src, f))
            .flat_map(|m| (0..m.len()).map(move |k| m[..k].to_vec()))
            .collect();
        for folder in folders {
            let g = graph(&src, &folder);
            if let Some(c) = cycle(&g) {
                cycles.push(format!(
                    "in {}/{}: {} (the graph: {g:?})",
                    src.display(),
                    folder.join("/"),
                    c.join(" -> ")
                ));
            }
            checked += 1;
        }
    }
    assert!(cycles.is_empty(), "{}", cycles.join("\n"));
    // The three roots and their folders (29 today; the runtime alone has more than ten).
    assert!(checked > 20, "{checked} folders");
    // The graph sees what it should: the executor uses the plans.
    let runtime = &crates()[0];
    let top = graph(runtime, &[]);
    assert!(top["exec"].contains("plan"), "{top:?}");
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        paths(
            "use crate::{ir::Affine, dep};\nlet x = crate::report::report(s, a);",
            "crate::"
        ),
        vec![
            vec!["ir".to_string(), "Affine".to_string()],
            vec!["dep".to_string()],
            vec!["report".to_string(), "report".to_string()],
        ]
    );
    assert_eq!(
        paths("use super::{Walker, eval::Sym};\nuse super::*;", "super::"),
        vec![
            vec!["Walker".to_string()],
            vec!["eval".to_string(), "Sym".to_string()],
        ]
    );
}
