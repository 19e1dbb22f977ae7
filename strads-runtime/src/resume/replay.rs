//! Fast re-execution: what a skipped call does instead of running (module docs of
//! [`resume`](super)).

use std::time::Instant;

use super::manifest::{self, CallEntry, SavedArray, checksum};
use super::{Held, Log, LogInner, Recovery, Saved, fatal, output};
use crate::array::made::Piece;

impl Recovery {
    /// After skipped call `k`: its reduction values, and the arrays whose last write before
    /// the checkpoint was this call.
    pub(super) fn replay(
        &mut self,
        k: u64,
        name: &str,
        arrays: &mut [Held<'_>],
        values: impl FnOnce(&mut Log<'_>),
    ) {
        let res = self.resume.as_ref().expect("skipping");
        let from = res.path.display().to_string();
        let entry = res.manifest.calls[(k - 1) as usize].clone();
        if entry.name != name {
            fatal(format!(
                "cannot resume from the checkpoint {from}: call {k} is `{}` there but `{name}` \
                 here; the program does not make the same calls in the same order",
                entry.name
            ));
        }
        let mut log = Log {
            inner: LogInner::Read {
                bytes: &entry.values,
                error: None,
            },
        };
        values(&mut log);
        let LogInner::Read { bytes, error } = log.inner else {
            unreachable!("read")
        };
        if let Some(e) = error.or_else(|| (!bytes.is_empty()).then(|| "bytes are left over".into()))
        {
            fatal(format!(
                "cannot resume from the checkpoint {from}: the reductions of call {k} (`{name}`): {e}"
            ));
        }
        let i = (k - 1) as usize;
        if self.calls.len() <= i {
            self.calls.resize_with(i + 1, || CallEntry {
                name: String::new(),
                values: Vec::new(),
            });
        }
        self.calls[i] = entry;
        for (pos, held) in arrays.iter_mut().enumerate() {
            let res = self.resume.as_ref().expect("skipping");
            let saved = res
                .at
                .get(&(k, pos))
                .map(|&j| res.manifest.arrays[j].clone());
            let restored = saved.map(|s| self.restore(k, name, pos, held, s));
            let id = self.note(k, pos, held);
            if let Some(saved) = restored {
                self.tracked.get_mut(&id).expect("noted").saved = Some(saved);
            }
        }
        let res = self.resume.as_mut().expect("skipping");
        if k == res.manifest.call {
            if res.restored != res.manifest.arrays.len() {
                fatal(format!(
                    "cannot resume from the checkpoint {from}: re-execution met {} of its {} \
                     arrays; the program does not make the same calls",
                    res.restored,
                    res.manifest.arrays.len()
                ));
            }
            let there = if res.in_parts > 0 {
                format!(
                    ", {:.1} MiB of it by the ranks that hold it",
                    res.in_parts as f64 / (1024.0 * 1024.0)
                )
            } else {
                String::new()
            };
            crate::log::say!(
                Info,
                "strads: resumed from the checkpoint {from}: {k} calls skipped, {} arrays \
                 ({:.1} MiB) restored{there}",
                res.restored,
                res.bytes as f64 / (1024.0 * 1024.0)
            );
            self.resume = None;
            self.last = Instant::now();
            // What the program prints from here on is new.
            output::resume_passing();
        }
    }

    /// Gives array `h` (parameter `pos` of skipped call `k`) the checkpoint's contents, or
    /// checks that an array no call writes is the one saved; what is saved of it now.
    fn restore(
        &mut self,
        k: u64,
        name: &str,
        pos: usize,
        h: &mut Held<'_>,
        s: SavedArray,
    ) -> Saved {
        let res = self.resume.as_mut().expect("skipping");
        let from = res.path.display().to_string();
        let what = format!(
            "array {} of call {k} (`{name}`), {}",
            pos + 1,
            h.kept().kept_kind()
        );
        res.restored += 1;
        match (h, &s.file) {
            (Held::Written(a), Some(file)) => {
                let read = |file: &str, sum: Option<u64>, len: u64| -> Vec<u8> {
                    let path = self.dir.join(file);
                    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
                        fatal(format!(
                            "cannot resume: {} cannot be read ({e})",
                            path.display()
                        ))
                    });
                    let checked = match sum {
                        Some(c) if c == checksum(&bytes) => Ok(bytes),
                        Some(_) => Err("fails its checksum".to_string()),
                        None => manifest::with_trailer(bytes, len),
                    };
                    checked.unwrap_or_else(|e| {
                        fatal(format!(
                            "cannot resume: {} {e} (it changed since the run began)",
                            path.display()
                        ))
                    })
                };
                let refused = |e: String| -> ! {
                    fatal(format!(
                        "cannot resume from the checkpoint {from}: {what}: {e}"
                    ))
                };
                // On a cluster job, the pieces other ranks wrote are read back by them, and
                // stay there (the files end with their checksums); the driver reads its own
                // into the array, a slice at a time.
                let pieces: Vec<Piece> = s
                    .parts
                    .iter()
                    .filter(|p| p.rank != 0 && p.checksum.is_none())
                    .map(|p| Piece {
                        rank: p.rank,
                        region: p.region.clone(),
                        path: self.dir.join(&p.file).to_string_lossy().into_owned(),
                        len: p.bytes,
                        checksum: None,
                    })
                    .collect();
                match &s.region {
                    Some(region)
                        if pieces.len() == s.parts.len()
                            && s.checksum.is_some()
                            && a.kept_in_parts(&pieces) =>
                    {
                        let home = Piece {
                            rank: 0,
                            region: region.clone(),
                            path: self.dir.join(file).to_string_lossy().into_owned(),
                            len: s.bytes,
                            checksum: s.checksum,
                        };
                        a.kept_restore_in_parts(&[home], &pieces)
                            .unwrap_or_else(|e| refused(e));
                        let there: u64 = pieces.iter().map(|p| p.len).sum();
                        res.bytes += s.bytes + there;
                        res.in_parts += there;
                    }
                    _ => {
                        let bytes = read(file, s.checksum, s.bytes);
                        res.bytes += bytes.len() as u64;
                        match &s.region {
                            None => a.kept_restore(&bytes),
                            Some(region) => a.kept_restore_region(region, &bytes),
                        }
                        .unwrap_or_else(|e| refused(format!("{file}: {e}")));
                        for p in &s.parts {
                            let piece = read(&p.file, p.checksum, p.bytes);
                            a.kept_restore_region(&p.region, &piece)
                                .unwrap_or_else(|e| refused(format!("{}: {e}", p.file)));
                            res.bytes += piece.len() as u64;
                        }
                    }
                }
                Saved {
                    version: a.kept_key().1,
                    file: Some(file.clone()),
                    checksum: s.checksum,
                    bytes: s.bytes,
                    region: s.region.clone(),
                    parts: s.parts.clone(),
                }
            }
            (h, None) => {
                let a = h.kept();
                if let (Some(want), Some(got)) = (s.checksum, a.kept_checksum())
                    && want != got
                {
                    fatal(format!(
                        "cannot resume from the checkpoint {from}: {what} is not the one the \
                         checkpoint saw (its contents differ: did an input file change?)"
                    ));
                }
                Saved {
                    version: a.kept_key().1,
                    file: None,
                    checksum: s.checksum,
                    bytes: 0,
                    region: None,
                    parts: Vec::new(),
                }
            }
            (Held::Read(_), Some(_)) => fatal(format!(
                "cannot resume from the checkpoint {from}: {what} was lent mutably there, and \
                 is read only here; the program does not make the same calls"
            )),
        }
    }
}
