//! One module per subcommand.

mod blob;
mod branch;
mod cat;
mod dataset;
mod demo;
mod evolve;
mod fts;
mod index;
mod inspect;
mod meta;
mod queries;
mod shards;
mod source;
#[cfg(feature = "sql")]
mod sql;
mod two_phase;

use std::path::Path;
use std::sync::Arc;

use lancer::file::FileReader;
use lancer::file::LocalFile;
use lancer::file::{RangeRead, TracingRead};
use lancer::Session;

use crate::args::{Cli, Command, Format};

/// Errors reach the user as one line.
pub type CmdResult = Result<(), Box<dyn std::error::Error>>;

/// Runs the parsed command.
pub fn run(cli: Cli) -> CmdResult {
    // One session for the command: its storage options, pylance's environment settings
    // (LANCE_DEFAULT_BATCH_SIZE), and warnings printed as they come (unless LANCER_QUIET
    // is set).
    let quiet = std::env::var_os("LANCER_QUIET").is_some();
    let s = &Session::builder()
        .environment()
        .storage_options(cli.storage_options.iter().cloned().collect())
        .warnings(move |m| {
            if !quiet {
                eprintln!("warning: {m}");
            }
        })
        .build();
    let stats = cli.stats;
    let out = run_command(s, cli);
    if stats {
        eprintln!("storage: {}", s.stats());
    }
    out
}

