//! Collective data operations between calls, sans I/O: the driver asks every worker to run
//! an operation (`Msg::Data`: make a part of a data set, count a histogram, trade entries),
//! every rank runs it at once, the ranks trade bytes among themselves in numbered rounds
//! (`Msg::Exchange`), and each worker answers the driver (`Msg::DataReply`).
//!
//! These are how data live in parts on the ranks: a data set generated or loaded in place,
//! the facts the ranks agree on (shapes, histograms), and entries sent to the rank whose
//! blocks hold them.

use super::core::Core;
use super::msg::Msg;
use super::outputs::Outgoing;

/// Driver: asks every worker to run operation `op` with `args`; returns its number.
pub fn request(core: &mut Core, op: &str, args: &[u8]) -> u64 {
    core.data.next_req += 1;
    let req = core.data.next_req;
    for to in 1..core.size() {
        core.send_frame(Outgoing::Control {
            to,
            msg: Msg::Data {
                req,
                op: op.to_string(),
                args: args.to_vec(),
            },
        });
    }
    req
}

/// Worker: the next operation the driver asked for, `(req, op, args)`.
pub fn next_op(core: &mut Core) -> Option<(u64, String, Vec<u8>)> {
    core.data.ops.pop_front()
}

/// Worker: answers operation `req`.
pub fn reply(core: &mut Core, req: u64, data: Vec<u8>) {
    core.send_frame(Outgoing::Block {
        to: 0,
        msg: Msg::DataReply { req },
        data: data.into(),
    });
}

/// Driver: every worker's answer to operation `req`, by rank from 1, once all arrived.
pub fn take_replies(core: &mut Core, req: u64) -> Option<Vec<Vec<u8>>> {
    let here = core.data.replies.iter().filter(|(r, ..)| *r == req).count();
    if here + 1 < core.size() {
        return None;
    }
    Some(take_sorted(&mut core.data.replies, |(r, f, d)| {
        (*r == req).then(|| (*f, std::mem::take(d)))
    }))
}

/// Sends `data` to rank `to` in round `round` of operation `req`.
pub fn send_round(core: &mut Core, req: u64, round: u64, to: usize, data: Vec<u8>) {
    core.send_frame(Outgoing::Block {
        to,
        msg: Msg::Exchange { req, round },
        data: data.into(),
    });
}

/// What every other rank sent in round `round` of operation `req`, by rank, once all
/// arrived.
pub fn take_round(core: &mut Core, req: u64, round: u64) -> Option<Vec<(usize, Vec<u8>)>> {
    let size = core.size();
    let rounds = &mut core.data.rounds;
    let here = rounds
        .iter()
        .filter(|(q, r, ..)| *q == req && *r == round)
        .count();
    if here + 1 < size {
        return None;
    }
    let mut got = Vec::with_capacity(here);
    rounds.retain_mut(|(q, r, f, d)| {
        if *q == req && *r == round {
            got.push((*f, std::mem::take(d)));
            false
        } else {
            true
        }
    });
    got.sort_by_key(|(f, _)| *f);
    Some(got)
}

/// Takes the items `pick` chooses, sorted by rank.
fn take_sorted<I>(
    items: &mut Vec<I>,
    mut pick: impl FnMut(&mut I) -> Option<(usize, Vec<u8>)>,
) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    items.retain_mut(|i| match pick(i) {
        Some(x) => {
            got.push(x);
            false
        }
        None => true,
    });
    got.sort_by_key(|(f, _)| *f);
    got.into_iter().map(|(_, d)| d).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Delivers every frame `from` sends to the cores it names.
    fn deliver(cores: &mut [Core], from: usize) {
        while let Some(o) = cores[from].poll_transmit() {
            match o {
                Outgoing::Control { to, msg } => cores[to].handle(0, from, msg, None),
                Outgoing::Block { to, msg, data } => {
                    cores[to].handle(0, from, msg, Some(data.into()))
                }
            }
        }
    }

    #[test]
    fn an_operation_reaches_every_worker_and_its_rounds_and_replies_come_back_by_rank() {
        let mut cores: Vec<Core> = (0..3).map(|r| Core::new(r, 3, 1, 1_000, 0)).collect();
        let req = request(&mut cores[0], "count", &[7]);
        deliver(&mut cores, 0);
        for core in &mut cores[1..] {
            assert_eq!(next_op(core), Some((req, "count".into(), vec![7])));
            assert_eq!(next_op(core), None);
        }
        // A round: every rank sends every other its rank, twice over.
        for r in (0..3).rev() {
            for to in (0..3).filter(|&t| t != r) {
                send_round(&mut cores[r], req, 1, to, vec![r as u8; 2]);
            }
            deliver(&mut cores, r);
        }
        for (r, core) in cores.iter_mut().enumerate() {
            let got = take_round(core, req, 1).expect("every rank sent");
            let want: Vec<(usize, Vec<u8>)> = (0..3)
                .filter(|&f| f != r)
                .map(|f| (f, vec![f as u8; 2]))
                .collect();
            assert_eq!(got, want);
            assert_eq!(take_round(core, req, 1), None, "taken once");
        }
        reply(&mut cores[2], req, vec![2]);
        deliver(&mut cores, 2);
        assert_eq!(
            take_replies(&mut cores[0], req),
            None,
            "rank 1 has not answered"
        );
        reply(&mut cores[1], req, vec![1]);
        deliver(&mut cores, 1);
        assert_eq!(
            take_replies(&mut cores[0], req),
            Some(vec![vec![1], vec![2]])
        );
    }

    #[test]
    fn files_an_operation_writes_are_waited_for_until_their_ranks_say_so() {
        let mut cores: Vec<Core> = (0..3).map(|r| Core::new(r, 3, 1, 1_000, 0)).collect();
        let paths = ["c1-a0-p0.bin".to_string(), "c1-a0-p1.bin".to_string()];
        assert_eq!(cores[0].saving(&paths), Ok(false), "nothing asked yet");
        cores[0].expect_saved(&paths);
        assert_eq!(cores[0].saving(&paths), Ok(true));
        cores[1].send_saved(paths[0].clone(), true);
        deliver(&mut cores, 1);
        assert_eq!(cores[0].saving(&paths), Ok(true), "rank 2 has not answered");
        cores[2].send_saved(paths[1].clone(), false);
        deliver(&mut cores, 2);
        assert_eq!(cores[0].saving(&paths), Err(paths[1].clone()));
    }
}
