//! Filters: SQL boolean expressions over a dataset's columns (the `filter=` of the
//! reference's `to_table` / `scanner` / `delete`; the reference guide's examples use
//! them with DataFusion functions), parsed, typed and evaluated by DataFusion so the
//! semantics are the reference's — three-valued logic, `LIKE`, `IN`, `BETWEEN`, casts,
//! string / regex / date / array functions, struct fields as `a.b`. The exact rules
//! (dialect, literal typing, refusals) are pinned by the pylance filter suite in
//! `tests/data/filters.sql`.
//!
//! Steps: [`parse`] reads the text in the reference's dialect; DataFusion's `SqlToRel`
//! turns it into a logical expression with the default scalar and nested functions;
//! [`literal`] gives literals their column's type as the reference does; DataFusion's
//! simplifier then coerces the remaining types and simplifies once more (folding casts of
//! typed literals into the column's type), and the expression is compiled against the
//! schema of only the columns it reads, so a scan can read those first.

mod dialect;
pub(crate) mod json;
mod literal;
mod parse;
mod substrait;
mod udf;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Schema, SchemaRef};
use datafusion_common::config::ConfigOptions;
use datafusion_common::{DFSchema, TableReference};
use datafusion_expr::execution_props::ExecutionProps;
use datafusion_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion_expr::planner::{ContextProvider, ExprPlanner};
use datafusion_expr::simplify::SimplifyContext;
use datafusion_expr::{
    AggregateUDF, Expr, ExprSchemable, HigherOrderUDF, ScalarUDF, TableSource, WindowUDF,
};
use datafusion_optimizer::simplify_expressions::ExprSimplifier;
use datafusion_physical_expr::PhysicalExpr;
use datafusion_sql::planner::{ParserOptions, PlannerContext, SqlToRel};
use datafusion_sql::sqlparser::ast::{self as sql, visit_expressions_mut};

use crate::Error;

pub use substrait::substrait_filter_sql;

/// The functions and planners a filter may use: DataFusion's default scalar functions,
/// its nested (array / struct / map) functions and the reference's JSON functions
/// ([`json`]).
struct Functions {
    scalar: HashMap<String, Arc<ScalarUDF>>,
    planners: Vec<Arc<dyn ExprPlanner>>,
    options: ConfigOptions,
}

impl Functions {
    fn new() -> Self {
        let mut scalar = HashMap::new();
        let all = datafusion_functions::all_default_functions()
            .into_iter()
            .chain(datafusion_functions_nested::all_default_nested_functions())
            .chain(json::functions());
        for f in all {
            for name in f
                .aliases()
                .iter()
                .chain(std::iter::once(&f.name().to_string()))
            {
                scalar.insert(name.to_string(), f.clone());
            }
        }
        let planners: Vec<Arc<dyn ExprPlanner>> = vec![
            Arc::new(datafusion_functions::core::planner::CoreFunctionPlanner::default()),
            Arc::new(datafusion_functions_nested::planner::NestedFunctionPlanner),
            Arc::new(datafusion_functions_nested::planner::FieldAccessPlanner),
            Arc::new(datafusion_functions::datetime::planner::DatetimeFunctionPlanner),
            Arc::new(datafusion_functions::unicode::planner::UnicodeFunctionPlanner),
        ];
        Self {
            scalar,
            planners,
            options: ConfigOptions::default(),
        }
    }
}

/// Built once: the function tables are the same for every filter.
static FUNCTIONS: std::sync::LazyLock<Functions> = std::sync::LazyLock::new(Functions::new);

