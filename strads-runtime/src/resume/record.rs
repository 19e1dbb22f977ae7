//! After a call that ran: its log entry, and a checkpoint when one is due (module docs of
//! [`resume`](super)).

use std::time::Instant;

use super::manifest::CallEntry;
use super::manifest::{Manifest, SavedArray, SavedOutput, SavedPart};
use super::writer::{Content, Job, array_file, output_file, part_file};
use super::{GIVE_UP, Held, Recovery, Saved, Tracked, fatal, output};
use crate::checkpoint::{Staged, Sum};

impl Recovery {
    /// Whether a checkpoint is due after this call: one under way, or a new one when the
    /// last is written and old enough.
    pub(super) fn due(&self) -> bool {
        !self.writer.failed()
            && (self.under_way || (!self.writer.busy() && self.last.elapsed() >= self.every))
    }

    /// A checkpoint stayed under way for [`GIVE_UP`] calls: the arrays still to save are not
    /// named by the calls that run (serial code changed them after the last call that
    /// wrote them, and no call writes them again). Said once; tried again later.
    fn give_up(&mut self) {
        self.under_way = false;
        self.under_way_calls = 0;
        self.last = Instant::now();
        if std::mem::replace(&mut self.gave_up, true) {
            return;
        }
        let waiting: Vec<String> = self
            .tracked
            .values()
            .filter(|t| !t.clean())
            .map(|t| {
                let (call, param, _) = t.written.unwrap_or(t.seen);
                format!("{} (argument {} of call {call})", t.kind, param + 1)
            })
            .collect();
        crate::log::say!(
            Warn,
            "strads: checkpoint: no complete checkpoint after {GIVE_UP} calls: serial code \
             changed {} after the last call that wrote it, and no call names it again; pass \
             it to a loop that writes it after the change, or drop it",
            waiting.join(", ")
        );
    }

    /// Notes array `h` at parameter `pos` of call `k`.
    pub(super) fn note(&mut self, k: u64, pos: usize, h: &Held<'_>) -> u64 {
        let a = h.kept();
        let (id, version) = a.kept_key();
        let t = self.tracked.entry(id).or_insert_with(|| {
            a.kept_track();
            Tracked {
                id,
                kind: a.kept_kind(),
                seen: (k, pos, version),
                written: None,
                saved: None,
            }
        });
        t.seen = (k, pos, version);
        if matches!(h, Held::Written(_)) {
            t.written = Some((k, pos, version));
        }
        id
    }

