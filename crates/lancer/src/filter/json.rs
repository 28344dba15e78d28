//! The JSON functions of filters and computed columns, as the reference lists them
//! (`lance-reference.txt`, JSON guide lines ~8469–8640, "JSON Functions"), with
//! pylance 14's answers (checked by `python/tests/test_json.py` against pylance 14, 12
//! and 11):
//!
//! | function | returns |
//! |---|---|
//! | `json_extract(col, '$.json.path')` | the value at the path as compact JSON text (`"\"Alice\""`, `30`); several matches (`$.a[*]`) as one array; null when nothing matches |
//! | `json_exists(col, '$.path')` | whether the path matches |
//! | `json_get(col, 'key' or 'index')` | the member of an object (by key) or element of an array (by a decimal index) as JSONB (`large_binary`), for further `json_get*` calls |
//! | `json_get_string` / `_int` / `_float` / `_bool` | that member converted strictly: JSON null and a missing key give null; a value that does not convert (`"x"` as an integer) fails the query, as in the reference |
//! | `json_array_contains(col, '$.path', 'v')` | whether an array at the path has an element whose JSON text is `v` or `"v"` |
//! | `json_array_length(col, '$.path')` | the length of the array at the path; null when nothing matches; an error for a scalar |
//!
//! The JSONB values and paths are read with `lance-jsonb` (the crate pylance 14 uses),
//! after [`lancer_format::json::check`] has found the row's bytes whole: damaged bytes
//! are an error naming the column and row, never a read out of bounds. A null document,
//! key or path gives null.

use std::sync::Arc;

use arrow_array::builder::LargeBinaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, LargeBinaryArray, StringArray,
};
use arrow_schema::DataType;
use datafusion_common::{exec_datafusion_err, exec_err, Result};
use datafusion_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use lance_jsonb::jsonpath::{parse_json_path, JsonPath, Selector};
use lance_jsonb::{OwnedJsonb, RawJsonb};

/// Which JSON function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Extract,
    Exists,
    Get,
    GetString,
    GetInt,
    GetFloat,
    GetBool,
    ArrayContains,
    ArrayLength,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::Extract,
        Kind::Exists,
        Kind::Get,
        Kind::GetString,
        Kind::GetInt,
        Kind::GetFloat,
        Kind::GetBool,
        Kind::ArrayContains,
        Kind::ArrayLength,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Extract => "json_extract",
            Kind::Exists => "json_exists",
            Kind::Get => "json_get",
            Kind::GetString => "json_get_string",
            Kind::GetInt => "json_get_int",
            Kind::GetFloat => "json_get_float",
            Kind::GetBool => "json_get_bool",
            Kind::ArrayContains => "json_array_contains",
            Kind::ArrayLength => "json_array_length",
        }
    }

    fn returns(self) -> DataType {
        match self {
            Kind::Extract | Kind::GetString => DataType::Utf8,
            Kind::Exists | Kind::GetBool | Kind::ArrayContains => DataType::Boolean,
            Kind::Get => DataType::LargeBinary,
            Kind::GetInt | Kind::ArrayLength => DataType::Int64,
            Kind::GetFloat => DataType::Float64,
        }
    }

    fn arity(self) -> usize {
        match self {
            Kind::ArrayContains => 3,
            _ => 2,
        }
    }
}

/// One JSON function as a DataFusion scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonFunction {
    kind: Kind,
    signature: Signature,
}

/// The JSON functions, to register with a filter's function table.
pub(crate) fn functions() -> Vec<Arc<ScalarUDF>> {
    Kind::ALL
        .into_iter()
        .map(|kind| {
            let mut types = vec![DataType::LargeBinary];
            types.resize(kind.arity(), DataType::Utf8);
            Arc::new(ScalarUDF::from(JsonFunction {
                kind,
                signature: Signature::exact(types, Volatility::Immutable),
            }))
        })
        .collect()
}

/// One row's value of a string argument (null → `None`).
fn text_at(a: &StringArray, row: usize) -> Option<&str> {
    a.is_valid(row).then(|| a.value(row))
}

/// A parsed JSONPath, reused while consecutive rows carry the same path text.
struct Paths<'p> {
    last: Option<(&'p str, JsonPath<'p>)>,
}

