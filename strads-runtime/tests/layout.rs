//! The runtime's layout keeps its shape: no source file over 600 lines, and no module that
//! uses one which uses it back (the graph of `crate::` paths between the top-level modules,
//! and between the files of each folder, has no cycle).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module path of a source file: `exec/block.rs` is `exec::block`, `plan/mod.rs` is
/// `plan`, `lib.rs` is the crate root (empty).
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Code without comments (a doc link is not a dependency) and without `#[cfg(test)]`
/// modules' bodies (tests may reach anywhere).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::a::b..` path in `code`, also inside `use crate::{a, b::c}` groups.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if after.starts_with('{') {
            // `crate::{a::b, c}`: each item of the group.
            let end = after.find('}').unwrap_or(after.len());
            for item in after[1..end].split(',') {
                let path: Vec<String> = item
                    .trim()
                    .split("::")
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'))
                    .collect();
                if !path.is_empty() {
                    out.push(path);
                }
            }
        } else {
            let path: Vec<String> = after
                .split("::")
                .map(|seg| {
                    seg.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .take_while(|s| !s.is_empty())
                .collect();
            if !path.is_empty() {
                out.push(path);
            }
        }
        rest = after;
    }
    out
}

/// A cycle in `graph`, if any.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|s| s == m).expect("on the stack");
                    let mut c = stack[from..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n.as_str()) {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The dependency graph between modules at `depth` below `prefix` (depth 1 under the root:
/// top-level modules; under `exec`: its files).
fn graph(prefix: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let top: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_of(f).first().cloned())
        .collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let m = module_of(f);
        if m.len() <= prefix.len() || m[..prefix.len()] != *prefix {
            continue;
        }
        let from = m[prefix.len()].clone();
        let text = std::fs::read_to_string(f).expect("readable");
        let code = code(&text);
        let mut deps: Vec<Vec<String>> = crate_paths(&code);
        // `super::x` inside a folder names a sibling.
        if prefix.is_empty() {
            deps.retain(|p| top.contains(&p[0]));
        } else {
            deps.retain(|p| p.len() > prefix.len() && p[..prefix.len()] == *prefix);
            let mut rest = code.as_str();
            while let Some(i) = rest.find("super::") {
                let after = &rest[i + 7..];
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                // From `exec/x.rs`, `super::y` is `exec::y`; from `exec/x/mod.rs`, deeper.
                if m.len() == prefix.len() + 1 && !name.is_empty() {
                    let mut p = prefix.to_vec();
                    p.push(name);
                    deps.push(p);
                }
                rest = after;
            }
        }
        let entry = g.entry(from.clone()).or_default();
        for p in deps {
            let to = p[prefix.len()].clone();
            if to != from
                && (prefix.is_empty()
                    || files.iter().any(|f| {
                        module_of(f).get(..prefix.len() + 1) == Some(&p[..prefix.len() + 1])
                    }))
            {
                entry.insert(to);
            }
        }
    }
    g
}

#[test]
fn no_runtime_file_is_over_600_lines() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f)
                .expect("readable")
                .lines()
                .count();
            (n > 600).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "files over 600 lines: {long:?}");
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let top = graph(&[]);
    assert!(
        top.contains_key("exec") && top["exec"].contains("plan"),
        "{top:?}"
    );
    assert_eq!(cycle(&top), None, "top-level modules: {top:?}");
    for folder in ["exec", "plan", "array", "space", "pool", "trace"] {
        let g = graph(&[folder.to_string()]);
        assert_eq!(cycle(&g), None, "in {folder}/: {g:?}");
    }
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
        crate_paths("use crate::{plan::Window, sync};\nlet x = crate::pool::in_worker();"),
        vec![
            vec!["plan".to_string(), "Window".to_string()],
            vec!["sync".to_string()],
            vec!["pool".to_string(), "in_worker".to_string()],
        ]
    );
}
