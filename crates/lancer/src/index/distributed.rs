//! Distributed index builds (reference "Distributed indexing", lines ~7862–8438; the
//! calls are pylance 14's `IndicesBuilder.train_ivf / train_pq`,
//! `create_index_uncommitted(fragment_ids=…)`, `merge_existing_index_segments` and
//! `commit_existing_index_segments`).
//!
//! A driver trains a vector index's model once ([`train_vector_model`]: IVF centroids
//! and the quantizer's trained parts — PQ codebook, SQ bounds, RabitQ rotation) and
//! hands it to workers; each worker builds one segment over its group of fragments
//! ([`create_index_segment`]), written under `_indices/<uuid>/` and returned
//! uncommitted; the driver optionally merges segments ([`merge_index_segments`]:
//! BTREE, BITMAP, ZONEMAP and BLOOMFILTER, byte for byte the segment one build over
//! their fragments writes; INVERTED into one partition, their postings decoded and laid
//! out as one build's; vector segments of one model from their stored records, byte
//! for byte one build's)
//! and commits the list as one index ([`commit_index_segments`], one `CreateIndex`
//! through the usual OCC path). Segments sharing one model are the partitions of one
//! build split by rows: a search probes every segment with the same centroids and
//! codes, so its answers are the single build's. LABEL_LIST and NGRAM segments (the
//! reference merges neither) are committed side by side, each searched on its own, as
//! the reference keeps delta segments.

use lancer_index::vector::ivf::FixedModel;
use lancer_table::pb;

use crate::index::spec::IndexSpec;
use crate::index::vector::VectorIndexOptions;
use crate::{Dataset, Error, Result};

/// A trained vector index model: IVF centroids (`partitions × dim`) and the
/// quantizer's trained parts. Centroids alone are a valid model too: each segment then
/// trains its quantizer on its own rows (pylance's `ivf_centroids` without
/// `pq_codebook`).
pub type VectorModel = FixedModel;

/// A RabitQ model's rotation (a [`VectorModel`]'s part for IVF_RQ).
pub use lancer_index::vector::rabitq::RabitEncoder;

fn invalid(what: impl Into<String>) -> Error {
    Error::InvalidArgument { what: what.into() }
}

/// Trains the model of a vector index `opts` describes on a sample of `column`'s
/// vectors of `fragments` (all when None) — the same sample and seed a single build
/// over those fragments trains on, so segments built with it hold that build's
/// partitions and codes. With `given` centroids, only what they lack is trained (the
/// quantizer, on residuals from them: pylance's `train_pq(ivf_model)`).
pub fn train_vector_model(
    ds: &Dataset,
    column: &str,
    opts: &VectorIndexOptions,
    fragments: Option<&[u64]>,
    given: Option<&VectorModel>,
) -> Result<VectorModel> {
    crate::catalog::indexable_field(ds, column, "to index")?;
    if let Some(f) = fragments {
        check_fragments(ds, f)?;
    }
    let mut params = crate::index::vector::build_params(ds, opts);
    params.fixed = given.cloned();
    let (params, _) = crate::index::vector::column_params(ds, column, &params);
    let m = crate::index::vector::train_model(ds, column, fragments, &params)?;
    Ok(VectorModel {
        centroids: m.centroids,
        codebook: m.codebook,
        bounds: m.bounds,
        rabit: m.rabit,
    })
}

