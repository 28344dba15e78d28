//! Filters answered by scalar indexes (reference: "Scalar Indices" and the performance
//! guide's "use scalar indices for filters"; what pylance 11–14 index, in
//! `docs/scalar-index-format.md` §10). A filter's expression is walked: comparisons of a
//! column with literals, `IN`, `BETWEEN`, `IS NULL`, `LIKE 'p%'` / `starts_with`,
//! `contains` / `LIKE '%s%'` and `array_has_*` on an indexed column become index
//! [`Query`]s; `AND` intersects their answers, `OR` unites them (only when both sides are
//! indexed). The result is, for the fragments the indexes cover, a superset of the rows
//! the filter keeps: the scan reads only those rows and evaluates the whole filter on
//! them (the recheck), and scans uncovered fragments whole.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use datafusion_common::ScalarValue;
use datafusion_expr::expr::{Between, BinaryExpr, InList, Like};
use datafusion_expr::{Expr, Operator};
use lancer_index::scalar::{Query, ScalarKind, ScalarSegment};
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::filter::Filter;
use crate::{Dataset, Result};

/// Rows an index leaves for a filter.
#[derive(Clone, Debug)]
pub(crate) struct IndexedRows {
    /// Fragments (live ones) for which `rows` holds every row the filter can keep.
    pub covered: RoaringBitmap,
    /// Row addresses.
    pub rows: RoaringTreemap,
    /// `rows` are exactly the rows the filter keeps in the covered fragments.
    pub exact: bool,
    /// What was asked of which index, pylance's notation (`[v = 7]@v_idx(BTree)`).
    pub explain: String,
}

/// Reports a warning to the session of `ds` (its sink; once per message).
fn warn(ds: &Dataset, message: &str) {
    ds.store().context().warn(message);
}

/// The scalar segments of `ds` on top-level field `field_id`.
fn segments_on(ds: &Dataset, field_id: i32) -> Result<Vec<Arc<ScalarSegment>>> {
    let mut out = Vec::new();
    for meta in ds.indices()? {
        if meta.fields != [field_id] {
            continue;
        }
        let Some(uuid) = meta.uuid.as_ref().map(|u| u.uuid.clone()) else {
            continue;
        };
        // Segments by dataset root and uuid in the session's index cache (segments
        // never change once written).
        let (cache, root) = (
            crate::session::index_cache(ds),
            crate::session::root_key(ds),
        );
        let seg = match cache.get::<ScalarSegment>(&root, &uuid) {
            Some(s) => s,
            None => match ScalarSegment::open(ds, meta) {
                Err(e) => {
                    // A damaged index is skipped (the filter scans those fragments):
                    // the answer stays right, and the warning says what to rebuild.
                    warn(
                        ds,
                        &format!("scalar index skipped, rows are scanned instead: {e}"),
                    );
                    continue;
                }
                Ok(None) => continue,
                Ok(Some(s)) => {
                    let s = Arc::new(s);
                    cache.insert(&root, &uuid, s.clone());
                    s
                }
            },
        };
        out.push(seg);
    }
    Ok(out)
}

/// Plans `filter` on `ds` with its scalar indexes; None when no index helps.
pub(crate) fn plan(ds: &Dataset, filter: &Filter) -> Result<Option<IndexedRows>> {
    if ds.indices().map(|i| i.is_empty()).unwrap_or(true) {
        return Ok(None);
    }
    Planner::new(ds).expr(filter.expr())
}