impl ContextProvider for Functions {
    fn get_table_source(
        &self,
        name: TableReference,
    ) -> datafusion_common::Result<Arc<dyn TableSource>> {
        datafusion_common::plan_err!("a filter cannot read another table ({name})")
    }
    fn get_expr_planners(&self) -> &[Arc<dyn ExprPlanner>] {
        &self.planners
    }
    fn get_function_meta(&self, name: &str) -> Option<Arc<ScalarUDF>> {
        self.scalar.get(name).cloned()
    }
    fn get_higher_order_meta(&self, _name: &str) -> Option<Arc<HigherOrderUDF>> {
        None
    }
    fn get_aggregate_meta(&self, _name: &str) -> Option<Arc<AggregateUDF>> {
        None
    }
    fn get_window_meta(&self, _name: &str) -> Option<Arc<WindowUDF>> {
        None
    }
    fn get_variable_type(&self, _names: &[String]) -> Option<DataType> {
        None
    }
    fn options(&self) -> &ConfigOptions {
        &self.options
    }
    fn udf_names(&self) -> Vec<String> {
        self.scalar.keys().cloned().collect()
    }
    fn higher_order_function_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn udaf_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn udwf_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A compiled SQL value expression (`id * 2`, `upper(s)`, `meta.score`): which columns
/// it reads, its type, and how to evaluate it — what a scan's computed columns use.
#[derive(Debug, Clone)]
pub struct Expression {
    sql: String,
    expr: Expr,
    columns: Vec<String>,
    input: SchemaRef,
    data_type: DataType,
    nullable: bool,
    repeatable: bool,
    physical: Arc<dyn PhysicalExpr>,
}

/// A compiled filter: a boolean [`Expression`] whose null counts as false.
#[derive(Debug, Clone)]
pub struct Filter {
    inner: Expression,
}

/// Stack of the thread that compiles SQL (virtual memory; only what is used is touched).
const COMPILE_STACK: usize = 256 << 20;

/// Expressions up to this many bytes compile on the calling thread.
const INLINE_SQL: usize = 64;

/// What an expression is compiled for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    Filter,
    Value,
    /// A merge condition: a filter whose `source.x` / `target.x` name the columns
    /// `source__x` / `target__x` of the schema it is compiled against.
    Condition,
}

impl Expression {
    /// Compiles `sql` against `schema`; errors name the token, column or type.
    pub fn new(sql: &str, schema: &Schema) -> Result<Self, Error> {
        Self::compile(sql, schema, Use::Value)
    }

