//! Index segments described for inspection (`lancer inspect DATASET --index NAME`): per
//! segment of a vector index its partitions, files and, for a query, the probe path; per
//! segment of a full-text index its format, analyzer and partitions, and a token's
//! postings. The shapes are JSON values, as the CLI prints them with `--json`.
//!
//! Spec: "Indices" (index section of the manifest; vector and full-text index files,
//! lines ~1300–3160 of `lance-reference.txt`); the files are described in
//! `docs/vector-index-format.md` and `docs/fts-index-format.md`.

use lancer_table::pb;
use lancer_table::Dataset;
use serde_json::Value;

use crate::Result;

/// Whether the index named `name` is a full-text (INVERTED) index.
pub fn is_inverted_index(ds: &Dataset, name: &str) -> Result<bool> {
    Ok(ds
        .indices()?
        .iter()
        .any(|m| m.name == name && lancer_index::inverted::segment::is_inverted(m)))
}

/// The segments `metas` of a vector index described: partitions, rows, files, the
/// dataset version each was built on; with a non-empty `query`, the partitions its
/// search would probe for the `k` nearest (`nprobes` of them, or the index's default).
pub fn vector_index_segments(
    ds: &Dataset,
    metas: &[pb::IndexMetadata],
    query: &[f32],
    k: usize,
    nprobes: Option<usize>,
) -> Result<Vec<Value>> {
    let mut segments = Vec::new();
    for m in metas {
        if lancer_index::vector::ivf::covers_nothing(m) {
            segments.push(serde_json::json!({
                "uuid": m.uuid.as_ref().and_then(|u| lancer_table::dataset::uuid_dir(&u.uuid).ok()),
                "partitions": 0,
                "rows": 0,
                "note": "built when the dataset had no vectors: covers no fragment, has no files",
            }));
            continue;
        }
        let seg = lancer_index::vector::ivf::IvfSegment::open(ds, m)?;
        let mut v = seg.describe();
        v["files"] = serde_json::json!(m
            .files
            .iter()
            .map(|f| serde_json::json!({"path": f.path, "bytes": f.size_bytes}))
            .collect::<Vec<_>>());
        v["dataset_version"] = serde_json::json!(m.dataset_version);
        if !query.is_empty() {
            v["probe"] = seg.probe_path(query, k, nprobes)?;
        }
        segments.push(v);
    }
    Ok(segments)
}

/// The segments of the full-text index `name` described: format, block size, positions,
/// fragments, documents, tokens, analyzer, partitions; with `token`, its postings in each
/// partition (the first `shown` of them).
pub fn inverted_index_segments(
    ds: &Dataset,
    name: &str,
    token: Option<&str>,
    shown: usize,
) -> Result<Vec<Value>> {
    let mut segments = Vec::new();
    for m in ds.indices()?.iter().filter(|m| m.name == name) {
        let Some(seg) = lancer_index::inverted::segment::InvertedSegment::open(ds, m)? else {
            segments.push(serde_json::json!({"note": "a format newer than Lancer reads"}));
            continue;
        };
        let word = match token {
            Some(t) => {
                let mut a = seg.params.analyzer()?;
                let mut toks = Vec::new();
                a.tokens(t, &mut toks);
                Some(toks.into_iter().next().map(|t| t.text).unwrap_or_default())
            }
            None => None,
        };
        let mut parts = Vec::new();
        for p in &seg.partitions {
            let mut v = serde_json::json!({
                "id": p.id,
                "documents": p.row_ids.len(),
                "distinct_tokens": p.num_tokens(),
                "tokens": p.total_tokens,
            });
            if let Some(w) = &word {
                v["token"] = serde_json::json!(w);
                if let Some(id) = p.token_id(w) {
                    let post = p.postings(&seg, id)?;
                    let positions = match seg.positions {
                        lancer_index::inverted::segment::Positions::None => None,
                        _ => Some(p.positions(&seg, id, &post)?),
                    };
                    let shown: Vec<serde_json::Value> = post
                        .docs
                        .iter()
                        .zip(&post.freqs)
                        .enumerate()
                        .take(shown)
                        .map(|(i, (&d, &f))| {
                            let row = p.row_ids[d as usize];
                            serde_json::json!({
                                "doc": d,
                                "row": row,
                                "fragment": row >> 32,
                                "offset": row & 0xffff_ffff,
                                "length": p.lengths[d as usize],
                                "frequency": f,
                                "positions": positions.as_ref().map(|ps| ps[i].clone()),
                            })
                        })
                        .collect();
                    v["token_id"] = serde_json::json!(id);
                    v["documents_with_token"] = serde_json::json!(post.docs.len());
                    v["blocks"] = serde_json::json!(post.docs.len().div_ceil(seg.layout.block));
                    v["postings"] = serde_json::json!(shown);
                }
            }
            parts.push(v);
        }
        segments.push(serde_json::json!({
            "uuid": m.uuid.as_ref().and_then(|u| lancer_table::dataset::uuid_dir(&u.uuid).ok()),
            "format": seg.format,
            "block_size": seg.layout.block,
            "positions": format!("{:?}", seg.positions),
            "fragments": seg.fragments.iter().collect::<Vec<_>>(),
            "documents": seg.num_docs(),
            "tokens": seg.total_tokens(),
            "params": serde_json::from_str::<serde_json::Value>(&seg.params.to_json()).unwrap_or_default(),
            "partitions": parts,
        }));
    }
    Ok(segments)
}
