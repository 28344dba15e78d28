//! Schema evolution and updates with SQL (docs/evolution-format.md §3; pylance's
//! `add_columns`, `drop_columns`, `alter_columns`, `update`): columns computed from SQL
//! expressions over the existing ones, all-null columns, drops, renames and
//! nullability changes, and `UPDATE … SET col = expr WHERE …`. The commits are the
//! table layer's (`lancer_table::evolution`): pylance reads what they write.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::evolution::{ColumnChange, UpdateStats};

use crate::{Dataset, Error, Expression, Filter, Result};

/// Adds one column per `(name, sql)`: its values are the expression evaluated on each
/// row (deleted rows included, as pylance does). Nothing else is rewritten. With
/// `progress`, calls it with `(fragments done, fragments)` from the workers.
pub fn add_columns(
    ds: &Dataset,
    columns: &[(&str, &str)],
    progress: Option<lancer_table::par::Progress<'_>>,
) -> Result<Dataset> {
    let progress = progress.unwrap_or(&|_, _| {});
    let schema = ds.schema();
    let mut exprs = Vec::with_capacity(columns.len());
    let mut fields = Vec::with_capacity(columns.len());
    for (name, sql) in columns {
        if name.is_empty() || name.contains('.') {
            return Err(Error::InvalidArgument {
                what: format!("{name:?} is not a column name (empty, or with a dot)"),
            });
        }
        // (a bare NULL makes a column of Arrow's null type, as in the reference)
        let e = Expression::new(sql, &schema)?;
        fields.push(Field::new(*name, e.data_type().clone(), e.nullable()));
        exprs.push(e);
    }
    let mut read: Vec<&str> = Vec::new();
    for e in &exprs {
        for c in e.columns() {
            if !read.contains(&c.as_str()) {
                read.push(c);
            }
        }
    }
    // an expression reading no column still needs the row count: read the first
    if read.is_empty() {
        if let Some(f) = schema.fields().first() {
            read.push(f.name());
        }
    }
    let out_schema = Arc::new(Schema::new(fields));
    let compute = |b: &RecordBatch| -> Result<RecordBatch> {
        let cols: Vec<ArrayRef> = exprs.iter().map(|e| e.evaluate(b)).collect::<Result<_>>()?;
        Ok(RecordBatch::try_new(out_schema.clone(), cols)?)
    };
    ds.add_columns_progress(out_schema.clone(), Some(&read), compute, progress)
}

/// Adds all-null columns (nullable fields of `schema`); no data is written.
pub fn add_null_columns(ds: &Dataset, schema: &Schema) -> Result<Dataset> {
    Ok(ds.add_null_columns(schema)?)
}

/// Drops columns (names or dotted struct paths).
pub fn drop_columns(ds: &Dataset, columns: &[&str]) -> Result<Dataset> {
    Ok(ds.drop_columns(columns)?)
}

/// Renames columns and changes their nullability.
pub fn alter_columns(ds: &Dataset, changes: &[ColumnChange]) -> Result<Dataset> {
    Ok(ds.alter_columns(changes)?)
}

/// One change of pylance's `alter_columns`: a column (or struct field, by dotted path)
/// renamed, made (non-)nullable and / or cast to another type.
#[derive(Clone, Debug, Default)]
pub struct Alteration {
    /// The column: a top-level name or a dotted path to a struct's field.
    pub path: String,
    /// Its new name.
    pub rename: Option<String>,
    /// Its new nullability.
    pub nullable: Option<bool>,
    /// Its new type (within its kind of values: see [`cast_columns`]).
    pub data_type: Option<DataType>,
}

