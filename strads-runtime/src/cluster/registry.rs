//! The loops of this binary, registered at link time by the macro (`linkme`), and how a
//! worker rank serves the driver's calls with them.

use serde::de::DeserializeOwned;

use super::call::{Served, ServedCall};
use super::proto::{ArrayMeta, CallMsg};
use super::session::Session;
use super::store::Store;
use crate::array::{DistArray, SparseArray};
use crate::memory::mib;

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
    served: &'a Served,
    store: &'a mut Store,
    /// The arrays the call writes, once an array needs them.
    written: Option<Vec<bool>>,
}

impl std::fmt::Debug for Serve<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("loop", &self.served.msg.name)
            .field("seq", &self.served.msg.seq)
            .finish_non_exhaustive()
    }
}

impl Serve<'_> {
    /// The call being served, for the loop's `Call` (`Call::served`).
    pub fn served(&self) -> Served {
        self.served.clone()
    }

    /// The loop's registered name.
    pub fn name(&self) -> &str {
        &self.served.msg.name
    }

    /// The driver's encoded loop struct, for [`Probe`].
    pub fn captured_bytes(&self) -> &[u8] {
        &self.served.msg.captured
    }

    /// The iteration space the driver sent (ranges).
    pub fn space<S: DeserializeOwned>(&self) -> Result<S, String> {
        postcard::from_bytes(&self.served.msg.space).map_err(|e| {
            format!(
                "the iteration space of `{}` does not decode: {e}",
                self.served.msg.name
            )
        })
    }

    fn meta(&self, a: usize) -> Result<&ArrayMeta, String> {
        self.served.msg.arrays.get(a).ok_or_else(|| {
            format!(
                "loop `{}` has no array {a} in the call",
                self.served.msg.name
            )
        })
    }

    /// Waits for whole array `a` when this rank does not hold its version.
    fn arrive(&mut self, a: usize) -> Result<Option<Vec<u8>>, String> {
        let m = self.meta(a)?.clone();
        if m.shipped || m.holders.contains(&self.session.rank) {
            return Ok(None);
        }
        let seq = self.served.msg.seq;
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
        let mut array = self.store.take_dense::<T, N>(&m)?;
        if m.shipped {
            self.regions_before_lending(a, &mut array)?;
        }
        Ok(array)
    }

    /// A dense array the call only reads but that travels by regions: its transfers (all
    /// sent by the driver at the call's start) are applied here, before the loop lends
    /// it read-only, and marked applied for the call.
    fn regions_before_lending<T, const N: usize>(
        &mut self,
        a: usize,
        array: &mut DistArray<T, N>,
    ) -> Result<(), String>
    where
        T: Clone + Default + Send + 'static,
    {
        let schedule = self.served.schedule();
        let arrays = self.served.msg.arrays.len();
        let written = self
            .written
            .get_or_insert_with(|| super::call::written(&schedule, arrays));
        if written[a] {
            return Ok(());
        }
        let plan = self.served.plan(&schedule);
        let (seq, rank) = (self.served.msg.seq, self.session.rank);
        // First what other ranks need of this rank's parts (a part a call left here),
        // so that no two ranks wait for each other.
        let mut sends = Vec::new();
        for tid in plan.initial() {
            let tr = &plan.transfers[tid];
            if tr.from == rank && tr.array == a {
                sends.push((tid, super::store::Stored::read_region(&*array, &tr.region)?));
            }
        }
        self.session.with(|core| {
            core.begin(seq, plan.clone());
            for (tid, bytes) in sends {
                core.send_transfer(tid, bytes);
            }
        });
        for tid in plan.initial() {
            let tr = &plan.transfers[tid];
            if tr.to != rank || tr.array != a {
                continue;
            }
            let part = self.session.wait(|core| core.take_part(tid));
            part.apply(
                self.served.msg.arrays[a].made,
                &mut *array,
                |array, bytes| super::wire::write_dense(array, &tr.region, bytes),
                |array, recipe| super::wire::make_dense(array, &tr.region, recipe),
            )
            .map_err(|e| format!("transfer {tid} does not fit array {a}: {e}"))?;
            self.session.with(|core| core.applied(tid));
        }
        Ok(())
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
    pub fn put<A: super::store::Stored>(&mut self, a: usize, array: A) -> Result<(), String> {
        let m = self.meta(a)?;
        // A written array's copy is current only in the parts this rank wrote last.
        let version = if m.shipped { u64::MAX } else { m.version };
        self.store.put(m.id, version, array);
        Ok(())
    }
}

