//! Literal typing of filters, as the reference does it: a literal compared with (or
//! bounding, or listed against) a column takes the column's type when the value fits —
//! `int32_col = 7` compares int32s, `float_col > 1` compares floats — and the filter is
//! refused when it does not (`int_col = 2.5`, `int_col = 'a'`, `byte_col = 300`). Other
//! expressions keep DataFusion's own type coercion.

use arrow_array::Array;
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;
use datafusion_common::{DFSchema, ScalarValue};
use datafusion_expr::expr::{Between, BinaryExpr, InList};
use datafusion_expr::{Expr, Operator};

/// The type of a column reference (`col` or `col.field.field` via `get_field`).
fn column_type(expr: &Expr, schema: &DFSchema) -> Option<DataType> {
    match expr {
        Expr::Column(c) => schema
            .field_with_unqualified_name(&c.name)
            .ok()
            .map(|f| f.data_type().clone()),
        Expr::ScalarFunction(f) if f.name() == "get_field" => {
            let [base, Expr::Literal(ScalarValue::Utf8(Some(name)), _)] = f.args.as_slice() else {
                return None;
            };
            match column_type(base, schema)? {
                DataType::Struct(fields) => fields
                    .iter()
                    .find(|f| f.name() == name)
                    .map(|f| f.data_type().clone()),
                _ => None,
            }
        }
        _ => None,
    }
}

fn is_int(t: &DataType) -> bool {
    t.is_integer()
}

/// Whether the reference converts a literal of type `from` to `to` at all.
fn convertible(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    match (from, to) {
        (Null, _) => true,
        (f, t) if is_int(f) => is_int(t) || t.is_floating(),
        (f, t) if f.is_floating() => t.is_floating(),
        (Utf8 | LargeUtf8, Utf8 | LargeUtf8) => true,
        (Boolean, Boolean) => true,
        (
            List(_) | LargeList(_) | FixedSizeList(..),
            List(_) | LargeList(_) | FixedSizeList(..),
        ) => true,
        (Timestamp(..), Timestamp(..)) => true,
        (Date32 | Date64, Date32 | Date64) => true,
        (Time32(_) | Time64(_), Time32(_) | Time64(_)) => true,
        (Binary | LargeBinary | FixedSizeBinary(_), Binary | LargeBinary) => true,
        (Binary | FixedSizeBinary(_), FixedSizeBinary(_)) => true,
        _ => false,
    }
}

/// `value` as a `to` literal, or `None` when the reference would refuse it (overflow,
/// a fraction into an integer, a string into a number, a wrong-length binary).
pub(crate) fn adapt(value: &ScalarValue, to: &DataType) -> Option<ScalarValue> {
    let from = value.data_type();
    if &from == to || matches!(value, ScalarValue::Null) {
        return Some(value.clone());
    }
    // A dictionary column compares its values: the literal takes the value type and is
    // wrapped (`dict_col = 'a'`, `dict_col IN ('a', 'b')`).
    if let DataType::Dictionary(key, values) = to {
        let inner = adapt(value, values)?;
        return Some(ScalarValue::Dictionary(key.clone(), Box::new(inner)));
    }
    // A whole number is a 32-bit time of day in the column's unit (the reference's
    // rule; 64-bit times take no number).
    if from.is_integer() {
        if let DataType::Time32(unit) = to {
            let v = match value {
                ScalarValue::Int64(Some(v)) => i32::try_from(*v).ok()?,
                other => {
                    let cast = cast_with_options(
                        &other.to_array().ok()?,
                        &DataType::Int32,
                        &CastOptions::default(),
                    )
                    .ok()?;
                    match ScalarValue::try_from_array(&cast, 0).ok()? {
                        ScalarValue::Int32(Some(v)) => v,
                        _ => return None,
                    }
                }
            };
            return Some(match unit {
                arrow_schema::TimeUnit::Second => ScalarValue::Time32Second(Some(v)),
                _ => ScalarValue::Time32Millisecond(Some(v)),
            });
        }
    }
    // A whole number bounds or equals a decimal when it fits the precision exactly
    // (`d > 0` on decimal(5, 2); `d > 1000` there is refused, as the reference does;
    // so is a number past the signed 64-bit range, read as unsigned).
    if from.is_signed_integer() {
        if let DataType::Decimal128(p, s) | DataType::Decimal256(p, s) = to {
            return integer_as_decimal(value, to, *p, *s);
        }
    }
    if !convertible(&from, to) {
        return None;
    }
    let arr = value.to_array().ok()?;
    let options = CastOptions {
        safe: true,
        ..Default::default()
    };
    let cast = cast_with_options(&arr, to, &options).ok()?;
    if cast.is_null(0) && !value.is_null() {
        return None;
    }
    let out = ScalarValue::try_from_array(&cast, 0).ok()?;
    // a half float must keep the value: one that overflows to infinity or underflows to
    // zero is refused (wider floats take the nearest value, whatever it is)
    if let ScalarValue::Float16(Some(h)) = out {
        let lost = h.is_infinite() || (h.to_f64() == 0.0 && !is_zero(value));
        if lost {
            return None;
        }
    }
    Some(out)
}

