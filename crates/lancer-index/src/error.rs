//! The index layer's error type.

/// What went wrong reading, building or searching an index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// An index file or section is damaged or not what its metadata says.
    #[error(
        "corrupt index {index}: {what} (drop the index and rebuild it, or search without the index)"
    )]
    Corrupt {
        /// The index (name and uuid).
        index: String,
        /// What is wrong.
        what: String,
    },
    /// An index kind or layout this Lancer cannot search yet.
    #[error("index {index}: {what} is not supported by this Lancer yet (search without the index, or rebuild it as IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ)")]
    Unsupported {
        /// The index (name and uuid).
        index: String,
        /// What is not supported.
        what: String,
    },
    /// A request the index cannot serve (wrong dimension, type, metric...).
    #[error("invalid argument: {what}")]
    InvalidArgument {
        /// What is wrong.
        what: String,
    },
    /// Reading the dataset or its files failed.
    #[error(transparent)]
    Table(#[from] lancer_table::TableError),
    /// Decoding or writing an index file failed.
    #[error(transparent)]
    Format(#[from] lancer_format::FormatError),
    /// Arrow refused an array of the index.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// Index metadata JSON.
    #[error("index metadata JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// The index layer's result.
pub type Result<T, E = IndexError> = std::result::Result<T, E>;