    /// Compiles on a helper thread with a large stack: planning recurses once per level
    /// of nesting, with big frames in unoptimized builds (100 nested NOTs overflowed a
    /// 2 MiB test thread); the parser bounds the nesting, this bounds the stack it needs.
    /// A short expression (at most [`INLINE_SQL`] bytes: a few dozen levels at most) is
    /// compiled on the calling thread; starting a thread costs more than a point
    /// lookup through an index.
    fn compile(sql: &str, schema: &Schema, usage: Use) -> Result<Self, Error> {
        if sql.len() <= INLINE_SQL {
            return Self::compile_here(sql, schema, usage);
        }
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("lancer-sql".into())
                .stack_size(COMPILE_STACK)
                .spawn_scoped(scope, || Self::compile_here(sql, schema, usage))
                .map_err(|e| Error::InvalidArgument {
                    what: format!("cannot start the SQL compiler thread: {e}"),
                })?
                .join()
                .map_err(|_| Error::InvalidArgument {
                    what: format!("compiling {sql:?} failed unexpectedly"),
                })?
        })
    }

    fn compile_here(sql: &str, schema: &Schema, usage: Use) -> Result<Self, Error> {
        // DataFusion's messages may span lines; errors are one line here.
        let bad = |message: String| {
            let message = message.lines().map(str::trim).collect::<Vec<_>>().join(" ");
            match usage {
                Use::Filter | Use::Condition => Error::Filter {
                    filter: sql.to_string(),
                    message,
                },
                Use::Value => Error::Expression {
                    expression: sql.to_string(),
                    message,
                },
            }
        };
        let mut ast = parse::parse_filter(sql).map_err(bad)?;
        dialect::reference_dialect(&mut ast).map_err(bad)?;
        if usage == Use::Condition {
            qualified_sides(&mut ast);
        }
        let full = DFSchema::try_from(schema.clone()).map_err(|e| bad(e.to_string()))?;
        // `CAST(x AS string)` is a plain string (Lance stores no view types)
        let options = ParserOptions {
            enable_ident_normalization: false,
            map_string_types_to_utf8view: false,
            ..ParserOptions::new()
        };
        let planner = SqlToRel::new_with_options(&*FUNCTIONS, options);
        let expr = planner
            .sql_to_expr(ast, &full, &mut PlannerContext::new())
            .map_err(|e| bad(e.strip_backtrace()))?;
        let repeatable = !calls_changing_function(&expr);
        let expr = literal::type_literals(&expr, &full).map_err(bad)?;
        let expr = literal::reference_comparisons(expr, &full)
            .and_then(udf::null_needles)
            .and_then(literal::coerce_literal_lists)
            .and_then(literal::fold_literal_casts)
            .map_err(|e| bad(e.strip_backtrace()))?;
        let expr = match usage {
            Use::Filter | Use::Condition => regexp_match_as_bool(expr),
            Use::Value => expr,
        };

        // Compile against just the columns the expression reads, in dataset order.
        let refs = expr.column_refs();
        let mut columns = Vec::new();
        let mut fields = Vec::new();
        for f in schema.fields() {
            if refs.iter().any(|c| c.name == *f.name()) {
                columns.push(f.name().clone());
                fields.push(f.clone());
            }
        }
        let input = Arc::new(Schema::new(fields));
        let df =
            Arc::new(DFSchema::try_from(input.as_ref().clone()).map_err(|e| bad(e.to_string()))?);
        let ctx = SimplifyContext::builder()
            .with_schema(df.clone())
            .with_query_execution_start_time(Some(chrono_now()))
            .build();
        let simplifier = ExprSimplifier::new(ctx);
        // Simplify, coerce, simplify again: the second pass folds the casts coercion put
        // around typed literals (`TIMESTAMP '…'`, a fraction against a decimal) back into
        // the column's own type where the value allows (DataFusion's unwrap-cast rule:
        // a timestamp literal truncated to the column's unit, a decimal one rescaled), so
        // the column is never cast to a finer unit or a wider decimal that its values
        // overflow (0001-01-01 in microseconds has no nanosecond value), as the reference
        // plans them.
        let expr = simplifier
            .simplify(expr)
            .and_then(|e| simplifier.coerce(e, &df))
            .and_then(literal::fold_literal_casts)
            .and_then(|e| simplifier.simplify(e))
            .and_then(literal::both_zeros)
            .map_err(|e| bad(e.strip_backtrace()))?;
        let mut data_type = expr
            .get_type(df.as_ref())
            .map_err(|e| bad(e.strip_backtrace()))?;
        // a function may still return a view type: its values are cast to the plain type
        let plain = lancer_table::write::normalize_type(&data_type);
        let expr = if plain == data_type {
            expr
        } else {
            data_type = plain.clone();
            Expr::Cast(datafusion_expr::Cast::new(Box::new(expr), plain))
        };
        // whether it can be null: as DataFusion derives it (a literal or arithmetic on
        // non-nullable columns cannot), which is how the reference types a computed column
        let nullable = expr
            .nullable(df.as_ref())
            .map_err(|e| bad(e.strip_backtrace()))?;
        if usage != Use::Value && data_type != DataType::Boolean {
            return Err(bad(format!(
                "a filter must be a boolean expression; this one is of type {data_type}"
            )));
        }
        let physical = datafusion_physical_expr::create_physical_expr(
            &expr,
            &df,
            &ExecutionProps::new(),
            &PhysicalPlanningContext::default(),
        )
        .map_err(|e| bad(e.strip_backtrace()))?;
        Ok(Self {
            sql: sql.to_string(),
            expr,
            columns,
            input,
            data_type,
            nullable,
            repeatable,
            physical,
        })
    }

    /// The expression text.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The top-level columns the expression reads, in schema order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The typed expression (after literal typing, simplification and coercion).
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// The type of the values it computes.
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// Whether it can compute a null (false for literals and for arithmetic or casts of
    /// non-nullable columns).
    pub fn nullable(&self) -> bool {
        self.nullable
    }

    /// Whether the same rows always give the same values: it calls no function whose
    /// result changes between calls (`random()`) or queries (`now()`, `current_date`).
    pub fn repeatable(&self) -> bool {
        self.repeatable
    }

    /// Evaluates on `batch`, which must hold the [`Expression::columns`] by name (other
    /// columns are ignored): one value per row.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<ArrayRef, Error> {
        let n = batch.num_rows();
        let failed = |message: String| Error::Expression {
            expression: self.sql.clone(),
            message,
        };
        let mut cols = Vec::with_capacity(self.columns.len());
        for name in &self.columns {
            let c = batch
                .column_by_name(name)
                .ok_or_else(|| failed(format!("the batch has no column {name:?}")))?;
            cols.push(c.clone());
        }
        let input = RecordBatch::try_new_with_options(
            self.input.clone(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )?;
        self.physical
            .evaluate(&input)
            .and_then(|v| v.into_array(n))
            .map_err(|e| failed(e.strip_backtrace()))
    }
}