/// pylance's `alter_columns`: every path is checked first, so a change naming a
/// missing column changes nothing; the casts are then committed (one version, new
/// data files) and the renames and nullability (another version, no data written).
pub fn alter(ds: &Dataset, alterations: &[Alteration]) -> Result<Dataset> {
    let paths: Vec<&str> = alterations.iter().map(|a| a.path.as_str()).collect();
    ds.check_paths(&paths)?;
    let casts: Vec<(&str, DataType)> = alterations
        .iter()
        .filter_map(|a| a.data_type.clone().map(|t| (a.path.as_str(), t)))
        .collect();
    let changes: Vec<ColumnChange> = alterations
        .iter()
        .filter(|a| a.rename.is_some() || a.nullable.is_some())
        .map(|a| ColumnChange {
            path: a.path.clone(),
            rename: a.rename.clone(),
            nullable: a.nullable,
        })
        .collect();
    let mut cur = ds.clone();
    if !casts.is_empty() {
        cur = cast_columns(&cur, &casts)?;
    }
    if !changes.is_empty() {
        cur = alter_columns(&cur, &changes)?;
    }
    Ok(cur)
}

/// Changes column types (pylance's `alter_columns(... data_type=...)`): new field ids
/// and one new data file per fragment with the cast values.
pub fn cast_columns(ds: &Dataset, casts: &[(&str, DataType)]) -> Result<Dataset> {
    Ok(ds.cast_columns(casts)?)
}

/// `UPDATE ds SET col = expr, … [WHERE filter]`: each expression is evaluated on the
/// matching rows' old values and cast to its column's type (a value that does not fit
/// is an error, nothing is changed). Returns the new version and what changed. With
/// `progress`, calls it with `(fragments done, fragments)` from the workers.
pub fn update(
    ds: &Dataset,
    filter: Option<&str>,
    set: &[(&str, &str)],
    progress: Option<lancer_table::par::Progress<'_>>,
) -> Result<(Dataset, UpdateStats)> {
    let progress = progress.unwrap_or(&|_, _| {});
    if set.is_empty() {
        return Err(Error::InvalidArgument {
            what: "an update needs at least one `column = expression`".into(),
        });
    }
    let schema = ds.schema();
    let mut assigns: Vec<(usize, Expression)> = Vec::with_capacity(set.len());
    for (col, sql) in set {
        let i = schema.index_of(col).map_err(|_| Error::InvalidArgument {
            what: format!(
                "no column {col:?} to set (columns: {})",
                crate::scan::columns::column_names(&schema)
            ),
        })?;
        if assigns.iter().any(|(j, _)| *j == i) {
            return Err(Error::InvalidArgument {
                what: format!("column {col:?} is set twice"),
            });
        }
        let e = Expression::new(sql, &schema)?;
        let target = schema.field(i).data_type();
        if e.data_type() != target
            && *e.data_type() != DataType::Null
            && !arrow_cast::can_cast_types(e.data_type(), target)
        {
            return Err(Error::Expression {
                expression: sql.to_string(),
                message: format!(
                    "its values are {}, column {col:?} is {target}, and one cannot be cast to the other",
                    e.data_type()
                ),
            });
        }
        // a constant is cast to the column's type now, as the reference plans it: a
        // value that does not fit is an error even when no row matches
        if e.columns().is_empty() && e.data_type() != target {
            let one = RecordBatch::try_new_with_options(
                Arc::new(Schema::empty()),
                vec![],
                &arrow_array::RecordBatchOptions::new().with_row_count(Some(1)),
            )?;
            let strict = arrow_cast::CastOptions {
                safe: false,
                ..Default::default()
            };
            arrow_cast::cast_with_options(&e.evaluate(&one)?, target, &strict).map_err(|err| {
                Error::Expression {
                    expression: sql.to_string(),
                    message: format!("the value does not fit column {col:?} ({target}): {err}"),
                }
            })?;
        }
        assigns.push((i, e));
    }
    let filter = filter.map(|f| Filter::new(f, &schema)).transpose()?;
    let matches = |b: &RecordBatch| -> Result<BooleanArray> {
        match &filter {
            Some(f) => f.evaluate(b),
            None => Ok(BooleanArray::from(vec![true; b.num_rows()])),
        }
    };
    let assign = |b: &RecordBatch| -> Result<RecordBatch> {
        let mut cols: Vec<ArrayRef> = b.columns().to_vec();
        for (i, e) in &assigns {
            let v = e.evaluate(b)?;
            let target = schema.field(*i).data_type();
            let v = if v.data_type() == target {
                v
            } else {
                let opts = arrow_cast::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                arrow_cast::cast_with_options(&v, target, &opts).map_err(|err| {
                    Error::Expression {
                        expression: e.sql().to_string(),
                        message: format!("a value does not fit column type {target}: {err}"),
                    }
                })?
            };
            if !schema.field(*i).is_nullable() && v.logical_null_count() > 0 {
                return Err(Error::Expression {
                    expression: e.sql().to_string(),
                    message: format!(
                        "it gives null for a row and column {:?} is not nullable",
                        schema.field(*i).name()
                    ),
                });
            }
            cols[*i] = v;
        }
        Ok(RecordBatch::try_new(b.schema(), cols)?)
    };
    let names: Vec<&str> = set.iter().map(|(c, _)| *c).collect();
    // the filter's columns first (a filter on no column, `true`, reads the first)
    let filter_cols: Option<Vec<&str>> = filter.as_ref().map(|f| {
        let mut c: Vec<&str> = f.columns().iter().map(String::as_str).collect();
        if c.is_empty() {
            c.extend(schema.fields().first().map(|f| f.name().as_str()));
        }
        c
    });
    ds.update_rows_progress(&names, filter_cols.as_deref(), matches, assign, progress)
}

