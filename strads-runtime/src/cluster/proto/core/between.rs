//! Between calls: the driver's fetches and saves of parts that calls left on the
//! workers, and the arrays it dropped.

use super::super::Region;
use super::{Core, Msg, Outgoing};

/// What the driver wants of the elements of a region a worker holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// Their bytes (`Msg::Fetch`).
    Bytes,
    /// Written to this file, a checkpoint's piece (`Msg::Save`).
    Save(String),
    /// Each range's checksum (`Msg::Digest`).
    Digest,
    /// Set to these bytes (`Msg::Write`), answered once set.
    Write(Vec<u8>),
}

impl Core {
    /// Driver: asks worker `to` for the elements of `region` of array `id` it holds (or
    /// to write them to a file, their checksums, or to set them); returns the request, whose answer
    /// [`take_fetched`](Core::take_fetched) gives (none for a save).
    pub fn request_fetch(&mut self, to: usize, id: u64, region: Region, want: Want) -> u64 {
        let req = self.next_req;
        self.next_req += 1;
        let msg = match want {
            Want::Bytes => Msg::Fetch { req, id, region },
            Want::Digest => Msg::Digest { req, id, region },
            Want::Write(data) => Msg::Write {
                req,
                id,
                region,
                data,
            },
            Want::Save(path) => {
                self.saving.insert(path.clone());
                Msg::Save {
                    req,
                    id,
                    region,
                    path,
                }
            }
        };
        self.send(Outgoing::Control { to, msg });
        req
    }

    /// Driver: the elements fetch `req` brought, once they arrived.
    pub fn take_fetched(&mut self, req: u64) -> Option<Vec<u8>> {
        let i = self.fetched.iter().position(|(r, _)| *r == req)?;
        Some(self.fetched.swap_remove(i).1)
    }

    /// Driver: tells every worker that array `id` is gone (nothing once the job ends).
    pub fn forget(&mut self, id: u64) {
        if self.shutdown || self.failure.is_some() {
            return;
        }
        for r in 1..self.size {
            self.send(Outgoing::Control {
                to: r,
                msg: Msg::Forget { id },
            });
        }
    }

    /// Worker: the next array the driver dropped.
    pub fn next_forget(&mut self) -> Option<u64> {
        self.forgets.pop_front()
    }

    /// Worker: the next fetch the driver asked for, `(req, array id, region, what it
    /// wants of them)`.
    pub fn next_fetch(&mut self) -> Option<(u64, u64, Region, Want)> {
        self.fetches.pop_front()
    }

    /// Worker: says that the checkpoint file `path` the driver asked for is written
    /// (`ok`), or could not be.
    pub fn send_saved(&mut self, path: String, ok: bool) {
        self.send(Outgoing::Control {
            to: 0,
            msg: Msg::Saved { path, ok },
        });
    }

    /// Driver: workers are asked to write the checkpoint files `paths` some other way (a
    /// collective operation): [`saving`](Core::saving) waits for their answers as for a
    /// save this core asked for. Said before the asking, so no answer comes first.
    pub fn expect_saved(&mut self, paths: &[String]) {
        self.saving.extend(paths.iter().cloned());
    }

    /// Driver: of the checkpoint files `paths`, one a worker could not write (`Err`), or
    /// whether some are still being written (asked for and not answered). A file this
    /// process never asked for (one a lost run's checkpoint named) is not waited for.
    pub fn saving(&self, paths: &[String]) -> Result<bool, String> {
        if let Some(p) = paths.iter().find(|p| self.unsaved.contains(*p)) {
            return Err(p.clone());
        }
        Ok(paths.iter().any(|p| self.saving.contains(p)))
    }

    /// Worker: answers fetch `req` with the elements.
    pub fn send_fetched(&mut self, req: u64, data: Vec<u8>) {
        self.send(Outgoing::Block {
            to: 0,
            msg: Msg::Fetched { req },
            data: data.into(),
        });
    }
}
