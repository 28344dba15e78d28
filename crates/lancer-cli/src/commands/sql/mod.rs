//! `lancer sql`: SQL over datasets through `lancer-sql` (DataFusion), its last
//! statement's rows in the CLI's output formats; with no query on a terminal, the
//! interactive [`shell`].

mod shell;

use std::io::{IsTerminal, Read};

use lancer::Session;
use lancer_sql::{SqlContext, TableSpec};

use super::CmdResult;
use crate::args::Format;
use crate::output::print_batches;

/// Runs `query` (or stdin's statements, or the shell when stdin is a terminal) with the
/// datasets `tables` registered.
pub fn sql(
    s: &Session,
    query: Option<&str>,
    tables: &[String],
    format: Format,
    timing: bool,
) -> CmdResult {
    let mut ctx = SqlContext::new(s.clone());
    for t in tables {
        let (name, uri) = t.split_once('=').ok_or_else(|| {
            format!("--table {t:?}: give NAME=URI (or NAME=URI@VERSION, NAME=URI#TAG)")
        })?;
        ctx.register(name.trim(), TableSpec::parse(uri.trim()))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let text = match query {
        Some(q) => q.to_string(),
        None if std::io::stdin().is_terminal() => return shell::run(&mut ctx, &runtime, format),
        None => {
            let mut buf = String::new();
            std::io::stdin().read_to_string(&mut buf)?;
            buf
        }
    };
    let started = std::time::Instant::now();
    let batches = runtime.block_on(ctx.sql(&text))?;
    if timing {
        eprintln!("time: {:?}", started.elapsed());
    }
    print_batches(&batches, format)
}
