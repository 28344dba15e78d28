//! IVF builds in bounded memory: a build that spills every batch of encoded rows to
//! scratch files (and writes `auxiliary.idx` to scratch) produces the same bytes as
//! one that keeps everything in memory, for every quantizer; the scratch space is gone
//! afterwards.

use lancer_index::distance::Metric;
use lancer_index::vector::ivf::{build, BuildParams, IndexBytes, Quantizer};
use lancer_index::vector::kmeans::Rng;

/// `rows` vectors of `dim` dims around 8 centres, with row addresses in two fragments.
fn data(rows: usize, dim: usize) -> (Vec<f32>, Vec<u64>) {
    let mut rng = Rng::new(5);
    let centres: Vec<f32> = (0..8 * dim)
        .map(|_| (rng.unit() as f32 - 0.5) * 20.0)
        .collect();
    let mut v = Vec::with_capacity(rows * dim);
    for r in 0..rows {
        let c = r % 8;
        for d in 0..dim {
            v.push(centres[c * dim + d] + rng.unit() as f32 - 0.5);
        }
    }
    let ids = (0..rows as u64)
        .map(|r| {
            if r < rows as u64 / 2 {
                r
            } else {
                (1 << 32) | r
            }
        })
        .collect();
    (v, ids)
}

#[test]
fn spilled_builds_write_the_same_bytes() {
    let (v, ids) = data(3000, 32);
    let kinds = [
        (Quantizer::Flat, Metric::L2),
        (Quantizer::Sq, Metric::Cosine),
        (
            Quantizer::Pq {
                sub_vectors: 8,
                bits: 8,
            },
            Metric::L2,
        ),
        (
            Quantizer::Pq {
                sub_vectors: 8,
                bits: 4,
            },
            Metric::Dot,
        ),
        (Quantizer::Rq { bits: 1 }, Metric::L2),
        (Quantizer::Rq { bits: 5 }, Metric::Cosine),
    ];
    for (q, metric) in kinds {
        let mut params = BuildParams::new(q, metric);
        params.num_partitions = Some(6);
        params.sample_rate = 32;
        params.max_iters = 5;
        params.memory_budget = usize::MAX;
        let kept = build(&v, &ids, 32, &params).unwrap();
        assert!(
            matches!(kept.auxiliary_file, IndexBytes::Memory(_)),
            "{q:?}"
        );
        params.memory_budget = 1;
        let spilled = build(&v, &ids, 32, &params).unwrap();
        let dir = match &spilled.auxiliary_file {
            IndexBytes::Spilled { dir, .. } => dir.path().to_path_buf(),
            IndexBytes::Memory(_) => panic!("{q:?}: a one-byte budget kept rows in memory"),
        };
        assert!(dir.join("partitions").exists(), "{q:?}");
        assert_eq!(kept.partitions, 6);
        assert_eq!(kept.rows, 3000);
        assert_eq!(spilled.index_file, kept.index_file, "{q:?}: index.idx");
        assert_eq!(
            spilled.auxiliary_file.to_vec().unwrap(),
            kept.auxiliary_file.to_vec().unwrap(),
            "{q:?}: auxiliary.idx"
        );
        drop(spilled);
        assert!(!dir.exists(), "{q:?}: scratch left behind");
    }
}

#[test]
fn builds_refuse_what_they_cannot_index() {
    let (v, ids) = data(100, 12);
    let rq = BuildParams::new(Quantizer::Rq { bits: 5 }, Metric::L2);
    let e = build(&v, &ids, 12, &rq).err().unwrap().to_string();
    assert!(e.contains("multiple of 8"), "{e}");
    let pq = BuildParams::new(
        Quantizer::Pq {
            sub_vectors: 5,
            bits: 8,
        },
        Metric::L2,
    );
    let e = build(&v, &ids, 12, &pq).err().unwrap().to_string();
    assert!(e.contains("do not divide"), "{e}");
    let flat = BuildParams::new(Quantizer::Flat, Metric::L2);
    let e = build(&[], &[], 12, &flat).err().unwrap().to_string();
    assert!(e.contains("no vectors"), "{e}");
}
