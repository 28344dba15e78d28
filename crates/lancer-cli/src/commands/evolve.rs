//! `lancer add-column`, `drop-column`, `rename-column`, `alter-column`, `update`: schema
//! evolution and updates (docs/evolution-format.md; pylance's `add_columns`,
//! `drop_columns`, `alter_columns`, `update`), each one new version, with a report.

use lancer::Session;
use std::path::Path;

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use lancer::write as evolve;
use lancer::ColumnChange;

use super::{report, CmdResult};

/// A bar of `unit`s done, on a terminal (hidden otherwise, as indicatif does).
fn step_bar(what: &str, unit: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    let style = format!("{{spinner}} {what}: {unit} {{pos}}/{{len}} [{{bar:30}}] {{elapsed}}");
    if let Ok(st) = indicatif::ProgressStyle::with_template(&style) {
        bar.set_style(st.progress_chars("=> "));
    }
    bar
}

/// A progress callback `(done, total)` moving `bar`.
fn on_step(bar: &indicatif::ProgressBar) -> impl Fn(usize, usize) + Sync + '_ {
    move |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    }
}

/// `NAME=SQL` → (name, sql).
fn split_assignment(s: &str) -> Result<(&str, &str), String> {
    let (name, sql) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=EXPRESSION"))?;
    let (name, sql) = (name.trim(), sql.trim());
    if name.is_empty() || sql.is_empty() {
        return Err(format!("{s:?}: expected NAME=EXPRESSION"));
    }
    Ok((name, sql))
}

/// A type name of `--null NAME:TYPE`.
fn parse_type(t: &str) -> Result<DataType, String> {
    Ok(match t.trim().to_ascii_lowercase().as_str() {
        "bool" | "boolean" => DataType::Boolean,
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" | "int" => DataType::Int32,
        "int64" | "bigint" => DataType::Int64,
        "uint8" => DataType::UInt8,
        "uint16" => DataType::UInt16,
        "uint32" => DataType::UInt32,
        "uint64" => DataType::UInt64,
        "float16" => DataType::Float16,
        "float32" | "float" => DataType::Float32,
        "float64" | "double" => DataType::Float64,
        "string" | "utf8" => DataType::Utf8,
        "large_string" | "large_utf8" => DataType::LargeUtf8,
        "binary" => DataType::Binary,
        "large_binary" => DataType::LargeBinary,
        "date32" | "date" => DataType::Date32,
        "timestamp" | "timestamp[us]" => DataType::Timestamp(TimeUnit::Microsecond, None),
        other => {
            return Err(format!(
                "unknown type {other:?} (bool, int8..int64, uint8..uint64, float16/32/64, string, large_string, binary, large_binary, date32, timestamp)"
            ))
        }
    })
}

/// `lancer add-column DATASET NAME=SQL… [--null NAME:TYPE…]`.
pub fn add_column(
    s: &Session,
    path: &Path,
    exprs: &[String],
    nulls: &[String],
    json: bool,
) -> CmdResult {
    let ds = s.open(path)?;
    if exprs.is_empty() && nulls.is_empty() {
        return Err("give NAME=EXPRESSION or --null NAME:TYPE".into());
    }
    let t = std::time::Instant::now();
    let mut after = ds.clone();
    let mut added = Vec::new();
    if !nulls.is_empty() {
        let mut fields = Vec::new();
        for n in nulls {
            let (name, ty) = n
                .split_once(':')
                .ok_or_else(|| format!("{n:?}: expected NAME:TYPE"))?;
            fields.push(Field::new(name.trim(), parse_type(ty)?, true));
            added.push(name.trim().to_string());
        }
        after = evolve::add_null_columns(&after, &Schema::new(fields))?;
    }
    if !exprs.is_empty() {
        let pairs: Vec<(&str, &str)> = exprs
            .iter()
            .map(|e| split_assignment(e))
            .collect::<Result<_, _>>()?;
        added.extend(pairs.iter().map(|(n, _)| n.to_string()));
        let bar = step_bar("adding columns", "fragment");
        after = evolve::add_columns(&after, &pairs, Some(&on_step(&bar)))?;
        bar.finish_and_clear();
    }
    let files: usize = after
        .fragments()
        .iter()
        .map(|f| f.files.len())
        .sum::<usize>()
        - ds.fragments().iter().map(|f| f.files.len()).sum::<usize>();
    report(
        json,
        serde_json::json!({
            "added": added,
            "version": after.version(),
            "files_written": files,
            "seconds": t.elapsed().as_secs_f64(),
        }),
        || {
            format!(
                "added {} ({} data files): version {}",
                added.join(", "),
                files,
                after.version()
            )
        },
    )
}

/// `lancer add-column DATASET --from FILE --on KEY`.
pub fn add_from(s: &Session, path: &Path, file: &Path, key: &str, json: bool) -> CmdResult {
    let ds = s.open(path)?;
    let t = std::time::Instant::now();
    let bar = indicatif::ProgressBar::hidden();
    let (schema, batches, _) = super::dataset::read_input(file, &bar, None)?;
    let added: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| f.name() != key)
        .map(|f| f.name().clone())
        .collect();
    let after = evolve::merge_columns(&ds, key, schema, batches.map(|b| Ok(b?)))?;
    report(
        json,
        serde_json::json!({
            "added": added,
            "on": key,
            "version": after.version(),
            "seconds": t.elapsed().as_secs_f64(),
        }),
        || {
            format!(
                "added {} (joined on {key}): version {}",
                added.join(", "),
                after.version()
            )
        },
    )
}

