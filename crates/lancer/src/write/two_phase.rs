//! Two-phase (distributed) writes (spec: "Distributed Write"; the commit rules are
//! "Transactions" / "Conflict resolution").
//!
//! Phase one, on any number of workers: [`write_fragments`] writes data files under
//! the dataset's `data/` and commits nothing; it returns fragment descriptions (the
//! table layer's [`Fragment`], id 0 until committed) that travel as JSON in pylance's
//! `FragmentMetadata` shape ([`crate::write::fragment_json`]). Phase two, on one driver:
//! [`commit`] commits one [`Operation`] naming those fragments through the same
//! optimistic-concurrency path a local write takes (`lancer_table::commit`): the
//! manifest of the next version is put if absent; a commit that lost a race is rebased
//! over compatible concurrent commits (an append over an append or a delete, ...) or
//! refused as a conflict, as for any local write. Fragment ids are assigned there.
//!
//! Before anything is committed every data file and deletion file a description names
//! is looked up in the store (one size request each) and each data file's footer read:
//! a missing file, a size other than the recorded one, a row count other than the
//! fragment's, a field id the schema lacks, a path leaving the dataset or a data file
//! the dataset already has is refused with an error naming the file; a new index
//! segment's files are looked up likewise. Files written but never committed are invisible (no
//! manifest names them) and are removed by `cleanup` once older than its age limit
//! (`lancer_table::versions`), never before.

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use lancer_format::reader::FileReader;
use lancer_format::writer::schema as wschema;
use lancer_table::commit::{CommitExtras, Naming, FLAG_STABLE_ROW_IDS};
use lancer_table::pb;
use lancer_table::pb::transaction::Operation as PbOperation;
use lancer_table::write::WriteParams;
use lancer_table::{Dataset, TableError};

use crate::catalog::{check_index_files, tampered};
use crate::{Error, Result, Store};

/// A fragment description: the table layer's fragment (id 0 until committed).
pub type Fragment = pb::DataFragment;

/// How [`write_fragments`] treats an existing dataset (pylance's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentMode {
    /// Fit the data to the existing dataset's schema and storage version (a new
    /// dataset's schema when there is none): for an `Append` commit.
    Append,
    /// Fragments of a new dataset with the data's schema (an existing dataset is an
    /// error): for an `Overwrite` commit creating it.
    Create,
    /// Fragments with the data's schema, whatever exists: for an `Overwrite` commit.
    Overwrite,
}

impl FragmentMode {
    /// `append`, `create` or `overwrite` (any case); anything else is an error naming
    /// the choices.
    pub fn parse(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "append" => Ok(Self::Append),
            "create" => Ok(Self::Create),
            "overwrite" => Ok(Self::Overwrite),
            other => Err(Error::InvalidArgument {
                what: format!("unknown mode {other:?}: append, create or overwrite"),
            }),
        }
    }
}