fn is_zero(v: &ScalarValue) -> bool {
    match v {
        ScalarValue::Float64(Some(x)) => *x == 0.0,
        ScalarValue::Float32(Some(x)) => *x == 0.0,
        // whole numbers
        other => other.to_string() == "0",
    }
}

/// `x IN (…, 0.0, …)` on a float column also takes `-0.0` (and the other way round):
/// DataFusion answers long IN lists from a hash set of the values' bits, where the two
/// zeros differ, while `=` and the reference treat them as equal.
pub(crate) fn both_zeros(expr: Expr) -> datafusion_common::Result<Expr> {
    use datafusion_common::tree_node::{Transformed, TreeNode};
    expr.transform_up(|e| {
        let Expr::InList(l) = &e else {
            return Ok(Transformed::no(e));
        };
        let mut extra = Vec::new();
        for item in &l.list {
            let Expr::Literal(v, meta) = item else {
                continue;
            };
            let other = match v {
                ScalarValue::Float16(Some(x)) if x.to_f64() == 0.0 => {
                    ScalarValue::Float16(Some(-*x))
                }
                ScalarValue::Float32(Some(x)) if *x == 0.0 => ScalarValue::Float32(Some(-*x)),
                ScalarValue::Float64(Some(x)) if *x == 0.0 => ScalarValue::Float64(Some(-*x)),
                _ => continue,
            };
            // (the Debug form tells the zeros apart)
            let missing = !l.list.iter().any(
                |i| matches!(i, Expr::Literal(w, _) if format!("{w:?}") == format!("{other:?}")),
            );
            if missing {
                extra.push(Expr::Literal(other, meta.clone()));
            }
        }
        if extra.is_empty() {
            return Ok(Transformed::no(e));
        }
        let mut list = l.list.clone();
        list.extend(extra);
        Ok(Transformed::yes(Expr::InList(InList::new(
            l.expr.clone(),
            list,
            l.negated,
        ))))
    })
    .map(|t| t.data)
}

