//! `_rowid` and `_rowaddr` as hidden columns of every dataset table (reference "Row
//! IDs"; pylance's SQL builder adds them only when asked). DataFusion has no hidden
//! columns, so a statement is read first: when it names `_rowid` or `_rowaddr`, its
//! dataset tables are given those columns for that statement, and each `*` over dataset
//! tables only is written `* EXCLUDE (_rowid, ...)`, so `SELECT *` shows the dataset's
//! own columns whether or not the statement names a row id elsewhere.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self as ast, ExcludeSelectItem, Expr, Ident, ObjectName, Query, SelectItem, SetExpr,
    TableFactor, VisitMut, VisitorMut,
};

/// The hidden columns a statement names: (`_rowid`, `_rowaddr`).
pub fn named(st: &ast::Statement) -> (bool, bool) {
    let (mut id, mut addr) = (false, false);
    let _ = ast::visit_expressions(st, |e: &Expr| {
        let name = match e {
            Expr::Identifier(i) => Some(&i.value),
            Expr::CompoundIdentifier(parts) => parts.last().map(|i| &i.value),
            _ => None,
        };
        match name.map(|n| n.as_str()) {
            Some(lancer::ROW_ID) => id = true,
            Some(lancer::ROW_ADDRESS) => addr = true,
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    (id, addr)
}

/// Writes each `*` (and `t.*`) of a SELECT whose tables are all in `datasets` as
/// `* EXCLUDE (hidden...)`; a `*` with its own EXCLUDE is left as written.
pub fn exclude_from_wildcards(
    st: &mut ast::Statement,
    datasets: &HashSet<String>,
    hidden: &[&str],
) {
    if hidden.is_empty() {
        return;
    }
    let mut v = Excluder { datasets, hidden };
    let _ = st.visit(&mut v);
}

struct Excluder<'a> {
    datasets: &'a HashSet<String>,
    hidden: &'a [&'a str],
}

impl VisitorMut for Excluder<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.set_expr(&mut query.body);
        ControlFlow::Continue(())
    }
}

impl Excluder<'_> {
    fn set_expr(&self, body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => {
                let only_datasets = !select.from.is_empty()
                    && select.from.iter().all(|t| {
                        self.is_dataset(&t.relation)
                            && t.joins.iter().all(|j| self.is_dataset(&j.relation))
                    });
                if !only_datasets {
                    return;
                }
                for item in &mut select.projection {
                    let opts = match item {
                        SelectItem::Wildcard(o) | SelectItem::QualifiedWildcard(_, o) => o,
                        _ => continue,
                    };
                    if opts.opt_exclude.is_none() {
                        opts.opt_exclude = Some(ExcludeSelectItem::Multiple(
                            self.hidden
                                .iter()
                                .map(|h| ObjectName::from(vec![Ident::new(*h)]))
                                .collect(),
                        ));
                    }
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left);
                self.set_expr(right);
            }
            _ => {}
        }
    }

    fn is_dataset(&self, t: &TableFactor) -> bool {
        match t {
            TableFactor::Table {
                name, args: None, ..
            } => match name.0.as_slice() {
                [part] => part
                    .as_ident()
                    .is_some_and(|i| self.datasets.contains(&i.value)),
                _ => false,
            },
            _ => false,
        }
    }
}
