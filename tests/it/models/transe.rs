//! End to end: the `transe` example's loops. Training runs in the data-parallel mode: one
//! worker's plan is the serial loop bit for bit, and more workers' runs equal the replay of
//! their recorded order, the same on every run. The evaluation is a 1D loop whose parallel
//! result is the serial one (and a brute-force ranking's). The loader reads both layouts.

use std::collections::HashSet;

use strads::generate::{KgConfig, kg_like};
use strads::load::KnowledgeGraph;
use strads::prelude::*;
use strads::testing::{bits, plan_always, record, replay, serial};

/// The example's loops, compiled here as they are there.
#[path = "../../../examples/transe/model.rs"]
mod model;
use model::{
    bern, filter_keys, normalize, query_distance, rank_test, train_adversarial, train_margin,
    triple_array,
};

const DIM: usize = 16;

fn graph() -> KnowledgeGraph {
    kg_like(&KgConfig {
        entities: 300,
        relations: 20,
        train: 3_000,
        valid: 150,
        test: 150,
        cluster_size: 30,
        ..KgConfig::default()
    })
}

/// The model's starting point, the same every time.
fn start(kg: &KnowledgeGraph) -> (DistArray<f32, 2>, DistArray<f32, 2>) {
    let ent = DistArray::from_fn([kg.entities, DIM], |[e, k]| {
        IterRng::new(1, &[e as u64, k as u64]).next_f32() - 0.5
    });
    let rel = DistArray::from_fn([kg.relations, DIM], |[r, k]| {
        IterRng::new(2, &[r as u64, k as u64]).next_f32() - 0.5
    });
    (ent, rel)
}

/// The example's loss functions, as one signature.
#[derive(Clone, Copy, Debug)]
enum Loss {
    Adversarial,
    Margin,
}

/// `epochs` epochs of training: the example's epoch, with a fixed order per epoch.
fn train(
    kg: &KnowledgeGraph,
    loss: Loss,
    ent: &mut DistArray<f32, 2>,
    rel: &mut DistArray<f32, 2>,
    epochs: u64,
) -> Vec<f64> {
    let triples = triple_array(&kg.train);
    let head_prob = DistArray::from_vec([kg.relations], bern(kg)).unwrap();
    let n = kg.train.len();
    (0..epochs)
        .map(|epoch| {
            let order = DistArray::from_fn([n], |[i]| ((i * 7 + epoch as usize * 11) % n) as u32);
            normalize(ent);
            match loss {
                Loss::Adversarial => train_adversarial(
                    &triples, &order, &head_prob, ent, rel, 6, 4.0, 0.05, 1.0, true, 9, epoch,
                ),
                Loss::Margin => train_margin(
                    &triples, &order, &head_prob, ent, rel, 3, 2.0, 0.02, true, 9, epoch,
                ),
            }
        })
        .collect()
}

/// `order` is a permutation of the training triples (7 and `n` are coprime).
#[test]
fn orders_are_permutations() {
    let n = graph().train.len();
    let mut seen: Vec<usize> = (0..n).map(|i| (i * 7 + 11) % n).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..n).collect::<Vec<_>>());
}

#[test]
fn one_worker_equals_the_serial_loop() {
    let kg = graph();
    for loss in [Loss::Adversarial, Loss::Margin] {
        let (mut ent, mut rel) = start(&kg);
        let want = serial(|| train(&kg, loss, &mut ent, &mut rel, 2));
        let (mut ent1, mut rel1) = start(&kg);
        let got =
            plan_always(|| strads::with_threads(1, || train(&kg, loss, &mut ent1, &mut rel1, 2)));
        assert_eq!(bits(&ent1), bits(&ent), "{loss:?}: entities");
        assert_eq!(bits(&rel1), bits(&rel), "{loss:?}: relations");
        assert_eq!(bits(&got), bits(&want), "{loss:?}: losses");
        assert!(want.iter().all(|l| l.is_finite() && *l > 0.0), "{want:?}");
    }
}

