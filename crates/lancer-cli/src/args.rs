//! Command-line arguments (parsed form only; commands build what they need from them).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Lancer: a fast engine for the Lance format.
#[derive(Debug, Parser)]
#[command(
    name = "lancer",
    version,
    about = "Read, write and inspect Lance datasets and data files",
    after_help = "PATH is a Lance dataset directory or a single .lance data file.\n\nExit codes: 0 success; 1 the operation failed (unreadable or corrupt data, missing file, failed verification, commit conflict); 2 invalid arguments (including a filter that does not parse or names an unknown column, and unknown columns)."
)]
pub struct Cli {
    /// Print results as JSON (for scripts). Row-printing commands (cat, take, search)
    /// switch to JSON lines.
    #[arg(long, global = true)]
    pub json: bool,
    /// A storage option for datasets on object stores, KEY=VALUE (repeatable), in the
    /// reference's names: region, endpoint, access_key_id, secret_access_key,
    /// session_token, allow_http, virtual_hosted_style_request, aws_* / azure_* /
    /// google_* keys. The environment (AWS_ENDPOINT, AWS_REGION, …) applies first.
    #[arg(long = "storage-option", global = true, value_name = "KEY=VALUE", value_parser = parse_option)]
    pub storage_options: Vec<(String, String)>,
    /// Print the storage requests and bytes the command cost (to stderr).
    #[arg(long, global = true)]
    pub stats: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Output formats for rows.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A table for people.
    Table,
    /// Comma-separated values with a header.
    Csv,
    /// One JSON object per line.
    Jsonl,
    /// An Arrow IPC stream (binary, for pipes).
    ArrowIpc,
    /// A Parquet file (binary, for pipes or `> out.parquet`).
    Parquet,
}

/// How `import` treats an existing dataset.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Mode {
    /// Fail if the dataset exists.
    Create,
    /// Add rows to an existing dataset.
    Append,
    /// Replace the dataset's rows (a new version; old ones stay readable).
    Overwrite,
}

/// The analyzer of a full-text (`--type inverted`) index (pylance's parameters).
#[derive(Debug, Clone, Args)]
pub struct FtsCreateArgs {
    /// Inverted: store token positions (phrase queries need them).
    #[arg(long)]
    pub with_position: bool,
    /// Inverted: simple (split on non-alphanumerics), whitespace, raw (one token per
    /// value) or ngram.
    #[arg(long, default_value = "simple")]
    pub base_tokenizer: String,
    /// Inverted: language of stemming and stop words (English, French, German, …).
    #[arg(long, default_value = "English")]
    pub language: String,
    /// Inverted: do not stem.
    #[arg(long)]
    pub no_stem: bool,
    /// Inverted: keep stop words.
    #[arg(long)]
    pub no_stop_words: bool,
    /// Inverted: keep case.
    #[arg(long)]
    pub no_lower_case: bool,
    /// Inverted: keep accents (no ASCII folding).
    #[arg(long)]
    pub no_ascii_folding: bool,
    /// Inverted: drop tokens of this many bytes or more (0: keep all; default 40).
    #[arg(long, default_value_t = 40)]
    pub max_token_length: usize,
    /// Inverted, ngram: shortest gram.
    #[arg(long, default_value_t = 3)]
    pub ngram_min: u32,
    /// Inverted, ngram: longest gram.
    #[arg(long, default_value_t = 3)]
    pub ngram_max: u32,
    /// Inverted, ngram: only grams starting at the value's first character.
    #[arg(long)]
    pub prefix_only: bool,
}

/// What `lancer fts` searches for and how.
#[derive(Debug, Clone, Args)]
pub struct FtsArgs {
    /// The query text (tokenized with the index's analyzer); with --query-json, a
    /// query in Lance's JSON form, e.g.
    /// '{"boolean": {"must": [{"match": {"terms": "fox"}}], "must_not": [...]}}'.
    pub query: String,
    /// The column (default: every column with an INVERTED index, best field).
    #[arg(long)]
    pub column: Option<String>,
    /// The query is JSON (match, phrase, boost, multi_match, boolean; Lance's form).
    #[arg(long, conflicts_with_all = ["all", "phrase", "fuzzy"])]
    pub query_json: bool,
    /// Every query token must occur (AND; default OR).
    #[arg(long)]
    pub all: bool,
    /// The tokens must occur in order (needs an index with positions).
    #[arg(long)]
    pub phrase: bool,
    /// With --phrase: extra positions allowed between consecutive tokens.
    #[arg(long, default_value_t = 0)]
    pub slop: u32,
    /// Match index tokens within this many edits of each query token.
    #[arg(long, default_value_t = 0)]
    pub fuzzy: u32,
    /// With --fuzzy: leading characters that must match exactly.
    #[arg(long, default_value_t = 0)]
    pub prefix_length: u32,
    /// With --fuzzy: expansions kept per query token.
    #[arg(long, default_value_t = 50)]
    pub max_expansions: usize,
    /// Rows wanted.
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Search only rows where this SQL boolean expression is true.
    #[arg(long, short = 'w')]
    pub filter: Option<String>,
    /// Apply --filter to the best rows after ranking instead of before.
    #[arg(long, requires = "filter")]
    pub postfilter: bool,
    /// Search only the rows the index covers (not rows appended since).
    #[arg(long)]
    pub fast_search: bool,
    /// Columns to print besides _score (comma separated; default all).
    #[arg(long, value_delimiter = ',')]
    pub columns: Vec<String>,
}

