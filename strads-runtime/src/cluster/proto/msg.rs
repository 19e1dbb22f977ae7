//! The messages ranks exchange, and their checked encoding (postcard).

use serde::{Deserialize, Serialize};

/// The element types arrays may have to cross processes, as raw little-endian bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Elem {
    F32,
    F64,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    Usize,
    Isize,
}

impl Elem {
    /// Bytes per element on the wire (`usize`/`isize` travel as 8).
    pub fn size(self) -> usize {
        match self {
            Elem::U8 | Elem::I8 => 1,
            Elem::U16 | Elem::I16 => 2,
            Elem::F32 | Elem::U32 | Elem::I32 => 4,
            Elem::F64 | Elem::U64 | Elem::I64 | Elem::Usize | Elem::Isize => 8,
        }
    }
}

/// One array of a call, as the driver describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrayMeta {
    /// The driver's array id and version: what a worker's copy is cached under.
    pub id: u64,
    pub version: u64,
    /// Dense or sparse, and its shape.
    pub sparse: bool,
    pub shape: Vec<usize>,
    /// Entries of a sparse array.
    pub entries: u64,
    /// A sparse array whose values stay out (an `iter_mut()` loop's: each rank gets the
    /// values of its tasks with the call, [`Msg::Values`]): only its indices travel, or
    /// with `entries` 0 only its shape (its blocks go as [`Msg::Blocks`]).
    pub keys_only: bool,
    pub elem: Elem,
    /// Written by the loop: travels by regions ([`Itinerary`](super::Itinerary)); read-only
    /// arrays are sent whole when the worker lacks this version (`sent`).
    pub shipped: bool,
    pub sent: bool,
    /// Ranks that hold this version before the call.
    pub holders: Vec<usize>,
    /// Of a written array: regions other ranks hold current from earlier calls
    /// ([`PlanArray::held`](super::PlanArray::held)).
    pub held: Vec<(super::Region, usize)>,
    /// Of a written array: regions current only on another rank, left there by earlier
    /// calls ([`PlanArray::away`](super::PlanArray::away)).
    pub away: Vec<(super::Region, usize)>,
    /// Of an array created in place: the recipe that makes its parts no rank has written
    /// yet (those of `away` on [`MADE`](super::itinerary::MADE)).
    pub made: Option<super::Recipe>,
}

/// The driver's request to run one call of a loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallMsg {
    /// Calls are numbered from 1 by the driver.
    pub seq: u64,
    /// The loop's struct name (its registry key) and a hash of its spec.
    pub name: String,
    pub spec_hash: u64,
    /// The loop struct, postcard.
    pub captured: Vec<u8>,
    /// The iteration space when it is not an array (ranges), postcard.
    pub space: Vec<u8>,
    /// Worker threads per rank.
    pub threads: usize,
    pub arrays: Vec<ArrayMeta>,
    /// The schedule, postcard: the worker checks its own plan against it (or runs it, a
    /// reconnaissance plan). Empty when it is the one the loop's last call sent, which the
    /// worker keeps: `schedule_hash` names it.
    pub schedule: Vec<u8>,
    pub schedule_hash: u64,
    /// Not 0: the iteration space (a sparse array, or an `iter_mut()` loop's indices)
    /// crosses by blocks, each rank getting those it runs when `blocks_sent`
    /// (`Msg::Blocks`), or keeping those the loop's last call sent under this key.
    pub blocks: u64,
    pub blocks_sent: bool,
    /// The driver's program (its file), for errors that name both binaries.
    pub program: String,
    /// The driver records the call (`testing::record`): each rank sends back the
    /// iterations its workers ran (`Msg::Trace`).
    pub trace: bool,
}

