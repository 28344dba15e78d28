//! `lancer inspect`: every layer of a data file, and the walk of one row to its bytes.

use std::path::Path;

use lancer::file::inspect::{column_paths, describe_page, locate_row};
use lancer::file::LanceField;
use serde_json::{json, Value};

use super::{open_traced, CmdResult};

fn field_json(f: &LanceField) -> Value {
    json!({
        "id": f.id,
        "name": f.name,
        "logical_type": f.logical_type,
        "arrow_type": f.data_type.to_string(),
        "nullable": f.nullable,
        "metadata": f.metadata,
        "children": f.children.iter().map(field_json).collect::<Vec<_>>(),
    })
}

fn field_text(f: &LanceField, depth: usize, out: &mut String) {
    let md = if f.metadata.is_empty() {
        String::new()
    } else {
        let mut kv: Vec<String> = f.metadata.iter().map(|(k, v)| format!("{k}={v}")).collect();
        kv.sort();
        format!("  {{{}}}", kv.join(", "))
    };
    out.push_str(&format!(
        "  {:indent$}{} (id {}): {}{}{}\n",
        "",
        f.name,
        f.id,
        f.logical_type,
        if f.nullable { "" } else { " not null" },
        md,
        indent = depth * 2
    ));
    for c in &f.children {
        field_text(c, depth + 1, out);
    }
}

