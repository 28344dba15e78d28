//! `lancer-loader`: a training-data loader over Lancer (issue #18).
//!
//! Fragments are shards ([`plan`]: discovered from the manifest alone, the version
//! pinned, the plan serializable); an epoch's rows are split exactly among ranks and
//! their workers, balanced by surviving rows ([`split`]); shard order and rows within
//! a bounded buffer are shuffled from `(seed, epoch)`, or every row in a global random
//! order ([`rng`]); batches come out as Arrow record batches with deletions applied,
//! an optional SQL filter and a column projection, the next block read ahead, and an
//! epoch resumes from a saved [`State`] with no row repeated or skipped ([`read`]).
//! Behaviour follows `shared/reference/shard-reader-guide.md`, minus its refusals:
//! Lancer reads multi-file fragments, dropped-column leftovers, blobs, legacy files
//! and base paths; only unknown reader feature flags are refused, at discovery.
//!
//! ```no_run
//! use lancer_loader::{discover, Loader, Options, Pin, Shuffle};
//! let d = discover("/data/train.lance", &Pin::Latest, &Default::default())?;
//! let opts = Options { rank: 0, world_size: 8, shuffle: Shuffle::Buffer { buffer: 65_536 }, seed: 7, ..Default::default() };
//! let loader = Loader::new(d.plan, opts, &Default::default())?;
//! for batch in loader.epoch(0) {
//!     let batch = batch?;
//!     // train on batch
//! }
//! # Ok::<(), lancer_loader::LoaderError>(())
//! ```

pub mod plan;
pub mod read;
pub mod rng;
mod scatter;
pub mod split;

pub use plan::{discover, discover_in, Discovery, Pin, Plan, Shard};
pub use read::{Epoch, Loader, Options, Shuffle, State};
pub use split::{Part, Tail};

/// What can go wrong planning or reading.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoaderError {
    /// The dataset (or a read) failed.
    #[error(transparent)]
    Table(#[from] lancer_table::TableError),
    /// A filter or a read through the engine failed.
    #[error(transparent)]
    Lancer(#[from] lancer::Error),
    /// Arrow failed assembling a batch.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The dataset cannot be read by this loader; `remedy` says what to do.
    #[error("refused at discovery: {reason}; remedy: {remedy}")]
    Refused {
        /// Why.
        reason: String,
        /// What to do.
        remedy: String,
    },
    /// An argument or a saved plan / state is not usable.
    #[error("{what}")]
    InvalidArgument {
        /// What is wrong.
        what: String,
    },
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, LoaderError>;
