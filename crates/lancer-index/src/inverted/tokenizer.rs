//! The analyzer of an INVERTED (full-text) index: the text → token stream step that
//! pylance 11–14 run on every indexed value and on every query string
//! (docs/fts-index-format.md §7 for the filter order, §10 for the base tokenizers,
//! stemming and stop words, §3.1 for the `params` JSON that records the settings, §6.2 /
//! §8.2 for positions).
//!
//! Pipeline, in pylance's order:
//! 1. base tokenizer (`simple`, `whitespace`, `raw`, `ngram`; tantivy 0.24's, which
//!    behave like pylance's vendored copies: `char::is_alphanumeric` / ASCII whitespace
//!    splitting, grams of the whole value all at position 0; `icu`, `icu/split`: ICU4X
//!    word segmentation, module `icu`);
//! 2. drop tokens whose UTF-8 length is **≥** `max_token_length` (`None` disables);
//! 3. lower case (per `char`, `İ` → `i̇`, no final-sigma rule);
//! 4. Snowball stemming of `language` (`frostem`, the crate pylance ships);
//! 5. stop-word removal, matched **after** stemming (`icu` / `icu/split`: the words of
//!    every language at once, module `icu`);
//! 6. ASCII folding.
//!
//! Positions are the base tokenizer's: removed tokens (stop words, over-long tokens) leave
//! gaps, which is what the index stores (`the quick brown fox` → quick 1, brown 2, fox 3);
//! `lance.tokenize` rebases them so that the first kept token is at 0.
//!
//! Measured facts this module encodes (all three pylance versions unless noted):
//! * ASCII folding is **not** tantivy's `AsciiFoldingFilter`: pylance folds 2 207 code
//!   points (tantivy's table agrees on 815 of them; pylance leaves punctuation such as
//!   `«`, `“`, `‐` alone and folds compatibility forms such as `½` → `12`, `℃` → `C`,
//!   `ᴬ` → `A`, NBSP → space). The table below was recorded by running pylance's folding
//!   on every code point one at a time; folding is per code point (checked on 20 000
//!   random mixed strings), identical in 11, 12 and 14.
//! * English stop words: 11 and 12 use NLTK's 198-word list (the classic 179 words plus
//!   19 contractions `he'd … we've`); 14 uses those 198 minus 49 (`no nor not`, the
//!   letters/clitics `s t d ll m o ve y`, `don don't ain ma` and the `-n` / `-n't`
//!   forms) = 149 words. The apostrophe forms only matter to the `whitespace` / `raw`
//!   tokenizers (`simple` splits at `'`). Other languages use tantivy's (Snowball) lists;
//!   pylance 11/12 remove every word of those lists, pylance 14 keeps a few of them
//!   (negations such as German `nicht kein ohne`, French `ne pas sans`, Spanish `no ni
//!   sin`, and a handful of content words such as Russian `человек`) and has lists for
//!   Arabic, Greek, Romanian, Tamil and Turkish that tantivy lacks — not reproduced here.
//! * Stems: `frostem` here equals pylance 14's stems on ~20 000 probe words over the 18
//!   languages; `Dutch` is Snowball's current Dutch (not `DutchPorter`).

use std::collections::HashSet;

use serde_json::Value;
use tantivy::tokenizer::{
    LowerCaser, NgramTokenizer, RawTokenizer, RemoveLongFilter, SimpleTokenizer, StopWordFilter,
    TextAnalyzer, TextAnalyzerBuilder, Token as TvToken, TokenFilter, TokenStream, Tokenizer,
    WhitespaceTokenizer,
};

use crate::{IndexError, Result};

mod icu;
mod lists;

pub use lists::{fold_char, ENGLISH_STOP_WORDS_NLTK, ENGLISH_STOP_WORDS_PYLANCE14};

/// The base tokenizers this module implements.
pub const SUPPORTED_BASE_TOKENIZERS: &[&str] =
    &["simple", "whitespace", "raw", "ngram", "icu", "icu/split"];

/// The `language` values pylance accepts (exact spelling; `english` is rejected).
pub const LANGUAGES: &[&str] = &[
    "Arabic",
    "Danish",
    "Dutch",
    "English",
    "Finnish",
    "French",
    "German",
    "Greek",
    "Hungarian",
    "Italian",
    "Norwegian",
    "Portuguese",
    "Romanian",
    "Russian",
    "Spanish",
    "Swedish",
    "Tamil",
    "Turkish",
];

/// Which built-in stop-word lists `remove_stop_words` uses when `custom_stop_words` is
/// not given. Not part of the `params` JSON: it is a property of the pylance version that
/// wrote the index (the JSON of 11, 12 and 14 is identical).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopWordLists {
    /// pylance 14: English = [`ENGLISH_STOP_WORDS_PYLANCE14`] (149 words); `icu` /
    /// `icu/split`: 14's words of every language (3 837).
    #[default]
    Pylance14,
    /// pylance 11 and 12: English = [`ENGLISH_STOP_WORDS_NLTK`] (198 words); `icu` /
    /// `icu/split`: 11 / 12's words of every language (5 099).
    Nltk,
}