/// IN lists and BETWEEN typed as comparisons (the reference's rule: the column and each
/// value are brought to the type two sides of a comparison would take, so `s IN ('a',
/// 1.5)` on a string column compares numbers, and a string that is no number is
/// refused), where DataFusion would bring a mixed list to a string; a half float compared with a
/// decimal is refused, as the reference refuses it.
pub(crate) fn reference_comparisons(
    expr: Expr,
    schema: &DFSchema,
) -> datafusion_common::Result<Expr> {
    use datafusion_common::tree_node::{Transformed, TreeNode};
    use datafusion_expr::type_coercion::binary::comparison_coercion;
    use datafusion_expr::ExprSchemable;
    // pairs the reference will not compare (DataFusion would convert one side)
    let incomparable = |a: &DataType, b: &DataType| {
        use DataType::{Boolean, Float16, Null};
        if a == b || *a == Null || *b == Null {
            return false;
        }
        let dec = |t: &DataType| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
        (*a == Float16 && dec(b))
            || (*b == Float16 && dec(a))
            || (a.is_numeric() && b.is_temporal() && !arrow_cast::can_cast_types(a, b))
            || (a.is_temporal() && b.is_numeric() && !arrow_cast::can_cast_types(b, a))
            || ((*a == Boolean) != (*b == Boolean))
            || comparison_coercion(a, b).is_none()
    };
    expr.transform_up(|e| match &e {
        Expr::InList(l) => {
            let Ok(t0) = l.expr.get_type(schema) else {
                return Ok(Transformed::no(e));
            };
            let mut types = Vec::with_capacity(l.list.len());
            let mut common = t0.clone();
            for item in &l.list {
                let Ok(t) = item.get_type(schema) else {
                    return Ok(Transformed::no(e));
                };
                if incomparable(&t0, &t) {
                    return datafusion_common::plan_err!("cannot compare {t0} with {t}");
                }
                match comparison_coercion(&common, &t) {
                    Some(c) => common = c,
                    None => {
                        return datafusion_common::plan_err!(
                            "cannot compare {t0} with a list value of type {t}"
                        )
                    }
                }
                types.push(t);
            }
            if t0 == common && types.iter().all(|t| *t == common) {
                return Ok(Transformed::no(e));
            }
            let cast = |x: &Expr, t: &DataType| cast_to(x, t, &common);
            let list = l.list.iter().zip(&types).map(|(x, t)| cast(x, t)).collect();
            Ok(Transformed::yes(Expr::InList(InList::new(
                Box::new(cast(&l.expr, &t0)),
                list,
                l.negated,
            ))))
        }
        Expr::BinaryExpr(b)
            if matches!(
                b.op,
                Operator::Eq
                    | Operator::NotEq
                    | Operator::Lt
                    | Operator::LtEq
                    | Operator::Gt
                    | Operator::GtEq
            ) =>
        {
            if let (Ok(l), Ok(r)) = (b.left.get_type(schema), b.right.get_type(schema)) {
                if incomparable(&l, &r) {
                    return datafusion_common::plan_err!("cannot compare {l} with {r}");
                }
            }
            Ok(Transformed::no(e))
        }
        Expr::Between(b) => {
            let (Ok(t0), Ok(lo), Ok(hi)) = (
                b.expr.get_type(schema),
                b.low.get_type(schema),
                b.high.get_type(schema),
            ) else {
                return Ok(Transformed::no(e));
            };
            if let Some(t) = [&lo, &hi].into_iter().find(|t| incomparable(&t0, t)) {
                return datafusion_common::plan_err!("BETWEEN cannot compare {t0} with {t}");
            }
            let common = comparison_coercion(&t0, &lo)
                .zip(comparison_coercion(&t0, &hi))
                .and_then(|(a, b)| comparison_coercion(&a, &b));
            let Some(common) = common else {
                return datafusion_common::plan_err!(
                    "BETWEEN cannot compare {t0} with bounds of types {lo} and {hi}"
                );
            };
            if t0 == common && lo == common && hi == common {
                return Ok(Transformed::no(e));
            }
            let cast = |x: &Expr, t: &DataType| cast_to(x, t, &common);
            Ok(Transformed::yes(Expr::Between(Between::new(
                Box::new(cast(&b.expr, &t0)),
                b.negated,
                Box::new(cast(&b.low, &lo)),
                Box::new(cast(&b.high, &hi)),
            ))))
        }
        Expr::ScalarFunction(f) if f.name() == "concat" => {
            // `concat` gives a large string only when every argument is one (a
            // `concat(large, 'x')` column is a string), as in the reference
            let Ok(DataType::LargeUtf8) = e.get_type(schema) else {
                return Ok(Transformed::no(e));
            };
            let all_large = f
                .args
                .iter()
                .all(|a| matches!(a.get_type(schema), Ok(DataType::LargeUtf8)));
            if all_large {
                return Ok(Transformed::no(e));
            }
            Ok(Transformed::yes(Expr::Cast(datafusion_expr::Cast::new(
                Box::new(e),
                DataType::Utf8,
            ))))
        }
        Expr::ScalarFunction(f) if f.name() == "array_has" && f.args.len() == 2 => {
            // `array_contains(numbers, 'text')` is refused, as the reference refuses it
            // (DataFusion would convert the text); other mixes are planned alike
            if let (Ok(DataType::List(item) | DataType::LargeList(item)), Ok(needle)) =
                (f.args[0].get_type(schema), f.args[1].get_type(schema))
            {
                let text = matches!(needle, DataType::Utf8 | DataType::LargeUtf8);
                if text && item.data_type().is_numeric() {
                    return datafusion_common::plan_err!(
                        "array_contains: cannot look for {needle} in a list of {}",
                        item.data_type()
                    );
                }
            }
            Ok(Transformed::no(e))
        }
        _ => Ok(Transformed::no(e)),
    })
    .map(|t| t.data)
}

