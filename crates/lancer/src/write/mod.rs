//! Changing a dataset beyond append and delete: schema evolution (add, drop, alter and
//! cast columns), updates and merge-insert by SQL, local and distributed compaction, and
//! two-phase writes whose fragments travel between processes as pylance's
//! `FragmentMetadata` JSON.
//!
//! Spec: "Transactions" and "Conflict resolution" (table format, lines ~3686–6486 of
//! `lance-reference.txt`) for what each change commits, "Distributed Write" (~7862–8438)
//! for two-phase writes and distributed compaction; what pylance 11–14 commit for each
//! change is in `docs/evolution-format.md`.
//!
//! - `evolve`: add / drop / alter / cast columns, update, merge_insert, merge_columns,
//!   local compaction;
//! - `compaction`: distributed compaction (plan → tasks → one Rewrite commit);
//! - `two_phase`: fragments written on workers, committed once ([`commit`]);
//! - `fragment_json`: the fragment descriptions those steps exchange.

pub(crate) mod compaction;
pub(crate) mod evolve;
pub(crate) mod fragment_json;
pub(crate) mod two_phase;

pub use compaction::{
    commit_compaction, parse_text, plan_compaction, CompactionMetrics, CompactionPlan,
    CompactionTask, RewriteResult,
};
pub use evolve::{
    add_columns, add_null_columns, alter, alter_columns, cast_columns, compact_files, drop_columns,
    merge_columns, merge_insert, merge_insert_uncommitted, update, Alteration, MergeOptions,
};
pub use fragment_json::{
    fragment_from_json, fragment_to_json, fragments_from_json_text, python_json_text,
};
pub use two_phase::{
    commit, delete_in_fragment, write_fragments, CommitParams, Fragment, FragmentMode, Operation,
    RewriteGroup,
};
