//! Errors of the public API layer: everything the table and index layers report (kept
//! whole, with their sources), plus bad filters and bad arguments.

use arrow_schema::ArrowError;
use lancer_table::TableError;
use thiserror::Error;

/// What can go wrong in a read, write or search.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The dataset or a data file failed.
    #[error(transparent)]
    Table(#[from] TableError),
    /// A filter does not parse, names an unknown column or function, or mistypes a value.
    #[error("invalid filter {filter:?}: {message}")]
    Filter {
        /// The filter text.
        filter: String,
        /// What is wrong with it.
        message: String,
    },
    /// A computed column's SQL expression does not parse, names an unknown column or
    /// function, or fails to evaluate.
    #[error("invalid expression {expression:?}: {message}")]
    Expression {
        /// The expression text.
        expression: String,
        /// What is wrong with it.
        message: String,
    },
    /// An argument is out of range or names something that does not exist.
    #[error("{what}")]
    InvalidArgument {
        /// What is wrong and what to do.
        what: String,
    },
    /// An index is damaged, of a kind this build cannot search, or its files failed to
    /// decode (the index layer's error, kept whole).
    #[error(transparent)]
    Index(lancer_index::IndexError),
    /// Arrow refused to build an array or batch.
    #[error("arrow: {0}")]
    Arrow(#[from] ArrowError),
}

/// An index-layer error as this layer reports it: a table error stays a table error and
/// a request the index cannot serve an invalid argument; damaged, unsupported or
/// undecodable index files stay index errors (kept whole, with their source).
impl From<lancer_index::IndexError> for Error {
    fn from(e: lancer_index::IndexError) -> Self {
        match e {
            lancer_index::IndexError::Table(t) => Error::Table(t),
            lancer_index::IndexError::InvalidArgument { what } => Error::InvalidArgument { what },
            other => Error::Index(other),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