/// Phase one: writes `batches` as data files of the dataset in `store` (which need not
/// exist yet) and returns their fragment descriptions, committing nothing. Files are
/// cut at `params.max_rows_per_file` rows and about `params.max_bytes_per_file` bytes,
/// in `params.storage` (an existing dataset's own version in [`FragmentMode::Append`]).
pub fn write_fragments(
    store: &Store,
    schema: SchemaRef,
    batches: impl IntoIterator<Item = lancer_table::Result<RecordBatch>>,
    params: &WriteParams,
    mode: FragmentMode,
) -> Result<Vec<Fragment>> {
    let options = params.storage_options.clone().unwrap_or_default();
    let existing = match Dataset::open_with(store.clone(), options, None) {
        Ok(d) => Some(d),
        Err(TableError::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    match (mode, existing) {
        (FragmentMode::Create, Some(d)) => Err(Error::InvalidArgument {
            what: format!(
                "{} already exists (version {}): write the fragments with mode \"append\" \
                 or \"overwrite\"",
                store.uri(),
                d.version()
            ),
        }),
        (FragmentMode::Append, Some(d)) => Ok(d.write_uncommitted(batches, params)?),
        _ => Ok(lancer_table::write::write_uncommitted(
            store, &schema, batches, params,
        )?),
    }
}

/// A worker's half of a distributed delete (pylance's `LanceFragment.delete`): the
/// rows of fragment `fragment_id` of `ds` matching the SQL `filter` are written as its
/// new deletion file, nothing committed. Returns the fragment for a
/// [`Operation::Delete`]'s `updated_fragments`, the fragment unchanged when no row
/// matched, or None when no row is left (its id goes in `deleted_fragment_ids`).
pub fn delete_in_fragment(
    ds: &Dataset,
    fragment_id: u64,
    filter: &str,
) -> Result<Option<Fragment>> {
    let f = crate::Filter::new(filter, &ds.schema())?;
    let frag = ds
        .fragments()
        .iter()
        .find(|fr| fr.id == fragment_id)
        .ok_or_else(|| Error::InvalidArgument {
            what: format!("fragment {fragment_id} is not in version {}", ds.version()),
        })?;
    let cols: Vec<&str> = f.columns().iter().map(String::as_str).collect();
    let all = 0..frag.physical_rows;
    let batch = ds.read_runs(frag, Some(&cols), std::slice::from_ref(&all))?;
    let mask = f.evaluate(&batch)?;
    let hits = (0..mask.len()).filter(|&i| mask.is_valid(i) && mask.value(i));
    Ok(ds.delete_offsets_uncommitted(fragment_id, hits.map(|i| i as u64))?)
}

/// Old fragments replaced by new ones (one compaction task's result).
#[derive(Debug, Clone, Default)]
pub struct RewriteGroup {
    /// The fragments rewritten (as committed: their ids name them).
    pub old_fragments: Vec<Fragment>,
    /// The fragments holding their rows now (id 0: assigned at commit).
    pub new_fragments: Vec<Fragment>,
}

/// What a [`commit`] does (pylance's `LanceOperation`s of the same names).
#[derive(Debug, Clone)]
pub enum Operation {
    /// Adds the fragments.
    Append {
        /// The new fragments.
        fragments: Vec<Fragment>,
    },
    /// Replaces the dataset (or creates it) with the fragments and `schema`.
    Overwrite {
        /// The new schema; field ids are numbered from 0 in pre-order, as
        /// [`write_fragments`] numbered them.
        schema: SchemaRef,
        /// The fragments.
        fragments: Vec<Fragment>,
        /// Base paths a new dataset registers (pylance's `initial_bases`, with the ids
        /// they carry).
        initial_bases: Vec<lancer_table::write::BaseSpec>,
    },
    /// Deletes rows: fragments with new deletion files, and whole fragments.
    Delete {
        /// Committed fragments, each with its new deletion file.
        updated_fragments: Vec<Fragment>,
        /// Fragments all of whose rows are deleted.
        deleted_fragment_ids: Vec<u64>,
        /// The predicate, as recorded in the transaction.
        predicate: String,
    },
    /// Replaces groups of fragments by rewritten ones holding the same rows
    /// (compaction).
    Rewrite {
        /// The groups.
        groups: Vec<RewriteGroup>,
    },
    /// Adds index segments whose files are written and drops others.
    CreateIndex {
        /// Segments added.
        new_indices: Vec<pb::IndexMetadata>,
        /// Segments dropped (by uuid).
        removed_indices: Vec<pb::IndexMetadata>,
    },
    /// Rows rewritten (an update or a merge insert, pylance's `LanceOperation.Update`):
    /// committed fragments with new deletion files, fragments removed whole, and new
    /// fragments holding the rewritten and inserted rows.
    Update {
        /// Fragments all of whose rows are gone.
        removed_fragment_ids: Vec<u64>,
        /// Committed fragments, each with its new deletion file (or new column files
        /// with `rewrite_columns`).
        updated_fragments: Vec<Fragment>,
        /// The new fragments (id 0: assigned at commit).
        new_fragments: Vec<Fragment>,
        /// Field ids whose values changed in place (`rewrite_columns`).
        fields_modified: Vec<u32>,
        /// Field ids whose index fragment bitmaps stay valid.
        fields_for_preserving_frag_bitmap: Vec<u32>,
        /// Columns rewritten in place (pylance's `update_mode="rewrite_columns"`)
        /// rather than rows (`"rewrite_rows"`).
        rewrite_columns: bool,
    },
    /// Column data replaced (pylance's `LanceOperation.DataReplacement`): in each
    /// fragment named, the data file holding exactly the new file's fields is replaced
    /// by it (or, when no file of the fragment holds them, it is added).
    DataReplacement {
        /// (fragment id, its new data file); every new file holds the same fields.
        replacements: Vec<(u64, pb::DataFile)>,
    },
    /// Columns dropped, renamed or reordered (pylance's `LanceOperation.Project`): the
    /// schema after it, each field named by its id; the data files stay as they are.
    Project {
        /// The schema after the projection.
        schema: SchemaRef,
        /// The id of each of its fields, in pre-order (a struct before its children, a
        /// list before its item), each one the dataset has, with its type.
        field_ids: Vec<i32>,
    },
    /// Replaces the fragments (each with data files of new columns added) and the
    /// schema: columns added per fragment.
    Merge {
        /// Every fragment of the dataset after the merge.
        fragments: Vec<Fragment>,
        /// The schema after it; columns the dataset has keep their field ids (by
        /// name), new ones are numbered after the largest id in pre-order.
        schema: SchemaRef,
    },
}

impl Operation {
    /// The operation's name, as pylance's transactions record it.
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Append { .. } => "Append",
            Operation::Overwrite { .. } => "Overwrite",
            Operation::Delete { .. } => "Delete",
            Operation::Rewrite { .. } => "Rewrite",
            Operation::CreateIndex { .. } => "CreateIndex",
            Operation::Merge { .. } => "Merge",
            Operation::Update { .. } => "Update",
            Operation::Project { .. } => "Project",
            Operation::DataReplacement { .. } => "DataReplacement",
        }
    }
}

