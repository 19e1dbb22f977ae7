use super::*;

fn acc(iters: &[&[(u64, bool)]]) -> Accesses {
    let mut a = Accesses::new();
    for it in iters {
        for &(e, w) in *it {
            a.touch(e, w);
        }
        a.end_iteration();
    }
    a
}

#[test]
fn disjoint_writers_spread_and_shared_reads_do_not_conflict() {
    // Four iterations writing their own element and reading element 9 (never written).
    let a = acc(&[
        &[(0, true), (9, false)],
        &[(1, true), (9, false)],
        &[(2, true), (9, false)],
        &[(3, true), (9, false)],
    ]);
    let p = plan_groups(&a, 10, 2, 100);
    assert_eq!(p.batches.len(), 1);
    let b = &p.batches[0];
    assert_eq!(b.groups, 4);
    assert_eq!(b.runs, vec![vec![0, 2], vec![1, 3]]);
    assert_eq!(b.owned, vec![vec![0, 2], vec![1, 3]]);
    assert_eq!(b.reads, vec![vec![9], vec![9]]);
    assert_eq!(p.prefetch(1), vec![9]);
}

#[test]
fn a_shared_written_element_joins_everyone() {
    let a = acc(&[&[(0, true)], &[(0, false), (1, true)], &[(2, true)]]);
    let p = plan_groups(&a, 3, 2, 100);
    let b = &p.batches[0];
    assert_eq!(b.groups, 2);
    assert_eq!(b.runs, vec![vec![0, 1], vec![2]]);
    assert_eq!(b.largest, 2);
}

#[test]
fn batches_cut_components() {
    // Iterations 0 and 2 share element 5, but batches of 2 keep them apart.
    let a = acc(&[&[(5, true)], &[(6, true)], &[(5, true)], &[(7, true)]]);
    let p = plan_groups(&a, 8, 2, 2);
    assert_eq!(p.batches.len(), 2);
    assert!(p.batches.iter().all(|b| b.groups == 2));
}

#[test]
fn repeated_touches_merge() {
    let a = acc(&[
        &[(4, false), (2, false), (4, true), (2, false)],
        &[(1, false)],
    ]);
    assert_eq!(a.of(0).collect::<Vec<_>>(), vec![(2, false), (4, true)]);
    assert_eq!(a.weight(0), 2);
    assert_eq!(a.of(1).collect::<Vec<_>>(), vec![(1, false)]);
}

#[test]
fn a_chain_is_split_into_pieces_that_overlap_in_time() {
    // Iteration i writes elements i and i + 1: one component, but only neighbours meet.
    let n = 400;
    let chain: Vec<Vec<(u64, bool)>> = (0..n).map(|i| vec![(i, true), (i + 1, true)]).collect();
    let refs: Vec<&[(u64, bool)]> = chain.iter().map(Vec::as_slice).collect();
    let p = plan_groups(&acc(&refs), n + 1, 2, 1000);
    let b = &p.batches[0];
    assert_eq!((b.groups, b.split), (1, 1));
    assert!(b.runs.iter().all(Vec::is_empty));
    assert_eq!(b.pieces.len(), 32);
    // Worker 1's first piece starts at once; worker 0's last waits for it (element 200)
    // and for worker 0's piece before it (element 188).
    let w1_first = b.pieces.iter().position(|pc| pc.worker == 1).unwrap();
    assert!(b.pieces[w1_first].after.is_empty());
    assert_eq!(b.pieces[w1_first].iters[0], 200);
    let w0_last = b.pieces.iter().rposition(|pc| pc.worker == 0).unwrap();
    assert_eq!(
        b.pieces[w0_last].after,
        vec![w1_first as u32, w0_last as u32 - 2]
    );
    assert_eq!(b.pieces[w0_last].iters[0], 188);
    assert_eq!(b.levels(), 16);
    assert_eq!(b.shared.len(), n as usize + 1);
    assert!(b.owned.iter().all(Vec::is_empty));
}

