//! The reference's SQL dialect where it differs from DataFusion's reading of the same
//! text (pinned by the differential test, `crates/lancer/tests/differential.rs`, and
//! the filter suite), applied to the parsed expression before planning. (Lancer also
//! plans SQL the reference's parser does not know — `CASE`, `INTERVAL`, `TIME`,
//! `VARCHAR`, 256-bit decimals — as DataFusion does: a superset, listed in
//! `tests/data/filters.sql`.)
//! - `is_valid(x)`, an old spelling the reference still accepts, is `x IS NOT NULL`;
//! - `DATETIME` and `DATETIME(n)` (MySQL's names) are `TIMESTAMP(6)` / `TIMESTAMP(n)`;
//!   `BINARY` and `VARBINARY` are `BYTEA`;
//! - `TIMESTAMP '…'` and `CAST(… AS TIMESTAMP)` without a precision are microsecond
//!   timestamps (pyarrow's default), not nanoseconds: a literal's unit decides how it is
//!   truncated and whether it fits (`TIMESTAMP '0001-01-01 00:00:00'` has no nanosecond
//!   value);
//! - the negation of a whole number beyond the signed 64-bit range
//!   (`-9223372036854775808`) is a float, which no integer column takes.

use std::ops::ControlFlow;

use datafusion_sql::sqlparser::ast::{self as sql, visit_expressions_mut};

/// Rewrites `ast` to the reference's reading, or names what the reference refuses.
pub(crate) fn reference_dialect(ast: &mut sql::Expr) -> Result<(), String> {
    let flow = visit_expressions_mut(ast, |e| {
        match e {
            sql::Expr::Function(f) => {
                let is_valid =
                    f.name.0.len() == 1 && f.name.to_string().eq_ignore_ascii_case("is_valid");
                if let (true, sql::FunctionArguments::List(list)) = (is_valid, &f.args) {
                    if let [sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(arg))] =
                        list.args.as_slice()
                    {
                        *e = sql::Expr::IsNotNull(Box::new(arg.clone()));
                    }
                }
            }
            sql::Expr::TypedString(ts) => {
                if let Err(why) = reference_type(&mut ts.data_type) {
                    return ControlFlow::Break(why);
                }
            }
            sql::Expr::Cast { data_type, .. } => {
                if let Err(why) = reference_type(data_type) {
                    return ControlFlow::Break(why);
                }
            }
            sql::Expr::UnaryOp {
                op: sql::UnaryOperator::Minus,
                expr,
            } => {
                if let sql::Expr::Value(v) = expr.as_mut() {
                    if let sql::Value::Number(n, _) = &mut v.value {
                        if n.bytes().all(|b| b.is_ascii_digit()) && n.parse::<i64>().is_err() {
                            n.push_str("e0");
                        }
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    });
    match flow {
        ControlFlow::Break(why) => Err(why),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// A SQL type as the reference reads it: a timestamp without a precision has
/// microseconds.
fn reference_type(t: &mut sql::DataType) -> Result<(), String> {
    match t {
        sql::DataType::Timestamp(p @ None, _) => *p = Some(6),
        // `DATETIME` / `DATETIME(n)`: a timestamp without time zone, microseconds unless
        // a precision is given
        sql::DataType::Datetime(p) => {
            *t = sql::DataType::Timestamp(Some(p.unwrap_or(6)), sql::TimezoneInfo::None)
        }
        // `BINARY` / `VARBINARY`: DataFusion's `BYTEA` (variable-length bytes)
        sql::DataType::Binary(_) | sql::DataType::Varbinary(_) => *t = sql::DataType::Bytea,
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sql: &str) -> Result<String, String> {
        let mut ast = crate::filter::parse::parse_filter(sql)?;
        reference_dialect(&mut ast)?;
        Ok(ast.to_string())
    }

    #[test]
    fn reference_readings() {
        assert_eq!(read("is_valid(a)").as_deref(), Ok("a IS NOT NULL"));
        assert!(read("t > TIMESTAMP '2020-01-01'").is_ok_and(|s| s.contains("TIMESTAMP(6)")));
        assert!(read("t > TIMESTAMP(9) '2020-01-01'").is_ok_and(|s| s.contains("TIMESTAMP(9)")));
        assert!(
            read("t > CAST('2020-01-01' AS DATETIME)").is_ok_and(|s| s.contains("TIMESTAMP(6)"))
        );
        assert!(
            read("t > CAST('2020-01-01' AS DATETIME(3))").is_ok_and(|s| s.contains("TIMESTAMP(3)"))
        );
        assert!(read("t > DATETIME '2020-01-01'").is_ok_and(|s| s.contains("TIMESTAMP(6)")));
        assert!(read("CAST(s AS BINARY) = X'61'").is_ok_and(|s| s.contains("BYTEA")));
        assert!(read("i > -9223372036854775808").is_ok_and(|s| s.contains("e0")));
        assert!(read("i > -9223372036854775807").is_ok_and(|s| !s.contains("e0")));
        assert!(read("u > 9223372036854775808").is_ok_and(|s| !s.contains("e0")));
    }
}
