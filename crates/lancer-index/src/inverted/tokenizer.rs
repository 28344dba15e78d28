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
use std::sync::OnceLock;

use serde_json::Value;
use tantivy::tokenizer::{
    LowerCaser, NgramTokenizer, RawTokenizer, RemoveLongFilter, SimpleTokenizer, StopWordFilter,
    TextAnalyzer, TextAnalyzerBuilder, Token as TvToken, TokenFilter, TokenStream, Tokenizer,
    WhitespaceTokenizer,
};

use crate::{IndexError, Result};

mod icu;

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

/// The folded form of `c`, or `None` when pylance keeps it.
pub fn fold_char(c: char) -> Option<&'static str> {
    let table = fold_table();
    let cp = u32::from(c);
    table
        .binary_search_by_key(&cp, |&(k, _)| k)
        .ok()
        .map(|i| table[i].1)
}

/// [`FOLD_TABLE`] as (code point, folded text), sorted by code point.
fn fold_table() -> &'static [(u32, &'static str)] {
    static TABLE: OnceLock<Vec<(u32, &'static str)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Vec::with_capacity(2207);
        for line in FOLD_TABLE.lines() {
            let Some((value, ranges)) = line.split_once('\t') else {
                continue;
            };
            for r in ranges.split(',') {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                let (Ok(a), Ok(b)) = (u32::from_str_radix(a, 16), u32::from_str_radix(b, 16))
                else {
                    continue;
                };
                t.extend((a..=b.max(a)).map(|cp| (cp, value)));
            }
        }
        t.sort_unstable_by_key(|&(cp, _)| cp);
        t.dedup_by_key(|e| e.0);
        t
    })
}

/// NLTK's English stop words as pylance 11 and 12 use them (198 words: NLTK's classic 179
/// plus the 19 contractions `he'd … we've`), matched after stemming.
#[rustfmt::skip]
pub const ENGLISH_STOP_WORDS_NLTK: &[&str] = &[
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "you're", "you've",
    "you'll", "you'd", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself",
    "she", "she's", "her", "hers", "herself", "it", "it's", "its", "itself", "they", "them",
    "their", "theirs", "themselves", "what", "which", "who", "whom", "this", "that", "that'll",
    "these", "those", "am", "is", "are", "was", "were", "be", "been", "being", "have", "has",
    "had", "having", "do", "does", "did", "doing", "a", "an", "the", "and", "but", "if", "or",
    "because", "as", "until", "while", "of", "at", "by", "for", "with", "about", "against",
    "between", "into", "through", "during", "before", "after", "above", "below", "to", "from",
    "up", "down", "in", "out", "on", "off", "over", "under", "again", "further", "then", "once",
    "here", "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more",
    "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "than",
    "too", "very", "s", "t", "can", "will", "just", "don", "don't", "should", "should've",
    "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "aren't", "couldn", "couldn't",
    "didn", "didn't", "doesn", "doesn't", "hadn", "hadn't", "hasn", "hasn't", "haven",
    "haven't", "isn", "isn't", "ma", "mightn", "mightn't", "mustn", "mustn't", "needn",
    "needn't", "shan", "shan't", "shouldn", "shouldn't", "wasn", "wasn't", "weren", "weren't",
    "won", "won't", "wouldn", "wouldn't", "he'd", "he'll", "he's", "i'd", "i'll", "i'm", "i've",
    "it'd", "it'll", "she'd", "she'll", "they'd", "they'll", "they're", "they've", "we'd",
    "we'll", "we're", "we've",
];

