//! SQL text → a sqlparser expression, in the reference's filter dialect (spec: "Filter
//! expressions" — SQL boolean expressions). The dialect is the generic one except that only
//! backticks quote identifiers, so `"text"` is a string like `'text'`, and `==` means `=`.

use std::ops::ControlFlow;

use datafusion_sql::sqlparser::ast::{BinaryOperator, Expr as SqlExpr, Visit, Visitor};
use datafusion_sql::sqlparser::dialect::{Dialect, GenericDialect};
use datafusion_sql::sqlparser::parser::Parser;
use datafusion_sql::sqlparser::tokenizer::{Token, Tokenizer};

/// The filter dialect: generic SQL, backtick-quoted identifiers only.
#[derive(Debug, Default)]
pub(crate) struct FilterDialect(GenericDialect);

impl Dialect for FilterDialect {
    // Parse exactly as the generic dialect does (sqlparser keys dialect-specific rules on
    // this id); only identifier quoting differs.
    fn dialect(&self) -> std::any::TypeId {
        self.0.dialect()
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.0.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.0.is_identifier_part(ch)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`'
    }
}

/// Parses one boolean expression; all of `sql` must be consumed. The error text is
/// sqlparser's, which names the unexpected token and its line/column.
pub(crate) fn parse_filter(sql: &str) -> Result<SqlExpr, String> {
    let dialect = FilterDialect::default();
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize()
        .map_err(|e| e.to_string())?;
    // `a == b`: sqlparser reads `==` as equality already; a spaced `= =` is folded too.
    let mut folded: Vec<Token> = Vec::with_capacity(tokens.len());
    for t in tokens {
        if matches!((folded.last(), &t), (Some(Token::Eq), Token::Eq)) {
            continue;
        }
        folded.push(t);
    }
    if folded.iter().all(|t| matches!(t, Token::Whitespace(_))) {
        return Err("the filter is empty".into());
    }
    let mut parser = Parser::new(&dialect).with_tokens(folded);
    let expr = parser.parse_expr().map_err(|e| e.to_string())?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(format!(
            "unexpected {} after the end of the expression at {}",
            next.token, next.span.start
        ));
    }
    let expr = balance(expr);
    let mut depth = Depth::default();
    let _ = expr.visit(&mut depth);
    if depth.max > MAX_DEPTH {
        return Err(format!(
            "the expression nests {} levels deep; at most {MAX_DEPTH} are accepted \
             (for long lists of alternatives use `col IN (...)`)",
            depth.max
        ));
    }
    Ok(expr)
}

/// Deepest nesting a filter may have after AND / OR chains are balanced: planning and
/// evaluation recurse once per level.
const MAX_DEPTH: usize = 200;

/// Measures how deep expressions nest.
#[derive(Default)]
struct Depth {
    current: usize,
    max: usize,
}

impl Visitor for Depth {
    type Break = ();

    fn pre_visit_expr(&mut self, _expr: &SqlExpr) -> ControlFlow<()> {
        self.current += 1;
        self.max = self.max.max(self.current);
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _expr: &SqlExpr) -> ControlFlow<()> {
        self.current = self.current.saturating_sub(1);
        ControlFlow::Continue(())
    }
}

/// Rebuilds every chain of one logical operator (`a OR b OR c ...`, parsed left-deep, one
/// level per term) as a balanced tree: the same value (AND and OR are associative, also
/// with NULLs) at depth log2(terms), so a generated filter of thousands of alternatives
/// plans and evaluates without deep recursion.
fn balance(expr: SqlExpr) -> SqlExpr {
    match expr {
        SqlExpr::BinaryOp { left, op, right }
            if matches!(op, BinaryOperator::And | BinaryOperator::Or) =>
        {
            // Walk the chain without recursion (it may be thousands long).
            let mut terms = Vec::new();
            let mut stack = vec![*right, *left];
            while let Some(e) = stack.pop() {
                match e {
                    SqlExpr::BinaryOp { left, op: o, right } if o == op => {
                        stack.push(*right);
                        stack.push(*left);
                    }
                    other => terms.push(balance(other)),
                }
            }
            build(terms, &op)
        }
        SqlExpr::Nested(inner) => SqlExpr::Nested(Box::new(balance(*inner))),
        SqlExpr::UnaryOp { op, expr } => SqlExpr::UnaryOp {
            op,
            expr: Box::new(balance(*expr)),
        },
        other => other,
    }
}

/// `terms` joined by `op` as a balanced tree, in order.
fn build(mut terms: Vec<SqlExpr>, op: &BinaryOperator) -> SqlExpr {
    if terms.len() <= 1 {
        return terms.pop().unwrap_or(SqlExpr::Value(
            datafusion_sql::sqlparser::ast::Value::Boolean(true).into(),
        ));
    }
    let right = terms.split_off(terms.len() / 2);
    SqlExpr::BinaryOp {
        left: Box::new(build(terms, op)),
        op: op.clone(),
        right: Box::new(build(right, op)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_rules() {
        assert!(parse_filter("a == 1").is_ok());
        assert!(parse_filter("`weird col` > 1").is_ok());
        let quoted = parse_filter("s = \"x\"").map(|e| e.to_string());
        assert_eq!(quoted.as_deref(), Ok("s = \"x\""));
        assert!(parse_filter("a > 1 b").is_err_and(|e| e.contains('b')));
        assert!(parse_filter("  ").is_err());
        assert!(parse_filter("a >").is_err_and(|e| e.contains("EOF")));
        // A long OR chain comes back balanced, terms in order.
        let chain: Vec<String> = (0..1000).map(|i| format!("a = {i}")).collect();
        let e = parse_filter(&chain.join(" OR "));
        let depth = |e: &SqlExpr| -> usize {
            let mut d = 0;
            let mut cur = e;
            while let SqlExpr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                ..
            } = cur
            {
                d += 1;
                cur = left;
            }
            d
        };
        assert!(e.as_ref().is_ok_and(|e| depth(e) <= 10));
        assert!(e.is_ok_and(|e| e.to_string().starts_with("a = 0 OR a = 1")));
        let plus = vec!["a"; 300].join(" + ") + " > 1";
        assert!(parse_filter(&plus).is_err_and(|e| e.contains("levels deep")));
    }
}
