//! Compiles Lancer's `.proto` files with protox (no system `protoc` needed).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "protos/file_schema.proto",
        "protos/file2.proto",
        "protos/encodings20.proto",
        "protos/encodings21.proto",
        "protos/encodings23.proto",
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["protos"])?;
    let mut config = prost_build::Config::new();
    // Metadata maps are written in key order: the same schema gives the same bytes
    // (a HashMap's order changes from one run, even one map, to the next).
    config.btree_map([".lance.file.Field.metadata", ".lance.file.Schema.metadata"]);
    config.compile_fds(fds)?;
    Ok(())
}