/// How a [`commit`] records itself.
#[derive(Debug, Clone)]
pub struct CommitParams {
    /// Manifest naming when the commit creates the dataset.
    pub naming: Naming,
    /// Stable row ids for a dataset the commit creates.
    pub enable_stable_row_ids: bool,
    /// Transaction properties (the commit message under
    /// `lancer_table::commit::COMMIT_MESSAGE_KEY`).
    pub transaction_properties: std::collections::HashMap<String, String>,
    /// Skip the automatic cleanup the dataset's config asks for.
    pub skip_auto_cleanup: bool,
    /// The transaction's uuid (a committed transaction object's); None: a random one.
    pub uuid: Option<String>,
}

impl Default for CommitParams {
    fn default() -> Self {
        Self {
            naming: Naming::V2,
            enable_stable_row_ids: false,
            transaction_properties: Default::default(),
            skip_auto_cleanup: false,
            uuid: None,
        }
    }
}

/// Phase two: commits `op` on the dataset in `store` as read at `read_version` (None:
/// the latest; an `Overwrite` may create the dataset). Every file the operation names
/// is checked first (see the module docs); a concurrent commit since `read_version` is
/// rebased over or refused exactly as for a local write. Returns the new version.
pub fn commit(
    store: &Store,
    op: Operation,
    read_version: Option<u64>,
    params: &CommitParams,
) -> Result<Dataset> {
    if let Some(u) = &params.uuid {
        lancer_table::commit::check_uuid(u)?;
    }
    let base = match Dataset::open_in(store.clone(), read_version) {
        Ok(d) => Some(d),
        Err(TableError::NotFound { .. }) if read_version.is_none() || read_version == Some(0) => {
            None
        }
        Err(e) => return Err(e.into()),
    };
    let base = match (&op, base) {
        (Operation::Overwrite { .. }, b) => b,
        (_, Some(b)) => Some(b),
        (op, None) => {
            return Err(Error::InvalidArgument {
                what: format!(
                    "there is no dataset at {} to commit {} to: create it with an Overwrite \
                     commit first",
                    store.uri(),
                    op.name()
                ),
            })
        }
    };
    let (pb_op, storage) = to_pb(&op, base.as_ref())?;
    check_files(store, base.as_ref(), &pb_op)?;
    // an existing dataset keeps its manifest naming (a commit read at version 0 may
    // find one all the same)
    let naming = match &base {
        Some(d) => d.naming(),
        None => Dataset::open_in(store.clone(), None).map_or(params.naming, |d| d.naming()),
    };
    let extras = CommitExtras {
        new_flags: if base.is_none() && params.enable_stable_row_ids {
            FLAG_STABLE_ROW_IDS
        } else {
            0
        },
        properties: params.transaction_properties.clone(),
        skip_auto_cleanup: params.skip_auto_cleanup,
        uuid: params.uuid.clone(),
    };
    let read = base.as_ref().map(|d| d.version());
    let c = lancer_table::commit::commit_with(store, read, pb_op, &storage, naming, &extras)?;
    Ok(Dataset::open_in(store.clone(), Some(c.manifest.version()))?)
}

