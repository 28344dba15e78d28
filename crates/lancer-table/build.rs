//! Compiles the table protos with protox; `lance.file` types come from lancer-format.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=protos/table.proto");
    println!("cargo:rerun-if-changed=protos/transaction.proto");
    println!("cargo:rerun-if-changed=protos/rowids.proto");
    let fds = protox::compile(
        [
            "protos/table.proto",
            "protos/transaction.proto",
            "protos/rowids.proto",
        ],
        ["protos", "../lancer-format/protos"],
    )?;
    let mut config = prost_build::Config::new();
    config.extern_path(".lance.file", "::lancer_format::pb::file");
    config.compile_fds(fds)?;
    Ok(())
}
