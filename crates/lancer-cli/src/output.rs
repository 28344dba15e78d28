//! Writing record batches in the formats the CLI offers. Machine formats stream batch by
//! batch; the people-facing table needs every row to size its columns, so it buffers.

use std::io::Write;

use arrow_array::RecordBatch;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::SchemaRef;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};

use crate::args::Format;

/// Longest cell shown in table output.
const MAX_CELL: usize = 60;

type Out = std::io::StdoutLock<'static>;

/// Where rows go: stdout, in one format.
pub enum RowSink {
    /// Buffered until the end (column widths need every row).
    Table(SchemaRef, Vec<RecordBatch>),
    /// CSV with a header.
    Csv(Box<arrow_csv::Writer<Out>>),
    /// JSON lines.
    Jsonl(Box<arrow_json::LineDelimitedWriter<Out>>),
    /// An Arrow IPC stream.
    Ipc(Box<arrow_ipc::writer::StreamWriter<Out>>),
    /// A Parquet file (written to stdout; Parquet needs no seeking to write).
    Parquet(Box<parquet::arrow::ArrowWriter<std::io::BufWriter<std::io::Stdout>>>),
}

impl RowSink {
    /// A sink for rows of `schema`.
    pub fn new(format: Format, schema: SchemaRef) -> Result<Self, Box<dyn std::error::Error>> {
        let out = std::io::stdout().lock();
        Ok(match format {
            Format::Table => RowSink::Table(schema, Vec::new()),
            Format::Csv => RowSink::Csv(Box::new(
                arrow_csv::WriterBuilder::new().with_header(true).build(out),
            )),
            Format::Jsonl => RowSink::Jsonl(Box::new(arrow_json::LineDelimitedWriter::new(out))),
            Format::ArrowIpc => RowSink::Ipc(Box::new(arrow_ipc::writer::StreamWriter::try_new(
                out, &schema,
            )?)),
            Format::Parquet => {
                drop(out);
                let w = std::io::BufWriter::new(std::io::stdout());
                RowSink::Parquet(Box::new(parquet::arrow::ArrowWriter::try_new(
                    w, schema, None,
                )?))
            }
        })
    }

    /// Writes one batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), Box<dyn std::error::Error>> {
        match self {
            RowSink::Table(_, all) => all.push(batch.clone()),
            RowSink::Csv(w) => w.write(batch)?,
            RowSink::Jsonl(w) => w.write(batch)?,
            RowSink::Ipc(w) => w.write(batch)?,
            RowSink::Parquet(w) => w.write(batch)?,
        }
        Ok(())
    }

    /// Ends the output.
    pub fn finish(self) -> Result<(), Box<dyn std::error::Error>> {
        match self {
            RowSink::Table(schema, all) => {
                let batch = lancer::concat_batches(&schema, &all)?;
                print_table(&batch)?;
            }
            RowSink::Csv(w) => drop(w.into_inner()),
            RowSink::Jsonl(mut w) => w.finish()?,
            RowSink::Ipc(mut w) => w.finish()?,
            RowSink::Parquet(w) => {
                let mut out = w.into_inner()?;
                out.flush()?;
            }
        }
        Ok(())
    }
}

/// Writes `batches` (one schema) to stdout in `format`; nothing when there are none.
pub fn print_batches(
    batches: &[RecordBatch],
    format: Format,
) -> Result<(), Box<dyn std::error::Error>> {
    let Some(first) = batches.first() else {
        return Ok(());
    };
    let mut sink = RowSink::new(format, first.schema())?;
    for b in batches {
        sink.write(b)?;
    }
    sink.finish()
}

/// Writes `batch` to stdout in `format`.
pub fn print_batch(batch: &RecordBatch, format: Format) -> Result<(), Box<dyn std::error::Error>> {
    let mut sink = RowSink::new(format, batch.schema())?;
    sink.write(batch)?;
    sink.finish()
}

fn print_table(batch: &RecordBatch) -> Result<(), Box<dyn std::error::Error>> {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(batch.schema().fields().iter().map(|f| f.name().clone()));
    let opts = FormatOptions::default().with_null("null");
    let fmts = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
        .collect::<Result<Vec<_>, _>>()?;
    for r in 0..batch.num_rows() {
        t.add_row(fmts.iter().map(|f| {
            let s = f.value(r).to_string();
            if s.chars().count() > MAX_CELL {
                let cut: String = s.chars().take(MAX_CELL - 1).collect();
                format!("{cut}…")
            } else {
                s
            }
        }));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{t}")?;
    Ok(())
}