/// What a serving worker does next.
enum Next {
    Call(CallMsg),
    Fetch(u64, u64, super::proto::Region, super::proto::Want),
    Forget(u64),
    Data(u64, String, Vec<u8>),
    Shutdown,
}

/// A worker rank's life: serves the driver's calls until it ends the job, then exits.
pub(crate) fn serve_forever(session: &'static Session) -> ! {
    let mut store = Store::default();
    loop {
        let next = session.wait(|core| {
            // Fetches and a checkpoint's saves first: the driver sent them before it dropped
            // the array or ended the job (a save is not awaited, so a drop may follow it).
            if let Some((req, id, region, save)) = core.next_fetch() {
                return Some(Next::Fetch(req, id, region, save));
            }
            // Arrays the driver dropped before it ended the job go next.
            if let Some(id) = core.next_forget() {
                return Some(Next::Forget(id));
            }
            if core.is_shut_down() {
                return Some(Next::Shutdown);
            }
            if let Some((req, op, args)) = super::proto::collective::next_op(core) {
                return Some(Next::Data(req, op, args));
            }
            core.next_call().map(Next::Call)
        });
        let msg = match next {
            Next::Shutdown => {
                if crate::config::get().explain {
                    let (n, bytes) = store.held();
                    let (sets, block_bytes) = super::store::blocks_held();
                    let (parts, part_bytes) = super::spread::held();
                    let values = super::store::values_held();
                    crate::log::say!(
                        Explain,
                        "strads cluster: this rank holds {n} arrays ({bytes} bytes) of the \
                         driver's at the end, {sets} sets of blocks of sparse spaces \
                         ({block_bytes} bytes as sent or traded), {parts} parts of data \
                         made in place ({part_bytes} bytes), and {values} bytes of \
                         `iter_mut()` values kept"
                    );
                    let (seen, peak) = store.seen();
                    let mut beside = super::store::beside();
                    let also = |b: u64| {
                        format!(
                            "{} of blocks and values (their inline bytes) of the entries this rank runs",
                            mib(b)
                        )
                    };
                    let mut each: Vec<String> = seen
                        .into_iter()
                        .map(|(id, what, b)| match beside.remove(&id) {
                            Some(x) => format!("array {id} {what}: {}, and {}", mib(b), also(x)),
                            None => format!("array {id} {what}: {}", mib(b)),
                        })
                        .collect();
                    each.extend(
                        beside
                            .into_iter()
                            .map(|(id, x)| format!("array {id}: {}", also(x))),
                    );
                    crate::log::say!(
                        Explain,
                        "strads memory rank {}: {}; at most {} of the driver's arrays held \
                         at once{}{}",
                        session.rank,
                        crate::memory::peak_phrase(),
                        mib(peak),
                        if each.is_empty() { "" } else { ": " },
                        each.join("; ")
                    );
                }
                // A checkpoint's files this rank still writes are written first.
                super::save::flush_later();
                session.shut_down();
                std::process::exit(0);
            }
            Next::Forget(id) => {
                store.forget(id);
                super::store::forget_blocks(id);
                super::spread::forget(id);
                continue;
            }
            Next::Data(req, op, args) => {
                // A collective operation on data in parts (made in place, counted, traded).
                super::spread::serve(session, req, &op, &args);
                // Dense arrays it made here are kept as the driver's arrays are.
                super::spread::dense::adopt(&mut store);
                continue;
            }
            Next::Fetch(req, id, region, super::proto::Want::Digest) => {
                // A resumed run compares an input with parts here: their checksums go,
                // the parts stay.
                match store.digest(id, &region) {
                    Ok(sums) => session
                        .with(|core| core.send_fetched(req, super::spread::postcard_args(&sums))),
                    Err(e) => session.fail(format!(
                        "rank {} cannot take the checksums of the parts the driver asked \
                         for: {e}",
                        session.rank
                    )),
                }
                continue;
            }
            Next::Fetch(req, id, region, super::proto::Want::Write(bytes)) => {
                // Serial code on the driver wrote elements of a part held here: they are
                // set where they are, and the driver's next step waits for the answer.
                match store.set(id, &region, &bytes) {
                    Ok(()) => session.with(|core| core.send_fetched(req, Vec::new())),
                    Err(e) => session.fail(format!(
                        "rank {} cannot set the elements the driver's serial code wrote: {e}",
                        session.rank
                    )),
                }
                continue;
            }
            Next::Fetch(req, id, region, want) => {
                // Parts a call left here, which the driver's serial code (or a call that
                // runs on the driver alone) is about to read, or a checkpoint saves (written
                // by a thread of their own, answered once written).
                match want {
                    // Written now, from where the part lives (no copy kept); synced and
                    // answered by the writing thread: the driver's next call does not wait
                    // for the disk. A piece this rank cannot give is answered as not
                    // written: the driver writes no manifest naming it (and no more
                    // checkpoints); the job goes on.
                    super::proto::Want::Save(path) => {
                        super::save::write_piece(session, path.into(), |out| {
                            store.write_region(id, &region, out)
                        });
                    }
                    _ => match store.read(id, &region) {
                        Ok(data) => session.with(|core| core.send_fetched(req, data)),
                        Err(e) => session.fail(format!(
                            "rank {} cannot send the driver the parts it asked for: {e}",
                            session.rank
                        )),
                    },
                }
                continue;
            }
            Next::Call(msg) => msg,
        };
        let Some(l) = find(&msg.name) else {
            session.fail(format!(
                "rank {} runs {}, which has no loop `{}` that the driver's {} calls: run the \
                 same program on every rank",
                session.rank,
                super::call::this_program(),
                msg.name,
                msg.program
            ));
        };
        if super::call::spec_hash(&(l.spec)()) != msg.spec_hash {
            session.fail(format!(
                "loop `{}` of {} on rank {} differs from the driver's in {} (another build): \
                 run the same build on every rank",
                msg.name,
                super::call::this_program(),
                session.rank,
                msg.program
            ));
        }
        let served = ServedCall::new(session, msg);
        let msg = &served.msg;
        let mut serve = Serve {
            session,
            served: &served,
            store: &mut store,
            written: None,
        };
        // A panic in the loop's body (or anywhere in serving it) ends the job at once,
        // naming this rank, the loop and the panic's message, instead of leaving the
        // other ranks to find this one silent.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (l.serve)(&mut serve)));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => session.fail(format!("loop `{}`: {e}", msg.name)),
            Err(panic) => session.fail(format!(
                "loop `{}` panicked: {}",
                (l.spec)().name,
                panic_message(panic.as_ref())
            )),
        }
    }
}