impl StopWordLists {
    /// The lists of pylance `major` (11 and 12: NLTK; otherwise 14's).
    pub fn for_pylance_major(major: u32) -> Self {
        if major <= 12 {
            StopWordLists::Nltk
        } else {
            StopWordLists::Pylance14
        }
    }

    /// The English list.
    pub fn english(self) -> &'static [&'static str] {
        match self {
            StopWordLists::Pylance14 => ENGLISH_STOP_WORDS_PYLANCE14,
            StopWordLists::Nltk => ENGLISH_STOP_WORDS_NLTK,
        }
    }
}

/// The analyzer settings of an INVERTED index: the `params` value of its
/// `metadata.lance` (docs/fts-index-format.md §3.1), plus the choice of built-in stop-word
/// lists. Keys of the JSON this type does not know are kept (with their position) so that
/// [`AnalyzerParams::to_json`] gives back what [`AnalyzerParams::from_json`] read.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzerParams {
    /// `"text"` (the analyzer of this module) or `"code"` (not supported).
    pub lance_tokenizer: String,
    /// `simple`, `whitespace`, `raw`, `ngram`, `icu`, `icu/split` (and `jieba/…`,
    /// `lindera/…`, not supported).
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

fn invalid(what: String) -> IndexError {
    IndexError::InvalidArgument { what }
}

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

    /// The analyzer of these settings. Errors name the parameter: an unknown or
    /// unsupported `base_tokenizer` or `lance_tokenizer`, an unknown `language`,
    /// `min_ngram_length` 0 or above `max_ngram_length` (for `ngram`).
    pub fn analyzer(&self) -> Result<Analyzer> {
        if self.lance_tokenizer != "text" {
            return Err(invalid(format!(
                "FTS params: unsupported lance_tokenizer '{}' (supported: text)",
                self.lance_tokenizer
            )));
        }
        let language = Language::parse(&self.language)?;
        let base = match self.base_tokenizer.as_str() {
            "simple" => TextAnalyzer::builder(SimpleTokenizer::default()).dynamic(),
            "whitespace" => TextAnalyzer::builder(WhitespaceTokenizer::default()).dynamic(),
            "raw" => TextAnalyzer::builder(RawTokenizer::default()).dynamic(),
            "icu" => TextAnalyzer::builder(icu::IcuTokenizer::new(false)).dynamic(),
            "icu/split" => TextAnalyzer::builder(icu::IcuTokenizer::new(true)).dynamic(),
            "ngram" => {
                if self.min_ngram_length == 0 {
                    return Err(invalid(
                        "FTS params: min_ngram_length must be greater than 0".into(),
                    ));
                }
                if self.min_ngram_length > self.max_ngram_length {
                    return Err(invalid(format!(
                        "FTS params: min_ngram_length ({}) must not be greater than \
                         max_ngram_length ({})",
                        self.min_ngram_length, self.max_ngram_length
                    )));
                }
                let grams = NgramTokenizer::new(
                    self.min_ngram_length as usize,
                    self.max_ngram_length as usize,
                    self.prefix_only,
                )
                .map_err(|e| invalid(format!("FTS params: ngram tokenizer: {e}")))?;
                TextAnalyzer::builder(grams).dynamic()
            }
            other => {
                let known = other.starts_with("jieba") || other.starts_with("lindera");
                return Err(invalid(format!(
                    "FTS params: {} base tokenizer '{other}' (supported: {})",
                    if known { "unsupported" } else { "unknown" },
                    SUPPORTED_BASE_TOKENIZERS.join(", ")
                )));
            }
        };
        let analyzer = self.add_filters(base, language);
        Ok(Analyzer {
            inner: analyzer.build(),
            params: self.clone(),
        })
    }

    fn add_filters(&self, mut a: TextAnalyzerBuilder, language: Language) -> TextAnalyzerBuilder {
        if let Some(limit) = self.max_token_length {
            a = a.filter_dynamic(RemoveLongFilter::limit(limit));
        }
        if self.lower_case {
            a = a.filter_dynamic(LowerCaser);
        }
        if self.stem {
            a = a.filter_dynamic(MapFilter(Stem(frostem::Stemmer::new(language.algorithm()))));
        }
        if self.remove_stop_words
            && self.custom_stop_words.is_none()
            && matches!(self.base_tokenizer.as_str(), "icu" | "icu/split")
        {
            a = a.filter_dynamic(icu::StaticStopWords(icu::icu_stop_words(
                self.stop_word_lists,
            )));
        } else if self.remove_stop_words {
            let filter = match (&self.custom_stop_words, language) {
                (Some(words), _) => Some(StopWordFilter::remove(words.iter().cloned())),
                (None, Language::English) => Some(StopWordFilter::remove(
                    self.stop_word_lists
                        .english()
                        .iter()
                        .map(|w| (*w).to_owned()),
                )),
                (None, other) => other.tantivy().and_then(StopWordFilter::new),
            };
            if let Some(f) = filter {
                a = a.filter_dynamic(f);
            }
        }
        if self.ascii_folding {
            a = a.filter_dynamic(MapFilter(Fold));
        }
        a
    }
}

