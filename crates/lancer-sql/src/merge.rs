//! `MERGE INTO dataset USING source ON keys WHEN ...` as one `merge_insert` commit
//! (reference "Transactions": an Update operation; pylance's `merge_insert` builder):
//!
//! - `ON t.k = s.k [AND t.k2 = s.k2 ...]`: the key columns (the same name on both sides);
//! - `WHEN MATCHED [AND cond] THEN UPDATE SET c = s.c, ...` (every non-key column from
//!   the source's column of its name) — or `THEN DELETE`;
//! - `WHEN NOT MATCHED THEN INSERT (c, ...) VALUES (s.c, ...)` (every column), or
//!   `INSERT ROW`;
//! - `WHEN NOT MATCHED BY SOURCE [AND cond] THEN DELETE`.
//!
//! Conditions name columns as `s.x` / `t.x` (the statement's aliases, or the tables'
//! names). What `merge_insert` cannot do (an update of some columns, an expression in
//! SET) is refused with what to write instead.

use datafusion::sql::sqlparser::ast::{
    self as ast, Assignment, AssignmentTarget, BinaryOperator, Expr, Ident, Merge, MergeAction,
    MergeClauseKind, MergeInsertKind, TableFactor, VisitMut, VisitorMut,
};
use lancer::MergeOptions;

use crate::error::{Error, Result};

/// What a MERGE statement asks for: the target's and source's names in it, and the
/// merge to run.
pub struct MergePlan {
    /// The target table's name (one part).
    pub target: String,
    /// `SELECT * FROM <source>`: the source rows.
    pub source_query: String,
    /// The merge.
    pub options: MergeOptions,
}

fn refuse(what: impl Into<String>) -> Error {
    Error::User(format!(
        "MERGE INTO: {}; see `lancer merge` for the merges a dataset takes",
        what.into()
    ))
}

/// Reads `m` over a target whose columns are `columns`.
pub fn plan(m: &Merge, columns: &[String]) -> Result<MergePlan> {
    let (target, target_alias) = match &m.table {
        TableFactor::Table { name, alias, .. } => match name.0.as_slice() {
            [part] => {
                let n = part
                    .as_ident()
                    .map(|i| i.value.clone())
                    .ok_or_else(|| refuse("name the target by its path or table name"))?;
                (
                    n.clone(),
                    alias.as_ref().map(|a| a.name.value.clone()).unwrap_or(n),
                )
            }
            _ => return Err(refuse("name the target by its path or table name")),
        },
        _ => return Err(refuse("the target is a dataset table, not a subquery")),
    };
    let source_alias = match &m.source {
        TableFactor::Table { name, alias, .. } => {
            alias.as_ref().map(|a| a.name.value.clone()).or_else(|| {
                name.0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.clone())
            })
        }
        TableFactor::Derived { alias, .. } => alias.as_ref().map(|a| a.name.value.clone()),
        _ => None,
    }
    .ok_or_else(|| refuse("give the source an alias (USING (...) AS s)"))?;
    let sides = Sides {
        target: target_alias,
        source: source_alias,
    };
    let mut options = MergeOptions {
        on: keys(&m.on, &sides)?,
        ..MergeOptions::default()
    };
    for clause in &m.clauses {
        match (&clause.clause_kind, &clause.action) {
            (MergeClauseKind::Matched, MergeAction::Update(u)) => {
                if u.update_predicate.is_some() || u.delete_predicate.is_some() {
                    return Err(refuse("UPDATE ... WHERE / DELETE WHERE is not read; put the condition after WHEN MATCHED AND"));
                }
                every_column_from_source(&u.assignments, columns, &options.on, &sides)?;
                options.update_matched = true;
                options.update_condition = clause
                    .predicate
                    .as_ref()
                    .map(|p| renamed(p, &sides, Some(("source", "target"))));
            }
            (MergeClauseKind::Matched, MergeAction::Delete { .. }) => {
                if clause.predicate.is_some() {
                    return Err(refuse(
                        "WHEN MATCHED AND ... THEN DELETE takes no condition",
                    ));
                }
                options.delete_matched = true;
            }
            (
                MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget,
                MergeAction::Insert(ins),
            ) => {
                if clause.predicate.is_some() {
                    return Err(refuse(
                        "WHEN NOT MATCHED AND ... THEN INSERT takes no condition",
                    ));
                }
                insert_every_column(ins, columns, &sides)?;
                options.insert_unmatched = true;
            }
            (MergeClauseKind::NotMatchedBySource, MergeAction::Delete { .. }) => {
                options.delete_unmatched_by_source = true;
                options.delete_filter = clause.predicate.as_ref().map(|p| renamed(p, &sides, None));
            }
            (kind, action) => {
                return Err(refuse(format!(
                    "WHEN {kind:?} THEN {} is not a merge a dataset takes",
                    action.to_string().split_whitespace().next().unwrap_or("?")
                )))
            }
        }
    }
    if !(options.update_matched
        || options.delete_matched
        || options.insert_unmatched
        || options.delete_unmatched_by_source)
    {
        return Err(refuse("give at least one WHEN clause"));
    }
    Ok(MergePlan {
        target,
        source_query: format!("SELECT * FROM {}", m.source),
        options,
    })
}

