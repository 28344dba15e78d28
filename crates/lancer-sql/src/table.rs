//! A dataset version as a DataFusion table: [`LanceTable`] (the provider) and
//! `LanceScanExec` (its scan operator). The scan asks Lancer's scanner for the projected
//! columns (nested fields read through their top-level column), the filters Lancer
//! evaluates (`pushdown`; its scalar indexes answer them) and, when every filter went
//! down, the limit; the fragments are cut into one partition per target partition, each
//! streamed on a blocking thread (Lancer's reads block). The row count is the
//! manifest's, exact. `EXPLAIN` shows the operator with the dataset, the columns, the
//! pushed filter and Lancer's own plan of it (which scalar index answers what).

use std::fmt;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session as DfSession;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, TableReference};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use lancer::{Dataset, DatasetExt};

use crate::error::external;
use crate::pushdown::{conjunction, lancer_filter};

/// One version of a dataset, as a DataFusion table.
#[derive(Clone)]
pub struct LanceTable {
    ds: Dataset,
    schema: SchemaRef,
    /// Scan batches split to about this many bytes ([`LanceTable::with_batch_bytes`]).
    batch_bytes: Option<usize>,
}

impl fmt::Debug for LanceTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LanceTable")
            .field("root", &self.ds.root())
            .field("version", &self.ds.version())
            .finish()
    }
}

impl LanceTable {
    /// The table of `ds` (its version), JSON columns as text, as scans return them.
    pub fn new(ds: Dataset) -> Self {
        let schema = lancer::json_text_schema(&ds.schema());
        Self {
            ds,
            schema,
            batch_bytes: None,
        }
    }

    /// Scan batches of about `bytes` at most (pylance's `batch_size_bytes`: a batch is
    /// cut into runs of rows by their values' bytes, each run at least one row, so 0
    /// gives a row a batch as pylance's does; `None`: no limit). The row limit is the
    /// DataFusion session's `batch_size`.
    pub fn with_batch_bytes(mut self, bytes: Option<usize>) -> Self {
        self.batch_bytes = bytes;
        self
    }

    /// The table with `_rowid` and / or `_rowaddr` (UInt64) after the dataset's
    /// columns, as pylance's SQL builder adds them (`with_row_id`, `with_row_addr`).
    pub fn with_row_meta(mut self, row_id: bool, row_addr: bool) -> Self {
        let mut fields: Vec<arrow_schema::FieldRef> =
            self.schema.fields().iter().cloned().collect();
        for (on, name) in [(row_id, lancer::ROW_ID), (row_addr, lancer::ROW_ADDRESS)] {
            if on && self.schema.field_with_name(name).is_err() {
                fields.push(Arc::new(arrow_schema::Field::new(
                    name,
                    arrow_schema::DataType::UInt64,
                    true,
                )));
            }
        }
        self.schema = Arc::new(Schema::new(fields).with_metadata(self.schema.metadata().clone()));
        self
    }

    /// Whether the table has the (`_rowid`, `_rowaddr`) columns.
    pub fn row_meta(&self) -> (bool, bool) {
        let has = |n: &str| self.schema.field_with_name(n).is_ok();
        (has(lancer::ROW_ID), has(lancer::ROW_ADDRESS))
    }

    /// The dataset version this table reads.
    pub fn dataset(&self) -> &Dataset {
        &self.ds
    }
}