/// `x` (of type `t`) as `to`: itself when the types agree, else wrapped in a cast.
fn cast_to(x: &Expr, t: &DataType, to: &DataType) -> Expr {
    if t == to {
        x.clone()
    } else {
        Expr::Cast(datafusion_expr::Cast::new(Box::new(x.clone()), to.clone()))
    }
}

/// List literals whose items are literals of different types (`[1, -9223372036854775808]`:
/// an integer and, past the signed range, a float) take the items' common type here, item
/// by item, as DataFusion's coercion of `make_array` would type them — before any folding,
/// so no kernel ever receives items of two types.
pub(crate) fn coerce_literal_lists(expr: Expr) -> datafusion_common::Result<Expr> {
    use datafusion_common::tree_node::{Transformed, TreeNode};
    use datafusion_expr::type_coercion::functions::fields_with_udf;
    expr.transform_up(|e| {
        let Expr::ScalarFunction(f) = &e else {
            return Ok(Transformed::no(e));
        };
        if f.name() != "make_array" || f.args.is_empty() {
            return Ok(Transformed::no(e));
        }
        let mut items = Vec::with_capacity(f.args.len());
        for a in &f.args {
            let Expr::Literal(v, meta) = a else {
                return Ok(Transformed::no(e));
            };
            items.push((v, meta));
        }
        let types: Vec<DataType> = items.iter().map(|(v, _)| v.data_type()).collect();
        if types.windows(2).all(|w| w[0] == w[1]) {
            return Ok(Transformed::no(e));
        }
        let fields: Vec<_> = types
            .iter()
            .map(|t| std::sync::Arc::new(arrow_schema::Field::new("item", t.clone(), true)))
            .collect();
        let targets = fields_with_udf(&fields, f.func.as_ref())?;
        let strict = CastOptions {
            safe: false,
            ..Default::default()
        };
        let mut args = Vec::with_capacity(items.len());
        for ((v, meta), to) in items.into_iter().zip(&targets) {
            let to = to.data_type();
            let folded = v
                .to_array()
                .and_then(|a| Ok(cast_with_options(&a, to, &strict)?))
                .and_then(|a| ScalarValue::try_from_array(&a, 0))
                .map_err(|err| {
                    datafusion_common::DataFusionError::Plan(format!(
                        "the list item {v} cannot be cast to {to}: {}",
                        err.strip_backtrace()
                    ))
                })?;
            args.push(Expr::Literal(folded, meta.clone()));
        }
        Ok(Transformed::yes(Expr::ScalarFunction(
            datafusion_expr::expr::ScalarFunction::new_udf(f.func.clone(), args),
        )))
    })
    .map(|t| t.data)
}