/// The table layer's operation for `op` on `base`, with the storage version label its
/// manifest records.
fn to_pb(op: &Operation, base: Option<&Dataset>) -> Result<(PbOperation, String)> {
    // the dataset's storage version as its manifest records it; an overwrite's is its
    // fragments' (the dataset's when it writes none; 2.1 for a new empty one)
    let label = |frags: &[Fragment]| -> String {
        let from_base = base
            .and_then(|d| d.manifest().pb.data_format.clone())
            .map(|f| f.version)
            .filter(|v| !v.is_empty());
        let from_frags = frags
            .iter()
            .flat_map(|f| &f.files)
            .find(|d| d.file_major_version >= 2)
            .map(|d| format!("{}.{}", d.file_major_version, d.file_minor_version));
        let first = if matches!(op, Operation::Overwrite { .. }) {
            from_frags.or(from_base)
        } else {
            from_base.or(from_frags)
        };
        first.unwrap_or_else(|| lancer_format::container::FileVersion::V2_1.to_string())
    };
    let stable = base.is_some_and(Dataset::uses_stable_row_ids);
    Ok(match op {
        Operation::Append { fragments } => (
            PbOperation::Append(pb::transaction::Append {
                fragments: fragments.clone(),
            }),
            label(fragments),
        ),
        Operation::Overwrite {
            schema,
            fragments,
            initial_bases,
        } => {
            let s = wschema::pb_schema(&lancer_table::write::normalize_schema(schema))
                .map_err(TableError::from)?;
            // with the ids given, 0 included, as pylance commits them (on an existing
            // dataset the commit refuses them, naming add_bases)
            let initial_bases = lancer_table::write::as_given(initial_bases)?;
            (
                PbOperation::Overwrite(pb::transaction::Overwrite {
                    fragments: fragments.clone(),
                    schema: s.fields,
                    schema_metadata: s.metadata.into_iter().collect(),
                    config_upsert_values: Default::default(),
                    initial_bases,
                }),
                label(fragments),
            )
        }
        Operation::Delete {
            updated_fragments,
            deleted_fragment_ids,
            predicate,
        } => (
            PbOperation::Delete(pb::transaction::Delete {
                updated_fragments: updated_fragments.clone(),
                deleted_fragment_ids: deleted_fragment_ids.clone(),
                predicate: predicate.clone(),
            }),
            label(&[]),
        ),
        Operation::Rewrite { groups } => {
            if stable
                && groups
                    .iter()
                    .flat_map(|g| &g.new_fragments)
                    .any(|f| f.row_id_sequence.is_none())
            {
                return Err(Error::InvalidArgument {
                    what: "the dataset uses stable row ids and a rewritten fragment carries \
                           none (row_id_meta): a rewrite must carry its rows' ids over"
                        .into(),
                });
            }
            let mut new = Vec::new();
            (
                PbOperation::Rewrite(pb::transaction::Rewrite {
                    groups: groups
                        .iter()
                        .map(|g| {
                            new.extend(g.new_fragments.iter().cloned());
                            pb::transaction::rewrite::RewriteGroup {
                                old_fragments: g.old_fragments.clone(),
                                new_fragments: g.new_fragments.clone(),
                            }
                        })
                        .collect(),
                    ..Default::default()
                }),
                label(&new),
            )
        }
        Operation::CreateIndex {
            new_indices,
            removed_indices,
        } => {
            // a full-text segment given without details (pylance's `Index(...)` after
            // `merge_index_metadata`) gets the ones its metadata.lance says
            let mut new_indices = new_indices.clone();
            if let Some(b) = base {
                for m in &mut new_indices {
                    if let Some(d) = lancer_index::inverted::segment::legacy_details(b, m) {
                        m.index_details = Some(d);
                    }
                }
            }
            (
                PbOperation::CreateIndex(pb::transaction::CreateIndex {
                    new_indices,
                    removed_indices: removed_indices.clone(),
                }),
                label(&[]),
            )
        }
        Operation::Update {
            removed_fragment_ids,
            updated_fragments,
            new_fragments,
            fields_modified,
            fields_for_preserving_frag_bitmap,
            rewrite_columns,
        } => {
            let mode = if *rewrite_columns {
                pb::transaction::UpdateMode::RewriteColumns
            } else {
                pb::transaction::UpdateMode::RewriteRows
            };
            (
                PbOperation::Update(pb::transaction::Update {
                    removed_fragment_ids: removed_fragment_ids.clone(),
                    updated_fragments: updated_fragments.clone(),
                    new_fragments: new_fragments.clone(),
                    fields_modified: fields_modified.clone(),
                    fields_for_preserving_frag_bitmap: fields_for_preserving_frag_bitmap.clone(),
                    update_mode: mode as i32,
                }),
                label(new_fragments),
            )
        }
        Operation::DataReplacement { replacements } => (
            PbOperation::DataReplacement(pb::transaction::DataReplacement {
                replacements: replacements
                    .iter()
                    .map(|(id, f)| pb::transaction::DataReplacementGroup {
                        fragment_id: *id,
                        new_file: Some(f.clone()),
                    })
                    .collect(),
            }),
            label(&[]),
        ),
        Operation::Project { schema, field_ids } => {
            let base = base.ok_or_else(|| Error::InvalidArgument {
                what: "a Project needs a dataset to project".into(),
            })?;
            let s = wschema::pb_schema_with_ids(schema, field_ids).map_err(TableError::from)?;
            check_projection(base, &s.fields)?;
            (
                PbOperation::Project(pb::transaction::Project {
                    schema: s.fields,
                    preserves_nullability: false,
                }),
                label(&[]),
            )
        }
        Operation::Merge { fragments, schema } => {
            let base = base.ok_or_else(|| Error::InvalidArgument {
                what: "a Merge needs a dataset to merge into".into(),
            })?;
            let s = merged_schema(base, schema)?;
            let mut metadata = base.manifest().pb.schema_metadata.clone();
            metadata.extend(s.metadata);
            (
                PbOperation::Merge(pb::transaction::Merge {
                    fragments: fragments.clone(),
                    schema: s.fields,
                    schema_metadata: metadata,
                    preserves_nullability: false,
                }),
                label(fragments),
            )
        }
    })
}