/// Compacts the dataset (pylance's `optimize.compact_files`; see
/// `lancer_table::evolution`): `progress(done, tasks)` as tasks finish. Each index that
/// covered the rewritten fragments then gets a segment over the fragments written in
/// their place (its old segments still name the old fragments, whose rows are gone), so
/// the index covers what it covered before — one more version per index.
pub fn compact_files(
    ds: &Dataset,
    opts: &lancer_table::evolution::CompactionOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Dataset, lancer_table::evolution::CompactionStats)> {
    let (after, stats) = ds.compact_files(opts, progress)?;
    if after.version() == ds.version() {
        return Ok((after, stats));
    }
    let after = reindex_compacted(ds, after, &stats.groups)?;
    Ok((after, stats))
}

/// After a compaction of `before` committed as `after` (its `groups`: the fragment ids
/// rewritten and those written in their place), each index that covered rewritten
/// fragments covers their new ones (see [`compact_files`]). Shared by the local and the
/// distributed compaction ([`crate::write::compaction`]).
pub fn reindex_compacted(
    before: &Dataset,
    mut after: Dataset,
    groups: &[(Vec<u64>, Vec<u64>)],
) -> Result<Dataset> {
    use std::collections::BTreeMap;
    // per index name, the fragments it covered
    let mut covered: BTreeMap<String, roaring::RoaringBitmap> = BTreeMap::new();
    for m in before.indices()? {
        if m.name.starts_with("__") {
            continue;
        }
        let b = roaring::RoaringBitmap::deserialize_from(m.fragment_bitmap.as_slice())
            .unwrap_or_default();
        *covered.entry(m.name.clone()).or_default() |= b;
    }
    if covered.is_empty() || groups.is_empty() {
        return Ok(after);
    }
    // the new fragments of each group whose old fragments an index covered (a
    // compaction bins fragments of the same coverage together)
    if after.uses_stable_row_ids() {
        // indexes hold row ids, which the rows kept: a segment covering a task's old
        // fragments covers its new ones instead (pylance 11 / 12 do the same)
        let mut updated = Vec::new();
        let mut removed = Vec::new();
        for m in after.indices()? {
            if m.name.starts_with("__") {
                continue;
            }
            let mut b = roaring::RoaringBitmap::deserialize_from(m.fragment_bitmap.as_slice())
                .unwrap_or_default();
            let mut changed = false;
            for (old, new) in groups {
                let olds: Vec<u32> = old
                    .iter()
                    .filter_map(|&id| u32::try_from(id).ok())
                    .collect();
                if !olds.is_empty() && olds.iter().all(|id| b.contains(*id)) {
                    for id in olds {
                        b.remove(id);
                    }
                    for &id in new {
                        b.insert(u32::try_from(id).unwrap_or(u32::MAX));
                    }
                    changed = true;
                }
            }
            if changed {
                let mut nm = m.clone();
                nm.fragment_bitmap.clear();
                b.serialize_into(&mut nm.fragment_bitmap)
                    .map_err(|e| Error::InvalidArgument {
                        what: format!("index bitmap: {e}"),
                    })?;
                updated.push(nm);
                removed.push(m.clone());
            }
        }
        if !updated.is_empty() {
            after = after.commit_indices(updated, removed)?;
        }
        return Ok(after);
    }
    for (name, frags) in &covered {
        let new: Vec<u64> = groups
            .iter()
            .filter(|(old, _)| {
                old.iter()
                    .all(|&id| u32::try_from(id).is_ok_and(|id| frags.contains(id)))
            })
            .flat_map(|(_, new)| new.iter().copied())
            .collect();
        if !new.is_empty() {
            after = crate::index::vector::extend_index(&after, name, Some(&new))?;
        }
    }
    Ok(after)
}