/// Carries out every cast of a literal (`DECIMAL(5,2) '1.50'`, a string coerced to
/// a column's number type), as the reference does while planning: a value that does
/// not convert is an error naming it (`'abc'` as a date, `DATE '9999-12-31'` as a
/// nanosecond timestamp), except a timestamp out of another unit's range (`TIMESTAMP
/// '0001-01-01 00:00:00'` as nanoseconds),
/// which is a null of the target type — the comparison is then null and no row passes
/// — and a `TRY_CAST`, which is null whenever the value does not convert.
pub(crate) fn fold_literal_casts(expr: Expr) -> datafusion_common::Result<Expr> {
    use datafusion_common::tree_node::{Transformed, TreeNode};
    let timestamp = |t: &DataType| matches!(t, DataType::Timestamp(..));
    expr.transform_up(|e| {
        let (inner, to, lenient) = match &e {
            Expr::Cast(c) => (c.expr.as_ref(), c.field.data_type(), false),
            Expr::TryCast(c) => (c.expr.as_ref(), c.field.data_type(), true),
            _ => return Ok(Transformed::no(e)),
        };
        let Expr::Literal(v, meta) = inner else {
            return Ok(Transformed::no(e));
        };
        let strict = CastOptions {
            safe: false,
            ..Default::default()
        };
        let cast = v
            .to_array()
            .and_then(|a| Ok(cast_with_options(&a, to, &strict)?))
            .and_then(|a| ScalarValue::try_from_array(&a, 0));
        match cast {
            Ok(folded) => Ok(Transformed::yes(Expr::Literal(folded, meta.clone()))),
            Err(_) if lenient || (timestamp(&v.data_type()) && timestamp(to)) => Ok(
                Transformed::yes(Expr::Literal(ScalarValue::try_from(to)?, meta.clone())),
            ),
            Err(err) => datafusion_common::plan_err!(
                "the value {v} cannot be cast to {to}: {}",
                err.strip_backtrace()
            ),
        }
    })
    .map(|t| t.data)
}

/// The whole number `value` as a decimal of precision `p` and scale `s`, or `None` when
/// its digits do not fit.
fn integer_as_decimal(value: &ScalarValue, to: &DataType, p: u8, s: i8) -> Option<ScalarValue> {
    let whole: i128 = match value {
        ScalarValue::Int8(v) => v.map(i128::from),
        ScalarValue::Int16(v) => v.map(i128::from),
        ScalarValue::Int32(v) => v.map(i128::from),
        ScalarValue::Int64(v) => v.map(i128::from),
        ScalarValue::UInt8(v) => v.map(i128::from),
        ScalarValue::UInt16(v) => v.map(i128::from),
        ScalarValue::UInt32(v) => v.map(i128::from),
        ScalarValue::UInt64(v) => v.map(i128::from),
        _ => None,
    }?;
    // digits of the unscaled value: whole * 10^s (a negative scale divides, exactly)
    let unscaled = if s >= 0 {
        whole.checked_mul(10i128.checked_pow(u32::try_from(s).ok()?)?)?
    } else {
        let d = 10i128.checked_pow(u32::from(s.unsigned_abs()))?;
        if whole % d != 0 {
            return None;
        }
        whole / d
    };
    // |unscaled| < 10^p; precisions past 38 exceed i128's digits, any i128 fits them
    if p <= 38 && unscaled.unsigned_abs() >= 10u128.pow(u32::from(p)) {
        return None;
    }
    match to {
        DataType::Decimal128(..) => Some(ScalarValue::Decimal128(Some(unscaled), p, s)),
        DataType::Decimal256(..) => Some(ScalarValue::Decimal256(
            Some(arrow_buffer::i256::from_i128(unscaled)),
            p,
            s,
        )),
        _ => None,
    }
}

fn adapt_literal(expr: &Expr, to: &DataType) -> Result<Expr, String> {
    match expr {
        Expr::Literal(v, meta) => adapt(v, to)
            .map(|v| Expr::Literal(v, meta.clone()))
            .ok_or_else(|| {
                format!("the literal {v} cannot be used as a value of the column's type {to}")
            }),
        other => Err(format!("expected a literal of type {to}, found {other}")),
    }
}

