//! Filters given as Substrait `ExtendedExpression` bytes — what PyArrow's
//! `pyarrow.substrait.serialize_expressions` makes of a `pyarrow.compute.Expression`,
//! the form pylance passes a `filter=` that is an Expression (`_serialize_expression`
//! in its `dataset.py`). The expression is turned into the SQL text of Lance's filter
//! dialect, so it is typed, planned (scalar indexes included) and evaluated exactly as
//! the same filter written as text.
//!
//! Fields are named by position in the dataset's schema, as the reference resolves them:
//! the message's own schema is not read, so the caller may serialize against the
//! dataset's schema with the fields whose types PyArrow cannot express replaced by
//! placeholders, keeping each field's position. The functions read are the
//! ones PyArrow emits: comparisons, `and` / `or` / `not`, null and NaN tests, arithmetic
//! and its math functions, `coalesce`, `starts_with` / `ends_with` / `contains`; plus
//! `IfThen` (`CASE`), `SingularOrList` (`IN`) and casts. Anything else is refused by
//! name.

mod wire;

use std::collections::HashMap;
use std::fmt::Write as _;

use arrow_schema::{DataType, Schema};
use prost::Message as _;

use crate::Error;
use wire::{LiteralKind, Rex, TypeKind};

/// The SQL filter (Lance's dialect) that the Substrait `ExtendedExpression` in `bytes`
/// expresses, its fields named by position in `schema`.
pub fn substrait_filter_sql(bytes: &[u8], schema: &Schema) -> Result<String, Error> {
    let message = wire::ExtendedExpression::decode(bytes).map_err(|e| {
        refused(format!(
            "the Substrait bytes are corrupt (not an ExtendedExpression): {e}"
        ))
    })?;
    let types: HashMap<u32, String> = message
        .extensions
        .iter()
        .filter_map(|d| d.extension_type.as_ref())
        .map(|t| (t.type_anchor, t.name.clone()))
        .collect();
    let functions: HashMap<u32, String> = message
        .extensions
        .iter()
        .filter_map(|d| d.extension_function.as_ref())
        .map(|f| {
            let name = f.name.split(':').next().unwrap_or_default();
            (f.function_anchor, name.to_string())
        })
        .collect();
    let [reference] = message.referred_expr.as_slice() else {
        return Err(refused(format!(
            "a filter is one expression; the Substrait message holds {}",
            message.referred_expr.len()
        )));
    };
    let Some(expression) = &reference.expression else {
        return Err(refused(
            "the Substrait expression is a measure (an aggregate), not a filter".into(),
        ));
    };
    let mut sql = String::new();
    Render {
        functions: &functions,
        types: &types,
        schema,
    }
    .expr(expression, &mut sql)?;
    Ok(sql)
}

fn refused(message: String) -> Error {
    Error::Filter {
        filter: "<pyarrow compute Expression>".into(),
        message,
    }
}

struct Render<'a> {
    functions: &'a HashMap<u32, String>,
    /// User-defined types by anchor: the Arrow type names PyArrow declares.
    types: &'a HashMap<u32, String>,
    schema: &'a Schema,
}

