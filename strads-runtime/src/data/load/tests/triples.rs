use super::*;
use crate::data::load::triples::{OPENKE_IDS, OPENKE_TRIPLES, TEXT_TRIPLES};
use std::path::PathBuf;

/// A temporary folder of files, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(files: &[(&str, &str)]) -> Dir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("strads-kg-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, contents) in files {
            std::fs::write(dir.join(name), contents).unwrap();
        }
        Dir(dir)
    }

    /// A file of the folder, as error messages show it.
    fn shown(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    fn load(&self) -> Result<KnowledgeGraph> {
        knowledge_graph(&self.0)
    }

    fn err(&self) -> String {
        self.load().unwrap_err().to_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ENTITIES: &str = "3\r\n/m/a\t0\r\n/m/c\t2\r\n/m/b\t1\r\n";
const RELATIONS: &str = "2\r\n/r/x\t0\r\n/r/y\t1\r\n";

/// An OpenKE folder with the given training file (and small valid, test and id files).
fn openke(train: &str) -> Dir {
    openke_with(&[("train2id.txt", train)])
}

/// An OpenKE folder whose files are `changed`, the others small and valid.
/// An OpenKE folder whose `train2id.txt` is `train` is refused at `line` with `message`.
fn train_refused(train: &str, line: usize, message: &str) {
    let d = openke(train);
    assert_eq!(
        d.err(),
        format!(
            "{}:{line}: {message}; expected {OPENKE_TRIPLES}",
            d.shown("train2id.txt")
        ),
        "{train:?}"
    );
}

fn openke_with(changed: &[(&str, &str)]) -> Dir {
    let mut files = vec![
        ("train2id.txt", "2\n0 1 0\n1 2 1\n"),
        ("valid2id.txt", "1\n2 0 1\n"),
        ("test2id.txt", "1\n0 2 1\n"),
        ("entity2id.txt", ENTITIES),
        ("relation2id.txt", RELATIONS),
    ];
    for &(name, contents) in changed {
        files.iter_mut().find(|f| f.0 == name).unwrap().1 = contents;
    }
    Dir::new(&files)
}

fn text(train: &str) -> Dir {
    Dir::new(&[
        ("train.txt", train),
        ("valid.txt", "b\tr\tc\n"),
        ("test.txt", "c\ts\td\n"),
    ])
}

#[test]
fn openke_triples_are_head_tail_relation() {
    let d = openke("\u{feff}2\n0 1 0\n\n1   2\t1\n");
    let kg = d.load().unwrap();
    assert_eq!((kg.entities, kg.relations), (3, 2));
    assert_eq!(kg.train, vec![[0, 0, 1], [1, 1, 2]]);
    assert_eq!(kg.valid, vec![[2, 1, 0]]);
    assert_eq!(kg.test, vec![[0, 1, 2]]);
    assert_eq!(kg.entity_names, ["/m/a", "/m/b", "/m/c"]);
    assert_eq!(kg.relation_names, ["/r/x", "/r/y"]);
    assert_eq!(kg.triples(), 4);
}

#[test]
fn text_ids_follow_first_appearance() {
    let d = text("00260881\t_hypernym\t00260622\n\n00260622\t_also_see\t00260881\r\n");
    let kg = d.load().unwrap();
    assert_eq!(kg.entity_names, ["00260881", "00260622", "b", "c", "d"]);
    assert_eq!(kg.relation_names, ["_hypernym", "_also_see", "r", "s"]);
    assert_eq!(kg.train, vec![[0, 0, 1], [1, 1, 0]]);
    assert_eq!(kg.valid, vec![[2, 2, 3]]);
    assert_eq!(kg.test, vec![[3, 3, 4]]);
    assert_eq!((kg.entities, kg.relations), (5, 4));
}

/// A folder holding both layouts is read as OpenKE.
#[test]
fn openke_comes_first() {
    let d = openke_with(&[]);
    std::fs::write(d.0.join("train.txt"), "not read\n").unwrap();
    assert_eq!(d.load().unwrap().train, vec![[0, 0, 1], [1, 1, 2]]);
}

#[test]
fn openke_triple_lines() {
    for (train, line, message) in [
        (
            "2\n0 1\n1 2 1\n",
            2,
            "\"0 1\" has 2 fields, need 3: head, tail and relation ids",
        ),
        (
            "2\n0 1 0 5\n1 2 1\n",
            2,
            "\"0 1 0 5\" has 4 fields, need 3: head, tail and relation ids",
        ),
        (
            "2\n0 1 0\n1 x 1\n",
            3,
            "tail id \"x\" is not a whole number",
        ),
        (
            "2\n0 1 0\n-1 2 1\n",
            3,
            "head id \"-1\" is not a whole number",
        ),
        (
            "1\n99999999999 1 0\n",
            2,
            "head id \"99999999999\" is too large (ids are below 4294967296)",
        ),
        (
            "2\n0 1 0\n3 2 1\n",
            3,
            "head id 3 is not below 3, the number of entities in entity2id.txt",
        ),
        (
            "1\n0 3 0\n",
            2,
            "tail id 3 is not below 3, the number of entities in entity2id.txt",
        ),
        (
            "1\n0 1 2\n",
            2,
            "relation id 2 is not below 2, the number of relations in relation2id.txt",
        ),
    ] {
        train_refused(train, line, message);
    }
}

#[test]
fn openke_counts_must_match() {
    for (train, line, message) in [
        (
            "1\n0 1 0\n1 2 1\n",
            3,
            "line 1 announces 1 line, and this is one more",
        ),
        (
            "3\n0 1 0\n1 2 1\n\n",
            5,
            "the file ends after 2 lines, but line 1 announces 3",
        ),
        ("", 1, "the file is empty: it has no count line"),
        ("\n \r\n", 3, "the file is empty: it has no count line"),
        ("0\n", 1, "the file has no triples"),
        (
            "two\n0 1 0\n",
            1,
            "the first line \"two\" is not a count (a whole number)",
        ),
        (
            "0 1 0\n",
            1,
            "the first line \"0 1 0\" is not a count (a whole number)",
        ),
    ] {
        train_refused(train, line, message);
    }
}

/// A count far beyond the file is an error, not an allocation.
#[test]
fn huge_counts_allocate_nothing() {
    let d = openke_with(&[("entity2id.txt", "18446744073709551615\n/m/a\t0\n")]);
    assert_eq!(
        d.err(),
        format!(
            "{}:3: the file ends after 1 line, but line 1 announces 18446744073709551615; \
             expected {OPENKE_IDS}",
            d.shown("entity2id.txt")
        )
    );
}

#[test]
fn openke_id_files() {
    for (entities, line, message) in [
        (
            "2\n/m/a\t0\n/m/b\t5\n",
            3,
            "id 5 is not below 2, the count of names in the file",
        ),
        (
            "2\n/m/a\t1\n/m/b\t1\n",
            3,
            "id 1 was given already on line 2",
        ),
        (
            "2\n/m/a\t0\n/m/b\n",
            3,
            "\"/m/b\" has 1 field, need 2: a name and an id",
        ),
        (
            "2\n/m/a\t0\n/m/b\t1\tx\n",
            3,
            "\"/m/b\\t1\\tx\" has 3 fields, need 2: a name and an id",
        ),
        ("1\n/m/a\tzero\n", 2, "id \"zero\" is not a whole number"),
        ("1\n\u{ff}\t0\n", 2, "the name \"\\u{ff}\" is not UTF-8"),
    ] {
        // Non-UTF-8 bytes: `\u{ff}` stands for the byte 0xff.
        let bytes: Vec<u8> = entities
            .chars()
            .map(|c| if c == '\u{ff}' { 0xff } else { c as u8 })
            .collect();
        let d = openke_with(&[]);
        std::fs::write(d.0.join("entity2id.txt"), &bytes).unwrap();
        let message = message.replace("\\u{ff}", "\u{fffd}");
        assert_eq!(
            d.err(),
            format!(
                "{}:{line}: {message}; expected {OPENKE_IDS}",
                d.shown("entity2id.txt")
            ),
            "{entities:?}"
        );
    }
    let d = openke_with(&[("relation2id.txt", "")]);
    assert_eq!(
        d.err(),
        format!(
            "{}:1: the file is empty: it has no count line; expected {OPENKE_IDS}",
            d.shown("relation2id.txt")
        )
    );
}

#[test]
fn missing_files_are_named() {
    let d = openke_with(&[]);
    std::fs::remove_file(d.0.join("relation2id.txt")).unwrap();
    let e = d.err();
    assert!(
        e.starts_with(&format!("{}: ", d.shown("relation2id.txt"))),
        "{e}"
    );
    let d = text("a\tr\tb\n");
    std::fs::remove_file(d.0.join("test.txt")).unwrap();
    let e = d.err();
    assert!(e.starts_with(&format!("{}: ", d.shown("test.txt"))), "{e}");
}

#[test]
fn folders_of_neither_layout() {
    let d = Dir::new(&[("train.tsv", "a\tr\tb\n")]);
    let want = "not a folder of knowledge-graph triples: expected OpenKE's train2id.txt, \
                valid2id.txt, test2id.txt, entity2id.txt and relation2id.txt, or train.txt, \
                valid.txt and test.txt";
    assert_eq!(d.err(), format!("{}: {want}", d.0.display()));
    // A file is not a folder.
    let file = d.0.join("train.tsv");
    assert_eq!(
        knowledge_graph(&file).unwrap_err().to_string(),
        format!("{}: {want}", file.display())
    );
    let gone = d.0.join("nothing-here");
    let e = knowledge_graph(&gone).unwrap_err();
    assert!(matches!(&e, Error::Io { path, .. } if path == &gone), "{e}");
}

#[test]
fn text_lines() {
    for (train, line, message) in [
        (
            "a\tr\tb\na\tr\n",
            2,
            "\"a\\tr\" has 2 fields, need 3: head, relation and tail",
        ),
        (
            "a\tr\tb\tc\n",
            1,
            "\"a\\tr\\tb\\tc\" has 4 fields, need 3: head, relation and tail",
        ),
        ("\n\n", 1, "the file has no triples"),
    ] {
        let d = text(train);
        assert_eq!(
            d.err(),
            format!(
                "{}:{line}: {message}; expected {TEXT_TRIPLES}",
                d.shown("train.txt")
            ),
            "{train:?}"
        );
    }
    let d = text("a\tr\tb\n");
    std::fs::write(d.0.join("valid.txt"), b"a\tr\t\xffb\n").unwrap();
    assert_eq!(
        d.err(),
        format!(
            "{}:1: the name \"\u{fffd}b\" is not UTF-8; expected {TEXT_TRIPLES}",
            d.shown("valid.txt")
        )
    );
}

#[test]
#[cfg_attr(
    not(strads_data_kg_fb15k237),
    ignore = "needs ../shared/data/kg-fb15k237 (not found when this test was built)"
)]
fn fb15k237() {
    let g = knowledge_graph(crate::data::shared_data("kg-fb15k237")).unwrap();
    // The published statistics (PROVENANCE.md).
    assert_eq!((g.entities, g.relations), (14_541, 237));
    assert_eq!(
        (g.train.len(), g.valid.len(), g.test.len()),
        (272_115, 17_535, 20_466)
    );
    // train2id.txt's first line after the count is `0 1 0`: head 0, tail 1, relation 0.
    assert_eq!(g.train[0], [0, 0, 1]);
    assert_eq!(g.entity_names[0], "/m/027rn");
}

#[test]
#[cfg_attr(
    not(strads_data_kg_wn18rr),
    ignore = "needs ../shared/data/kg-wn18rr (not found when this test was built)"
)]
fn wn18rr() {
    let g = knowledge_graph(crate::data::shared_data("kg-wn18rr")).unwrap();
    assert_eq!((g.entities, g.relations), (40_943, 11));
    assert_eq!(
        (g.train.len(), g.valid.len(), g.test.len()),
        (86_835, 3_034, 3_134)
    );
}
