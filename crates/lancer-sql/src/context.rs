//! [`SqlContext`]: a DataFusion session over Lance datasets. Before DataFusion plans a
//! statement it is read once here: table names that are paths or URIs are registered —
//! a Lance dataset as a [`LanceTable`], a `.parquet` / `.csv` / `.json` / `.jsonl` file
//! through DataFusion's own readers — named arguments of the table functions are put in
//! their positions, and `CREATE TABLE 'uri' AS SELECT` becomes a dataset write.
//! `INSERT INTO`, `DELETE` and `UPDATE` on a dataset are each one commit (the
//! provider's `insert_into` / `delete_from` / `update`); the table is re-registered at
//! the version they committed.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_array::{RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use datafusion::catalog::TableProvider;
use datafusion::execution::context::SessionContext;
use datafusion::prelude::{CsvReadOptions, JsonReadOptions, ParquetReadOptions, SessionConfig};
use datafusion::sql::parser::{DFParser, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::{
    self as ast, FunctionArg, FunctionArgExpr, ObjectName, TableFactor, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use lancer::{Session, WriteParams};

use crate::error::{Error, Result};
use crate::functions::{self, FtsFunction, LanceFunction, VectorSearchFunction, SIGNATURES};
use crate::hidden;
use crate::merge;
use crate::table::{reference, LanceTable};

/// A dataset registered by name: where it is and which version (None: the latest, and
/// after a write, the version written).
#[derive(Debug, Clone)]
pub struct TableSpec {
    /// The dataset's path or URI.
    pub uri: String,
    /// A version number or tag (None: the latest).
    pub version: Option<String>,
}

impl TableSpec {
    /// Parses `URI`, `URI@VERSION` or `URI#TAG` (the CLI's `--table name=...`).
    pub fn parse(text: &str) -> Self {
        if let Some((uri, tag)) = text.rsplit_once('#') {
            return Self {
                uri: uri.to_string(),
                version: Some(tag.to_string()),
            };
        }
        if let Some((uri, v)) = text.rsplit_once('@') {
            if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                return Self {
                    uri: uri.to_string(),
                    version: Some(v.to_string()),
                };
            }
        }
        Self {
            uri: text.to_string(),
            version: None,
        }
    }
}

/// SQL over Lance datasets (and files beside them).
pub struct SqlContext {
    ctx: SessionContext,
    session: Session,
    /// Datasets registered by name, re-registered at the latest version after a write.
    named: HashMap<String, TableSpec>,
    /// Tables whose `_rowid` / `_rowaddr` columns were chosen when registered (not by
    /// what a statement names).
    fixed_row_meta: HashSet<String>,
    /// Scan batches of datasets registered from now on split to about this many bytes.
    batch_bytes: Option<usize>,
}

impl SqlContext {
    /// A context whose datasets open in `session` (storage options, caches), with the
    /// table functions `lance`, `vector_search` and `fts` registered.
    pub fn new(session: Session) -> Self {
        let config = SessionConfig::new().with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_udtf("lance", Arc::new(LanceFunction::new(session.clone())));
        ctx.register_udtf(
            "vector_search",
            Arc::new(VectorSearchFunction::new(session.clone())),
        );
        ctx.register_udtf("fts", Arc::new(FtsFunction::new(session.clone())));
        Self {
            ctx,
            session,
            named: HashMap::new(),
            fixed_row_meta: HashSet::new(),
            batch_bytes: None,
        }
    }

    /// Rows per batch of every scan and operator (DataFusion's `batch_size`; pylance's
    /// `SqlQueryBuilder.batch_size`); at least 1.
    pub fn set_batch_size(&mut self, rows: usize) -> Result<()> {
        let state = self.ctx.state_ref();
        let mut state = state.write();
        state
            .config_mut()
            .options_mut()
            .set("datafusion.execution.batch_size", &rows.max(1).to_string())?;
        Ok(())
    }

    /// Scan batches of the datasets registered after this call of about `bytes` at most
    /// (pylance's `SqlQueryBuilder.batch_size_bytes`; 0: a row a batch, as pylance's).
    pub fn set_batch_bytes(&mut self, bytes: usize) {
        self.batch_bytes = Some(bytes);
    }

    /// The DataFusion context (to register other tables or functions).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Registers the dataset `spec` as table `name`.
    pub fn register(&mut self, name: &str, spec: TableSpec) -> Result<()> {
        let ds = functions::open(&self.session, &spec.uri, spec.version.as_deref())?;
        self.ctx.deregister_table(reference(name))?;
        self.ctx.register_table(
            reference(name),
            Arc::new(LanceTable::new(ds).with_batch_bytes(self.batch_bytes)),
        )?;
        self.named.insert(name.to_string(), spec);
        Ok(())
    }

    /// Registers the open dataset `ds` (its version) as table `name`, with `_rowid` /
    /// `_rowaddr` columns when asked.
    pub fn register_dataset(
        &mut self,
        name: &str,
        ds: lancer::Dataset,
        row_id: bool,
        row_addr: bool,
    ) -> Result<()> {
        self.ctx.deregister_table(reference(name))?;
        let table = LanceTable::new(ds)
            .with_row_meta(row_id, row_addr)
            .with_batch_bytes(self.batch_bytes);
        self.ctx.register_table(reference(name), Arc::new(table))?;
        self.fixed_row_meta.insert(name.to_string());
        Ok(())
    }

    /// The tables registered (names), sorted.
    pub fn tables(&self) -> Result<Vec<String>> {
        let mut out: Vec<String> = self
            .ctx
            .catalog("datafusion")
            .and_then(|c| c.schema("public"))
            .map(|s| s.table_names())
            .unwrap_or_default();
        out.sort();
        Ok(out)
    }

    /// The schema of table `name` (a dataset path or URI not yet named is opened).
    pub async fn table_schema(&mut self, name: &str) -> Result<arrow_schema::SchemaRef> {
        if !self.ctx.table_exist(reference(name))? && looks_like_path(name) {
            self.register(name, TableSpec::parse(name))?;
        }
        match self.ctx.table_provider(reference(name)).await {
            Ok(p) => Ok(p.schema()),
            Err(_) => {
                let known = self.tables()?;
                Err(Error::User(format!(
                    "no table named {name:?} (registered: {}); name one with --table NAME=URI",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )))
            }
        }
    }

    /// Runs every statement of `sql` in turn; the rows of the last one.
    pub async fn sql(&mut self, sql: &str) -> Result<Vec<RecordBatch>> {
        let statements = DFParser::parse_sql_with_dialect(sql, &GenericDialect {})?;
        if statements.is_empty() {
            return Err(Error::User("no SQL statement to run".into()));
        }
        let mut last = Vec::new();
        for st in statements {
            last = self.statement(st).await?;
        }
        Ok(last)
    }

    async fn statement(&mut self, mut st: DfStatement) -> Result<Vec<RecordBatch>> {
        // EXPLAIN [ANALYZE] of a statement: its tables and arguments read as the
        // statement's own would be
        if let DfStatement::Explain(ex) = &mut st {
            if let DfStatement::Statement(inner) = ex.statement.as_mut() {
                positional_arguments(inner)?;
                self.register_paths(inner).await?;
            }
            return self.plan_and_run(st).await;
        }
        let DfStatement::Statement(mut inner) = st else {
            return self.plan_and_run(st).await;
        };
        positional_arguments(&mut inner)?;
        self.register_paths(&inner).await?;
        self.hidden_columns(&mut inner).await?;
        let written = written_table(&inner);
        if let ast::Statement::CreateTable(ct) = inner.as_ref() {
            if let Some(query) = &ct.query {
                return self.create_table_as(&ct.name, query, ct.or_replace).await;
            }
        }
        if let ast::Statement::Merge(m) = inner.as_ref() {
            return self.merge(m).await;
        }
        let out = self.plan_and_run(DfStatement::Statement(inner)).await?;
        if let Some(name) = written {
            self.refresh(&name)?;
        }
        Ok(out)
    }

    /// `_rowid` / `_rowaddr` for this statement: the dataset tables have the ones it
    /// names (and only those), hidden from its `*` (see [`hidden`]).
    async fn hidden_columns(&mut self, st: &mut ast::Statement) -> Result<()> {
        let (id, addr) = hidden::named(st);
        let mut datasets = HashSet::new();
        for name in self.tables()? {
            if self.fixed_row_meta.contains(&name) {
                continue;
            }
            let Ok(provider) = self.ctx.table_provider(reference(&name)).await else {
                continue;
            };
            let Some(table) = provider.downcast_ref::<LanceTable>() else {
                continue;
            };
            if table.row_meta() != (id, addr) {
                let exposed = LanceTable::new(table.dataset().clone()).with_row_meta(id, addr);
                self.ctx.deregister_table(reference(&name))?;
                self.ctx
                    .register_table(reference(&name), Arc::new(exposed))?;
            }
            datasets.insert(name);
        }
        let hidden: Vec<&str> = [(id, lancer::ROW_ID), (addr, lancer::ROW_ADDRESS)]
            .into_iter()
            .filter_map(|(on, n)| on.then_some(n))
            .collect();
        hidden::exclude_from_wildcards(st, &datasets, &hidden);
        Ok(())
    }

    /// `MERGE INTO dataset USING source ...`: one merge_insert commit (see [`merge`]);
    /// one row, `count`, the rows inserted, updated and deleted.
    async fn merge(&mut self, m: &ast::Merge) -> Result<Vec<RecordBatch>> {
        let target = match &m.table {
            TableFactor::Table { name, .. } => match name.0.as_slice() {
                [part] => part.as_ident().map(|i| i.value.clone()),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| {
            Error::User("MERGE INTO: name the target dataset by its path or table name".into())
        })?;
        let provider = self.ctx.table_provider(reference(&target)).await?;
        let Some(table) = provider.downcast_ref::<LanceTable>() else {
            return Err(Error::User(format!(
                "MERGE INTO {target}: the target is not a Lance dataset"
            )));
        };
        let ds = table.dataset().clone();
        let columns: Vec<String> = table
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| n != lancer::ROW_ID && n != lancer::ROW_ADDRESS)
            .collect();
        let plan = merge::plan(m, &columns)?;
        let mut source = DFParser::parse_sql_with_dialect(&plan.source_query, &GenericDialect {})?;
        let Some(query) = source.pop_front() else {
            return Err(Error::User("MERGE INTO: the source is missing".into()));
        };
        let batches = self.plan_and_run(query).await?;
        let schema = match batches.first() {
            Some(b) => b.schema(),
            None => Arc::new(arrow_schema::Schema::new(
                table
                    .schema()
                    .fields()
                    .iter()
                    .filter(|f| columns.contains(f.name()))
                    .cloned()
                    .collect::<Vec<_>>(),
            )),
        };
        let options = plan.options;
        let stats = functions::blocking(move || {
            lancer::write::merge_insert(&ds, &options, schema, batches.into_iter().map(Ok))
        })?
        .1;
        self.refresh(&plan.target)?;
        count_batch(stats.inserted + stats.updated + stats.deleted)
    }

    async fn plan_and_run(&self, st: DfStatement) -> Result<Vec<RecordBatch>> {
        let plan = self.ctx.state().statement_to_plan(st).await?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        Ok(df.collect().await?)
    }

    /// After a write to table `name`: its provider at the version written.
    fn refresh(&mut self, name: &str) -> Result<()> {
        let spec = match self.named.get(name) {
            Some(s) if s.version.is_none() => s.clone(),
            Some(_) => return Ok(()),
            None if looks_like_path(name) => TableSpec {
                uri: name.to_string(),
                version: None,
            },
            None => return Ok(()),
        };
        self.register(name, spec)
    }

    /// Registers every table name of `st` that is a path or URI of a dataset or a
    /// file, unless a table of that name exists.
    async fn register_paths(&mut self, st: &ast::Statement) -> Result<()> {
        let mut names = Vec::new();
        let _ = ast::visit_relations(st, |name: &ObjectName| {
            if let [part] = name.0.as_slice() {
                if let Some(id) = part.as_ident() {
                    names.push(id.value.clone());
                }
            }
            ControlFlow::<()>::Continue(())
        });
        for name in names {
            if !looks_like_path(&name) || self.ctx.table_exist(reference(&name))? {
                continue;
            }
            let lower = name.to_ascii_lowercase();
            if lower.ends_with(".parquet") {
                self.ctx
                    .register_parquet(reference(&name), &name, ParquetReadOptions::default())
                    .await?;
            } else if lower.ends_with(".csv") {
                self.ctx
                    .register_csv(reference(&name), &name, CsvReadOptions::default())
                    .await?;
            } else if lower.ends_with(".json") || lower.ends_with(".jsonl") {
                let ext = if lower.ends_with(".jsonl") {
                    ".jsonl"
                } else {
                    ".json"
                };
                let opts = JsonReadOptions::default()
                    .file_extension(ext)
                    .newline_delimited(true);
                self.ctx
                    .register_json(reference(&name), &name, opts)
                    .await?;
            } else {
                match functions::open(&self.session, &name, None) {
                    Ok(ds) => {
                        self.ctx
                            .register_table(reference(&name), Arc::new(LanceTable::new(ds)))?;
                    }
                    // a table to create (CREATE TABLE 'x' AS ...) is not there yet
                    Err(lancer::Error::Table(lancer::TableError::NotFound { .. })) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// `CREATE [OR REPLACE] TABLE 'uri' AS SELECT ...`: the query's rows written as a new
    /// dataset (overwritten with OR REPLACE); one row, `count`, the rows written.
    async fn create_table_as(
        &mut self,
        name: &ObjectName,
        query: &ast::Query,
        replace: bool,
    ) -> Result<Vec<RecordBatch>> {
        let [part] = name.0.as_slice() else {
            return Err(Error::User(format!(
                "CREATE TABLE {name}: name the new dataset by its path or URI ('data/new.lance')"
            )));
        };
        let uri = part
            .as_ident()
            .map(|i| i.value.clone())
            .ok_or_else(|| Error::User(format!("CREATE TABLE {name}: give a path or URI")))?;
        let st = DfStatement::Statement(Box::new(ast::Statement::Query(Box::new(query.clone()))));
        let batches = self.plan_and_run(st).await?;
        let schema = match batches.first() {
            Some(b) => b.schema(),
            None => Arc::new(Schema::empty()),
        };
        let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
        let session = self.session.clone();
        let target = uri.clone();
        let written = functions::blocking(move || -> lancer::Result<()> {
            if !replace && session.open(&target).is_ok() {
                return Err(lancer::Error::InvalidArgument {
                    what: format!(
                        "CREATE TABLE '{target}': a dataset is there already; use CREATE OR REPLACE TABLE, \
                         or INSERT INTO it"
                    ),
                });
            }
            let params = WriteParams::default();
            session.write_stream(&target, schema, batches.into_iter().map(Ok), &params)?;
            Ok(())
        });
        written?;
        self.ctx.deregister_table(reference(&uri))?;
        count_batch(rows)
    }
}

/// One row, `count` (UInt64), as DataFusion's DML statements answer.
fn count_batch(rows: u64) -> Result<Vec<RecordBatch>> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]));
    Ok(vec![RecordBatch::try_new(
        schema,
        vec![Arc::new(UInt64Array::from(vec![rows]))],
    )?])
}

/// Whether a table name is a path or URI (a dataset or file to open) rather than a name.
fn looks_like_path(name: &str) -> bool {
    std::path::Path::new(name).join("_versions").is_dir()
        || name.contains('/')
        || name.contains("://")
        || [".lance", ".parquet", ".csv", ".json", ".jsonl"]
            .iter()
            .any(|ext| name.to_ascii_lowercase().ends_with(ext))
}

/// The table an INSERT / UPDATE / DELETE writes, by its one-part name.
fn written_table(st: &ast::Statement) -> Option<String> {
    let one = |n: &ObjectName| match n.0.as_slice() {
        [p] => p.as_ident().map(|i| i.value.clone()),
        _ => None,
    };
    match st {
        ast::Statement::Insert(ins) => match &ins.table {
            ast::TableObject::TableName(n) => one(n),
            _ => None,
        },
        ast::Statement::Update(u) => match &u.table.relation {
            TableFactor::Table { name, .. } => one(name),
            _ => None,
        },
        ast::Statement::Delete(d) => {
            let from = match &d.from {
                ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
            };
            match from.first().map(|t| &t.relation) {
                Some(TableFactor::Table { name, .. }) => one(name),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Puts named arguments of Lancer's table functions (`k => 10`) in their positions
/// (NULL for the ones not given), so DataFusion, which takes positional arguments
/// only, plans them; a name the function does not have is an error naming its
/// parameters.
fn positional_arguments(st: &mut ast::Statement) -> Result<()> {
    struct Rewrite(Option<String>);
    impl VisitorMut for Rewrite {
        type Break = ();
        fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
            let TableFactor::Table {
                name,
                args: Some(args),
                ..
            } = t
            else {
                return ControlFlow::Continue(());
            };
            let fname = name.to_string().to_ascii_lowercase();
            let Some((_, params)) = SIGNATURES.iter().find(|(n, _)| *n == fname) else {
                return ControlFlow::Continue(());
            };
            if !args
                .args
                .iter()
                .any(|a| matches!(a, FunctionArg::Named { .. } | FunctionArg::ExprNamed { .. }))
            {
                return ControlFlow::Continue(());
            }
            let mut slots: Vec<Option<FunctionArg>> = vec![None; params.len()];
            let mut next = 0;
            for a in std::mem::take(&mut args.args) {
                let (pos, value) = match a {
                    FunctionArg::Named { name, arg, .. } => {
                        let key = name.value.to_ascii_lowercase();
                        match params.iter().position(|p| *p == key) {
                            Some(i) => (i, arg),
                            None => {
                                self.0 = Some(format!(
                                    "{fname}: no argument {key:?} (its arguments: {})",
                                    params.join(", ")
                                ));
                                return ControlFlow::Break(());
                            }
                        }
                    }
                    FunctionArg::ExprNamed { .. } => {
                        self.0 = Some(format!("{fname}: name arguments as `name => value`"));
                        return ControlFlow::Break(());
                    }
                    FunctionArg::Unnamed(arg) => {
                        next += 1;
                        (next - 1, arg)
                    }
                };
                if pos >= params.len() || slots[pos].is_some() {
                    self.0 = Some(format!(
                        "{fname}: argument {} given twice or too many arguments (its arguments: {})",
                        params.get(pos).copied().unwrap_or("?"),
                        params.join(", ")
                    ));
                    return ControlFlow::Break(());
                }
                slots[pos] = Some(FunctionArg::Unnamed(value));
            }
            let last = slots.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
            args.args = slots
                .into_iter()
                .take(last)
                .map(|s| {
                    s.unwrap_or(FunctionArg::Unnamed(FunctionArgExpr::Expr(
                        ast::Expr::value(ast::Value::Null),
                    )))
                })
                .collect();
            ControlFlow::Continue(())
        }
    }
    let mut r = Rewrite(None);
    let _ = st.visit(&mut r);
    match r.0 {
        Some(why) => Err(Error::User(why)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_specs_name_versions_and_tags() {
        let s = TableSpec::parse("data/a.lance@3");
        assert_eq!(
            (s.uri.as_str(), s.version.as_deref()),
            ("data/a.lance", Some("3"))
        );
        let s = TableSpec::parse("s3://b/a.lance#prod");
        assert_eq!(
            (s.uri.as_str(), s.version.as_deref()),
            ("s3://b/a.lance", Some("prod"))
        );
        let s = TableSpec::parse("user@host/a.lance");
        assert_eq!((s.uri.as_str(), s.version), ("user@host/a.lance", None));
    }

    #[test]
    fn named_arguments_take_their_positions() {
        let mut st = DFParser::parse_sql_with_dialect(
            "SELECT * FROM vector_search('a.lance', 'v', [1.0, 2.0], metric => 'cosine', k => 3)",
            &GenericDialect {},
        )
        .unwrap();
        let DfStatement::Statement(mut s) = st.pop_front().unwrap() else {
            panic!("a statement")
        };
        positional_arguments(&mut s).unwrap();
        assert_eq!(
            s.to_string(),
            "SELECT * FROM vector_search('a.lance', 'v', [1.0, 2.0], 3, 'cosine')"
        );
        let mut st = DFParser::parse_sql_with_dialect(
            "SELECT * FROM fts('a.lance', 'text', 'x', top => 3)",
            &GenericDialect {},
        )
        .unwrap();
        let DfStatement::Statement(mut s) = st.pop_front().unwrap() else {
            panic!("a statement")
        };
        let err = positional_arguments(&mut s).unwrap_err().to_string();
        assert!(
            err.contains("no argument \"top\"") && err.contains("limit"),
            "{err}"
        );
    }
}
