//! Errors of the table layer.

use lancer_format::FormatError;
use thiserror::Error;

/// Result alias of the table layer.
pub type Result<T, E = TableError> = std::result::Result<T, E>;

/// What can go wrong with a dataset.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TableError {
    /// A data file could not be read.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Storage failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The object store failed (the message names the request and the store's error,
    /// kept as the source).
    #[error("storage error: {source}")]
    Storage {
        /// What failed.
        #[source]
        source: lancer_io::StoreError,
    },
    /// Table metadata is malformed.
    #[error("corrupt dataset: {what}")]
    Corrupt {
        /// What is wrong.
        what: String,
    },
    /// Something asked for does not exist.
    #[error("not found: {what}")]
    NotFound {
        /// What was asked for.
        what: String,
    },
    /// A request the dataset cannot carry out as asked (a missing column, a clashing
    /// name, a value of the wrong type): nothing was changed.
    #[error("Invalid user input: {what}")]
    InvalidInput {
        /// What is wrong.
        what: String,
    },
    /// The dataset's state stops the request (e.g. a cleanup would remove tagged
    /// versions); nothing was changed, and the message says what to do.
    #[error("{what}")]
    Refused {
        /// What stops it and the remedy.
        what: String,
    },
    /// Another writer committed an incompatible change first; re-read and retry.
    #[error("commit conflict (retryable): {what}")]
    Conflict {
        /// What collided.
        what: String,
    },
    /// The dataset needs features this build does not know.
    #[error("{}", crate::commit::unsupported_flags(*flags, *known).join("; remedy: "))]
    UnknownFeatures {
        /// The dataset's reader flags.
        flags: u64,
        /// Flags this build understands.
        known: u64,
    },
}

impl TableError {
    /// Shorthand for [`TableError::Corrupt`].
    pub fn corrupt(what: impl Into<String>) -> Self {
        Self::Corrupt { what: what.into() }
    }

    /// A request the dataset cannot carry out as asked.
    pub fn invalid(what: impl Into<String>) -> Self {
        Self::InvalidInput { what: what.into() }
    }

    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

impl From<lancer_io::StoreError> for TableError {
    fn from(e: lancer_io::StoreError) -> Self {
        match e {
            lancer_io::StoreError::NotFound { what } => Self::NotFound { what },
            lancer_io::StoreError::Io { path, source, .. } => Self::Io { path, source },
            other => Self::Storage { source: other },
        }
    }
}

impl From<prost::DecodeError> for TableError {
    fn from(e: prost::DecodeError) -> Self {
        Self::corrupt(format!("manifest protobuf: {e}"))
    }
}

impl From<arrow_schema::ArrowError> for TableError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Self::Format(FormatError::Arrow(e))
    }
}