/// The rows an exact-equality index (BTREE, BITMAP) on top-level column `column` leaves
/// for `column IN values` (null values match nothing): pylance's indexed merge_insert
/// join. None when no such index covers a live fragment.
pub(crate) fn lookup_in(
    ds: &Dataset,
    column: &str,
    values: ArrayRef,
) -> Result<Option<IndexedRows>> {
    if ds.indices().map(|i| i.is_empty()).unwrap_or(true) {
        return Ok(None);
    }
    let expr = Expr::Column(datafusion_common::Column::from_name(column));
    let Some((name, id, t, _)) = self::column(&expr, ds) else {
        return Ok(None);
    };
    if &t != values.data_type() {
        return Ok(None);
    }
    let q = Query::In(values.clone());
    let segs: Vec<_> = segments_on(ds, id)?
        .into_iter()
        .filter(|s| s.kind.exact() && s.kind.answers(&q))
        .collect();
    if segs.is_empty() {
        return Ok(None);
    }
    // Cheaper than scanning the key column? A BTREE reads and tests (value, row id)
    // pairs of every page a key can be on: random keys over a large table touch every
    // page. Measured (bench/evolve.py, 10M int64 keys) a pair costs ~6x a scanned
    // key, so it is used when it reads under an eighth of what it indexes (clustered
    // keys, small upserts); a bitmap reads only its keys' bitmaps.
    let (mut read, mut total) = (0u64, 0u64);
    for s in &segs {
        match s.read_estimate(&q) {
            Ok(Some((r, t))) => {
                read += r;
                total += t;
            }
            _ => return Ok(None),
        }
    }
    if read.saturating_mul(8) > total {
        return Ok(None);
    }
    let mut p = Planner::new(ds);
    let text = format!("{name} IN <{} source keys>", values.len());
    let r = p.ask((name, id, t, None), Query::In(values), text)?;
    Ok(r.filter(|r| r.exact && !r.covered.is_empty()))
}

struct Planner<'a> {
    ds: &'a Dataset,
    live: RoaringBitmap,
    addresses: Option<Option<Arc<HashMap<u64, u64>>>>,
}

impl<'a> Planner<'a> {
    /// A planner over `ds`'s live fragments.
    fn new(ds: &'a Dataset) -> Self {
        let live = ds
            .fragments()
            .iter()
            .filter_map(|f| u32::try_from(f.id).ok())
            .collect();
        Planner {
            ds,
            live,
            addresses: None,
        }
    }
}

/// A column reference and its type: the column itself, or the column under an
/// order-preserving cast (a wider integer or float, another timestamp unit), whose
/// literals are then cast back (see [`Planner::bounds`]).
///
/// A typed JSON accessor of a JSON column and a path literal
/// (`json_get_int(data, 'x')`) is the column read at that path, of the accessor's type:
/// only JSON path indexes on that path answer for it ([`crate::index::json`]).
fn column<'e>(e: &'e Expr, ds: &Dataset) -> Option<Col<'e>> {
    if let Some(path) = struct_path(e) {
        // `meta.lang` (DataFusion's get_field over a column): an index on that field
        let (id, t) = crate::catalog::field_at_path(ds, &path)?;
        return Some((Cow::Owned(path.join(".")), id, t, None));
    }
    if let Expr::ScalarFunction(f) = e {
        let t = crate::filter::json::accessor_type(f.func.name())?;
        let [Expr::Column(c), Expr::Literal(ScalarValue::Utf8(Some(path)), _)] = &f.args[..] else {
            return None;
        };
        let schema = ds.schema();
        let field = schema.field_with_name(&c.name).ok()?;
        if !lancer_format::json::is_jsonb_field(field) {
            return None;
        }
        let id = top_level_id(ds, &c.name)?;
        return Some((Cow::Borrowed(c.name.as_str()), id, t, Some(path.as_str())));
    }
    if let Expr::Cast(datafusion_expr::expr::Cast { expr, field }) = e {
        let col = column(expr, ds)?;
        let to = field.data_type();
        let widening = match (&col.2, to) {
            (DataType::Timestamp(_, a), DataType::Timestamp(_, b)) => a == b,
            (a, b) if a.is_integer() => b.is_integer() || b.is_floating(),
            (DataType::Float16 | DataType::Float32, DataType::Float32 | DataType::Float64) => true,
            (DataType::Date32, DataType::Date64) => true,
            _ => false,
        };
        return widening.then_some(col);
    }
    let Expr::Column(c) = e else { return None };
    let schema = ds.schema();
    let field = schema.field_with_name(&c.name).ok()?;
    let id = top_level_id(ds, &c.name)?;
    Some((
        Cow::Borrowed(c.name.as_str()),
        id,
        field.data_type().clone(),
        None,
    ))
}

