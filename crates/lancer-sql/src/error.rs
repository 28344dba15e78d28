//! The SQL layer's error type: a statement the user wrote wrong, a dataset operation
//! that failed (Lancer's error, kept), or DataFusion's planning / execution error.

/// What went wrong running a SQL statement.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The statement asks for something this SQL layer does not do, or names a table
    /// or argument wrongly; the message says what to write instead.
    #[error("{0}")]
    User(String),
    /// A dataset operation failed.
    #[error(transparent)]
    Lancer(#[from] lancer::Error),
    /// DataFusion could not plan or run the statement.
    #[error("{}", .0.message())]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// Arrow refused a result.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
}

impl From<lancer::TableError> for Error {
    fn from(e: lancer::TableError) -> Self {
        Error::Lancer(e.into())
    }
}

/// The SQL layer's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A Lancer error as DataFusion's (inside providers and table functions), its text kept.
pub(crate) fn external(e: impl Into<lancer::Error>) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::External(Box::new(e.into()))
}
