//! Query vectors for `lancer search --queries-file` (batched search, issue 42): a JSON
//! list of vectors (`[[0.1, 0.2, ...], ...]`) or a NumPy `.npy` file of a 2-D float32
//! / float64 array (format: numpy.lib.format, versions 1–3, C order).

use std::path::Path;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The query vectors in `path` (`.json` or `.npy`), all of one width.
pub fn load(path: &Path) -> Res<Vec<Vec<f32>>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let out = match ext.to_ascii_lowercase().as_str() {
        "json" => serde_json::from_slice::<Vec<Vec<f32>>>(&bytes).map_err(|e| {
            format!(
                "{}: not a JSON list of vectors ([[x, y, ...], ...]): {e}",
                path.display()
            )
        })?,
        "npy" => npy(&bytes).map_err(|e| format!("{}: {e}", path.display()))?,
        _ => {
            return Err(format!(
                "{}: give the queries as a .json list of vectors or a .npy 2-D array",
                path.display()
            )
            .into())
        }
    };
    if let Some(v) = out.iter().find(|v| v.len() != out[0].len()) {
        return Err(format!(
            "{}: query vectors of different lengths ({} and {})",
            path.display(),
            out[0].len(),
            v.len()
        )
        .into());
    }
    Ok(out)
}

/// A 2-D float32 / float64 `.npy` array's rows.
fn npy(b: &[u8]) -> Res<Vec<Vec<f32>>> {
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no NUMPY magic)".into());
    }
    let (len, at) = match b[6] {
        1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10),
        2 | 3 if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
        v => return Err(format!(".npy version {v} is not supported (1, 2 or 3 are)").into()),
    };
    let header = b
        .get(at..at + len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or("a .npy header cut short")?;
    let value = |key: &str| -> Res<&str> {
        let i = header
            .find(&format!("'{key}':"))
            .ok_or_else(|| format!(".npy header without {key}"))?;
        Ok(header[i + key.len() + 3..].trim_start())
    };
    let descr = value("descr")?;
    let width = if descr.starts_with("'<f4'") {
        4
    } else if descr.starts_with("'<f8'") {
        8
    } else {
        return Err(format!(
            "a .npy of {} values: save the queries as float32 or float64",
            descr.split(',').next().unwrap_or("")
        )
        .into());
    };
    if value("fortran_order")?.starts_with("True") {
        return Err("a Fortran-ordered .npy: save it in C order (np.ascontiguousarray)".into());
    }
    let shape = value("shape")?;
    let shape = &shape[1..shape.find(')').ok_or("a .npy header with a bad shape")?];
    let dims: Vec<usize> = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| "a .npy header with a bad shape")?;
    let [n, d] = dims[..] else {
        return Err(
            format!("a .npy of shape {dims:?}: give a 2-D array (one query vector a row)").into(),
        );
    };
    let data = &b[at + len..];
    if data.len() < n * d * width {
        return Err(format!(".npy data cut short: {} bytes for {n} x {d}", data.len()).into());
    }
    let value_at = |i: usize| -> f32 {
        let s = &data[i * width..(i + 1) * width];
        if width == 4 {
            f32::from_le_bytes([s[0], s[1], s[2], s[3]])
        } else {
            f64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]) as f32
        }
    };
    Ok((0..n)
        .map(|r| (0..d).map(|c| value_at(r * d + c)).collect())
        .collect())
}
