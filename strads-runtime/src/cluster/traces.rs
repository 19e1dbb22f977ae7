//! A recorded call across processes (`testing::record`): each worker rank traces what
//! its workers ran and sends it to the driver (`Msg::Trace`, a block frame: a trace may
//! be larger than a control message), which puts every rank's lists into one `LoopRun`.

use super::session::Session;

/// What a call's workers ran: `steps[t][w]`, the iteration ids worker `w` ran at step `t`
/// (`threads::execute`'s trace; only this rank's workers' lists are filled).
pub(crate) type Steps = Vec<Vec<Vec<usize>>>;

/// A worker rank's trace for the driver: its workers' lists, as `(step, worker, ids)`.
pub(super) fn encode(steps: &Steps, local: std::ops::Range<usize>) -> Vec<u8> {
    let mine: Vec<(usize, usize, &[usize])> = steps
        .iter()
        .enumerate()
        .flat_map(|(t, step)| {
            let local = local.clone();
            step.iter()
                .enumerate()
                .filter(move |(w, ids)| local.contains(w) && !ids.is_empty())
                .map(move |(w, ids)| (t, w, ids.as_slice()))
        })
        .collect();
    postcard::to_allocvec(&mine).expect("a trace encodes")
}

/// Driver: every worker rank's trace of recorded call `seq` of loop `name`, into `steps`
/// (which holds the driver's workers' lists); a trace that does not fit fails the job.
pub(super) fn gather(session: &'static Session, seq: u64, name: &str, steps: &mut Steps) {
    for r in 1..session.size {
        let bytes = session.wait(|core| core.take_trace(seq, r));
        let local = r * session.threads..(r + 1) * session.threads;
        if let Err(e) = merge(steps, local, &bytes) {
            session.fail(format!("loop `{name}`: rank {r} sent {e}"));
        }
    }
}

/// Puts a worker rank's trace ([`encode`]) into the driver's `steps`: each list must
/// name a step of the call and one of that rank's workers (`local`), once.
pub(super) fn merge(
    steps: &mut Steps,
    local: std::ops::Range<usize>,
    bytes: &[u8],
) -> Result<(), String> {
    let theirs: Vec<(usize, usize, Vec<usize>)> = postcard::from_bytes(bytes)
        .map_err(|e| format!("a trace of its workers that does not decode ({e})"))?;
    for (t, w, ids) in theirs {
        let slot = steps
            .get_mut(t)
            .and_then(|s| s.get_mut(w))
            .filter(|slot| local.contains(&w) && slot.is_empty())
            .ok_or_else(|| {
                format!("a trace naming step {t} of worker {w}, which is not one of its tasks")
            })?;
        *slot = ids;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_s_lists_go_into_their_places_once() {
        // 2 steps of 4 workers; rank 1 has workers 2 and 3.
        let mut theirs: Steps = vec![vec![Vec::new(); 4]; 2];
        theirs[0][2] = vec![5, 6];
        theirs[1][3] = vec![7];
        // Lists of other workers are not sent.
        theirs[0][0] = vec![99];
        let bytes = encode(&theirs, 2..4);
        let mut steps: Steps = vec![vec![Vec::new(); 4]; 2];
        steps[0][0] = vec![1, 2];
        merge(&mut steps, 2..4, &bytes).unwrap();
        assert_eq!(steps[0], vec![vec![1, 2], vec![], vec![5, 6], vec![]]);
        assert_eq!(steps[1], vec![vec![], vec![], vec![], vec![7]]);
        // Again: a list twice. Another rank's workers, a step beyond the call, bytes cut
        // short: errors.
        let twice = merge(&mut steps, 2..4, &bytes).unwrap_err();
        assert!(twice.contains("step 0 of worker 2"), "{twice}");
        let mut fresh: Steps = vec![vec![Vec::new(); 4]; 2];
        assert!(merge(&mut fresh, 0..2, &bytes).is_err());
        let mut short: Steps = vec![vec![Vec::new(); 4]; 1];
        assert!(
            merge(&mut short, 2..4, &bytes)
                .unwrap_err()
                .contains("step 1")
        );
        let cut = merge(&mut fresh, 2..4, &bytes[..bytes.len() - 1]).unwrap_err();
        assert!(cut.contains("does not decode"), "{cut}");
    }
}