#[test]
fn two_threads_equal_their_replay_and_every_run() {
    let kg = graph();
    for loss in [Loss::Adversarial, Loss::Margin] {
        let (mut ent, mut rel) = start(&kg);
        let (losses, trace) =
            strads::with_threads(2, || record(|| train(&kg, loss, &mut ent, &mut rel, 2)));
        assert!(
            trace
                .runs
                .iter()
                .any(|run| run.plan.contains("sync replicas=ent,rel")),
            "{loss:?}: {:?}",
            trace.runs.iter().map(|r| &r.plan).collect::<Vec<_>>()
        );
        let (mut ent2, mut rel2) = start(&kg);
        let replayed = replay(&trace, || train(&kg, loss, &mut ent2, &mut rel2, 2));
        assert_eq!(bits(&ent2), bits(&ent), "{loss:?}: entities, replayed");
        assert_eq!(bits(&rel2), bits(&rel), "{loss:?}: relations, replayed");
        assert_eq!(bits(&replayed), bits(&losses), "{loss:?}: losses, replayed");
        let (mut ent3, mut rel3) = start(&kg);
        let again = strads::with_threads(2, || train(&kg, loss, &mut ent3, &mut rel3, 2));
        assert_eq!(bits(&ent3), bits(&ent), "{loss:?}: entities, second run");
        assert_eq!(bits(&again), bits(&losses), "{loss:?}: losses, second run");
    }
}

/// The filtered ranks by brute force: every candidate scored, known triples skipped.
fn brute_force(
    kg: &KnowledgeGraph,
    ent: &DistArray<f32, 2>,
    rel: &DistArray<f32, 2>,
) -> (f64, u64, u64, u64) {
    let known: HashSet<[u32; 3]> = kg
        .train
        .iter()
        .chain(&kg.valid)
        .chain(&kg.test)
        .copied()
        .collect();
    let (mut rr, mut hits) = (0.0, [0u64; 3]);
    for &[h, r, t] in &kg.test {
        for side in 0..2 {
            let q: Vec<f32> = (0..DIM)
                .map(|k| match side {
                    0 => ent.row(h as usize)[k] + rel.row(r as usize)[k],
                    _ => ent.row(t as usize)[k] - rel.row(r as usize)[k],
                })
                .collect();
            let truth = if side == 0 { t } else { h };
            let d_true = query_distance(&q, ent.row(truth as usize), true);
            let (mut better, mut ties) = (0u64, 0u64);
            for e in 0..kg.entities as u32 {
                let triple = if side == 0 { [h, r, e] } else { [e, r, t] };
                if known.contains(&triple) {
                    continue;
                }
                let d = query_distance(&q, ent.row(e as usize), true);
                better += u64::from(d < d_true);
                ties += u64::from(d == d_true);
            }
            let rank = 1 + better + ties / 2;
            rr += 1.0 / rank as f64;
            for (hit, k) in hits.iter_mut().zip([1, 3, 10]) {
                *hit += u64::from(rank <= k);
            }
        }
    }
    (rr, hits[0], hits[1], hits[2])
}

#[test]
fn evaluation_in_parallel_equals_the_serial_loop_and_brute_force() {
    let kg = graph();
    let (mut ent, mut rel) = start(&kg);
    serial(|| train(&kg, Loss::Adversarial, &mut ent, &mut rel, 3));
    let known = filter_keys(&kg).unwrap();
    let test = triple_array(&kg.test);
    let want = serial(|| rank_test(&test, &known, &ent, &rel, true));
    let brute = brute_force(&kg, &ent, &rel);
    assert_eq!((want.1, want.2, want.3), (brute.1, brute.2, brute.3));
    assert!(
        (want.0 - brute.0).abs() <= 1e-12 * brute.0,
        "{want:?} {brute:?}"
    );
    for threads in [2, 3] {
        let (got, trace) = plan_always(|| {
            strads::with_threads(threads, || {
                record(|| rank_test(&test, &known, &ent, &rel, true))
            })
        });
        assert!(trace.runs[0].plan.contains("1d"), "{}", trace.runs[0].plan);
        // Counts are exact; the sum of reciprocal ranks is added in another order.
        assert_eq!((got.1, got.2, got.3), (want.1, want.2, want.3), "{threads}");
        assert!(
            (got.0 - want.0).abs() <= 1e-12 * want.0,
            "{threads}: {got:?}"
        );
        let replayed = replay(&trace, || rank_test(&test, &known, &ent, &rel, true));
        assert_eq!(replayed.0.to_bits(), got.0.to_bits(), "{threads}: replayed");
        assert_eq!((replayed.1, replayed.2, replayed.3), (got.1, got.2, got.3));
    }
}

