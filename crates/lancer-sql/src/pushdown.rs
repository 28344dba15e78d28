//! DataFusion filter expressions as Lancer's SQL filters (the reference's filter
//! dialect, spec "Filter expressions"): an expression goes down to the scan only when
//! its text, unparsed with backtick-quoted identifiers (the dialect's only identifier
//! quotes: `"x"` would be a string), compiles as a Lancer filter over the table's
//! schema — then Lancer evaluates it exactly (scalar indexes included) and DataFusion
//! does not evaluate it again. Anything else stays with DataFusion.

use arrow_schema::Schema;
use datafusion::logical_expr::Expr;
use datafusion::sql::unparser::dialect::Dialect;
use datafusion::sql::unparser::Unparser;

/// The unparser's dialect: every identifier in backticks.
struct Backticks;

impl Dialect for Backticks {
    fn identifier_quote_style(&self, _identifier: &str) -> Option<char> {
        Some('`')
    }
}

/// `expr` with its columns unqualified (`ds.id` is the table's `id`: qualified, Lancer
/// would read it as the field `id` of a struct `ds`).
fn unqualified(expr: &Expr) -> Option<Expr> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::common::Column;
    expr.clone()
        .transform(|e| match e {
            Expr::Column(c) if c.relation.is_some() => Ok(Transformed::yes(Expr::Column(
                Column::new_unqualified(c.name),
            ))),
            other => Ok(Transformed::no(other)),
        })
        .ok()
        .map(|t| t.data)
}

/// `expr` as SQL text in Lancer's dialect (columns unqualified, in backticks).
fn unparsed(expr: &Expr) -> Option<String> {
    let dialect = Backticks;
    Some(
        Unparser::new(&dialect)
            .expr_to_sql(&unqualified(expr)?)
            .ok()?
            .to_string(),
    )
}

/// `expr` as a Lancer filter over `schema`, if Lancer evaluates it.
pub(crate) fn lancer_filter(expr: &Expr, schema: &Schema) -> Option<String> {
    let sql = unparsed(expr)?;
    lancer::Filter::new(&sql, schema).ok().map(|_| sql)
}

/// `expr` as a Lancer value expression over `schema` (an UPDATE's `SET`), if Lancer
/// evaluates it.
pub(crate) fn lancer_expression(expr: &Expr, schema: &Schema) -> Option<String> {
    let sql = unparsed(expr)?;
    lancer::Expression::new(&sql, schema).ok().map(|_| sql)
}

/// The conjunction of `filters` (each already a Lancer filter), as one filter.
pub(crate) fn conjunction(filters: &[String]) -> Option<String> {
    match filters {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(
            many.iter()
                .map(|f| format!("({f})"))
                .collect::<Vec<_>>()
                .join(" AND "),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};
    use datafusion::logical_expr::{col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("Name", DataType::Utf8, true),
        ])
    }

    #[test]
    fn filters_lancer_evaluates_go_down_in_its_dialect() {
        let s = schema();
        let f = lancer_filter(&col("id").gt(lit(5i64)), &s);
        assert_eq!(f.as_deref(), Some("(`id` > 5)"));
        // a mixed-case name keeps its case, quoted in backticks (never as a string)
        let name = Expr::Column(datafusion::common::Column::new_unqualified("Name"));
        let f = lancer_filter(&name.eq(lit("x")), &s);
        assert_eq!(f.as_deref(), Some("(`Name` = 'x')"));
        // a qualified column is the table's own
        let q = datafusion::logical_expr::col("t.id").gt(lit(5i64));
        assert_eq!(lancer_filter(&q, &s).as_deref(), Some("(`id` > 5)"));
        // a column the table lacks: DataFusion's to evaluate
        assert_eq!(lancer_filter(&col("nope").eq(lit(1i64)), &s), None);
        assert_eq!(
            conjunction(&["a".into(), "b".into()]).as_deref(),
            Some("(a) AND (b)")
        );
    }
}