#[async_trait]
impl TableProvider for LanceTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        let stored = self.ds.schema();
        Ok(filters
            .iter()
            .map(|f| match lancer_filter(f, &stored) {
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(row_statistics(&self.ds, &self.schema))
    }

    /// `INSERT INTO`: the input's rows appended, one commit (`INSERT OVERWRITE`: the
    /// dataset replaced by them).
    async fn insert_into(
        &self,
        _state: &dyn DfSession,
        input: Arc<dyn ExecutionPlan>,
        op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let ds = self.ds.clone();
        let overwrite = match op {
            InsertOp::Append => false,
            InsertOp::Overwrite => true,
            InsertOp::Replace => return Err(DataFusionError::NotImplemented(
                "REPLACE INTO a Lance dataset: use INSERT INTO, or MERGE through `lancer merge`"
                    .into(),
            )),
        };
        let stored = ds.schema();
        Ok(Arc::new(DmlExec::new(
            "LanceInsertExec",
            Some(input),
            Arc::new(move |batches: Vec<RecordBatch>| {
                let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
                // the input's columns by name, in the dataset's types (JSON as text back
                // to its stored form is the writer's)
                let params = lancer::WriteParams::default();
                if overwrite {
                    lancer::Dataset::write(ds.root(), stored.clone(), &batches, &params)?;
                } else {
                    ds.append(&batches, &params)?;
                }
                Ok(rows)
            }),
        )))
    }

    /// `DELETE FROM ... WHERE`: one commit; every filter must be one Lancer evaluates.
    async fn delete_from(
        &self,
        _state: &dyn DfSession,
        filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let filter = self.lancer_filters(&filters, "DELETE")?;
        let ds = self.ds.clone();
        Ok(Arc::new(DmlExec::new(
            "LanceDeleteExec",
            None,
            Arc::new(move |_| {
                let before = ds.count_rows();
                let after = match &filter {
                    Some(f) => ds.delete(f)?,
                    None => ds.delete("true")?,
                };
                Ok(before.saturating_sub(after.count_rows()))
            }),
        )))
    }

    /// `UPDATE ... SET col = expr WHERE ...`: one commit, as `lancer update`.
    async fn update(
        &self,
        _state: &dyn DfSession,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let filter = self.lancer_filters(&filters, "UPDATE")?;
        let stored = self.ds.schema();
        let mut set = Vec::with_capacity(assignments.len());
        for (col, e) in &assignments {
            let sql = crate::pushdown::lancer_expression(e, &stored).ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "UPDATE: `{col} = {e}` is not an expression Lancer evaluates over the dataset's columns"
                ))
            })?;
            set.push((col.clone(), sql));
        }
        let ds = self.ds.clone();
        Ok(Arc::new(DmlExec::new(
            "LanceUpdateExec",
            None,
            Arc::new(move |_| {
                let pairs: Vec<(&str, &str)> =
                    set.iter().map(|(c, e)| (c.as_str(), e.as_str())).collect();
                let (_, stats) = lancer::write::update(&ds, filter.as_deref(), &pairs, None)?;
                Ok(stats.rows_updated)
            }),
        )))
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let stored = self.ds.schema();
        let pushed: Vec<String> = filters
            .iter()
            .filter_map(|f| lancer_filter(f, &stored))
            .collect();
        // (filters not pushed were answered Unsupported: DataFusion keeps them above
        // the scan, so a limit is only safe here when every filter went down)
        let limit = (pushed.len() == filters.len()).then_some(limit).flatten();
        let columns: Vec<String> = match projection {
            Some(p) => p
                .iter()
                .map(|&i| self.schema.field(i).name().clone())
                .collect(),
            None => self
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
        };
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|c| self.schema.field_with_name(c).cloned())
                .collect::<Result<Vec<_>, _>>()?,
        ));
        let partitions = state.config().target_partitions().max(1);
        let batching = Batching {
            rows: state.config().batch_size().max(1),
            bytes: self.batch_bytes,
        };
        Ok(Arc::new(LanceScanExec::new(
            self.ds.clone(),
            schema,
            columns,
            conjunction(&pushed),
            limit,
            partitions,
            batching,
        )))
    }
}

impl LanceTable {
    /// `filters` as one Lancer filter (None: every row), for a statement that changes
    /// the rows it selects: one Lancer cannot evaluate is an error, never a wider change.
    fn lancer_filters(&self, filters: &[Expr], what: &str) -> DfResult<Option<String>> {
        let stored = self.ds.schema();
        let mut out = Vec::with_capacity(filters.len());
        for f in filters {
            out.push(lancer_filter(f, &stored).ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "{what}: the condition `{f}` is not a filter Lancer evaluates (columns of this \
                     dataset, pylance's filter SQL)"
                ))
            })?);
        }
        Ok(conjunction(&out))
    }
}

/// The manifest's row count (exact), column statistics unknown.
fn row_statistics(ds: &Dataset, schema: &Schema) -> Statistics {
    let mut s = Statistics::new_unknown(schema);
    s.num_rows = Precision::Exact(ds.count_rows() as usize);
    s
}

