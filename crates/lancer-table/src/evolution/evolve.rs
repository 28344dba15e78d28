//! Schema evolution and row updates, committed as pylance commits them
//! (docs/evolution-format.md §3; reference "Data Evolution", "Transactions"):
//!
//! - dropping, renaming and changing the nullability of columns: a `Project` — the
//!   manifest's schema changes, no data is written; a data file none of whose fields
//!   remain is left out of its fragment;
//! - adding columns: a `Merge` — one new data file per fragment holding the new
//!   columns for every physical row (deleted rows too), or no file at all for columns
//!   added as all-null;
//! - updating rows: an `Update` (REWRITE_ROWS) — the matched rows are marked deleted in
//!   their fragments and written again, with their new values, as new fragments.
//!
//! New fields take ids above every id the schema and the data files use (§1).

use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use lancer_format::pb::file::Field as PbField;
use lancer_format::writer::{schema as wschema, WriteOptions as FileOptions};

use crate::commit::random_hex;
use crate::dataset::Dataset;
use crate::pb;
use crate::pb::transaction::Operation;
use crate::{Result, TableError};

/// A change to one column (`alter_columns`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnChange {
    /// The column: a top-level name, or a dotted path to a struct's field.
    pub path: String,
    /// Its new name.
    pub rename: Option<String>,
    /// Its new nullability.
    pub nullable: Option<bool>,
}

/// What an update did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateStats {
    /// Rows rewritten.
    pub rows_updated: u64,
    /// New fragments written.
    pub fragments_written: usize,
    /// Fragments left with no live row (removed from the dataset).
    pub fragments_removed: usize,
}

