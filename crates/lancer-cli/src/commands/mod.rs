//! One module per subcommand.

mod cat;
mod demo;
mod inspect;

use std::path::Path;
use std::sync::Arc;

use lancer_format::read::{RangeRead, TracingRead};
use lancer_format::reader::FileReader;
use lancer_io::LocalFile;

use crate::args::{Cli, Command};

/// Errors reach the user as one line.
pub type CmdResult = Result<(), Box<dyn std::error::Error>>;

/// Runs the parsed command.
pub fn run(cli: Cli) -> CmdResult {
    match cli.command {
        Command::Demo => demo::run(),
        Command::Inspect { path, row, json } => inspect::run(&path, row, json),
        Command::Cat {
            path,
            columns,
            offset,
            limit,
            format,
        } => cat::cat(&path, &columns, offset, limit, format),
        Command::Take {
            path,
            rows,
            columns,
            format,
        } => cat::take(&path, &rows, &columns, format),
    }
}

/// A reader and the recorder of the reads it makes.
pub type Traced = (FileReader, Arc<TracingRead<LocalFile>>);

/// Opens a data file whose reads are recorded.
pub fn open_traced(path: &Path) -> Result<Traced, Box<dyn std::error::Error>> {
    let io = Arc::new(TracingRead::new(LocalFile::open(path)?));
    let reader = FileReader::open(io.clone() as Arc<dyn RangeRead>)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((reader, io))
}

/// Column names as `&str`s, or None for all.
pub fn projection(columns: &[String]) -> Option<Vec<&str>> {
    if columns.is_empty() {
        None
    } else {
        Some(columns.iter().map(|s| s.as_str()).collect())
    }
}