/// Which version of a dataset to read.
#[derive(Debug, Clone, Args, Default)]
pub struct VersionArgs {
    /// Read this version (default: the latest).
    #[arg(long, conflicts_with = "tag")]
    pub version: Option<u64>,
    /// Read the version this tag points at.
    #[arg(long)]
    pub tag: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the end-to-end demo: write a file of embeddings, read it back, take random
    /// rows (showing the bytes each read touched), search it; then the same on an
    /// embedded file written by pylance.
    Demo,
    /// Show every layer: for a data file the footer, schema, columns, pages, layouts,
    /// compression and buffer byte ranges; for a dataset the manifest, fragments and
    /// files.
    Inspect {
        /// A dataset directory or a .lance data file.
        path: PathBuf,
        /// Follow one row to the byte ranges a read of it touches: for a dataset, the
        /// row offset (deleted rows skipped) to its fragment, row in the fragment and
        /// data files; in each file, every column to its page and buffers.
        #[arg(long)]
        row: Option<u64>,
        /// Walk an index of the dataset instead: for a vector index each segment's type,
        /// metric, partitions and their sizes, centroid and codebook shapes, files; for a
        /// full-text index each segment's analyzer, partitions, documents and tokens.
        #[arg(long, conflicts_with = "row")]
        index: Option<String>,
        /// With --index: a query vector (comma separated) whose probe path to show —
        /// partitions in search order, which are searched, candidates scored.
        #[arg(
            long,
            value_delimiter = ',',
            allow_hyphen_values = true,
            requires = "index"
        )]
        query: Vec<f32>,
        /// With --query: results wanted (sets the reference's early pruning).
        #[arg(short, long, default_value_t = 10)]
        k: usize,
        /// With --query: partitions searched, exactly as `search --nprobes` (without it,
        /// the reference's default: at least 1, more by its early pruning).
        #[arg(long, requires = "query")]
        nprobes: Option<usize>,
        /// With --index on a full-text index: the postings of this word (as the index's
        /// analyzer tokenizes it) in every partition — documents, frequencies, positions.
        #[arg(long, requires = "index")]
        token: Option<String>,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// Print rows, optionally filtered by a SQL expression.
    Cat {
        /// A dataset directory or a .lance data file.
        path: PathBuf,
        /// Columns to print (comma separated; struct fields as a.b; default all).
        #[arg(long, value_delimiter = ',')]
        columns: Vec<String>,
        /// A computed column NAME=SQL (repeatable), e.g. --expr "total=price * qty";
        /// printed after --columns.
        #[arg(long = "expr", value_name = "NAME=SQL")]
        exprs: Vec<String>,
        /// Only rows where this SQL boolean expression is true, e.g.
        /// "price > 10 AND name LIKE 'a%'" (strings in single quotes, odd column
        /// names in backticks).
        #[arg(long, short = 'w')]
        filter: Option<String>,
        /// Skip this many rows (after the filter).
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// Print at most this many rows (the table format shows 100 unless given).
        #[arg(long)]
        limit: Option<u64>,
        /// Add the _rowid column (stable row id, or the row address).
        #[arg(long)]
        with_row_id: bool,
        /// Add the _rowaddr column (fragment id << 32 | row in fragment).
        #[arg(long)]
        with_row_address: bool,
        /// Print how the scan would run instead of rows: which scalar index answers
        /// which part of the filter, fragments and rows left to read.
        #[arg(long)]
        explain: bool,
        /// Evaluate the filter on every row instead of through scalar indexes.
        #[arg(long)]
        no_index: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// Run SQL over datasets: a dataset's path or URI is a table name (FROM 'data/items.lance'),
    /// as are Parquet / CSV / JSON files; --table names one at a version or tag. Searches
    /// run inside SQL: vector_search('uri', 'column', [0.1, ...], k => 10, metric => 'cosine',
    /// nprobes => .., refine_factor => .., ef => .., filter => '..') and fts('uri', 'column',
    /// 'query', limit => .., filter => '..') return rows with _distance / _score and _rowid;
    /// lance('uri', version) a dataset at a version; _rowid / _rowaddr are hidden columns.
    /// CREATE TABLE 'uri' AS SELECT, INSERT INTO, DELETE, UPDATE and MERGE INTO are each one
    /// commit. Without a query, statements are read from stdin (one per ';'), or typed
    /// into a shell on a terminal (.help lists its commands).
    #[cfg(feature = "sql")]
    Sql {
        /// The statement(s), separated by ';'.
        query: Option<String>,
        /// A dataset as a table: NAME=URI, NAME=URI@VERSION or NAME=URI#TAG (repeatable).
        #[arg(long = "table", value_name = "NAME=URI")]
        tables: Vec<String>,
        /// Output format of the last statement's rows.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Print how long each statement took (to stderr).
        #[arg(long)]
        timing: bool,
    },
    /// Print the rows at the given offsets (any order).
    Take {
        /// A dataset directory or a .lance data file.
        path: PathBuf,
        /// Row offsets.
        #[arg(required = true, value_delimiter = ',')]
        rows: Vec<u64>,
        /// Columns to print (comma separated; default all).
        #[arg(long, value_delimiter = ',')]
        columns: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// Count rows (without a filter, datasets count from the manifest: no data read).
    Count {
        /// A dataset directory or a .lance data file.
        path: PathBuf,
        /// Count only rows where this SQL boolean expression is true (reads only the
        /// columns it names).
        #[arg(long, short = 'w')]
        filter: Option<String>,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// Print the schema.
    Schema {
        /// A dataset directory or a .lance data file.
        path: PathBuf,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// List a dataset's versions with their times and row counts.
    Versions {
        /// A dataset directory.
        path: PathBuf,
    },
    /// Plan a distributed training read: the pinned version's fragments as shards, and
    /// each rank's share (shards, rows, bytes), from the manifest alone; a dataset the
    /// loader cannot read is refused here with the remedy.
    Shards {
        /// A dataset directory or URI.
        path: PathBuf,
        /// Ranks to split the rows among.
        #[arg(long, default_value_t = 1)]
        world_size: u64,
        /// Workers per rank.
        #[arg(long, default_value_t = 1)]
        workers: u64,
        /// Rows that do not divide evenly: keep (ranks differ by ≤ 1 row), drop-last, pad.
        #[arg(long, default_value = "keep")]
        tail: String,
        /// Shuffle the shard order with this seed (for epoch `--epoch`).
        #[arg(long)]
        seed: Option<u64>,
        /// The epoch whose shard order is shown (with `--seed`).
        #[arg(long, default_value_t = 0)]
        epoch: u64,
        /// Write the plan as JSON to this file (a job resumes against it).
        #[arg(long)]
        save: Option<PathBuf>,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// Create, list or delete tags.
    Tag {
        #[command(subcommand)]
        action: TagAction,
    },
    /// Create, list or delete branches: independent version histories of a dataset,
    /// each a dataset of its own under `<root>/tree/<name>` (pass that path to any
    /// command to read or write the branch).
    Branch {
        #[command(subcommand)]
        action: BranchAction,
    },
    /// Shallow-clone a version into a new dataset at TARGET that shares the source's
    /// data, deletion and index files (the source registered as a base path; nothing is
    /// copied), as pylance's `shallow_clone`; writes to the clone stay in TARGET.
    Clone {
        /// The source dataset (its root, or a branch's `<root>/tree/<name>`).
        path: PathBuf,
        /// Where the clone goes (a path or URI holding no dataset).
        target: String,
        /// The version cloned.
        #[command(flatten)]
        source: SourceVersion,
    },
    /// Build, optimize, list, describe or drop indexes in the reference's format (pylance
    /// uses them too): vector (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ) and scalar (BTREE,
    /// BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER, NGRAM).
    Index {
        #[command(subcommand)]
        action: IndexAction,
    },
    /// Delete the rows matching a SQL filter (a new version; old versions keep them).
    Delete {
        /// A dataset directory.
        path: PathBuf,
        /// SQL boolean expression choosing the rows to delete, e.g. "id < 100".
        #[arg(long = "where", short = 'w')]
        predicate: String,
    },
    /// Add columns computed by SQL expressions over the existing ones (NAME=SQL),
    /// all-null (--null NAME:TYPE), or taken from a file joined on a key (--from FILE
    /// --on KEY): new data files beside the old, nothing rewritten.
    AddColumn {
        /// A dataset directory.
        path: PathBuf,
        /// NAME=EXPRESSION, e.g. "double_x=x * 2".
        exprs: Vec<String>,
        /// NAME:TYPE of a column added with every value null (no data written).
        #[arg(long = "null")]
        nulls: Vec<String>,
        /// A file (Parquet, CSV, JSON lines, Arrow IPC) whose columns are added, each
        /// row matched by --on (rows without a match get nulls).
        #[arg(long, requires = "on")]
        from: Option<PathBuf>,
        /// The key column of --from (in both the file and the dataset).
        #[arg(long, requires = "from")]
        on: Option<String>,
    },
    /// Drop columns (names or dotted struct paths); only the schema changes, the files
    /// stay until cleanup.
    DropColumn {
        /// A dataset directory.
        path: PathBuf,
        /// The columns.
        #[arg(required = true)]
        columns: Vec<String>,
    },
    /// Rename a column (a dotted path renames a struct's field).
    RenameColumn {
        /// A dataset directory.
        path: PathBuf,
        /// The column's current name.
        old: String,
        /// Its new name.
        new: String,
    },
    /// Change a column's nullability (--not-null checks that it holds no null) or type
    /// (--type: the column is rewritten into new data files, cast).
    AlterColumn {
        /// A dataset directory.
        path: PathBuf,
        /// The column.
        column: String,
        /// Allow nulls.
        #[arg(long, group = "change")]
        nullable: bool,
        /// Forbid nulls.
        #[arg(long, group = "change")]
        not_null: bool,
        /// The new type (int32, int64, float32, float64, string, ...).
        #[arg(long = "type", group = "change")]
        data_type: Option<String>,
    },
    /// Update rows: SET column = SQL expression for the rows a SQL filter matches (all
    /// without --where); the rows are rewritten as a new fragment, as pylance does.
    Update {
        /// A dataset directory.
        path: PathBuf,
        /// COLUMN=EXPRESSION, e.g. "price=price * 1.1" (repeatable).
        #[arg(long, required = true)]
        set: Vec<String>,
        /// SQL boolean expression choosing the rows.
        #[arg(long = "where", short = 'w')]
        predicate: Option<String>,
    },
    /// Compact: merge fragments smaller than --target-rows and rewrite those with many
    /// deleted rows (pylance's compact_files; two versions: reserve, rewrite).
    Compact {
        /// A dataset directory.
        path: PathBuf,
        /// Rows per fragment wanted.
        #[arg(long, default_value_t = 1024 * 1024)]
        target_rows: u64,
        /// Leave fragments with deleted rows alone unless they are small.
        #[arg(long)]
        keep_deletions: bool,
        /// The deleted share above which a fragment is rewritten on its own.
        #[arg(long, default_value_t = 0.1)]
        deletion_threshold: f64,
        /// Bytes per new data file at most, about (e.g. 64MiB, 2GB, 1000000).
        #[arg(long, value_parser = parse_bytes)]
        max_bytes_per_file: Option<u64>,
        /// Show what would be rewritten, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Distributed compaction, step 1: print the plan as JSON (pylance's
        /// CompactionPlan.json(), plus the dataset's location) and change nothing; run
        /// each task with `lancer compact-task`.
        #[arg(long, conflicts_with_all = ["dry_run", "commit"])]
        plan: bool,
        /// Distributed compaction, step 3: commit the results `lancer compact-task`
        /// printed (files of one plan; results left out keep their fragments).
        #[arg(long, num_args = 1.., conflicts_with = "dry_run")]
        commit: Vec<PathBuf>,
    },
    /// Distributed compaction, step 2: run task N (from 0) of a plan `lancer compact
    /// --plan` printed, writing new data files without committing; prints the
    /// result's JSON (pylance's RewriteResult.json()) for `lancer compact --commit`.
    CompactTask {
        /// The plan's JSON file (`-`: stdin).
        plan: PathBuf,
        /// Which task, from 0.
        index: usize,
        /// The dataset (default: the location the plan records).
        #[arg(long)]
        dataset: Option<PathBuf>,
    },
    /// Merge rows from a file keyed on columns (pylance's merge_insert): by default an
    /// upsert (matched rows take the input's values, the others are inserted).
    Merge {
        /// A dataset directory.
        path: PathBuf,
        /// Input: Parquet, CSV, JSON lines or Arrow IPC (streamed).
        input: PathBuf,
        /// Key columns (comma separated).
        #[arg(long, value_delimiter = ',', required = true)]
        on: Vec<String>,
        /// Update matched rows.
        #[arg(long, conflicts_with_all = ["delete_matched", "fail_on_match"])]
        update: bool,
        /// Delete matched rows (pylance's when_matched_delete).
        #[arg(long, conflicts_with = "fail_on_match")]
        delete_matched: bool,
        /// Fail, committing nothing, if any input row matches a dataset row (pylance's
        /// when_matched_fail): inserts only new keys with --insert.
        #[arg(long)]
        fail_on_match: bool,
        /// Insert unmatched input rows.
        #[arg(long)]
        insert: bool,
        /// Delete dataset rows no input row matched.
        #[arg(long)]
        delete_unmatched: bool,
        /// With --delete-unmatched: only the unmatched rows this SQL filter selects.
        #[arg(long, requires = "delete_unmatched")]
        delete_where: Option<String>,
        /// Update only the matched rows this SQL condition selects, over `source.col`
        /// and `target.col`, e.g. "source.ts > target.ts".
        #[arg(long)]
        update_where: Option<String>,
        /// Scan the key columns even where scalar indexes on every key column could
        /// locate the matched rows.
        #[arg(long)]
        no_index: bool,
    },
    /// Show or change a dataset's config and metadata: the config (e.g.
    /// lance.auto_cleanup.interval / lance.auto_cleanup.older_than turn on automatic
    /// cleanup), the table metadata, the schema metadata or a field's metadata. Each
    /// change is one metadata-only version; without --set / --unset all maps are shown.
    Meta {
        /// A dataset directory.
        path: PathBuf,
        /// Which map to change: config, table, schema, or field:PATH (a.b for a
        /// struct's child).
        #[arg(long, default_value = "config")]
        map: String,
        /// KEY=VALUE to set (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// KEY to remove (repeatable).
        #[arg(long = "unset", value_name = "KEY")]
        unset: Vec<String>,
        /// Make the map exactly the --set pairs.
        #[arg(long)]
        replace: bool,
    },
    /// Make an old version the latest again (as a new version).
    Restore {
        /// A dataset directory.
        path: PathBuf,
        /// The version to restore.
        version: u64,
    },
    /// Remove versions older than a given age (never the latest, never a tagged one)
    /// and files no remaining version uses.
    Cleanup {
        /// A dataset directory.
        path: PathBuf,
        /// Age, e.g. 30s, 15m, 12h, 7d.
        #[arg(long, default_value = "7d")]
        older_than: String,
    },
    /// Write a CSV, JSON-lines, Arrow IPC or Parquet file into a dataset.
    Import {
        /// Input file (.csv, .jsonl / .ndjson, .arrow / .arrows / .ipc, .parquet).
        input: PathBuf,
        /// Dataset directory.
        dataset: PathBuf,
        /// Create, append or overwrite.
        #[arg(long, value_enum, default_value_t = Mode::Create)]
        mode: Mode,
        /// Data storage version of new files (2.0, 2.1 or 2.2; 2.2 as pylance 14 writes).
        #[arg(long, default_value = "2.2")]
        data_storage_version: String,
        /// Rows per data file at most.
        #[arg(long, default_value_t = 1_048_576)]
        max_rows_per_file: usize,
        /// Bytes per data file at most, about (e.g. 64MiB, 2GB; default 90GiB).
        #[arg(long, value_parser = parse_bytes)]
        max_bytes_per_file: Option<u64>,
    },
    /// Write every file under a folder into a blob column, one row per file with its
    /// path (relative to the folder), size and MIME type; at data storage version 2.2
    /// payloads go inline, to packed or to dedicated `.blob` sidecars by size (blob v2).
    ImportFiles {
        /// The folder (read recursively, files in path order).
        dir: PathBuf,
        /// Dataset directory.
        dataset: PathBuf,
        /// The blob column's name.
        #[arg(long, default_value = "blob")]
        column: String,
        /// Create, append or overwrite.
        #[arg(long, value_enum, default_value_t = Mode::Create)]
        mode: Mode,
        /// Data storage version of new files (2.2: blob v2; 2.1 / 2.0: legacy blobs).
        #[arg(long, default_value = "2.2")]
        data_storage_version: String,
        /// Rows per data file at most.
        #[arg(long, default_value_t = 1_048_576)]
        max_rows_per_file: usize,
    },
    /// Read blob columns: one row's payload (or a byte range of it) to stdout, or a
    /// listing of every row's blob (kind, size, where it lives) from its descriptors.
    Blob {
        #[command(subcommand)]
        action: BlobAction,
    },
    /// Write a CSV, JSON-lines, Arrow IPC or Parquet file as data files of a dataset
    /// WITHOUT committing them (a worker's half of a distributed write); prints the
    /// fragments' descriptions as a JSON list (pylance's FragmentMetadata shape) for
    /// `lancer commit`.
    WriteFragments {
        /// Input file (.csv, .jsonl / .ndjson, .arrow / .arrows / .ipc, .parquet).
        input: PathBuf,
        /// Dataset directory (need not exist yet).
        dataset: PathBuf,
        /// append: fit the rows to the existing dataset's schema (for --append);
        /// create / overwrite: the input's own schema (for --overwrite).
        #[arg(long, value_enum, default_value_t = Mode::Append)]
        mode: Mode,
        /// Data storage version of new files (2.0, 2.1 or 2.2, as pylance 14 writes; an
        /// existing dataset's own with --mode append).
        #[arg(long, default_value = "2.2")]
        data_storage_version: String,
        /// Rows per data file at most.
        #[arg(long, default_value_t = 1_048_576)]
        max_rows_per_file: usize,
        /// Bytes per data file at most, about (e.g. 64MiB, 2GB; default 90GiB).
        #[arg(long, value_parser = parse_bytes)]
        max_bytes_per_file: Option<u64>,
    },
    /// Commit fragments written by `lancer write-fragments` (or pylance's
    /// write_fragments, their to_json() as a JSON list) as one new version: every file
    /// they name is checked first; a concurrent commit is rebased over or refused as
    /// for any write.
    Commit {
        /// Dataset directory.
        dataset: PathBuf,
        /// Append the fragments in FILE (`-`: stdin; JSON lists, one per line or one
        /// document).
        #[arg(long, value_name = "FILE", required_unless_present = "overwrite")]
        append: Option<PathBuf>,
        /// Replace the dataset (or create it) with the fragments in FILE (written with
        /// --mode create or overwrite; their first data file's schema is the dataset's).
        #[arg(long, value_name = "FILE", conflicts_with = "append")]
        overwrite: Option<PathBuf>,
        /// The version the fragments were written against (default: the latest);
        /// commits made since are rebased over, or refused when they conflict.
        #[arg(long)]
        read_version: Option<u64>,
    },
    /// Write a dataset (or data file) out as CSV, JSON lines, Arrow IPC or Parquet.
    Export {
        /// A dataset directory or a .lance data file.
        path: PathBuf,
        /// Output file; its extension picks the format (.csv, .jsonl, .arrow, .parquet).
        output: PathBuf,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// Full-text search over a string column's INVERTED index (BM25, pylance's
    /// scores): the rows holding the query's tokens, best first, with `_score`.
    Fts {
        /// A dataset directory.
        path: PathBuf,
        #[command(flatten)]
        args: FtsArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// Nearest-neighbour search over a vector column: through its vector index when it
    /// has one (--nprobes, --refine-factor), else exact; optional SQL prefilter. With
    /// --text, hybrid search: the vector and full-text results fused by reciprocal rank.
    Search {
        /// A dataset directory.
        path: PathBuf,
        /// The vector column.
        #[arg(long)]
        column: String,
        /// The query vector, comma separated (or use --query-row).
        #[arg(
            long,
            value_delimiter = ',',
            allow_hyphen_values = true,
            conflicts_with = "query_row"
        )]
        query: Vec<f32>,
        /// Use the vector of this row (offset) as the query.
        #[arg(long)]
        query_row: Option<u64>,
        /// Batched search: the query vectors in a file (.json list of vectors, or .npy
        /// 2-D float32/float64 array); the k nearest of each, query_index first.
        #[arg(long, conflicts_with_all = ["query", "query_row", "text"])]
        queries_file: Option<PathBuf>,
        /// Results wanted.
        #[arg(short, long, default_value_t = 10)]
        k: usize,
        /// Distance: l2 (squared), cosine, dot or hamming (default: the column's vector
        /// index's, else l2).
        #[arg(long)]
        metric: Option<String>,
        /// Search exactly even when the column has a vector index.
        #[arg(long)]
        no_index: bool,
        /// Index partitions to search (default: the reference's: at least 1, more by
        /// its early pruning, all while fewer than k rows were found).
        #[arg(long)]
        nprobes: Option<usize>,
        /// Re-rank k x this many index candidates by their exact distance.
        #[arg(long)]
        refine_factor: Option<u32>,
        /// Search only the rows the index covers, with its estimated distances.
        #[arg(long)]
        fast_search: bool,
        /// HNSW indexes: the beam width of each partition's graph search (default
        /// 1.5 x k x refine factor; at least k x refine factor). Other kinds ignore it.
        #[arg(long)]
        ef: Option<usize>,
        /// fast, normal (default) or accurate: with fast, HNSW graphs are walked
        /// ACORN-style past a --filter (kept rows only, reaching past rejected ones);
        /// IVF_RQ indexes refuse fast and accurate; other kinds ignore it.
        #[arg(long)]
        approx_mode: Option<String>,
        /// Columns to print besides _distance (comma separated; default all but the vector).
        #[arg(long, value_delimiter = ',')]
        columns: Vec<String>,
        /// Search only rows where this SQL boolean expression is true.
        #[arg(long, short = 'w')]
        filter: Option<String>,
        /// Apply --filter after the search (to the k nearest) instead of before.
        #[arg(long, requires = "filter")]
        postfilter: bool,
        /// Hybrid search: also this full-text query (a match query over the dataset's
        /// INVERTED index); the k best of each search fused by reciprocal rank, with
        /// _distance, _score and _relevance_score.
        #[arg(long)]
        text: Option<String>,
        /// The text column of --text (needed when several are indexed).
        #[arg(long, requires = "text")]
        text_column: Option<String>,
        /// The rank constant k of the fusion's 1 / (rank + k).
        #[arg(long, requires = "text", default_value_t = 60.0)]
        rrf_k: f32,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// Check a dataset: every version's manifest decodes, every referenced file exists
    /// with its recorded size and a valid footer, row counts agree, deletion files are
    /// valid. With --data, every column of every fragment of every version is also
    /// read as that version's schema describes it. Prints what is wrong and exits 1 if
    /// anything is.
    Verify {
        /// A dataset directory.
        path: PathBuf,
        /// Also read every column of every version (decodes all data: as slow as a full
        /// scan of each version; fragments unchanged between versions are read once).
        #[arg(long)]
        data: bool,
    },
}

/// (Parsed once per run: the size of the `Create` variant does not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum IndexAction {
    /// Build an index and commit it as a new version: a vector index (ivf_*) on a
    /// fixed-size list of floats, or a scalar index that filters use (btree, bitmap,
    /// label_list, zonemap, bloomfilter, ngram).
    Create {
        /// Dataset directory.
        path: PathBuf,
        /// The column to index.
        #[arg(long)]
        column: String,
        /// Vector: ivf_flat, ivf_pq, ivf_sq, ivf_rq; with an HNSW graph per partition
        /// ivf_hnsw_flat, ivf_hnsw_sq, ivf_hnsw_pq. Full text: inverted (`lancer fts`).
        /// Scalar: btree (ranges, equality;
        /// exact), bitmap (few distinct values; exact), label_list (array_has_any/all
        /// on lists), zonemap (min/max per zone of rows), bloomfilter (equality per
        /// zone), ngram (contains / LIKE '%x%' on strings), json (a path of a JSON
        /// column: --json-path, --target).
        #[arg(long = "type", default_value = "ivf_pq")]
        index_type: String,
        /// BTREE rows per page (default 4096).
        #[arg(long)]
        zone_size: Option<usize>,
        /// ZONEMAP rows per zone (default 8192).
        #[arg(long)]
        rows_per_zone: Option<u64>,
        /// BLOOMFILTER rows per zone (default 8192).
        #[arg(long)]
        bloom_items: Option<u64>,
        /// BLOOMFILTER false-positive rate (default 0.00057).
        #[arg(long)]
        bloom_probability: Option<f64>,
        /// Distance: l2, cosine or dot.
        #[arg(long, default_value = "l2")]
        metric: String,
        /// IVF partitions (default: rows / 4096 for ivf_flat, rows / 8192 otherwise).
        #[arg(long)]
        partitions: Option<usize>,
        /// PQ sub-vectors (must divide the dimension).
        #[arg(long)]
        sub_vectors: Option<usize>,
        /// Bits: PQ bits per code, 8 (default) or 4; RQ bits per dimension, 1 to 9
        /// (default 5, as pylance 12+).
        #[arg(long)]
        bits: Option<u32>,
        /// Index name (default COLUMN_idx).
        #[arg(long)]
        name: Option<String>,
        /// Replace an index of the same name.
        #[arg(long)]
        replace: bool,
        /// Training vectors per centroid (default 256).
        #[arg(long)]
        sample_rate: Option<usize>,
        /// k-means iterations at most (default 50).
        #[arg(long)]
        max_iters: Option<usize>,
        /// Seed of the training sample and k-means (default 42: the same data builds
        /// the same index; another seed draws other partitions).
        #[arg(long)]
        seed: Option<u64>,
        /// Encoded rows held in memory before they spill to scratch files under
        /// $LANCER_SCRATCH_DIR or the temporary directory (default 1024, or
        /// $LANCER_INDEX_MEMORY_MB). The vectors themselves are streamed twice.
        #[arg(long)]
        memory_mb: Option<usize>,
        /// HNSW kinds: neighbours per graph node (default 20, at least 4; 2 x this on
        /// level 0).
        #[arg(long)]
        m: Option<usize>,
        /// HNSW kinds: beam width while building a graph (default 150).
        #[arg(long)]
        ef_construction: Option<usize>,
        /// HNSW kinds: levels of each graph (default 7).
        #[arg(long)]
        max_level: Option<u16>,
        /// json (a path of a JSON column): the JSONPath whose values are indexed (`x`,
        /// `$.user.name`); filters reach it through json_get_int / _float / _bool /
        /// _string(COLUMN, 'PATH').
        #[arg(long)]
        json_path: Option<String>,
        /// json: the index over the path's values, btree (default) or bitmap.
        #[arg(long)]
        target: Option<String>,
        #[command(flatten)]
        fts: FtsCreateArgs,
    },
    /// List the indexes: type, metric, segments, covered and unindexed fragments.
    List {
        /// Dataset directory.
        path: PathBuf,
    },
    /// Everything about one index: type, metric, rows indexed, unindexed fragments
    /// and rows, and per segment its partitions, quantizer parameters and files.
    Describe {
        /// Dataset directory.
        path: PathBuf,
        /// Index name.
        name: String,
    },
    /// Add the rows of fragments appended since the index was built, as a new segment
    /// with the index's centroids and quantizer (the reference's delta; no retraining).
    Optimize {
        /// Dataset directory.
        path: PathBuf,
        /// Index name.
        name: String,
    },
    /// Drop an index (a new version; old versions keep it).
    Drop {
        /// Dataset directory.
        path: PathBuf,
        /// Index name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum BlobAction {
    /// Write one row's blob payload (or bytes START..END of it) to stdout or a file,
    /// reading only those bytes.
    Get {
        /// Dataset directory.
        path: PathBuf,
        /// The blob column.
        #[arg(long)]
        column: String,
        /// The row: an index among live rows (or an id / address with --by).
        #[arg(long)]
        row: u64,
        /// Bytes START..END of the payload (END exclusive; either may be left out).
        #[arg(long)]
        range: Option<String>,
        /// How --row is read: indices, ids or addresses.
        #[arg(long, default_value = "indices")]
        by: String,
        /// Write here instead of stdout.
        #[arg(long, short = 'o')]
        output: Option<PathBuf>,
        #[command(flatten)]
        at: VersionArgs,
    },
    /// List every row's blob: kind (inline, packed, dedicated, external, null), size
    /// and where the payload lives; no payload is read.
    Ls {
        /// Dataset directory.
        path: PathBuf,
        /// The blob column.
        #[arg(long)]
        column: String,
        /// At most this many rows.
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        at: VersionArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum TagAction {
    /// Point a new tag at a version.
    Create {
        /// Dataset directory.
        path: PathBuf,
        /// Tag name.
        name: String,
        /// Version (default: latest).
        version: Option<u64>,
    },
    /// List tags.
    List {
        /// Dataset directory.
        path: PathBuf,
    },
    /// Delete a tag.
    Delete {
        /// Dataset directory.
        path: PathBuf,
        /// Tag name.
        name: String,
    },
}

/// Which version a branch or a clone starts from: `--from` / `--version`, or `--tag`.
#[derive(Debug, Clone, Args)]
pub struct SourceVersion {
    /// The branch to start from (default: the one PATH opens; `main` for the main
    /// branch).
    #[arg(long, conflicts_with = "tag")]
    pub from: Option<String>,
    /// The version to start from (default: the latest of that branch).
    #[arg(long, conflicts_with = "tag")]
    pub version: Option<u64>,
    /// Start from the version this tag points at.
    #[arg(long)]
    pub tag: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BranchAction {
    /// Start a branch from a version of the main branch, of another branch, or a tag.
    Create {
        /// The dataset (its root, or a branch's `<root>/tree/<name>`).
        path: PathBuf,
        /// Branch name (segments of letters, digits, '.', '-', '_' joined by '/').
        name: String,
        /// The version the branch starts from.
        #[command(flatten)]
        source: SourceVersion,
    },
    /// List branches: parent branch and version, creation time.
    List {
        /// The dataset (its root, or a branch's `<root>/tree/<name>`).
        path: PathBuf,
    },
    /// Delete a branch and its files (refused while branches made from it remain).
    Delete {
        /// The dataset (its root, or a branch's `<root>/tree/<name>`).
        path: PathBuf,
        /// Branch name.
        name: String,
    },
}

/// A byte count: a number with an optional unit (B, KB/MB/GB/TB in powers of 1000,
/// KiB/MiB/GiB/TiB in powers of 1024; case-insensitive).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        u => {
            return Err(format!(
                "unknown unit {u:?} in {s:?} (use B, KB, MB, GB, KiB, MiB, GiB)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a byte count (e.g. 64MiB, 2GB, 1000000)"))?;
    let bytes = v * scale as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("{s:?}: a byte count must be at least 1"));
    }
    Ok(bytes as u64)
}

/// `KEY=VALUE`.
pub fn parse_option(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE (e.g. region=us-east-1)")),
    }
}
