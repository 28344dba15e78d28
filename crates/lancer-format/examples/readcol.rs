//! Developer tool: decode one column of a Lance file and print it.
//! Usage: cargo run --example readcol -- FILE COLUMN [START END]
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let bytes = bytes::Bytes::from(std::fs::read(&args[1])?);
    let reader = lancer_format::reader::FileReader::open(Arc::new(bytes))?;
    let col = args[2].as_str();
    let batch = if args.len() > 4 {
        reader.read_range(args[3].parse()?..args[4].parse()?, Some(&[col]))?
    } else {
        reader.read_all(Some(&[col]))?
    };
    println!("{:?}", batch.column(0));
    Ok(())
}