fn run_command(s: &Session, cli: Cli) -> CmdResult {
    let json = cli.json;
    let rows_as = |f: Format| if json { Format::Jsonl } else { f };
    match cli.command {
        Command::Demo => demo::run(),
        Command::Inspect {
            path,
            row,
            index: Some(name),
            query,
            k,
            nprobes,
            token,
            at,
        } => {
            let _ = row;
            let ds = source::open_dataset(s, &path, &at)?;
            if lancer::inspect::is_inverted_index(&ds, &name)? {
                return fts::inspect(&ds, &name, token.as_deref(), json);
            }
            index::inspect(&ds, &name, &query, k, nprobes, json)
        }
        Command::Inspect { path, row, at, .. } => {
            if source::is_dataset(&path) {
                dataset::inspect(s, &path, row, json, &at)
            } else {
                inspect::run(&path, row, json)
            }
        }
        Command::Cat {
            path,
            columns,
            exprs,
            filter,
            offset,
            limit,
            with_row_id,
            with_row_address,
            explain,
            no_index,
            format,
            at,
        } => {
            let args = cat::CatArgs {
                explain,
                no_index,
                columns: &columns,
                exprs: &exprs,
                filter: filter.as_deref(),
                offset,
                limit,
                with_row_id,
                with_row_address,
            };
            cat::cat(s, &path, &args, rows_as(format), &at)
        }
        Command::Take {
            path,
            rows,
            columns,
            format,
            at,
        } => cat::take(s, &path, &rows, &columns, rows_as(format), &at),
        Command::Count { path, filter, at } => {
            source::count(s, &path, filter.as_deref(), &at, json)
        }
        Command::Delete { path, predicate } => dataset::delete(s, &path, &predicate, json),
        Command::Schema { path, at } => source::schema(s, &path, &at, json),
        Command::Versions { path } => dataset::versions(s, &path, json),
        Command::Shards {
            path,
            world_size,
            workers,
            tail,
            seed,
            epoch,
            save,
            at,
        } => shards::run(
            s,
            &path,
            shards::Split {
                world_size,
                workers,
                tail: &tail,
                seed,
                epoch,
            },
            save.as_deref(),
            &at,
            json,
        ),
        Command::Tag { action } => dataset::tag(s, action, json),
        Command::Branch { action } => branch::run(s, action, json),
        Command::Clone {
            path,
            target,
            source,
        } => branch::clone(s, &path, &target, source, json),
        Command::Index { action } => index::run(s, action, json),
        Command::Restore { path, version } => dataset::restore(s, &path, version, json),
        Command::Meta {
            path,
            map,
            set,
            unset,
            replace,
        } => meta::run(s, &path, &map, &set, &unset, replace, json),
        Command::AddColumn {
            path,
            exprs,
            nulls,
            from,
            on,
        } => match (from, on) {
            (Some(file), Some(key)) => evolve::add_from(s, &path, &file, &key, json),
            _ => evolve::add_column(s, &path, &exprs, &nulls, json),
        },
        Command::DropColumn { path, columns } => evolve::drop_column(s, &path, &columns, json),
        Command::RenameColumn { path, old, new } => {
            evolve::rename_column(s, &path, &old, &new, json)
        }
        Command::AlterColumn {
            path,
            column,
            nullable,
            not_null,
            data_type,
        } => match (data_type, nullable, not_null) {
            (Some(t), _, _) => evolve::cast(s, &path, &column, &t, json),
            (None, true, _) | (None, _, true) => {
                evolve::alter_nullability(s, &path, &column, nullable, json)
            }
            _ => Err("give --nullable, --not-null or --type TYPE".into()),
        },
        Command::Update {
            path,
            set,
            predicate,
        } => evolve::update(s, &path, &set, predicate.as_deref(), json),
        Command::Merge {
            path,
            input,
            on,
            update,
            delete_matched,
            fail_on_match,
            insert,
            delete_unmatched,
            delete_where,
            update_where,
            no_index,
        } => {
            // no flag: an upsert
            let upsert = !(update || delete_matched || fail_on_match || insert || delete_unmatched);
            let opts = lancer::write::MergeOptions {
                on,
                update_matched: update || upsert,
                delete_matched,
                fail_on_match,
                insert_unmatched: insert || upsert,
                delete_unmatched_by_source: delete_unmatched,
                delete_filter: delete_where,
                source_in_memory: None,
                update_condition: update_where,
                no_index,
                ..Default::default()
            };
            dataset::merge(s, &path, &input, &opts, json)
        }
        Command::Compact {
            path,
            target_rows,
            keep_deletions,
            deletion_threshold,
            max_bytes_per_file,
            dry_run,
            plan,
            commit,
        } => {
            let opts = lancer::CompactionOptions {
                target_rows_per_fragment: target_rows,
                materialize_deletions: !keep_deletions,
                materialize_deletions_threshold: deletion_threshold,
                max_bytes_per_file,
            };
            if plan {
                two_phase::compact_plan(s, &path, &opts)
            } else if !commit.is_empty() {
                two_phase::compact_commit(s, &path, &commit, json)
            } else {
                evolve::compact(s, &path, &opts, dry_run, json)
            }
        }
        Command::CompactTask {
            plan,
            index,
            dataset,
        } => two_phase::compact_task(s, &plan, index, dataset.as_deref()),
        Command::Cleanup { path, older_than } => dataset::cleanup(s, &path, &older_than, json),
        Command::Import {
            input,
            dataset: ds,
            mode,
            data_storage_version,
            max_rows_per_file,
            max_bytes_per_file,
        } => dataset::import(
            s,
            &input,
            &ds,
            mode,
            &data_storage_version,
            (max_rows_per_file, max_bytes_per_file),
            json,
        ),
        Command::ImportFiles {
            dir,
            dataset: ds,
            column,
            mode,
            data_storage_version,
            max_rows_per_file,
        } => blob::import_files(
            s,
            &dir,
            &ds,
            &column,
            mode,
            &data_storage_version,
            max_rows_per_file,
            json,
        ),
        Command::Blob { action } => match action {
            crate::args::BlobAction::Get {
                path,
                column,
                row,
                range,
                by,
                output,
                at,
            } => blob::get(
                s,
                &path,
                &column,
                row,
                range.as_deref(),
                &by,
                output.as_deref(),
                &at,
            ),
            crate::args::BlobAction::Ls {
                path,
                column,
                limit,
                at,
            } => blob::ls(s, &path, &column, limit, json, &at),
        },
        Command::WriteFragments {
            input,
            dataset: ds,
            mode,
            data_storage_version,
            max_rows_per_file,
            max_bytes_per_file,
        } => two_phase::write_fragments(
            s,
            &input,
            &ds,
            mode,
            &data_storage_version,
            (max_rows_per_file, max_bytes_per_file),
        ),
        Command::Commit {
            dataset: ds,
            append,
            overwrite,
            read_version,
        } => two_phase::commit(
            s,
            &ds,
            (append.as_deref(), overwrite.as_deref()),
            read_version,
            json,
        ),
        Command::Export { path, output, at } => dataset::export(s, &path, &output, &at, json),
        Command::Verify { path, data } => dataset::verify(s, &path, data, json),
        Command::Fts {
            path,
            args,
            format,
            at,
        } => fts::fts(s, &path, &args, rows_as(format), &at),
        #[cfg(feature = "sql")]
        Command::Sql {
            query,
            tables,
            format,
            timing,
        } => sql::sql(s, query.as_deref(), &tables, format, timing),
        Command::Search {
            path,
            column,
            query,
            query_row,
            queries_file,
            k,
            metric,
            no_index,
            nprobes,
            refine_factor,
            fast_search,
            ef,
            approx_mode,
            columns,
            filter,
            postfilter,
            text,
            text_column,
            rrf_k,
            format,
            at,
        } => {
            let hybrid = text.map(|text| dataset::HybridText {
                text,
                column: text_column,
                rrf_k,
            });
            let ann = lancer::search::AnnParams {
                use_index: !no_index,
                nprobes,
                refine_factor,
                fast_search,
                ef,
                approx_mode: match approx_mode.as_deref() {
                    None => lancer::search::ApproxMode::Normal,
                    Some(m) => lancer::search::ApproxMode::parse(m).ok_or_else(|| {
                        lancer::Error::InvalidArgument {
                            what: format!("--approx-mode {m:?}: use fast, normal or accurate"),
                        }
                    })?,
                },
                ..Default::default()
            };
            let filtering = match (&filter, postfilter) {
                (None, _) => lancer::search::Filtering::None,
                (Some(f), false) => lancer::search::Filtering::Pre(f),
                (Some(f), true) => lancer::search::Filtering::Post(f),
            };
            if let Some(file) = queries_file {
                return dataset::search_batch(
                    s,
                    &path,
                    &column,
                    &queries::load(&file)?,
                    k,
                    metric.as_deref(),
                    &ann,
                    &columns,
                    filtering,
                    rows_as(format),
                    &at,
                );
            }
            dataset::search(
                s,
                &path,
                &column,
                query,
                query_row,
                k,
                metric.as_deref(),
                &ann,
                &columns,
                filtering,
                hybrid,
                rows_as(format),
                &at,
            )
        }
    }
}