/// The fragments must be of `ds`, each once, at least one.
pub(crate) fn check_fragments(ds: &Dataset, fragments: &[u64]) -> Result<()> {
    if fragments.is_empty() {
        return Err(invalid(
            "no fragments to index: pass the ids of the fragments this segment covers",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for &f in fragments {
        if !ds.fragments().iter().any(|x| x.id == f) {
            return Err(invalid(format!(
                "fragment {f} is not in version {} of the dataset (its fragments: {})",
                ds.version(),
                fragment_list(ds)
            )));
        }
        if !seen.insert(f) {
            return Err(invalid(format!("fragment {f} is listed twice")));
        }
    }
    Ok(())
}

fn fragment_list(ds: &Dataset) -> String {
    let ids: Vec<String> = ds.fragments().iter().map(|f| f.id.to_string()).collect();
    if ids.len() > 20 {
        format!("{} … ({} in all)", ids[..20].join(", "), ids.len())
    } else {
        ids.join(", ")
    }
}

/// A segment uuid given as 16 bytes or as text (`8-4-4-4-12` hex, dashes optional).
pub fn parse_uuid(text: &str) -> Result<Vec<u8>> {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(invalid(format!(
            "index_uuid {text:?} is not a uuid (32 hex digits, dashes optional)"
        )));
    }
    Ok((0..16)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect())
}

/// Builds one segment of the index `spec` describes over `column` of `fragments`,
/// writes its files under `_indices/<uuid>/` (`uuid` or a new one) and returns its
/// manifest entry, not committed. A vector segment uses `model` (see [`VectorModel`];
/// without one it trains its own on its fragments, and is then searched with its own
/// centroids).
pub fn create_index_segment(
    ds: &Dataset,
    column: &str,
    spec: &IndexSpec,
    fragments: &[u64],
    model: Option<&VectorModel>,
    uuid: Option<Vec<u8>>,
) -> Result<pb::IndexMetadata> {
    let field_id = crate::catalog::indexable_field(ds, column, "to index")?;
    check_fragments(ds, fragments)?;
    let mut fragments = fragments.to_vec();
    fragments.sort_unstable();
    let uuid = match uuid {
        Some(u) if u.len() == 16 => u,
        Some(u) => {
            return Err(invalid(format!(
                "an index uuid is 16 bytes, not {}",
                u.len()
            )))
        }
        None => lancer_table::commit::random_uuid_bytes(),
    };
    let name_of = |name: &Option<String>| name.clone().unwrap_or_else(|| format!("{column}_idx"));
    match spec {
        IndexSpec::Vector(opts) => {
            if crate::search::multivector::column_dim(ds, column).is_some()
                && opts.metric != lancer_index::distance::Metric::Cosine
            {
                return Err(invalid(format!(
                    "{column:?} holds multivectors, which vector indexes support with the cosine distance only (as pylance): create it with metric cosine"
                )));
            }
            let mut params = crate::index::vector::build_params(ds, opts);
            params.fixed = model.cloned();
            let built = crate::index::vector::build_streaming(ds, column, Some(&fragments), &params)
                .map_err(|e| match e {
                    Error::InvalidArgument { what } if what.starts_with(crate::index::vector::NO_VECTORS) => {
                        invalid(format!(
                            "{what}; fragments {fragments:?} hold none: leave them out of the segments (searches scan them exactly)"
                        ))
                    }
                    other => other,
                })?;
            crate::index::vector::write_segment(
                ds,
                field_id,
                name_of(&opts.name),
                built,
                &fragments,
                uuid,
            )
        }
        IndexSpec::Scalar(opts) => {
            if model.is_some() {
                return Err(invalid("a vector model was given for a scalar index"));
            }
            let built = crate::index::scalar::build(ds, column, Some(&fragments), &opts.params)?;
            let segment = crate::index::scalar::SegmentFiles {
                type_url: crate::index::json::type_url(&opts.params),
                files: built.files,
                details: built.details,
                index_version: built.index_version,
            };
            crate::index::scalar::write(
                ds,
                field_id,
                name_of(&opts.name),
                segment,
                &fragments,
                uuid,
            )
        }
        IndexSpec::FullText(opts) => {
            if model.is_some() {
                return Err(invalid("a vector model was given for a full-text index"));
            }
            let params = crate::index::fts::column_params(ds, column, &opts.params)?;
            let built = crate::index::fts::build(ds, column, &fragments, params, None)?;
            let segment = crate::index::scalar::SegmentFiles {
                type_url: lancer_index::inverted::segment::INVERTED_DETAILS_URL,
                files: built.files,
                details: built.details,
                index_version: lancer_index::inverted::build::FORMAT,
            };
            crate::index::scalar::write(
                ds,
                field_id,
                name_of(&opts.name),
                segment,
                &fragments,
                uuid,
            )
        }
    }
}

/// The fragments a segment covers.
fn covered(meta: &pb::IndexMetadata) -> Result<roaring::RoaringBitmap> {
    roaring::RoaringBitmap::deserialize_from(meta.fragment_bitmap.as_slice()).map_err(|e| {
        invalid(format!(
            "index segment {:?} has an unreadable fragment bitmap ({e}): build it again",
            meta.name
        ))
    })
}

/// The segments' fragments, refusing a fragment two of them cover (its rows would be
/// answers twice).
fn disjoint(segments: &[pb::IndexMetadata]) -> Result<roaring::RoaringBitmap> {
    let mut all = roaring::RoaringBitmap::new();
    for s in segments {
        let b = covered(s)?;
        let shared = &all & &b;
        if let Some(f) = shared.iter().next() {
            return Err(invalid(format!(
                "fragment {f} is covered by two of the segments: each fragment belongs to one segment"
            )));
        }
        all |= b;
    }
    Ok(all)
}

/// The kind of a segment as its details name it.
fn type_url(meta: &pb::IndexMetadata) -> &str {
    meta.index_details
        .as_ref()
        .map_or("", |d| d.type_url.as_str())
}

/// The segments must index one field with one kind.
fn same_kind(segments: &[pb::IndexMetadata]) -> Result<()> {
    let first = segments
        .first()
        .ok_or_else(|| invalid("no index segments given"))?;
    for s in &segments[1..] {
        if s.fields != first.fields {
            return Err(invalid(format!(
                "segments index different fields ({:?} and {:?})",
                first.fields, s.fields
            )));
        }
        if type_url(s) != type_url(first) {
            return Err(invalid(format!(
                "segments are of different kinds ({} and {})",
                type_url(first),
                type_url(s)
            )));
        }
    }
    Ok(())
}

/// Merges uncommitted `segments` (of one field and kind, disjoint fragments) into one
/// segment under a new uuid covering all their fragments: BTREE / BITMAP from their
/// entries (ZONEMAP / BLOOMFILTER from their zones), the files one build over those
/// fragments writes; INVERTED into one partition; vector segments of one model from
/// their stored records (a RabitQ file without error factors: its rows encoded again,
/// one pass, no training) — the partitions and codes of one build. The merged segments' files stay until
/// `cleanup` (they are not part of any version). LABEL_LIST / NGRAM, and vector
/// segments of different models, are refused: commit them side by side.
pub fn merge_index_segments(
    ds: &Dataset,
    segments: &[pb::IndexMetadata],
) -> Result<pb::IndexMetadata> {
    same_kind(segments)?;
    let fragments: Vec<u64> = disjoint(segments)?.iter().map(u64::from).collect();
    let first = &segments[0];
    if type_url(first) == lancer_index::vector::ivf::VECTOR_DETAILS_URL {
        return merge_vector_segments(ds, segments, &fragments);
    }
    if lancer_index::inverted::segment::is_inverted(first) {
        return merge_inverted_segments(ds, segments, &fragments);
    }
    let kind = lancer_index::scalar::kind_of(ds, first).ok_or_else(|| {
        invalid(format!(
            "{} segments are not merged by Lancer: commit them side by side (each is searched on its own)",
            kind_label(first)
        ))
    })?;
    if !lancer_index::scalar::merge::mergeable(kind)
        || lancer_index::scalar::json_details(first).is_some()
    {
        return Err(invalid(format!(
            "{} segments are not merged by Lancer: commit them side by side (each is searched on its own)",
            if lancer_index::scalar::json_details(first).is_some() { "JSON path index" } else { kind.type_name() }
        )));
    }
    let (field_id, column) = crate::index::vector::segment_column(ds, first)?;
    let schema = ds.schema();
    let field = schema
        .field_with_name(&column)
        .map_err(|_| invalid(format!("no column {column:?} in the dataset")))?;
    let mut params = crate::index::scalar::params_of(ds, first, kind)?;
    params.file_version = crate::index::vector::index_file_version(ds);
    let built = lancer_index::scalar::merge::merge(ds, segments, params, field)?;
    let segment = crate::index::scalar::SegmentFiles {
        type_url: kind.type_url(),
        files: built.files,
        details: built.details,
        index_version: built.index_version,
    };
    let uuid = lancer_table::commit::random_uuid_bytes();
    crate::index::scalar::write(ds, field_id, first.name.clone(), segment, &fragments, uuid)
}

/// INVERTED segments become one segment of one partition, as pylance 14 merges them:
/// their documents, tokens and posting lists decoded and written as one build over
/// their rows writes them (`lancer_index::inverted::merge`; nothing tokenized again).
fn merge_inverted_segments(
    ds: &Dataset,
    segments: &[pb::IndexMetadata],
    fragments: &[u64],
) -> Result<pb::IndexMetadata> {
    use lancer_index::inverted::segment::InvertedSegment;
    let mut opened = Vec::with_capacity(segments.len());
    for meta in segments {
        let seg = InvertedSegment::open(ds, meta)?.ok_or_else(|| {
            invalid(format!(
                "INVERTED segment {:?} is of a format Lancer does not merge: commit it \
                     side by side",
                meta.name
            ))
        })?;
        opened.push(seg);
    }
    let first = &segments[0];
    let field_id = opened[0].field_id;
    let built = lancer_index::inverted::merge::merge(
        &opened,
        crate::index::vector::index_file_version(ds),
    )?;
    let segment = crate::index::scalar::SegmentFiles {
        type_url: lancer_index::inverted::segment::INVERTED_DETAILS_URL,
        files: built.files,
        details: built.details,
        index_version: lancer_index::inverted::build::FORMAT,
    };
    let uuid = lancer_table::commit::random_uuid_bytes();
    crate::index::scalar::write(ds, field_id, first.name.clone(), segment, fragments, uuid)
}

/// Vector segments built with one model become one segment from the records the
/// segments store (`lancer_index::vector::ivf`: FLAT / SQ / PQ / RabitQ, HNSW included;
/// no vector read or encoded again) — a RabitQ file without error factors by encoding
/// the fragments' rows again with the model in one pass (no training) — the partitions
/// and codes one build over those fragments writes. Segments of different models
/// (each trained its own) are refused: they stay side by side.
fn merge_vector_segments(
    ds: &Dataset,
    segments: &[pb::IndexMetadata],
    fragments: &[u64],
) -> Result<pb::IndexMetadata> {
    use lancer_index::vector::ivf::IvfSegment;
    let opened = segments
        .iter()
        .map(|m| IvfSegment::open(ds, m).map_err(crate::Error::from))
        .collect::<Result<Vec<_>>>()?;
    let (model, quantizer) = FixedModel::of(&opened[0]);
    let metric = opened[0].metric;
    for s in &opened[1..] {
        let (m, q) = FixedModel::of(s);
        let rabit = |e: &Option<RabitEncoder>| e.as_ref().map(|e| (e.num_bits, e.signs.clone()));
        if q != quantizer
            || s.metric != metric
            || m.centroids != model.centroids
            || m.codebook != model.codebook
            || m.bounds != model.bounds
            || rabit(&m.rabit) != rabit(&model.rabit)
        {
            return Err(invalid(format!(
                "segments {} and {} were built with different models (centroids or quantizer): only segments of one model merge; commit these side by side",
                opened[0].name, s.name
            )));
        }
    }
    let first = &segments[0];
    let (field_id, column) = crate::index::vector::segment_column(ds, first)?;
    let params = crate::index::vector::reuse_params(ds, first, &opened[0]);
    // rows taken as stored (a RabitQ file without error factors: encoded again)
    let built = if opened.iter().all(lancer_index::vector::ivf::mergeable) {
        crate::index::vector::merge_stored(ds, &column, &opened, &params)?
    } else {
        crate::index::vector::build_streaming(ds, &column, Some(fragments), &params)?
    };
    let uuid = lancer_table::commit::random_uuid_bytes();
    crate::index::vector::write_segment(ds, field_id, first.name.clone(), built, fragments, uuid)
}

fn kind_label(meta: &pb::IndexMetadata) -> String {
    let url = type_url(meta);
    if lancer_index::inverted::segment::is_inverted(meta) {
        "INVERTED".into()
    } else if url.is_empty() {
        "these".into()
    } else {
        "vector".into()
    }
}

/// Commits `segments` (built by workers, merged or not) as the index `name` on
/// `column`: one `CreateIndex` on the version `ds` was read at, rebased over
/// concurrent commits as any index build. Each segment's files must exist at their
/// recorded sizes; segments must be of one kind, cover disjoint fragments of the
/// dataset and index `column`. An index of that name is replaced with `replace`, else
/// the commit is refused.
pub fn commit_index_segments(
    ds: &Dataset,
    name: &str,
    column: &str,
    segments: Vec<pb::IndexMetadata>,
    replace: bool,
) -> Result<Dataset> {
    let field_id = crate::catalog::indexable_field(ds, column, "to index")?;
    same_kind(&segments)?;
    if segments[0].fields != [field_id] {
        return Err(invalid(format!(
            "the segments index field {:?}, not column {column:?} (field {field_id})",
            segments[0].fields
        )));
    }
    let all = disjoint(&segments)?;
    for f in &all {
        if !ds.fragments().iter().any(|x| x.id == u64::from(f)) {
            return Err(invalid(format!(
                "fragment {f} the segments cover is not in version {} of the dataset",
                ds.version()
            )));
        }
    }
    let removed = crate::index::vector::replaced_segments(ds, name, replace)?;
    let mut new = segments;
    for s in &mut new {
        crate::catalog::check_index_files(ds.store(), s)?;
        s.name = name.to_string();
    }
    Ok(ds.commit_indices(new, removed)?)
}

/// A segment's manifest entry as JSON in the members of pylance's `Index`: `uuid`
/// (dashed text), `name`, `fields`, `dataset_version`, `fragment_ids`,
/// `index_version`, `created_at` (ms), `base_id`, `files` (`path`, `size_bytes`) and
/// `index_details` (`type_url`, `value` as hex) — what crosses to the workers' driver.
pub fn segment_to_json(meta: &pb::IndexMetadata) -> Result<serde_json::Value> {
    let uuid = meta
        .uuid
        .as_ref()
        .map(|u| lancer_table::dataset::uuid_dir(&u.uuid))
        .transpose()?
        .unwrap_or_default();
    let fragments: Vec<u32> = covered(meta)?.iter().collect();
    let hex: String = meta
        .index_details
        .as_ref()
        .map(|d| d.value.iter().map(|b| format!("{b:02x}")).collect())
        .unwrap_or_default();
    Ok(serde_json::json!({
        "uuid": uuid,
        "name": meta.name,
        "fields": meta.fields,
        "dataset_version": meta.dataset_version,
        "fragment_ids": fragments,
        "index_version": meta.index_version,
        "created_at": meta.created_at,
        "base_id": meta.base_id,
        "files": meta.files.iter().map(|f| serde_json::json!({
            "path": f.path, "size_bytes": f.size_bytes
        })).collect::<Vec<_>>(),
        "index_details": meta.index_details.as_ref().map(|d| serde_json::json!({
            "type_url": d.type_url, "value": hex
        })),
    }))
}

/// The manifest entry of [`segment_to_json`]'s JSON; a member of the wrong type or a
/// malformed uuid / hex is an error naming it.
pub fn segment_from_json(v: &serde_json::Value) -> Result<pb::IndexMetadata> {
    use serde_json::Value;
    let bad = |what: &str| invalid(format!("index segment: {what}"));
    let text = |key: &str| -> Result<String> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| bad(&format!("{key} must be text")))
    };
    let opt_u64 = |key: &str| -> Result<Option<u64>> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| bad(&format!("{key} must be a non-negative integer"))),
        }
    };
    let ints = |key: &str| -> Result<Vec<i64>> {
        v.get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| bad(&format!("{key} must be a list of integers")))?
            .iter()
            .map(|x| {
                x.as_i64()
                    .ok_or_else(|| bad(&format!("{key} must be a list of integers")))
            })
            .collect()
    };
    let uuid = parse_uuid(&text("uuid")?)?;
    let fields = ints("fields")?
        .into_iter()
        .map(|f| i32::try_from(f).map_err(|_| bad("a field id is out of range")))
        .collect::<Result<Vec<i32>>>()?;
    let mut bitmap = roaring::RoaringBitmap::new();
    for f in ints("fragment_ids")? {
        bitmap.insert(u32::try_from(f).map_err(|_| bad("a fragment id is out of range"))?);
    }
    let mut fragment_bitmap = Vec::new();
    bitmap
        .serialize_into(&mut fragment_bitmap)
        .map_err(|e| bad(&e.to_string()))?;
    let files = match v.get("files") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|f| {
                Ok(pb::IndexFile {
                    path: f
                        .get("path")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("a file's path must be text"))?
                        .to_string(),
                    size_bytes: f
                        .get("size_bytes")
                        .and_then(Value::as_u64)
                        .ok_or_else(|| bad("a file's size_bytes must be an integer"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?,
        Some(_) => return Err(bad("files must be a list")),
    };
    let index_details = match v.get("index_details") {
        None | Some(Value::Null) => None,
        Some(d) => {
            let type_url = d
                .get("type_url")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("index_details.type_url must be text"))?;
            let hex = d
                .get("value")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("index_details.value must be hex text"))?;
            if hex.len() % 2 != 0 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad("index_details.value is not hex"));
            }
            let value = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
                .collect();
            Some(prost_types::Any {
                type_url: type_url.to_string(),
                value,
            })
        }
    };
    let index_version = match v.get("index_version") {
        None | Some(Value::Null) => None,
        Some(x) => Some(
            x.as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| bad("index_version must be an integer"))?,
        ),
    };
    let base_id = opt_u64("base_id")?
        .map(|b| u32::try_from(b).map_err(|_| bad("base_id is out of range")))
        .transpose()?;
    Ok(pb::IndexMetadata {
        uuid: Some(pb::Uuid { uuid }),
        fields,
        name: text("name")?,
        dataset_version: opt_u64("dataset_version")?.unwrap_or(0),
        fragment_bitmap,
        index_details,
        index_version,
        created_at: opt_u64("created_at")?,
        base_id,
        files,
    })
}