/// A few epochs on the generated graph rank the test triples far above chance.
#[test]
fn training_learns_the_generated_graph() {
    let kg = graph();
    let (mut ent, mut rel) = start(&kg);
    let known = filter_keys(&kg).unwrap();
    let test = triple_array(&kg.test);
    let mrr = |ent: &DistArray<f32, 2>, rel: &DistArray<f32, 2>| {
        let (rr, ..) = strads::with_threads(2, || rank_test(&test, &known, ent, rel, true));
        rr / (2 * kg.test.len()) as f64
    };
    let before = mrr(&ent, &rel);
    let losses = strads::with_threads(2, || train(&kg, Loss::Adversarial, &mut ent, &mut rel, 8));
    let after = mrr(&ent, &rel);
    assert!(losses[7] < losses[0], "{losses:?}");
    assert!(
        before < 0.05 && after > 0.1,
        "MRR {before} before, {after} after"
    );
}

#[test]
fn bern_corrupts_the_side_with_more_entities() {
    let kg = KnowledgeGraph {
        entities: 6,
        relations: 3,
        // r0: one head, four tails; r1: four heads, one tail; r2: unused.
        train: vec![
            [0, 0, 1],
            [0, 0, 2],
            [0, 0, 3],
            [0, 0, 4],
            [1, 1, 5],
            [2, 1, 5],
            [3, 1, 5],
            [4, 1, 5],
        ],
        valid: vec![],
        test: vec![[0, 0, 5]],
        entity_names: (0..6).map(|e| format!("e{e}")).collect(),
        relation_names: vec!["r0".into(), "r1".into(), "r2".into()],
    };
    // tph / (tph + hpt): 4 / (4 + 1), 1 / (1 + 4), and 1/2 without triples.
    assert_eq!(bern(&kg), vec![0.8, 0.2, 0.5]);
    // Keys of both queries of every triple, sorted, without repeats.
    let keys = filter_keys(&kg).unwrap();
    assert_eq!(keys.len(), 2 * 9);
    assert!(keys.as_slice().windows(2).all(|w| w[0] < w[1]));
    // (h, r, t) = (0, 0, 5): the tail query's key, then the head query's.
    assert!(keys.as_slice().contains(&(5)));
    assert!(keys.as_slice().contains(&(((6 + 5) * 3) * 6)));
}

/// A folder of files in the temporary directory, removed on drop.
struct Dir(std::path::PathBuf);

impl Dir {
    fn new(name: &str, files: &[(&str, &str)]) -> Dir {
        let dir = std::env::temp_dir().join(format!("strads-transe-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (file, contents) in files {
            std::fs::write(dir.join(file), contents).unwrap();
        }
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_loader_reads_both_layouts_and_names_bad_lines() {
    let openke = Dir::new(
        "openke",
        &[
            ("entity2id.txt", "3\r\n/m/x\t0\r\n/m/y\t1\r\n/m/z\t2\r\n"),
            ("relation2id.txt", "1\r\n/r\t0\r\n"),
            ("train2id.txt", "2\n0 1 0\n1 2 0\n"),
            ("valid2id.txt", "1\n2 0 0\n"),
            ("test2id.txt", "1\n0 2 0\n"),
        ],
    );
    let kg = strads::load::knowledge_graph(&openke.0).unwrap();
    assert_eq!((kg.entities, kg.relations), (3, 1));
    assert_eq!(kg.train, vec![[0, 0, 1], [1, 0, 2]]);
    assert_eq!(kg.test, vec![[0, 0, 2]]);
    assert_eq!(kg.entity_names, ["/m/x", "/m/y", "/m/z"]);

    let text = Dir::new(
        "text",
        &[
            (
                "train.txt",
                "00001\t_hypernym\t00002\n00002\t_hypernym\t00003\n",
            ),
            ("valid.txt", "00003\t_also_see\t00001\n"),
            ("test.txt", "00004\t_hypernym\t00001\n"),
        ],
    );
    let kg = strads::load::knowledge_graph(&text.0).unwrap();
    assert_eq!((kg.entities, kg.relations), (4, 2));
    assert_eq!(kg.valid, vec![[2, 1, 0]]);
    assert_eq!(kg.test, vec![[3, 0, 0]]);
    assert_eq!(kg.entity_names, ["00001", "00002", "00003", "00004"]);

    std::fs::write(openke.0.join("test2id.txt"), "1\n0 2 1\n").unwrap();
    let e = strads::load::knowledge_graph(&openke.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: relation id 1 is not below 1, the number of relations in relation2id.txt; \
             expected OpenKE triples: a first line with the number of triples, then one \
             `head tail relation` line per triple (0-based integer ids, in the order head, \
             tail, relation)",
            openke.0.join("test2id.txt").display()
        )
    );
}
