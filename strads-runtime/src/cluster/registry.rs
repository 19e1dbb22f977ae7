//! The loops of this binary, registered at link time by the macro (`linkme`), and how a
//! worker rank serves the driver's calls with them.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::proto::{ArrayMeta, CallMsg};
use super::session::Session;
use super::wire::Store;
use crate::array::{DistArray, SparseArray};

/// A loop a worker can run: its struct's name, its spec and the function that runs one
/// call of it from the driver's message.
#[derive(Debug)]
pub struct RemoteLoop {
    /// `module_path!()::StructName`.
    pub name: &'static str,
    /// The loop's spec.
    pub spec: fn() -> strads_analysis::LoopSpec,
    /// Runs one call: takes the captured values and arrays from `Serve`, runs the loop's
    /// blocks of this rank, gives the arrays back.
    pub serve: fn(&mut Serve<'_>) -> Result<(), String>,
}

/// Every `#[parallel_for]` loop linked into this binary.
#[linkme::distributed_slice]
pub static LOOPS: [RemoteLoop];

/// Finds a loop by name.
pub fn find(name: &str) -> Option<&'static RemoteLoop> {
    LOOPS.iter().find(|l| l.name == name)
}

/// One call as a worker's serve function sees it.
pub struct Serve<'a> {
    session: &'static Session,
    msg: &'a CallMsg,
    store: &'a mut Store,
}

impl std::fmt::Debug for Serve<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("loop", &self.msg.name)
            .field("seq", &self.msg.seq)
            .finish_non_exhaustive()
    }
}

impl Serve<'_> {
    /// The loop struct the driver sent.
    pub fn captured<L: DeserializeOwned>(&self) -> Result<L, String> {
        postcard::from_bytes(&self.msg.captured).map_err(|e| {
            format!(
                "the captured values of `{}` do not decode: {e}",
                self.msg.name
            )
        })
    }

    /// The iteration space the driver sent (ranges).
    pub fn space<S: DeserializeOwned>(&self) -> Result<S, String> {
        postcard::from_bytes(&self.msg.space).map_err(|e| {
            format!(
                "the iteration space of `{}` does not decode: {e}",
                self.msg.name
            )
        })
    }

    fn meta(&self, a: usize) -> Result<&ArrayMeta, String> {
        self.msg
            .arrays
            .get(a)
            .ok_or_else(|| format!("loop `{}` has no array {a} in the call", self.msg.name))
    }

    /// Waits for whole array `a` when this rank does not hold its version.
    fn arrive(&mut self, a: usize) -> Result<Option<Vec<u8>>, String> {
        let m = self.meta(a)?.clone();
        if m.shipped || m.holders.contains(&self.session.rank) {
            return Ok(None);
        }
        let seq = self.msg.seq;
        Ok(Some(self.session.wait(|core| core.take_array(seq, a))))
    }

    /// Dense array `a` of the call.
    pub fn dense<T, const N: usize>(&mut self, a: usize) -> Result<DistArray<T, N>, String>
    where
        T: Clone + Default + Send + 'static,
    {
        if let Some(bytes) = self.arrive(a)? {
            let m = self.meta(a)?.clone();
            self.store.fill_dense::<T, N>(&m, &bytes)?;
        }
        let m = self.meta(a)?.clone();
        self.store.take_dense::<T, N>(&m)
    }

    /// Sparse array `a` of the call.
    pub fn sparse<T, const N: usize>(&mut self, a: usize) -> Result<SparseArray<T, N>, String>
    where
        T: Clone + Default + Send + 'static,
    {
        if let Some(bytes) = self.arrive(a)? {
            let m = self.meta(a)?.clone();
            self.store.fill_sparse::<T, N>(&m, &bytes)?;
        }
        let m = self.meta(a)?.clone();
        self.store.take_sparse::<T, N>(&m)
    }

    /// Gives array `a` back to the store after the call.
    pub fn put<A: std::any::Any + Send>(&mut self, a: usize, array: A) -> Result<(), String> {
        let m = self.meta(a)?;
        // A written array's copy is current only in the parts this rank wrote last.
        let version = if m.shipped { u64::MAX } else { m.version };
        self.store.put(m.id, version, array);
        Ok(())
    }
}

/// A worker rank's life: serves the driver's calls until it ends the job, then exits.
pub(crate) fn serve_forever(session: &'static Session) -> ! {
    let mut store = Store::default();
    loop {
        let msg = session.wait(|core| {
            if core.is_shut_down() {
                return Some(None);
            }
            core.next_call().map(Some)
        });
        let Some(msg) = msg else {
            session.shut_down();
            std::process::exit(0);
        };
        let msg = Arc::new(msg);
        let Some(l) = find(&msg.name) else {
            session.fail(format!(
                "this rank's binary has no loop `{}` (the driver runs another binary)",
                msg.name
            ));
        };
        if super::call::spec_hash(&(l.spec)()) != msg.spec_hash {
            session.fail(format!(
                "loop `{}` of this rank's binary differs from the driver's (another build)",
                msg.name
            ));
        }
        let mut serve = Serve {
            session,
            msg: &msg,
            store: &mut store,
        };
        let r = super::call::serve_with(msg.clone(), || (l.serve)(&mut serve));
        if let Err(e) = r {
            session.fail(format!("loop `{}`: {e}", msg.name));
        }
    }
}
