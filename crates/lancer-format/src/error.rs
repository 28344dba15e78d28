//! Errors of the format layer: every failure names what is wrong and where.

use thiserror::Error;

/// Result alias for the format layer.
pub type Result<T, E = FormatError> = std::result::Result<T, E>;

/// What can go wrong while reading or writing a Lance data file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The bytes do not form a valid Lance file or page.
    #[error("corrupt Lance file: {what}")]
    Corrupt {
        /// What was found to be wrong.
        what: String,
    },
    /// The file uses a version this build does not read.
    #[error("unsupported Lance file version {major}.{minor}: this Lancer reads legacy 0.1/0.2, 2.0, 2.1, 2.2 and 2.3 (a newer Lancer may read it)")]
    UnsupportedVersion {
        /// Major version in the footer.
        major: u16,
        /// Minor version in the footer.
        minor: u16,
    },
    /// An encoding or layout this build does not know.
    #[error("unsupported encoding {name}: {detail}")]
    UnsupportedEncoding {
        /// The encoding's name (protobuf type or variant).
        name: String,
        /// Context and remedy.
        detail: String,
    },
    /// A type that cannot be represented.
    #[error("unsupported data type {logical_type}: {detail}")]
    UnsupportedType {
        /// The Lance logical type string or Arrow type.
        logical_type: String,
        /// Context.
        detail: String,
    },
    /// A request outside the file (row or column out of range).
    #[error("out of range: {what}")]
    OutOfRange {
        /// What was requested.
        what: String,
    },
    /// Protobuf decoding failed.
    #[error("corrupt protobuf in {context}: {source}")]
    Protobuf {
        /// Which message was being decoded.
        context: &'static str,
        /// The decoder's complaint.
        source: prost::DecodeError,
    },
    /// Arrow IPC input (a deletion file, an imported file) is malformed; caught before
    /// arrow-ipc could panic or allocate what the damaged lengths declare.
    #[error("corrupt Arrow IPC data: {what}")]
    CorruptIpc {
        /// What was found to be wrong.
        what: String,
    },
    /// JSON text handed in for a JSON column does not parse (the caller's data).
    #[error("JSON column {column:?}, row {row}: the text is not valid JSON ({detail}); fix the value, or write the column as plain utf8 instead of Arrow's JSON type")]
    InvalidJson {
        /// The column (`parent.child` under a struct).
        column: String,
        /// The row within the batch handed in.
        row: usize,
        /// The parser's complaint.
        detail: String,
    },
    /// Stored bytes of a JSON column are not a JSONB value (damage, or a writer that
    /// stored other bytes under the `lance.json` type).
    #[error("corrupt JSONB in JSON column {column:?}, row {row} of the batch read: {detail}")]
    CorruptJsonb {
        /// The column (`parent.child` under a struct).
        column: String,
        /// The row within the batch read.
        row: usize,
        /// What is wrong with the bytes.
        detail: String,
    },
    /// An Arrow error while assembling arrays.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The byte source failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl FormatError {
    /// Shorthand for [`FormatError::Corrupt`].
    pub fn corrupt(what: impl Into<String>) -> Self {
        Self::Corrupt { what: what.into() }
    }

    /// Shorthand for [`FormatError::UnsupportedEncoding`].
    pub fn unsupported(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::UnsupportedEncoding {
            name: name.into(),
            detail: detail.into(),
        }
    }
}
