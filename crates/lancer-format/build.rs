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
    config.compile_fds(fds)?;
    Ok(())
}
