//! Processes below a test's child, from /proc: to kill one of them, and to check that none
//! is left behind.

#![allow(dead_code)]

use std::collections::BTreeSet;

/// Every process id below `pid` (children, grandchildren), through each of its threads'
/// children (a child's parent is the thread that forked it).
pub(crate) fn descendants(pid: u32) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let f = t.path().join("children");
            if let Ok(s) = std::fs::read_to_string(f) {
                for c in s.split_whitespace().filter_map(|c| c.parse().ok()) {
                    if out.insert(c) {
                        todo.push(c);
                    }
                }
            }
        }
    }
    out
}

/// Whether process `pid` still runs (a zombie, reaped by nobody yet, runs nothing).
pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
}