/// Runs `lancer inspect`.
pub fn run(path: &Path, row: Option<u64>, as_json: bool) -> CmdResult {
    let (reader, io) = open_traced(path)?;
    let meta = reader.metadata().clone();
    if let Some(l) = reader.legacy() {
        // Legacy (0.1 / 0.2) files: no columns or pages of the 2.x container.
        if as_json {
            let v = json!({
                "path": path.display().to_string(),
                "file_size": meta.file_size,
                "version": meta.version.to_string(),
                "num_rows": meta.num_rows,
                "legacy": {
                    "format": format!("{}.{}", l.major, l.minor),
                    "metadata_position": l.metadata_position,
                    "manifest_position": l.manifest_position,
                    "page_table_position": l.page_table_position,
                    "batch_offsets": l.batch_offsets,
                },
                "metadata_reads": meta.tail_reads.iter().map(|r| json!([r.start, r.end])).collect::<Vec<_>>(),
                "schema": meta.schema.fields.iter().map(field_json).collect::<Vec<_>>(),
                "schema_metadata": meta.schema.metadata,
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            print!("{}: {}", path.display(), l.describe());
            if row.is_some() {
                println!("(row walks are shown for 2.x files only)");
            }
        }
        return Ok(());
    }
    let paths = column_paths(&meta);
    let tail: Vec<Value> = meta
        .tail_reads
        .iter()
        .map(|r| json!([r.start, r.end]))
        .collect();
    let mut columns = Vec::new();
    for (i, c) in meta.columns.iter().enumerate() {
        let mut start = 0u64;
        let pages: Vec<Value> = c
            .pages
            .iter()
            .map(|p| {
                let v = json!({
                    "rows": [start, start + p.num_rows],
                    "encoding": describe_page(p),
                    "buffers": p.buffers.iter().map(|b| json!([b.start, b.end - b.start])).collect::<Vec<_>>(),
                });
                start += p.num_rows;
                v
            })
            .collect();
        columns.push(json!({
            "index": i,
            "field": paths.get(i).cloned().unwrap_or_default(),
            "metadata_bytes": [c.metadata_range.start, c.metadata_range.end - c.metadata_range.start],
            "column_buffers": c.buffers.iter().map(|b| json!([b.start, b.end - b.start])).collect::<Vec<_>>(),
            "pages": pages,
        }));
    }
    let walk = match row {
        Some(r) => row_walk(&reader, &io, r)?,
        None => Vec::new(),
    };
    if as_json {
        let v = json!({
            "path": path.display().to_string(),
            "file_size": meta.file_size,
            "version": meta.version.to_string(),
            "num_rows": meta.num_rows,
            "footer": {
                "column_meta_start": meta.footer.column_meta_start,
                "cmo_table_start": meta.footer.cmo_table_start,
                "gbo_table_start": meta.footer.gbo_table_start,
                "num_columns": meta.footer.num_columns,
                "num_global_buffers": meta.footer.num_global_buffers,
            },
            "metadata_reads": tail,
            "global_buffers": meta.global_buffers.iter().map(|b| json!([b.start, b.end - b.start])).collect::<Vec<_>>(),
            "schema": meta.schema.fields.iter().map(field_json).collect::<Vec<_>>(),
            "schema_metadata": meta.schema.metadata,
            "columns": columns,
            "row": row.map(|r| json!({"row": r, "fields": walk})),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut s = String::new();
    s.push_str(&format!(
        "{}: Lance {} file, {} rows, {} columns, {} global buffers, {} bytes\n",
        path.display(),
        meta.version,
        meta.num_rows,
        meta.columns.len(),
        meta.global_buffers.len(),
        meta.file_size
    ));
    s.push_str(&format!(
        "footer: column metadata from {}, column offsets at {}, global buffer offsets at {}; metadata read in {} request(s)\n",
        meta.footer.column_meta_start,
        meta.footer.cmo_table_start,
        meta.footer.gbo_table_start,
        meta.tail_reads.len()
    ));
    s.push_str("schema:\n");
    for f in &meta.schema.fields {
        field_text(f, 0, &mut s);
    }
    s.push_str("columns:\n");
    for (i, c) in meta.columns.iter().enumerate() {
        s.push_str(&format!(
            "  [{i}] {} ({} page{})\n",
            paths.get(i).map(|p| p.as_str()).unwrap_or("?"),
            c.pages.len(),
            if c.pages.len() == 1 { "" } else { "s" }
        ));
        let mut start = 0u64;
        for (pi, p) in c.pages.iter().enumerate() {
            let bufs: Vec<String> = p
                .buffers
                .iter()
                .map(|b| format!("{}+{}", b.start, b.end - b.start))
                .collect();
            s.push_str(&format!(
                "      page {pi}: rows {}..{}  {}\n        buffers: {}\n",
                start,
                start + p.num_rows,
                describe_page(p),
                bufs.join(" ")
            ));
            start += p.num_rows;
        }
    }
    if let Some(r) = row {
        s.push_str(&format!("row {r}:\n"));
        s.push_str(&walk_text(&walk, 2));
    }
    print!("{s}");
    Ok(())
}

/// Follows row `r` of an opened file through every field: the columns and pages that
/// hold it and the byte ranges a read of it touches (recorded by `io`).
pub fn row_walk(
    reader: &lancer::file::FileReader,
    io: &lancer::file::TracingRead<std::sync::Arc<dyn lancer::file::RangeRead>>,
    r: u64,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let meta = reader.metadata();
    let paths = column_paths(meta);
    let mut walk = Vec::new();
    if r >= meta.num_rows {
        return Err(format!(
            "row {r} is past the end of the file ({} rows)",
            meta.num_rows
        )
        .into());
    }
    for (fi, f) in meta.schema.fields.iter().enumerate() {
        io.clear();
        reader.take(&[r], Some(&[f.name.as_str()]))?;
        let ranges = io.ranges();
        let touched: Vec<Value> = ranges
            .iter()
            .map(|b| json!([b.start, b.end - b.start]))
            .collect();
        // Whether a read landed in a page's buffers.
        let read_in = |bufs: &[std::ops::Range<u64>]| {
            bufs.iter()
                .any(|b| ranges.iter().any(|t| t.start >= b.start && t.end <= b.end))
        };
        let cols = reader.field_columns(fi).unwrap_or(0..0);
        let located: Vec<Value> = cols
            .clone()
            .filter_map(|c| {
                // 2.0 list items count items, not rows: name the page the read actually
                // used (the row's position in it is then not the row) — also when the
                // row number is past the items column's end.
                let pages = meta
                    .columns
                    .get(c)
                    .map(|col| col.pages.as_slice())
                    .unwrap_or(&[]);
                let used = pages.iter().position(|p| read_in(&p.buffers));
                let (page, row_in_page, encoding) = match locate_row(meta, c, r) {
                    Some(l) if read_in(&l.page_buffers) || used.is_none() => {
                        (l.page, Some(l.row_in_page), l.encoding)
                    }
                    Some(l) => {
                        let page = used.unwrap_or(l.page);
                        (page, None, l.encoding)
                    }
                    None => (used?, None, String::new()),
                };
                let encoding = pages.get(page).map_or(encoding, describe_page);
                Some(json!({
                    "column": c,
                    "field": paths.get(c).cloned().unwrap_or_default(),
                    "page": page,
                    "row_in_page": row_in_page,
                    "encoding": encoding,
                }))
            })
            .collect();
        walk.push(json!({"field": f.name, "columns": located, "bytes_read": touched}));
    }
    Ok(walk)
}

/// The text form of a row walk, indented by `indent` spaces.
pub fn walk_text(walk: &[Value], indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut s = String::new();
    for w in walk {
        s.push_str(&format!("{pad}{}:\n", w["field"].as_str().unwrap_or("?")));
        if let Some(cols) = w["columns"].as_array() {
            for c in cols {
                let at = match c["row_in_page"].as_u64() {
                    Some(r) => format!("row {r} of the page"),
                    None => "the row's list items".to_string(),
                };
                s.push_str(&format!(
                    "{pad}  column {} ({}): page {}, {at}, {}\n",
                    c["column"],
                    c["field"].as_str().unwrap_or(""),
                    c["page"],
                    c["encoding"].as_str().unwrap_or("")
                ));
            }
        }
        if let Some(b) = w["bytes_read"].as_array() {
            let list: Vec<String> = b.iter().map(|x| format!("{}+{}", x[0], x[1])).collect();
            s.push_str(&format!("{pad}  bytes read: {}\n", list.join(" ")));
        }
    }
    s
}