/// The index in `fields` of the field at dotted `path`.
fn find(fields: &[PbField], path: &str) -> Result<usize> {
    let mut parent = -1;
    let mut at = None;
    for name in path.split('.') {
        let i = fields
            .iter()
            .position(|f| f.parent_id == parent && f.name == name)
            .ok_or_else(|| {
                TableError::invalid(format!(
                    "no column {path:?} in the dataset (columns: {})",
                    fields
                        .iter()
                        .filter(|f| f.parent_id == -1)
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        parent = fields[i].id;
        at = Some(i);
    }
    at.ok_or_else(|| TableError::invalid("an empty column name"))
}

/// The ids of `id`'s field and every field below it.
fn subtree(fields: &[PbField], id: i32) -> Vec<i32> {
    let mut out = vec![id];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(fields.iter().filter(|f| f.parent_id == p).map(|f| f.id));
        i += 1;
    }
    out
}

/// A nested field cast: its dotted path, the schema of the data file written for it
/// (the enclosing structs holding only the cast field) and that schema's field ids in
/// pre-order (the structs' own ids, then the new ones).
struct NestedCast {
    path: String,
    schema: SchemaRef,
    ids: Vec<i32>,
}

/// The Arrow field at dotted `steps` of `schema` (through structs).
fn nested_field(schema: &Schema, steps: &[&str], path: &str) -> Result<arrow_schema::Field> {
    let missing = || TableError::invalid(format!("no column {path:?}"));
    let mut f = schema
        .field_with_name(steps[0])
        .map_err(|_| missing())?
        .clone();
    for step in &steps[1..] {
        let arrow_schema::DataType::Struct(fs) = f.data_type() else {
            return Err(missing());
        };
        f = fs
            .iter()
            .find(|c| c.name() == step)
            .ok_or_else(missing)?
            .as_ref()
            .clone();
    }
    Ok(f)
}

/// The array at `steps` below `col` (through structs), with the null buffers of the
/// structs passed on the way (outermost first).
fn descend(
    col: &arrow_array::ArrayRef,
    steps: &[&str],
    path: &str,
) -> Result<(Vec<Option<arrow_buffer::NullBuffer>>, arrow_array::ArrayRef)> {
    let mut outer = Vec::new();
    let mut at = col.clone();
    for step in steps {
        let Some(s) = at.as_any().downcast_ref::<arrow_array::StructArray>() else {
            return Err(TableError::invalid(format!(
                "{path:?} passes through {}, not a struct",
                at.data_type()
            )));
        };
        outer.push(s.nulls().cloned());
        at = s
            .column_by_name(step)
            .ok_or_else(|| TableError::invalid(format!("no column {path:?}")))?
            .clone();
    }
    Ok((outer, at))
}

/// The highest field id the schema or any data file uses (new fields go above it).
pub fn max_field_id(m: &pb::Manifest) -> i32 {
    let schema = m.fields.iter().map(|f| f.id);
    let files = m
        .fragments
        .iter()
        .flat_map(|f| &f.files)
        .flat_map(|d| d.fields.iter().copied());
    schema.chain(files).max().unwrap_or(-1)
}

/// Per physical row of `frag`: its stable row id and created-at version (0 where the
/// fragment records none), for rows an update or compaction moves.
pub(crate) fn row_ids_and_created(
    ds: &Dataset,
    frag: &pb::DataFragment,
) -> Result<(std::sync::Arc<Vec<u64>>, Vec<u64>)> {
    use pb::data_fragment::CreatedAtVersionSequence as C;
    let ids = ds
        .fragment_row_ids(frag)?
        .ok_or_else(|| TableError::corrupt(format!("fragment {} has no row ids", frag.id)))?;
    let created = match &frag.created_at_version_sequence {
        Some(C::InlineCreatedAtVersions(b)) => {
            crate::commit::decode_versions(b, frag.physical_rows)?
        }
        _ => vec![0; frag.physical_rows as usize],
    };
    Ok((ids, created))
}

/// Gives new fragments (in order) the row ids and created-at versions of the moved rows
/// they start with (`ids[k]`, `created[k]` for the k-th row written); rows past them
/// get fresh ids at commit.
pub(crate) fn carry_rows(frags: &mut [pb::DataFragment], ids: &[u64], created: &[u64]) {
    use pb::data_fragment::{CreatedAtVersionSequence as C, RowIdSequence as R};
    let mut at = 0usize;
    for f in frags {
        let n = (f.physical_rows as usize).min(ids.len().saturating_sub(at));
        if n == 0 {
            break;
        }
        f.row_id_sequence = Some(R::InlineRowIds(crate::commit::encode_ids(&ids[at..at + n])));
        let mut c = created[at..at + n].to_vec();
        // rows past the moved ones are stamped at commit (0: "this version")
        c.resize(f.physical_rows as usize, 0);
        f.created_at_version_sequence = Some(C::InlineCreatedAtVersions(
            crate::commit::encode_versions(&c),
        ));
        at += n;
    }
}

/// `frag` without the data files none of whose fields are in `schema` (or that hold
/// only tombstones).
pub(crate) fn prune_files(frag: &mut pb::DataFragment, schema: &[PbField]) {
    frag.files.retain(|d| {
        d.fields
            .iter()
            .any(|&id| id >= 0 && schema.iter().any(|f| f.id == id))
    });
}

impl Dataset {
    /// Drops columns (top-level names or dotted paths to struct fields): a new version
    /// whose schema lacks them; no data is rewritten (the files stay until cleanup).
    pub fn drop_columns(&self, paths: &[&str]) -> Result<Dataset> {
        let mut fields = self.manifest().pb.fields.clone();
        for (k, p) in paths.iter().enumerate() {
            // a field inside a column already dropped by this call (`["s", "s.a"]`)
            let under_earlier = paths[..k]
                .iter()
                .any(|q| p.strip_prefix(q).is_some_and(|rest| rest.starts_with('.')));
            if under_earlier {
                continue;
            }
            let i = find(&fields, p)?;
            let gone = subtree(&fields, fields[i].id);
            fields.retain(|f| !gone.contains(&f.id));
        }
        // a struct left without fields goes too (and so on up), as the reference drops it
        while let Some(empty) = fields
            .iter()
            .find(|f| f.logical_type == "struct" && !fields.iter().any(|c| c.parent_id == f.id))
            .map(|f| f.id)
        {
            fields.retain(|f| f.id != empty);
        }
        if !fields.iter().any(|f| f.parent_id == -1) {
            return Err(TableError::invalid(
                "cannot drop every column of a dataset: keep at least one (or delete the dataset)",
            ));
        }
        self.commit_op(Operation::Project(pb::transaction::Project {
            schema: fields,
            preserves_nullability: true,
        }))
    }

    /// Errs naming the first of `paths` (top-level names or dotted struct paths) the
    /// schema lacks: checked before a change of several steps starts.
    pub fn check_paths(&self, paths: &[&str]) -> Result<()> {
        let fields = &self.manifest().pb.fields;
        for p in paths {
            find(fields, p)?;
        }
        Ok(())
    }

    /// Renames columns and changes their nullability (a column made non-nullable must
    /// hold no null). No data is rewritten.
    pub fn alter_columns(&self, changes: &[ColumnChange]) -> Result<Dataset> {
        let mut fields = self.manifest().pb.fields.clone();
        let mut tightened = false;
        // every path names a field of the schema before this change (renaming `s` and
        // `s.a` in one call is two renames)
        let at: Vec<usize> = changes
            .iter()
            .map(|c| find(&fields, &c.path))
            .collect::<Result<_>>()?;
        for (c, &i) in changes.iter().zip(&at) {
            if let Some(n) = &c.rename {
                if n.is_empty() || n.contains('.') {
                    return Err(TableError::invalid(format!(
                        "{n:?} is not a column name (empty, or with a dot)"
                    )));
                }
                let parent = fields[i].parent_id;
                if fields
                    .iter()
                    .any(|f| f.parent_id == parent && f.name == *n && f.id != fields[i].id)
                {
                    return Err(TableError::invalid(format!(
                        "cannot rename {:?} to {n:?}: a column of that name exists",
                        c.path
                    )));
                }
                fields[i].name = n.clone();
            }
            if let Some(nullable) = c.nullable {
                if !nullable && fields[i].nullable {
                    self.check_no_nulls(&c.path)?;
                    tightened = true;
                }
                fields[i].nullable = nullable;
            }
        }
        self.commit_op(Operation::Project(pb::transaction::Project {
            schema: fields,
            preserves_nullability: !tightened,
        }))
    }

    /// Changes the type of top-level columns (`(name, type)`): each gets a new field id
    /// at the same place in the schema and a new data file per fragment with its values
    /// cast (a value that does not fit is an error, nothing is committed); the old files
    /// stay until cleanup. A column an index covers is refused, as pylance refuses it.
    pub fn cast_columns(&self, casts: &[(&str, arrow_schema::DataType)]) -> Result<Dataset> {
        self.check_writable("change column types of")?;
        let m = &self.manifest().pb;
        let mut fields = m.fields.clone();
        let mut next = max_field_id(m) + 1;
        let mut out_fields = Vec::new();
        let mut out_ids = Vec::new();
        let mut names = Vec::new();
        let mut nested: Vec<NestedCast> = Vec::new();
        for (name, to) in casts {
            let i = find(&fields, name)?;
            let old_id = fields[i].id;
            let arrow = self.schema();
            let steps: Vec<&str> = name.split('.').collect();
            let from = nested_field(&arrow, &steps, name)?;
            if from.data_type() == to {
                continue;
            }
            if !(arrow_cast::can_cast_types(from.data_type(), to)
                && same_family(from.data_type(), to))
            {
                return Err(TableError::invalid(format!(
                    "Cannot cast column {name:?} from {} to {to}: a column keeps its \
                     kind (integers to integers, floats to floats, strings to strings, dates \
                     and times to dates and times, ...); add a computed column instead \
                     (add_columns with CAST)",
                    from.data_type()
                )));
            }
            let indexed: Vec<String> = self
                .indices()?
                .iter()
                .filter(|x| x.fields.contains(&old_id))
                .map(|x| x.name.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            if !indexed.is_empty() {
                return Err(TableError::invalid(format!(
                    "cannot cast column {name:?} to a new type: it has {} index(es) attached: [{}]. A cast rewrites the column and invalidates its indexes: drop them, cast, then recreate them",
                    indexed.len(),
                    indexed.join(", ")
                )));
            }
            let leaf_name = steps[steps.len() - 1];
            let field = arrow_schema::Field::new(leaf_name, to.clone(), from.is_nullable());
            let one = Schema::new(vec![field.clone()]);
            let count = wschema::pb_schema(&one)?.fields.len() as i32;
            let ids: Vec<i32> = (next..next + count).collect();
            next += count;
            let mut new = wschema::pb_schema_with_ids(&one, &ids)?.fields;
            // same place, same name; the old field and its children leave
            let gone = subtree(&fields, old_id);
            for f in &mut new {
                if f.parent_id == -1 {
                    f.parent_id = fields[i].parent_id;
                }
            }
            fields.splice(i..i + 1, new);
            fields.retain(|f| !gone.contains(&f.id) || f.id >= ids[0]);
            if steps.len() > 1 {
                // a file of its own: the enclosing structs (their ids) with only this
                // field inside, as pylance writes a nested cast
                let mut chain = Vec::new();
                let mut parent = -1;
                for step in &steps[..steps.len() - 1] {
                    let Some(f) = fields
                        .iter()
                        .find(|f| f.parent_id == parent && f.name == *step)
                    else {
                        return Err(TableError::invalid(format!("no column {name:?}")));
                    };
                    chain.push(f.id);
                    parent = f.id;
                }
                let mut file_field = field;
                for k in (1..steps.len()).rev() {
                    let outer = nested_field(&arrow, &steps[..k], name)?;
                    if !matches!(outer.data_type(), arrow_schema::DataType::Struct(_)) {
                        return Err(TableError::invalid(format!(
                            "cannot cast {name:?}: {:?} is {}, and only fields of structs are cast in place",
                            steps[..k].join("."),
                            outer.data_type()
                        )));
                    }
                    file_field = arrow_schema::Field::new(
                        steps[k - 1],
                        arrow_schema::DataType::Struct(vec![file_field].into()),
                        outer.is_nullable(),
                    );
                }
                chain.extend(ids);
                nested.push(NestedCast {
                    path: name.to_string(),
                    schema: std::sync::Arc::new(Schema::new(vec![file_field])),
                    ids: chain,
                });
                continue;
            }
            out_fields.push(field);
            out_ids.extend(ids);
            names.push(name.to_string());
        }
        if out_fields.is_empty() && nested.is_empty() {
            return self.at_version(self.version());
        }
        let out_schema: SchemaRef = std::sync::Arc::new(Schema::new(out_fields.clone()));
        let read: Vec<&str> = names.iter().map(String::as_str).collect();
        let opts = arrow_cast::CastOptions {
            safe: false,
            ..Default::default()
        };
        let frags = crate::par::try_map(self.fragments(), |frag| {
            let all = 0..frag.physical_rows;
            let mut f = frag.clone();
            for n in &nested {
                let steps: Vec<&str> = n.path.split('.').collect();
                let input = self.read_runs(frag, Some(&steps[..1]), std::slice::from_ref(&all))?;
                let (outer, leaf) = descend(input.column(0), &steps[1..], &n.path)?;
                let mut field = n.schema.field(0).clone();
                let mut types = Vec::new();
                while let arrow_schema::DataType::Struct(fs) = field.data_type().clone() {
                    types.push(fs.clone());
                    field = fs[0].as_ref().clone();
                }
                let mut col = arrow_cast::cast_with_options(&leaf, field.data_type(), &opts)
                    .map_err(|e| {
                        TableError::invalid(format!(
                            "a value of column {:?} does not fit {}: {e}",
                            n.path,
                            field.data_type()
                        ))
                    })?;
                for (fs, nulls) in types.into_iter().zip(outer).rev() {
                    col = std::sync::Arc::new(arrow_array::StructArray::try_new(
                        fs,
                        vec![col],
                        nulls,
                    )?);
                }
                let b = RecordBatch::try_new(n.schema.clone(), vec![col])?;
                f.files.push(self.write_data_file(&n.schema, &n.ids, &[b])?);
            }
            if out_fields.is_empty() {
                return Ok(f);
            }
            let input = self.read_runs(frag, Some(&read), std::slice::from_ref(&all))?;
            let mut cols = Vec::with_capacity(out_fields.len());
            for (c, f) in input.columns().iter().zip(&out_fields) {
                cols.push(
                    arrow_cast::cast_with_options(c, f.data_type(), &opts).map_err(|e| {
                        TableError::invalid(format!(
                            "a value of column {:?} does not fit {}: {e}",
                            f.name(),
                            f.data_type()
                        ))
                    })?,
                );
            }
            let b = RecordBatch::try_new(out_schema.clone(), cols)?;
            let file = self.write_data_file(&out_schema, &out_ids, &[b])?;
            f.files.push(file);
            Ok(f)
        })?;
        crate::commit::crash_point("after-data");
        self.commit_op(Operation::Merge(pb::transaction::Merge {
            fragments: frags,
            schema: fields,
            schema_metadata: m.schema_metadata.clone(),
            preserves_nullability: true,
        }))
    }

    /// Errors if the live rows of `path` (a column or a dotted path into structs) hold
    /// a null where every enclosing struct is valid.
    fn check_no_nulls(&self, path: &str) -> Result<()> {
        let steps: Vec<&str> = path.split('.').collect();
        for frag in self.fragments() {
            let runs = self.kept_runs(frag)?;
            let b = self.read_runs(frag, Some(&steps[..1]), runs.runs())?;
            let (outer, leaf) = descend(b.column(0), &steps[1..], path)?;
            let valid = |i: usize| {
                outer
                    .iter()
                    .all(|n| n.as_ref().is_none_or(|n| n.is_valid(i)))
            };
            if (0..leaf.len()).any(|i| leaf.is_null(i) && valid(i)) {
                return Err(TableError::invalid(format!(
                    "column {path:?} holds nulls and cannot be made non-nullable"
                )));
            }
        }
        Ok(())
    }

    /// Adds columns of `schema` whose values are null in every row: no data is written
    /// (a field without a data file reads as null). Every field must be nullable.
    pub fn add_null_columns(&self, schema: &Schema) -> Result<Dataset> {
        if self.is_legacy_storage() {
            self.check_writable("add columns to")?;
        }
        if let Some(f) = schema.fields().iter().find(|f| !f.is_nullable()) {
            return Err(TableError::invalid(format!(
                "column {:?} is added as all-null, so it must be nullable",
                f.name()
            )));
        }
        let (fields, _) = self.with_new_fields(schema)?;
        self.commit_op(Operation::Merge(pb::transaction::Merge {
            fragments: self.fragments().to_vec(),
            schema: fields,
            schema_metadata: self.manifest().pb.schema_metadata.clone(),
            preserves_nullability: true,
        }))
    }

    /// The manifest's fields plus those of `schema` (ids above [`max_field_id`]), and
    /// the new fields' ids in schema order.
    fn with_new_fields(&self, schema: &Schema) -> Result<(Vec<PbField>, Vec<i32>)> {
        if schema.fields().is_empty() {
            return Err(TableError::invalid("no column to add"));
        }
        let mut fields = self.manifest().pb.fields.clone();
        for f in schema.fields() {
            if fields
                .iter()
                .any(|x| x.parent_id == -1 && x.name == *f.name())
            {
                return Err(TableError::invalid(format!(
                    "a column named {:?} exists already",
                    f.name()
                )));
            }
        }
        let count = wschema::pb_schema(schema)?.fields.len();
        let first = max_field_id(&self.manifest().pb) + 1;
        let ids: Vec<i32> = (first..first + count as i32).collect();
        let new = wschema::pb_schema_with_ids(schema, &ids)?;
        fields.extend(new.fields);
        Ok((fields, ids))
    }

    /// Adds the columns `schema` whose values `compute` returns for a batch of the
    /// columns `read` (all when `None`) of every physical row of a fragment, deleted
    /// rows included: one new data file per fragment. `compute`'s error comes back
    /// unchanged.
    pub fn add_columns_with<E: From<TableError> + Send>(
        &self,
        schema: SchemaRef,
        read: Option<&[&str]>,
        compute: impl Fn(&RecordBatch) -> std::result::Result<RecordBatch, E> + Sync,
    ) -> std::result::Result<Dataset, E> {
        self.add_columns_progress(schema, read, compute, &|_, _| {})
    }

    /// [`Self::add_columns_with`], calling `progress(fragments done, fragments)`.
    pub fn add_columns_progress<E: From<TableError> + Send>(
        &self,
        schema: SchemaRef,
        read: Option<&[&str]>,
        compute: impl Fn(&RecordBatch) -> std::result::Result<RecordBatch, E> + Sync,
        progress: crate::par::Progress<'_>,
    ) -> std::result::Result<Dataset, E> {
        self.check_writable("add columns to")?;
        let (fields, ids) = self.with_new_fields(&schema)?;
        // every fragment on every core
        let frags = crate::par::map_progress(
            self.fragments(),
            |frag| self.fragment_with_columns(frag, &schema, &ids, read, &compute),
            progress,
        )?;
        crate::commit::crash_point("after-data");
        Ok(self.commit_op(Operation::Merge(pb::transaction::Merge {
            fragments: frags,
            schema: fields,
            schema_metadata: self.manifest().pb.schema_metadata.clone(),
            preserves_nullability: true,
        }))?)
    }

    /// `frag` with a new data file of `schema`'s columns (fields numbered `ids`)
    /// computed by `compute` from its rows' `read` columns (deleted rows included).
    fn fragment_with_columns<E: From<TableError>>(
        &self,
        frag: &pb::DataFragment,
        schema: &SchemaRef,
        ids: &[i32],
        read: Option<&[&str]>,
        compute: &(impl Fn(&RecordBatch) -> std::result::Result<RecordBatch, E> + Sync),
    ) -> std::result::Result<pb::DataFragment, E> {
        let all = 0..frag.physical_rows;
        let input = self.read_runs(frag, read, std::slice::from_ref(&all))?;
        let out = compute(&input)?;
        if out.num_rows() != input.num_rows() {
            return Err(TableError::invalid(format!(
                "{} values computed for the {} rows of fragment {}: a function adding columns returns one row per row it is given",
                out.num_rows(),
                input.num_rows(),
                frag.id
            ))
            .into());
        }
        let out = conform(&out, schema)?;
        let file = self.write_data_file(schema, ids, &[out])?;
        let mut f = frag.clone();
        f.files.push(file);
        Ok(f)
    }

    /// Fragment `id` of this version; another id is the caller's mistake, named.
    fn fragment_of_version(&self, id: u64) -> Result<&pb::DataFragment> {
        self.fragments().iter().find(|f| f.id == id).ok_or_else(|| {
            TableError::invalid(format!(
                "fragment {id} is not in version {} of the dataset",
                self.version()
            ))
        })
    }

    /// One worker's share of a distributed `add_columns` (pylance's
    /// `LanceFragment.merge_columns`): fragment `id` with a new data file of `schema`'s
    /// columns computed by `compute` from its rows, nothing committed. The new fields
    /// are numbered as [`Self::add_columns_with`] numbers them on this version (after
    /// the largest field id, in pre-order), so every worker's files agree and a `Merge`
    /// of all the fragments with the dataset's schema plus `schema` commits them.
    pub fn add_columns_to_fragment<E: From<TableError>>(
        &self,
        id: u64,
        schema: SchemaRef,
        read: Option<&[&str]>,
        compute: impl Fn(&RecordBatch) -> std::result::Result<RecordBatch, E> + Sync,
    ) -> std::result::Result<pb::DataFragment, E> {
        self.check_writable("add columns to")?;
        let (_, ids) = self.with_new_fields(&schema)?;
        let frag = self.fragment_of_version(id)?;
        self.fragment_with_columns(frag, &schema, &ids, read, &compute)
    }

    /// One worker's share of pylance's `LanceFragment.update_columns`: fragment `id`
    /// with a new data file of new values for the existing columns `columns` (computed
    /// by `compute` from a batch of the columns `read` of every physical row, deleted
    /// ones included; returned in the dataset's types), their fields tombstoned (`-2`)
    /// in the files that held them. Nothing is committed: with the returned field ids
    /// (the new file's columns) a `LanceOperation.Update` commits it.
    pub fn rewrite_fragment_columns<E: From<TableError>>(
        &self,
        id: u64,
        columns: &[&str],
        read: Option<&[&str]>,
        compute: impl Fn(&RecordBatch) -> std::result::Result<RecordBatch, E> + Sync,
    ) -> std::result::Result<(pb::DataFragment, Vec<i32>), E> {
        self.check_writable("update columns of")?;
        if columns.is_empty() {
            return Err(TableError::invalid("no column to update").into());
        }
        let arrow = self.schema();
        let pbf = &self.manifest().pb.fields;
        let mut fields = Vec::with_capacity(columns.len());
        let mut ids = Vec::new();
        for c in columns {
            let top = pbf
                .iter()
                .find(|f| f.parent_id == -1 && f.name == *c)
                .ok_or_else(|| {
                    TableError::invalid(format!("the dataset has no column {c:?} to update"))
                })?;
            fields.push(
                arrow
                    .field_with_name(c)
                    .map_err(|_| TableError::invalid(format!("no column {c:?}")))?
                    .clone(),
            );
            // the column's field and its descendants, parents before children
            let mut stack = vec![top.id];
            while let Some(f) = stack.pop() {
                ids.push(f);
                let children: Vec<i32> = pbf
                    .iter()
                    .filter(|x| x.parent_id == f)
                    .map(|x| x.id)
                    .collect();
                stack.extend(children.into_iter().rev());
            }
        }
        let schema: SchemaRef = std::sync::Arc::new(Schema::new(fields));
        let frag = self.fragment_of_version(id)?;
        let mut out = self.fragment_with_columns(frag, &schema, &ids, read, &compute)?;
        let written = out
            .files
            .last()
            .map(|f| f.fields.clone())
            .unwrap_or_default();
        let n = out.files.len();
        for f in &mut out.files[..n.saturating_sub(1)] {
            for x in &mut f.fields {
                if written.contains(x) {
                    *x = -2;
                }
            }
        }
        Ok((out, written))
    }

    /// Adds the columns of `batches`: one value per live row, in the dataset's order
    /// (fragment by fragment, deleted rows skipped), as pylance's `add_columns` with a
    /// reader. Fewer or more rows than the dataset's live rows is the caller's error
    /// and nothing is committed. The input is read as it comes: memory holds one
    /// fragment's values.
    pub fn add_columns_from_stream(
        &self,
        schema: SchemaRef,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
    ) -> Result<Dataset> {
        self.check_writable("add columns to")?;
        let (fields, ids) = self.with_new_fields(&schema)?;
        let live_total = self.count_rows();
        let mut input = batches.into_iter();
        // the batch being consumed and the rows of it already used
        let mut current: Option<(RecordBatch, usize)> = None;
        let mut taken: u64 = 0;
        let mut frags = Vec::with_capacity(self.fragments().len());
        for frag in self.fragments() {
            let deleted = self.deletions(frag)?;
            let live = frag.physical_rows.saturating_sub(deleted.len());
            let mut parts = Vec::new();
            let mut need = live as usize;
            while need > 0 {
                let (b, used) = match current.take() {
                    Some((b, used)) if used < b.num_rows() => (b, used),
                    _ => match input.next() {
                        Some(b) => (conform(&b?, &schema)?, 0),
                        None => {
                            return Err(TableError::invalid(format!(
                                "the data ended after {taken} rows, before a value for each of the dataset's {live_total} live rows: give one row per live row, in the dataset's order"
                            )))
                        }
                    },
                };
                let k = need.min(b.num_rows() - used);
                parts.push(b.slice(used, k));
                need -= k;
                taken += k as u64;
                current = Some((b, used + k));
            }
            if live == 0 && frag.physical_rows > 0 {
                if let Some(f) = schema.fields().iter().find(|f| !f.is_nullable()) {
                    return Err(TableError::invalid(format!(
                        "fragment {} has every row deleted, and the new column {:?} is not nullable: compact the dataset first (optimize.compact_files) or add the column as nullable",
                        frag.id,
                        f.name()
                    )));
                }
            }
            let values = arrow_select::concat::concat_batches(&schema, &parts)?;
            let out = if deleted.is_empty() {
                values
            } else {
                // physical positions: deleted rows repeat a live row's value (they are
                // never read), so non-nullable columns stay valid
                let mut next = 0u32;
                let idx: arrow_array::UInt32Array = (0..frag.physical_rows)
                    .map(|p| {
                        if deleted.contains(p as u32) {
                            (live > 0).then_some(0)
                        } else {
                            next += 1;
                            Some(next - 1)
                        }
                    })
                    .collect();
                let cols = values
                    .columns()
                    .iter()
                    .map(|c| arrow_select::take::take(c, &idx, None))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                RecordBatch::try_new(schema.clone(), cols)?
            };
            let file = self.write_data_file(&schema, &ids, &[out])?;
            let mut f = frag.clone();
            f.files.push(file);
            frags.push(f);
        }
        let more = match current {
            Some((b, used)) if used < b.num_rows() => true,
            _ => loop {
                match input.next() {
                    Some(b) => {
                        if b?.num_rows() > 0 {
                            break true;
                        }
                    }
                    None => break false,
                }
            },
        };
        if more {
            return Err(TableError::invalid(format!(
                "the data has more rows than the dataset's {live_total} live rows: give one row per live row, in the dataset's order"
            )));
        }
        crate::commit::crash_point("after-data");
        self.commit_op(Operation::Merge(pb::transaction::Merge {
            fragments: frags,
            schema: fields,
            schema_metadata: self.manifest().pb.schema_metadata.clone(),
            preserves_nullability: true,
        }))
    }

    /// Writes `batches` (of `schema`, fields numbered `ids` in pre-order) as one data
    /// file under `data/`.
    pub(crate) fn write_data_file(
        &self,
        schema: &SchemaRef,
        ids: &[i32],
        batches: &[RecordBatch],
    ) -> Result<pb::DataFile> {
        let name = format!("{}.lance", random_hex(40));
        let storage = self.storage_version();
        let opts = FileOptions {
            version: storage,
            field_ids: Some(ids.to_vec()),
            ..Default::default()
        };
        let mut w = lancer_io::DataWriter::create(
            self.store(),
            &format!("data/{name}"),
            schema.clone(),
            opts,
        )?;
        for b in batches {
            w.write_batch(b)?;
        }
        let size = w.finish()?;
        let pbs = wschema::pb_schema_with_ids(schema, ids)?;
        let lance = lancer_format::schema::LanceSchema::from_pb(&pbs)?;
        let mut leaves = Vec::new();
        for f in &lance.fields {
            crate::write::column_ids(f, storage, &mut leaves);
        }
        let (major, minor) = storage.numbers();
        Ok(pb::DataFile {
            path: name,
            column_indices: (0..leaves.len() as i32).collect(),
            fields: leaves,
            file_major_version: u32::from(major),
            file_minor_version: u32::from(minor),
            file_size_bytes: size,
            base_id: None,
        })
    }

    /// Updates the rows `matches` selects: `assign` turns a batch of them (every
    /// column) into their new values (the dataset's schema). The old copies are
    /// marked deleted and the new ones written as new fragments (pylance's
    /// REWRITE_ROWS update); `set_columns` names the columns assigned (recorded for
    /// index bookkeeping). Nothing matched still commits a version, as pylance does.
    pub fn update_rows<E: From<TableError> + Send>(
        &self,
        set_columns: &[&str],
        filter_columns: Option<&[&str]>,
        matches: impl Fn(&RecordBatch) -> std::result::Result<BooleanArray, E> + Sync,
        assign: impl Fn(&RecordBatch) -> std::result::Result<RecordBatch, E> + Sync,
    ) -> std::result::Result<(Dataset, UpdateStats), E> {
        self.update_rows_progress(set_columns, filter_columns, matches, assign, &|_, _| {})
    }

    /// [`Self::update_rows`], calling `progress(fragments done, fragments)`.
    pub fn update_rows_progress<E: From<TableError> + Send>(
        &self,
        set_columns: &[&str],
        filter_columns: Option<&[&str]>,
        matches: impl Fn(&RecordBatch) -> std::result::Result<BooleanArray, E> + Sync,
        assign: impl Fn(&RecordBatch) -> std::result::Result<RecordBatch, E> + Sync,
        progress: crate::par::Progress<'_>,
    ) -> std::result::Result<(Dataset, UpdateStats), E> {
        self.check_writable("update")?;
        let stable = self.uses_stable_row_ids();
        let schema = self.schema();
        let mut preserving = Vec::new();
        for c in set_columns {
            let i = find(&self.manifest().pb.fields, c)?;
            preserving.push(self.manifest().pb.fields[i].id as u32);
        }
        let mut updated = Vec::new();
        let mut removed = Vec::new();
        let mut new_rows: Vec<RecordBatch> = Vec::new();
        let mut stats = UpdateStats::default();
        // per fragment, on every core: the filter's columns of the live rows, then every
        // column of the matched rows only, and their new values
        let found = crate::par::map_progress(
            self.fragments(),
            |frag| -> std::result::Result<Option<(Vec<u32>, RecordBatch)>, E> {
                let runs = self.kept_runs(frag)?;
                let hit: Vec<u64> = match filter_columns {
                    None => runs.runs().iter().flat_map(|r| r.clone()).collect(),
                    Some(cols) => {
                        let live = self.read_runs(frag, Some(cols), runs.runs())?;
                        let mask = matches(&live)?;
                        if mask.len() != live.num_rows() {
                            return Err(TableError::corrupt(
                                "the update filter returned the wrong number of rows",
                            )
                            .into());
                        }
                        let mut hit = Vec::new();
                        for i in (0..mask.len()).filter(|&i| mask.is_valid(i) && mask.value(i)) {
                            hit.push(runs.locate(i as u64).ok_or_else(|| {
                                TableError::corrupt("a live row outside its fragment")
                            })?);
                        }
                        hit
                    }
                };
                if hit.is_empty() {
                    return Ok(None);
                }
                // the matched rows as runs of physical rows
                let mut spans: Vec<std::ops::Range<u64>> = Vec::new();
                for &o in &hit {
                    match spans.last_mut() {
                        Some(r) if r.end == o => r.end = o + 1,
                        _ => spans.push(o..o + 1),
                    }
                }
                let rows = self.read_runs(frag, None, &spans)?;
                let new = assign(&rows)?;
                if new.num_rows() != rows.num_rows() {
                    return Err(TableError::corrupt(
                        "the update returned the wrong number of rows",
                    )
                    .into());
                }
                let offsets = hit.iter().map(|&o| o as u32).collect();
                Ok(Some((offsets, conform(&new, &schema)?)))
            },
            progress,
        )?;
        // with stable row ids the moved rows keep their ids and created-at versions
        let mut carried_ids: Vec<u64> = Vec::new();
        let mut carried_created: Vec<u64> = Vec::new();
        for (frag, found) in self.fragments().iter().zip(found) {
            let Some((offsets, rows)) = found else {
                continue;
            };
            stats.rows_updated += offsets.len() as u64;
            new_rows.push(rows);
            if stable {
                let (ids, created) = row_ids_and_created(self, frag)?;
                for &o in &offsets {
                    carried_ids.push(ids.get(o as usize).copied().ok_or_else(|| {
                        TableError::corrupt(format!("fragment {} lacks row ids", frag.id))
                    })?);
                    carried_created.push(created.get(o as usize).copied().unwrap_or(0));
                }
            }
            let mut del = self.deletions(frag)?;
            del.extend(offsets);
            self.record_deletions(frag, &del, &mut updated, &mut removed)?;
        }
        stats.fragments_removed = removed.len();
        let mut params = crate::write::WriteParams {
            storage: self.storage_version(),
            ..Default::default()
        };
        params.blobs.bases = self.blob_bases();
        let ids: Vec<i32> = crate::write::preorder_schema_ids(self);
        let mut new_fragments = crate::write::write_fragments(
            self.store(),
            &schema,
            new_rows.into_iter().map(Ok),
            &params,
            Some(ids),
            &[],
        )?;
        if stable {
            carry_rows(&mut new_fragments, &carried_ids, &carried_created);
        }
        stats.fragments_written = new_fragments.len();
        let op = Operation::Update(pb::transaction::Update {
            removed_fragment_ids: removed,
            updated_fragments: updated,
            new_fragments,
            fields_modified: vec![],
            fields_for_preserving_frag_bitmap: preserving,
            update_mode: pb::transaction::UpdateMode::RewriteRows as i32,
        });
        Ok((self.commit_op(op)?, stats))
    }
}

/// `b` with `schema`'s field names and nullability (the values' types must match;
/// a computed column's nullability follows the declared schema).
fn conform(b: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if b.num_columns() != schema.fields().len() {
        return Err(TableError::invalid(format!(
            "{} columns computed for {} declared",
            b.num_columns(),
            schema.fields().len()
        )));
    }
    for (c, f) in b.columns().iter().zip(schema.fields()) {
        if c.data_type() != f.data_type() {
            return Err(TableError::invalid(format!(
                "column {:?} is {}, its values are {}",
                f.name(),
                f.data_type(),
                c.data_type()
            )));
        }
        if !f.is_nullable() && c.logical_null_count() > 0 {
            return Err(TableError::invalid(format!(
                "column {:?} is not nullable and a value is null",
                f.name()
            )));
        }
    }
    Ok(RecordBatch::try_new(schema.clone(), b.columns().to_vec())?)
}

/// Whether the reference changes a column of type `from` to `to` in place: within one
/// kind of value only (integers, floats, dates and times, strings, binaries, decimals,
/// booleans; lists by their items).
fn same_family(from: &arrow_schema::DataType, to: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType::*;
    match from {
        f if f.is_integer() => to.is_integer(),
        f if f.is_floating() => to.is_floating(),
        f if f.is_temporal() => to.is_temporal(),
        Boolean => matches!(to, Boolean),
        Utf8 | LargeUtf8 => matches!(to, Utf8 | LargeUtf8),
        Binary | LargeBinary => matches!(to, Binary | LargeBinary),
        Decimal128(..) | Decimal256(..) => matches!(to, Decimal128(..) | Decimal256(..)),
        List(a) | LargeList(a) | FixedSizeList(a, _) => match to {
            List(b) | LargeList(b) | FixedSizeList(b, _) => {
                same_family(a.data_type(), b.data_type())
            }
            _ => false,
        },
        _ => false,
    }
}
