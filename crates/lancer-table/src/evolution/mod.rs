//! Changing what a dataset holds beyond appends and deletes (spec: "Transactions" →
//! Update, Merge, Rewrite, DataReplacement; "Schema evolution"): `evolve` (adding,
//! altering and dropping columns, updates rewriting rows), `merge` (merge_insert:
//! joining a source on key columns, upserts and deletes by key) and `compact`
//! (rewriting small fragments and dropping deleted rows, with the row-id map indexes
//! are remapped by).

mod compact;
mod evolve;
mod merge;

pub use compact::{CompactionOptions, CompactionStats};
pub(crate) use evolve::{carry_rows, prune_files, row_ids_and_created};
pub use evolve::{max_field_id, ColumnChange, UpdateStats};
pub use merge::{
    KeyCandidates, KeyLookup, MergeInsert, MergeStats, PairFilter, RowFilter, SOURCE_IN_MEMORY,
};