    /// After call `k` ran: its log entry, and a checkpoint when one is due.
    pub(super) fn record(&mut self, k: u64, name: &str, arrays: &mut [Held<'_>], values: Vec<u8>) {
        let i = (k - 1) as usize;
        if self.calls.len() <= i {
            self.calls.resize_with(i + 1, || CallEntry {
                name: String::new(),
                values: Vec::new(),
            });
        }
        self.calls[i] = CallEntry {
            name: name.to_owned(),
            values,
        };
        let ids: Vec<u64> = arrays
            .iter()
            .enumerate()
            .map(|(pos, h)| self.note(k, pos, h))
            .collect();
        let due = self.due();
        if self.under_way {
            self.under_way_calls += 1;
            if self.under_way_calls > GIVE_UP {
                self.give_up();
                return;
            }
        }
        if self.writer.failed() {
            // Checkpoints stopped (said once): nothing is written any more.
            return;
        }
        let (mut files, mut pieces) = (Vec::new(), Vec::new());
        for ((pos, h), id) in arrays.iter().enumerate().zip(ids) {
            let a = h.kept();
            let version = a.kept_key().1;
            let t = self.tracked.get_mut(&id).expect("noted");
            if t.clean() {
                continue;
            }
            // Between checkpoints, an array is saved the first time a call writes it, and
            // an input's checksum taken when it is first named: an array a later call never
            // names again (set once at the start) would otherwise keep every checkpoint from
            // completing.
            let first = match t.written {
                Some(_) => t.saved.is_none(),
                None => true,
            };
            if !due && !first {
                continue;
            }
            match t.written {
                // Saved as it was after the call that last wrote it: unchanged since.
                Some((_, _, v)) if v == version => {
                    // Parts other ranks hold are written by them; the rest here.
                    let dir = &self.dir;
                    let path_of = |_rank: usize, piece: usize| -> String {
                        dir.join(part_file(k, pos, piece))
                            .to_string_lossy()
                            .into_owned()
                    };
                    // The elements at home are written now, from where they live, to a
                    // file the writing thread then syncs and renames (no copy is kept).
                    let file = array_file(k, pos);
                    let path = dir.join(&file);
                    let create = || Staged::create(&path).map_err(|e| e.to_string());
                    let mut staged = None;
                    let mut sum = Sum::new();
                    let mut out = |bytes: &[u8]| {
                        sum.update(bytes);
                        let f = staged.get_or_insert_with(create);
                        if let Ok(s) = f
                            && let Err(e) = s.write(bytes)
                        {
                            *f = Err(e.to_string());
                        }
                    };
                    let (content, len, region, parts) = match a.kept_parts(&path_of, &mut out) {
                        Some((home, region, away)) => {
                            // The pieces other ranks write: a job is done once they are.
                            pieces.extend((0..away.len()).filter(|&i| away[i].rank != 0).map(
                                |i| {
                                    self.dir
                                        .join(part_file(k, pos, i))
                                        .to_string_lossy()
                                        .into_owned()
                                },
                            ));
                            let parts = away
                                .into_iter()
                                .enumerate()
                                .map(|(i, p)| SavedPart {
                                    rank: p.rank,
                                    region: p.region,
                                    file: part_file(k, pos, i),
                                    // The file ends with its checksum.
                                    checksum: None,
                                    bytes: p.len,
                                })
                                .collect();
                            // Created here when every element is away (an empty file).
                            let content = match staged.unwrap_or_else(create) {
                                Ok(staged) => Content::Staged(staged, sum.finish()),
                                Err(e) => Content::Failed(e),
                            };
                            (content, home, Some(region), parts)
                        }
                        None => {
                            // Written from where the array lives, a slice at a time (no
                            // copy of it is made), to a file the writing thread commits.
                            let len = a.kept_write(&mut out).unwrap_or_else(|e| {
                                fatal(format!(
                                    "checkpoint: cannot write array {} of call {k} (`{name}`), \
                                     {}: {e}",
                                    pos + 1,
                                    t.kind
                                ))
                            });
                            let content = match staged.unwrap_or_else(create) {
                                Ok(staged) => Content::Staged(staged, sum.finish()),
                                Err(e) => Content::Failed(e),
                            };
                            (content, len, None, Vec::new())
                        }
                    };
                    // The checksum is taken by the writing thread (or above, as written).
                    t.saved = Some(Saved {
                        version,
                        file: Some(file.clone()),
                        checksum: None,
                        bytes: len,
                        region,
                        parts,
                    });
                    files.push((file, content));
                }
                // Serial code changed it since: saved at the next call that writes it.
                Some(_) => {}
                None => {
                    t.saved = Some(Saved {
                        version,
                        file: None,
                        checksum: a.kept_checksum(),
                        bytes: 0,
                        region: None,
                        parts: Vec::new(),
                    })
                }
            }
        }
        if !due {
            if !files.is_empty() || !pieces.is_empty() {
                self.writer.send(Job {
                    files,
                    pieces,
                    manifest: None,
                });
            }
            return;
        }
        // What was printed up to here must be logged too.
        let printed = if self.tracked.values().all(Tracked::clean) {
            output::take()
        } else {
            None
        };
        let complete = printed.is_some();
        let manifest = complete.then(|| {
            let mut arrays: Vec<SavedArray> = self
                .tracked
                .values()
                .map(|t| {
                    let s = t.saved.as_ref().expect("clean");
                    let (call, param, version) = t.written.unwrap_or(t.seen);
                    SavedArray {
                        call,
                        param,
                        id: t.id,
                        version,
                        kind: t.kind.clone(),
                        file: s.file.clone(),
                        checksum: s.checksum,
                        bytes: s.bytes,
                        region: s.region.clone(),
                        parts: s.parts.clone(),
                    }
                })
                .collect();
            arrays.sort_by_key(|a| (a.call, a.param));
            let printed = printed.expect("complete");
            if !printed.is_empty() {
                let file = output_file(k);
                self.output.push(SavedOutput {
                    file: file.clone(),
                    checksum: None,
                    bytes: printed.len() as u64,
                });
                files.push((file, Content::Bytes(printed)));
            }
            Manifest::new(
                self.identity.clone(),
                k,
                self.calls[..k as usize].to_vec(),
                arrays,
                self.output.clone(),
            )
        });
        self.under_way = !complete;
        if complete {
            self.last = Instant::now();
            self.under_way_calls = 0;
        }
        if !files.is_empty() || !pieces.is_empty() || manifest.is_some() {
            self.writer.send(Job {
                files,
                pieces,
                manifest,
            });
        }
    }
}