impl Render<'_> {
    fn expr(&self, e: &wire::Expression, out: &mut String) -> Result<(), Error> {
        let Some(rex) = &e.rex else {
            return Err(refused(
                "an expression of the Substrait message is empty".into(),
            ));
        };
        match rex {
            Rex::Literal(l) => literal(l, self.types, out),
            Rex::Selection(f) => self.field(f, out),
            Rex::ScalarFunction(f) => self.function(f, out),
            Rex::IfThen(i) => {
                out.push_str("(CASE");
                for clause in &i.ifs {
                    out.push_str(" WHEN ");
                    self.expr(required(&clause.r#if, "an IfThen condition")?, out)?;
                    out.push_str(" THEN ");
                    self.expr(required(&clause.then, "an IfThen result")?, out)?;
                }
                if let Some(otherwise) = &i.r#else {
                    out.push_str(" ELSE ");
                    self.expr(otherwise, out)?;
                }
                out.push_str(" END)");
                Ok(())
            }
            Rex::SingularOrList(s) => {
                out.push('(');
                self.expr(required(&s.value, "an IN list's value")?, out)?;
                out.push_str(" IN (");
                for (i, option) in s.options.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.expr(option, out)?;
                }
                out.push_str("))");
                Ok(())
            }
            Rex::Cast(c) => {
                let (open, close) = cast_to(required(&c.r#type, "a cast's type")?, self.types)?;
                out.push_str(&open);
                self.expr(required(&c.input, "a cast's input")?, out)?;
                out.push_str(&close);
                Ok(())
            }
            Rex::WindowFunction(_) => Err(unsupported("a window function")),
            Rex::SwitchExpression(_) => Err(unsupported("a switch expression")),
            Rex::MultiOrList(_) => Err(unsupported("a multi-column IN list")),
            Rex::Subquery(_) => Err(unsupported("a subquery")),
            Rex::Nested(_) => Err(unsupported("a nested (struct / list / map) constructor")),
            Rex::DynamicParameter(_) => Err(unsupported("a dynamic parameter")),
            Rex::Lambda(_) | Rex::LambdaInvocation(_) => Err(unsupported("a lambda")),
            Rex::ExecutionContextVariable(_) => Err(unsupported("an execution context variable")),
        }
    }

    /// A column (or struct field) reference, by position in the schema.
    fn field(&self, f: &wire::FieldReference, out: &mut String) -> Result<(), Error> {
        if f.expression.is_some() || f.outer_reference.is_some() {
            return Err(unsupported("a reference into a value other than the row"));
        }
        let Some(segment) = &f.direct_reference else {
            return Err(unsupported("a masked field reference"));
        };
        let mut fields = self.schema.fields();
        let mut segment = segment;
        let mut first = true;
        loop {
            let Some(step) = &segment.struct_field else {
                return Err(unsupported("a list element or map key reference"));
            };
            let field = usize::try_from(step.field)
                .ok()
                .and_then(|i| fields.get(i))
                .ok_or_else(|| {
                    refused(format!(
                        "the expression names field {} of a struct of {} fields: serialize \
                         it against the dataset's schema",
                        step.field,
                        fields.len()
                    ))
                })?;
            if !first {
                out.push('.');
            }
            first = false;
            quoted_name(field.name(), out)?;
            let Some(child) = &step.child else {
                return Ok(());
            };
            let DataType::Struct(children) = field.data_type() else {
                return Err(refused(format!(
                    "the expression names a field inside {:?}, which is not a struct",
                    field.name()
                )));
            };
            fields = children;
            segment = child;
        }
    }

    fn function(&self, f: &wire::ScalarFunction, out: &mut String) -> Result<(), Error> {
        let name = self
            .functions
            .get(&f.function_reference)
            .ok_or_else(|| {
                refused(format!(
                    "the expression calls function #{} that its message does not declare",
                    f.function_reference
                ))
            })?
            .as_str();
        let mut args = Vec::with_capacity(f.arguments.len() + f.args.len());
        for a in &f.arguments {
            match &a.value {
                Some(v) => args.push(v),
                None => {
                    return Err(refused(format!(
                        "function {name:?} has an argument that is a type or an option, \
                         which Lance filters do not take"
                    )))
                }
            }
        }
        args.extend(f.args.iter());
        let infix = match name {
            "equal" => Some("="),
            "not_equal" => Some("<>"),
            "lt" => Some("<"),
            "gt" => Some(">"),
            "lte" => Some("<="),
            "gte" => Some(">="),
            "and" => Some("AND"),
            "or" => Some("OR"),
            "add" => Some("+"),
            "subtract" => Some("-"),
            "multiply" => Some("*"),
            "divide" => Some("/"),
            "bitwise_and" => Some("&"),
            "bitwise_or" => Some("|"),
            "bitwise_xor" => Some("^"),
            _ => None,
        };
        if let Some(op) = infix {
            let variadic = matches!(op, "AND" | "OR");
            let fits = if variadic {
                !args.is_empty()
            } else {
                args.len() == 2
            };
            if !fits {
                return Err(arity(name, "two", args.len()));
            }
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    let _ = write!(out, " {op} ");
                }
                self.expr(a, out)?;
            }
            out.push(')');
            return Ok(());
        }
        let one = |prefix: &str, suffix: &str, out: &mut String| -> Result<(), Error> {
            let [a] = args.as_slice() else {
                return Err(arity(name, "one", args.len()));
            };
            out.push_str(prefix);
            self.expr(a, out)?;
            out.push_str(suffix);
            Ok(())
        };
        match name {
            "not" => one("(NOT ", ")", out),
            "negate" => one("(- ", ")", out),
            "bitwise_not" => one("(~ ", ")", out),
            "is_null" => one("(", " IS NULL)", out),
            "is_not_null" => one("(", " IS NOT NULL)", out),
            "is_nan" => one("isnan(", ")", out),
            "is_finite" => one("(abs(", ") < CAST('Infinity' AS DOUBLE))", out),
            "sign" => one("signum(", ")", out),
            "abs" | "sqrt" | "exp" | "sin" | "cos" | "tan" | "asin" | "acos" | "atan" | "sinh"
            | "cosh" | "tanh" | "asinh" | "acosh" | "atanh" => one(&format!("{name}("), ")", out),
            "power" | "atan2" | "coalesce" | "starts_with" | "ends_with" | "contains" => {
                let fixed = !matches!(name, "coalesce");
                if (fixed && args.len() != 2) || args.is_empty() {
                    return Err(arity(name, "two", args.len()));
                }
                out.push_str(name);
                out.push('(');
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.expr(a, out)?;
                }
                out.push(')');
                Ok(())
            }
            other => Err(refused(format!(
                "the Substrait function {other:?} has no Lance filter equivalent; write the \
                 filter as SQL text"
            ))),
        }
    }
}