/// A message between ranks. `Array` and `Transfer` head a block frame whose data are the
/// elements, raw little-endian.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Driver → worker: run a call.
    Call(Box<CallMsg>),
    /// A whole array (its elements, or for a sparse array its entries) of call `seq`.
    Array { seq: u64, array: usize },
    /// The elements of transfer `tid` of call `seq`.
    Transfer { seq: u64, tid: usize },
    /// Task `(step, worker)` of call `seq` is done.
    Done {
        seq: u64,
        step: usize,
        worker: usize,
    },
    /// The sender passed the barrier after `step`.
    Barrier { seq: u64, step: usize },
    /// Worker → driver: every task of the worker ran and its transfers are sent; the
    /// reductions' parts (postcard).
    Finished { seq: u64, parts: Vec<u8> },
    /// Worker → driver: the iterations its workers ran in recorded call `seq` (a block
    /// frame: postcard `Vec<(step, worker, ids)>`), sent before `Finished`.
    Trace { seq: u64 },
    /// The sender failed the call (or the job): every rank stops.
    Failed { seq: u64, message: String },
    /// Driver → worker, between calls: send the elements of `region` of the driver's
    /// array `id` that this worker holds current (parts a call left there).
    Fetch {
        req: u64,
        id: u64,
        region: super::Region,
    },
    /// Worker → driver: the elements fetch `req` asked for (a block frame).
    Fetched { req: u64 },
    /// Driver → worker, between calls: set the elements of `region` of the driver's array
    /// `id` that this worker holds to `data`, little-endian (serial code wrote them);
    /// answered by an empty `Fetched`. A control message, so that it comes after a
    /// checkpoint's `Save` the driver sent before it.
    Write {
        req: u64,
        id: u64,
        region: super::Region,
        data: Vec<u8>,
    },
    /// Driver → workers: the driver dropped array `id`; drop its copy.
    Forget { id: u64 },
    /// Nothing to say; keeps the peer from timing out.
    Ping,
    /// Driver → workers: the program is over.
    Shutdown,
    /// An `iter_mut()` call's values: driver → worker, those of the worker's tasks (or a
    /// note that it keeps them); worker → driver, an empty answer once its tasks ran (it
    /// keeps them). A block frame.
    Values { seq: u64 },
    /// Driver → worker: the blocks of call `seq`'s space that the worker runs (a sparse
    /// array's entries, or an `iter_mut()` loop's indices and ids; a block frame).
    Blocks { seq: u64 },
    /// The sender's workers' copies of a write-back buffer at the `key`-th exchange of call
    /// `seq` (a block frame).
    Merge { seq: u64, key: u64 },
    /// Driver → workers, between calls: run collective data operation `op` (a data set's
    /// parts made in place, a histogram, entries traded) with `args` (postcard).
    Data { req: u64, op: String, args: Vec<u8> },
    /// Worker → driver: the answer to data operation `req` (a block frame).
    DataReply { req: u64 },
    /// Rank → rank: the sender's bytes for round `round` of data operation `req` (a block
    /// frame).
    Exchange { req: u64, round: u64 },
    /// Driver → worker, between calls: write the elements of `region` of the driver's
    /// array `id` that this worker holds to the file `path` (a checkpoint), followed by
    /// their checksum; answered by `Saved` once written (the worker takes the elements
    /// before the next call, and the driver's next call does not wait for the file).
    Save {
        req: u64,
        id: u64,
        region: super::Region,
        path: String,
    },
    /// Worker → driver: the file `path` a `Save` named is written whole (`ok`), or not.
    Saved { path: String, ok: bool },
    /// Driver → worker, between calls: the checksums of the elements of each range of
    /// `region` of the driver's array `id` that this worker holds (a resumed run comparing
    /// an input with parts here); answered by `Fetched`, whose frame holds them (postcard,
    /// a `checkpoint::Poly` a range).
    Digest {
        req: u64,
        id: u64,
        region: super::Region,
    },
}

/// The largest control message accepted.
pub const MAX_MSG: usize = 256 << 20;

/// Encodes a message.
pub fn encode(msg: &Msg) -> Vec<u8> {
    postcard::to_allocvec(msg).expect("messages always encode")
}

/// Decodes a message, checking its size first; a truncated or garbled one is an error
/// naming what was wrong.
pub fn decode(bytes: &[u8]) -> Result<Msg, String> {
    if bytes.len() > MAX_MSG {
        return Err(format!(
            "a message of {} bytes (more than the {MAX_MSG} accepted)",
            bytes.len()
        ));
    }
    match postcard::take_from_bytes::<Msg>(bytes) {
        Ok((msg, [])) => Ok(msg),
        Ok((_, rest)) => Err(format!(
            "a message with {} bytes left over after it",
            rest.len()
        )),
        Err(e) => Err(format!("a message that does not decode ({e})")),
    }
}

