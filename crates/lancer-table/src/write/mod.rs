//! Writing datasets: create / overwrite, append, delete and restore, each one commit.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, BooleanArray, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancer_format::container::FileVersion;
use lancer_format::writer::{schema as wschema, WriteOptions as FileOptions};
use lancer_io::DataWriter;

use crate::commit::{commit, random_hex, Naming};
use crate::dataset::Dataset;
use crate::pb;
use crate::pb::transaction::Operation;
use crate::{Result, TableError};

mod bases;
mod input;

pub(crate) use bases::{apply_update, data_file_path, relative_to, targets, Target};
pub use bases::{as_given, assign, BaseSpec};
pub use input::{conform_batch, normalize_batch, normalize_schema, normalize_type};

/// How to write.
#[derive(Debug, Clone)]
pub struct WriteParams {
    /// Data storage version of new data files (2.1 or 2.2).
    pub storage: FileVersion,
    /// Rows per data file at most.
    pub max_rows_per_file: usize,
    /// Bytes per data file (about), checked as pylance checks its `max_bytes_per_file`
    /// (90 GiB by default): after each input batch, against what pylance's writer would
    /// have written by then (each column's rows in 8 MiB pieces). A batch is never cut
    /// for bytes (only by `max_rows_per_file`), and small writes stay one file.
    pub max_bytes_per_file: u64,
    /// Manifest naming for new datasets.
    pub naming: Naming,
    /// A new dataset's rows get stable row ids (pylance's `enable_stable_row_ids`):
    /// ids that stay with a row through updates and compaction. Only when the write
    /// creates the dataset; an existing dataset keeps its own setting.
    pub enable_stable_row_ids: bool,
    /// Properties recorded in the commit's transaction (pylance's
    /// `transaction_properties`; `commit_message` goes under
    /// [`crate::commit::COMMIT_MESSAGE_KEY`]).
    pub transaction_properties: std::collections::HashMap<String, String>,
    /// Automatic cleanup for a new dataset (pylance's `auto_cleanup_options`): written
    /// into its config; an existing dataset keeps its own (see [`crate::commit`]).
    pub auto_cleanup: Option<crate::commit::AutoCleanup>,
    /// Skip the automatic cleanup the dataset's config asks for after this write's
    /// commit (pylance's `skip_auto_cleanup`).
    pub skip_auto_cleanup: bool,
    /// Blob v2 columns: packed sidecar size, external URIs outside registered bases.
    pub blobs: crate::blob::BlobWriteOptions,
    /// Base paths a new dataset registers (pylance's `initial_bases`; ids from 1).
    pub initial_bases: Vec<crate::write::BaseSpec>,
    /// Where this write's new data files go, round-robin, one file each in turn
    /// (pylance's `target_bases`): registered bases by name or path — a new dataset's
    /// `initial_bases` — and the dataset's own location for its primary storage. Empty:
    /// the dataset's location.
    pub target_bases: Vec<String>,
    /// Every registered base in turn (pylance's `target_all_bases`): `Some(true)` with
    /// the dataset's own location first, `Some(false)` without it. Not with
    /// `target_bases`.
    pub target_all_bases: Option<bool>,
    /// The options the dataset's store was opened with, for the stores of the bases
    /// new data files go to (None: an existing dataset's own, else the environment's).
    pub storage_options: Option<lancer_io::StorageOptions>,
    /// Told as each new fragment's data file is begun and finished (pylance's
    /// `write_dataset(progress=)`); its error fails the write.
    pub on_fragment: Option<FragmentObserver>,
}

/// What a [`FragmentObserver`] is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentEvent {
    /// A new fragment's data file is about to be written (the fragment has no files
    /// and no id yet).
    Begin,
    /// The fragment's data file is written (its files and rows; its id is given at
    /// the commit).
    Complete,
}

/// A function told of each fragment a write begins and completes.
#[derive(Clone)]
#[allow(clippy::type_complexity)]
pub struct FragmentObserver(
    pub  std::sync::Arc<
        dyn Fn(FragmentEvent, &pb::DataFragment) -> std::result::Result<(), String> + Send + Sync,
    >,
);