/// The names along `e` when it reads a struct field (`get_field(get_field(a, 'b'),
/// 'c')` → `[a, b, c]`); None for anything else, a top-level column included.
fn struct_path(e: &Expr) -> Option<Vec<String>> {
    let Expr::ScalarFunction(f) = e else {
        return None;
    };
    if f.func.name() != "get_field" {
        return None;
    }
    let [inner, Expr::Literal(ScalarValue::Utf8(Some(name)), _)] = &f.args[..] else {
        return None;
    };
    let mut path = match inner {
        Expr::Column(c) => vec![c.name.clone()],
        other => struct_path(other)?,
    };
    path.push(name.clone());
    Some(path)
}

/// A column an index can answer for: its name (a struct field's path), field id, the
/// type of its values and, for a JSON accessor, the path read.
type Col<'e> = (Cow<'e, str>, i32, DataType, Option<&'e str>);

/// The field id of top-level column `name`.
fn top_level_id(ds: &Dataset, name: &str) -> Option<i32> {
    let m = ds.manifest();
    let id = m
        .schema
        .fields
        .iter()
        .find(|f| f.parent_id == -1 && f.name == name)?
        .id;
    Some(id)
}

/// A literal as a one-value array of type `t`: of that type, or cast to it from the
/// type of a widening cast of the column (then rounded toward zero, which keeps an
/// inclusive bound a superset; the caller rechecks).
fn literal(e: &Expr, t: &DataType) -> Option<ArrayRef> {
    let Expr::Literal(v, _) = e else { return None };
    let a = v.to_array().ok()?;
    if a.data_type() == t {
        return Some(a);
    }
    let opts = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    let c = arrow_cast::cast_with_options(&a, t, &opts).ok()?;
    (c.null_count() == a.null_count()).then_some(c)
}

/// Whether the literal `e`, converted to the column's type as `v`, converts back to
/// itself.
fn roundtrips(e: &Expr, v: &ArrayRef) -> bool {
    let Expr::Literal(lit, _) = e else {
        return false;
    };
    let Ok(a) = lit.to_array() else { return false };
    arrow_cast::cast(v, a.data_type()).is_ok_and(|back| back.as_ref() == a.as_ref())
}

/// Whether `e` is a cast of a column (its literals were cast back: inclusive bounds).
fn is_cast(e: &Expr) -> bool {
    matches!(e, Expr::Cast(_))
}

