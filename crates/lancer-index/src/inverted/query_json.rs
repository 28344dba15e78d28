//! Full-text queries written as JSON, in the shape Lance serializes its `FtsQuery`
//! (one key naming the kind): `{"match": {"column", "terms", "boost", "fuzziness",
//! "max_expansions", "operator": "And"|"Or", "prefix_length"}}`, `{"phrase": {"column",
//! "terms", "slop"}}`, `{"boost": {"positive", "negative", "negative_boost"}}`,
//! `{"multi_match": {"query", "columns", "boost": [..]}}`, `{"boolean": {"should",
//! "must", "must_not"}}`. A malformed text is an error naming its line and column; a
//! wrong shape one naming the path to the offending part (`boolean.must[1].match`).

use serde_json::{Map, Value};

use super::search::{FtsQuery, Occur};
use crate::{IndexError, Result};

fn bad(path: &str, what: impl std::fmt::Display) -> IndexError {
    IndexError::InvalidArgument {
        what: format!("full-text query at {path}: {what}"),
    }
}

/// Parses a JSON full-text query (see the module documentation).
pub fn parse(text: &str) -> Result<FtsQuery> {
    // serde_json bounds nesting (128 levels), so hostile depth is an error, not a crash
    let v: Value = serde_json::from_str(text).map_err(|e| IndexError::InvalidArgument {
        what: format!(
            "full-text query is not JSON: {e} (line {}, column {})",
            e.line(),
            e.column()
        ),
    })?;
    query(&v, "$")
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| bad(path, format!("expected an object, found {v}")))
}

fn string(m: &Map<String, Value>, key: &str, path: &str) -> Result<String> {
    match m.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(bad(
            &format!("{path}.{key}"),
            format!("expected a string, found {other}"),
        )),
        None => Err(bad(path, format!("missing {key:?}"))),
    }
}

fn opt_string(m: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => string(m, key, path).map(Some),
    }
}

fn number(m: &Map<String, Value>, key: &str, path: &str, default: f64) -> Result<f64> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| bad(&format!("{path}.{key}"), "not a finite number")),
        Some(other) => Err(bad(
            &format!("{path}.{key}"),
            format!("expected a number, found {other}"),
        )),
    }
}

fn count(m: &Map<String, Value>, key: &str, path: &str, default: u64) -> Result<u64> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| {
            bad(
                &format!("{path}.{key}"),
                format!("expected a count, found {v}"),
            )
        }),
    }
}

fn only(m: &Map<String, Value>, keys: &[&str], path: &str) -> Result<()> {
    match m.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(bad(
            path,
            format!("unknown key {k:?} (known: {})", keys.join(", ")),
        )),
        None => Ok(()),
    }
}