impl std::fmt::Debug for FragmentObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FragmentObserver")
    }
}

impl FragmentObserver {
    fn tell(&self, event: FragmentEvent, frag: &pb::DataFragment) -> Result<()> {
        (self.0)(event, frag)
            .map_err(|e| TableError::invalid(format!("the write's progress callback failed: {e}")))
    }
}

impl Default for WriteParams {
    fn default() -> Self {
        Self {
            storage: FileVersion::V2_1,
            max_rows_per_file: 1024 * 1024,
            max_bytes_per_file: DEFAULT_MAX_BYTES_PER_FILE,
            naming: Naming::V2,
            enable_stable_row_ids: false,
            transaction_properties: Default::default(),
            auto_cleanup: None,
            skip_auto_cleanup: false,
            blobs: Default::default(),
            initial_bases: Vec::new(),
            target_bases: Vec::new(),
            target_all_bases: None,
            storage_options: None,
            on_fragment: None,
        }
    }
}

/// pylance's default cap on a data file's size: 90 GiB.
pub const DEFAULT_MAX_BYTES_PER_FILE: u64 = 90 * 1024 * 1024 * 1024;

/// Leaf field ids in column order (what a data file's `fields` lists).
/// The field ids a data file of format `storage` records for field `f`, one per column
/// of the file, in pre-order: 2.0 files give every struct and list a column of its own
/// (a packed struct is one column); 2.1+ files have columns for the leaves only.
pub(crate) fn column_ids(
    f: &lancer_format::schema::LanceField,
    storage: FileVersion,
    out: &mut Vec<i32>,
) {
    if storage != FileVersion::V2_0 {
        return leaf_ids(f, out);
    }
    out.push(f.id);
    match &f.data_type {
        DataType::Struct(_) if f.is_packed_struct() => {}
        DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => {
            f.children.iter().for_each(|c| column_ids(c, storage, out))
        }
        _ => {}
    }
}

pub(crate) fn leaf_ids(f: &lancer_format::schema::LanceField, out: &mut Vec<i32>) {
    match &f.data_type {
        // a struct without fields has a placeholder column of its own
        DataType::Struct(fs) if fs.is_empty() => out.push(f.id),
        DataType::Struct(_) if !f.is_packed_struct() => {
            f.children.iter().for_each(|c| leaf_ids(c, out))
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => {
            f.children.iter().for_each(|c| leaf_ids(c, out))
        }
        // a fixed-size list of structs: its struct's leaves (2.2)
        DataType::FixedSizeList(item, _) if matches!(item.data_type(), DataType::Struct(_)) => {
            f.children.iter().for_each(|c| leaf_ids(c, out))
        }
        _ => out.push(f.id),
    }
}

/// Batches handed from the input to the writing thread at most (read ahead).
const READ_AHEAD_BATCHES: usize = 4;

/// Writes `batches` as new fragments (data files under `data/`), `max_rows_per_file`
/// rows each. Fragment ids are assigned at commit.
///
/// The input is read on the calling thread while another thread writes: decoding the
/// input (Parquet, CSV, …) overlaps with encoding, and at most
/// [`READ_AHEAD_BATCHES`] batches wait between the two. The input need not be `Send`.
pub(crate) fn write_fragments(
    root: &lancer_io::Store,
    schema: &SchemaRef,
    batches: impl IntoIterator<Item = Result<RecordBatch>>,
    params: &WriteParams,
    field_ids: Option<Vec<i32>>,
    targets: &[crate::write::Target],
) -> Result<Vec<pb::DataFragment>> {
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<RecordBatch>>(READ_AHEAD_BATCHES);
        let writer =
            scope.spawn(move || write_fragments_from(root, schema, rx, params, field_ids, targets));
        for batch in batches {
            let failed = batch.is_err();
            // A closed channel: the writer stopped (its error is reported below).
            if tx.send(batch).is_err() || failed {
                break;
            }
        }
        drop(tx);
        writer
            .join()
            .map_err(|_| TableError::corrupt("the dataset writing thread panicked"))?
    })
}

