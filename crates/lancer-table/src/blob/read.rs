//! Blob v2 payloads: a data file's per-row descriptors resolved into the bytes they
//! name (reference "Blob Columns", lines ~6700–7160; file format 2.2).
//!
//! A blob v2 column's data file stores, per row, a descriptor `struct<kind: u8,
//! position: u64, size: u64, blob_id: u32, blob_uri: utf8>` (null for a null blob), and
//! the payload one of four ways, as pylance 14 writes them:
//!
//! | kind | payload |
//! |---|---|
//! | 0 inline | bytes `position..position+size` of the data file itself |
//! | 1 packed | bytes `position..position+size` of the sidecar `<file stem>/<id>.blob` |
//! | 2 dedicated | the sidecar `<file stem>/<id>.blob`, `position` 0, `size` its length |
//! | 3 external | `blob_uri`: the range when `size` > 0, else the whole object |
//!
//! A sidecar's name is the blob id's 32 bits written least significant first as `0` /
//! `1` characters (id 1 is `1000…0.blob`), next to the data file in a directory named
//! after it. Ranges are checked against each source's size before anything is read, and
//! every source is read in one batched request.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::builder::LargeBinaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, StructArray};
use bytes::Bytes;
use lancer_format::read::RangeRead;
use lancer_io::{StorageOptions, Store};

use crate::{Result, TableError};

/// Where a blob column's payloads can live, for one data file.
pub(crate) struct BlobSources<'a> {
    /// The data file (kind 0).
    pub data: &'a Arc<dyn RangeRead>,
    /// The store holding the data file, and the file's path in it (sidecars sit in a
    /// directory named after it).
    pub store: &'a Store,
    /// The data file's path in `store`.
    pub file: &'a str,
    /// Options for stores of external URIs (kind 3).
    pub options: &'a StorageOptions,
    /// The store of a registered base path by id (kind 3 with a non-zero `blob_id`:
    /// `blob_uri` is then relative to that base).
    pub base: &'a dyn Fn(u32) -> Result<Store>,
}

/// Payload bytes one read of a blob column may gather (the descriptors can name the
/// same large range for many rows: checked before the output is allocated).
const MAX_BATCH_PAYLOAD: usize = 16 << 30;

/// A payload source: the data file, a sidecar (by blob id) or an external URI.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Source {
    Data,
    Sidecar(u32),
    External(String),
    InBase(u32, String),
}

/// A read of `range` (or of the whole source when `None`).
type Want = (usize, Option<Range<u64>>);

/// The sidecar file name of blob id `id`.
pub(crate) fn sidecar_name(id: u32) -> String {
    let bits: String = (0..32)
        .map(|b| if id >> b & 1 == 1 { '1' } else { '0' })
        .collect();
    format!("{bits}.blob")
}

/// The payloads of `desc` (the descriptors a data file stores for `column`), as a
/// `large_binary` array with the descriptors' nulls.
pub(crate) fn resolve_v2(desc: &ArrayRef, src: &BlobSources<'_>, column: &str) -> Result<ArrayRef> {
    resolve_within(desc, src, column, MAX_BATCH_PAYLOAD)
}

