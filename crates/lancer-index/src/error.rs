//! The index layer's error type.

/// What went wrong reading, building or searching an index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// An index file or section is damaged or not what its metadata says.
    #[error("corrupt index {index}: {what} (rebuild it, or drop it to search exactly)")]
    Corrupt {
        /// The index (name or path).
        index: String,
        /// What is wrong.
        what: String,
    },
    /// A request the index cannot serve (wrong dimension, type, metric...).
    #[error("invalid argument: {what}")]
    InvalidArgument {
        /// What is wrong.
        what: String,
    },
}

/// The index layer's result.
pub type Result<T, E = IndexError> = std::result::Result<T, E>;