/// The statement's names of the two sides.
struct Sides {
    target: String,
    source: String,
}

impl Sides {
    /// Which side `qualifier` names: Some(true) the source, Some(false) the target.
    fn side(&self, qualifier: &str) -> Option<bool> {
        if qualifier == self.source {
            Some(true)
        } else if qualifier == self.target {
            Some(false)
        } else {
            None
        }
    }
}

/// A qualified column `side.col` as (is_source, col).
fn column(e: &Expr, sides: &Sides) -> Option<(bool, String)> {
    match e {
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => sides
            .side(&parts[0].value)
            .map(|s| (s, parts[1].value.clone())),
        Expr::Nested(inner) => column(inner, sides),
        _ => None,
    }
}

/// The key columns of `ON t.k = s.k AND ...`.
fn keys(on: &Expr, sides: &Sides) -> Result<Vec<String>> {
    match on {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut k = keys(left, sides)?;
            k.extend(keys(right, sides)?);
            Ok(k)
        }
        Expr::Nested(inner) => keys(inner, sides),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => match (column(left, sides), column(right, sides)) {
            (Some((a_src, a)), Some((b_src, b))) if a_src != b_src && a == b => Ok(vec![a]),
            _ => Err(refuse(format!(
                "ON {on}: keys are equalities of a target and a source column of the same name \
                 ({}.k = {}.k)",
                sides.target, sides.source
            ))),
        },
        other => Err(refuse(format!(
            "ON {other}: keys are equalities joined by AND ({}.k = {}.k)",
            sides.target, sides.source
        ))),
    }
}

/// `UPDATE SET c = s.c, ...` for every non-key column.
fn every_column_from_source(
    assignments: &[Assignment],
    columns: &[String],
    on: &[String],
    sides: &Sides,
) -> Result<()> {
    let mut set = Vec::new();
    for a in assignments {
        let AssignmentTarget::ColumnName(name) = &a.target else {
            return Err(refuse("SET one column at a time"));
        };
        let target = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.clone())
            .unwrap_or_default();
        match column(&a.value, sides) {
            Some((true, c)) if c == target => set.push(target),
            _ => {
                return Err(refuse(format!(
                    "SET {target} = {}: a merge updates a matched row with the source's row \
                     (SET {target} = {}.{target}); for other values use UPDATE",
                    a.value, sides.source
                )))
            }
        }
    }
    let missing: Vec<&String> = columns
        .iter()
        .filter(|c| !on.contains(c) && !set.contains(c))
        .collect();
    if !missing.is_empty() {
        return Err(refuse(format!(
            "UPDATE SET leaves out {missing:?}: a merge updates every column from the source"
        )));
    }
    Ok(())
}

/// `INSERT (c, ...) VALUES (s.c, ...)` of every column, or `INSERT ROW`.
fn insert_every_column(
    ins: &ast::MergeInsertExpr,
    columns: &[String],
    sides: &Sides,
) -> Result<()> {
    let values = match &ins.kind {
        MergeInsertKind::Row => return Ok(()),
        MergeInsertKind::Values(v) => match v.rows.as_slice() {
            [row] => row,
            _ => return Err(refuse("INSERT VALUES takes one row of source columns")),
        },
    };
    let named: Vec<String> = if ins.columns.is_empty() {
        columns.to_vec()
    } else {
        ins.columns
            .iter()
            .map(|n| {
                n.0.last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.clone())
                    .unwrap_or_default()
            })
            .collect()
    };
    if named.len() != values.len() {
        return Err(refuse("INSERT names as many columns as it gives values"));
    }
    for (c, v) in named.iter().zip(values.iter()) {
        match column(v, sides) {
            Some((true, s)) if &s == c => {}
            _ => {
                return Err(refuse(format!(
                    "INSERT ({c}) VALUES ({v}): a merge inserts the source's row ({}.{c})",
                    sides.source
                )))
            }
        }
    }
    let missing: Vec<&String> = columns.iter().filter(|c| !named.contains(c)).collect();
    if !missing.is_empty() {
        return Err(refuse(format!(
            "INSERT leaves out {missing:?}: a merge inserts every column"
        )));
    }
    Ok(())
}

/// `e` with its `side.col` names rewritten: `source.col` / `target.col` when `names` is
/// given, else the bare column (a condition over the target alone).
fn renamed(e: &Expr, sides: &Sides, names: Option<(&str, &str)>) -> String {
    struct Rename<'a> {
        sides: &'a Sides,
        names: Option<(&'a str, &'a str)>,
    }
    impl VisitorMut for Rename<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<()> {
            if let Expr::CompoundIdentifier(parts) = e {
                if parts.len() == 2 {
                    if let Some(is_source) = self.sides.side(&parts[0].value) {
                        let col = parts[1].clone();
                        *e = match self.names {
                            Some((s, t)) => Expr::CompoundIdentifier(vec![
                                Ident::new(if is_source { s } else { t }),
                                col,
                            ]),
                            None => Expr::Identifier(col),
                        };
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut e = e.clone();
    let _ = e.visit(&mut Rename { sides, names });
    e.to_string()
}
