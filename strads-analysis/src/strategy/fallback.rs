//! The fallback's explanation: why a loop planned by reconnaissance has no static plan
//! (`fallback_note`), and which write-back buffers would give it one (`buffer_hint`, found
//! by analysing the loop again without them). Both are `None` for a loop with a static
//! plan, and a hint names buffers only when the loop with them is proved static.

use super::{Analysis, Strategy, analyze, describe};
use crate::ir::{ArrayId, LoopSpec};

/// Arrays that a write-back buffer (`buffer(..)`) could take, and the static strategy the
/// loop would then have: tried for each array the loop only adds to (`a[..] += e`), then
/// for all of them together. `None` when the loop has a static strategy already, or no
/// set of buffers gives it one.
pub fn buffer_hint(spec: &LoopSpec) -> Option<(Vec<ArrayId>, Strategy)> {
    let additive: Vec<ArrayId> = (0..spec.arrays.len())
        .filter(|&a| spec.arrays[a].additive && spec.writes(a))
        .collect();
    let mut tries: Vec<Vec<ArrayId>> = additive.iter().map(|&a| vec![a]).collect();
    if additive.len() > 1 {
        tries.push(additive.clone());
    }
    tries.into_iter().find_map(|buffered| {
        let mut s = spec.clone();
        s.arrays = s
            .arrays
            .iter()
            .enumerate()
            .map(|(a, arr)| {
                let mut arr = arr.clone();
                if buffered.contains(&a) {
                    arr.mutable = false;
                    arr.additive = false;
                    arr.steers = false;
                }
                arr
            })
            .collect();
        // A buffer takes no part in the analysis: its accesses go to per-worker copies.
        s.accesses = s
            .accesses
            .iter()
            .filter(|acc| !buffered.contains(&acc.array))
            .cloned()
            .collect();
        let c = analyze(&s).candidates.into_iter().next()?;
        (c.strategy != Strategy::Reconnaissance).then_some((buffered, c.strategy))
    })
}

/// Why a loop planned by reconnaissance has no static plan, and what would give it one:
/// for the report and `STRADS_EXPLAIN`. `None` for a loop with a static plan.
pub fn fallback_note(spec: &LoopSpec, analysis: &Analysis) -> Option<String> {
    let c = analysis.candidates.first()?;
    if c.strategy != Strategy::Reconnaissance {
        return None;
    }
    let mut note = if spec.has_indirect() {
        "a subscript is read from data or computed, so no static plan can be proved".to_string()
    } else {
        format!(
            "no static strategy ({}), so the accesses are recorded at run time",
            analysis.reason.as_deref().unwrap_or("none applies")
        )
    };
    if let Some((arrays, s)) = buffer_hint(spec) {
        let names: Vec<&str> = arrays
            .iter()
            .map(|&a| spec.arrays[a].name.as_ref())
            .collect();
        note.push_str(&format!(
            "; `buffer({})` would make it {} ({}): each worker then adds into its own copy, \
             merged in worker order at the end of every step, and reads of {} inside the loop \
             see this worker's updates only",
            names.join(", "),
            s.kind(),
            describe(spec, s),
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    Some(note)
}
