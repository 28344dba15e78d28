//! Reading legacy Lance data files: format 0.1 / 0.2, what pylance writes with
//! `data_storage_version="legacy"` (datasets then record storage version "0.1").
//!
//! Read only; [`crate::reader::FileReader::open`] detects these files by their footer
//! and hands them here, so callers read them like 2.x files.
//!
//! The layout (spec: "Lance File Format" → versions table, `0.1`/`legacy`; wire facts
//! from the reference's `protos/file.proto` `Metadata`, the previous-format
//! `page_table`/`reader`, and its plain / binary / dictionary encodings):
//!
//! | part | content |
//! |------|---------|
//! | pages | per batch, per field: values, in schema order |
//! | page table | `i64` pairs `(position, length)`, one per (field id, batch), field ids from the smallest to the largest id in the schema, batches inner |
//! | dictionaries | values of dictionary fields (plain or variable-width) |
//! | manifest | `[u32 len][lance.table.Manifest]` holding only the schema (fields, metadata, each dictionary's position and length) |
//! | metadata | `[u32 len][lance.file.Metadata]`: cumulative batch row offsets, page table and manifest positions |
//! | footer | `u64` metadata position, `u16` major 0, `u16` minor 1 or 2, `LANC` |
//!
//! Encodings, by type (every page is for one batch of one field id):
//! - fixed-width types (integers, floats incl. float16, decimals, dates, times,
//!   timestamps, durations, fixed-size binary, fixed-size lists of those): the values
//!   back to back; booleans bit-packed; length = rows (fixed-size lists flatten).
//! - utf8 / binary / large variants: the bytes, then `n + 1` absolute `i64` file
//!   positions; the page points at the positions, length = n.
//! - dictionary: keys as fixed-width; the values come from the manifest's dictionary
//!   entry (integers plain, strings variable-width).
//! - list / large list: `rows + 1` offsets (`i32` / `i64`, from 0 in each batch) into
//!   the child's page of that batch; struct: no page, children only; null: no data.
//!
//! There are no validity bitmaps: this reader returns exactly what pylance returns
//! (nulls of fixed-width values come back as the stored bytes, null lists empty,
//! struct-level nulls gone, empty values of nullable variable-width fields null).

mod decode;
mod meta;

pub use meta::{legacy_version, LegacyFile, Page, LEGACY_FOOTER_LEN};

use crate::schema::LanceField;

impl LegacyFile {
    /// A human-readable description: footer, metadata positions, batches and, per
    /// field id, its pages (`lancer inspect`).
    pub fn describe(&self) -> String {
        let mut s = format!(
            "legacy Lance file (format {}.{}, data_storage_version \"legacy\"): {} rows in {} batch{}, {} bytes\n",
            self.major,
            self.minor,
            self.num_rows(),
            self.num_batches(),
            if self.num_batches() == 1 { "" } else { "es" },
            self.file_size
        );
        s.push_str(&format!(
            "metadata at {}, schema manifest at {}, page table at {} ({} field ids from {} x {} batches)\n",
            self.metadata_position,
            self.manifest_position,
            self.page_table_position,
            self.field_span,
            self.min_field_id,
            self.num_batches()
        ));
        s.push_str(&format!("batch row offsets: {:?}\n", self.batch_offsets));
        s.push_str("fields and pages (position, entries):\n");
        fn walk(file: &LegacyFile, f: &LanceField, depth: usize, out: &mut String) {
            let pages: Vec<String> = (0..file.num_batches())
                .filter_map(|b| file.page(f.id, b).ok())
                .map(|p| format!("{}+{}", p.position, p.length))
                .collect();
            out.push_str(&format!(
                "  {:indent$}{} (id {}): {}{}  pages [{}]\n",
                "",
                f.name,
                f.id,
                f.logical_type,
                if f.nullable { "" } else { " not null" },
                pages.join(", "),
                indent = depth * 2
            ));
            for c in &f.children {
                walk(file, c, depth + 1, out);
            }
        }
        for f in &self.schema.fields {
            walk(self, f, 0, &mut s);
        }
        s
    }
}