/// One token of an analyzed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The token after every filter.
    pub text: String,
    /// Its position as the index stores it: absolute in the base tokenizer's stream,
    /// counting removed tokens; 0 for every gram of the `ngram` tokenizer.
    pub position: u32,
}

/// Text → tokens with the settings of an [`AnalyzerParams`].
#[derive(Clone)]
pub struct Analyzer {
    inner: TextAnalyzer,
    params: AnalyzerParams,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Analyzer {
    /// Replaces `out` with the tokens of `text`, in stream order.
    pub fn tokens(&mut self, text: &str, out: &mut Vec<Token>) {
        out.clear();
        let mut stream = self.inner.token_stream(text);
        while stream.advance() {
            let t = stream.token();
            out.push(Token {
                text: t.text.clone(),
                position: u32::try_from(t.position).unwrap_or(u32::MAX),
            });
        }
    }

    /// Hands each token of `text` (its text and position, as [`Self::tokens`] gives
    /// them) to `f` without copying it.
    pub fn each_token(&mut self, text: &str, f: &mut dyn FnMut(&str, u32)) {
        let mut stream = self.inner.token_stream(text);
        while stream.advance() {
            let t = stream.token();
            f(&t.text, u32::try_from(t.position).unwrap_or(u32::MAX));
        }
    }

    /// The same analyzer with stemming off (fuzzy queries expand the query tokens of this
    /// analyzer, docs/fts-index-format.md §9).
    pub fn without_stemming(&self) -> Result<Analyzer> {
        let mut p = self.params.clone();
        p.stem = false;
        p.analyzer()
    }

    /// The settings this analyzer was built from.
    pub fn params(&self) -> &AnalyzerParams {
        &self.params
    }
}

/// The 18 `language` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Arabic,
    Danish,
    Dutch,
    English,
    Finnish,
    French,
    German,
    Greek,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Tamil,
    Turkish,
}

impl Language {
    fn parse(name: &str) -> Result<Self> {
        use Language::*;
        Ok(match name {
            "Arabic" => Arabic,
            "Danish" => Danish,
            "Dutch" => Dutch,
            "English" => English,
            "Finnish" => Finnish,
            "French" => French,
            "German" => German,
            "Greek" => Greek,
            "Hungarian" => Hungarian,
            "Italian" => Italian,
            "Norwegian" => Norwegian,
            "Portuguese" => Portuguese,
            "Romanian" => Romanian,
            "Russian" => Russian,
            "Spanish" => Spanish,
            "Swedish" => Swedish,
            "Tamil" => Tamil,
            "Turkish" => Turkish,
            other => {
                let mut shown: String = other.chars().take(40).collect();
                if shown.len() < other.len() {
                    shown.push('…');
                }
                return Err(invalid(format!(
                    "FTS params: unknown language '{shown}' (expected one of {})",
                    LANGUAGES.join(", ")
                )));
            }
        })
    }

    fn algorithm(self) -> frostem::Algorithm {
        use frostem::Algorithm as A;
        use Language::*;
        match self {
            Arabic => A::Arabic,
            Danish => A::Danish,
            Dutch => A::Dutch,
            English => A::English,
            Finnish => A::Finnish,
            French => A::French,
            German => A::German,
            Greek => A::Greek,
            Hungarian => A::Hungarian,
            Italian => A::Italian,
            Norwegian => A::Norwegian,
            Portuguese => A::Portuguese,
            Romanian => A::Romanian,
            Russian => A::Russian,
            Spanish => A::Spanish,
            Swedish => A::Swedish,
            Tamil => A::Tamil,
            Turkish => A::Turkish,
        }
    }

    /// The language of tantivy's stop-word lists (`None`: tantivy has no list).
    fn tantivy(self) -> Option<tantivy::tokenizer::Language> {
        use tantivy::tokenizer::Language as T;
        use Language::*;
        Some(match self {
            Danish => T::Danish,
            Dutch => T::Dutch,
            English => T::English,
            Finnish => T::Finnish,
            French => T::French,
            German => T::German,
            Hungarian => T::Hungarian,
            Italian => T::Italian,
            Norwegian => T::Norwegian,
            Portuguese => T::Portuguese,
            Russian => T::Russian,
            Spanish => T::Spanish,
            Swedish => T::Swedish,
            Arabic | Greek | Romanian | Tamil | Turkish => return None,
        })
    }
}

