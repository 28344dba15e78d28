//! Developer tool: write an Arrow IPC file as a Lance data file with Lancer.
//! Usage: cargo run --example write_arrow -- IN.arrow OUT.lance [2.1|2.2] [MAX_PAGE_BYTES]
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let f = std::fs::File::open(&args[1])?;
    let r = arrow_ipc::reader::FileReader::try_new(f, None)?;
    let schema = r.schema();
    let batches = r.collect::<Result<Vec<_>, _>>()?;
    let version = lancer_format::container::FileVersion::parse(
        args.get(3).map(|s| s.as_str()).unwrap_or("2.1"),
    )?;
    let max_page_bytes = args
        .get(4)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(lancer_format::writer::DEFAULT_MAX_PAGE_BYTES);
    let opts = lancer_format::writer::WriteOptions {
        version,
        max_page_bytes,
        ..Default::default()
    };
    // Optional: re-split the rows into batches of this many rows.
    let batches = match std::env::var("SPLIT")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        Some(step) => {
            let all = arrow_select::concat::concat_batches(&schema, &batches)?;
            (0..all.num_rows())
                .step_by(step)
                .map(|s| all.slice(s, step.min(all.num_rows() - s)))
                .collect()
        }
        None => batches,
    };
    let bytes = lancer_format::writer::write_to_vec(Arc::clone(&schema), &batches, opts)?;
    std::fs::write(&args[2], bytes)?;
    Ok(())
}