#[test]
fn a_hub_every_iteration_writes_is_not_split() {
    // Element 0 in every iteration: pieces would run one after another.
    let it: Vec<Vec<(u64, bool)>> = (0..400)
        .map(|i| vec![(0, true), (1 + i % 50, true)])
        .collect();
    let refs: Vec<&[(u64, bool)]> = it.iter().map(Vec::as_slice).collect();
    let p = plan_groups(&acc(&refs), 51, 2, 1000);
    let b = &p.batches[0];
    assert_eq!((b.groups, b.split, b.levels()), (1, 0, 0));
    assert!(b.pieces.is_empty() && b.shared.is_empty());
    assert_eq!(b.runs[0].len(), 400);
}

/// Whether piece `later` waits, directly or through others, for piece `earlier`.
fn waits_for(b: &Batch, later: usize, earlier: usize) -> bool {
    let mut stack = vec![later];
    let mut seen = vec![false; b.pieces.len()];
    while let Some(k) = stack.pop() {
        for &a in &b.pieces[k].after {
            let a = a as usize;
            if a == earlier {
                return true;
            }
            if !seen[a] {
                seen[a] = true;
                stack.push(a);
            }
        }
    }
    false
}

/// Pairs of pieces that share a written element and whose serial order the plan does
/// not enforce (the later one in serial order may run before the earlier).
fn unordered_pairs(b: &Batch) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for x in 0..b.pieces.len() {
        for y in 0..b.pieces.len() {
            let (px, py) = (&b.pieces[x], &b.pieces[y]);
            let share = px.elems.iter().any(|e| py.elems.contains(e));
            if x != y && share && px.iters[0] < py.iters[0] && !waits_for(b, y, x) {
                out.push((x, y));
            }
        }
    }
    out
}

/// A chain through an index array: iteration `i` adds element `idx[i - 1]` into
/// element `idx[i]` (a running sum). With `ordered`, every two pieces that share an
/// element wait in serial order, and the replay order `(level, worker)` lists them in
/// serial order; unordered, the `(round, worker)` order breaks some of those pairs.
#[test]
fn ordered_pieces_keep_the_serial_order_of_conflicts() {
    let n = 1200u64;
    let idx: Vec<u64> = (0..n).map(|i| (i * 7919 + i / 3) % 300).collect();
    let it: Vec<Vec<(u64, bool)>> = (0..n as usize)
        .map(|i| {
            let mut v = vec![(idx[i], true)];
            if i > 0 {
                v.push((idx[i - 1], false));
            }
            v
        })
        .collect();
    let refs: Vec<&[(u64, bool)]> = it.iter().map(Vec::as_slice).collect();
    let a = acc(&refs);
    for workers in 2..=4 {
        // Force the split: the simulation must not veto it for this check, so look at
        // the cut itself.
        let g: Vec<u32> = (0..n as u32).collect();
        let written = vec![1u32; 300];
        for ordered in [false, true] {
            let mut last = vec![(0u32, 0u32); 300];
            let cut = split_component(
                &a,
                &g,
                workers,
                &vec![0; workers],
                &mut last,
                &written,
                1,
                ordered,
            );
            let b = Batch {
                pieces: cut.pieces,
                ..Batch::default()
            };
            let bad = unordered_pairs(&b);
            if ordered {
                assert_eq!(bad, vec![], "{workers} workers");
                // The replay order (level, worker) is the serial order of conflicts.
                let mut order: Vec<usize> = (0..b.pieces.len()).collect();
                order.sort_by_key(|&k| (b.pieces[k].level, b.pieces[k].worker));
                for (i, &x) in order.iter().enumerate() {
                    for &y in &order[i + 1..] {
                        let (px, py) = (&b.pieces[x], &b.pieces[y]);
                        if px.elems.iter().any(|e| py.elems.contains(e)) {
                            assert!(px.iters[0] < py.iters[0]);
                        }
                    }
                }
            } else {
                assert!(
                    !bad.is_empty(),
                    "{workers} workers: the check must see them"
                );
            }
        }
        // Through the planner: an ordered plan never breaks a conflict's order.
        let p = plan_groups_with(&a, 300, workers, 100_000, true, true);
        for b in &p.batches {
            assert_eq!(unordered_pairs(b), vec![]);
        }
    }
}