/// For floats, SQL's equal zeros: a bound at ±0 widened to cover both (the indexes
/// order `-0.0` before `+0.0`).
fn widen_zero(b: Bound<ArrayRef>, upper: bool) -> Bound<ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type};
    let zero = |a: &ArrayRef| -> Option<ArrayRef> {
        // The zero on the widening side: +0 for an upper bound, -0 for a lower one.
        let want = if upper { 0.0f64 } else { -0.0f64 };
        match a.data_type() {
            DataType::Float64 if a.as_primitive::<Float64Type>().value(0) == 0.0 => {
                Some(Arc::new(arrow_array::Float64Array::from(vec![want])))
            }
            DataType::Float32 if a.as_primitive::<Float32Type>().value(0) == 0.0 => {
                Some(Arc::new(arrow_array::Float32Array::from(vec![want as f32])))
            }
            _ => None,
        }
    };
    match b {
        // Inclusive: both zeros inside. Exclusive: both zeros outside (`v > 0` keeps
        // neither zero), so the exclusive bound moves to the far zero.
        Bound::Included(a) => Bound::Included(zero(&a).unwrap_or(a)),
        Bound::Excluded(a) => {
            let far = if upper { -0.0f64 } else { 0.0 };
            let moved: Option<ArrayRef> = zero(&a).map(|z| match z.data_type() {
                DataType::Float32 => {
                    Arc::new(arrow_array::Float32Array::from(vec![far as f32])) as ArrayRef
                }
                _ => Arc::new(arrow_array::Float64Array::from(vec![far])) as ArrayRef,
            });
            Bound::Excluded(moved.unwrap_or(a))
        }
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Whether the one value of the float array `a` is finite and not ±0.
fn finite_nonzero(a: &ArrayRef) -> bool {
    let Ok(f) = arrow_cast::cast(a, &DataType::Float64) else {
        return false;
    };
    let f = arrow_array::cast::AsArray::as_primitive::<arrow_array::types::Float64Type>(&f);
    f.len() == 1 && f.is_valid(0) && f.value(0).is_finite() && f.value(0) != 0.0
}

fn string_literal(e: &Expr) -> Option<String> {
    match e {
        Expr::Literal(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
            _,
        ) => Some(s.clone()),
        _ => None,
    }
}

fn flip(op: Operator) -> Operator {
    match op {
        Operator::Lt => Operator::Gt,
        Operator::LtEq => Operator::GtEq,
        Operator::Gt => Operator::Lt,
        Operator::GtEq => Operator::LtEq,
        o => o,
    }
}

/// Restricts `rows` to the fragments in `frags`.
fn restrict(rows: &RoaringTreemap, frags: &RoaringBitmap) -> RoaringTreemap {
    RoaringTreemap::from_bitmaps(
        rows.bitmaps()
            .filter(|(hi, _)| frags.contains(*hi))
            .map(|(hi, b)| (hi, b.clone())),
    )
}

impl Planner<'_> {
    fn expr(&mut self, e: &Expr) -> Result<Option<IndexedRows>> {
        match e {
            Expr::Alias(a) => self.expr(&a.expr),
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                Operator::And => {
                    if let Some(r) = self.one_range(e)? {
                        return Ok(Some(r));
                    }
                    let (a, b) = (self.expr(left)?, self.expr(right)?);
                    Ok(match (a, b) {
                        (Some(a), Some(b)) => Some(and(a, b)),
                        (Some(a), None) | (None, Some(a)) => {
                            Some(IndexedRows { exact: false, ..a })
                        }
                        (None, None) => None,
                    })
                }
                Operator::Or => {
                    let Some(a) = self.expr(left)? else {
                        return Ok(None);
                    };
                    let Some(b) = self.expr(right)? else {
                        return Ok(None);
                    };
                    let covered = &a.covered & &b.covered;
                    Ok(Some(IndexedRows {
                        rows: restrict(&(a.rows | b.rows), &covered),
                        covered,
                        exact: a.exact && b.exact,
                        explain: format!("OR({},{})", a.explain, b.explain),
                    }))
                }
                Operator::NotEq => {
                    let eq = Expr::BinaryExpr(BinaryExpr {
                        left: left.clone(),
                        op: Operator::Eq,
                        right: right.clone(),
                    });
                    self.negate(&eq)
                }
                Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => {
                    let (col, lit, op, cast) = match (column(left, self.ds), column(right, self.ds))
                    {
                        (Some(c), None) => (c, right.as_ref(), *op, is_cast(left)),
                        (None, Some(c)) => (c, left.as_ref(), flip(*op), is_cast(right)),
                        _ => return Ok(None),
                    };
                    let Some(v) = literal(lit, &col.2) else {
                        return Ok(None);
                    };
                    // Equality through a widening cast is exact when the literal is a
                    // value of the column's type (it converts back unchanged).
                    let lossless = cast && op == Operator::Eq && roundtrips(lit, &v);
                    let (mut lower, mut upper) = match op {
                        Operator::Eq => (Bound::Included(v.clone()), Bound::Included(v)),
                        Operator::Lt => (Bound::Unbounded, Bound::Excluded(v)),
                        Operator::LtEq => (Bound::Unbounded, Bound::Included(v)),
                        Operator::Gt => (Bound::Excluded(v), Bound::Unbounded),
                        _ => (Bound::Included(v), Bound::Unbounded),
                    };
                    if cast {
                        let incl = |b: Bound<ArrayRef>| match b {
                            Bound::Excluded(a) => Bound::Included(a),
                            o => o,
                        };
                        (lower, upper) = (incl(lower), incl(upper));
                    }
                    let float = col.2.is_floating();
                    if float {
                        (lower, upper) = (widen_zero(lower, false), widen_zero(upper, true));
                    }
                    let text = format!("{e}");
                    let q = match (op, &lower) {
                        // Equality is a set (both zeros for a float zero): the bloom
                        // filter answers sets only.
                        (Operator::Eq, Bound::Included(a)) => {
                            let mut set = vec![a.clone()];
                            if let Bound::Included(b) = &upper {
                                if !Arc::ptr_eq(a, b) {
                                    set.push(b.clone());
                                }
                            }
                            let refs: Vec<&dyn Array> = set.iter().map(|a| a.as_ref()).collect();
                            let Ok(set) = arrow_select::concat::concat(&refs) else {
                                return Ok(None);
                            };
                            Query::In(set)
                        }
                        _ => Query::Range { lower, upper },
                    };
                    // Float equality with a finite, non-zero literal is one value in
                    // every order: exact. Zeros (two of them) and ranges are rechecked.
                    let plain_float = float
                        && op == Operator::Eq
                        && matches!(&q, Query::In(set) if set.len() == 1 && finite_nonzero(set));
                    let r = self.ask(col, q, text)?;
                    Ok(r.map(|r| IndexedRows {
                        exact: r.exact && (!cast || lossless) && (!float || plain_float),
                        ..r
                    }))
                }
                _ => Ok(None),
            },
            Expr::Column(_) => {
                let Some(col) = column(e, self.ds) else {
                    return Ok(None);
                };
                if col.2 != DataType::Boolean {
                    return Ok(None);
                }
                let t: ArrayRef = Arc::new(arrow_array::BooleanArray::from(vec![true]));
                let text = format!("{} = true", col.0);
                self.ask(col, Query::In(t), text)
            }
            Expr::InList(InList {
                expr,
                list,
                negated: false,
            }) => {
                let Some(col) = column(expr, self.ds) else {
                    return Ok(None);
                };
                let mut vals = Vec::with_capacity(list.len());
                for l in list {
                    let Some(v) = literal(l, &col.2) else {
                        return Ok(None);
                    };
                    vals.push(v);
                }
                let float = col.2.is_floating();
                if float {
                    for z in [-0.0f64, 0.0] {
                        let a: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![z]));
                        if let Ok(c) = arrow_cast::cast(&a, &col.2) {
                            vals.push(c);
                        }
                    }
                }
                let refs: Vec<&dyn Array> = vals.iter().map(|a| a.as_ref()).collect();
                let Ok(set) = arrow_select::concat::concat(&refs) else {
                    return Ok(None);
                };
                let text = format!("{e}");
                // With floats the set holds both zeros: a superset, rechecked.
                let r = self.ask(col, Query::In(set), text)?;
                Ok(r.map(|r| IndexedRows {
                    exact: r.exact && !float,
                    ..r
                }))
            }
            Expr::Between(Between {
                expr,
                negated: false,
                low,
                high,
            }) => {
                let Some(col) = column(expr, self.ds) else {
                    return Ok(None);
                };
                let (Some(lo), Some(hi)) = (literal(low, &col.2), literal(high, &col.2)) else {
                    return Ok(None);
                };
                let float = col.2.is_floating();
                let q = Query::Range {
                    lower: widen_zero(Bound::Included(lo), false),
                    upper: widen_zero(Bound::Included(hi), true),
                };
                let text = format!("{e}");
                let r = self.ask(col, q, text)?;
                Ok(r.map(|r| IndexedRows {
                    exact: r.exact && !float,
                    ..r
                }))
            }
            Expr::IsNull(inner) => {
                let Some(col) = column(inner, self.ds) else {
                    return Ok(None);
                };
                let text = format!("{e}");
                self.ask(col, Query::IsNull, text)
            }
            Expr::IsNotNull(inner) => {
                let Some(col) = column(inner, self.ds) else {
                    return Ok(None);
                };
                let Some(n) = self.ask(col, Query::IsNull, format!("{inner} IS NULL"))? else {
                    return Ok(None);
                };
                if !n.exact {
                    return Ok(None);
                }
                Ok(Some(IndexedRows {
                    rows: self.all_rows(&n.covered) - &n.rows,
                    covered: n.covered,
                    exact: true,
                    explain: format!("NOT({})", n.explain),
                }))
            }
            Expr::Not(inner) => self.negate(inner),
            Expr::InList(InList {
                expr,
                list,
                negated: true,
            }) => {
                let positive = Expr::InList(InList {
                    expr: expr.clone(),
                    list: list.clone(),
                    negated: false,
                });
                self.negate(&positive)
            }
            Expr::Between(b) if b.negated => {
                let positive = Expr::Between(Between {
                    negated: false,
                    ..b.clone()
                });
                self.negate(&positive)
            }
            Expr::Like(Like {
                negated: false,
                expr,
                pattern,
                escape_char: None,
                case_insensitive: false,
            }) => {
                let Some(col) = column(expr, self.ds) else {
                    return Ok(None);
                };
                let Some(p) = string_literal(pattern) else {
                    return Ok(None);
                };
                if p.contains('\\') {
                    return Ok(None);
                }
                let text = format!("{e}");
                let inner = p.trim_start_matches('%').trim_end_matches('%');
                if inner.contains(['%', '_']) {
                    // `a_ple`, `ab%c`: the literal head is a prefix; the filter decides.
                    let head: String = p.chars().take_while(|c| *c != '%' && *c != '_').collect();
                    if head.is_empty() {
                        return Ok(None);
                    }
                    let r = self.ask(col, Query::Prefix(head), text)?;
                    return Ok(r.map(|r| IndexedRows { exact: false, ..r }));
                }
                if !p.starts_with('%') && p.ends_with('%') {
                    if let Some(r) =
                        self.ask(col.clone(), Query::Prefix(inner.to_string()), text.clone())?
                    {
                        return Ok(Some(r));
                    }
                }
                let r = self.ask(col, Query::Contains(inner.to_string()), text)?;
                // A candidate answer for a substring: the filter decides.
                Ok(r.map(|r| IndexedRows { exact: false, ..r }))
            }
            Expr::ScalarFunction(f) => {
                let name = f.name();
                let [c, arg] = f.args.as_slice() else {
                    return Ok(None);
                };
                let Some(col) = column(c, self.ds) else {
                    return Ok(None);
                };
                let text = format!("{e}");
                match name {
                    "starts_with" => {
                        let Some(p) = string_literal(arg) else {
                            return Ok(None);
                        };
                        self.ask(col, Query::Prefix(p), text)
                    }
                    "contains" => {
                        let Some(p) = string_literal(arg) else {
                            return Ok(None);
                        };
                        Ok(self
                            .ask(col, Query::Contains(p), text)?
                            .map(|r| IndexedRows { exact: false, ..r }))
                    }
                    "array_has_any" | "array_has_all" | "array_has" | "array_contains" => {
                        let elem = match &col.2 {
                            DataType::List(f) | DataType::LargeList(f) => f.data_type().clone(),
                            _ => return Ok(None),
                        };
                        let set = if name.starts_with("array_has_a") {
                            let Expr::Literal(v, _) = arg else {
                                return Ok(None);
                            };
                            let Ok(a) = v.to_array() else { return Ok(None) };
                            let values = match a.data_type() {
                                DataType::List(_) => {
                                    arrow_array::cast::AsArray::as_list::<i32>(&a).value(0)
                                }
                                DataType::LargeList(_) => {
                                    arrow_array::cast::AsArray::as_list::<i64>(&a).value(0)
                                }
                                _ => return Ok(None),
                            };
                            if values.data_type() != &elem {
                                return Ok(None);
                            }
                            values
                        } else {
                            let Some(v) = literal(arg, &elem) else {
                                return Ok(None);
                            };
                            v
                        };
                        let q = if name == "array_has_all" {
                            if set.is_empty() {
                                return Ok(None);
                            }
                            Query::HasAll(set)
                        } else {
                            Query::HasAny(set)
                        };
                        self.ask(col, q, text)
                    }
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// `a > x AND a < y` (any comparisons of one column, as an AND chain): one range
    /// asked once, as pylance plans it (two half-open ranges would each read half the
    /// index). None when the chain holds anything else.
    fn one_range(&mut self, e: &Expr) -> Result<Option<IndexedRows>> {
        fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
            match e {
                Expr::BinaryExpr(BinaryExpr {
                    left,
                    op: Operator::And,
                    right,
                }) => {
                    conjuncts(left, out);
                    conjuncts(right, out);
                }
                Expr::Alias(a) => conjuncts(&a.expr, out),
                other => out.push(other),
            }
        }
        let mut parts = Vec::new();
        conjuncts(e, &mut parts);
        let mut name: Option<String> = None;
        let mut lower: Bound<ArrayRef> = Bound::Unbounded;
        let mut upper: Bound<ArrayRef> = Bound::Unbounded;
        let mut col_info = None;
        for p in &parts {
            let Expr::BinaryExpr(BinaryExpr { left, op, right }) = p else {
                return Ok(None);
            };
            let (col, lit, op) = match (column(left, self.ds), column(right, self.ds)) {
                (Some(c), None) if !is_cast(left) => (c, right.as_ref(), *op),
                (None, Some(c)) if !is_cast(right) => (c, left.as_ref(), flip(*op)),
                _ => return Ok(None),
            };
            if name.as_deref().is_some_and(|n| n != col.0.as_ref()) || col.2.is_floating() {
                return Ok(None);
            }
            name = Some(col.0.to_string());
            let Some(v) = literal(lit, &col.2) else {
                return Ok(None);
            };
            // Whether `new` (exclusive or not) bounds tighter than `old`: a stricter
            // value, or the same value made exclusive.
            let tighter =
                |new: &ArrayRef, exclusive: bool, old: &Bound<ArrayRef>, is_lower: bool| -> bool {
                    let (o, old_excl) = match old {
                        Bound::Unbounded => return true,
                        Bound::Included(o) => (o, false),
                        Bound::Excluded(o) => (o, true),
                    };
                    let s = arrow_array::Scalar::new(o.clone());
                    let stricter = if is_lower {
                        arrow_ord::cmp::gt(new, &s)
                    } else {
                        arrow_ord::cmp::lt(new, &s)
                    };
                    let same = arrow_ord::cmp::eq(new, &s);
                    match (stricter, same) {
                        (Ok(st), Ok(eq)) => st.value(0) || (eq.value(0) && exclusive && !old_excl),
                        _ => false,
                    }
                };
            match op {
                Operator::Gt | Operator::GtEq => {
                    let excl = op == Operator::Gt;
                    if tighter(&v, excl, &lower, true) {
                        lower = if excl {
                            Bound::Excluded(v)
                        } else {
                            Bound::Included(v)
                        };
                    }
                }
                Operator::Lt | Operator::LtEq => {
                    let excl = op == Operator::Lt;
                    if tighter(&v, excl, &upper, false) {
                        upper = if excl {
                            Bound::Excluded(v)
                        } else {
                            Bound::Included(v)
                        };
                    }
                }
                _ => return Ok(None),
            }
            col_info = Some(col);
        }
        let Some(col) = col_info else { return Ok(None) };
        if parts.len() < 2 {
            return Ok(None);
        }
        let text = parts
            .iter()
            .map(|p| format!("{p}"))
            .collect::<Vec<_>>()
            .join(" && ");
        self.ask(col, Query::Range { lower, upper }, text)
    }

    /// Asks the best index on `col` that answers `q`.
    fn ask(&mut self, col: Col<'_>, q: Query, text: String) -> Result<Option<IndexedRows>> {
        // a column's own indexes, or the JSON path indexes on the path it is read at
        // whose values have the accessor's type
        let segs: Vec<_> = segments_on(self.ds, col.1)?
            .into_iter()
            .filter(|s| {
                s.json_path.as_deref() == col.3
                    && (col.3.is_none() || s.value_type().as_ref() == Some(&col.2))
            })
            .collect();
        // Exact kinds first; the segments of one index (name) together.
        let mut names: Vec<(bool, String, ScalarKind)> = segs
            .iter()
            .filter(|s| s.kind.answers(&q))
            .map(|s| (!s.kind.exact(), s.name.clone(), s.kind))
            .collect();
        names.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        names.dedup();
        let Some((_, name, kind)) = names.into_iter().next() else {
            return Ok(None);
        };
        let mut covered = RoaringBitmap::new();
        let mut rows = RoaringTreemap::new();
        let mut exact = true;
        for s in segs.iter().filter(|s| s.name == name && s.kind == kind) {
            let a = match s.query(&q) {
                Ok(Some(a)) => a,
                Ok(None) => return Ok(None),
                Err(e) => {
                    warn(
                        self.ds,
                        &format!("scalar index skipped, rows are scanned instead: {e}"),
                    );
                    return Ok(None);
                }
            };
            exact &= a.exact;
            let mut part = a.rows;
            if s.row_ids {
                let map = self.stable_ids()?;
                part = part
                    .iter()
                    .filter_map(|id| map.as_ref().map_or(Some(id), |m| m.get(&id).copied()))
                    .collect();
            }
            let frags = &s.fragments & &self.live;
            rows |= restrict(&part, &frags);
            covered |= frags;
        }
        Ok(Some(IndexedRows {
            covered,
            rows,
            exact,
            explain: match col.3 {
                Some(path) => format!("[Json({text}->{path})]@{name}({})", kind.plan_name()),
                None => format!("[{text}]@{name}({})", kind.plan_name()),
            },
        }))
    }

    /// `NOT inner` (also `!=`, `NOT IN`, `NOT BETWEEN`) from an exact answer of `inner`:
    /// every row of the covered fragments but those. SQL keeps a row only where `inner`
    /// is FALSE, not NULL: for the forms that are NULL exactly when their column is
    /// (a comparison, `IN`, `BETWEEN`, `LIKE`, a boolean column) the rows where the
    /// column is null are taken out too, through an exact `IS NULL` answer of an index
    /// on it, and the answer is exact; otherwise it is a superset, rechecked. An inexact
    /// answer of `inner` cannot be complemented (it would lose rows). pylance answers
    /// these the same way.
    fn negate(&mut self, inner: &Expr) -> Result<Option<IndexedRows>> {
        let Some(a) = self.expr(inner)? else {
            return Ok(None);
        };
        if !a.exact {
            return Ok(None);
        }
        let explain = format!("NOT({})", a.explain);
        let tested = match inner {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq,
                right,
            }) => column(left, self.ds).or_else(|| column(right, self.ds)),
            Expr::InList(InList { expr, .. })
            | Expr::Between(Between { expr, .. })
            | Expr::Like(Like { expr, .. }) => column(expr, self.ds),
            Expr::Column(_) => column(inner, self.ds),
            _ => None,
        };
        let nulls = match tested {
            Some(col) => {
                let text = format!("{} IS NULL", col.0);
                self.ask(col, Query::IsNull, text)?.filter(|n| n.exact)
            }
            None => None,
        };
        Ok(Some(match nulls {
            Some(n) => {
                let covered = &a.covered & &n.covered;
                IndexedRows {
                    rows: restrict(&(self.all_rows(&covered) - &a.rows - &n.rows), &covered),
                    covered,
                    exact: true,
                    explain,
                }
            }
            None => IndexedRows {
                rows: self.all_rows(&a.covered) - &a.rows,
                covered: a.covered,
                exact: false,
                explain,
            },
        }))
    }

    /// Every row address (live or deleted: the scan keeps live rows) of `fragments`.
    fn all_rows(&self, fragments: &RoaringBitmap) -> RoaringTreemap {
        let mut out = RoaringTreemap::new();
        for f in self.ds.fragments() {
            if u32::try_from(f.id).is_ok_and(|id| fragments.contains(id)) {
                let base = f.id << 32;
                out.insert_range(base..base + f.physical_rows);
            }
        }
        out
    }

    fn stable_ids(&mut self) -> Result<Option<Arc<HashMap<u64, u64>>>> {
        if self.addresses.is_none() {
            self.addresses = Some(crate::catalog::stable_id_addresses(self.ds)?);
        }
        Ok(self.addresses.clone().flatten())
    }
}

/// Both conditions: intersected where both indexes cover a fragment, one side's rows
/// where only it does.
fn and(a: IndexedRows, b: IndexedRows) -> IndexedRows {
    let only_a = &a.covered - &b.covered;
    let only_b = &b.covered - &a.covered;
    let rows = (&a.rows & &b.rows) | restrict(&a.rows, &only_a) | restrict(&b.rows, &only_b);
    IndexedRows {
        exact: a.exact && b.exact && a.covered == b.covered,
        covered: &a.covered | &b.covered,
        rows,
        explain: format!("AND({},{})", a.explain, b.explain),
    }
}