/// `schema` with field ids: a column the dataset has (by name) keeps its ids, a new
/// one is numbered after the dataset's largest id, in pre-order.
fn merged_schema(base: &Dataset, schema: &SchemaRef) -> Result<lancer_format::pb::file::Schema> {
    let existing = &base.manifest().pb.fields;
    let mut next = existing.iter().map(|f| f.id).max().unwrap_or(-1) + 1;
    let mut ids = Vec::new();
    for field in schema.fields() {
        let one = arrow_schema::Schema::new(vec![field.clone()]);
        let count = wschema::pb_schema(&one)
            .map_err(TableError::from)?
            .fields
            .len();
        let old = existing
            .iter()
            .find(|f| f.parent_id == -1 && f.name == *field.name());
        match old {
            Some(top) => {
                let sub = subtree(existing, top.id);
                if sub.len() != count {
                    return Err(Error::InvalidArgument {
                        what: format!(
                            "Merge: column {:?} has another shape than the dataset's (its \
                             type changed); a Merge adds columns, it does not alter them",
                            field.name()
                        ),
                    });
                }
                ids.extend(sub);
            }
            None => {
                ids.extend(next..next + count as i32);
                next += count as i32;
            }
        }
    }
    Ok(wschema::pb_schema_with_ids(schema, &ids).map_err(TableError::from)?)
}

/// A projection keeps fields of the dataset only (by id, each once), each of its own
/// type and under its own parent: it renames, reorders and drops, never alters.
fn check_projection(base: &Dataset, fields: &[lancer_format::pb::file::Field]) -> Result<()> {
    let existing = &base.manifest().pb.fields;
    let mut seen = std::collections::HashSet::new();
    for f in fields {
        if !seen.insert(f.id) {
            return Err(Error::InvalidArgument {
                what: format!("Project: field id {} appears twice in the schema", f.id),
            });
        }
        let Some(old) = existing.iter().find(|o| o.id == f.id) else {
            return Err(Error::InvalidArgument {
                what: format!(
                    "Project: the dataset has no field with id {} ({:?}): a projection keeps, \
                     renames or drops the dataset's fields; add columns with a Merge",
                    f.id, f.name
                ),
            });
        };
        if old.logical_type != f.logical_type || old.parent_id != f.parent_id {
            return Err(Error::InvalidArgument {
                what: format!(
                    "Project: field {} ({:?}) is {} under parent {} in the dataset, {} under \
                     parent {} in the schema: a projection cannot change a field's type or \
                     place (use alter_columns)",
                    f.id, f.name, old.logical_type, old.parent_id, f.logical_type, f.parent_id
                ),
            });
        }
    }
    Ok(())
}

/// Ids of field `id` and its descendants, in pre-order.
fn subtree(fields: &[lancer_format::pb::file::Field], id: i32) -> Vec<i32> {
    let mut out = vec![id];
    for c in fields.iter().filter(|f| f.parent_id == id) {
        out.extend(subtree(fields, c.id));
    }
    out
}