/// What `merge_insert` does (pylance's `when_matched_update_all`,
/// `when_matched_delete`, `when_matched_fail`, `when_not_matched_insert_all`,
/// `when_not_matched_by_source_delete`).
#[derive(Clone, Debug, Default)]
pub struct MergeOptions {
    /// Key columns.
    pub on: Vec<String>,
    /// Matched rows take the source's values.
    pub update_matched: bool,
    /// Matched rows are deleted (pylance's `when_matched_delete`); counted in
    /// `MergeStats::deleted`. At most one of `update_matched`, `delete_matched`,
    /// `fail_on_match`.
    pub delete_matched: bool,
    /// Any matched row stops the merge, nothing committed (pylance's
    /// `when_matched_fail`): a `TableError::Refused` naming the first matched key.
    pub fail_on_match: bool,
    /// Unmatched source rows are inserted.
    pub insert_unmatched: bool,
    /// Target rows no source row matched are deleted…
    pub delete_unmatched_by_source: bool,
    /// …those of them this SQL filter selects (all without one).
    pub delete_filter: Option<String>,
    /// Source bytes joined in memory at most (None: the default, 256 MiB); a larger
    /// source is streamed against the target's keys.
    pub source_in_memory: Option<usize>,
    /// Update only the matched rows this SQL condition selects, over `source.col` and
    /// `target.col` (pylance's `when_matched_update_all("source.x > target.x")`).
    pub update_condition: Option<String>,
    /// Scan the key columns even when scalar indexes on them could locate the matched
    /// rows (pylance's `use_index=False`).
    pub no_index: bool,
    /// Registered bases (by name or path) or the dataset's own location its new data
    /// files go to, one in turn (pylance's `target_bases`).
    pub target_bases: Vec<String>,
    /// Every registered base in turn, the dataset's location first when true
    /// (pylance's `target_all_bases(include_primary)`).
    pub target_all_bases: Option<bool>,
}

/// An error of this layer handed back through the table layer's callbacks.
fn into_table(e: Error) -> lancer_table::TableError {
    match e {
        Error::Table(t) => t,
        other => lancer_table::TableError::InvalidInput {
            what: other.to_string(),
        },
    }
}

/// Merges the `source` stream into `ds` keyed on `opts.on` (see
/// `lancer_table::evolution`): one new version; the source is never held whole.
pub fn merge_insert(
    ds: &Dataset,
    opts: &MergeOptions,
    source_schema: arrow_schema::SchemaRef,
    source: impl IntoIterator<Item = Result<RecordBatch>>,
) -> Result<(Dataset, lancer_table::evolution::MergeStats)> {
    run_merge(
        ds,
        opts,
        source_schema,
        source,
        |ds, spec, schema, batches| ds.merge_insert(spec, schema, batches),
    )
}