fn required<'a, T>(value: &'a Option<T>, what: &str) -> Result<&'a T, Error> {
    value
        .as_ref()
        .ok_or_else(|| refused(format!("{what} is missing from the Substrait message")))
}

fn unsupported(what: &str) -> Error {
    refused(format!(
        "{what} in a pyarrow Expression is not a Lance filter; write the filter as SQL text"
    ))
}

fn arity(name: &str, want: &str, got: usize) -> Error {
    refused(format!(
        "function {name:?} takes {want} arguments, the expression gives it {got}"
    ))
}

/// `name` as a quoted identifier of the dialect (backticks; a backtick inside is
/// doubled).
fn quoted_name(name: &str, out: &mut String) -> Result<(), Error> {
    out.push('`');
    for c in name.chars() {
        if c == '`' {
            out.push('`');
        }
        out.push(c);
    }
    out.push('`');
    Ok(())
}

fn quoted_string(s: &str, out: &mut String) {
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
}

fn float(v: f64, sql_type: &str, out: &mut String) {
    if v.is_finite() {
        let _ = write!(out, "{v:?}");
    } else {
        let text = if v.is_nan() {
            "NaN"
        } else if v > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        let _ = write!(out, "CAST('{text}' AS {sql_type})");
    }
}

/// A time of `value` units of 10^-`precision` s since the epoch, as `YYYY-MM-DD
/// HH:MM:SS.fffffffff` (UTC).
fn timestamp_text(value: i64, precision: i32) -> Result<String, Error> {
    let (secs, nanos) = split_time(value, precision)?;
    let t = chrono::DateTime::from_timestamp(secs, nanos)
        .ok_or_else(|| refused(format!("the timestamp literal {value} is out of range")))?;
    Ok(t.naive_utc().format("%Y-%m-%d %H:%M:%S%.9f").to_string())
}

/// Seconds and nanoseconds of `value` units of 10^-`precision` s.
fn split_time(value: i64, precision: i32) -> Result<(i64, u32), Error> {
    let per_second: i64 = match precision {
        0..=9 => 10_i64.pow(precision as u32),
        _ => {
            return Err(refused(format!(
                "a time literal of precision {precision} (digits below the second): 0 to 9 \
                 are meant"
            )))
        }
    };
    let secs = value.div_euclid(per_second);
    let rest = value.rem_euclid(per_second);
    let nanos = rest * (1_000_000_000 / per_second);
    Ok((secs, nanos as u32))
}

