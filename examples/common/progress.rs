//! Progress on stderr for what takes a while (loading, epochs, evaluation), with indicatif:
//! a bar with its ETA (a file's bytes as strads' loaders read them, epochs, triples), or a
//! spinner where the amount is not known (data being generated). Drawn only when stderr is
//! a terminal, and only once the work has taken 2 seconds, so that piped runs, tests and
//! short runs print exactly what they always did. Lines the program prints meanwhile go
//! through [`Bar::println`], above the bar. Compiled into each example through `#[path]`.

#![allow(dead_code)] // each example uses some of these

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before its bar appears.
const AFTER: Duration = Duration::from_secs(2);

/// A bar (or spinner) that appears after [`AFTER`], on a terminal only.
pub(crate) struct Bar {
    bar: ProgressBar,
    start: Instant,
    shown: bool,
}

impl Bar {
    /// A bar over `len` steps of `what` ("epochs", "triples").
    pub(crate) fn new(len: u64, what: &str) -> Bar {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} elapsed {elapsed} eta {eta}",
            )
            .expect("a template")
            .progress_chars("=> "),
        );
        bar.set_message(what.to_owned());
        Bar {
            bar,
            start: Instant::now(),
            shown: false,
        }
    }

    /// Reading (or making) the data, `what` ("reading ratings.csv"): a bar of the bytes
    /// strads' loaders read (`strads::load::progress`), with its ETA; a spinner while they
    /// read nothing (data generated).
    pub(crate) fn spinner(what: &str) -> Bar {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("a template"),
        );
        bar.set_message(what.to_owned());
        let mut b = Bar {
            bar,
            start: Instant::now(),
            shown: false,
        };
        b.show_later();
        b
    }

    /// Shows the bar from now on when the work has run [`AFTER`] and stderr is a terminal.
    fn show(&mut self) {
        if !self.shown && self.start.elapsed() >= AFTER && std::io::stderr().is_terminal() {
            self.shown = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// A spinner ticks by itself; it shows itself after [`AFTER`] from its own thread.
    fn show_later(&mut self) {
        if !std::io::stderr().is_terminal() {
            return;
        }
        let bar = self.bar.clone();
        let (read0, total0) = strads::load::progress();
        std::thread::spawn(move || {
            std::thread::sleep(AFTER);
            if bar.is_finished() {
                return;
            }
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(120));
            let mut measured = false;
            while !bar.is_finished() {
                let (read, total) = strads::load::progress();
                let (read, total) = (read - read0, total - total0);
                if total > 0 {
                    if !measured {
                        measured = true;
                        bar.set_style(
                            ProgressStyle::with_template(
                                "{msg} [{bar:30}] {bytes}/{total_bytes} elapsed {elapsed} eta {eta}",
                            )
                            .expect("a template")
                            .progress_chars("=> "),
                        );
                    }
                    bar.set_length(total);
                    bar.set_position(read.min(total));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        self.shown = true;
    }

    /// `n` more steps done.
    pub(crate) fn inc(&mut self, n: u64) {
        self.bar.inc(n);
        self.show();
    }

    /// Prints `line` on stdout above the bar.
    pub(crate) fn println(&self, line: impl AsRef<str>) {
        self.bar.suspend(|| println!("{}", line.as_ref()));
    }

    /// Done: the bar goes.
    pub(crate) fn finish(self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}
