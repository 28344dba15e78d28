//! The settings of an INVERTED index's analyzer: [`AnalyzerParams`], the `params` value
//! of its `metadata.lance` (docs/fts-index-format.md §3.1), read from and written back
//! to pylance's JSON exactly (its key order, unknown keys kept in place), with typed
//! errors for hostile values. [`AnalyzerParams::analyzer`] (in the parent module) builds
//! the analyzer of these settings.

use std::collections::HashSet;

use serde_json::Value;

use super::{invalid, LanguageModels, StopWordLists};
use crate::Result;

/// The analyzer settings of an INVERTED index: the `params` value of its
/// `metadata.lance` (docs/fts-index-format.md §3.1), plus the choice of built-in stop-word
/// lists. Keys of the JSON this type does not know are kept (with their position) so that
/// [`AnalyzerParams::to_json`] gives back what [`AnalyzerParams::from_json`] read.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzerParams {
    /// `"text"` (the analyzer of this module) or `"code"` (not supported).
    pub lance_tokenizer: String,
    /// `simple`, `whitespace`, `raw`, `ngram`, `icu`, `icu/split`, `jieba/<model>`
    /// (and `lindera/…`, not supported).
    pub base_tokenizer: String,
    /// Stemmer and stop-word language, one of [`LANGUAGES`].
    pub language: String,
    /// Whether the index stores positions (not used by the analyzer).
    pub with_position: bool,
    /// Tokens of this many UTF-8 bytes or more are dropped; `None` keeps all.
    pub max_token_length: Option<usize>,
    /// Lower-case tokens.
    pub lower_case: bool,
    /// Stem tokens.
    pub stem: bool,
    /// Remove stop words (after stemming).
    pub remove_stop_words: bool,
    /// Replaces the built-in list when `remove_stop_words` is on.
    pub custom_stop_words: Option<Vec<String>>,
    /// Fold to ASCII (last step).
    pub ascii_folding: bool,
    /// Shortest gram of the `ngram` tokenizer (characters).
    pub min_ngram_length: u32,
    /// Longest gram of the `ngram` tokenizer (characters).
    pub max_ngram_length: u32,
    /// `ngram`: only the grams starting at the first character of the value.
    pub prefix_only: bool,
    /// Posting block size of the index (128 or 256; not used by the analyzer).
    pub block_size: u32,
    /// Code-analyzer flag (kept for the JSON).
    pub split_identifiers: bool,
    /// Code-analyzer flag (kept for the JSON).
    pub split_on_numerics: bool,
    /// Code-analyzer flag (kept for the JSON).
    pub preserve_original: bool,
    /// Code-analyzer flag (kept for the JSON).
    pub index_operators: bool,
    /// Built-in stop-word lists (pylance version); not written to the JSON.
    pub stop_word_lists: StopWordLists,
    /// Where the dictionary tokenizers' models are read from (the session's); not
    /// written to the JSON.
    pub models: LanguageModels,
    /// Keys this type does not know, each with the key that preceded it in the source.
    extra: Vec<ExtraKey>,
}

#[derive(Debug, Clone, PartialEq)]
struct ExtraKey {
    after: Option<String>,
    key: String,
    value: Value,
}

/// The keys pylance 11/12/14 write, in their order.
const KEYS: [&str; 18] = [
    "lance_tokenizer",
    "base_tokenizer",
    "language",
    "with_position",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "custom_stop_words",
    "ascii_folding",
    "min_ngram_length",
    "max_ngram_length",
    "prefix_only",
    "block_size",
    "split_identifiers",
    "split_on_numerics",
    "preserve_original",
    "index_operators",
];

/// At most 60 characters of a JSON value, for error messages about hostile input.
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

fn want_bool(key: &str, v: &Value) -> Result<bool> {
    v.as_bool().ok_or_else(|| {
        invalid(format!(
            "FTS params: `{key}` must be true or false, got {}",
            short(v)
        ))
    })
}

