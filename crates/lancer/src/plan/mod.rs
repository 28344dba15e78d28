//! Query planning below the searches: which parts of a SQL filter scalar indexes answer,
//! and the row addresses they give (reference: "Scalar Indices", lines ~1300–3160 of
//! `lance-reference.txt`, and the performance guide's "use scalar indices for filters";
//! what each pylance version indexes is in `docs/scalar-index-format.md` §10–§12).

pub(crate) mod scalar;
