//! Damaged index files never panic: bytes of a pylance-built segment's `index.idx` and
//! `auxiliary.idx` are flipped, truncated or overwritten at random (3,000 mutations over
//! FLAT, PQ, SQ, RabitQ and HNSW segments);
//! opening and searching the segment either works or returns a typed error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use lancer_index::vector::ivf::{IvfSegment, Probe};
use lancer_table::Dataset;
use lancer_testkit::{copy_dir, repo, TempDir};

#[test]
fn mutated_index_files_never_panic() {
    let golden = repo().join("tests/data/indexes/pylance-14");
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut opened, mut refused) = (0, 0);
    for case in [
        "ivf_pq8_l2_d16",
        "ivf_sq_dot_d16",
        "ivf_flat_cosine_d16",
        "ivf_pq4_l2_d32",
        "ivf_hnsw_sq_l2_d16",
        "ivf_hnsw_pq8_dot_d16",
    ] {
        let dir = TempDir::new(&format!("idx-mut-{case}"));
        copy_dir(&golden.join(case), &dir);
        let files: Vec<PathBuf> = std::fs::read_dir(dir.join("_indices"))
            .unwrap()
            .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
            .map(|f| f.unwrap().path())
            .collect();
        let originals: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
        for _ in 0..500 {
            let which = (next() % files.len() as u64) as usize;
            let mut bytes = originals[which].clone();
            match next() % 3 {
                0 => {
                    let i = (next() % bytes.len() as u64) as usize;
                    bytes[i] ^= 1 << (next() % 8);
                }
                1 => bytes.truncate((next() % bytes.len() as u64) as usize),
                _ => {
                    let i = (next() % bytes.len() as u64) as usize;
                    for b in bytes.iter_mut().skip(i).take(8) {
                        *b = next() as u8;
                    }
                }
            }
            std::fs::write(&files[which], &bytes).unwrap();
            // A fresh handle: no cached readers of the previous mutation.
            let ds = Dataset::open(&dir).unwrap();
            let meta = ds.indices().unwrap()[0].clone();
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                IvfSegment::open(&ds, &meta).and_then(|seg| {
                    let q = vec![0.5f32; seg.dim];
                    let probe = Probe {
                        k: 10,
                        min_nprobes: 2,
                        max_nprobes: None,
                        wanted: 10,
                        round: 2,
                        ef: None,
                        approx: Default::default(),
                        keeps_all: false,
                        keep_token: None,
                    };
                    seg.search(&q, &probe, &|_| true).map(|_| ())
                })
            }));
            match run {
                Ok(Ok(())) => opened += 1,
                Ok(Err(e)) => {
                    assert!(!e.to_string().is_empty());
                    refused += 1;
                }
                Err(_) => panic!("{case}: a mutated {} panicked", files[which].display()),
            }
            std::fs::write(&files[which], &originals[which]).unwrap();
        }
    }
    assert!(
        refused > 100,
        "only {refused} mutations refused ({opened} opened)"
    );
}