/// Literals inside arithmetic on the value side (`x > 1 + 2`) take the column type too.
fn adapt_operand(expr: &Expr, to: &DataType) -> Result<Expr, String> {
    match expr {
        Expr::BinaryExpr(b) => Ok(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(adapt_operand(&b.left, to)?),
            b.op,
            Box::new(adapt_operand(&b.right, to)?),
        ))),
        Expr::Literal(..) => adapt_literal(expr, to),
        other => Ok(other.clone()),
    }
}

/// Applies the literal rules from the top of the filter through `AND`/`OR`.
pub(crate) fn type_literals(expr: &Expr, schema: &DFSchema) -> Result<Expr, String> {
    match expr {
        Expr::BinaryExpr(b) if matches!(b.op, Operator::And | Operator::Or) => {
            Ok(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(type_literals(&b.left, schema)?),
                b.op,
                Box::new(type_literals(&b.right, schema)?),
            )))
        }
        Expr::BinaryExpr(b) => {
            if let Some(t) = column_type(&b.left, schema) {
                let right = match b.right.as_ref() {
                    Expr::Literal(..) => adapt_literal(&b.right, &t)?,
                    Expr::BinaryExpr(r) => Expr::BinaryExpr(BinaryExpr::new(
                        Box::new(adapt_operand(&r.left, &t)?),
                        r.op,
                        Box::new(adapt_operand(&r.right, &t)?),
                    )),
                    _ => return Ok(expr.clone()),
                };
                Ok(Expr::BinaryExpr(BinaryExpr::new(
                    b.left.clone(),
                    b.op,
                    Box::new(right),
                )))
            } else if let (Some(t), Expr::Literal(..)) =
                (column_type(&b.right, schema), b.left.as_ref())
            {
                Ok(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(adapt_literal(&b.left, &t)?),
                    b.op,
                    b.right.clone(),
                )))
            } else {
                Ok(expr.clone())
            }
        }
        Expr::Between(b) => match column_type(&b.expr, schema) {
            Some(t) => Ok(Expr::Between(Between::new(
                b.expr.clone(),
                b.negated,
                Box::new(adapt_operand(&b.low, &t)?),
                Box::new(adapt_operand(&b.high, &t)?),
            ))),
            None => Ok(expr.clone()),
        },
        Expr::InList(l) if matches!(l.expr.as_ref(), Expr::Column(_)) => {
            match column_type(&l.expr, schema) {
                Some(t) => {
                    let list = l
                        .list
                        .iter()
                        .map(|v| adapt_operand(v, &t))
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(Expr::InList(InList::new(l.expr.clone(), list, l.negated)))
                }
                None => Ok(expr.clone()),
            }
        }
        other => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_rules() {
        let i8v = adapt(&ScalarValue::Int64(Some(100)), &DataType::Int8);
        assert_eq!(i8v, Some(ScalarValue::Int8(Some(100))));
        assert_eq!(adapt(&ScalarValue::Int64(Some(300)), &DataType::Int8), None);
        assert_eq!(
            adapt(&ScalarValue::Int64(Some(-1)), &DataType::UInt32),
            None
        );
        assert_eq!(
            adapt(&ScalarValue::Float64(Some(2.5)), &DataType::Int32),
            None
        );
        assert_eq!(
            adapt(&ScalarValue::Int64(Some(2)), &DataType::Float32),
            Some(ScalarValue::Float32(Some(2.0)))
        );
        assert_eq!(adapt(&ScalarValue::from("a"), &DataType::Int64), None);
        assert_eq!(
            adapt(&ScalarValue::from("a"), &DataType::LargeUtf8),
            Some(ScalarValue::LargeUtf8(Some("a".into())))
        );
        assert_eq!(
            adapt(
                &ScalarValue::Binary(Some(vec![1, 2])),
                &DataType::FixedSizeBinary(3)
            ),
            None
        );
    }
}
