//! Writing record batches in the formats the CLI offers.

use std::io::Write;

use arrow_array::RecordBatch;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};

use crate::args::Format;

/// Longest cell shown in table output.
const MAX_CELL: usize = 60;

/// Writes `batch` to stdout in `format`.
pub fn print_batch(batch: &RecordBatch, format: Format) -> Result<(), Box<dyn std::error::Error>> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match format {
        Format::Table => {
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
            writeln!(out, "{t}")?;
        }
        Format::Csv => {
            let mut w = arrow_csv::WriterBuilder::new().with_header(true).build(out);
            w.write(batch)?;
        }
        Format::Jsonl => {
            let mut w = arrow_json::LineDelimitedWriter::new(out);
            w.write(batch)?;
            w.finish()?;
        }
        Format::ArrowIpc => {
            let mut w = arrow_ipc::writer::StreamWriter::try_new(out, &batch.schema())?;
            w.write(batch)?;
            w.finish()?;
        }
    }
    Ok(())
}