impl Filter {
    /// Compiles `sql` against `schema` (a dataset's schema). Errors name the token, column
    /// or type that is wrong.
    pub fn new(sql: &str, schema: &Schema) -> Result<Self, Error> {
        Ok(Self {
            inner: Expression::compile(sql, schema, Use::Filter)?,
        })
    }

    /// A merge condition over matched pairs of rows (pylance's
    /// `when_matched_update_all(condition)`): `source.x` and `target.x` name column `x`
    /// of the source row and of the dataset row. It is evaluated on batches of the
    /// columns `source__x` (of `source`) and `target__x` (of `target`).
    pub fn merge_condition(sql: &str, source: &Schema, target: &Schema) -> Result<Self, Error> {
        let side = |prefix: &str, s: &Schema| -> Vec<arrow_schema::Field> {
            s.fields()
                .iter()
                .map(|f| {
                    f.as_ref()
                        .clone()
                        .with_name(format!("{prefix}__{}", f.name()))
                })
                .collect()
        };
        let mut fields = side("source", source);
        fields.extend(side("target", target));
        // messages name the columns as the condition does
        let readable = |e: Error| match e {
            Error::Filter { filter, message } => Error::Filter {
                filter,
                message: message
                    .replace("source__", "source.")
                    .replace("target__", "target."),
            },
            other => other,
        };
        Ok(Self {
            inner: Expression::compile(sql, &Schema::new(fields), Use::Condition)
                .map_err(readable)?,
        })
    }

    /// The filter text.
    pub fn sql(&self) -> &str {
        self.inner.sql()
    }

    /// The top-level columns the filter reads, in schema order.
    pub fn columns(&self) -> &[String] {
        self.inner.columns()
    }

    /// Whether the same rows always pass ([`Expression::repeatable`]).
    pub fn repeatable(&self) -> bool {
        self.inner.repeatable()
    }

    /// The typed expression (after literal typing, simplification and coercion).
    pub fn expr(&self) -> &Expr {
        self.inner.expr()
    }

    /// Which rows of `batch` pass (null counts as not passing). `batch` must hold the
    /// [`Filter::columns`] by name; other columns are ignored.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray, Error> {
        let as_filter = |e: Error| match e {
            Error::Expression { message, .. } => Error::Filter {
                filter: self.inner.sql.clone(),
                message,
            },
            other => other,
        };
        let value = self.inner.evaluate(batch).map_err(as_filter)?;
        let mask = value.as_boolean_opt().ok_or_else(|| Error::Filter {
            filter: self.inner.sql.clone(),
            message: format!("evaluated to {} instead of booleans", value.data_type()),
        })?;
        // Null → false, so callers can use the values directly.
        Ok(match mask.nulls() {
            Some(nulls) if nulls.null_count() > 0 => {
                BooleanArray::new(mask.values() & nulls.inner(), None)
            }
            _ => mask.clone(),
        })
    }
}