fn want_string(key: &str, v: &Value) -> Result<String> {
    v.as_str().map(str::to_owned).ok_or_else(|| {
        invalid(format!(
            "FTS params: `{key}` must be a string, got {}",
            short(v)
        ))
    })
}

fn want_u32(key: &str, v: &Value) -> Result<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            invalid(format!(
                "FTS params: `{key}` must be an integer in 0..={}, got {}",
                u32::MAX,
                short(v)
            ))
        })
}

fn want_length(key: &str, v: &Value) -> Result<Option<usize>> {
    if v.is_null() {
        return Ok(None);
    }
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| {
            invalid(format!(
                "FTS params: `{key}` must be null or a non-negative integer, got {}",
                short(v)
            ))
        })
}

fn want_words(key: &str, v: &Value) -> Result<Option<Vec<String>>> {
    if v.is_null() {
        return Ok(None);
    }
    let bad = || {
        invalid(format!(
            "FTS params: `{key}` must be null or a list of strings, got {}",
            short(v)
        ))
    };
    let items = v.as_array().ok_or_else(bad)?;
    items
        .iter()
        .map(|w| w.as_str().map(str::to_owned).ok_or_else(bad))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// The keys of the top-level object of `s` in document order. `s` must already have
/// been accepted by `serde_json` as an object (so brackets and strings are balanced).
fn top_level_keys(s: &str) -> Result<Vec<String>> {
    let b = s.as_bytes();
    let mut keys = Vec::new();
    let mut depth = 0usize;
    let mut expect_key = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if i >= b.len() {
                    return Err(invalid("FTS params: unterminated string".into()));
                }
                if depth == 1 && expect_key {
                    keys.push(serde_json::from_str::<String>(&s[start..=i])?);
                    expect_key = false;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    Ok(keys)
}

fn json_str(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

impl Default for AnalyzerParams {
    fn default() -> Self {
        Self::defaults()
    }
}

impl AnalyzerParams {
    /// pylance 14's build defaults (docs/fts-index-format.md §3.1): `simple`, English,
    /// no positions, max 40 bytes, lower case, stem, stop words, ASCII folding, ngram
    /// 3..3, block size 128, pylance 14's stop-word lists.
    pub fn defaults() -> Self {
        AnalyzerParams {
            lance_tokenizer: "text".into(),
            base_tokenizer: "simple".into(),
            language: "English".into(),
            with_position: false,
            max_token_length: Some(40),
            lower_case: true,
            stem: true,
            remove_stop_words: true,
            custom_stop_words: None,
            ascii_folding: true,
            min_ngram_length: 3,
            max_ngram_length: 3,
            prefix_only: false,
            block_size: 128,
            split_identifiers: false,
            split_on_numerics: false,
            preserve_original: false,
            index_operators: false,
            stop_word_lists: StopWordLists::Pylance14,
            models: LanguageModels::default(),
            extra: Vec::new(),
        }
    }

    /// Parses the `params` metadata value. Missing keys take pylance 14's defaults
    /// (for `base_tokenizer = "ngram"`, `stem` and `remove_stop_words` default to false);
    /// values of the wrong type, out-of-range numbers and duplicate keys are
    /// [`IndexError::InvalidArgument`], malformed JSON [`IndexError::Json`]. Whether the
    /// values make a usable analyzer is checked by [`AnalyzerParams::analyzer`].
    pub fn from_json(s: &str) -> Result<Self> {
        let root: Value = serde_json::from_str(s)?;
        let Value::Object(map) = &root else {
            return Err(invalid(format!(
                "FTS params: expected a JSON object, got {}",
                short(&root)
            )));
        };
        let order = top_level_keys(s)?;
        let mut seen = HashSet::new();
        for k in &order {
            if !seen.insert(k.as_str()) {
                return Err(invalid(format!("FTS params: duplicate key `{k}`")));
            }
        }
        if order.len() != map.len() {
            return Err(invalid(
                "FTS params: could not read the keys in order".into(),
            ));
        }
        let mut p = Self::defaults();
        if let Some(v) = map.get("base_tokenizer") {
            p.base_tokenizer = want_string("base_tokenizer", v)?;
        }
        if p.base_tokenizer == "ngram" {
            p.stem = false;
            p.remove_stop_words = false;
        }
        let mut prev: Option<String> = None;
        for key in order {
            let Some(v) = map.get(&key) else {
                return Err(invalid(format!("FTS params: lost key `{key}`")));
            };
            match key.as_str() {
                "lance_tokenizer" => p.lance_tokenizer = want_string(&key, v)?,
                "base_tokenizer" => {}
                "language" => p.language = want_string(&key, v)?,
                "with_position" => p.with_position = want_bool(&key, v)?,
                "max_token_length" => p.max_token_length = want_length(&key, v)?,
                "lower_case" => p.lower_case = want_bool(&key, v)?,
                "stem" => p.stem = want_bool(&key, v)?,
                "remove_stop_words" => p.remove_stop_words = want_bool(&key, v)?,
                "custom_stop_words" => p.custom_stop_words = want_words(&key, v)?,
                "ascii_folding" => p.ascii_folding = want_bool(&key, v)?,
                "min_ngram_length" => p.min_ngram_length = want_u32(&key, v)?,
                "max_ngram_length" => p.max_ngram_length = want_u32(&key, v)?,
                "prefix_only" => p.prefix_only = want_bool(&key, v)?,
                "block_size" => p.block_size = want_u32(&key, v)?,
                "split_identifiers" => p.split_identifiers = want_bool(&key, v)?,
                "split_on_numerics" => p.split_on_numerics = want_bool(&key, v)?,
                "preserve_original" => p.preserve_original = want_bool(&key, v)?,
                "index_operators" => p.index_operators = want_bool(&key, v)?,
                _ => p.extra.push(ExtraKey {
                    after: prev.clone(),
                    key: key.clone(),
                    value: v.clone(),
                }),
            }
            prev = Some(key);
        }
        Ok(p)
    }

    /// The `params` JSON as pylance writes it: compact, pylance's key order (§3.1); keys
    /// read by [`AnalyzerParams::from_json`] that this type does not know follow the key
    /// they followed in the source.
    pub fn to_json(&self) -> String {
        let b = |x: bool| if x { "true" } else { "false" }.to_string();
        let values: [String; 18] = [
            json_str(&self.lance_tokenizer),
            json_str(&self.base_tokenizer),
            json_str(&self.language),
            b(self.with_position),
            self.max_token_length
                .map_or_else(|| "null".to_string(), |n| n.to_string()),
            b(self.lower_case),
            b(self.stem),
            b(self.remove_stop_words),
            match &self.custom_stop_words {
                None => "null".to_string(),
                Some(words) => Value::from(words.clone()).to_string(),
            },
            b(self.ascii_folding),
            self.min_ngram_length.to_string(),
            self.max_ngram_length.to_string(),
            b(self.prefix_only),
            self.block_size.to_string(),
            b(self.split_identifiers),
            b(self.split_on_numerics),
            b(self.preserve_original),
            b(self.index_operators),
        ];
        let mut out = String::from("{");
        self.write_extras(None, &mut out);
        for (key, value) in KEYS.iter().zip(values) {
            if !out.ends_with('{') {
                out.push(',');
            }
            out.push_str(&json_str(key));
            out.push(':');
            out.push_str(&value);
            self.write_extras(Some(key), &mut out);
        }
        out.push('}');
        out
    }

    /// Writes the unknown keys that followed `after` (and, recursively, those that
    /// followed them).
    fn write_extras(&self, after: Option<&str>, out: &mut String) {
        for e in self.extra.iter().filter(|e| e.after.as_deref() == after) {
            if !out.ends_with('{') {
                out.push(',');
            }
            out.push_str(&json_str(&e.key));
            out.push(':');
            out.push_str(&e.value.to_string());
            self.write_extras(Some(&e.key), out);
        }
    }
}