/// Where each row of `desc` (a data file's descriptors) keeps its payload: the source
/// and the range in it (`None`: the whole source); `None` for a null blob.
pub(crate) fn locate(desc: &ArrayRef, column: &str) -> Result<Vec<Option<Located>>> {
    let bad = |what: String| TableError::corrupt(format!("blob column {column:?}: {what}"));
    let s: &StructArray = desc.as_struct_opt().ok_or_else(|| {
        bad(format!(
            "a data file stores {} where descriptors belong",
            desc.data_type()
        ))
    })?;
    let child = |name: &str| {
        s.column_by_name(name)
            .ok_or_else(|| bad(format!("the descriptor lacks its {name:?} field")))
    };
    let kind = child("kind")?.as_primitive_opt::<UInt8Type>().cloned();
    let position = child("position")?.as_primitive_opt::<UInt64Type>().cloned();
    let size = child("size")?.as_primitive_opt::<UInt64Type>().cloned();
    let blob_id = child("blob_id")?.as_primitive_opt::<UInt32Type>().cloned();
    let uri = child("blob_uri")?.as_string_opt::<i32>().cloned();
    let (Some(kind), Some(position), Some(size), Some(blob_id), Some(uri)) =
        (kind, position, size, blob_id, uri)
    else {
        return Err(bad(format!(
            "descriptor fields of unexpected types ({})",
            s.data_type()
        )));
    };
    let mut out = Vec::with_capacity(s.len());
    for i in 0..s.len() {
        if s.is_null(i) {
            out.push(None);
            continue;
        }
        let (p, n) = (position.value(i), size.value(i));
        let end = p
            .checked_add(n)
            .ok_or_else(|| bad(format!("row {i}: position {p} + size {n} overflows")))?;
        out.push(Some(match kind.value(i) {
            0 => (Source::Data, Some(p..end)),
            1 => (Source::Sidecar(blob_id.value(i)), Some(p..end)),
            2 => (Source::Sidecar(blob_id.value(i)), Some(p..end)),
            3 if uri.is_null(i) || uri.value(i).is_empty() => {
                return Err(bad(format!("row {i}: an external blob without a URI")))
            }
            3 => {
                let u = uri.value(i).to_string();
                let source = match blob_id.value(i) {
                    0 if !u.contains("://") => {
                        return Err(bad(format!(
                            "row {i}: external blob {u:?} is neither a URI nor relative to a base"
                        )))
                    }
                    0 => Source::External(u),
                    base => Source::InBase(base, u),
                };
                // pylance: a size of 0 means the whole object
                (source, (n > 0).then_some(p..end))
            }
            k => {
                return Err(bad(format!(
                    "row {i}: blob kind {k} is not one this Lancer reads (0 inline, 1 packed, \
                     2 dedicated, 3 external)"
                )))
            }
        }));
    }
    Ok(out)
}

/// Where each row of a legacy blob column keeps its payload, from the descriptions a
/// read returns for it (`struct<position, size>`: a range of the data file); `None` for
/// a null blob (a null description, or 2.0's `(1, 0)`).
pub(crate) fn locate_legacy(desc: &ArrayRef, column: &str) -> Result<Vec<Option<Located>>> {
    let bad = |what: String| TableError::corrupt(format!("blob column {column:?}: {what}"));
    let s: &StructArray = desc
        .as_struct_opt()
        .ok_or_else(|| bad(format!("descriptions read as {}", desc.data_type())))?;
    let (Some(position), Some(size)) = (
        s.column_by_name("position")
            .and_then(|c| c.as_primitive_opt::<UInt64Type>()),
        s.column_by_name("size")
            .and_then(|c| c.as_primitive_opt::<UInt64Type>()),
    ) else {
        return Err(bad(format!(
            "descriptions of unexpected types ({})",
            s.data_type()
        )));
    };
    (0..s.len())
        .map(|i| {
            let (p, n) = (position.value(i), size.value(i));
            if s.is_null(i) || (p == 1 && n == 0) {
                return Ok(None);
            }
            let end = p
                .checked_add(n)
                .ok_or_else(|| bad(format!("row {i}: position {p} + size {n} overflows")))?;
            Ok(Some((Source::Data, Some(p..end))))
        })
        .collect()
}

/// True if blob v2 columns sit below `lf` inside structs (pylance 14 writes them
/// there: `struct<name, b: blob>`).
pub(crate) fn has_nested_blob_v2(lf: &lancer_format::schema::LanceField) -> bool {
    !lf.is_blob_v2()
        && matches!(lf.data_type, arrow_schema::DataType::Struct(_))
        && !lf.is_packed_struct()
        && lf
            .children
            .iter()
            .any(|c| c.is_blob_v2() || has_nested_blob_v2(c))
}