/// `lancer drop-column DATASET COLUMN…`.
pub fn drop_column(s: &Session, path: &Path, columns: &[String], json: bool) -> CmdResult {
    let ds = s.open(path)?;
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let after = evolve::drop_columns(&ds, &names)?;
    report(
        json,
        serde_json::json!({"dropped": columns, "version": after.version()}),
        || {
            format!(
                "dropped {}: version {}",
                columns.join(", "),
                after.version()
            )
        },
    )
}

/// `lancer rename-column DATASET OLD NEW`.
pub fn rename_column(s: &Session, path: &Path, old: &str, new: &str, json: bool) -> CmdResult {
    let ds = s.open(path)?;
    let change = ColumnChange {
        path: old.to_string(),
        rename: Some(new.to_string()),
        nullable: None,
    };
    let after = evolve::alter_columns(&ds, &[change])?;
    report(
        json,
        serde_json::json!({"renamed": old, "to": new, "version": after.version()}),
        || format!("renamed {old} to {new}: version {}", after.version()),
    )
}

/// `lancer alter-column DATASET COLUMN --nullable|--not-null`.
pub fn alter_nullability(
    s: &Session,
    path: &Path,
    column: &str,
    nullable: bool,
    json: bool,
) -> CmdResult {
    let ds = s.open(path)?;
    let change = ColumnChange {
        path: column.to_string(),
        rename: None,
        nullable: Some(nullable),
    };
    let after = evolve::alter_columns(&ds, &[change])?;
    report(
        json,
        serde_json::json!({"column": column, "nullable": nullable, "version": after.version()}),
        || {
            format!(
                "{column} is now {}: version {}",
                if nullable { "nullable" } else { "not nullable" },
                after.version()
            )
        },
    )
}

/// `lancer alter-column DATASET COLUMN --type TYPE`.
pub fn cast(s: &Session, path: &Path, column: &str, ty: &str, json: bool) -> CmdResult {
    let ds = s.open(path)?;
    let t = parse_type(ty)?;
    let after = evolve::cast_columns(&ds, &[(column, t.clone())])?;
    report(
        json,
        serde_json::json!({"column": column, "type": t.to_string(), "version": after.version()}),
        || format!("{column} is now {t}: version {}", after.version()),
    )
}

/// `lancer update DATASET --set COL=SQL… [--where FILTER]`.
pub fn update(
    s: &Session,
    path: &Path,
    set: &[String],
    filter: Option<&str>,
    json: bool,
) -> CmdResult {
    let ds = s.open(path)?;
    let pairs: Vec<(&str, &str)> = set
        .iter()
        .map(|e| split_assignment(e))
        .collect::<Result<_, _>>()?;
    let t = std::time::Instant::now();
    let bar = step_bar("updating", "fragment");
    let (after, stats) = evolve::update(&ds, filter, &pairs, Some(&on_step(&bar)))?;
    bar.finish_and_clear();
    report(
        json,
        serde_json::json!({
            "rows_updated": stats.rows_updated,
            "fragments_written": stats.fragments_written,
            "fragments_removed": stats.fragments_removed,
            "version": after.version(),
            "seconds": t.elapsed().as_secs_f64(),
        }),
        || {
            format!(
                "updated {} rows ({} new fragments): version {}",
                stats.rows_updated,
                stats.fragments_written,
                after.version()
            )
        },
    )
}

/// `lancer compact DATASET [--target-rows N] [--keep-deletions] [--dry-run]`.
pub fn compact(
    s: &Session,
    path: &Path,
    opts: &lancer::CompactionOptions,
    dry_run: bool,
    json: bool,
) -> CmdResult {
    let ds = s.open(path)?;
    if dry_run {
        let tasks = ds.plan_compaction(opts)?;
        return report(
            json,
            serde_json::json!({"tasks": tasks, "version": ds.version()}),
            || {
                if tasks.is_empty() {
                    "nothing to compact".to_string()
                } else {
                    tasks
                        .iter()
                        .map(|t| match opts.max_bytes_per_file {
                            None => format!("fragments {t:?} -> one fragment"),
                            Some(b) => {
                                format!("fragments {t:?} -> fragments of at most ~{b} bytes")
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                }
            },
        );
    }
    let t = std::time::Instant::now();
    let bar = step_bar("compacting", "task");
    let (after, stats) = evolve::compact_files(&ds, opts, &on_step(&bar))?;
    bar.finish_and_clear();
    report(
        json,
        serde_json::json!({
            "fragments_removed": stats.fragments_removed,
            "fragments_added": stats.fragments_added,
            "files_removed": stats.files_removed,
            "files_added": stats.files_added,
            "rows": stats.rows,
            "version": after.version(),
            "seconds": t.elapsed().as_secs_f64(),
        }),
        || {
            if after.version() == ds.version() {
                format!("nothing to compact: version {} unchanged", ds.version())
            } else {
                format!(
                    "{} fragments -> {} ({} rows): version {}",
                    stats.fragments_removed,
                    stats.fragments_added,
                    stats.rows,
                    after.version()
                )
            }
        },
    )
}