fn literal(l: &wire::Literal, types: &HashMap<u32, String>, out: &mut String) -> Result<(), Error> {
    let Some(kind) = &l.kind else {
        return Err(refused(
            "a literal of the Substrait message is empty".into(),
        ));
    };
    match kind {
        LiteralKind::Boolean(b) => out.push_str(if *b { "TRUE" } else { "FALSE" }),
        LiteralKind::I8(v) | LiteralKind::I16(v) | LiteralKind::I32(v) => {
            let _ = write!(out, "{v}");
        }
        LiteralKind::I64(v) => {
            let _ = write!(out, "{v}");
        }
        LiteralKind::Fp32(v) => {
            // the shortest text that reads back as this f32
            if v.is_finite() {
                let _ = write!(out, "{v:?}");
            } else {
                float(f64::from(*v), "FLOAT", out);
            }
        }
        LiteralKind::Fp64(v) => float(*v, "DOUBLE", out),
        LiteralKind::String(s) | LiteralKind::FixedChar(s) => quoted_string(s, out),
        LiteralKind::VarChar(v) => quoted_string(&v.value, out),
        LiteralKind::Binary(b) | LiteralKind::FixedBinary(b) => {
            out.push_str("X'");
            for byte in b {
                let _ = write!(out, "{byte:02X}");
            }
            out.push('\'');
        }
        LiteralKind::Date(days) => {
            let date = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
                .and_then(|epoch| {
                    epoch.checked_add_signed(chrono::TimeDelta::days(i64::from(*days)))
                })
                .ok_or_else(|| refused(format!("the date literal {days} is out of range")))?;
            let _ = write!(out, "DATE '{}'", date.format("%Y-%m-%d"));
        }
        LiteralKind::Timestamp(micros) => {
            let _ = write!(out, "TIMESTAMP '{}'", timestamp_text(*micros, 6)?);
        }
        LiteralKind::PrecisionTimestamp(p) => {
            let _ = write!(
                out,
                "CAST('{}' AS TIMESTAMP({}))",
                timestamp_text(p.value, p.precision)?,
                p.precision
            );
        }
        LiteralKind::TimestampTz(micros) => {
            let _ = write!(out, "TIMESTAMP '{}+00:00'", timestamp_text(*micros, 6)?);
        }
        LiteralKind::PrecisionTimestampTz(p) => {
            let _ = write!(
                out,
                "TIMESTAMP '{}+00:00'",
                timestamp_text(p.value, p.precision)?
            );
        }
        LiteralKind::Time(micros) => time_literal(*micros, 6, out)?,
        LiteralKind::PrecisionTime(p) => time_literal(p.value, p.precision, out)?,
        LiteralKind::Decimal(d) => decimal_literal(d, out)?,
        LiteralKind::Null(t) => {
            let (open, close) = cast_to(t, types)?;
            let _ = write!(out, "{open}NULL{close}");
        }
        LiteralKind::List(list) => {
            out.push_str("make_array(");
            for (i, v) in list.values.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                literal(v, types, out)?;
            }
            out.push(')');
        }
        LiteralKind::IntervalYearToMonth(_)
        | LiteralKind::IntervalDayToSecond(_)
        | LiteralKind::IntervalCompound(_) => return Err(unsupported("an interval literal")),
        LiteralKind::Struct(_) => return Err(unsupported("a struct literal")),
        LiteralKind::Map(_) | LiteralKind::EmptyMap(_) => return Err(unsupported("a map literal")),
        LiteralKind::EmptyList(_) => return Err(unsupported("an empty list literal")),
        LiteralKind::Uuid(_) => return Err(unsupported("a UUID literal")),
        LiteralKind::UserDefined(u) => user_defined_literal(u, types, out)?,
    }
    Ok(())
}

fn time_literal(value: i64, precision: i32, out: &mut String) -> Result<(), Error> {
    let (secs, nanos) = split_time(value, precision)?;
    let time = u32::try_from(secs)
        .ok()
        .and_then(|s| chrono::NaiveTime::from_num_seconds_from_midnight_opt(s, nanos))
        .ok_or_else(|| refused(format!("the time literal {value} is not within a day")))?;
    let _ = write!(out, "TIME '{}'", time.format("%H:%M:%S%.9f"));
    Ok(())
}

