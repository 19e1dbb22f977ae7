//! The manifest of a complete checkpoint: which program made it (its build, arguments and
//! worker count), up to which call, what each call's reductions came to, and which file
//! holds each array, with its checksum; and finding the last one that checks out.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(super) use crate::checkpoint::{Sum, checksum64 as checksum, with_trailer};

/// The manifest format's version.
const FORMAT: u32 = 1;

/// Which run a checkpoint belongs to: fast re-execution refuses another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Identity {
    /// The program's build: a checksum of its executable, and its size.
    pub(super) build: String,
    /// The program's arguments (without its path).
    pub(super) args: Vec<String>,
    /// Workers of every call (processes x threads): plans, and so the bits, depend on it.
    pub(super) workers: usize,
    /// Processes of the job (1 on one process).
    pub(super) processes: usize,
}

impl Identity {
    /// This run's.
    pub(super) fn here(workers: usize, processes: usize) -> Identity {
        let exe = std::env::current_exe().ok();
        let build = exe
            .as_deref()
            .and_then(|p| file_checksum(p).ok())
            .map_or_else(|| "unknown".to_owned(), |(c, n)| format!("{c:016x}-{n}"));
        Identity {
            build,
            args: std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            workers,
            processes,
        }
    }

    /// Why a checkpoint of `there` cannot resume this run, naming both; `None` when it can.
    pub(super) fn refuses(&self, there: &Identity) -> Option<String> {
        if self.build != there.build {
            return Some(format!(
                "it was made by another build of the program (build {} there, {} here)",
                there.build, self.build
            ));
        }
        if self.args != there.args {
            return Some(format!(
                "it was made with other arguments (`{}` there, `{}` here)",
                there.args.join(" "),
                self.args.join(" ")
            ));
        }
        if (self.workers, self.processes) != (there.workers, there.processes) {
            return Some(format!(
                "it was made with P = {} workers on {} process(es) there, {} workers on {} \
                 here (plans, and so the results, depend on P)",
                there.workers, there.processes, self.workers, self.processes
            ));
        }
        None
    }
}

/// The [`Sum`] of a file's bytes, and its length, read in pieces.
pub(super) fn file_checksum(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut sum = Sum::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            return Ok((sum.finish(), sum.len()));
        }
        sum.update(&buf[..k]);
    }
}

/// One call of the program, as the checkpoint remembers it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct CallEntry {
    /// The loop's name.
    pub(super) name: String,
    /// Its reduction variables' values after the call (postcard, in declaration order).
    pub(super) values: Vec<u8>,
}

/// An array the calls named, as of the checkpoint.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct SavedArray {
    /// The call (counted from 1) and parameter position where the program last named it:
    /// where fast re-execution meets it for the last time before the checkpoint.
    pub(super) call: u64,
    pub(super) param: usize,
    /// Its id and version in the run that saved it (for people reading the manifest).
    pub(super) id: u64,
    pub(super) version: u64,
    /// Type and shape.
    pub(super) kind: String,
    /// The file holding its contents (beside the manifest); `None` for an array no call
    /// writes, which the program's re-execution makes again: its checksum is compared.
    pub(super) file: Option<String>,
    /// Checksum of its contents (the file's bytes); `None` when not on the driver (spread).
    pub(super) checksum: Option<u64>,
    pub(super) bytes: u64,
    /// When parts were on other ranks: the elements `file` holds (index ranges), and the
    /// pieces those ranks wrote.
    #[serde(default)]
    pub(super) region: Option<Vec<(u64, u64)>>,
    #[serde(default)]
    pub(super) parts: Vec<SavedPart>,
}

/// A piece of an array the rank that held it wrote.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct SavedPart {
    pub(super) rank: usize,
    pub(super) region: Vec<(u64, u64)>,
    pub(super) file: String,
    pub(super) checksum: Option<u64>,
    pub(super) bytes: u64,
}