/// `source.x` / `target.x` (any case) → the columns `source__x` / `target__x`.
fn qualified_sides(ast: &mut sql::Expr) {
    let _ = visit_expressions_mut(ast, |e| {
        if let sql::Expr::CompoundIdentifier(parts) = e {
            let side = parts.first().map(|p| p.value.to_ascii_lowercase());
            if let (Some(side @ ("source" | "target")), true) = (side.as_deref(), parts.len() >= 2)
            {
                let name = sql::Ident::new(format!("{side}__{}", parts[1].value));
                *e = if parts.len() == 2 {
                    sql::Expr::Identifier(name)
                } else {
                    let mut rest = vec![name];
                    rest.extend(parts[2..].iter().cloned());
                    sql::Expr::CompoundIdentifier(rest)
                };
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// `regexp_match(...)` used as a condition means "matches" (the reference's rule, kept for
/// old filters; `regexp_like` is the boolean form).
fn regexp_match_as_bool(expr: Expr) -> Expr {
    use datafusion_expr::BinaryExpr;
    match expr {
        Expr::ScalarFunction(f) if f.name() == "regexp_match" => {
            Expr::IsNotNull(Box::new(Expr::ScalarFunction(f)))
        }
        Expr::BinaryExpr(b) => Expr::BinaryExpr(BinaryExpr::new(
            Box::new(regexp_match_as_bool(*b.left)),
            b.op,
            Box::new(regexp_match_as_bool(*b.right)),
        )),
        Expr::Not(e) => Expr::Not(Box::new(regexp_match_as_bool(*e))),
        Expr::IsNull(e) => Expr::IsNull(Box::new(regexp_match_as_bool(*e))),
        Expr::IsNotNull(e) => Expr::IsNotNull(Box::new(regexp_match_as_bool(*e))),
        other => other,
    }
}

/// Whether `expr` calls a function that is not immutable (DataFusion's volatility:
/// `now()` is stable within a query, `random()` volatile).
fn calls_changing_function(expr: &Expr) -> bool {
    use datafusion_common::tree_node::TreeNode;
    expr.exists(|e| {
        Ok(matches!(e, Expr::ScalarFunction(f)
            if f.func.signature().volatility != datafusion_expr::Volatility::Immutable))
    })
    .unwrap_or(true)
}

fn chrono_now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int32Array, StringArray};
    use arrow_schema::Field;

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let x: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(3), Some(4)]));
        let s: ArrayRef = Arc::new(StringArray::from(vec![
            Some("ab"),
            Some("b"),
            None,
            Some("ba"),
        ]));
        RecordBatch::try_new(schema, vec![x, s])
            .unwrap_or_else(|_| RecordBatch::new_empty(Arc::new(Schema::empty())))
    }

    fn passing(sql: &str) -> Vec<bool> {
        let b = batch();
        Filter::new(sql, &b.schema())
            .and_then(|f| f.evaluate(&b))
            .map(|m| m.iter().map(|v| v == Some(true)).collect())
            .unwrap_or_default()
    }

    #[test]
    fn nulls_fail_and_legacy_forms_work() {
        // x > 1 is null for the null x: that row does not pass.
        assert_eq!(passing("x > 1"), vec![false, false, true, true]);
        assert_eq!(passing("NOT (x > 1)"), vec![true, false, false, false]);
        assert_eq!(passing("is_valid(s)"), vec![true, true, false, true]);
        assert_eq!(
            passing("regexp_match(s, '^a')"),
            vec![true, false, false, false]
        );
        assert_eq!(passing("true"), vec![true; 4]);
        let f = Filter::new("x > 1 AND s LIKE 'b%'", &batch().schema());
        assert_eq!(
            f.map(|f| f.columns().to_vec()).unwrap_or_default(),
            vec!["x".to_string(), "s".to_string()]
        );
    }

    #[test]
    fn refusals_are_typed_and_name_the_problem() {
        let schema = batch().schema();
        for (sql, needle) in [
            ("x = 'a'", "Int32"),
            ("nope = 1", "nope"),
            ("x +", "EOF"),
            ("x", "boolean"),
        ] {
            match Filter::new(sql, &schema) {
                Err(Error::Filter { filter, message }) => {
                    assert_eq!(filter, sql);
                    assert!(message.contains(needle), "{sql}: {message}");
                    assert!(!message.contains('\n'));
                }
                other => panic!("{sql}: {other:?}"),
            }
        }
    }
}
