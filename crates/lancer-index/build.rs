//! Compiles the index protos with protox (no system protoc).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=protos/index.proto");
    let fds = protox::compile(["protos/index.proto"], ["protos"])?;
    prost_build::Config::new().compile_fds(fds)?;
    Ok(())
}