/// A piece of what the program printed (its standard output from its first call on).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct SavedOutput {
    pub(super) file: String,
    pub(super) checksum: Option<u64>,
    pub(super) bytes: u64,
}

/// A complete checkpoint.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Manifest {
    pub(super) format: u32,
    pub(super) identity: Identity,
    /// Calls it covers: the first `call` calls of the program.
    pub(super) call: u64,
    pub(super) calls: Vec<CallEntry>,
    pub(super) arrays: Vec<SavedArray>,
    /// What the program printed from its first call to the end of call `call`, in pieces.
    pub(super) output: Vec<SavedOutput>,
}

/// A manifest as written: the manifest and a checksum of its JSON.
#[derive(Serialize, Deserialize)]
struct Sealed {
    manifest: serde_json::Value,
    checksum: String,
}

impl Manifest {
    pub(super) fn new(
        identity: Identity,
        call: u64,
        calls: Vec<CallEntry>,
        arrays: Vec<SavedArray>,
        output: Vec<SavedOutput>,
    ) -> Self {
        Manifest {
            format: FORMAT,
            identity,
            call,
            calls,
            arrays,
            output,
        }
    }

    /// The files it names: arrays' and output's.
    pub(super) fn files(&self) -> impl Iterator<Item = (&str, Option<u64>, u64)> {
        let arrays = self.arrays.iter().flat_map(|a| {
            let pieces = a
                .parts
                .iter()
                .map(|p| (p.file.as_str(), p.checksum, p.bytes));
            a.file
                .as_deref()
                .map(|f| (f, a.checksum, a.bytes))
                .into_iter()
                .chain(pieces)
        });
        let output = self
            .output
            .iter()
            .map(|o| (o.file.as_str(), o.checksum, o.bytes));
        arrays.chain(output)
    }

    /// The file name of the manifest of call `call`.
    pub(super) fn name(call: u64) -> String {
        format!("manifest-{call:012}.json")
    }

    /// The call of a manifest's file name.
    pub(super) fn call_of(name: &str) -> Option<u64> {
        name.strip_prefix("manifest-")?
            .strip_suffix(".json")?
            .parse()
            .ok()
    }

    /// Its bytes: JSON, with a checksum of the manifest's own JSON.
    pub(super) fn encode(&self) -> Vec<u8> {
        let value = serde_json::to_value(self).expect("a manifest is JSON");
        let text = serde_json::to_vec(&value).expect("a value is JSON");
        let sealed = Sealed {
            manifest: value,
            checksum: format!("{:016x}", checksum(&text)),
        };
        serde_json::to_vec_pretty(&sealed).expect("a value is JSON")
    }

    /// Reads one; an error saying what is wrong with it.
    pub(super) fn read(path: &Path) -> Result<Manifest, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot be read ({e})"))?;
        let sealed: Sealed =
            serde_json::from_slice(&bytes).map_err(|e| format!("is not a manifest ({e})"))?;
        let text = serde_json::to_vec(&sealed.manifest).expect("a value is JSON");
        if format!("{:016x}", checksum(&text)) != sealed.checksum {
            return Err("fails its checksum".into());
        }
        let m: Manifest = serde_json::from_value(sealed.manifest)
            .map_err(|e| format!("is not a manifest of this version ({e})"))?;
        if m.format != FORMAT {
            return Err(format!("is of format {}, not {FORMAT}", m.format));
        }
        if m.calls.len() as u64 != m.call {
            return Err(format!("lists {} calls for call {}", m.calls.len(), m.call));
        }
        Ok(m)
    }

    /// Checks every file it names against its checksum: the first that fails, by path.
    pub(super) fn check_files(&self, dir: &Path) -> Result<(), (PathBuf, String)> {
        for (file, checksum, bytes) in self.files() {
            // A piece another rank wrote has no checksum here: it ends with its own.
            let path = dir.join(file);
            crate::checkpoint::read_checked(&path, bytes, checksum, |_| Ok(()))
                .map_err(|e| (path, e))?;
        }
        Ok(())
    }
}