fn decimal_literal(d: &wire::Decimal, out: &mut String) -> Result<(), Error> {
    let bytes: [u8; 16] = d.value.as_slice().try_into().map_err(|_| {
        refused(format!(
            "a decimal literal holds {} bytes; Substrait's are 16",
            d.value.len()
        ))
    })?;
    if !(0..=38).contains(&d.scale) || !(1..=38).contains(&d.precision) {
        return Err(refused(format!(
            "a decimal literal of precision {} and scale {} (Lance's decimals have 1 to 38 \
             digits)",
            d.precision, d.scale
        )));
    }
    let unscaled = i128::from_le_bytes(bytes);
    let digits = unscaled.unsigned_abs().to_string();
    let scale = d.scale as usize;
    let (whole, frac) = if digits.len() > scale {
        digits.split_at(digits.len() - scale)
    } else {
        ("0", digits.as_str())
    };
    let sign = if unscaled < 0 { "-" } else { "" };
    let _ = write!(out, "CAST('{sign}{whole}");
    if scale > 0 {
        let _ = write!(out, ".{frac:0>scale$}");
    }
    let _ = write!(out, "' AS DECIMAL({}, {}))", d.precision, d.scale);
    Ok(())
}

/// A value of one of the Arrow types PyArrow declares as user-defined (unsigned
/// integers, half floats, large strings and binaries), from its wrapper message; typed
/// by the column it meets, as every literal of a filter is.
fn user_defined_literal(
    u: &wire::UserDefinedLiteral,
    types: &HashMap<u32, String>,
    out: &mut String,
) -> Result<(), Error> {
    let name = types.get(&u.type_reference).map_or("?", String::as_str);
    let Some(any) = &u.value else {
        return Err(unsupported(&format!(
            "a literal of user-defined type {name:?}"
        )));
    };
    let wrapper = any.type_url.rsplit('/').next().unwrap_or_default();
    let bad = |e: prost::DecodeError| {
        refused(format!(
            "the Substrait bytes are corrupt (a {wrapper} literal): {e}"
        ))
    };
    let bytes = any.value.as_slice();
    match wrapper {
        "google.protobuf.StringValue" => quoted_string(&String::decode(bytes).map_err(bad)?, out),
        "google.protobuf.BytesValue" => {
            let b = Vec::<u8>::decode(bytes).map_err(bad)?;
            out.push_str("X'");
            for byte in b {
                let _ = write!(out, "{byte:02X}");
            }
            out.push('\'');
        }
        "google.protobuf.UInt64Value" => {
            let _ = write!(out, "{}", u64::decode(bytes).map_err(bad)?);
        }
        "google.protobuf.UInt32Value" => {
            let _ = write!(out, "{}", u32::decode(bytes).map_err(bad)?);
        }
        "google.protobuf.Int64Value" => {
            let _ = write!(out, "{}", i64::decode(bytes).map_err(bad)?);
        }
        "google.protobuf.Int32Value" => {
            let _ = write!(out, "{}", i32::decode(bytes).map_err(bad)?);
        }
        "google.protobuf.FloatValue" => {
            float(f64::from(f32::decode(bytes).map_err(bad)?), "FLOAT", out)
        }
        "google.protobuf.DoubleValue" => float(f64::decode(bytes).map_err(bad)?, "DOUBLE", out),
        "google.protobuf.BoolValue" => out.push_str(if bool::decode(bytes).map_err(bad)? {
            "TRUE"
        } else {
            "FALSE"
        }),
        other => {
            return Err(unsupported(&format!(
                "a literal of user-defined type {name:?} (held as {other:?})"
            )))
        }
    }
    Ok(())
}

/// The Arrow type (as `arrow_cast` names it) of a user-defined type PyArrow declares.
fn arrow_type_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "u8" => "UInt8",
        "u16" => "UInt16",
        "u32" => "UInt32",
        "u64" => "UInt64",
        "fp16" => "Float16",
        "large_string" => "LargeUtf8",
        "large_binary" => "LargeBinary",
        _ => return None,
    })
}

