//! SQL text → a sqlparser expression, in the reference's filter dialect (spec: "Filter
//! expressions" — SQL boolean expressions). The dialect is the generic one except that only
//! backticks quote identifiers, so `"text"` is a string like `'text'`, and `==` means `=`.

use datafusion_sql::sqlparser::ast::Expr as SqlExpr;
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
    Ok(expr)
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
    }
}
