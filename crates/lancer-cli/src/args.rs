//! Command-line arguments (parsed form only; commands build what they need from them).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Lancer: a fast engine for the Lance format.
#[derive(Debug, Parser)]
#[command(
    name = "lancer",
    version,
    about = "Inspect, read and demo Lance data files",
    after_help = "Exit codes: 0 success; 1 the operation failed (unreadable or corrupt data, missing file); 2 invalid arguments."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Output formats for rows.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A table for people.
    Table,
    /// Comma-separated values with a header.
    Csv,
    /// One JSON object per line.
    Jsonl,
    /// An Arrow IPC stream (binary, for pipes).
    ArrowIpc,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the end-to-end demo on an embedded file written by pylance: open, show its
    /// layers, scan, take random rows (showing the bytes each read touched) and run an
    /// exact nearest-neighbour query.
    Demo,
    /// Show every layer of a Lance data file: footer, schema, columns, pages,
    /// layouts, compression and buffer byte ranges.
    Inspect {
        /// A `.lance` data file.
        path: PathBuf,
        /// Follow one row of every column to its page and the byte ranges a read of
        /// it touches.
        #[arg(long)]
        row: Option<u64>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print rows of a Lance data file.
    Cat {
        /// A `.lance` data file.
        path: PathBuf,
        /// Columns to print (comma separated; default all).
        #[arg(long, value_delimiter = ',')]
        columns: Vec<String>,
        /// Skip this many rows.
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// Print at most this many rows.
        #[arg(long)]
        limit: Option<u64>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Print the rows at the given indices (any order).
    Take {
        /// A `.lance` data file.
        path: PathBuf,
        /// Row indices.
        #[arg(required = true, value_delimiter = ',')]
        rows: Vec<u64>,
        /// Columns to print (comma separated; default all).
        #[arg(long, value_delimiter = ',')]
        columns: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}