fn write_fragments_from(
    root: &lancer_io::Store,
    schema: &SchemaRef,
    batches: std::sync::mpsc::Receiver<Result<RecordBatch>>,
    params: &WriteParams,
    field_ids: Option<Vec<i32>>,
    targets: &[crate::write::Target],
) -> Result<Vec<pb::DataFragment>> {
    // Blob v2 columns (2.2+): payloads placed by size, the files written with the
    // columns' descriptors (crate::blob).
    let blobs = crate::blob::BlobPlan::new(schema, params.storage, &params.blobs)?;
    let file_schema = blobs
        .as_ref()
        .map_or_else(|| schema.clone(), |b| b.file_schema.clone());
    // The files carry the dataset's field ids (an append to a dataset whose columns
    // were added, dropped or reordered must not renumber them); a blob v2 column has
    // one id in its files (its logical children have none there).
    let field_ids = match (field_ids, &blobs) {
        (None, Some(_)) => {
            let manifest = crate::blob::manifest_schema(schema, params.storage)?;
            let pbs = wschema::pb_schema(&manifest)?;
            let lance = lancer_format::schema::LanceSchema::from_pb(&pbs)?;
            let mut ids = Vec::new();
            lance.fields.iter().for_each(|f| preorder_ids(f, &mut ids));
            Some(ids)
        }
        (ids, _) => ids,
    };
    let pbs = match &field_ids {
        Some(ids) => wschema::pb_schema_with_ids(&file_schema, ids)?,
        None => wschema::pb_schema(&file_schema)?,
    };
    let fields = lancer_format::schema::LanceSchema::from_pb(&pbs)?.fields;
    let mut ids = Vec::new();
    for f in &fields {
        column_ids(f, params.storage, &mut ids);
    }
    let mut frags = Vec::new();
    type Open<'s> = (
        DataWriter,
        String,
        u64,
        Option<crate::blob::Sidecars<'s>>,
        Option<u32>,
    );
    let mut writer: Option<Open<'_>> = None;
    let finish = |(w, name, rows, sidecars, base_id): Open<'_>,
                  frags: &mut Vec<pb::DataFragment>|
     -> Result<()> {
        if let Some(s) = sidecars {
            s.finish()?;
        }
        let size = w.finish()?;
        let (major, minor) = params.storage.numbers();
        frags.push(pb::DataFragment {
            id: 0,
            files: vec![pb::DataFile {
                path: name,
                fields: ids.clone(),
                column_indices: (0..ids.len() as i32).collect(),
                file_major_version: u32::from(major),
                file_minor_version: u32::from(minor),
                file_size_bytes: size,
                base_id,
            }],
            deletion_file: None,
            physical_rows: rows,
            ..Default::default()
        });
        if let (Some(o), Some(f)) = (&params.on_fragment, frags.last()) {
            o.tell(FragmentEvent::Complete, f)?;
        }
        Ok(())
    };
    for batch in batches {
        let batch = batch?;
        let differs = batch.schema().fields().len() != schema.fields().len()
            || batch
                .schema()
                .fields()
                .iter()
                .zip(schema.fields())
                .enumerate()
                .any(|(i, (a, b))| {
                    a != b
                        && !(blobs.as_ref().is_some_and(|p| p.is_blob_column(i))
                            && a.name() == b.name())
                });
        if differs {
            let show = |s: &arrow_schema::Schema| {
                s.fields()
                    .iter()
                    .map(|f| format!("{}: {}", f.name(), f.data_type()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(TableError::invalid(format!(
                "a batch of the data has columns ({}) other than the data's schema ({}): \
                 every batch of one write must have the same columns and types",
                show(&batch.schema()),
                show(schema)
            )));
        }
        let mut start = 0;
        while start < batch.num_rows() {
            if writer.is_none() {
                let stem = random_hex(40);
                let name = format!("{stem}.lance");
                let opts = FileOptions {
                    version: params.storage,
                    field_ids: field_ids.clone(),
                    ..Default::default()
                };
                // the next target in turn (none: the dataset's own location)
                let (store, path, base_id) = match targets.get(frags.len() % targets.len().max(1)) {
                    None => (root, format!("data/{name}"), None),
                    Some(t) => (&t.store, t.file_path(&name), t.base_id),
                };
                // blob sidecars beside their data file, in its base too (as pylance 14)
                let sidecars = blobs
                    .as_ref()
                    .map(|_| crate::blob::Sidecars::new(store, &path));
                if let Some(o) = &params.on_fragment {
                    o.tell(FragmentEvent::Begin, &pb::DataFragment::default())?;
                }
                writer = Some((
                    DataWriter::create(store, &path, file_schema.clone(), opts)?,
                    name,
                    0,
                    sidecars,
                    base_id,
                ));
            }
            let Some((w, _, rows, sidecars, _)) = writer.as_mut() else {
                break;
            };
            let room = params.max_rows_per_file.max(1) - *rows as usize;
            // the byte cap is checked as the reference checks it: after each input
            // batch, never cutting one (rows are cut only by max_rows_per_file)
            let max_bytes = params.max_bytes_per_file.max(1);
            let take = room.min(batch.num_rows() - start);
            let part = batch.slice(start, take);
            match (&blobs, sidecars.as_mut()) {
                (Some(plan), Some(sc)) => w.write_batch(&plan.place(&part, sc)?)?,
                _ => w.write_batch(&part)?,
            }
            *rows += take as u64;
            start += take;
            let whole = start == batch.num_rows();
            if *rows as usize >= params.max_rows_per_file
                || (whole && w.reference_written_bytes() >= max_bytes)
            {
                if let Some(open) = writer.take() {
                    finish(open, &mut frags)?;
                }
            }
        }
    }
    if let Some(open) = writer.take() {
        if open.2 > 0 {
            finish(open, &mut frags)?;
        }
    }
    crate::commit::crash_point("after-data");
    Ok(frags)
}

/// Writes `batches` as the data files of fragments of a new dataset (or of one that
/// replaces a dataset) with `schema`, and commits nothing: the first phase of a
/// two-phase (distributed) write (spec: "Distributed Write"). The fragments carry id 0
/// (ids are assigned when they are committed) and field ids numbered from 0 in
/// pre-order, as an `Overwrite` of `schema` assigns them.
pub fn write_uncommitted(
    store: &lancer_io::Store,
    schema: &SchemaRef,
    batches: impl IntoIterator<Item = Result<RecordBatch>>,
    params: &WriteParams,
) -> Result<Vec<pb::DataFragment>> {
    let schema = crate::write::normalize_schema(schema);
    let batches = batches.into_iter().map(|b| {
        b.and_then(crate::write::normalize_batch)
            .and_then(|b| crate::write::conform_batch(&b, &schema))
    });
    // the bases of the dataset these fragments will replace, if there is one (a new
    // dataset has none yet: only its own location can be named)
    let targets = if params.target_bases.is_empty() && params.target_all_bases.is_none() {
        Vec::new()
    } else {
        let options = params.storage_options.clone().unwrap_or_default();
        let existing = Dataset::open_with(store.clone(), options.clone(), None).ok();
        let bases = existing
            .map(|d| d.base_paths().to_vec())
            .unwrap_or_default();
        crate::write::targets(store, &bases, params, &options)?
    };
    write_fragments(store, &schema, batches, params, None, &targets)
}

impl Dataset {
    /// Creates (or overwrites) the dataset at `root` with `batches`.
    pub fn write(
        root: impl AsRef<Path>,
        schema: SchemaRef,
        batches: &[RecordBatch],
        params: &WriteParams,
    ) -> Result<Dataset> {
        Self::write_stream(root, schema, batches.iter().cloned().map(Ok), params)
    }

    /// Creates (or overwrites) the dataset at `root` with batches as they come: memory
    /// holds one batch and the open file's pages, whatever the input's size. An error
    /// from the input stops the write before anything is committed.
    pub fn write_stream(
        root: impl AsRef<Path>,
        schema: SchemaRef,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
        params: &WriteParams,
    ) -> Result<Dataset> {
        let store = crate::dataset::open_store(root.as_ref(), &Default::default())?;
        Self::write_stream_in(store, schema, batches, params)
    }

    /// [`Dataset::write_stream`] into `store`.
    pub fn write_stream_in(
        store: lancer_io::Store,
        schema: SchemaRef,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
        params: &WriteParams,
    ) -> Result<Dataset> {
        let root = &store;
        // view types (string_view, ...) are stored as their plain types
        let schema = crate::write::normalize_schema(&schema);
        let batches = batches.into_iter().map(|b| {
            b.and_then(crate::write::normalize_batch)
                .and_then(|b| crate::write::conform_batch(&b, &schema))
        });
        let existing = Dataset::open_in(store.clone(), None).ok();
        // registered bases: the dataset's, or those this write registers as it creates it
        let initial_bases = match &existing {
            Some(_) if !params.initial_bases.is_empty() => {
                return Err(crate::TableError::invalid(
                    "initial_bases registers the base paths of a new dataset; this one exists: \
                     register more with add_bases",
                ))
            }
            Some(_) => Vec::new(),
            None => crate::write::assign(&[], &params.initial_bases)?,
        };
        let mut params = params.clone();
        params.blobs.bases = match &existing {
            Some(d) => d.blob_bases(),
            None => initial_bases
                .iter()
                .map(|b| (b.id, b.path.clone()))
                .collect(),
        };
        let params = &params;
        let naming = if existing.is_some() {
            Naming::detect(root)
        } else {
            params.naming
        };
        let manifest_schema = crate::blob::manifest_schema(&schema, params.storage)?;
        let bases_now = match &existing {
            Some(d) => d.base_paths().to_vec(),
            None => initial_bases.clone(),
        };
        let options = params
            .storage_options
            .clone()
            .or_else(|| existing.as_ref().map(|d| d.storage_options().clone()))
            .unwrap_or_default();
        let targets = crate::write::targets(root, &bases_now, params, &options)?;
        let frags = write_fragments(root, &schema, batches, params, None, &targets)?;
        let pbs = wschema::pb_schema(&manifest_schema)?;
        let op = Operation::Overwrite(pb::transaction::Overwrite {
            fragments: frags,
            schema: pbs.fields,
            schema_metadata: pbs.metadata.into_iter().collect(),
            config_upsert_values: match (&existing, &params.auto_cleanup) {
                (None, Some(a)) => a.config_entries().into_iter().collect(),
                _ => Default::default(),
            },
            initial_bases,
        });
        let extras = crate::commit::CommitExtras {
            new_flags: if existing.is_none() && params.enable_stable_row_ids {
                crate::commit::FLAG_STABLE_ROW_IDS
            } else {
                0
            },
            properties: params.transaction_properties.clone(),
            skip_auto_cleanup: params.skip_auto_cleanup,
            uuid: None,
        };
        let m = crate::commit::commit_with(
            root,
            existing.as_ref().map(|d| d.version()),
            op,
            &params.storage.to_string(),
            naming,
            &extras,
        )?
        .manifest;
        Dataset::open_in(store, Some(m.version()))
    }

    /// Appends `batches`, made to fit the dataset's schema as the reference does
    /// ([`crate::write::conform_batch`]).
    pub fn append(&self, batches: &[RecordBatch], params: &WriteParams) -> Result<Dataset> {
        self.append_stream(batches.iter().cloned().map(Ok), params)
    }

    /// Appends batches as they come (fitted to the dataset's schema as by
    /// [`Dataset::append`]); see
    /// [`Dataset::write_stream`].
    pub fn append_stream(
        &self,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
        params: &WriteParams,
    ) -> Result<Dataset> {
        self.check_writable("append to")?;
        let schema = self.schema();
        let storage = self.storage_version();
        let mut params = WriteParams {
            storage,
            ..params.clone()
        };
        params.blobs.bases = self.blob_bases();
        let ids = preorder_schema_ids(self);
        // columns by name, missing nullable ones as nulls, view types and list item
        // names as the dataset's (the reference's rules for an append)
        let batches = batches
            .into_iter()
            .map(|b| b.and_then(|b| crate::write::conform_batch(&b, &schema)));
        let targets = self.write_targets(&params)?;
        let frags = write_fragments(self.store(), &schema, batches, &params, Some(ids), &targets)?;
        let op = Operation::Append(pb::transaction::Append { fragments: frags });
        let extras = crate::commit::CommitExtras {
            new_flags: 0,
            properties: params.transaction_properties.clone(),
            skip_auto_cleanup: params.skip_auto_cleanup,
            uuid: None,
        };
        let c = crate::commit::commit_on_base_with(
            self.store(),
            self.commit_base(),
            op,
            &storage.to_string(),
            self.naming(),
            &extras,
        )?;
        self.committed(&c.path, &c.bytes)
    }

    /// Writes `batches` as the data files of new fragments fitted to this dataset's
    /// schema and storage version (as [`Dataset::append`] would) and commits nothing:
    /// the first phase of a two-phase append. Ids are assigned at commit.
    pub fn write_uncommitted(
        &self,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
        params: &WriteParams,
    ) -> Result<Vec<pb::DataFragment>> {
        self.check_writable("append to")?;
        let schema = self.schema();
        let mut params = WriteParams {
            storage: self.storage_version(),
            ..params.clone()
        };
        params.blobs.bases = self.blob_bases();
        let batches = batches
            .into_iter()
            .map(|b| b.and_then(|b| crate::write::conform_batch(&b, &schema)));
        let ids = preorder_schema_ids(self);
        let targets = self.write_targets(&params)?;
        write_fragments(self.store(), &schema, batches, &params, Some(ids), &targets)
    }

    /// Whether Lancer can write data files into this dataset (not legacy);
    /// `what` names the operation for the error ("append to", "update", ...).
    pub fn check_writable(&self, what: &str) -> Result<()> {
        if self.is_legacy_storage() {
            return Err(lancer_format::FormatError::unsupported(
                format!("to {what} a legacy (0.1) dataset"),
                "Lancer reads legacy datasets but writes only 2.0 / 2.1 / 2.2 files; do it with \
                 pylance, or copy the dataset into a new 2.x one (export it and import it into a new dataset)",
            )
            .into());
        }
        Ok(())
    }

    /// Commits index segments whose files are written (`commit::write_index_files`):
    /// `new` added, `removed` (e.g. the segments of a replaced index) dropped. The data
    /// is unchanged; a concurrent append or delete rebases over it (and it over them).
    pub fn commit_indices(
        &self,
        new: Vec<pb::IndexMetadata>,
        removed: Vec<pb::IndexMetadata>,
    ) -> Result<Dataset> {
        self.commit_op(Operation::CreateIndex(pb::transaction::CreateIndex {
            new_indices: new,
            removed_indices: removed,
        }))
    }

    /// Commits `op` as read at this version (rebased over compatible concurrent commits)
    /// with the manifest's storage label, and opens the new version.
    pub(crate) fn commit_op(&self, op: Operation) -> Result<Dataset> {
        let c = crate::commit::commit_on_base(
            self.store(),
            self.commit_base(),
            op,
            &self.storage_label(),
            self.naming(),
        )?;
        self.committed(&c.path, &c.bytes)
    }

    /// The manifest's data storage version as written (kept as is by commits that add no
    /// data files, so a legacy "0.1" dataset stays legacy).
    pub(crate) fn storage_label(&self) -> String {
        match self.manifest().pb.data_format.as_ref() {
            Some(f) if !f.version.is_empty() => f.version.clone(),
            _ => self.storage_version().to_string(),
        }
    }

    /// True when the dataset's rows carry stable row ids (an index then records ids,
    /// not addresses).
    pub fn uses_stable_row_ids(&self) -> bool {
        self.manifest().pb.reader_feature_flags & crate::commit::FLAG_STABLE_ROW_IDS != 0
    }

    /// True for a legacy dataset (storage "0.1" / "legacy", files of format 0.1/0.2).
    pub fn is_legacy_storage(&self) -> bool {
        self.manifest()
            .pb
            .data_format
            .as_ref()
            .is_some_and(|f| matches!(f.version.as_str(), "0.1" | "legacy"))
    }

    /// The data storage version new files of this dataset use.
    pub fn storage_version(&self) -> FileVersion {
        self.manifest()
            .pb
            .data_format
            .as_ref()
            .and_then(|f| FileVersion::parse(&f.version).ok())
            .unwrap_or(FileVersion::V2_1)
    }

    /// Deletes the rows for which `predicate` (evaluated per fragment batch) is true,
    /// writing deletion files; `description` is recorded as the transaction predicate.
    pub fn delete_where(
        &self,
        description: &str,
        predicate: impl Fn(&RecordBatch) -> Result<BooleanArray>,
    ) -> Result<Dataset> {
        self.delete_rows(description, None, |_, batch| predicate(batch))
    }

    /// As [`Dataset::delete_where`], the predicate seeing the fragment and only
    /// `columns` (all when `None`) of every physical row — deleted rows included, so its mask lines up with
    /// physical row numbers. The predicate's own error type comes back unchanged.
    pub fn delete_rows<E: From<TableError>>(
        &self,
        description: &str,
        columns: Option<&[&str]>,
        predicate: impl Fn(&pb::DataFragment, &RecordBatch) -> Result<BooleanArray, E>,
    ) -> Result<Dataset, E> {
        let mut masks = Vec::with_capacity(self.fragments().len());
        for frag in self.fragments() {
            let all = 0..frag.physical_rows;
            let batch = self.read_runs(frag, columns, std::slice::from_ref(&all))?;
            let mask = predicate(frag, &batch)?;
            if mask.len() != batch.num_rows() {
                return Err(TableError::corrupt(
                    "delete predicate returned the wrong number of rows",
                )
                .into());
            }
            masks.push(mask);
        }
        Ok(self.commit_deletions(description, &masks)?)
    }

    /// Deletes rows of fragment `fragment_id` without committing (pylance's
    /// `LanceFragment.delete` / `delete_rows`, the worker's half of a distributed
    /// delete): `offsets` (physical row offsets, added to those already deleted) are
    /// written as the fragment's new deletion file. Returns the fragment with it, the
    /// fragment unchanged when nothing new is deleted, or None when no row is left
    /// (then name it in a Delete's deleted fragment ids).
    pub fn delete_offsets_uncommitted(
        &self,
        fragment_id: u64,
        offsets: impl IntoIterator<Item = u64>,
    ) -> Result<Option<pb::DataFragment>> {
        let frag = self
            .fragments()
            .iter()
            .find(|f| f.id == fragment_id)
            .ok_or_else(|| TableError::NotFound {
                what: format!("fragment {fragment_id} in version {}", self.version()),
            })?;
        let existing = self.deletions(frag)?;
        let mut del = existing.clone();
        for o in offsets {
            let o = u32::try_from(o)
                .ok()
                .filter(|&o| u64::from(o) < frag.physical_rows)
                .ok_or_else(|| {
                    TableError::invalid(format!(
                        "row offset {o} is outside fragment {fragment_id} of {} rows",
                        frag.physical_rows
                    ))
                })?;
            del.insert(o);
        }
        if del.len() == existing.len() {
            return Ok(Some(frag.clone()));
        }
        let (mut updated, mut removed) = (Vec::new(), Vec::new());
        self.record_deletions(frag, &del, &mut updated, &mut removed)?;
        Ok(updated.pop())
    }

    /// Writes deletion files marking the rows `masks` (one per fragment, in order) set,
    /// and commits them as one Delete transaction.
    fn commit_deletions(&self, description: &str, masks: &[BooleanArray]) -> Result<Dataset> {
        let mut updated = Vec::new();
        let mut removed = Vec::new();
        let version = self.version();
        for (frag, mask) in self.fragments().iter().zip(masks) {
            let existing = self.deletions(frag)?;
            let mut del = existing.clone();
            for i in 0..mask.len() {
                if mask.is_valid(i) && mask.value(i) {
                    del.insert(i as u32);
                }
            }
            if del.len() == existing.len() {
                continue;
            }
            self.record_deletions(frag, &del, &mut updated, &mut removed)?;
        }
        if updated.is_empty() && removed.is_empty() {
            return self.at_version(version);
        }
        let op = Operation::Delete(pb::transaction::Delete {
            updated_fragments: updated,
            deleted_fragment_ids: removed,
            predicate: description.to_string(),
        });
        self.commit_op(op)
    }

    /// Records `del` as all of `frag`'s deleted rows: the fragment's id in `removed` when
    /// every row is deleted, else the fragment with a new deletion file in `updated`.
    pub(crate) fn record_deletions(
        &self,
        frag: &pb::DataFragment,
        del: &roaring::RoaringBitmap,
        updated: &mut Vec<pb::DataFragment>,
        removed: &mut Vec<u64>,
    ) -> Result<()> {
        if del.len() == frag.physical_rows {
            removed.push(frag.id);
            return Ok(());
        }
        let mut nf = frag.clone();
        nf.deletion_file = Some(self.write_deletion_file(frag.id, del)?);
        updated.push(nf);
        Ok(())
    }

    /// Writes a deletion file (an Arrow IPC file of the deleted offsets) for fragment
    /// `frag_id` deleting the rows of `del`, as of this version.
    pub(crate) fn write_deletion_file(
        &self,
        frag_id: u64,
        del: &roaring::RoaringBitmap,
    ) -> Result<pb::DeletionFile> {
        let id = u64::from_str_radix(&random_hex(15), 16).unwrap_or(1);
        let d = pb::DeletionFile {
            file_type: pb::deletion_file::DeletionFileType::ArrowArray as i32,
            read_version: self.version(),
            id,
            num_deleted_rows: del.len(),
            base_id: None,
        };
        let path = crate::dataset::deletion_path(frag_id, &d);
        let schema = Arc::new(Schema::new(vec![Field::new(
            "row_id",
            DataType::UInt32,
            false,
        )]));
        let col = UInt32Array::from_iter_values(del.iter());
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(col)])?;
        let mut w = arrow_ipc::writer::FileWriter::try_new(Vec::new(), &schema)?;
        w.write(&b)?;
        w.finish()?;
        self.store().put(&path, w.into_inner()?.into())?;
        Ok(d)
    }

    /// Makes `version` the latest again: a `Restore` commit whose manifest holds that
    /// version's schema, fragments and indexes (fragment ids keep growing from the
    /// latest version's), stamped now by this writer.
    pub fn restore(&self, version: u64) -> Result<Dataset> {
        // it must exist (and read) before anything is committed
        self.at_version(version)?;
        let latest = crate::versions::list_versions(self.store())?
            .pop()
            .map_or(self.version(), |v| v.version);
        let m = commit(
            self.store(),
            Some(latest),
            Operation::Restore(pb::transaction::Restore { version }),
            &self.storage_label(),
            self.naming(),
        )?;
        self.at_version(m.version())
    }
}

/// The dataset's field ids in pre-order (what its data files are written with).
pub(crate) fn preorder_schema_ids(ds: &Dataset) -> Vec<i32> {
    let mut ids = Vec::new();
    for f in &ds.manifest().schema.fields {
        preorder_ids(f, &mut ids);
    }
    ids
}

/// Field ids of `f`'s subtree in pre-order (the field, then its children).
/// A blob v2 column counts once: its data files hold it as one column, without its
/// logical children (`data`, `uri`, ...).
fn preorder_ids(f: &lancer_format::schema::LanceField, out: &mut Vec<i32>) {
    out.push(f.id);
    if f.is_blob_v2() {
        return;
    }
    for c in &f.children {
        preorder_ids(c, out);
    }
}