/// Checks every file `op` adds to the dataset (see the module docs).
fn check_files(store: &Store, base: Option<&Dataset>, op: &PbOperation) -> Result<()> {
    let schema_ids: Vec<i32> = match op {
        PbOperation::Overwrite(o) => o.schema.iter().map(|f| f.id).collect(),
        PbOperation::Merge(m) => m.schema.iter().map(|f| f.id).collect(),
        _ => base.map_or_else(Vec::new, |d| {
            d.manifest().pb.fields.iter().map(|f| f.id).collect()
        }),
    };
    let committed = |id: u64| base.and_then(|d| d.fragments().iter().find(|f| f.id == id));
    let mut new_files: Vec<&Fragment> = Vec::new();
    // updated fragments whose new files (after the committed ones) are to be checked
    let mut rewritten: Vec<&Fragment> = Vec::new();
    match op {
        PbOperation::Append(a) => new_files.extend(&a.fragments),
        PbOperation::Overwrite(o) => new_files.extend(&o.fragments),
        PbOperation::Rewrite(r) => {
            for g in &r.groups {
                new_files.extend(&g.new_fragments);
                for old in &g.old_fragments {
                    same_files(old, committed(old.id), "Rewrite")?;
                }
            }
        }
        PbOperation::Merge(m) => new_files.extend(&m.fragments),
        PbOperation::Update(u) => {
            new_files.extend(&u.new_fragments);
            for f in &u.updated_fragments {
                let was = committed(f.id);
                if u.update_mode == pb::transaction::UpdateMode::RewriteColumns as i32 {
                    if was.is_none() {
                        return Err(Error::InvalidArgument {
                            what: format!(
                                "Update: updated fragment {} is not in the version read",
                                f.id
                            ),
                        });
                    }
                    continue;
                }
                match was {
                    // pylance's LanceFragment.update_columns: new files for some columns,
                    // their old copies tombstoned
                    Some(c) if columns_rewritten(f, c) => rewritten.push(f),
                    _ => same_files(f, was, "Update")?,
                }
                if let Some(del) = &f.deletion_file {
                    check_deletion(store, f, del)?;
                }
            }
        }
        PbOperation::Delete(d) => {
            for f in &d.updated_fragments {
                same_files(f, committed(f.id), "Delete")?;
                let del = f
                    .deletion_file
                    .as_ref()
                    .ok_or_else(|| Error::InvalidArgument {
                        what: format!(
                            "Delete: updated fragment {} has no deletion file; list fragments \
                         whose rows are all deleted in deleted_fragment_ids",
                            f.id
                        ),
                    })?;
                check_deletion(store, f, del)?;
            }
        }
        PbOperation::CreateIndex(c) => {
            for idx in &c.new_indices {
                check_index_files(store, idx)?;
            }
        }
        PbOperation::DataReplacement(r) => {
            // each new file: there, of the recorded size, the fragment's row count, of
            // fields the dataset has, and not a file the dataset already holds
            for g in &r.replacements {
                let frag = committed(g.fragment_id).ok_or_else(|| Error::InvalidArgument {
                    what: format!(
                        "DataReplacement: fragment {} is not in the version read",
                        g.fragment_id
                    ),
                })?;
                let df = g.new_file.as_ref().ok_or_else(|| Error::InvalidArgument {
                    what: format!(
                        "DataReplacement: the replacement of fragment {} has no new file",
                        g.fragment_id
                    ),
                })?;
                if frag.files.iter().any(|f| f.path == df.path) {
                    return Err(Error::InvalidArgument {
                        what: format!(
                            "DataReplacement: {} is already a data file of fragment {}",
                            df.path, g.fragment_id
                        ),
                    });
                }
                let new_schema = check_data_file(store, base, frag, df, &schema_ids)?;
                if let (Some(b), Some(old)) = (
                    base,
                    frag.files.iter().find(|f| {
                        f.fields == df.fields
                            && (f.file_major_version, f.file_minor_version)
                                == (df.file_major_version, df.file_minor_version)
                    }),
                ) {
                    same_column_types(b, old, df, &new_schema)?;
                }
            }
        }
        _ => {}
    }
    // a data file the dataset already has, named as new (a driver committing the same
    // fragments twice, a retried task's output listed next to the first): its rows would
    // appear twice
    // (checked against the version read and the latest: one committed since counts)
    if matches!(
        op,
        PbOperation::Append(_) | PbOperation::Rewrite(_) | PbOperation::Update(_)
    ) {
        if let Some(d) = base {
            let latest = Dataset::open_in(store.clone(), None)
                .ok()
                .filter(|l| l.version() != d.version());
            let have: std::collections::HashSet<&str> = d
                .fragments()
                .iter()
                .chain(latest.iter().flat_map(|l| l.fragments()))
                .flat_map(|f| &f.files)
                .map(|f| f.path.as_str())
                .collect();
            let mut seen = std::collections::HashSet::new();
            for df in new_files.iter().flat_map(|f| &f.files) {
                if have.contains(df.path.as_str()) || !seen.insert(df.path.as_str()) {
                    return Err(Error::InvalidArgument {
                        what: format!(
                            "data file {} is already part of the dataset (or listed twice): \
                             committing it again would duplicate its rows",
                            store.display(&format!("data/{}", df.path))
                        ),
                    });
                }
            }
        }
    }
    // What to check: each new data file, each new deletion file.
    let mut jobs: Vec<(&Fragment, Option<&pb::DataFile>)> = Vec::new();
    for frag in rewritten {
        let before = committed(frag.id)
            .map(|f| f.files.len())
            .unwrap_or_default();
        for df in frag.files.iter().skip(before) {
            jobs.push((frag, Some(df)));
        }
    }
    for frag in new_files {
        if frag.physical_rows == 0 && !frag.files.is_empty() {
            return Err(Error::InvalidArgument {
                what: format!(
                    "fragment {} records 0 physical rows: a fragment description with data \
                     files holds rows",
                    frag.id
                ),
            });
        }
        // a fragment already committed with these files (a Merge lists them all) was
        // checked when it was committed
        let before = committed(frag.id)
            .map(|f| f.files.clone())
            .unwrap_or_default();
        for df in frag.files.iter().filter(|df| !before.contains(df)) {
            jobs.push((frag, Some(df)));
        }
        if let Some(del) = &frag.deletion_file {
            if committed(frag.id).and_then(|f| f.deletion_file.as_ref()) != Some(del) {
                jobs.push((frag, None));
            }
        }
    }
    let check = |(frag, df): (&Fragment, Option<&pb::DataFile>)| match df {
        Some(df) => check_data_file(store, base, frag, df, &schema_ids).map(|_| ()),
        None => frag
            .deletion_file
            .as_ref()
            .map_or(Ok(()), |del| check_deletion(store, frag, del)),
    };
    // Each check is a few requests (size, footer); a job's thousands of files are
    // checked CHECK_THREADS at a time (object-store latency, not CPU, is the cost),
    // and the first failure in the operation's order is reported.
    if jobs.len() < 8 {
        return jobs.into_iter().try_for_each(check);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<()>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|sc| {
        for _ in 0..CHECK_THREADS.min(jobs.len()) {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&job) = jobs.get(i) else { return };
                let r = check(job);
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    for r in results {
        r.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or_else(|| {
                Err(Error::InvalidArgument {
                    what: "a file check did not finish".into(),
                })
            })?;
    }
    Ok(())
}

/// Files a commit checks at once.
const CHECK_THREADS: usize = 16;

/// Whether `f` is the committed fragment `c` with some columns rewritten into new data
/// files (pylance's `LanceFragment.update_columns`): `c`'s files, each the same but
/// for fields tombstoned (`-2`), then new files whose every field is one tombstoned.
fn columns_rewritten(f: &Fragment, c: &Fragment) -> bool {
    if f.physical_rows != c.physical_rows || f.files.len() <= c.files.len() {
        return false;
    }
    let kept = c.files.iter().zip(&f.files).all(|(a, b)| {
        a.path == b.path
            && a.file_size_bytes == b.file_size_bytes
            && a.column_indices == b.column_indices
            && a.base_id == b.base_id
            && a.fields.len() == b.fields.len()
            && a.fields
                .iter()
                .zip(&b.fields)
                .all(|(x, y)| x == y || *y == -2)
    });
    let live: std::collections::HashSet<i32> = f.files[..c.files.len()]
        .iter()
        .flat_map(|d| d.fields.iter().copied())
        .filter(|&x| x >= 0)
        .collect();
    let gone: std::collections::HashSet<i32> = c
        .files
        .iter()
        .zip(&f.files)
        .flat_map(|(a, b)| a.fields.iter().zip(&b.fields))
        .filter(|(x, y)| **y == -2 && **x >= 0)
        .map(|(x, _)| *x)
        .collect();
    kept && f.files[c.files.len()..]
        .iter()
        .flat_map(|d| d.fields.iter())
        .all(|x| gone.contains(x) && !live.contains(x))
}

/// A fragment an operation names as committed must have the committed data files.
fn same_files(f: &Fragment, committed: Option<&Fragment>, what: &str) -> Result<()> {
    match committed {
        // a fragment removed since is the commit's conflict check's to report
        None => Ok(()),
        Some(c) if c.files == f.files && c.physical_rows == f.physical_rows => Ok(()),
        Some(_) => Err(Error::InvalidArgument {
            what: format!(
                "{what}: fragment {} does not match the committed fragment of that id \
                 (its data files or row count differ): describe it as read from the \
                 version the operation was built on",
                f.id
            ),
        }),
    }
}

/// Checks one data file a description names (see the module docs); its Arrow schema.
fn check_data_file(
    store: &Store,
    base: Option<&Dataset>,
    frag: &Fragment,
    df: &pb::DataFile,
    schema_ids: &[i32],
) -> Result<SchemaRef> {
    let (fstore, rel) = match (base, df.base_id) {
        (Some(d), _) => d.data_file_location(df)?,
        (None, None) => {
            let p = std::path::Path::new(&df.path);
            if df.path.is_empty()
                || p.is_absolute()
                || p.components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                return Err(tampered(format!(
                    "data file {:?} is not a file name under data/",
                    df.path
                )));
            }
            (store.clone(), format!("data/{}", df.path))
        }
        (None, Some(id)) => {
            return Err(Error::InvalidArgument {
                what: format!(
                    "data file {} lives in base path {id}, which a new dataset does not have",
                    df.path
                ),
            })
        }
    };
    let shown = fstore.display(&rel);
    let size = fstore
        .size(&rel)
        .map_err(TableError::from)?
        .ok_or_else(|| tampered(format!("data file {shown} does not exist")))?;
    if df.file_size_bytes != 0 && size != df.file_size_bytes {
        return Err(tampered(format!(
            "data file {shown} has {size} bytes, the description records {}",
            df.file_size_bytes
        )));
    }
    if let Some(bad) = df
        .fields
        .iter()
        .find(|&&id| id >= 0 && !schema_ids.contains(&id))
    {
        return Err(tampered(format!(
            "data file {shown} holds field id {bad}, which the schema does not have"
        )));
    }
    if !df.column_indices.is_empty() && df.column_indices.len() != df.fields.len() {
        return Err(tampered(format!(
            "data file {shown} lists {} fields and {} column indices",
            df.fields.len(),
            df.column_indices.len()
        )));
    }
    let reader = fstore
        .reader(&rel, Some(size))
        .map_err(lancer_format::FormatError::from)
        .and_then(FileReader::open)
        .map_err(|e| {
            tampered(format!(
                "data file {shown} does not open as a Lance file: {e}"
            ))
        })?;
    if reader.num_rows() != frag.physical_rows {
        return Err(tampered(format!(
            "data file {shown} holds {} rows, the fragment records {}",
            reader.num_rows(),
            frag.physical_rows
        )));
    }
    Ok(reader.schema())
}

/// A replacing data file (of schema `now`, as [`check_data_file`] read it) holds
/// columns of the types of the file it replaces (the same fields; a file of other types
/// would commit, then fail every read of them).
fn same_column_types(
    base: &Dataset,
    old: &pb::DataFile,
    new: &pb::DataFile,
    now: &SchemaRef,
) -> Result<()> {
    let (fstore, rel) = base.data_file_location(old)?;
    let shown = fstore.display(&rel);
    let was = fstore
        .reader(&rel, None)
        .map_err(lancer_format::FormatError::from)
        .and_then(FileReader::open)
        .map_err(|e| {
            tampered(format!(
                "data file {shown} does not open as a Lance file: {e}"
            ))
        })?
        .schema();
    let types = |s: &SchemaRef| -> Vec<arrow_schema::DataType> {
        s.fields().iter().map(|f| f.data_type().clone()).collect()
    };
    if types(&was) != types(now) {
        return Err(Error::InvalidArgument {
            what: format!(
                "DataReplacement: data file {} holds columns of types {:?} where the file it \
                 replaces holds {:?}: write the new file with the dataset's column types",
                new.path,
                types(now),
                types(&was)
            ),
        });
    }
    Ok(())
}

fn check_deletion(store: &Store, frag: &Fragment, del: &pb::DeletionFile) -> Result<()> {
    let rel = lancer_table::dataset::deletion_path(frag.id, del);
    let shown = store.display(&rel);
    if store.size(&rel).map_err(TableError::from)?.is_none() {
        return Err(tampered(format!("deletion file {shown} does not exist")));
    }
    if del.num_deleted_rows > frag.physical_rows {
        return Err(tampered(format!(
            "deletion file {shown} records {} deleted rows of a fragment of {}",
            del.num_deleted_rows, frag.physical_rows
        )));
    }
    Ok(())
}