/// A reader and the recorder of the reads it makes.
pub type Traced = (FileReader, Arc<TracingRead<Arc<dyn RangeRead>>>);

/// Opens a local data file with its reads traced.
pub fn open_traced(path: &Path) -> Result<Traced, Box<dyn std::error::Error>> {
    let file: Arc<dyn RangeRead> = Arc::new(LocalFile::open(path)?);
    traced(file, &path.display().to_string())
}

/// Opens data file `rel` of `store` with its reads traced.
pub fn open_traced_in(
    store: &lancer::Store,
    rel: &str,
) -> Result<Traced, Box<dyn std::error::Error>> {
    traced(store.reader(rel, None)?, &store.display(rel))
}

fn traced(file: Arc<dyn RangeRead>, shown: &str) -> Result<Traced, Box<dyn std::error::Error>> {
    let io = Arc::new(TracingRead::new(file));
    let reader =
        FileReader::open(io.clone() as Arc<dyn RangeRead>).map_err(|e| format!("{shown}: {e}"))?;
    Ok((reader, io))
}

/// Prints `value` as pretty JSON when `json`, else the text `text` builds.
pub fn report(json: bool, value: serde_json::Value, text: impl FnOnce() -> String) -> CmdResult {
    if json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("{}", text());
    }
    Ok(())
}

/// Column names as `&str`s, or None for all.
pub fn projection(columns: &[String]) -> Option<Vec<&str>> {
    if columns.is_empty() {
        None
    } else {
        Some(columns.iter().map(|s| s.as_str()).collect())
    }
}
