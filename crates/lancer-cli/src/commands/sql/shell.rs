//! `lancer sql`'s interactive shell, when no query is given and stdin is a terminal:
//! line editing and history (rustyline; history in `$LANCER_HISTORY`, else
//! `~/.lancer_history`), statements that run when a line ends with `;`, the time and
//! row count of each, Ctrl-C that cancels the running statement (and at the prompt
//! clears the lines typed), and dot commands: `.tables`, `.schema [TABLE]`,
//! `.format FORMAT`, `.timing on|off`, `.help`, `.quit`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use clap::ValueEnum;
use lancer_sql::SqlContext;
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use super::super::CmdResult;
use crate::args::Format;

const PROMPT: &str = "lancer> ";
const MORE: &str = "   ...> ";

const HELP: &str = "\
Statements end with ';' (they may span lines). Table names may be dataset paths or URIs
('data/items.lance'), Parquet / CSV / JSON files, or names given with --table.
  .tables              the tables registered (by --table or by a statement that named a path)
  .schema [TABLE]      a table's columns and types (every table's without a name)
  .format FORMAT       output of later statements: table, csv, jsonl, arrow-ipc, parquet
  .timing on|off       print each statement's rows and time (on)
  .help                this text
  .quit                leave (as Ctrl-D does)
Ctrl-C cancels a running statement, or clears the lines typed at the prompt.";

/// The shell's settings a dot command changes.
struct Settings {
    format: Format,
    timing: bool,
}

/// Runs the shell over `ctx` until `.quit` or end of input.
pub fn run(ctx: &mut SqlContext, runtime: &tokio::runtime::Runtime, format: Format) -> CmdResult {
    let mut editor = DefaultEditor::new()?;
    // Ctrl-C is caught from the start: a SIGINT typed while a line is being read back
    // (between the prompt and the statement's start) must not end the shell.
    let mut interrupts = Interrupts::listen(runtime)?;
    let history = history_path();
    if let Some(path) = &history {
        // a first run has no history file yet
        let _ = editor.load_history(path);
    }
    eprintln!(
        "lancer sql: statements end with ';'; .help for commands, .quit (or Ctrl-D) to leave"
    );
    let mut settings = Settings {
        format,
        timing: true,
    };
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() { PROMPT } else { MORE };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                pending.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        if pending.is_empty() && line.trim_start().starts_with('.') {
            let _ = editor.add_history_entry(line.trim());
            match dot_command(ctx, runtime, line.trim(), &mut settings) {
                Ok(Flow::Quit) => break,
                Ok(Flow::Continue) => {}
                Err(e) => eprintln!("error: {e}"),
            }
            continue;
        }
        if pending.is_empty() && line.trim().is_empty() {
            continue;
        }
        pending.push_str(&line);
        pending.push('\n');
        if !statement_ends(&pending) {
            continue;
        }
        let text = std::mem::take(&mut pending);
        let _ = editor.add_history_entry(text.trim());
        if let Err(e) = statement(ctx, runtime, &text, &settings, &mut interrupts) {
            eprintln!("error: {e}");
        }
    }
    if let Some(path) = &history {
        if let Err(e) = editor.save_history(path) {
            eprintln!("lancer sql: history not saved to {}: {e}", path.display());
        }
    }
    Ok(())
}

enum Flow {
    Continue,
    Quit,
}

/// Where the history is kept: `$LANCER_HISTORY` (empty: none), else `~/.lancer_history`.
fn history_path() -> Option<PathBuf> {
    match std::env::var_os("LANCER_HISTORY") {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(PathBuf::from(p)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".lancer_history")),
    }
}

/// Whether `text` ends a statement: its last character outside quotes and comments is
/// `;`.
fn statement_ends(text: &str) -> bool {
    let mut last = None;
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                last = Some(c);
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                last = Some(c);
            }
            None if c == '-' && chars.peek() == Some(&'-') => {
                // a line comment: to the end of the line
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            None if c.is_whitespace() => {}
            None => last = Some(c),
        }
    }
    quote.is_none() && last == Some(';')
}

