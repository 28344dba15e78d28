//! Shared by the HNSW examples: `bench/hnsw_graph_data.py`'s vectors and queries.

/// `$dir/v{n}_{dim}.f32` and `$dir/q{n}_{dim}.f32` (raw little-endian float32).
pub fn vectors_and_queries(dir: &str, n: usize, dim: usize) -> (Vec<f32>, Vec<f32>) {
    let read = |f: String| -> Vec<f32> {
        std::fs::read(&f)
            .unwrap_or_else(|e| panic!("{f}: {e}"))
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    };
    (
        read(format!("{dir}/v{n}_{dim}.f32")),
        read(format!("{dir}/q{n}_{dim}.f32")),
    )
}
