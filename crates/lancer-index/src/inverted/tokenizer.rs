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
//!    word segmentation, module `icu`; `jieba/<model>`: jieba-rs over a dictionary of
//!    the session's language model home, module `models`);
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

use tantivy::tokenizer::{
    LowerCaser, NgramTokenizer, RawTokenizer, RemoveLongFilter, SimpleTokenizer, StopWordFilter,
    TextAnalyzer, TextAnalyzerBuilder, Token as TvToken, TokenFilter, TokenStream, Tokenizer,
    WhitespaceTokenizer,
};

use crate::{IndexError, Result};

mod icu;
mod json_doc;
mod lists;
mod models;
mod params;
#[cfg(test)]
mod tests;

pub use lists::{fold_char, ENGLISH_STOP_WORDS_NLTK, ENGLISH_STOP_WORDS_PYLANCE14};
pub use models::{LanguageModels, LANGUAGE_MODEL_HOME_ENV};
pub use params::AnalyzerParams;

/// The base tokenizers this module implements (`jieba/<model>` reads its dictionary
/// from the session's language model home, module `models`).
pub const SUPPORTED_BASE_TOKENIZERS: &[&str] = &[
    "simple",
    "whitespace",
    "raw",
    "ngram",
    "icu",
    "icu/split",
    "jieba/<model>",
];

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

fn invalid(what: String) -> IndexError {
    IndexError::InvalidArgument { what }
}

impl AnalyzerParams {
    /// The analyzer of these settings. Errors name the parameter: an unknown or
    /// unsupported `base_tokenizer` or `lance_tokenizer`, an unknown `language`,
    /// `min_ngram_length` 0 or above `max_ngram_length` (for `ngram`).
    pub fn analyzer(&self) -> Result<Analyzer> {
        self.build_analyzer(true)
    }

    /// Whether these settings are valid, as [`Self::analyzer`] checks them but without
    /// reading a dictionary tokenizer's model (its name is checked; its files are read
    /// when an index is built or searched).
    pub fn check(&self) -> Result<()> {
        self.build_analyzer(false).map(|_| ())
    }

    fn build_analyzer(&self, load_models: bool) -> Result<Analyzer> {
        let json = match self.lance_tokenizer.as_str() {
            "text" => false,
            "json" => true,
            other => {
                return Err(invalid(format!(
                    "FTS params: unsupported lance_tokenizer '{other}' (supported: text, json)"
                )))
            }
        };
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
            s if s == "jieba" || s.starts_with("jieba/") => {
                if load_models {
                    TextAnalyzer::builder(self.models.jieba(s)?).dynamic()
                } else {
                    // the name checked; the model's files are read when it is used
                    models::check_name(s)?;
                    TextAnalyzer::builder(SimpleTokenizer::default()).dynamic()
                }
            }
            s if s.starts_with("lindera/") => return Err(self.models.lindera(s)),
            other => {
                return Err(invalid(format!(
                    "FTS params: unknown base tokenizer '{other}' (supported: {})",
                    SUPPORTED_BASE_TOKENIZERS.join(", ")
                )));
            }
        };
        let analyzer = self.add_filters(base, language);
        Ok(Analyzer {
            inner: analyzer.build(),
            params: self.clone(),
            json,
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
    /// Documents are JSON, tokens `path,type,value` triples ([`json_doc`]).
    json: bool,
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
        if self.json {
            self.each_token(text, &mut |t, p| {
                out.push(Token {
                    text: t.to_string(),
                    position: p,
                })
            });
            return;
        }
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
        if self.json {
            // a JSON document: its scalars' triples (malformed text holds none)
            let inner = &mut self.inner;
            let mut position = 0u32;
            let mut triple = String::new();
            let _ = json_doc::leaves(text, &mut |path, kind, value| {
                let mut emit = |tok: &str| {
                    triple.clear();
                    triple.push_str(path);
                    triple.push(',');
                    triple.push_str(kind.name());
                    triple.push(',');
                    triple.push_str(tok);
                    f(&triple, position);
                    position = position.saturating_add(1);
                };
                if kind == json_doc::Kind::Str {
                    let mut stream = inner.token_stream(value);
                    while stream.advance() {
                        emit(&stream.token().text);
                    }
                } else {
                    emit(value);
                }
            });
            return;
        }
        let mut stream = self.inner.token_stream(text);
        while stream.advance() {
            let t = stream.token();
            f(&t.text, u32::try_from(t.position).unwrap_or(u32::MAX));
        }
    }

    /// The tokens of a query `text`: as a document's for text analyzers; for JSON
    /// documents one `path,type,value` triple (split at its first two commas, a `str`
    /// value analyzed), refused as pylance 14 refuses it when it is not one.
    pub fn query_tokens(&mut self, text: &str) -> Result<Vec<Token>> {
        let mut out = Vec::new();
        if !self.json {
            self.tokens(text, &mut out);
            return Ok(out);
        }
        let mut parts = text.splitn(3, ',');
        let (Some(path), Some(kind), Some(value)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid(format!(
                "Invalid triple format: {text} (a query of a JSON index is path,type,value)"
            )));
        };
        let kind = json_doc::Kind::parse(kind).ok_or_else(|| {
            invalid(format!(
                "Invalid triple type: {kind} (one of str, number, bool, null)"
            ))
        })?;
        if kind == json_doc::Kind::Str {
            let mut stream = self.inner.token_stream(value);
            while stream.advance() {
                let t = stream.token();
                out.push(Token {
                    text: format!("{path},str,{}", t.text),
                    position: u32::try_from(t.position).unwrap_or(u32::MAX),
                });
            }
        } else {
            out.push(Token {
                text: format!("{path},{},{value}", kind.name()),
                position: 0,
            });
        }
        Ok(out)
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
