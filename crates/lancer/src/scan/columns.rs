//! Projected columns: a top-level column (`vec`) or a field inside structs (`meta.lang`,
//! `` `odd.name`.x `` with backticks around names holding dots). A nested path comes out
//! as one flat column named by the path, null wherever a parent struct is null — what the
//! reference returns for `columns=["meta.lang"]`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef, Schema};

use crate::{Error, Result};

/// One output column: the top-level column it comes from and the struct children below.
#[derive(Debug, Clone)]
pub(crate) struct ColumnPath {
    /// Output name (the path as written, or the top-level name).
    pub name: String,
    /// The top-level column read.
    pub top: String,
    /// Child indices from the top-level column down to the leaf.
    pub children: Vec<usize>,
    /// The output field.
    pub field: FieldRef,
}

/// The top-level column names of `schema`, comma separated (for messages).
pub(crate) fn column_names(schema: &Schema) -> String {
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits `a.b.c` into names; backticks quote a name (` `` ` is a literal backtick).
fn split_path(path: &str) -> Result<Vec<String>> {
    let bad = |why: &str| Error::InvalidArgument {
        what: format!("column path {path:?}: {why}"),
    };
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    let mut quoted_part = false;
    while let Some(c) = chars.next() {
        match c {
            '`' => {
                quoted_part = true;
                loop {
                    match chars.next() {
                        Some('`') if chars.peek() == Some(&'`') => {
                            chars.next();
                            cur.push('`');
                        }
                        Some('`') => break,
                        Some(ch) => cur.push(ch),
                        None => return Err(bad("unclosed backtick")),
                    }
                }
            }
            '.' => {
                if cur.is_empty() && !quoted_part {
                    return Err(bad("empty name between dots"));
                }
                parts.push(std::mem::take(&mut cur));
                quoted_part = false;
            }
            ch => cur.push(ch),
        }
    }
    if cur.is_empty() && !quoted_part {
        return Err(bad("empty name"));
    }
    parts.push(cur);
    Ok(parts)
}

impl ColumnPath {
    /// Resolves `path` in `schema`. A whole top-level name wins over a dotted reading, so
    /// a column literally named `a.b` is found.
    pub fn resolve(schema: &Schema, path: &str) -> Result<Self> {
        if let Ok(f) = schema.field_with_name(path) {
            return Ok(Self {
                name: path.to_string(),
                top: path.to_string(),
                children: Vec::new(),
                field: Arc::new(f.clone()),
            });
        }
        let parts = split_path(path)?;
        let names = || column_names(schema);
        let (first, rest) = parts.split_first().ok_or_else(|| Error::InvalidArgument {
            what: format!("empty column path {path:?}"),
        })?;
        let top = schema
            .field_with_name(first)
            .map_err(|_| Error::InvalidArgument {
                what: format!("no column {first:?} (the dataset has {})", names()),
            })?;
        let mut field = Arc::new(top.clone());
        let mut nullable = top.is_nullable();
        let mut children = Vec::new();
        for name in rest {
            let DataType::Struct(fields) = field.data_type() else {
                return Err(Error::InvalidArgument {
                    what: format!(
                        "column path {path:?}: {:?} is {}, not a struct, so it has no field {name:?}",
                        field.name(),
                        field.data_type()
                    ),
                });
            };
            let (i, child) = fields.find(name).ok_or_else(|| Error::InvalidArgument {
                what: format!(
                    "column path {path:?}: struct {:?} has no field {name:?} (it has {})",
                    field.name(),
                    fields
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })?;
            nullable |= child.is_nullable();
            children.push(i);
            field = child.clone();
        }
        let out = Field::new(path, field.data_type().clone(), nullable)
            .with_metadata(field.metadata().clone());
        Ok(Self {
            name: path.to_string(),
            top: first.clone(),
            children,
            field: Arc::new(out),
        })
    }

    /// This path's values out of `batch`, which holds its top-level column.
    pub fn column_of(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        let top = batch
            .column_by_name(&self.top)
            .ok_or_else(|| Error::InvalidArgument {
                what: format!("column {:?} was not read", self.top),
            })?;
        self.extract(top)
    }

    /// Extracts this path from its top-level column, pushing parent nulls down.
    pub fn extract(&self, top: &ArrayRef) -> Result<ArrayRef> {
        let mut cur = top.clone();
        for &i in &self.children {
            let s = cur.as_struct_opt().ok_or_else(|| Error::InvalidArgument {
                what: format!("column path {:?}: expected a struct", self.name),
            })?;
            let parent = s.nulls().cloned();
            let child = s.column(i).clone();
            cur = match parent {
                Some(p) if p.null_count() > 0 => {
                    let nulls = NullBuffer::union(Some(&p), child.nulls());
                    let data = child.to_data().into_builder().nulls(nulls).build()?;
                    make_array(data)
                }
                _ => child,
            };
        }
        Ok(cur)
    }
}

/// Resolves `columns` in `schema` (every top-level column when `None`).
pub(crate) fn resolve_all(schema: &Schema, columns: Option<&[&str]>) -> Result<Vec<ColumnPath>> {
    match columns {
        Some(cols) => cols
            .iter()
            .map(|c| ColumnPath::resolve(schema, c))
            .collect(),
        None => schema
            .fields()
            .iter()
            .map(|f| ColumnPath::resolve(schema, f.name()))
            .collect(),
    }
}

/// The top-level columns `paths` read, each once, in first-use order.
pub(crate) fn tops(paths: &[ColumnPath]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for p in paths {
        if !out.contains(&p.top.as_str()) {
            out.push(&p.top);
        }
    }
    out
}

/// The batch of `paths` taken out of `batch` (which holds their top-level columns), with
/// `extra` columns after them; same rows as `batch`, no schema metadata.
pub(crate) fn project(
    paths: &[ColumnPath],
    batch: &RecordBatch,
    extra: Vec<(Field, ArrayRef)>,
) -> Result<RecordBatch> {
    let mut fields = Vec::with_capacity(paths.len() + extra.len());
    let mut cols = Vec::with_capacity(paths.len() + extra.len());
    for p in paths {
        cols.push(p.column_of(batch)?);
        fields.push(p.field.as_ref().clone());
    }
    for (f, c) in extra {
        fields.push(f);
        cols.push(c);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let split = |p: &str| split_path(p).ok();
        assert_eq!(split("a.b"), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(
            split("`a.b`.c"),
            Some(vec!["a.b".to_string(), "c".to_string()])
        );
        assert_eq!(split("`a``b`"), Some(vec!["a`b".to_string()]));
        assert_eq!(split("a..b"), None);
        assert_eq!(split("`a"), None);
    }
}