/// pylance 14's English stop words (149 words): [`ENGLISH_STOP_WORDS_NLTK`] without `no
/// nor not`, `s t d ll m o ve y`, `don don't ain ma` and the `-n` / `-n't` forms. Probed
/// word by word with the `whitespace` tokenizer (docs/fts-index-format.md §10.4 lists the
/// 125 of them that the `simple` tokenizer can tell apart).
#[rustfmt::skip]
pub const ENGLISH_STOP_WORDS_PYLANCE14: &[&str] = &[
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "you're", "you've",
    "you'll", "you'd", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself",
    "she", "she's", "her", "hers", "herself", "it", "it's", "its", "itself", "they", "them",
    "their", "theirs", "themselves", "what", "which", "who", "whom", "this", "that", "that'll",
    "these", "those", "am", "is", "are", "was", "were", "be", "been", "being", "have", "has",
    "had", "having", "do", "does", "did", "doing", "a", "an", "the", "and", "but", "if", "or",
    "because", "as", "until", "while", "of", "at", "by", "for", "with", "about", "against",
    "between", "into", "through", "during", "before", "after", "above", "below", "to", "from",
    "up", "down", "in", "out", "on", "off", "over", "under", "again", "further", "then", "once",
    "here", "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more",
    "most", "other", "some", "such", "only", "own", "same", "so", "than", "too", "very", "can",
    "will", "just", "should", "should've", "now", "re", "he'd", "he'll", "he's", "i'd", "i'll",
    "i'm", "i've", "it'd", "it'll", "she'd", "she'll", "they'd", "they'll", "they're",
    "they've", "we'd", "we'll", "we're", "we've",
];

/// pylance's ASCII folding (identical in 11, 12 and 14), recorded by folding every code
/// point on its own: one line per folded text, `TEXT<TAB>code points` (hex, `A-B` for a
/// range, comma-separated; a text may take several lines). 2 207 code points; every other
/// code point is kept as it is.
const FOLD_TABLE: &str = r#" 	A0,A8,AF,B4,B8,2D8-2DD,37A,384-385,1FBD,1FBF-1FC1,1FCD-1FCF,1FDD-1FDF,1FED-1FEE,1FFD-1FFE
 	2000-200A,2017,202F,203E,205F,3000,309B-309C,FC5E-FC63,FDFB,FE49-FE4C,FE70,FE72,FE74,FE76
 	FE78,FE7A,FE7C,FE7E,FFE3