/// [`merge_insert`] without the commit (pylance's `execute_uncommitted`): the merge's
/// files are written and the [`crate::write::Operation::Update`] committing them is
/// returned, for [`crate::write::commit`] at `ds`'s version.
pub fn merge_insert_uncommitted(
    ds: &Dataset,
    opts: &MergeOptions,
    source_schema: arrow_schema::SchemaRef,
    source: impl IntoIterator<Item = Result<RecordBatch>>,
) -> Result<(crate::write::Operation, lancer_table::evolution::MergeStats)> {
    let (op, stats) = run_merge(
        ds,
        opts,
        source_schema,
        source,
        |ds, spec, schema, batches| ds.merge_insert_uncommitted(spec, schema, batches),
    )?;
    let lancer_table::pb::transaction::Operation::Update(u) = op else {
        return Err(Error::InvalidArgument {
            what: format!("a merge built a {op:?} operation, not an Update"),
        });
    };
    let op = crate::write::Operation::Update {
        removed_fragment_ids: u.removed_fragment_ids,
        updated_fragments: u.updated_fragments,
        new_fragments: u.new_fragments,
        fields_modified: u.fields_modified,
        fields_for_preserving_frag_bitmap: u.fields_for_preserving_frag_bitmap,
        rewrite_columns: u.update_mode
            == lancer_table::pb::transaction::UpdateMode::RewriteColumns as i32,
    };
    Ok((op, stats))
}

/// The batches of a merge's source, as the table layer takes them.
type SourceBatches<'a> = Box<dyn Iterator<Item = lancer_table::Result<RecordBatch>> + 'a>;