/// The scan of a [`LanceTable`]: fragments in `partitions` groups, each a Lancer scan.
#[derive(Debug)]
pub(crate) struct LanceScanExec {
    ds: Dataset,
    schema: SchemaRef,
    columns: Vec<String>,
    filter: Option<String>,
    limit: Option<usize>,
    groups: Vec<Vec<u64>>,
    properties: Arc<PlanProperties>,
    batching: Batching,
}

/// How big a scan's batches are: rows (the session's `batch_size`) and, when set, about
/// how many bytes.
#[derive(Debug, Clone, Copy)]
struct Batching {
    rows: usize,
    bytes: Option<usize>,
}

impl LanceScanExec {
    fn new(
        ds: Dataset,
        schema: SchemaRef,
        columns: Vec<String>,
        filter: Option<String>,
        limit: Option<usize>,
        partitions: usize,
        batching: Batching,
    ) -> Self {
        // with a limit, one ordered scan (it stops once it has the rows); else the
        // fragments dealt round-robin so each partition gets a share of every region
        let ids: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
        let n = if limit.is_some() {
            1
        } else {
            partitions.min(ids.len()).max(1)
        };
        let mut groups = vec![Vec::new(); n];
        for (i, id) in ids.into_iter().enumerate() {
            groups[i % n].push(id);
        }
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(n),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self {
            ds,
            schema,
            columns,
            filter,
            limit,
            groups,
            properties,
            batching,
        }
    }

    fn scanner(&self, fragments: Option<&[u64]>) -> lancer::Scanner {
        let mut s = self
            .ds
            .scan()
            .columns(&self.columns)
            .batch_size(self.batching.rows);
        if let Some(f) = &self.filter {
            s = s.filter(f);
        }
        if let Some(l) = self.limit {
            s = s.limit(Some(l as u64));
        }
        if let Some(ids) = fragments {
            s = s.fragments(ids).threads(1);
        }
        s
    }
}

/// `batch` in runs of rows of about `max_bytes` each (at least one row a run; whole
/// without a limit). A row's bytes: its values' widths, its strings' and binaries' own
/// lengths, an even share of any other column's memory.
fn split_by_bytes(batch: RecordBatch, max_bytes: Option<usize>) -> Vec<RecordBatch> {
    let rows = batch.num_rows();
    let Some(max) = max_bytes.filter(|_| rows > 1) else {
        return vec![batch];
    };
    let mut sizes = vec![0usize; rows];
    for c in batch.columns() {
        add_row_sizes(c.as_ref(), &mut sizes);
    }
    let mut out = Vec::new();
    let (mut start, mut run) = (0usize, 0usize);
    for (i, &size) in sizes.iter().enumerate() {
        if i > start && run + size > max {
            out.push(batch.slice(start, i - start));
            (start, run) = (i, 0);
        }
        run += size;
    }
    out.push(batch.slice(start, rows - start));
    out
}

/// Adds each row's bytes in `a` to `sizes` (see [`split_by_bytes`]).
fn add_row_sizes(a: &dyn arrow_array::Array, sizes: &mut [usize]) {
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;
    let (fixed, lengths): (usize, Option<Box<dyn Iterator<Item = usize> + '_>>) =
        match a.data_type() {
            DataType::Utf8 => (4, Some(Box::new(a.as_string::<i32>().offsets().lengths()))),
            DataType::LargeUtf8 => (8, Some(Box::new(a.as_string::<i64>().offsets().lengths()))),
            DataType::Binary => (4, Some(Box::new(a.as_binary::<i32>().offsets().lengths()))),
            DataType::LargeBinary => (8, Some(Box::new(a.as_binary::<i64>().offsets().lengths()))),
            t => match t.primitive_width() {
                Some(w) => (w, None),
                // other columns: an even share of their memory
                None => (a.get_array_memory_size().div_ceil(sizes.len().max(1)), None),
            },
        };
    for s in sizes.iter_mut() {
        *s += fixed;
    }
    for (s, len) in sizes.iter_mut().zip(lengths.into_iter().flatten()) {
        *s += len;
    }
}

impl DisplayAs for LanceScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LanceScanExec: uri={}, version={}, projection=[{}], filter={}, limit={}, partitions={}",
            self.ds.root().display(),
            self.ds.version(),
            self.columns.join(", "),
            self.filter.as_deref().unwrap_or("--"),
            self.limit
                .map_or_else(|| "None".to_string(), |l| l.to_string()),
            self.groups.len()
        )?;
        // Lancer's own plan of the scan: which scalar index answers which part
        if self.filter.is_some() {
            if let Ok(plan) = self.scanner(None).explain() {
                if let Some(ix) = plan.lines().find(|l| l.contains("ScalarIndexQuery")) {
                    write!(f, ", index={}", ix.trim())?;
                }
            }
        }
        Ok(())
    }
}