/// `col` (a struct column as a data file stores it, of the file's field `flf`:
/// descriptors where the blob v2 children are) with every blob v2 descendant of the
/// dataset's field `lf` (children matched by field id; the data file's schema does not
/// mark them) replaced by `blob(child field, descriptors)`; other children as they
/// are, the structs' nulls kept.
pub(crate) fn map_nested_blobs(
    lf: &lancer_format::schema::LanceField,
    flf: &lancer_format::schema::LanceField,
    col: &ArrayRef,
    blob: &mut dyn FnMut(&lancer_format::schema::LanceField, &ArrayRef) -> Result<ArrayRef>,
) -> Result<ArrayRef> {
    let Some(s) = col.as_struct_opt() else {
        return Err(TableError::corrupt(format!(
            "column {:?}: a data file stores {} where a struct belongs",
            lf.name,
            col.data_type()
        )));
    };
    if s.num_columns() != flf.children.len() {
        return Err(TableError::corrupt(format!(
            "column {:?}: a data file's struct has {} fields, its schema {}",
            lf.name,
            s.num_columns(),
            flf.children.len()
        )));
    }
    let mut fields = Vec::with_capacity(s.num_columns());
    let mut arrays = Vec::with_capacity(s.num_columns());
    for ((f, a), fc) in s.fields().iter().zip(s.columns()).zip(&flf.children) {
        let a = match lf.children.iter().find(|c| c.id == fc.id) {
            Some(c) if c.is_blob_v2() => blob(c, a)?,
            Some(c) if has_nested_blob_v2(c) => map_nested_blobs(c, fc, a, blob)?,
            _ => a.clone(),
        };
        fields.push(f.as_ref().clone().with_data_type(a.data_type().clone()));
        arrays.push(a);
    }
    Ok(Arc::new(StructArray::try_new(
        fields.into(),
        arrays,
        s.nulls().cloned(),
    )?))
}

/// `f` (the Arrow field of `lf`, a struct holding blob v2 columns) with those columns
/// as their descriptors, as a read of descriptors returns it.
pub(crate) fn described_nested(
    lf: &lancer_format::schema::LanceField,
    f: &arrow_schema::Field,
) -> arrow_schema::Field {
    let arrow_schema::DataType::Struct(fs) = f.data_type() else {
        return f.clone();
    };
    let children: Vec<arrow_schema::Field> = fs
        .iter()
        .zip(&lf.children)
        .map(|(cf, c)| {
            if c.is_blob_v2() {
                arrow_schema::Field::new(
                    cf.name(),
                    arrow_schema::DataType::Struct(
                        lancer_format::writer::blob_v2::descriptor_fields(),
                    ),
                    cf.is_nullable(),
                )
                .with_metadata(cf.metadata().clone())
            } else if has_nested_blob_v2(c) {
                described_nested(c, cf)
            } else {
                cf.as_ref().clone()
            }
        })
        .collect();
    f.clone()
        .with_data_type(arrow_schema::DataType::Struct(children.into()))
}

/// A row's payload: its source and range (`None`: the whole source).
pub(crate) type Located = (Source, Option<Range<u64>>);

/// Opens payload source `source` of a data file; a sidecar known to hold at least
/// `known_end` bytes (its descriptors say so) is opened without asking its size.
pub(crate) fn open(
    source: &Source,
    src: &BlobSources<'_>,
    column: &str,
    known_end: Option<u64>,
) -> Result<Arc<dyn RangeRead>> {
    let bad = |what: String| TableError::corrupt(format!("blob column {column:?}: {what}"));
    Ok(match source {
        Source::Data => src.data.clone(),
        Source::Sidecar(id) => {
            let dir = src.file.strip_suffix(".lance").unwrap_or(src.file);
            let path = format!("{dir}/{}", sidecar_name(*id));
            src.store
                .reader(&path, known_end.filter(|&e| e > 0))
                .map_err(|e| {
                    bad(format!(
                        "its blob file {} cannot be read ({e})",
                        src.store.display(&path)
                    ))
                })?
        }
        Source::External(uri) => external(uri, src.options, src.store.context())
            .map_err(|e| bad(format!("its external blob {uri:?} cannot be read ({e})")))?,
        Source::InBase(id, rel) => {
            if rel.split('/').any(|c| c == ".." || c.is_empty()) || rel.starts_with('/') {
                return Err(bad(format!(
                    "external blob path {rel:?} leaves its base path"
                )));
            }
            let store = (src.base)(*id)?;
            store.reader(rel, None).map_err(|e| {
                bad(format!(
                    "its blob {} cannot be read ({e})",
                    store.display(rel)
                ))
            })?
        }
    })
}

