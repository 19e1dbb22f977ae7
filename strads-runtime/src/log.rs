//! How the runtime reports: every message is a `tracing` event with a level, under the
//! target `strads::explain` for the lines `STRADS_EXPLAIN` asks for and `strads` for the
//! rest. A program that installs a global subscriber (tracing-subscriber's `fmt` with an
//! `EnvFilter`, `RUST_LOG=strads=warn,strads::explain=info`) filters and formats them its
//! own way, and its subscriber enabling `strads::explain` turns the explain lines on as
//! `STRADS_EXPLAIN=1` does. A program that installs none gets each line on stderr, as it
//! always was.

/// A message's level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// A line `STRADS_EXPLAIN` asks for (plans, costs, what crossed processes, memory).
    Explain,
    /// What the runtime did that a user should know (a resume, a restart).
    Info,
    /// Something went wrong and the run goes on (a checkpoint not written).
    Warn,
    /// The run cannot go on.
    Error,
}

/// Reports `line` at `level`.
pub(crate) fn emit(level: Level, line: &str) {
    match level {
        Level::Explain => tracing::info!(target: "strads::explain", "{line}"),
        Level::Info => tracing::info!(target: "strads", "{line}"),
        Level::Warn => tracing::warn!(target: "strads", "{line}"),
        Level::Error => tracing::error!(target: "strads", "{line}"),
    }
    if !tracing::dispatcher::has_been_set() {
        eprintln!("{line}");
    }
}

/// Whether a subscriber the program installed wants the explain lines.
pub(crate) fn explain_wanted() -> bool {
    tracing::enabled!(target: "strads::explain", tracing::Level::INFO)
}

/// `say!(Warn, "format", args..)`: [`emit`] of a formatted line.
macro_rules! say {
    ($level:ident, $($arg:tt)*) => {
        $crate::log::emit($crate::log::Level::$level, &format!($($arg)*))
    };
}
pub(crate) use say;

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use super::*;

    /// A subscriber that keeps `(target, level, message)` of every event.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<(String, tracing::Level, String)>>>);

    struct Message(String);
    impl Visit for Message {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }

    impl Subscriber for Kept {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, e: &Event<'_>) {
            let mut m = Message(String::new());
            e.record(&mut m);
            let meta = e.metadata();
            self.0
                .lock()
                .unwrap()
                .push((meta.target().to_owned(), *meta.level(), m.0));
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn messages_are_events_with_levels_and_targets() {
        let kept = Kept::default();
        tracing::subscriber::with_default(kept.clone(), || {
            assert!(explain_wanted());
            say!(Explain, "strads plan f: 1d dim={}", "i");
            say!(Warn, "strads: checkpoint: {}", "disk full");
            say!(Error, "strads: the job stops");
            say!(Info, "strads: resumed");
        });
        let got = kept.0.lock().unwrap().clone();
        let want = [
            (
                "strads::explain",
                tracing::Level::INFO,
                "strads plan f: 1d dim=i",
            ),
            (
                "strads",
                tracing::Level::WARN,
                "strads: checkpoint: disk full",
            ),
            ("strads", tracing::Level::ERROR, "strads: the job stops"),
            ("strads", tracing::Level::INFO, "strads: resumed"),
        ];
        assert_eq!(got.len(), want.len());
        for ((t, l, m), (wt, wl, wm)) in got.iter().zip(want) {
            assert_eq!((t.as_str(), *l, m.as_str()), (wt, wl, wm));
        }
        // Without a subscriber nobody wants them (STRADS_EXPLAIN decides).
        assert!(!explain_wanted());
    }
}