/// The text around a value that casts it to `t`: `CAST(` … ` AS type)` for the types SQL
/// names, `arrow_cast(` … `, 'Type')` for the Arrow types PyArrow declares as
/// user-defined.
fn cast_to(t: &wire::Type, types: &HashMap<u32, String>) -> Result<(String, String), Error> {
    if let Some(TypeKind::UserDefined(u)) = &t.kind {
        let name = types.get(&u.type_reference).map_or("?", String::as_str);
        let arrow = arrow_type_of(name)
            .ok_or_else(|| unsupported(&format!("a cast to the user-defined type {name:?}")))?;
        return Ok(("arrow_cast(".into(), format!(", '{arrow}')")));
    }
    Ok(("CAST(".into(), format!(" AS {})", sql_type(t)?)))
}

/// A Substrait type as the SQL type name of the dialect.
fn sql_type(t: &wire::Type) -> Result<String, Error> {
    let Some(kind) = &t.kind else {
        return Err(refused("a type of the Substrait message is empty".into()));
    };
    Ok(match kind {
        TypeKind::Bool(_) => "BOOLEAN".into(),
        TypeKind::I8(_) => "TINYINT".into(),
        TypeKind::I16(_) => "SMALLINT".into(),
        TypeKind::I32(_) => "INT".into(),
        TypeKind::I64(_) => "BIGINT".into(),
        TypeKind::Fp32(_) => "FLOAT".into(),
        TypeKind::Fp64(_) => "DOUBLE".into(),
        TypeKind::String(_) | TypeKind::VarChar(_) | TypeKind::FixedChar(_) => "VARCHAR".into(),
        TypeKind::Binary(_) | TypeKind::FixedBinary(_) => "BINARY".into(),
        TypeKind::Date(_) => "DATE".into(),
        TypeKind::Time(_) => "TIME".into(),
        TypeKind::Timestamp(_) => "TIMESTAMP".into(),
        TypeKind::PrecisionTimestamp(p) => format!("TIMESTAMP({})", p.precision),
        TypeKind::Decimal(d) => format!("DECIMAL({}, {})", d.precision, d.scale),
        TypeKind::PrecisionTime(_) => "TIME".into(),
        TypeKind::TimestampTz(_) | TypeKind::PrecisionTimestampTz(_) => {
            return Err(unsupported("a cast to a timestamp with a time zone"))
        }
        TypeKind::IntervalYear(_) | TypeKind::IntervalDay(_) | TypeKind::IntervalCompound(_) => {
            return Err(unsupported("an interval type"))
        }
        TypeKind::Struct(_) | TypeKind::List(_) | TypeKind::Map(_) => {
            return Err(unsupported("a cast to a nested type"))
        }
        TypeKind::Uuid(_) => return Err(unsupported("a UUID type")),
        TypeKind::UserDefined(_) => {
            return Err(unsupported("a cast to a user-defined type"));
        }
        TypeKind::Alias(_) | TypeKind::Func(_) | TypeKind::Unbound(_) => {
            return Err(unsupported("an alias, function or unbound type"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new(
                "st",
                DataType::Struct(vec![Field::new("x b", DataType::Int32, true)].into()),
                true,
            ),
        ])
    }

    fn field(i: i32, child: Option<i32>) -> wire::Expression {
        wire::Expression {
            rex: Some(Rex::Selection(Box::new(wire::FieldReference {
                direct_reference: Some(wire::ReferenceSegment {
                    struct_field: Some(Box::new(wire::StructField {
                        field: i,
                        child: child.map(|c| wire::ReferenceSegment {
                            struct_field: Some(Box::new(wire::StructField {
                                field: c,
                                child: None,
                            })),
                            ..Default::default()
                        }),
                    })),
                    ..Default::default()
                }),
                root_reference: Some(wire::Opaque {}),
                ..Default::default()
            }))),
        }
    }

    fn lit(kind: LiteralKind) -> wire::Expression {
        wire::Expression {
            rex: Some(Rex::Literal(wire::Literal { kind: Some(kind) })),
        }
    }

    fn call(anchor: u32, args: Vec<wire::Expression>) -> wire::Expression {
        wire::Expression {
            rex: Some(Rex::ScalarFunction(wire::ScalarFunction {
                function_reference: anchor,
                arguments: args
                    .into_iter()
                    .map(|v| wire::FunctionArgument {
                        value: Some(v),
                        ..Default::default()
                    })
                    .collect(),
                args: vec![],
            })),
        }
    }

    fn message(e: wire::Expression, functions: &[(u32, &str)]) -> Vec<u8> {
        wire::ExtendedExpression {
            extensions: functions
                .iter()
                .map(|(a, n)| wire::ExtensionDeclaration {
                    extension_type: None,
                    extension_function: Some(wire::ExtensionFunction {
                        function_anchor: *a,
                        name: n.to_string(),
                    }),
                })
                .collect(),
            referred_expr: vec![wire::ExpressionReference {
                expression: Some(e),
                measure: None,
                output_names: vec!["f".into()],
            }],
            base_schema: None,
        }
        .encode_to_vec()
    }

    #[test]
    fn renders_fields_functions_and_literals() {
        let e = call(
            1,
            vec![
                call(2, vec![field(0, None), lit(LiteralKind::I64(5))]),
                call(
                    3,
                    vec![field(1, Some(0)), lit(LiteralKind::String("it's".into()))],
                ),
            ],
        );
        let sql = substrait_filter_sql(
            &message(e, &[(1, "and:bool"), (2, "gt:any_any"), (3, "equal")]),
            &schema(),
        )
        .unwrap();
        assert_eq!(sql, "((`a` > 5) AND (`st`.`x b` = 'it''s'))");
    }

    #[test]
    fn literals_keep_their_values() {
        let mut out = String::new();
        let d = wire::Decimal {
            value: (-150_i128).to_le_bytes().to_vec(),
            precision: 10,
            scale: 2,
        };
        decimal_literal(&d, &mut out).unwrap();
        assert_eq!(out, "CAST('-1.50' AS DECIMAL(10, 2))");
        assert_eq!(
            timestamp_text(1_577_836_800_000_001, 6).unwrap(),
            "2020-01-01 00:00:00.000001000"
        );
        assert_eq!(
            timestamp_text(-1, 3).unwrap(),
            "1969-12-31 23:59:59.999000000"
        );
        let mut out = String::new();
        float(f64::NAN, "DOUBLE", &mut out);
        assert_eq!(out, "CAST('NaN' AS DOUBLE)");
    }

    #[test]
    fn bad_messages_are_refused_by_name() {
        let s = schema();
        let err = substrait_filter_sql(b"\xff\xff\xff", &s)
            .unwrap_err()
            .to_string();
        assert!(err.contains("corrupt"), "{err}");
        let err = substrait_filter_sql(&message(field(7, None), &[]), &s)
            .unwrap_err()
            .to_string();
        assert!(err.contains("field 7 of a struct of 2"), "{err}");
        let err = substrait_filter_sql(&message(field(0, Some(0)), &[]), &s)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a struct"), "{err}");
        let err = substrait_filter_sql(&message(call(9, vec![]), &[]), &s)
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not declare"), "{err}");
        let err = substrait_filter_sql(&message(call(1, vec![field(0, None)]), &[(1, "xor")]), &s)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"xor\" has no Lance filter equivalent"),
            "{err}"
        );
        // nesting past prost's limit is a decode error, not a stack overflow
        let mut e = field(0, None);
        for _ in 0..200 {
            e = call(1, vec![e]);
        }
        let err = substrait_filter_sql(&message(e, &[(1, "not")]), &s)
            .unwrap_err()
            .to_string();
        assert!(err.contains("corrupt"), "{err}");
    }

    #[test]
    fn every_mutated_byte_is_an_answer_or_an_error() {
        let e = call(
            1,
            vec![
                call(2, vec![field(1, Some(0)), lit(LiteralKind::I64(-5))]),
                lit(LiteralKind::Decimal(wire::Decimal {
                    value: 12345_i128.to_le_bytes().to_vec(),
                    precision: 9,
                    scale: 3,
                })),
                lit(LiteralKind::Timestamp(1_700_000_000_000_000)),
            ],
        );
        let good = message(e, &[(1, "or"), (2, "lte")]);
        let s = schema();
        assert!(substrait_filter_sql(&good, &s).is_ok());
        for at in 0..good.len() {
            for flip in [0x01_u8, 0x80, 0xff, 0x7f] {
                let mut bad = good.clone();
                bad[at] ^= flip;
                // either reading is fine; a panic is not
                let _ = substrait_filter_sql(&bad, &s);
            }
            let _ = substrait_filter_sql(&good[..at], &s);
        }
    }
}
