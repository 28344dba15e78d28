//! NGRAM segments (`ngram_postings.lance`, docs/scalar-index-format.md §9; reference
//! "NGram Index"): one row per trigram token, ascending, with the RoaringTreemap of the
//! rows whose value holds it; token 0 lists the null rows. `contains(col, s)` (and the
//! `LIKE '%s%'` forms) with at least three characters answers the intersection of the
//! posting lists of `s`'s trigrams: candidates, rechecked by the caller.
//!
//! Tokens as pylance makes them: the value lower-cased and ASCII-folded, every window of
//! three characters all in `[0-9a-z]`, numbered `pos(c0)·37² + pos(c1)·37 + pos(c2)`
//! with digits 1–10 and letters 11–36.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::Array;
use lancer_format::reader::FileReader;
use roaring::RoaringTreemap;

use super::{rowmap, Query};
use crate::segment::corrupt;
use crate::Result;

/// The token of the null rows.
pub const NULL_TOKEN: u32 = 0;

fn pos(c: char) -> Option<u32> {
    match c {
        '0'..='9' => Some(c as u32 - '0' as u32 + 1),
        'a'..='z' => Some(c as u32 - 'a' as u32 + 11),
        _ => None,
    }
}

/// The characters of `text` lower-cased and ASCII-folded.
fn folded(text: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        match super::fold_table::FOLD.binary_search_by_key(&(c as u32), |&(cp, _)| cp) {
            Ok(i) => out.extend(super::fold_table::FOLD[i].1.chars()),
            Err(_) => out.push(c),
        }
    }
    out
}

/// Position of an ASCII byte after lower-casing (0: not a letter or digit).
static ASCII_POS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b'0'..=b'9' => b - b'0' + 1,
            b'a'..=b'z' => b - b'a' + 11,
            b'A'..=b'Z' => b - b'A' + 11,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// Appends the distinct trigram tokens of `text` to `out`, ascending (ASCII text takes
/// a table lookup per byte; other text the full lower-casing and folding).
pub fn tokens_into(text: &str, out: &mut Vec<u32>) {
    let start = out.len();
    if text.is_ascii() {
        let b = text.as_bytes();
        for w in b.windows(3) {
            let (p0, p1, p2) = (
                ASCII_POS[w[0] as usize],
                ASCII_POS[w[1] as usize],
                ASCII_POS[w[2] as usize],
            );
            if p0 != 0 && p1 != 0 && p2 != 0 {
                out.push(u32::from(p0) * 37 * 37 + u32::from(p1) * 37 + u32::from(p2));
            }
        }
    } else {
        out.extend(tokens(text));
    }
    let tail = &mut out[start..];
    tail.sort_unstable();
    let mut k = 0;
    for i in 0..tail.len() {
        if i == 0 || tail[i] != tail[k - 1] {
            tail[k] = tail[i];
            k += 1;
        }
    }
    out.truncate(start + k);
}

/// The distinct trigram tokens of `text`, ascending.
pub fn tokens(text: &str) -> BTreeSet<u32> {
    let chars = folded(text);
    chars
        .windows(3)
        .filter_map(|w| Some(pos(w[0])? * 37 * 37 + pos(w[1])? * 37 + pos(w[2])?))
        .collect()
}

/// An opened NGRAM segment.
pub struct NGramIndex {
    label: String,
    tokens: Vec<u32>,
    file: Arc<FileReader>,
}

impl NGramIndex {
    /// pylance's statistics of an NGRAM segment: its distinct n-grams.
    pub fn statistics(&self) -> serde_json::Value {
        serde_json::json!({ "num_ngrams": self.tokens.len() })
    }

    /// Reads the token column.
    pub fn open(label: &str, file: Arc<FileReader>) -> Result<Self> {
        let b = file.read_all(Some(&["tokens"]))?;
        let col = b
            .column(0)
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(|| corrupt(label, "tokens are not uint32"))?;
        if col.null_count() > 0 {
            return Err(corrupt(label, "null tokens"));
        }
        let tokens = col.values().to_vec();
        if tokens.windows(2).any(|w| w[0] >= w[1]) {
            return Err(corrupt(label, "tokens are not strictly ascending"));
        }
        Ok(Self {
            label: label.to_string(),
            tokens,
            file,
        })
    }

    /// Candidate rows for `contains(col, s)`; None when `s` has no trigram (every row
    /// is a candidate).
    pub fn query(&self, q: &Query) -> Result<Option<RoaringTreemap>> {
        let Query::Contains(s) = q else {
            return Ok(None);
        };
        let wanted = tokens(s);
        if wanted.is_empty() {
            return Ok(None);
        }
        let mut rows = Vec::with_capacity(wanted.len());
        for t in &wanted {
            match self.tokens.binary_search(t) {
                Ok(i) => rows.push(i as u64),
                Err(_) => return Ok(Some(RoaringTreemap::new())),
            }
        }
        let b = self.file.take(&rows, Some(&["posting_list"]))?;
        let mut acc: Option<RoaringTreemap> = None;
        for bytes in super::bitmap::binary_values(&self.label, b.column(0))? {
            let p = rowmap::decode_treemap(bytes).map_err(|e| corrupt(&self.label, e))?;
            acc = Some(match acc {
                None => p,
                Some(a) => a & p,
            });
        }
        Ok(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_pylances() {
        let t = |s: &str| tokens(s).into_iter().collect::<Vec<_>>();
        assert_eq!(t("hel"), vec![25_219]);
        assert_eq!(t("wor"), vec![46_130]);
        assert_eq!(t("abc"), vec![15_516]);
        assert_eq!(t("000"), vec![1_407]);
        assert_eq!(t("zzz"), vec![50_652]);
        // "Straße und STRASSE": str tra ras ass sse und.
        assert_eq!(t("Straße und STRASSE"), t("strasse und"));
        assert_eq!(t("Straße und STRASSE").len(), 6);
        assert_eq!(t("naïve café"), t("naive cafe"));
        assert!(t("日本語テキスト").is_empty());
        assert!(t("a-b").is_empty());
        // The ASCII fast path gives the same tokens as the general one.
        for text in [
            "Hello, World 42!",
            "abcabc",
            "a-b c",
            "",
            "xy",
            "UPPER lower 0a9Z",
        ] {
            let mut fast = Vec::new();
            tokens_into(text, &mut fast);
            let slow: Vec<u32> = tokens(&format!("{text}\u{e9}")).into_iter().collect();
            let plain: Vec<u32> = tokens(text).into_iter().collect();
            assert_eq!(fast, plain, "{text}");
            assert!(plain.iter().all(|t| slow.contains(t)));
        }
    }
}
