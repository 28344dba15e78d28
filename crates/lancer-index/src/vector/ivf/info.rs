//! What an IVF segment holds, for people and tools: pylance's `index_statistics`
//! entries, the `lancer inspect --index` summary and a query's probe path (format guide
//! "Vector Indices" → IVF; statistics as pylance 14 reports them).

use super::{early_pruning, IvfSegment, Storage};
use crate::{IndexError, Result};

impl IvfSegment {
    /// pylance's statistics of this segment (`index_statistics`'s `indices` entries):
    /// type, uuid, `uri` (the index file's location, given), metric, partitions and
    /// their sizes, centroids, the quantizer's stored settings (`sub_index`), the
    /// k-means loss and the index file version.
    pub fn statistics(&self, uri: &str) -> serde_json::Value {
        let metric = self.metric.name();
        let mut sub = match &self.storage_metadata {
            serde_json::Value::Object(m) => m.clone(),
            _ => serde_json::Map::new(),
        };
        // where the codebook lives in the file is not a statistic
        sub.remove("codebook_position");
        sub.remove("codebook_tensor");
        let kind = self
            .index_type
            .strip_prefix("IVF_")
            .unwrap_or(&self.index_type);
        // an HNSW index reports its first graph's metadata, and HNSW as the kind
        let graph = self
            .graphs
            .iter()
            .flatten()
            .flatten()
            .next()
            .map(|g| g.meta.to_json());
        let kind = match graph {
            Some(serde_json::Value::Object(mut g)) => {
                g.append(&mut sub);
                sub = g;
                "HNSW"
            }
            _ => kind,
        };
        sub.insert("index_type".into(), kind.into());
        sub.insert("metric_type".into(), metric.into());
        let centroids: Vec<&[f32]> = self.centroids.chunks(self.dim.max(1)).collect();
        serde_json::json!({
            "index_type": self.index_type,
            "uuid": lancer_table::dataset::uuid_dir(&self.uuid).unwrap_or_default(),
            "uri": uri,
            "metric_type": metric,
            "num_partitions": self.partitions.len(),
            "sub_index": sub,
            "partitions": self.partitions.iter().map(|p| serde_json::json!({"size": p.1})).collect::<Vec<_>>(),
            "centroids": centroids,
            "loss": self.loss,
            "index_file_version": "V3",
        })
    }

    /// What the segment holds, as JSON for `lancer inspect --index`: type, metric,
    /// dimension, fragments, rows, partition sizes, the quantizer's parameters.
    pub fn describe(&self) -> serde_json::Value {
        let mut sizes: Vec<usize> = self.partitions.iter().map(|p| p.1).collect();
        sizes.sort_unstable();
        let quantizer = match &self.storage {
            Storage::Flat { .. } => {
                serde_json::json!({"kind": "flat", "bytes_per_vector": self.dim * 4})
            }
            Storage::Pq {
                m, nbits, residual, ..
            } => serde_json::json!({
                "kind": "pq", "sub_vectors": m, "bits": nbits, "residual": residual,
                "codebook_shape": [m, 1usize << nbits, self.dim / m],
                "bytes_per_vector": m * *nbits as usize / 8, "codes_layout": "column-major per partition"}),
            Storage::Rq(r) => serde_json::json!({
                "kind": "rabitq", "bits": r.num_bits, "rotation": "fast", "code_dim": r.code_dim,
                "bytes_per_vector": r.code_dim / 8 + 8 + if r.num_bits > 1 { r.code_dim.div_ceil(64) * 64 * (r.num_bits as usize - 1) / 8 + 8 } else { 0 }}),
            Storage::Sq { start, end, .. } => serde_json::json!({
                "kind": "sq", "bits": 8, "bounds": [start, end], "bytes_per_vector": self.dim}),
        };
        serde_json::json!({
            "name": self.name,
            "uuid": lancer_table::dataset::uuid_dir(&self.uuid).unwrap_or_default(),
            "type": self.index_type,
            "metric": self.metric.name(),
            "dim": self.dim,
            "fragments": self.fragments.iter().collect::<Vec<u32>>(),
            "rows": self.row_ids.len(),
            "partitions": self.partitions.len(),
            "centroids_shape": [self.partitions.len(), self.dim],
            "partition_rows": {
                "min": sizes.first().copied().unwrap_or(0),
                "median": sizes.get(sizes.len() / 2).copied().unwrap_or(0),
                "max": sizes.last().copied().unwrap_or(0),
                "empty": sizes.iter().filter(|&&s| s == 0).count(),
            },
            "quantizer": quantizer,
            "hnsw": self.graphs.as_ref().map(|g| crate::vector::hnsw::describe(g)),
        })
    }

    /// The probe path of `query` as JSON: partitions in search order with centroid
    /// distance and rows, and how many a search for `k` results with `nprobes`
    /// searches: exactly `nprobes` when given (as a search's `nprobes`), else the
    /// reference's rule from one partition and its early pruning (before any extra
    /// rounds for too few live rows).
    pub fn probe_path(
        &self,
        query: &[f32],
        k: usize,
        nprobes: Option<usize>,
    ) -> Result<serde_json::Value> {
        if query.len() != self.dim {
            return Err(IndexError::InvalidArgument {
                what: format!(
                    "Query vector size {} does not match index column size {} (index {})",
                    query.len(),
                    self.dim,
                    self.name
                ),
            });
        }
        let d = self.probe_distances(query);
        let cd: Vec<f32> = d.iter().map(|x| x.0).collect();
        let searched = match nprobes {
            Some(n) => n.max(1).min(d.len()),
            None => early_pruning(&cd, k).max(1).min(d.len()),
        };
        let mut cumulative = 0usize;
        let order: Vec<serde_json::Value> = d
            .iter()
            .enumerate()
            .map(|(i, &(dist, p))| {
                let rows = self.partitions[p].1;
                cumulative += rows;
                serde_json::json!({"rank": i + 1, "partition": p, "centroid_distance": dist,
                                   "rows": rows, "cumulative_rows": cumulative, "searched": i < searched})
            })
            .collect();
        let candidates: usize = d
            .iter()
            .take(searched)
            .map(|x| self.partitions[x.1].1)
            .sum();
        let mut out = serde_json::json!({"k": k, "partitions_searched": searched, "candidates_scored": candidates,
                                         "order": order});
        // an HNSW index: each searched partition's graph walk, hop by hop
        if let Some(graphs) = &self.graphs {
            let q = self.prepare(query);
            let mut table = Vec::new();
            let walks: Vec<serde_json::Value> = d
                .iter()
                .take(searched)
                .filter_map(|&(_, p)| {
                    let g = graphs.get(p)?.as_ref()?;
                    let mut dist = self.row_distance(p, &q, &mut table);
                    let mut t = g.trace(k, k + k / 2, &mut dist);
                    t["partition"] = p.into();
                    Some(t)
                })
                .collect();
            out["graph_walks"] = walks.into();
        }
        Ok(out)
    }
}