fn query(v: &Value, path: &str) -> Result<FtsQuery> {
    let m = object(v, path)?;
    let (kind, body) =
        match (m.len(), m.iter().next()) {
            (1, Some((k, b))) => (k.as_str(), b),
            _ => return Err(bad(
                path,
                "expected one key naming the query: match, phrase, boost, multi_match or boolean",
            )),
        };
    let at = format!("{path}.{kind}");
    let b = object(body, &at)?;
    match kind {
        "match" => {
            only(
                b,
                &[
                    "column",
                    "terms",
                    "boost",
                    "fuzziness",
                    "max_expansions",
                    "operator",
                    "prefix_length",
                ],
                &at,
            )?;
            let and = match opt_string(b, "operator", &at)?.as_deref() {
                None => false,
                Some(o) if o.eq_ignore_ascii_case("and") => true,
                Some(o) if o.eq_ignore_ascii_case("or") => false,
                Some(o) => return Err(bad(&format!("{at}.operator"), format!("{o:?}: And or Or"))),
            };
            Ok(FtsQuery::Match {
                column: opt_string(b, "column", &at)?,
                text: string(b, "terms", &at)?,
                and,
                boost: number(b, "boost", &at, 1.0)? as f32,
                fuzziness: u32::try_from(count(b, "fuzziness", &at, 0)?)
                    .map_err(|_| bad(&format!("{at}.fuzziness"), "too large"))?,
                prefix_length: u32::try_from(count(b, "prefix_length", &at, 0)?)
                    .map_err(|_| bad(&format!("{at}.prefix_length"), "too large"))?,
                max_expansions: usize::try_from(count(b, "max_expansions", &at, 50)?)
                    .map_err(|_| bad(&format!("{at}.max_expansions"), "too large"))?,
            })
        }
        "phrase" => {
            only(b, &["column", "terms", "slop"], &at)?;
            Ok(FtsQuery::Phrase {
                column: opt_string(b, "column", &at)?,
                text: string(b, "terms", &at)?,
                slop: u32::try_from(count(b, "slop", &at, 0)?)
                    .map_err(|_| bad(&format!("{at}.slop"), "too large"))?,
            })
        }
        "boost" => {
            only(b, &["positive", "negative", "negative_boost"], &at)?;
            let positive = b
                .get("positive")
                .ok_or_else(|| bad(&at, "missing \"positive\""))?;
            let negative = b
                .get("negative")
                .ok_or_else(|| bad(&at, "missing \"negative\""))?;
            Ok(FtsQuery::Boost {
                positive: Box::new(query(positive, &format!("{at}.positive"))?),
                negative: Box::new(query(negative, &format!("{at}.negative"))?),
                negative_boost: number(b, "negative_boost", &at, 0.5)? as f32,
            })
        }
        "multi_match" => {
            only(b, &["query", "columns", "boost", "operator"], &at)?;
            let columns: Vec<String> = match b.get("columns") {
                Some(Value::Array(a)) if !a.is_empty() => a
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        c.as_str().map(str::to_string).ok_or_else(|| {
                            bad(&format!("{at}.columns[{i}]"), "expected a column name")
                        })
                    })
                    .collect::<Result<_>>()?,
                _ => return Err(bad(&at, "\"columns\" must be a non-empty list of names")),
            };
            let boosts = match b.get("boost") {
                None | Some(Value::Null) => vec![1.0; columns.len()],
                Some(Value::Array(a)) if a.len() == columns.len() => a
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        x.as_f64()
                            .map(|f| f as f32)
                            .ok_or_else(|| bad(&format!("{at}.boost[{i}]"), "expected a number"))
                    })
                    .collect::<Result<_>>()?,
                Some(_) => return Err(bad(&format!("{at}.boost"), "one number per column")),
            };
            let and = matches!(opt_string(b, "operator", &at)?.as_deref(), Some(o) if o.eq_ignore_ascii_case("and"));
            Ok(FtsQuery::MultiMatch {
                text: string(b, "query", &at)?,
                columns,
                boosts,
                and,
            })
        }
        "boolean" => {
            only(b, &["should", "must", "must_not"], &at)?;
            let mut clauses = Vec::new();
            for (key, occur) in [
                ("should", Occur::Should),
                ("must", Occur::Must),
                ("must_not", Occur::MustNot),
            ] {
                match b.get(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(a)) => {
                        for (i, q) in a.iter().enumerate() {
                            clauses.push((occur, query(q, &format!("{at}.{key}[{i}]"))?));
                        }
                    }
                    Some(_) => {
                        return Err(bad(&format!("{at}.{key}"), "expected a list of queries"))
                    }
                }
            }
            Ok(FtsQuery::Boolean(clauses))
        }
        other => Err(bad(
            path,
            format!("unknown query {other:?} (match, phrase, boost, multi_match, boolean)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lance_shaped_queries_parse() {
        let q = parse(r#"{"match": {"column": "text", "terms": "hello world", "boost": 2.0, "fuzziness": 1, "max_expansions": 10, "operator": "And", "prefix_length": 0}}"#).unwrap();
        assert_eq!(
            q,
            FtsQuery::Match {
                column: Some("text".into()),
                text: "hello world".into(),
                and: true,
                boost: 2.0,
                fuzziness: 1,
                prefix_length: 0,
                max_expansions: 10,
            }
        );
        let q = parse(r#"{"boolean": {"must": [{"phrase": {"terms": "a b", "slop": 1}}], "must_not": [{"match": {"terms": "c"}}]}}"#).unwrap();
        let FtsQuery::Boolean(c) = q else { panic!() };
        assert_eq!(c.len(), 2);
        assert!(matches!(
            c[0],
            (Occur::Must, FtsQuery::Phrase { slop: 1, .. })
        ));
        let q = parse(r#"{"multi_match": {"query": "x", "columns": ["a", "b"], "boost": [1, 2]}}"#)
            .unwrap();
        assert!(matches!(q, FtsQuery::MultiMatch { ref boosts, .. } if boosts == &[1.0, 2.0]));
    }

    #[test]
    fn malformed_queries_name_where() {
        let e = parse(r#"{"match": {"terms": "x",}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("column"), "{e}");
        let e = parse(r#"{"boolean": {"must": [{"match": {"terms": 1}}]}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("$.boolean.must[0].match.terms"), "{e}");
        let e = parse(r#"{"nope": {}}"#).unwrap_err().to_string();
        assert!(e.contains("unknown query \"nope\""), "{e}");
        let e = parse(r#"{"match": {"terms": "x", "colum": "t"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key \"colum\""), "{e}");
        let deep = "{\"boost\": {\"positive\": ".repeat(300);
        assert!(parse(&deep).is_err(), "nesting is bounded");
    }
}