impl<'p> Paths<'p> {
    fn get(&mut self, text: &'p str) -> Result<&JsonPath<'p>> {
        if self.last.as_ref().is_none_or(|(t, _)| *t != text) {
            let parsed = parse_json_path(text.as_bytes())
                .map_err(|e| exec_datafusion_err!("Invalid JSONPath '{text}': {e}"))?;
            self.last = Some((text, parsed));
        }
        match &self.last {
            Some((_, p)) => Ok(p),
            None => exec_err!("Invalid JSONPath '{text}'"),
        }
    }
}

/// A member converted by `convert`; JSON null → `None`.
fn converted<T>(
    value: Option<OwnedJsonb>,
    what: &str,
    convert: impl Fn(&RawJsonb<'_>) -> std::result::Result<T, lance_jsonb::Error>,
) -> Result<Option<T>> {
    let Some(v) = value else { return Ok(None) };
    let raw = v.as_raw();
    if raw
        .is_null()
        .map_err(|e| exec_datafusion_err!("Failed to check null: {e}"))?
    {
        return Ok(None);
    }
    convert(&raw)
        .map(Some)
        .map_err(|e| exec_datafusion_err!("Failed to convert to {what}: {e}"))
}

/// Compact JSON text of a JSONB value.
fn text_of(v: &OwnedJsonb) -> Result<String> {
    serde_json::to_string(&v.as_raw()).map_err(|e| exec_datafusion_err!("{e}"))
}

/// The elements of an array value, in order (`Err` on the first failure to read one:
/// for a value that is not an array).
fn elements(v: RawJsonb<'_>) -> (Vec<OwnedJsonb>, bool) {
    let mut out = Vec::new();
    loop {
        match v.get_by_index(out.len()) {
            Ok(Some(e)) => out.push(e),
            Ok(None) => return (out, false),
            Err(_) => return (out, true),
        }
    }
}

/// The first value `path` (a JSONPath, `x` or `$.a.b`) selects in each document of
/// `docs` (`None` for a null document or no match), as a JSON path index builds it
/// (pylance's `json_extract_with_type`). Damaged documents and bad paths are errors
/// naming `column` and the row.
pub(crate) fn select_first(
    docs: &LargeBinaryArray,
    column: &str,
    path: &str,
) -> std::result::Result<Vec<Option<OwnedJsonb>>, String> {
    let parsed =
        parse_json_path(path.as_bytes()).map_err(|e| format!("invalid JSONPath '{path}': {e}"))?;
    let mut out = Vec::with_capacity(docs.len());
    for row in 0..docs.len() {
        if docs.is_null(row) {
            out.push(None);
            continue;
        }
        let bytes = docs.value(row);
        lancer_format::json::check(bytes).map_err(|why| {
            format!("JSON column {column:?}, row {row} of the batch, holds bytes that are not JSONB ({why})")
        })?;
        let found = Selector::new(RawJsonb::new(bytes))
            .select_values(&parsed)
            .map_err(|e| format!("selecting '{path}' in row {row}: {e}"))?;
        out.push(found.into_iter().next());
    }
    Ok(out)
}

/// The keys of a JSONPath made only of `.name` steps with plain names (`$.a.b`:
/// letters, digits, `_`, not starting with a digit), which [`Call::by_path`] follows
/// member by member; None for any other path.
fn plain_keys(path: &str) -> Option<Vec<&str>> {
    let rest = path.strip_prefix("$.")?;
    let keys: Vec<&str> = rest.split('.').collect();
    keys.iter()
        .all(|k| {
            k.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .then_some(keys)
}

/// Whether an array among `found` holds `sought` (as text, or as a quoted string).
fn contains(found: &[OwnedJsonb], sought: &str) -> Result<bool> {
    let quoted = format!("\"{sought}\"");
    for array in found {
        for e in elements(array.as_raw()).0 {
            let t = text_of(&e)?;
            if t == sought || t == quoted {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The length of the first of `found`, which must be an array (None: nothing found).
fn length(found: &[OwnedJsonb], path: &str) -> Result<Option<i64>> {
    let Some(first) = found.first() else {
        return Ok(None);
    };
    let (items, failed) = elements(first.as_raw());
    if failed && items.is_empty() {
        return exec_err!("Path '{path}' does not point to an array");
    }
    Ok(Some(i64::try_from(items.len()).unwrap_or(i64::MAX)))
}

/// Evaluation over one batch: the documents, their column's name, the other arguments.
struct Call<'a> {
    kind: Kind,
    docs: &'a LargeBinaryArray,
    column: &'a str,
    second: &'a StringArray,
    third: Option<&'a StringArray>,
}

impl Call<'_> {
    /// Row `row`'s document, checked whole ([`lancer_format::json::check`]).
    fn doc(&self, row: usize) -> Result<Option<RawJsonb<'_>>> {
        if self.docs.is_null(row) {
            return Ok(None);
        }
        let bytes = self.docs.value(row);
        lancer_format::json::check(bytes).map_err(|why| self.damaged(row, &why))?;
        Ok(Some(RawJsonb::new(bytes)))
    }

    fn damaged(&self, row: usize, why: &str) -> datafusion_common::DataFusionError {
        exec_datafusion_err!(
            "{}: JSON column {:?}, row {row} of the batch, holds bytes that are not \
             JSONB ({why})",
            self.kind.name(),
            self.column
        )
    }

    /// The member named by the second argument of row `row`'s document (by name in an
    /// object, by index in an array), found by [`lancer_format::json::member`]: only the
    /// document's outer level and the member are read, each checked (a wide document is
    /// not walked whole per row).
    fn member_at(&self, row: usize) -> Result<Option<OwnedJsonb>> {
        if self.docs.is_null(row) {
            return Ok(None);
        }
        let Some(key) = text_at(self.second, row) else {
            return Ok(None);
        };
        let found = lancer_format::json::member(self.docs.value(row), key)
            .map_err(|why| self.damaged(row, &why))?;
        Ok(found.map(OwnedJsonb::from))
    }

    /// Per row, where neither the document nor the path is null (else null): for a
    /// path of plain `.name` steps (`$.a.b`) whose every step lands on an object,
    /// `fast(values it selects, path text, row)` — the members followed with
    /// [`lancer_format::json::member`], reading only what lies on the path; otherwise
    /// `answer(document, path text, parsed path, row)` over the whole document, checked,
    /// by the JSONPath evaluator.
    fn by_path<T>(
        &self,
        fast: impl Fn(&[OwnedJsonb], &str, usize) -> Result<Option<T>>,
        answer: impl Fn(RawJsonb<'_>, &str, &JsonPath<'_>, usize) -> Result<Option<T>>,
    ) -> Result<Vec<Option<T>>> {
        let mut paths = Paths { last: None };
        let mut plain: Option<(&str, Option<Vec<&str>>)> = None;
        let mut out = Vec::with_capacity(self.docs.len());
        for row in 0..self.docs.len() {
            if self.docs.is_null(row) {
                out.push(None);
                continue;
            }
            let Some(p) = text_at(self.second, row) else {
                out.push(None);
                continue;
            };
            if plain.as_ref().is_none_or(|(t, _)| *t != p) {
                plain = Some((p, plain_keys(p)));
            }
            if let Some((_, Some(keys))) = &plain {
                let followed = lancer_format::json::follow(self.docs.value(row), keys)
                    .map_err(|why| self.damaged(row, &why))?;
                if let Some(found) = followed {
                    let found: Vec<OwnedJsonb> = found.into_iter().map(OwnedJsonb::from).collect();
                    out.push(fast(&found, p, row)?);
                    continue;
                }
            }
            out.push(match self.doc(row)? {
                Some(doc) => answer(doc, p, paths.get(p)?, row)?,
                None => None,
            });
        }
        Ok(out)
    }

    /// Per row: the member named by the second argument, converted by `convert`
    /// (`what` names the type in errors); null where the document or key is null,
    /// the member is missing or JSON null.
    fn by_key<T>(
        &self,
        what: &str,
        convert: impl Fn(&RawJsonb<'_>) -> std::result::Result<T, lance_jsonb::Error>,
    ) -> Result<Vec<Option<T>>> {
        (0..self.docs.len())
            .map(|row| converted(self.member_at(row)?, what, &convert))
            .collect()
    }

    fn run(&self) -> Result<ArrayRef> {
        let selected = |what: &str, p: &str, e: lance_jsonb::Error| {
            exec_datafusion_err!("Failed to {what} at path '{p}': {e}")
        };
        Ok(match self.kind {
            Kind::Extract => Arc::new(StringArray::from(self.by_path(
                |found, _, _| found.first().map(text_of).transpose(),
                |doc, p, path, _| {
                    Selector::new(doc)
                        .select_value(path)
                        .map_err(|e| selected("select a value", p, e))?
                        .map(|v| text_of(&v))
                        .transpose()
                },
            )?)),
            Kind::Exists => Arc::new(BooleanArray::from(self.by_path(
                |found, _, _| Ok(Some(!found.is_empty())),
                |doc, p, path, _| {
                    Selector::new(doc)
                        .exists(path)
                        .map(Some)
                        .map_err(|e| selected("check existence", p, e))
                },
            )?)),
            Kind::Get => {
                let mut b = LargeBinaryBuilder::with_capacity(self.docs.len(), 0);
                for row in 0..self.docs.len() {
                    match self.member_at(row)? {
                        Some(v) => b.append_value(v.as_raw().as_ref()),
                        None => b.append_null(),
                    }
                }
                Arc::new(b.finish())
            }
            Kind::GetString => Arc::new(StringArray::from(self.by_key("string", |r| r.to_str())?)),
            Kind::GetInt => Arc::new(Int64Array::from(self.by_key("integer", |r| r.to_i64())?)),
            Kind::GetFloat => Arc::new(Float64Array::from(self.by_key("float", |r| r.to_f64())?)),
            Kind::GetBool => Arc::new(BooleanArray::from(self.by_key("boolean", |r| r.to_bool())?)),
            Kind::ArrayContains => {
                let Some(third) = self.third else {
                    return exec_err!("json_array_contains takes three arguments");
                };
                let sought = |row: usize| text_at(third, row);
                Arc::new(BooleanArray::from(self.by_path(
                    |found, _, row| sought(row).map(|v| contains(found, v)).transpose(),
                    |doc, p, path, row| {
                        let Some(v) = sought(row) else {
                            return Ok(None);
                        };
                        let found = Selector::new(doc)
                            .select_values(path)
                            .map_err(|e| selected("check array contains", p, e))?;
                        contains(&found, v).map(Some)
                    },
                )?))
            }
            Kind::ArrayLength => Arc::new(Int64Array::from(self.by_path(
                |found, p, _| length(found, p),
                |doc, p, path, _| {
                    let found = Selector::new(doc)
                        .select_values(path)
                        .map_err(|e| selected("get array length", p, e))?;
                    length(&found, p)
                },
            )?)),
        })
    }
}

impl ScalarUDFImpl for JsonFunction {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.kind.returns())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.kind.name();
        if args.args.len() != self.kind.arity() {
            return exec_err!("{name} takes {} arguments", self.kind.arity());
        }
        let n = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|a| a.clone().into_array(n))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let column = args
            .arg_fields
            .first()
            .map(|f| f.name().clone())
            .unwrap_or_default();
        let docs = arrays[0].as_binary_opt::<i64>().ok_or_else(|| {
            exec_datafusion_err!(
                "{name} reads a JSON column (JSONB, large_binary), not {}",
                arrays[0].data_type()
            )
        })?;
        let string = |k: usize| {
            arrays[k].as_string_opt::<i32>().ok_or_else(|| {
                exec_datafusion_err!(
                    "{name}'s argument {} must be a string, not {}",
                    k + 1,
                    arrays[k].data_type()
                )
            })
        };
        let call = Call {
            kind: self.kind,
            docs,
            column: &column,
            second: string(1)?,
            third: match self.kind.arity() {
                3 => Some(string(2)?),
                _ => None,
            },
        };
        call.run().map(ColumnarValue::Array)
    }
}

/// The value type an accessor reads (`json_get_int` → Int64, ...), None for other
/// functions: only these reach a JSON path index.
pub(crate) fn accessor_type(function: &str) -> Option<DataType> {
    match function {
        "json_get_int" => Some(DataType::Int64),
        "json_get_float" => Some(DataType::Float64),
        "json_get_bool" => Some(DataType::Boolean),
        "json_get_string" => Some(DataType::Utf8),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;
    use arrow_schema::{Field, Schema};

    use crate::filter::Expression;

    fn docs(texts: &[Option<&str>]) -> (Schema, arrow_array::RecordBatch) {
        let field = Field::new("j", DataType::LargeBinary, true).with_metadata(
            [(
                "ARROW:extension:name".to_string(),
                lancer_format::json::LANCE_JSON_EXT.to_string(),
            )]
            .into(),
        );
        let mut b = LargeBinaryBuilder::new();
        for t in texts {
            match t.map(lancer_format::json::encode) {
                Some(Ok(bytes)) => b.append_value(bytes),
                Some(Err(e)) => panic!("{e}"),
                None => b.append_null(),
            }
        }
        let schema = Schema::new(vec![field]);
        let batch = arrow_array::RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![Arc::new(b.finish()) as ArrayRef],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        (schema, batch)
    }

    fn eval(sql: &str, texts: &[Option<&str>]) -> Result<ArrayRef, crate::Error> {
        let (schema, batch) = docs(texts);
        Expression::new(sql, &schema)?.evaluate(&batch)
    }

    #[test]
    fn functions_answer_by_path_and_key() -> Result<(), crate::Error> {
        let rows = [
            Some(r#"{"a": 1, "s": "x", "arr": [1, "two", 3.5], "o": {"k": true}}"#),
            None,
            Some(r#"["p", "q"]"#),
            Some(r#"{"a": "12", "arr": []}"#),
        ];
        let got = eval("json_extract(j, '$.arr')", &rows)?;
        let got: Vec<Option<&str>> = got.as_string::<i32>().iter().collect();
        assert_eq!(got, vec![Some(r#"[1,"two",3.5]"#), None, None, Some("[]")]);

        let got = eval("json_get_int(j, 'a')", &rows)?;
        let got: Vec<Option<i64>> = got
            .as_primitive::<arrow_array::types::Int64Type>()
            .iter()
            .collect();
        assert_eq!(got, vec![Some(1), None, None, Some(12)]);

        let got = eval("json_get_string(j, '1')", &rows)?;
        let got: Vec<Option<&str>> = got.as_string::<i32>().iter().collect();
        assert_eq!(got, vec![None, None, Some("q"), None]);

        let got = eval("json_array_contains(j, '$.arr', 'two')", &rows)?;
        let got: Vec<Option<bool>> = got.as_boolean().iter().collect();
        assert_eq!(got, vec![Some(true), None, Some(false), Some(false)]);

        let got = eval("json_array_length(j, '$.arr')", &rows)?;
        let got: Vec<Option<i64>> = got
            .as_primitive::<arrow_array::types::Int64Type>()
            .iter()
            .collect();
        assert_eq!(got, vec![Some(3), None, None, Some(0)]);

        let got = eval("json_get_bool(json_get(j, 'o'), 'k')", &rows)?;
        let got: Vec<Option<bool>> = got.as_boolean().iter().collect();
        assert_eq!(got, vec![Some(true), None, None, None]);
        Ok(())
    }

    #[test]
    fn unconvertible_values_and_bad_paths_fail_the_query() {
        let rows = [Some(r#"{"s": "x"}"#)];
        for sql in ["json_get_int(j, 's')", "json_extract(j, 'no path')"] {
            match eval(sql, &rows) {
                Err(crate::Error::Expression { message, .. }) => assert!(!message.is_empty()),
                other => panic!("{sql}: {other:?}"),
            }
        }
    }

    #[test]
    fn damaged_bytes_name_the_column_and_row() {
        let field = Field::new("doc", DataType::LargeBinary, true);
        let schema = Schema::new(vec![field]);
        let bad = LargeBinaryArray::from(vec![&[0x20u8, 0, 0, 1, 0x10, 0, 0, 9, b'a'][..]]);
        let batch = arrow_array::RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![Arc::new(bad) as ArrayRef],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        match Expression::new("json_extract(doc, '$')", &schema).and_then(|e| e.evaluate(&batch)) {
            Err(crate::Error::Expression { message, .. }) => {
                assert!(
                    message.contains("\"doc\"") && message.contains("row 0"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