impl ExecutionPlan for LanceScanExec {
    fn name(&self) -> &str {
        "LanceScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let group = self.groups.get(partition).cloned().unwrap_or_default();
        let scanner = self.scanner((self.groups.len() > 1).then_some(&group[..]));
        let mut builder = RecordBatchReceiverStreamBuilder::new(self.schema.clone(), 2);
        let tx = builder.tx();
        let schema = self.schema.clone();
        let max_bytes = self.batching.bytes;
        builder.spawn_blocking(move || {
            let stream = scanner.stream().map_err(external)?;
            for batch in stream {
                let batch = batch.map_err(external)?;
                // the scan's own field metadata aside, the columns DataFusion planned
                let batch = RecordBatch::try_new_with_options(
                    schema.clone(),
                    batch.columns().to_vec(),
                    // (a count reads no column: the batch is its row count alone)
                    &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
                )?;
                for piece in split_by_bytes(batch, max_bytes) {
                    if tx.blocking_send(Ok(piece)).is_err() {
                        return Ok(()); // the consumer is gone (a LIMIT above, or cancelled)
                    }
                }
            }
            Ok(())
        });
        Ok(builder.build())
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        if partition.is_none() && self.filter.is_none() && self.limit.is_none() {
            return Ok(Arc::new(row_statistics(&self.ds, &self.schema)));
        }
        Ok(Arc::new(Statistics::new_unknown(&self.schema)))
    }
}

/// A table name a dataset is registered under, as DataFusion takes it.
pub(crate) fn reference(name: &str) -> TableReference {
    TableReference::bare(name.to_string())
}

/// What a data-changing statement does once its input (if any) is read: the rows it
/// changed.
type Apply = Arc<dyn Fn(Vec<RecordBatch>) -> lancer::Result<u64> + Send + Sync>;

/// A data-changing statement's operator: reads its input, applies the change (one
/// commit) when executed — never when planned, so `EXPLAIN` changes nothing — and
/// answers one row, `count`.
pub(crate) struct DmlExec {
    name: &'static str,
    input: Option<Arc<dyn ExecutionPlan>>,
    apply: Apply,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for DmlExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(self.name).finish_non_exhaustive()
    }
}

fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![arrow_schema::Field::new(
        "count",
        arrow_schema::DataType::UInt64,
        false,
    )]))
}

impl DmlExec {
    fn new(name: &'static str, input: Option<Arc<dyn ExecutionPlan>>, apply: Apply) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            name,
            input,
            apply,
            properties,
        }
    }
}

impl DisplayAs for DmlExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl ExecutionPlan for DmlExec {
    fn name(&self) -> &str {
        self.name
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.input.iter().collect()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self {
            name: self.name,
            input: children.into_iter().next(),
            apply: self.apply.clone(),
            properties: self.properties.clone(),
        }))
    }

    fn execute(
        &self,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let input = self.input.clone();
        let apply = self.apply.clone();
        let schema = count_schema();
        let out = schema.clone();
        let fut = async move {
            let batches = match input {
                Some(plan) => datafusion::physical_plan::collect(plan, context).await?,
                None => Vec::new(),
            };
            let rows = tokio::task::spawn_blocking(move || apply(batches))
                .await
                .map_err(|e| DataFusionError::Execution(format!("the change failed: {e}")))?
                .map_err(external)?;
            Ok(RecordBatch::try_new(
                out,
                vec![Arc::new(arrow_array::UInt64Array::from(vec![rows]))],
            )?)
        };
        Ok(Box::pin(
            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                schema,
                futures::stream::once(fut),
            ),
        ))
    }
}
