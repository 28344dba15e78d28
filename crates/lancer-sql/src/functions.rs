//! Table functions that search inside SQL, over a dataset named by its path or URI:
//!
//! - `lance(uri [, version])`: the dataset (at a version number or tag), as a table;
//! - `vector_search(uri, column, query [, k, metric, nprobes, refine_factor, ef, filter])`:
//!   the `k` nearest rows (through the column's vector index when it has one, as
//!   `lancer::nearest` searches), every column plus `_distance` and `_rowid`, nearest
//!   first;
//! - `fts(uri, column, query [, limit, filter])`: the rows matching a full-text query
//!   (BM25, as pylance scores), every column plus `_score` and `_rowid`, best first.
//!
//! Arguments may be given by name (`k => 10`, `metric => 'cosine'`): the statement is
//! rewritten to their positions before DataFusion plans it (`context`). A search runs
//! when the statement is planned; its rows are a table like any other (join them with
//! the dataset on `_rowid` or a key for hybrid search).

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl};
use datafusion::common::ScalarValue;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use lancer::{Filtering, Nearest, RowMeta, SearchOptions, Session};

use crate::error::external;
use crate::table::LanceTable;

/// The parameters of each function in order (named arguments are placed by these).
pub(crate) const SIGNATURES: &[(&str, &[&str])] = &[
    ("lance", &["uri", "version"]),
    (
        "vector_search",
        &[
            "uri",
            "column",
            "query",
            "k",
            "metric",
            "nprobes",
            "refine_factor",
            "ef",
            "filter",
        ],
    ),
    ("fts", &["uri", "column", "query", "limit", "filter"]),
];

fn user(what: impl Into<String>) -> DataFusionError {
    DataFusionError::Plan(what.into())
}

/// A literal argument (negated numbers, casts of literals and list literals included).
fn literal(e: &Expr) -> Option<ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v.clone()),
        Expr::Negative(inner) => match literal(inner)? {
            ScalarValue::Int64(v) => Some(ScalarValue::Int64(v.map(|x| -x))),
            ScalarValue::Float64(v) => Some(ScalarValue::Float64(v.map(|x| -x))),
            ScalarValue::Float32(v) => Some(ScalarValue::Float32(v.map(|x| -x))),
            _ => None,
        },
        Expr::Cast(c) => literal(&c.expr),
        _ => None,
    }
}

/// The `i`-th argument of `f`, if given and not NULL.
fn arg(args: &[Expr], i: usize) -> Option<&Expr> {
    args.get(i)
        .filter(|e| !matches!(literal(e), Some(v) if v.is_null()))
}

fn text(f: &str, name: &str, args: &[Expr], i: usize) -> DfResult<Option<String>> {
    let Some(e) = arg(args, i) else {
        return Ok(None);
    };
    match literal(e) {
        Some(ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)))
        | Some(ScalarValue::Utf8View(Some(s))) => Ok(Some(s)),
        _ => Err(user(format!(
            "{f}: {name} must be a string literal, not {e}"
        ))),
    }
}

fn required(f: &str, name: &str, args: &[Expr], i: usize) -> DfResult<String> {
    text(f, name, args, i)?.ok_or_else(|| user(format!("{f}: give {name} (argument {})", i + 1)))
}

fn number(f: &str, name: &str, args: &[Expr], i: usize) -> DfResult<Option<u64>> {
    let Some(e) = arg(args, i) else {
        return Ok(None);
    };
    let bad = || {
        user(format!(
            "{f}: {name} must be a non-negative whole number, not {e}"
        ))
    };
    let v = literal(e).ok_or_else(bad)?;
    let n = match v {
        ScalarValue::Int64(Some(n)) => u64::try_from(n).map_err(|_| bad())?,
        ScalarValue::Int32(Some(n)) => u64::try_from(n).map_err(|_| bad())?,
        ScalarValue::UInt64(Some(n)) => n,
        _ => return Err(bad()),
    };
    Ok(Some(n))
}

/// A query vector: a list literal (`[0.1, 0.2]`, `make_array(...)`) of numbers.
fn vector(f: &str, args: &[Expr], i: usize) -> DfResult<Vec<f32>> {
    let e = arg(args, i)
        .ok_or_else(|| user(format!("{f}: give the query vector (argument {})", i + 1)))?;
    let bad = || {
        user(format!(
            "{f}: the query must be a list of numbers ([0.1, 0.2, ...]), not {e}"
        ))
    };
    let items: Vec<ScalarValue> = match e {
        Expr::ScalarFunction(sf) if sf.name() == "make_array" => sf
            .args
            .iter()
            .map(|a| literal(a).ok_or_else(bad))
            .collect::<DfResult<_>>()?,
        other => match literal(other).ok_or_else(bad)? {
            ScalarValue::List(l) => {
                let values = l.value(0);
                (0..values.len())
                    .map(|j| ScalarValue::try_from_array(&values, j))
                    .collect::<DfResult<_>>()?
            }
            _ => return Err(bad()),
        },
    };
    items
        .into_iter()
        .map(|v| match v {
            ScalarValue::Float64(Some(x)) => Ok(x as f32),
            ScalarValue::Float32(Some(x)) => Ok(x),
            ScalarValue::Int64(Some(x)) => Ok(x as f32),
            ScalarValue::Int32(Some(x)) => Ok(x as f32),
            _ => Err(bad()),
        })
        .collect()
}