/// A token filter that rewrites each token's text.
trait TokenMap: Clone + Send + Sync + 'static {
    /// Writes the new text of `text` into `out` and returns true, or returns false when
    /// the text stays as it is.
    fn apply(&self, text: &str, out: &mut String) -> bool;
}

/// Snowball stemming with `frostem`.
#[derive(Clone, Copy)]
struct Stem(frostem::Stemmer);

impl TokenMap for Stem {
    fn apply(&self, text: &str, out: &mut String) -> bool {
        let stemmed = self.0.stem(text);
        if stemmed == text {
            return false;
        }
        out.clear();
        out.push_str(&stemmed);
        true
    }
}

/// pylance's ASCII folding ([`FOLD_TABLE`]).
#[derive(Clone, Copy)]
struct Fold;

impl TokenMap for Fold {
    fn apply(&self, text: &str, out: &mut String) -> bool {
        if text.is_ascii() {
            return false;
        }
        out.clear();
        for c in text.chars() {
            match fold_char(c) {
                Some(s) => out.push_str(s),
                None => out.push(c),
            }
        }
        true
    }
}

#[derive(Clone)]
struct MapFilter<M>(M);

impl<M: TokenMap> TokenFilter for MapFilter<M> {
    type Tokenizer<T: Tokenizer> = MapTokenizer<M, T>;

    fn transform<T: Tokenizer>(self, inner: T) -> MapTokenizer<M, T> {
        MapTokenizer {
            map: self.0,
            inner,
            buf: String::new(),
        }
    }
}

#[derive(Clone)]
struct MapTokenizer<M, T> {
    map: M,
    inner: T,
    buf: String,
}

impl<M: TokenMap, T: Tokenizer> Tokenizer for MapTokenizer<M, T> {
    type TokenStream<'a> = MapStream<'a, M, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        MapStream {
            map: &self.map,
            buf: &mut self.buf,
            tail: self.inner.token_stream(text),
        }
    }
}

struct MapStream<'a, M, S> {
    map: &'a M,
    buf: &'a mut String,
    tail: S,
}