/// The wire type of `T`, when its values can cross processes.
pub fn elem_of<T: 'static>() -> Option<Elem> {
    elem_of_id(std::any::TypeId::of::<T>())
}

/// The wire type of the type whose id is `t`, when its values can cross processes.
pub fn elem_of_id(t: std::any::TypeId) -> Option<Elem> {
    macro_rules! pick {
        ($($ty:ty => $e:ident),*) => {
            $(if t == std::any::TypeId::of::<$ty>() { return Some(Elem::$e); })*
        };
    }
    pick!(f32 => F32, f64 => F64, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
          i8 => I8, i16 => I16, i32 => I32, i64 => I64, usize => Usize, isize => Isize);
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn messages_round_trip() {
        for m in [
            Msg::Done {
                seq: 3,
                step: 1,
                worker: 2,
            },
            Msg::Finished {
                seq: 9,
                parts: vec![1, 2, 3],
            },
            Msg::Trace { seq: 9 },
            Msg::Failed {
                seq: 0,
                message: "x".into(),
            },
            Msg::Fetch {
                req: 4,
                id: 7,
                region: crate::cluster::proto::Region(vec![(2, 5), (8, 13)]),
            },
            Msg::Fetched { req: 4 },
            Msg::Write {
                req: 6,
                id: 7,
                region: crate::cluster::proto::Region(vec![(3, 4)]),
                data: vec![0, 0, 128, 63],
            },
            Msg::Merge { seq: 2, key: 11 },
            Msg::Values { seq: 3 },
            Msg::Blocks { seq: 4 },
            Msg::Forget { id: 7 },
            Msg::Data {
                req: 2,
                op: "strads::gather".into(),
                args: vec![1, 2],
            },
            Msg::DataReply { req: 2 },
            Msg::Exchange { req: 2, round: 5 },
            Msg::Save {
                req: 3,
                id: 9,
                region: crate::cluster::proto::Region(vec![(0, 4)]),
                path: "/ck/c1-p0-r1.bin".into(),
            },
            Msg::Saved {
                path: "/ck/c1-p0-r1.bin".into(),
                ok: false,
            },
            Msg::Digest {
                req: 5,
                id: 9,
                region: crate::cluster::proto::Region(vec![(0, 4), (6, 9)]),
            },
            Msg::Ping,
        ] {
            assert_eq!(decode(&encode(&m)).unwrap(), m);
        }
    }

    #[test]
    fn truncated_and_padded_messages_are_errors() {
        let bytes = encode(&Msg::Finished {
            seq: 9,
            parts: vec![7; 100],
        });
        let cut = decode(&bytes[..bytes.len() - 1]).unwrap_err();
        assert!(cut.contains("does not decode"), "{cut}");
        let mut more = bytes.clone();
        more.push(0);
        assert_eq!(
            decode(&more).unwrap_err(),
            "a message with 1 bytes left over after it"
        );
    }

    #[test]
    fn a_huge_declared_length_allocates_nothing() {
        // `Finished { seq: 1, parts: <length 2^60> }` with no bytes behind the length.
        let mut bytes = vec![5, 1];
        bytes.extend([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]);
        assert!(decode(&bytes).is_err());
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn mutated_messages_never_panic(seed in any::<u64>(), at in any::<usize>(), b in any::<u8>()) {
            let msg = Msg::Call(Box::new(CallMsg {
                seq: seed,
                name: "L".into(),
                spec_hash: seed,
                captured: vec![1, 2, 3],
                space: vec![],
                threads: 2,
                arrays: vec![ArrayMeta {
                    id: 1, version: 2, sparse: false, shape: vec![3, 4], entries: 0, keys_only: false,
                    elem: Elem::F32, shipped: true, sent: false, holders: vec![0],
                    held: vec![(crate::cluster::proto::Region(vec![(0, 4), (6, 9)]), 1)],
                    away: vec![(crate::cluster::proto::Region(vec![(4, 6)]), 1)],
                    made: Some(crate::cluster::proto::Recipe::Random { seed: 3 }),
                }],
                schedule: vec![9; 20],
                schedule_hash: 17,
                blocks: 5,
                blocks_sent: true,
                program: "prog".into(),
                trace: true,
            }));
            let mut bytes = encode(&msg);
            let i = at % bytes.len();
            bytes[i] = b;
            let _ = decode(&bytes);
        }
    }
}