/// A dataset named by `uri` at `version` (a number or a tag), in `session`.
pub(crate) fn open(
    session: &Session,
    uri: &str,
    version: Option<&str>,
) -> lancer::Result<lancer::Dataset> {
    let run = || match version {
        None => session.open(uri),
        Some(v) => match v.parse::<u64>() {
            Ok(n) => session.open_version(uri, n),
            Err(_) => session.open_tag(uri, v),
        },
    };
    blocking(run)
}

/// Runs Lancer's blocking work from inside DataFusion's planning (a Tokio worker).
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// A search's rows as a table, JSON columns as text (as scans return them).
fn search_rows(batch: arrow_array::RecordBatch) -> DfResult<Arc<dyn TableProvider>> {
    let batch = lancer::json_to_text(&batch).map_err(|e| external(lancer::TableError::from(e)))?;
    Ok(Arc::new(MemTable::try_new(
        batch.schema(),
        vec![vec![batch]],
    )?))
}

/// `lance(uri [, version])`.
#[derive(Debug)]
pub struct LanceFunction {
    session: Session,
}

impl LanceFunction {
    /// The function, opening datasets in `session`.
    pub fn new(session: Session) -> Self {
        Self { session }
    }
}

impl TableFunctionImpl for LanceFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DfResult<Arc<dyn TableProvider>> {
        let a = args.exprs();
        let uri = required("lance", "the dataset's uri", a, 0)?;
        let version = match arg(a, 1).and_then(literal) {
            None => None,
            Some(ScalarValue::Int64(Some(n))) => Some(n.to_string()),
            Some(ScalarValue::Utf8(Some(t))) => Some(t),
            Some(other) => {
                return Err(user(format!(
                    "lance: version must be a number or a tag name, not {other}"
                )))
            }
        };
        let ds = open(&self.session, &uri, version.as_deref()).map_err(external)?;
        Ok(Arc::new(LanceTable::new(ds)))
    }
}

/// `vector_search(uri, column, query [, k, metric, nprobes, refine_factor, ef, filter])`.
#[derive(Debug)]
pub struct VectorSearchFunction {
    session: Session,
}

impl VectorSearchFunction {
    /// The function, opening datasets in `session`.
    pub fn new(session: Session) -> Self {
        Self { session }
    }
}

impl TableFunctionImpl for VectorSearchFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DfResult<Arc<dyn TableProvider>> {
        const F: &str = "vector_search";
        let a = args.exprs();
        let uri = required(F, "the dataset's uri", a, 0)?;
        let column = required(F, "the vector column", a, 1)?;
        let query = vector(F, a, 2)?;
        let k = number(F, "k", a, 3)?.unwrap_or(10) as usize;
        let metric = text(F, "metric", a, 4)?;
        let nprobes = number(F, "nprobes", a, 5)?;
        let refine = number(F, "refine_factor", a, 6)?;
        let ef = number(F, "ef", a, 7)?;
        let filter = text(F, "filter", a, 8)?;
        let ds = open(&self.session, &uri, None).map_err(external)?;
        let batch = blocking(|| -> lancer::Result<_> {
            let metric = match &metric {
                Some(m) => lancer::Metric::parse(m)?,
                None => {
                    lancer::search::column_index_metric(&ds, &column)?.unwrap_or(lancer::Metric::L2)
                }
            };
            let ann = lancer::AnnParams {
                nprobes: nprobes.map(|n| n as usize),
                refine_factor: refine.map(|r| r as u32),
                ef: ef.map(|e| e as usize),
                ..Default::default()
            };
            let req = Nearest {
                column: &column,
                query,
                k,
                metric,
            };
            let opts = SearchOptions {
                filtering: match &filter {
                    Some(f) => Filtering::Pre(f),
                    None => Filtering::None,
                },
                ann,
                row_meta: RowMeta {
                    row_id: true,
                    row_address: false,
                },
                ..Default::default()
            };
            lancer::nearest(&ds, &req, &opts)
        })
        .map_err(external)?;
        search_rows(batch)
    }
}

/// `fts(uri, column, query [, limit, filter])`.
#[derive(Debug)]
pub struct FtsFunction {
    session: Session,
}

impl FtsFunction {
    /// The function, opening datasets in `session`.
    pub fn new(session: Session) -> Self {
        Self { session }
    }
}

impl TableFunctionImpl for FtsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DfResult<Arc<dyn TableProvider>> {
        const F: &str = "fts";
        let a = args.exprs();
        let uri = required(F, "the dataset's uri", a, 0)?;
        let column = required(F, "the text column", a, 1)?;
        let query = required(F, "the query", a, 2)?;
        let limit = number(F, "limit", a, 3)?;
        let filter = text(F, "filter", a, 4)?;
        let ds = open(&self.session, &uri, None).map_err(external)?;
        let batch = blocking(|| -> lancer::Result<_> {
            let q = lancer::FtsQuery::from_text(&query, Some(&column));
            let opts = lancer::FtsOptions {
                limit: limit.map(|l| l as usize),
                prefilter: filter.is_some(),
                filter,
                row_meta: RowMeta {
                    row_id: true,
                    row_address: false,
                },
                ..Default::default()
            };
            lancer::full_text_search(&ds, &q, &opts)
        })
        .map_err(external)?;
        search_rows(batch)
    }
}