/// The text a panic was raised with, when it was a string.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(a panic without a message)"
    }
}

/// The loop struct seen through a probe that encodes or decodes it when its captured
/// values serialize, and does nothing otherwise (autoref specialization: generated code
/// calls `(&Probe(..)).encode()` on a concrete type, which picks [`ProbeSerde`] when the
/// bound holds and [`ProbeNone`] when it does not).
///
/// A loop whose captured values do not serialize never compiles: the macro's `captured`
/// check reports it at the capture's type. The probe keeps that the one error, instead of
/// adding serde's own at every place the cluster ships the struct.
#[derive(Debug)]
pub struct Probe<'a, L>(pub Option<&'a L>);

/// [`Probe`] when the loop struct serializes.
pub trait ProbeSerde<L> {
    /// The struct as postcard bytes.
    fn encode(&self) -> Option<Vec<u8>>;
    /// The struct the driver sent.
    fn decode(&self, bytes: &[u8], name: &str) -> Result<L, String>;
}

impl<L: serde::Serialize + DeserializeOwned> ProbeSerde<L> for Probe<'_, L> {
    fn encode(&self) -> Option<Vec<u8>> {
        self.0.and_then(|l| postcard::to_allocvec(l).ok())
    }
    fn decode(&self, bytes: &[u8], name: &str) -> Result<L, String> {
        postcard::from_bytes(bytes)
            .map_err(|e| format!("the captured values of `{name}` do not decode: {e}"))
    }
}

/// [`Probe`] when the loop struct does not serialize (a build that fails anyway).
pub trait ProbeNone<L> {
    /// Nothing: the struct does not serialize.
    fn encode(&self) -> Option<Vec<u8>>;
    /// An error: the struct does not deserialize.
    fn decode(&self, bytes: &[u8], name: &str) -> Result<L, String>;
}

impl<L> ProbeNone<L> for &Probe<'_, L> {
    fn encode(&self) -> Option<Vec<u8>> {
        None
    }
    fn decode(&self, _: &[u8], name: &str) -> Result<L, String> {
        Err(format!("the captured values of `{name}` do not serialize"))
    }
}