impl<M: TokenMap, S: TokenStream> TokenStream for MapStream<'_, M, S> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        if self.map.apply(&token.text, self.buf) {
            std::mem::swap(&mut token.text, self.buf);
        }
        true
    }

    fn token(&self) -> &TvToken {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut TvToken {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What pylance 11, 12 and 14 write for the default settings.
    const DEFAULT_JSON: &str = r#"{"lance_tokenizer":"text","base_tokenizer":"simple","language":"English","with_position":false,"max_token_length":40,"lower_case":true,"stem":true,"remove_stop_words":true,"custom_stop_words":null,"ascii_folding":true,"min_ngram_length":3,"max_ngram_length":3,"prefix_only":false,"block_size":128,"split_identifiers":false,"split_on_numerics":false,"preserve_original":false,"index_operators":false}"#;

    fn toks(p: &AnalyzerParams, text: &str) -> Vec<(String, u32)> {
        let mut a = p.analyzer().unwrap();
        let mut out = vec![Token {
            text: "stale".into(),
            position: 9,
        }];
        a.tokens(text, &mut out);
        out.into_iter().map(|t| (t.text, t.position)).collect()
    }

    fn texts(p: &AnalyzerParams, text: &str) -> Vec<String> {
        toks(p, text).into_iter().map(|t| t.0).collect()
    }

    fn with(f: impl FnOnce(&mut AnalyzerParams)) -> AnalyzerParams {
        let mut p = AnalyzerParams::defaults();
        f(&mut p);
        p
    }

    fn err(json: &str) -> String {
        match AnalyzerParams::from_json(json) {
            Ok(p) => panic!("{json} parsed: {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn analyzer_err(p: &AnalyzerParams) -> String {
        match p.analyzer() {
            Ok(_) => panic!("analyzer built for {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn defaults_write_pylance_json() {
        assert_eq!(AnalyzerParams::defaults().to_json(), DEFAULT_JSON);
        assert_eq!(
            AnalyzerParams::from_json(DEFAULT_JSON).unwrap(),
            AnalyzerParams::defaults()
        );
        assert_eq!(
            AnalyzerParams::from_json("{}").unwrap(),
            AnalyzerParams::defaults()
        );
        let p = with(|p| {
            p.custom_stop_words = Some(vec!["fox".into(), "dög\"".into()]);
            p.max_token_length = None;
        });
        let j = p.to_json();
        assert!(j.contains(r#""max_token_length":null"#), "{j}");
        assert!(j.contains(r#""custom_stop_words":["fox","dög\""]"#), "{j}");
        assert_eq!(AnalyzerParams::from_json(&j).unwrap(), p);
    }

    #[test]
    fn missing_keys_take_pylance14_defaults() {
        let p = AnalyzerParams::from_json(r#"{"base_tokenizer":"ngram"}"#).unwrap();
        assert!(!p.stem && !p.remove_stop_words);
        assert_eq!((p.min_ngram_length, p.max_ngram_length), (3, 3));
        let p = AnalyzerParams::from_json(r#"{"stem":true,"base_tokenizer":"ngram"}"#).unwrap();
        assert!(p.stem && !p.remove_stop_words);
        let p = AnalyzerParams::from_json(r#"{"max_token_length":null}"#).unwrap();
        assert_eq!(p.max_token_length, None);
        assert!(p.stem && p.remove_stop_words && p.ascii_folding && p.lower_case);
    }

    #[test]
    fn unknown_keys_round_trip_in_place() {
        let src = DEFAULT_JSON
            .replacen('{', r#"{"zeroth":[1,{"a":"}"}],"#, 1)
            .replace(
                r#""stem":true,"#,
                r#""stem":true,"new_flag":{"x":[1,2]},"also":"a,\"b\":c","#,
            )
            .replace("false}", r#"false,"last":null}"#);
        let p = AnalyzerParams::from_json(&src).unwrap();
        assert_eq!(p.to_json(), src);
        let mut q = p.clone();
        q.stem = false;
        assert!(q
            .to_json()
            .contains(r#""stem":false,"new_flag":{"x":[1,2]},"also""#));
    }

    #[test]
    fn hostile_json_is_a_typed_error() {
        for bad in [
            "",
            "[]",
            "null",
            "1",
            "\"simple\"",
            "{",
            r#"{"stem":"yes"}"#,
            r#"{"stem":null}"#,
            r#"{"lower_case":1}"#,
            r#"{"base_tokenizer":3}"#,
            r#"{"language":["English"]}"#,
            r#"{"max_token_length":-1}"#,
            r#"{"max_token_length":4.5}"#,
            r#"{"max_token_length":"40"}"#,
            r#"{"max_token_length":1e400}"#,
            r#"{"min_ngram_length":-3}"#,
            r#"{"min_ngram_length":4294967296}"#,
            r#"{"max_ngram_length":100000000000000000000}"#,
            r#"{"max_ngram_length":1e12}"#,
            r#"{"block_size":true}"#,
            r#"{"custom_stop_words":"the"}"#,
            r#"{"custom_stop_words":["the",1]}"#,
            r#"{"custom_stop_words":[["the"]]}"#,
            r#"{"stem":true,"stem":false}"#,
        ] {
            let e = err(bad);
            assert!(!e.is_empty(), "{bad}");
        }
        // Deep nesting is refused by serde_json's recursion limit, not by a stack overflow.
        let deep = format!(r#"{{"x":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        err(&deep);
        // A huge hostile value is not echoed in full.
        let long = format!(r#"{{"stem":"{}"}}"#, "y".repeat(1 << 20));
        assert!(err(&long).len() < 300);
    }

    #[test]
    fn analyzer_errors_name_the_parameter() {
        let e = analyzer_err(&with(|p| p.base_tokenizer = "jieba/default".into()));
        assert!(
            e.contains(
                "unsupported base tokenizer 'jieba/default' (supported: simple, whitespace, \
                 raw, ngram, icu, icu/split)"
            ),
            "{e}"
        );
        let e = analyzer_err(&with(|p| p.base_tokenizer = "foo".into()));
        assert!(e.contains("unknown base tokenizer 'foo'"), "{e}");
        // pylance knows `icu` and `icu/split` only.
        for bad in ["icu/", "icu/foo", "ICU", "icu/split/x"] {
            let e = analyzer_err(&with(|p| p.base_tokenizer = bad.into()));
            assert!(
                e.contains(&format!("unknown base tokenizer '{bad}'")),
                "{e}"
            );
        }
        let e = analyzer_err(&with(|p| p.language = "english".into()));
        assert!(e.contains("unknown language 'english'"), "{e}");
        let e = analyzer_err(&with(|p| {
            p.base_tokenizer = "ngram".into();
            p.min_ngram_length = 0;
        }));
        assert!(e.contains("min_ngram_length must be greater than 0"), "{e}");
        let e = analyzer_err(&with(|p| {
            p.base_tokenizer = "ngram".into();
            p.min_ngram_length = 4;
        }));
        assert!(
            e.contains("min_ngram_length (4) must not be greater than max_ngram_length (3)"),
            "{e}"
        );
        let e = analyzer_err(&with(|p| p.lance_tokenizer = "code".into()));
        assert!(e.contains("lance_tokenizer 'code'"), "{e}");
        // Ngram lengths are not checked for the other tokenizers (pylance neither).
        with(|p| p.min_ngram_length = 0).analyzer().unwrap();
    }

    #[test]
    fn huge_ngram_lengths_allocate_nothing_big() {
        // pylance accepts any u32 lengths; the grams are bounded by the text.
        let p = with(|p| {
            p.base_tokenizer = "ngram".into();
            (p.stem, p.remove_stop_words) = (false, false);
            p.min_ngram_length = 2;
            p.max_ngram_length = u32::MAX;
        });
        assert_eq!(
            texts(&p, "hello"),
            ["he", "hel", "hell", "hello", "el", "ell", "ello", "ll", "llo", "lo"]
        );
        let p = with(|p| {
            p.base_tokenizer = "ngram".into();
            p.min_ngram_length = u32::MAX;
            p.max_ngram_length = u32::MAX;
        });
        assert!(texts(&p, "hello").is_empty());
    }

    #[test]
    fn empty_and_blank_values() {
        let d = AnalyzerParams::defaults();
        assert!(toks(&d, "").is_empty());
        assert!(toks(&d, "   ").is_empty());
        let raw = with(|p| p.base_tokenizer = "raw".into());
        assert_eq!(toks(&raw, ""), [(String::new(), 0)]);
        assert_eq!(toks(&raw, "   "), [("   ".to_string(), 0)]);
        let ngram = with(|p| p.base_tokenizer = "ngram".into());
        assert!(toks(&ngram, "").is_empty());
        assert!(toks(&ngram, "ab").is_empty());
        assert_eq!(texts(&ngram, "abc"), ["abc"]);
    }

    #[test]
    fn positions_count_removed_tokens() {
        let d = AnalyzerParams::defaults();
        assert!(toks(&d, "the of and THE").is_empty());
        let t = toks(&d, "The Quick Brown Fox jumps over the lazy dog!");
        let want = [
            ("quick", 1),
            ("brown", 2),
            ("fox", 3),
            ("jump", 4),
            ("lazi", 7),
            ("dog", 8),
        ];
        assert_eq!(t, want.map(|(s, p)| (s.to_string(), p)));
        // Over-long tokens leave a gap too.
        let p = with(|p| p.max_token_length = Some(10));
        assert_eq!(
            toks(&p, "the cat xxxxxxxxxxxxxxxxxxxx dog"),
            [("cat".to_string(), 1), ("dog".to_string(), 3)]
        );
    }

    #[test]
    fn max_token_length_boundary_is_in_bytes_and_exclusive() {
        let d = with(|p| {
            p.stem = false;
            p.ascii_folding = false;
        });
        let x39 = "x".repeat(39);
        assert_eq!(texts(&d, &format!("{x39} {}", "y".repeat(40))), [x39]);
        let e19 = "é".repeat(19);
        assert_eq!(texts(&d, &format!("{e19} {}", "é".repeat(20))), [e19]);
        // The length is taken before lower-casing: `İ` (2 bytes) becomes 3 bytes.
        let p = with(|p| p.max_token_length = Some(3));
        assert_eq!(texts(&p, "İ"), ["i\u{307}"]);
        let p = with(|p| p.max_token_length = Some(0));
        assert!(texts(&p, "a b c").is_empty());
        let p = with(|p| p.max_token_length = None);
        assert_eq!(texts(&p, &"z".repeat(1000)), ["z".repeat(1000)]);
    }

    #[test]
    fn ngram_prefix_only() {
        let p = with(|p| {
            p.base_tokenizer = "ngram".into();
            (p.stem, p.remove_stop_words) = (false, false);
            p.min_ngram_length = 2;
            p.max_ngram_length = 3;
            p.prefix_only = true;
        });
        assert_eq!(
            toks(&p, "Hello world"),
            [("he".to_string(), 0), ("hel".to_string(), 0)]
        );
        let mut p = with(|p| {
            p.base_tokenizer = "ngram".into();
            (p.stem, p.remove_stop_words) = (false, false);
            p.min_ngram_length = 1;
            p.max_ngram_length = 10;
            p.prefix_only = true;
        });
        assert_eq!(texts(&p, "abcd"), ["a", "ab", "abc", "abcd"]);
        // pylance 11's ngram defaults: the grams are stemmed and stop-word filtered.
        (p.stem, p.remove_stop_words) = (true, true);
        p.stop_word_lists = StopWordLists::Nltk;
        assert_eq!(texts(&p, "abcd"), ["ab", "abc", "abcd"]);
        // Folding applies to each gram and may lengthen it.
        let p = with(|p| {
            p.base_tokenizer = "ngram".into();
            (p.stem, p.remove_stop_words) = (false, false);
            p.min_ngram_length = 4;
            p.max_ngram_length = 4;
        });
        assert_eq!(texts(&p, "traß"), ["trass"]);
    }

    #[test]
    fn filter_order() {
        let d = AnalyzerParams::defaults();
        // Stop words are matched after stemming.
        assert_eq!(texts(&d, "having ourselves"), ["ourselv"]);
        // Folding comes last: the stemmer sees `café`, the stop list does not match `cafe`.
        let p = with(|p| p.custom_stop_words = Some(vec!["cafe".into()]));
        assert_eq!(texts(&p, "Cafés"), ["cafe"]);
        let p = with(|p| p.custom_stop_words = Some(vec!["cat".into()]));
        assert_eq!(
            toks(&p, "the cat the"),
            [("the".to_string(), 0), ("the".to_string(), 2)]
        );
        // custom_stop_words only acts with remove_stop_words.
        let p = with(|p| {
            p.custom_stop_words = Some(vec!["cat".into()]);
            p.remove_stop_words = false;
        });
        assert_eq!(texts(&p, "the cat"), ["the", "cat"]);
        // Case-sensitive stop words without lower-casing.
        let p = with(|p| p.lower_case = false);
        assert_eq!(texts(&p, "THE cat the"), ["THE", "cat"]);
        assert_eq!(
            texts(&d, "Café naïve Straße STRASSE Ærø ﬁnance İstanbul"),
            [
                "cafe",
                "naiv",
                "strasse",
                "strass",
                "aero",
                "financ",
                "i\u{307}stanbul"
            ]
        );
        assert_eq!(texts(&d, "ΣΑΣ"), ["σασ"]);
    }

    #[test]
    fn stop_word_lists_of_11_12_and_14() {
        assert_eq!(ENGLISH_STOP_WORDS_NLTK.len(), 198);
        assert_eq!(ENGLISH_STOP_WORDS_PYLANCE14.len(), 149);
        let nltk: HashSet<_> = ENGLISH_STOP_WORDS_NLTK.iter().collect();
        assert!(ENGLISH_STOP_WORDS_PYLANCE14
            .iter()
            .all(|w| nltk.contains(w)));
        let ws14 = with(|p| p.base_tokenizer = "whitespace".into());
        let ws11 = with(|p| {
            p.base_tokenizer = "whitespace".into();
            p.stop_word_lists = StopWordLists::for_pylance_major(11);
        });
        assert_eq!(
            texts(&ws14, "Hello, World! don't C++ a-b"),
            ["hello,", "world!", "don't", "c++", "a-b"]
        );
        assert_eq!(
            texts(&ws11, "Hello, World! don't C++ a-b"),
            ["hello,", "world!", "c++", "a-b"]
        );
        assert_eq!(
            texts(&ws14, "no nor not i'm we're"),
            ["no", "nor", "not", "we'r"]
        );
        // With stemming, `we're` becomes `we'r` and is no stop word any more (pylance too).
        assert_eq!(texts(&ws11, "no nor not i'm we're"), ["we'r"]);
        // Other languages: tantivy's lists.
        let de = with(|p| p.language = "German".into());
        assert_eq!(texts(&de, "und der die das Haus Häuser"), ["haus", "haus"]);
    }

    #[test]
    fn ascii_folding_is_pylances() {
        assert_eq!(lists::fold_table().len(), 2207);
        assert!(lists::fold_table().windows(2).all(|w| w[0].0 < w[1].0));
        for (c, want) in [
            ('½', Some("12")),
            ('℃', Some("C")),
            ('Ǆ', Some("DZ")),
            ('ß', Some("ss")),
            ('Æ', Some("AE")),
            ('\u{a0}', Some(" ")),
            ('⒇', Some("(20)")),
            ('ĸ', Some("k")),
            ('«', None),
            ('“', None),
            ('ȸ', None),
            ('µ', None),
            ('\u{301}', None),
            ('a', None),
        ] {
            assert_eq!(fold_char(c), want, "{c:?}");
        }
        let p = with(|p| {
            p.base_tokenizer = "whitespace".into();
            p.stem = false;
            p.lower_case = false;
        });
        assert_eq!(
            texts(&p, "ﬀ ß Œ ¼ ⅓ ① ℃ № ™ «» “quote”"),
            [
                "ff",
                "ss",
                "OE",
                "14",
                "13",
                "1",
                "C",
                "No",
                "TM",
                "«»",
                "“quote”"
            ]
        );
    }

    fn plain(base: &str) -> AnalyzerParams {
        with(|p| {
            p.base_tokenizer = base.into();
            (p.stem, p.remove_stop_words, p.lower_case, p.ascii_folding) =
                (false, false, false, false);
            p.max_token_length = None;
        })
    }

    #[test]
    fn icu_segments_like_pylance() {
        let icu = plain("icu");
        let split = plain("icu/split");
        let text = "hello_world こんにちは世界 東京タワー 中文分词测试";
        assert_eq!(
            texts(&icu, text),
            [
                "hello_world",
                "こんにちは",
                "世界",
                "東京",
                "タワー",
                "中文",
                "分词",
                "测试"
            ]
        );
        assert_eq!(
            texts(&split, text),
            [
                "hello",
                "world",
                "こんにちは",
                "世界",
                "東京",
                "タワー",
                "中文",
                "分词",
                "测试"
            ]
        );
        // Punctuation, spaces and emoji take no position; ICU keeps `U.S.A`, `3.14`,
        // `1,000`, `don't` whole and `icu/split` cuts them.
        let text = "don't e-mail C++ U.S.A. 3.14 1,000 😀 x😀y";
        assert_eq!(
            toks(&icu, text),
            [
                ("don't", 0),
                ("e", 1),
                ("mail", 2),
                ("C", 3),
                ("U.S.A", 4),
                ("3.14", 5),
                ("1,000", 6),
                ("x", 7),
                ("y", 8)
            ]
            .map(|(s, p)| (s.to_string(), p))
        );
        assert_eq!(
            texts(&split, text),
            ["don", "t", "e", "mail", "C", "U", "S", "A", "3", "14", "1", "000", "x", "y"]
        );
        // Dictionary segmentation of Thai; `icu/split` also cuts at non-alphabetic marks.
        assert_eq!(
            texts(&icu, "ภาษาไทยง่ายนิดเดียว"),
            ["ภาษา", "ไทย", "ง่าย", "นิด", "เดียว"]
        );
        assert_eq!(
            texts(&split, "ภาษาไทยง่ายนิดเดียว"),
            ["ภาษา", "ไทย", "ง", "าย", "นิด", "เดียว"]
        );
        assert_eq!(
            texts(&split, "_x_ __init__ a\u{ad}b"),
            ["x", "init", "a", "b"]
        );
        assert_eq!(
            texts(&icu, "_x_ __init__ a\u{ad}b"),
            ["_x_", "__init__", "a\u{ad}b"]
        );
        for p in [&icu, &split] {
            assert!(toks(p, "").is_empty());
            assert!(toks(p, " \t\n!? 😀 ").is_empty());
            assert!(toks(p, "_").is_empty());
        }
    }

    #[test]
    fn icu_filters_and_stop_words_of_every_language() {
        let mut p = with(|p| p.base_tokenizer = "icu".into());
        let text = "The lazy dog, le chat, der Hund, 的 猫 1 don't";
        // pylance 14: `the`, `le`, `der`, `的` are stop words whatever the language;
        // `dog`, `1`, `don't` are not.
        assert_eq!(
            toks(&p, text),
            [
                ("lazi", 1),
                ("dog", 2),
                ("chat", 4),
                ("hund", 6),
                ("猫", 8),
                ("1", 9),
                ("don't", 10)
            ]
            .map(|(s, p)| (s.to_string(), p))
        );
        p.language = "French".into();
        assert_eq!(
            texts(&p, text),
            ["lazy", "dog", "chat", "hund", "猫", "1", "don't"]
        );
        // pylance 11 / 12: `dog` (Danish), `1` (Chinese) and `don't` are stop words too.
        p.language = "English".into();
        p.stop_word_lists = StopWordLists::Nltk;
        assert_eq!(texts(&p, text), ["lazi", "chat", "hund", "猫"]);
        // custom_stop_words replace the lists.
        p.custom_stop_words = Some(vec!["chat".into()]);
        assert_eq!(
            texts(&p, text),
            ["the", "lazi", "dog", "le", "der", "hund", "的", "猫", "1", "don't"]
        );
        assert_eq!(icu::icu_stop_words(StopWordLists::Nltk).len(), 5099);
        assert_eq!(icu::icu_stop_words(StopWordLists::Pylance14).len(), 3837);
        // A stop word reached through stemming: `,` + fatha is one token (the mark is
        // alphabetic), which the Arabic stemmer turns into `,`, a stop word (pylance too).
        let p = with(|p| {
            p.base_tokenizer = "icu".into();
            p.language = "Arabic".into();
        });
        assert_eq!(texts(&p, ",\u{64e} hcs"), ["hcs"]);
        // Over-long tokens leave a gap; the length is in bytes.
        let p = with(|p| {
            p.base_tokenizer = "icu/split".into();
            p.max_token_length = Some(7);
        });
        assert_eq!(
            toks(&p, "東京タワー hello_world"),
            [("東京", 0), ("hello", 2), ("world", 3)].map(|(s, p)| (s.to_string(), p))
        );
    }

    #[test]
    fn without_stemming() {
        let a = AnalyzerParams::defaults().analyzer().unwrap();
        let mut plain = a.without_stemming().unwrap();
        let mut out = Vec::new();
        plain.tokens("running foxes the", &mut out);
        let got: Vec<_> = out.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(got, ["running", "foxes"]);
        assert!(a.params().stem && !plain.params().stem);
    }
}