/// The manifests in `dir`, newest first.
pub(super) fn manifests(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            Manifest::call_of(name.to_str()?).map(|c| (c, e.path()))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found
}

/// The newest complete checkpoint in `dir` that `here` may resume from: one whose
/// manifest and files check out, falling back past those that do not (each said on
/// stderr). `Ok(None)` when `dir` holds none; an error naming the manifest when the
/// newest belongs to another run, or naming the file at fault when none checks out.
pub(super) fn newest(dir: &Path, here: &Identity) -> Result<Option<(PathBuf, Manifest)>, String> {
    let found = manifests(dir);
    if found.is_empty() {
        return Ok(None);
    }
    let mut last_fault = String::new();
    for (_, path) in found {
        let m = match Manifest::read(&path) {
            Ok(m) => m,
            Err(e) => {
                last_fault = format!("{} {e}", path.display());
                crate::log::say!(
                    Warn,
                    "strads: checkpoint {last_fault}: trying the one before it"
                );
                continue;
            }
        };
        if let Some(why) = here.refuses(&m.identity) {
            return Err(format!(
                "cannot resume from the checkpoint {}: {why}",
                path.display()
            ));
        }
        match m.check_files(dir) {
            Ok(()) => return Ok(Some((path, m))),
            Err((file, e)) => {
                last_fault = format!("file {} {e}", file.display());
                crate::log::say!(
                    Warn,
                    "strads: checkpoint {last_fault}: falling back to the checkpoint before {}",
                    path.display()
                );
            }
        }
    }
    Err(format!(
        "no complete checkpoint in {} checks out: {last_fault}",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(args: &[&str], workers: usize) -> Identity {
        Identity {
            build: "b".into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            workers,
            processes: 1,
        }
    }

    #[test]
    fn manifests_round_trip_and_refuse_other_runs_and_damage() {
        let dir = std::env::temp_dir().join(format!("strads-manifest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let here = id(&["--epochs", "3"], 2);
        std::fs::write(dir.join("c1-p0.bin"), [1u8, 2, 3]).unwrap();
        let (c, n) = file_checksum(&dir.join("c1-p0.bin")).unwrap();
        let saved = SavedArray {
            call: 1,
            param: 0,
            id: 7,
            version: 3,
            kind: "DistArray<f32, 1> [3]".into(),
            file: Some("c1-p0.bin".into()),
            checksum: Some(c),
            bytes: n,
            region: None,
            parts: Vec::new(),
        };
        let calls = vec![CallEntry {
            name: "train".into(),
            values: vec![1, 2],
        }];
        let m = Manifest::new(here.clone(), 1, calls, vec![saved], Vec::new());
        std::fs::write(dir.join(Manifest::name(1)), m.encode()).unwrap();
        let (path, back) = newest(&dir, &here).unwrap().unwrap();
        assert_eq!(path, dir.join("manifest-000000000001.json"));
        assert_eq!(back.calls[0].values, vec![1, 2]);
        // Another P, other arguments: refused, naming both.
        let e = newest(&dir, &id(&["--epochs", "3"], 4)).unwrap_err();
        assert!(
            e.contains("P = 2 workers") && e.contains("4 workers"),
            "{e}"
        );
        let e = newest(&dir, &id(&["--epochs", "4"], 2)).unwrap_err();
        assert!(e.contains("`--epochs 3` there, `--epochs 4` here"), "{e}");
        // A damaged file: nothing before it, so the error names it.
        std::fs::write(dir.join("c1-p0.bin"), [1u8, 2, 4]).unwrap();
        let e = newest(&dir, &here).unwrap_err();
        assert!(e.contains("c1-p0.bin fails its checksum"), "{e}");
        // A damaged manifest is passed over.
        let mut bytes = m.encode();
        let k = bytes.len() / 2;
        bytes[k] ^= 1;
        std::fs::write(dir.join(Manifest::name(1)), &bytes).unwrap();
        assert!(newest(&dir, &here).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