/// [`resolve_v2`] gathering at most `limit` payload bytes.
fn resolve_within(
    desc: &ArrayRef,
    src: &BlobSources<'_>,
    column: &str,
    limit: usize,
) -> Result<ArrayRef> {
    let bad = |what: String| TableError::corrupt(format!("blob column {column:?}: {what}"));
    let located = locate(desc, column)?;
    let n = located.len();
    let mut wants: BTreeMap<Source, Vec<Want>> = BTreeMap::new();
    for (i, w) in located.into_iter().enumerate() {
        if let Some((source, range)) = w {
            wants.entry(source).or_default().push((i, range));
        }
    }
    let mut payloads: Vec<Option<Bytes>> = vec![None; n];
    for (source, list) in wants {
        let reader = open(&source, src, column, None)?;
        let total = reader.size()?;
        let ranges: Vec<Range<u64>> = list
            .iter()
            .map(|(i, r)| {
                let r = r.clone().unwrap_or(0..total);
                if r.end > total {
                    return Err(bad(format!(
                        "row {i}: bytes {}..{} lie past the end of a {total}-byte source",
                        r.start, r.end
                    )));
                }
                Ok(r)
            })
            .collect::<Result<_>>()?;
        let got = reader.read_ranges(&ranges)?;
        if got.len() != ranges.len() {
            return Err(bad("a blob source returned fewer ranges than asked".into()));
        }
        for ((i, _), b) in list.into_iter().zip(got) {
            payloads[i] = Some(b);
        }
    }
    let bytes = payloads
        .iter()
        .flatten()
        .try_fold(0usize, |t, b| t.checked_add(b.len()))
        .filter(|&t| t <= limit)
        .ok_or_else(|| {
            bad(format!(
                "the {n} rows read at once hold more than {limit} bytes of payloads; \
                 read fewer rows at a time (smaller batches)"
            ))
        })?;
    let mut out = LargeBinaryBuilder::with_capacity(n, bytes);
    for p in &payloads {
        match p {
            Some(b) => out.append_value(b),
            None => out.append_null(),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// A reader of the object an external blob URI names (its directory opened as a store).
pub(crate) fn external(
    uri: &str,
    options: &StorageOptions,
    ctx: &Arc<lancer_io::Context>,
) -> Result<Arc<dyn RangeRead>> {
    let (dir, name) = match uri.rsplit_once('/') {
        Some((d, n)) if !n.is_empty() => (d, n),
        _ => {
            return Err(TableError::InvalidInput {
                what: format!("{uri:?} names no object"),
            })
        }
    };
    // `file:///x` splits into `file://` and `x`: the root directory.
    let dir = if dir.ends_with(':') || dir.ends_with("://") {
        format!("{dir}/")
    } else {
        dir.to_string()
    };
    let store = Store::open_in(&dir, options, ctx)?;
    Ok(store.reader(name, None)?)
}

#[cfg(test)]
mod tests {
    use std::ops::Range;
    use std::sync::Arc;

    use arrow_array::{
        Array, ArrayRef, LargeBinaryArray, StringArray, StructArray, UInt32Array, UInt64Array,
        UInt8Array,
    };
    use arrow_buffer::NullBuffer;
    use arrow_schema::{DataType, Field};
    use bytes::Bytes;
    use lancer_format::read::RangeRead;

    use super::BlobSources;

    struct Mem(Bytes);
    impl RangeRead for Mem {
        fn size(&self) -> lancer_format::Result<u64> {
            Ok(self.0.len() as u64)
        }
        fn read_ranges(&self, ranges: &[Range<u64>]) -> lancer_format::Result<Vec<Bytes>> {
            Ok(ranges
                .iter()
                .map(|r| self.0.slice(r.start as usize..r.end as usize))
                .collect())
        }
    }

    fn desc(rows: &[(u8, u64, u64)], valid: &[bool]) -> ArrayRef {
        let f = |n: &str, t: DataType| Arc::new(Field::new(n, t, true));
        let n = rows.len();
        Arc::new(StructArray::new(
            vec![
                f("kind", DataType::UInt8),
                f("position", DataType::UInt64),
                f("size", DataType::UInt64),
                f("blob_id", DataType::UInt32),
                f("blob_uri", DataType::Utf8),
            ]
            .into(),
            vec![
                Arc::new(UInt8Array::from_iter_values(rows.iter().map(|r| r.0))) as ArrayRef,
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.2))),
                Arc::new(UInt32Array::from(vec![0; n])),
                Arc::new(StringArray::from(vec![""; n])),
            ],
            Some(NullBuffer::from(valid.to_vec())),
        ))
    }

    fn resolve(d: &ArrayRef) -> crate::Result<ArrayRef> {
        resolve_limited(d, usize::MAX)
    }

    fn resolve_limited(d: &ArrayRef, limit: usize) -> crate::Result<ArrayRef> {
        let data: Arc<dyn RangeRead> = Arc::new(Mem(Bytes::from_static(b"0123456789")));
        let store = lancer_io::Store::open("memory://blob-tests/x", &Default::default()).unwrap();
        let src = BlobSources {
            data: &data,
            store: &store,
            file: "data/f.lance",
            options: &Default::default(),
            base: &|id| Err(crate::TableError::corrupt(format!("no base {id}"))),
        };
        super::resolve_within(d, &src, "b", limit)
    }

    #[test]
    fn inline_payloads_nulls_and_empties() {
        let d = desc(
            &[(0, 2, 3), (0, 0, 0), (9, 0, 0), (0, 9, 1)],
            &[true, true, false, true],
        );
        let got = resolve(&d).unwrap();
        let got = got.as_any().downcast_ref::<LargeBinaryArray>().unwrap();
        let want: Vec<Option<&[u8]>> = vec![Some(b"234"), Some(b""), None, Some(b"9")];
        assert_eq!(got.iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn hostile_descriptors_are_errors_naming_the_row() {
        for (rows, what) in [
            (vec![(0u8, 8u64, 5u64)], "past the end"),
            (vec![(0, u64::MAX, 2)], "overflows"),
            (vec![(7, 0, 1)], "kind 7"),
            (vec![(3, 0, 1)], "without a URI"),
            (vec![(1, 0, 1)], "cannot be read"),
        ] {
            let d = desc(&rows, &[true]);
            let e = resolve(&d).unwrap_err().to_string();
            assert!(e.contains(what) && e.contains("\"b\""), "{what}: {e}");
        }
        // many rows naming the same range: the total is bounded before allocating
        let d = desc(&[(0, 0, 10); 3], &[true; 3]);
        let e = resolve_limited(&d, 25).unwrap_err().to_string();
        assert!(e.contains("hold more than 25 bytes"), "{e}");
        assert!(resolve_limited(&d, 30).is_ok());
        let not_desc: ArrayRef = Arc::new(UInt8Array::from(vec![1u8]));
        assert!(resolve(&not_desc)
            .unwrap_err()
            .to_string()
            .contains("descriptors"));
    }

    #[test]
    fn sidecar_names_are_the_ids_bits_least_significant_first() {
        assert_eq!(super::sidecar_name(1), format!("1{}.blob", "0".repeat(31)));
        assert_eq!(super::sidecar_name(2), format!("01{}.blob", "0".repeat(30)));
        assert_eq!(super::sidecar_name(0), format!("{}.blob", "0".repeat(32)));
        assert_eq!(
            super::sidecar_name(u32::MAX),
            format!("{}.blob", "1".repeat(32))
        );
    }
}