a	AA,E0-E5,101,103,105,1CE,1DF,1E1,1FB,201,203,227,1D43,1E01,1E9A,1EA1,1EA3,1EA5,1EA7,1EA9
a	1EAB,1EAD,1EAF,1EB1,1EB3,1EB5,1EB7,2090,24D0,FF41,1D41A,1D44E,1D482,1D4B6,1D4EA,1D51E
a	1D552,1D586,1D5BA,1D5EE,1D622,1D656,1D68A
2	B2,2082,2461,32C1,335A,33E1,FF12,1CCF2,1D7D0,1D7DA,1D7E4,1D7EE,1D7F8,1FBF2
3	B3,2083,2462,32C2,335B,33E2,FF13,1CCF3,1D7D1,1D7DB,1D7E5,1D7EF,1D7F9,1FBF3
1	B9,2081,215F,2460,32C0,3359,33E0,FF11,1CCF1,1D7CF,1D7D9,1D7E3,1D7ED,1D7F7,1FBF1
o	BA,F2-F6,F8,14D,14F,151,1A1,1D2,1EB,1ED,1FF,20D,20F,22B,22D,22F,231,1D52,1E4D,1E4F,1E51
o	1E53,1ECD,1ECF,1ED1,1ED3,1ED5,1ED7,1ED9,1EDB,1EDD,1EDF,1EE1,1EE3,2092,2134,24DE,FF4F,107A2
o	1D428,1D45C,1D490,1D4F8,1D52C,1D560,1D594,1D5C8,1D5FC,1D630,1D664,1D698
14	BC,246D,3366,33ED
12	BD,246B,32CB,3364,33EB
34	BE,325E
A	C0-C5,100,102,104,1CD,1DE,1E0,1FA,200,202,226,1D2C,1E00,1EA0,1EA2,1EA4,1EA6,1EA8,1EAA,1EAC
A	1EAE,1EB0,1EB2,1EB4,1EB6,212B,24B6,3382,FF21,1CCD6,1D400,1D434,1D468,1D49C,1D4D0,1D504
A	1D538,1D56C,1D5A0,1D5D4,1D608,1D63C,1D670,1F130
AE	C6,1E2,1FC,1D2D
C	C7,106,108,10A,10C,1E08,2102-2103,212D,216D,24B8,A7F2,FF23,1CCD8,1D402,1D436,1D46A,1D49E
C	1D4D2,1D56E,1D5A2,1D5D6,1D60A,1D63E,1D672,1F12B,1F132
E	C8-CB,112,114,116,118,11A,204,206,228,1D31,1E14,1E16,1E18,1E1A,1E1C,1EB8,1EBA,1EBC,1EBE
E	1EC0,1EC2,1EC4,1EC6,2130,24BA,FF25,1CCDA,1D404,1D438,1D46C,1D4D4,1D508,1D53C,1D570,1D5A4
E	1D5D8,1D60C,1D640,1D674,1F134
I	CC-CF,128,12A,12C,12E,130,1CF,208,20A,1D35,1E2C,1E2E,1EC8,1ECA,2110-2111,2160,24BE,FF29
I	1CCDE,1D408,1D43C,1D470,1D4D8,1D540,1D574,1D5A8,1D5DC,1D610,1D644,1D678,1F138
D	D0,10E,110,1D30,1E0A,1E0C,1E0E,1E10,1E12,2145,216E,24B9,FF24,1CCD9,1D403,1D437,1D46B,1D49F
D	1D4D3,1D507,1D53B,1D56F,1D5A3,1D5D7,1D60B,1D63F,1D673,1F133
N	D1,143,145,147,14A,1F8,1D3A,1E44,1E46,1E48,1E4A,2115,24C3,FF2E,1CCE3,1D40D,1D441,1D475
N	1D4A9,1D4DD,1D511,1D579,1D5AD,1D5E1,1D615,1D649,1D67D,1F13D
O	D2-D6,D8,14C,14E,150,1A0,1D1,1EA,1EC,1FE,20C,20E,22A,22C,22E,230,1D3C,1E4C,1E4E,1E50,1E52
O	1ECC,1ECE,1ED0,1ED2,1ED4,1ED6,1ED8,1EDA,1EDC,1EDE,1EE0,1EE2,24C4,FF2F,1CCE4,1D40E,1D442
O	1D476,1D4AA,1D4DE,1D512,1D546,1D57A,1D5AE,1D5E2,1D616,1D64A,1D67E,1F13E
U	D9-DC,168,16A,16C,16E,170,172,1AF,1D3,1D5,1D7,1D9,1DB,214,216,1D41,1E72,1E74,1E76,1E78
U	1E7A,1EE4,1EE6,1EE8,1EEA,1EEC,1EEE,1EF0,24CA,FF35,1CCEA,1D414,1D448,1D47C,1D4B0,1D4E4
U	1D518,1D54C,1D580,1D5B4,1D5E8,1D61C,1D650,1D684,1F144
Y	DD,176,178,232,1E8E,1EF2,1EF4,1EF6,1EF8,24CE,FF39,1CCEE,1D418,1D44C,1D480,1D4B4,1D4E8
Y	1D51C,1D550,1D584,1D5B8,1D5EC,1D620,1D654,1D688,1F148
TH	DE
ss	DF
ae	E6,1E3,1FD,10783
c	E7,107,109,10B,10D,1D9C,1E09,217D,24D2,FF43,1D41C,1D450,1D484,1D4B8,1D4EC,1D520,1D554
c	1D588,1D5BC,1D5F0,1D624,1D658,1D68C
e	E8-EB,113,115,117,119,11B,205,207,229,1D49,1E15,1E17,1E19,1E1B,1E1D,1EB9,1EBB,1EBD,1EBF
e	1EC1,1EC3,1EC5,1EC7,2091,212F,2147,24D4,FF45,1D41E,1D452,1D486,1D4EE,1D522,1D556,1D58A
e	1D5BE,1D5F2,1D626,1D65A,1D68E
i	EC-EF,129,12B,12D,12F,131,1D0,209,20B,1D62,1E2D,1E2F,1EC9,1ECB,2071,2139,2148,2170,24D8
i	FF49,1D422,1D456,1D48A,1D4BE,1D4F2,1D526,1D55A,1D58E,1D5C2,1D5F6,1D62A,1D65E,1D692,1D6A4
d	F0,10F,111,1D48,1D9E,1E0B,1E0D,1E0F,1E11,1E13,2146,217E,24D3,FF44,1D41D,1D451,1D485,1D4B9
d	1D4ED,1D521,1D555,1D589,1D5BD,1D5F1,1D625,1D659,1D68D
n	F1,144,146,148-149,14B,1F9,1D51,1E45,1E47,1E49,1E4B,207F,2099,24DD,FF4E,1D427,1D45B,1D48F
n	1D4C3,1D4F7,1D52B,1D55F,1D593,1D5C7,1D5FB,1D62F,1D663,1D697
u	F9-FC,169,16B,16D,16F,171,173,1B0,1D4,1D6,1D8,1DA,1DC,215,217,1D58,1D64,1E73,1E75,1E77
u	1E79,1E7B,1EE5,1EE7,1EE9,1EEB,1EED,1EEF,1EF1,24E4,FF55,1D42E,1D462,1D496,1D4CA,1D4FE,1D532
u	1D566,1D59A,1D5CE,1D602,1D636,1D66A,1D69E
y	FD,FF,177,233,2B8,1E8F,1E99,1EF3,1EF5,1EF7,1EF9,24E8,FF59,1D432,1D466,1D49A,1D4CE,1D502
y	1D536,1D56A,1D59E,1D5D2,1D606,1D63A,1D66E,1D6A2
th	FE
G	11C,11E,120,122,1E6,1F4,1D33,1E20,24BC,FF27,1CCDC,1D406,1D43A,1D46E,1D4A2,1D4D6,1D50A
G	1D53E,1D572,1D5A6,1D5DA,1D60E,1D642,1D676,1F136
g	11D,11F,121,123,1E7,1F5,1D4D,1E21,210A,24D6,338D,FF47,1D420,1D454,1D488,1D4F0,1D524,1D558
g	1D58C,1D5C0,1D5F4,1D628,1D65C,1D690
H	124,126,21E,1D34,1E22,1E24,1E26,1E28,1E2A,210B-210D,24BD,A7F8,FF28,1CCDD,1D407,1D43B,1D46F
H	1D4D7,1D573,1D5A7,1D5DB,1D60F,1D643,1D677,1F137
h	125,127,21F,2B0,1E23,1E25,1E27,1E29,1E2B,1E96,2095,210E-210F,24D7,FF48,10795,1D421,1D489
h	1D4BD,1D4F1,1D525,1D559,1D58D,1D5C1,1D5F5,1D629,1D65D,1D691
IJ	132
ij	133
J	134,1D36,24BF,FF2A,1CCDF,1D409,1D43D,1D471,1D4A5,1D4D9,1D50D,1D541,1D575,1D5A9,1D5DD,1D611
J	1D645,1D679,1F139
j	135,1F0,2B2,2149,24D9,2C7C,FF4A,1D423,1D457,1D48B,1D4BF,1D4F3,1D527,1D55B,1D58F,1D5C3
j	1D5F7,1D62B,1D65F,1D693
K	136,1E8,1D37,1E30,1E32,1E34,212A,24C0,FF2B,1CCE0,1D40A,1D43E,1D472,1D4A6,1D4DA,1D50E,1D542
K	1D576,1D5AA,1D5DE,1D612,1D646,1D67A,1F13A
k	137-138,1E9,1D4F,1E31,1E33,1E35,2096,24DA,33C0,FF4B,1D424,1D458,1D48C,1D4C0,1D4F4,1D528
k	1D55C,1D590,1D5C4,1D5F8,1D62C,1D660,1D694
L	139,13B,13D,13F,141,1D38,1E36,1E38,1E3A,1E3C,2112,216C,24C1,FF2C,1CCE1,1D40B,1D43F,1D473
L	1D4DB,1D50F,1D543,1D577,1D5AB,1D5DF,1D613,1D647,1D67B,1F13B
l	13A,13C,13E,140,142,2E1,1E37,1E39,1E3B,1E3D,2097,2113,217C,24DB,3395,FF4C,1D425,1D459
l	1D48D,1D4C1,1D4F5,1D529,1D55D,1D591,1D5C5,1D5F9,1D62D,1D661,1D695
OE	152
oe	153,A7F9
R	154,156,158,210,212,1D3F,1E58,1E5A,1E5C,1E5E,211B-211D,24C7,FF32,1CCE7,1D411,1D445,1D479
R	1D4E1,1D57D,1D5B1,1D5E5,1D619,1D64D,1D681,1F12C,1F141
r	155,157,159,211,213,2B3,1D63,1E59,1E5B,1E5D,1E5F,24E1,FF52,1D42B,1D45F,1D493,1D4C7,1D4FB
r	1D52F,1D563,1D597,1D5CB,1D5FF,1D633,1D667,1D69B
S	15A,15C,15E,160,218,1E60,1E62,1E64,1E66,1E68,24C8,A7F1,FF33,1CCE8,1D412,1D446,1D47A,1D4AE
S	1D4E2,1D516,1D54A,1D57E,1D5B2,1D5E6,1D61A,1D64E,1D682,1F12A,1F142
s	15B,15D,15F,161,17F,219,2E2,1E61,1E63,1E65,1E67,1E69,1E9B,209B,24E2,33B2,FF53,1D42C,1D460
s	1D494,1D4C8,1D4FC,1D530,1D564,1D598,1D5CC,1D600,1D634,1D668,1D69C
T	162,164,166,21A,1D40,1E6A,1E6C,1E6E,1E70,24C9,FF34,1CCE9,1D413,1D447,1D47B,1D4AF,1D4E3
T	1D517,1D54B,1D57F,1D5B3,1D5E7,1D61B,1D64F,1D683,1F143
t	163,165,167,21B,1D57,1E6B,1E6D,1E6F,1E71,1E97,209C,24E3,FF54,1D42D,1D461,1D495,1D4C9,1D4FD
t	1D531,1D565,1D599,1D5CD,1D601,1D635,1D669,1D69D
W	174,1D42,1E80,1E82,1E84,1E86,1E88,24CC,33BC,FF37,1CCEC,1D416,1D44A,1D47E,1D4B2,1D4E6,1D51A
W	1D54E,1D582,1D5B6,1D5EA,1D61E,1D652,1D686,1F146
w	175,2B7,1E81,1E83,1E85,1E87,1E89,1E98,24E6,FF57,1D430,1D464,1D498,1D4CC,1D500,1D534,1D568
w	1D59C,1D5D0,1D604,1D638,1D66C,1D6A0
Z	179,17B,17D,1E90,1E92,1E94,2124,2128,24CF,FF3A,1CCEF,1D419,1D44D,1D481,1D4B5,1D4E9,1D585
Z	1D5B9,1D5ED,1D621,1D655,1D689,1F149
z	17A,17C,17E,1DBB,1E91,1E93,1E95,24E9,FF5A,1D433,1D467,1D49B,1D4CF,1D503,1D537,1D56B,1D59F
z	1D5D3,1D607,1D63B,1D66F,1D6A3
DZ	1C4,1F1
Dz	1C5,1F2
dz	1C6,1F3
LJ	1C7
Lj	1C8
lj	1C9
NJ	1CA
Nj	1CB
nj	1CC
x	2E3,1E8B,1E8D,2093,2179,24E7,FF58,1D431,1D465,1D499,1D4CD,1D501,1D535,1D569,1D59D,1D5D1
x	1D605,1D639,1D66D,1D6A1
;	37E,FE14,FE54,FF1B
B	1D2E,1E02,1E04,1E06,212C,24B7,FF22,1CCD7,1D401,1D435,1D469,1D4D1,1D505,1D539,1D56D,1D5A1
B	1D5D5,1D609,1D63D,1D671,1F131
M	1D39,1E3E,1E40,1E42,2133,216F,24C2,33C1,FF2D,1CCE2,1D40C,1D440,1D474,1D4DC,1D510,1D544
M	1D578,1D5AC,1D5E0,1D614,1D648,1D67C,1F13C
P	1D3E,1E54,1E56,2119,24C5,FF30,1CCE5,1D40F,1D443,1D477,1D4AB,1D4DF,1D513,1D57B,1D5AF,1D5E3
P	1D617,1D64B,1D67F,1F13F
b	1D47,1E03,1E05,1E07,24D1,FF42,1D41B,1D44F,1D483,1D4B7,1D4EB,1D51F,1D553,1D587,1D5BB,1D5EF
b	1D623,1D657,1D68B
m	1D50,1E3F,1E41,1E43,2098,217F,24DC,339B,FF4D,1D426,1D45A,1D48E,1D4C2,1D4F6,1D52A,1D55E
m	1D592,1D5C6,1D5FA,1D62E,1D662,1D696
p	1D56,1E55,1E57,209A,24DF,FF50,1D429,1D45D,1D491,1D4C5,1D4F9,1D52D,1D561,1D595,1D5C9,1D5FD
p	1D631,1D665,1D699
v	1D5B,1D65,1E7D,1E7F,2174,24E5,FF56,1D42F,1D463,1D497,1D4CB,1D4FF,1D533,1D567,1D59B,1D5CF
v	1D603,1D637,1D66B,1D69F
f	1DA0,1E1F,24D5,FF46,1D41F,1D453,1D487,1D4BB,1D4EF,1D523,1D557,1D58B,1D5BF,1D5F3,1D627
f	1D65B,1D68F
F	1E1E,2109,2131,24BB,338C,A7F3,FF26,1CCDB,1D405,1D439,1D46D,1D4D5,1D509,1D53D,1D571,1D5A5
F	1D5D9,1D60D,1D641,1D675,1F135
V	1E7C,1E7E,2164,24CB,2C7D,33B6,FF36,1CCEB,1D415,1D449,1D47D,1D4B1,1D4E5,1D519,1D54D,1D581
V	1D5B5,1D5E9,1D61D,1D651,1D685,1F145
X	1E8A,1E8C,2169,24CD,FF38,1CCED,1D417,1D44B,1D47F,1D4B3,1D4E7,1D51B,1D54F,1D583,1D5B7,1D5EB
X	1D61F,1D653,1D687,1F147
SS	1E9E,1F14D
`	1FEF,FF40
.	2024,FE52,FF0E
..	2025,FE30
...	2026,FE19
!!	203C
??	2047
?!	2048
!?	2049
0	2070,2080,24EA,3358,FF10,1CCF0,1D7CE,1D7D8,1D7E2,1D7EC,1D7F6,1FBF0
4	2074,2084,2463,32C3,335C,33E3,FF14,1CCF4,1D7D2,1D7DC,1D7E6,1D7F0,1D7FA,1FBF4
5	2075,2085,2464,32C4,335D,33E4,FF15,1CCF5,1D7D3,1D7DD,1D7E7,1D7F1,1D7FB,1FBF5
6	2076,2086,2465,32C5,335E,33E5,FF16,1CCF6,1D7D4,1D7DE,1D7E8,1D7F2,1D7FC,1FBF6
7	2077,2087,2466,32C6,335F,33E6,FF17,1CCF7,1D7D5,1D7DF,1D7E9,1D7F3,1D7FD,1FBF7
8	2078,2088,2467,32C7,3360,33E7,FF18,1CCF8,1D7D6,1D7E0,1D7EA,1D7F4,1D7FE,1FBF8
9	2079,2089,2468,32C8,3361,33E8,FF19,1CCF9,1D7D7,1D7E1,1D7EB,1D7F5,1D7FF,1FBF9
+	207A,208A,FB29,FE62,FF0B
=	207C,208C,2260,FE66,FF1D
(	207D,208D,FE35,FE59,FF08
)	207E,208E,FE36,FE5A,FF09
Rs	20A8
a/c	2100
a/s	2101
c/o	2105
c/u	2106
No	2116
Q	211A,24C6,A7F4,FF31,1CCE6,1D410,1D444,1D478,1D4AC,1D4E0,1D514,1D57C,1D5B0,1D5E4,1D618
Q	1D64C,1D680,1F140
SM	2120
TEL	2121
TM	2122
FAX	213B
17	2150,2470,3369,33F0
19	2151,2472,336B,33F2
110	2152
13	2153,246C,3365,33EC
23	2154,3253,336F,33F6
15	2155,246E,3367,33EE
25	2156,3255,33F8
35	2157,325F
45	2158,32BA
16	2159,246F,3368,33EF
56	215A
18	215B,2471,336A,33F1
38	215C,32B3
58	215D
78	215E
II	2161
III	2162
IV	2163
VI	2165
VII	2166
VIII	2167
IX	2168
XI	216A
XII	216B
ii	2171
iii	2172
iv	2173
vi	2175
vii	2176
viii	2177
ix	2178
xi	217A
xii	217B
03	2189
<	226E,FE64,FF1C
>	226F,FE65,FF1E
10	2469,32C9,3362,33E9
11	246A,32CA,3363,33EA
20	2473,336C,33F3
(1)	2474
(2)	2475
(3)	2476
(4)	2477
(5)	2478
(6)	2479
(7)	247A
(8)	247B
(9)	247C
(10)	247D
(11)	247E
(12)	247F
(13)	2480
(14)	2481
(15)	2482
(16)	2483
(17)	2484
(18)	2485
(19)	2486
(20)	2487
1.	2488
2.	2489
3.	248A
4.	248B
5.	248C
6.	248D
7.	248E
8.	248F
9.	2490
10.	2491
11.	2492
12.	2493
13.	2494
14.	2495
15.	2496
16.	2497
17.	2498
18.	2499
19.	249A
20.	249B
(a)	249C
(b)	249D
(c)	249E
(d)	249F
(e)	24A0
(f)	24A1
(g)	24A2
(h)	24A3
(i)	24A4
(j)	24A5
(k)	24A6
(l)	24A7
(m)	24A8
(n)	24A9
(o)	24AA
(p)	24AB
(q)	24AC
(r)	24AD
(s)	24AE
(t)	24AF
(u)	24B0
(v)	24B1
(w)	24B2
(x)	24B3
(y)	24B4
(z)	24B5
q	24E0,FF51,107A5,1D42A,1D45E,1D492,1D4C6,1D4FA,1D52E,1D562,1D596,1D5CA,1D5FE,1D632,1D666
q	1D69A
::=	2A74
==	2A75
===	2A76
()	3200-321E,3220-3243
PTE	3250
21	3251,336D,33F4
22	3252,336E,33F5
24	3254,3370,33F7
26	3256,33F9
27	3257,33FA
28	3258,33FB
29	3259,33FC
30	325A,33FD
31	325B,33FE
32	325C
33	325D
36	32B1
37	32B2
39	32B4
40	32B5
41	32B6
42	32B7
43	32B8
44	32B9
46	32BB
47	32BC
48	32BD
49	32BE
50	32BF
Hg	32CC
erg	32CD
eV	32CE
LTD	32CF
hPa	3371
da	3372
AU	3373
bar	3374
oV	3375
pc	3376
dm	3377
dm2	3378
dm3	3379
IU	337A
pA	3380
nA	3381
mA	3383
kA	3384
KB	3385
MB	3386
GB	3387
cal	3388
kcal	3389
pF	338A
nF	338B
mg	338E
kg	338F
Hz	3390
kHz	3391
MHz	3392
GHz	3393
THz	3394
ml	3396
dl	3397
kl	3398
fm	3399
nm	339A
mm	339C
cm	339D
km	339E
mm2	339F
cm2	33A0
m2	33A1
km2	33A2
mm3	33A3
cm3	33A4
m3	33A5
km3	33A6
ms	33A7,33B3
ms2	33A8
Pa	33A9
kPa	33AA
MPa	33AB
GPa	33AC
rad	33AD
rads	33AE
rads2	33AF
ps	33B0
ns	33B1
pV	33B4
nV	33B5
mV	33B7
kV	33B8
MV	33B9,1F14B
pW	33BA
nW	33BB
mW	33BD
kW	33BE
MW	33BF
a.m.	33C2
Bq	33C3
cc	33C4
cd	33C5
Ckg	33C6
Co.	33C7
dB	33C8
Gy	33C9
ha	33CA
HP	33CB
in	33CC
KK	33CD
KM	33CE
kt	33CF
lm	33D0
ln	33D1
log	33D2
lx	33D3
mb	33D4
mil	33D5
mol	33D6
PH	33D7
p.m.	33D8
PPM	33D9
PR	33DA
sr	33DB
Sv	33DC
Wb	33DD
Vm	33DE
Am	33DF
gal	33FF
ff	FB00
fi	FB01
fl	FB02
ffi	FB03
ffl	FB04
st	FB05-FB06
   	FDFA
,	FE10,FE50,FF0C
:	FE13,FE55,FF1A
!	FE15,FE57,FF01
?	FE16,FE56,FF1F
_	FE33-FE34,FE4D-FE4F,FF3F
{	FE37,FE5B,FF5B
}	FE38,FE5C,FF5D
[	FE47,FF3B
]	FE48,FF3D
#	FE5F,FF03
&	FE60,FF06
*	FE61,FF0A
-	FE63,FF0D
\	FE68,FF3C
$	FE69,FF04
%	FE6A,FF05
@	FE6B,FF20
"	FF02
'	FF07
/	FF0F
^	FF3E
|	FF5C
~	FF5E
0.	1F100
0,	1F101
1,	1F102
2,	1F103
3,	1F104
4,	1F105
5,	1F106
6,	1F107
7,	1F108
8,	1F109
9,	1F10A
(A)	1F110
(B)	1F111
(C)	1F112
(D)	1F113
(E)	1F114
(F)	1F115
(G)	1F116
(H)	1F117
(I)	1F118
(J)	1F119
(K)	1F11A
(L)	1F11B
(M)	1F11C
(N)	1F11D
(O)	1F11E
(P)	1F11F
(Q)	1F120
(R)	1F121
(S)	1F122
(T)	1F123
(U)	1F124
(V)	1F125
(W)	1F126
(X)	1F127
(Y)	1F128
(Z)	1F129
CD	1F12D
WZ	1F12E
HV	1F14A
SD	1F14C
PPV	1F14E
WC	1F14F
MC	1F16A
MD	1F16B
MR	1F16C
DJ	1F190"#;

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
        assert_eq!(fold_table().len(), 2207);
        assert!(fold_table().windows(2).all(|w| w[0].0 < w[1].0));
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
