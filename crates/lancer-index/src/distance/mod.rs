//! Distances of vector search (format guide, "Vector Indices" → distance types): the
//! one [`Metric`] every search and index names, and the vectorized kernels that compute
//! it ([`l2`], [`dot`], [`hamming`], the SQ / RabitQ integer products), shared by exact
//! search in `lancer` and every vector index here.
//!
//! `kernels` holds the fixed-order kernels whose results equal a search's bit for bit;
//! `free` the free-order ones only graph builds use.

mod free;
mod kernels;

pub use free::{dot_free, l2_free};
pub use kernels::*;

/// The distance of a vector search. IVF and HNSW indexes are built and read with the
/// first three; hamming (uint8 vectors) is exact search only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Squared Euclidean distance.
    L2,
    /// `1 - cos`.
    Cosine,
    /// `1 - x·q`.
    Dot,
    /// The number of differing bits (uint8 vectors).
    Hamming,
}

impl Metric {
    /// Parses the names the reference writes (`l2`, `cosine`, `dot`, `hamming`;
    /// `euclidean`), in any case; another name is the caller's mistake.
    pub fn parse(s: &str) -> crate::Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "l2" | "euclidean" => Ok(Self::L2),
            "cosine" => Ok(Self::Cosine),
            "dot" => Ok(Self::Dot),
            "hamming" => Ok(Self::Hamming),
            _ => Err(crate::IndexError::InvalidArgument {
                what: format!("unknown metric {s:?} (use l2, cosine, dot or hamming)"),
            }),
        }
    }

    /// The name the reference writes.
    pub fn name(self) -> &'static str {
        match self {
            Self::L2 => "l2",
            Self::Cosine => "cosine",
            Self::Dot => "dot",
            Self::Hamming => "hamming",
        }
    }

    /// Whether Lancer's IVF / HNSW indexes are built and searched with this distance
    /// (all but hamming).
    pub fn indexable(self) -> bool {
        self != Self::Hamming
    }
}