/// Runs one statement (or several, `;`-separated) and prints the last one's rows; Ctrl-C
/// while it runs cancels it.
fn statement(
    ctx: &mut SqlContext,
    runtime: &tokio::runtime::Runtime,
    text: &str,
    settings: &Settings,
    interrupts: &mut Interrupts,
) -> CmdResult {
    let started = Instant::now();
    interrupts.forget_earlier();
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = ctx.sql(text) => Some(r),
            _ = interrupts.next() => None,
        }
    });
    let Some(result) = outcome else {
        eprintln!("cancelled after {:.3} s", started.elapsed().as_secs_f64());
        return Ok(());
    };
    let batches = result?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    crate::output::print_batches(&batches, settings.format)?;
    if settings.timing {
        let noun = if rows == 1 { "row" } else { "rows" };
        eprintln!("{rows} {noun} in {:.3} s", started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// The shell's Ctrl-C (SIGINT) listener, installed once when the shell starts so that a
/// Ctrl-C at any moment is the shell's to handle, never the default "end the process".
struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn listen(runtime: &tokio::runtime::Runtime) -> std::io::Result<Self> {
        let _entered = runtime.enter();
        Ok(Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        })
    }

    /// Drops the Ctrl-Cs that came while no statement ran (during a dot command), so they
    /// do not cancel the next statement.
    fn forget_earlier(&mut self) {
        #[cfg(unix)]
        {
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            while let std::task::Poll::Ready(Some(())) = self.signal.poll_recv(&mut cx) {}
        }
    }

    /// The next Ctrl-C.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            self.signal.recv().await;
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn dot_command(
    ctx: &mut SqlContext,
    runtime: &tokio::runtime::Runtime,
    line: &str,
    settings: &mut Settings,
) -> Result<Flow, Box<dyn std::error::Error>> {
    let mut words = line.split_whitespace();
    let command = words.next().unwrap_or_default();
    let arg = words.next();
    if words.next().is_some() {
        return Err(
            format!("{command} takes at most one argument; .help lists the commands").into(),
        );
    }
    match (command, arg) {
        (".quit" | ".exit" | ".q", None) => return Ok(Flow::Quit),
        (".help", None) => println!("{HELP}"),
        (".tables", None) => {
            let names = ctx.tables()?;
            if names.is_empty() {
                println!(
                    "(no tables: give --table NAME=URI, or name a dataset's path in a statement)"
                );
            }
            for n in names {
                println!("{n}");
            }
        }
        (".schema", table) => {
            let names = match table {
                Some(t) => vec![t.trim_matches(|c| c == '\'' || c == '"').to_string()],
                None => ctx.tables()?,
            };
            let mut out = Vec::new();
            for name in &names {
                let schema = runtime.block_on(ctx.table_schema(name))?;
                out.push((name.clone(), schema));
            }
            print_schemas(&out, settings.format)?;
        }
        (".format", Some(f)) => {
            settings.format = Format::from_str(f, true).map_err(|_| {
                format!("unknown format {f:?}: table, csv, jsonl, arrow-ipc or parquet")
            })?;
        }
        (".timing", Some("on")) => settings.timing = true,
        (".timing", Some("off")) => settings.timing = false,
        (".timing", _) => return Err(".timing takes on or off".into()),
        (".format", None) => {
            return Err(".format takes a format: table, csv, jsonl, arrow-ipc, parquet".into())
        }
        _ => return Err(format!("unknown command {line:?}; .help lists the commands").into()),
    }
    Ok(Flow::Continue)
}

/// Prints tables' columns as rows (table, column, type, nullable).
fn print_schemas(
    schemas: &[(String, arrow_schema::SchemaRef)],
    format: Format,
) -> Result<(), Box<dyn std::error::Error>> {
    let (mut table, mut column, mut ty, mut nullable) = (vec![], vec![], vec![], vec![]);
    for (name, schema) in schemas {
        for f in schema.fields() {
            table.push(name.clone());
            column.push(f.name().clone());
            ty.push(f.data_type().to_string());
            nullable.push(f.is_nullable());
        }
    }
    let out = Schema::new(vec![
        Field::new("table", DataType::Utf8, false),
        Field::new("column", DataType::Utf8, false),
        Field::new("type", DataType::Utf8, false),
        Field::new("nullable", DataType::Boolean, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(table)),
        Arc::new(StringArray::from(column)),
        Arc::new(StringArray::from(ty)),
        Arc::new(BooleanArray::from(nullable)),
    ];
    let batch = RecordBatch::try_new(Arc::new(out), columns)?;
    crate::output::print_batch(&batch, format)
}

#[cfg(test)]
mod tests {
    use super::statement_ends;

    #[test]
    fn a_statement_ends_at_a_semicolon_outside_quotes_and_comments() {
        assert!(statement_ends("select 1;"));
        assert!(statement_ends("select 1;  \n"));
        assert!(statement_ends("select\n 1 ; -- done\n"));
        assert!(!statement_ends("select ';'"));
        assert!(!statement_ends("select 'a;\n"));
        assert!(!statement_ends("select 1 -- not yet;\n"));
        assert!(!statement_ends("select \"x;\" from t"));
        assert!(!statement_ends(""));
    }
}