/// Checks `opts`, fits the source to the dataset's types and hands the table layer's
/// merge description to `run` (which commits, or not).
fn run_merge<T>(
    ds: &Dataset,
    opts: &MergeOptions,
    source_schema: arrow_schema::SchemaRef,
    source: impl IntoIterator<Item = Result<RecordBatch>>,
    run: impl FnOnce(
        &Dataset,
        &lancer_table::evolution::MergeInsert<'_>,
        arrow_schema::SchemaRef,
        SourceBatches<'_>,
    ) -> lancer_table::Result<(T, lancer_table::evolution::MergeStats)>,
) -> Result<(T, lancer_table::evolution::MergeStats)> {
    if !(opts.update_matched
        || opts.delete_matched
        || opts.fail_on_match
        || opts.insert_unmatched
        || opts.delete_unmatched_by_source)
    {
        return Err(Error::InvalidArgument {
            what: "a merge that neither updates, inserts nor deletes changes nothing: ask for at least one".into(),
        });
    }
    if [opts.update_matched, opts.delete_matched, opts.fail_on_match]
        .iter()
        .filter(|&&a| a)
        .count()
        > 1
    {
        return Err(Error::InvalidArgument {
            what: "a merge does one thing with matched rows: update them, delete them or fail \
                   on them; ask for one"
                .into(),
        });
    }
    let filter = opts
        .delete_filter
        .as_deref()
        .map(|f| Filter::new(f, &ds.schema()))
        .transpose()?;
    let run_filter = |b: &RecordBatch| -> lancer_table::Result<BooleanArray> {
        filter
            .as_ref()
            .map(|f| f.evaluate(b))
            .transpose()
            .map_err(|e| lancer_table::TableError::InvalidInput {
                what: e.to_string(),
            })
            .map(|m| m.unwrap_or_else(|| BooleanArray::from(vec![true; b.num_rows()])))
    };
    // source columns of another type than the dataset's are cast (CSV's inferred
    // types, say); a value that does not fit is an error
    let target = ds.schema();
    // a struct field the dataset does not have is refused, never matched by position
    // (a cast would pair `b` with a renamed `bb`)
    for f in source_schema.fields() {
        if let Ok(t) = target.field_with_name(f.name()) {
            struct_fields_fit(f.data_type(), t.data_type(), f.name())?;
        }
    }
    let cast_to: Vec<Option<DataType>> = source_schema
        .fields()
        .iter()
        .map(|f| {
            target
                .field_with_name(f.name())
                .ok()
                .filter(|t| t.data_type() != f.data_type())
                .map(|t| t.data_type().clone())
        })
        .collect();
    let fields: Vec<Field> = source_schema
        .fields()
        .iter()
        .zip(&cast_to)
        .map(|(f, c)| match c {
            Some(t) => Field::new(f.name(), t.clone(), f.is_nullable()),
            None => f.as_ref().clone(),
        })
        .collect();
    let cast_schema = Arc::new(Schema::new(fields));
    let out_schema = cast_schema.clone();
    let source = source.into_iter().map(move |b| {
        let b = b?;
        let mut cols = Vec::with_capacity(b.num_columns());
        for (c, t) in b.columns().iter().zip(&cast_to) {
            cols.push(match t {
                None => c.clone(),
                Some(t) => {
                    let opts = arrow_cast::CastOptions {
                        safe: false,
                        ..Default::default()
                    };
                    arrow_cast::cast_with_options(c, t, &opts)?
                }
            });
        }
        Ok(RecordBatch::try_new(out_schema.clone(), cols)?)
    });
    let source = source.map(|b: Result<RecordBatch>| b.map_err(into_table));
    let condition = match &opts.update_condition {
        Some(sql) if opts.update_matched => {
            Some(Filter::merge_condition(sql, &cast_schema, &target)?)
        }
        Some(_) => {
            return Err(Error::InvalidArgument {
                what: "an update condition needs the merge to update matched rows".into(),
            })
        }
        None => None,
    };
    let run_condition =
        |src: &RecordBatch, tgt: &RecordBatch| -> lancer_table::Result<BooleanArray> {
            let Some(c) = &condition else {
                return Ok(BooleanArray::from(vec![true; src.num_rows()]));
            };
            let mut fields = Vec::new();
            let mut cols = Vec::new();
            for (side, b) in [("source", src), ("target", tgt)] {
                for (f, c) in b.schema().fields().iter().zip(b.columns()) {
                    fields.push(
                        f.as_ref()
                            .clone()
                            .with_name(format!("{side}__{}", f.name())),
                    );
                    cols.push(c.clone());
                }
            }
            let joined = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
                .map_err(lancer_table::TableError::from)?;
            c.evaluate(&joined)
                .map_err(|e| lancer_table::TableError::InvalidInput {
                    what: e.to_string(),
                })
        };
    let lookup = |column: &str,
                  values: &arrow_array::ArrayRef|
     -> lancer_table::Result<Option<lancer_table::evolution::KeyCandidates>> {
        let found =
            crate::plan::scalar::lookup_in(ds, column, values.clone()).map_err(into_table)?;
        Ok(found.map(|r| lancer_table::evolution::KeyCandidates {
            covered: r.covered,
            rows: r.rows,
            index: r.explain,
        }))
    };
    let spec = lancer_table::evolution::MergeInsert {
        on: opts.on.clone(),
        update_matched: opts.update_matched,
        delete_matched: opts.delete_matched,
        fail_on_match: opts.fail_on_match,
        insert_unmatched: opts.insert_unmatched,
        delete_unmatched_by_source: opts.delete_unmatched_by_source,
        delete_filter: filter
            .as_ref()
            .map(|_| &run_filter as lancer_table::evolution::RowFilter<'_>),
        source_in_memory: opts.source_in_memory,
        update_if: condition
            .as_ref()
            .map(|_| &run_condition as lancer_table::evolution::PairFilter<'_>),
        key_lookup: (!opts.no_index).then_some(&lookup as lancer_table::evolution::KeyLookup<'_>),
        target_bases: opts.target_bases.clone(),
        target_all_bases: opts.target_all_bases,
    };
    Ok(run(ds, &spec, cast_schema, Box::new(source.into_iter()))?)
}

/// Adds the columns of `source` other than its key `on` (pylance's `merge(table,
/// left_on)`): each fragment's rows take the values of the source row with the same
/// key (null without one), written as one new data file per fragment. The source is
/// held in memory (it is a table of new columns, not a dataset); a key that appears
/// twice in it takes the values of its last row, as pylance's merge.
pub fn merge_columns(
    ds: &Dataset,
    on: &str,
    source_schema: arrow_schema::SchemaRef,
    source: impl IntoIterator<Item = Result<RecordBatch>>,
) -> Result<Dataset> {
    use arrow_array::UInt32Array;
    let schema = ds.schema();
    let key_field = schema
        .field_with_name(on)
        .map_err(|_| Error::InvalidArgument {
            what: format!("key column {on:?} is not in the dataset"),
        })?;
    let key_src = source_schema
        .index_of(on)
        .map_err(|_| Error::InvalidArgument {
            what: format!("key column {on:?} is missing from the source"),
        })?;
    let new_fields: Vec<Field> = source_schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != key_src)
        .map(|(_, f)| Field::new(f.name(), f.data_type().clone(), true))
        .collect();
    if new_fields.is_empty() {
        return Err(Error::InvalidArgument {
            what: "the source has no column besides the key: nothing to add".into(),
        });
    }
    let batches: Vec<RecordBatch> = source.into_iter().collect::<Result<_>>()?;
    let all = lancer_table::dataset::concat_batches(&source_schema, &batches)?;
    // the source's keys, cast to the dataset key's type, as row-encoded bytes
    let cast = |c: &ArrayRef| -> Result<ArrayRef> {
        if c.data_type() == key_field.data_type() {
            Ok(c.clone())
        } else {
            Ok(arrow_cast::cast(c, key_field.data_type())?)
        }
    };
    let conv = arrow_row::RowConverter::new(vec![arrow_row::SortField::new(
        key_field.data_type().clone(),
    )])?;
    let src_keys = conv.convert_columns(&[cast(all.column(key_src))?])?;
    let mut index: std::collections::HashMap<Vec<u8>, u32> =
        std::collections::HashMap::with_capacity(all.num_rows());
    for i in 0..all.num_rows() {
        if all.column(key_src).is_null(i) {
            continue;
        }
        // a key given twice takes its last row's values, as pylance's merge does
        index.insert(src_keys.row(i).as_ref().to_vec(), i as u32);
    }
    let out_schema = Arc::new(Schema::new(new_fields));
    let value_cols: Vec<usize> = (0..all.num_columns()).filter(|i| *i != key_src).collect();
    let compute = |b: &RecordBatch| -> Result<RecordBatch> {
        let keys = conv.convert_columns(&[b.column(0).clone()])?;
        let idx: UInt32Array = (0..b.num_rows())
            .map(|i| {
                if b.column(0).is_null(i) {
                    None
                } else {
                    index.get(keys.row(i).as_ref()).copied()
                }
            })
            .collect();
        let cols: Vec<ArrayRef> = value_cols
            .iter()
            .map(|&c| arrow_select::take::take(all.column(c).as_ref(), &idx, None))
            .collect::<std::result::Result<_, _>>()?;
        Ok(RecordBatch::try_new(out_schema.clone(), cols)?)
    };
    ds.add_columns_with(out_schema.clone(), Some(&[on]), compute)
}

/// Refuses source data whose structs (at any depth, lists included) name a field the
/// dataset's struct at the same path does not have.
fn struct_fields_fit(source: &DataType, target: &DataType, path: &str) -> Result<()> {
    match (source, target) {
        (DataType::Struct(sf), DataType::Struct(tf)) => {
            for f in sf {
                match tf.find(f.name()) {
                    Some((_, t)) => struct_fields_fit(
                        f.data_type(),
                        t.data_type(),
                        &format!("{path}.{}", f.name()),
                    )?,
                    None => {
                        return Err(Error::InvalidArgument {
                            what: format!(
                                "the source's struct column {path:?} has a field {:?} the dataset's does not (it has {}): rename or drop it first",
                                f.name(),
                                tf.iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
                            ),
                        })
                    }
                }
            }
            Ok(())
        }
        (
            DataType::List(s) | DataType::LargeList(s) | DataType::FixedSizeList(s, _),
            DataType::List(t) | DataType::LargeList(t) | DataType::FixedSizeList(t, _),
        ) => struct_fields_fit(s.data_type(), t.data_type(), &format!("{path}.item")),
        _ => Ok(()),
    }
}
