//! Index segments ahead of the first query: [`prewarm_index`] opens every segment of an
//! index into the session's index cache (where searches and filters look first), and
//! [`ivf_model`] reads a vector index's IVF centroids (through the same cache).

use std::sync::Arc;

use lancer_index::inverted::segment::{self as inverted, InvertedSegment};
use lancer_index::scalar::ScalarSegment;
use lancer_index::vector::ivf;
use lancer_table::pb;

use crate::session::{index_cache, root_key};
use crate::{Dataset, Error, Result};

fn uuid_of(m: &pb::IndexMetadata) -> Vec<u8> {
    m.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default()
}

/// Opens every segment of the index `name` into the session's index cache (those
/// there already stay): the next searches and filters using it read no index file.
/// Returns the segments now cached. Segments covering no fragment have nothing to
/// load; a kind this build cannot read is an error.
pub fn prewarm_index(ds: &Dataset, name: &str) -> Result<usize> {
    let (cache, root) = (index_cache(ds), root_key(ds));
    let mut cached = 0;
    for m in crate::index::vector::index_segments(ds, name)? {
        let uuid = uuid_of(&m);
        if lancer_index::scalar::kind_of(ds, &m).is_some() {
            if cache.get::<ScalarSegment>(&root, &uuid).is_none() {
                match ScalarSegment::open(ds, &m)? {
                    Some(s) => cache.insert(&root, &uuid, Arc::new(s)),
                    None => continue,
                }
            }
        } else if inverted::is_inverted(&m) {
            if cache.get::<InvertedSegment>(&root, &uuid).is_none() {
                match InvertedSegment::open(ds, &m)? {
                    Some(s) => cache.insert(&root, &uuid, Arc::new(s)),
                    None => {
                        return Err(Error::InvalidArgument {
                            what: format!(
                                "index {name:?} is an INVERTED index of a newer format than \
                                 this build reads: nothing to prewarm"
                            ),
                        })
                    }
                }
            }
        } else if ivf::is_vector_index(&m) {
            if ivf::covers_nothing(&m) {
                continue;
            }
            crate::search::ann::cached_ivf_segment(ds, &m)?;
        } else {
            return Err(Error::InvalidArgument {
                what: format!("index {name:?} is of a kind this build cannot load"),
            });
        }
        cached += 1;
    }
    Ok(cached)
}

/// A vector index's IVF model: the centroids (`partitions × dim`, row-major), the
/// dimension and the metric name.
#[derive(Clone, Debug, PartialEq)]
pub struct IvfModel {
    /// Centroids, one `dim`-long vector per partition.
    pub centroids: Vec<f32>,
    /// Vector dimension.
    pub dim: usize,
    /// `l2`, `cosine` or `dot`.
    pub metric: &'static str,
}

/// The IVF model of the vector index `name` (its first segment that covers rows: the
/// segments of an index share their centroids unless retrained), or None when no
/// segment covers rows (built over no vectors). An index of another kind is an error
/// naming its kind.
pub fn ivf_model(ds: &Dataset, name: &str) -> Result<Option<IvfModel>> {
    let metas = crate::index::vector::index_segments(ds, name)?;
    for m in &metas {
        if let Some(kind) = lancer_index::scalar::kind_of(ds, m) {
            return Err(Error::InvalidArgument {
                what: format!(
                    "index {name:?} is a {} index, not an IVF vector index: it has no centroids",
                    kind.type_name()
                ),
            });
        }
        if inverted::is_inverted(m) || !ivf::is_vector_index(m) {
            return Err(Error::InvalidArgument {
                what: format!("index {name:?} is not an IVF vector index: it has no centroids"),
            });
        }
    }
    let Some(m) = metas.iter().find(|m| !ivf::covers_nothing(m)) else {
        return Ok(None);
    };
    let seg = crate::search::ann::cached_ivf_segment(ds, m)?;
    Ok(Some(IvfModel {
        centroids: seg.centroids.clone(),
        dim: seg.dim,
        metric: seg.metric.name(),
    }))
}
