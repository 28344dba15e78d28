//! Full-text queries over INVERTED indexes, scored with BM25 exactly as pylance scores
//! them (docs/fts-index-format.md §8–§9): match (OR / AND, boost, fuzzy), phrase (with
//! slop, from positions), boolean (must / should / must not), boosting, multi-column
//! best-field. Indexed rows use the index's statistics over all its segments and
//! partitions; rows the index does not cover yet (handed in as text) are tokenized here
//! and scored with the index's statistics plus theirs (§8.3).
//!
//! Every arithmetic step is f32 in pylance's order, and `ln` is the platform's `logf`
//! (Rust's `f32::ln`), so `_score` values are bit-identical to pylance's.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::daat::{exact, intersect, or_top, Term};
use super::posting::Postings;
use super::segment::{InvertedSegment, Partition, PositionData, Weights, BOUND_GROUP};
use super::tokenizer::{Analyzer, Token};
use crate::{IndexError, Result};

/// The base tokenizer whose words fuzzy queries expand on ngram indexes.
const WORDS_TOKENIZER: &str = "whitespace";

/// BM25 `k1`.
pub const K1: f32 = 1.2;
/// BM25 `b`.
pub const B: f32 = 0.75;

/// `ln((N − n + 0.5) / (n + 0.5) + 1)` in f32.
pub fn idf(n: u64, docs: u64) -> f32 {
    let (n, docs) = (n as f32, docs as f32);
    ((docs - n + 0.5) / (n + 0.5) + 1.0).ln()
}

/// The BM25 weight of a term of frequency `f` in a document of `dl` tokens.
pub fn doc_weight(f: u32, dl: f32, avgdl: f32) -> f32 {
    let f = f as f32;
    ((K1 + 1.0) * f) / (f + K1 * ((1.0 - B) + (B * dl) / avgdl))
}

/// The length code of format 3's 256-document blocks (§6.4).
pub fn quantize(v: u32) -> u32 {
    if v < 8 {
        return v;
    }
    let s = 32 - v.leading_zeros() - 4;
    ((v >> s) & 7) | ((s + 1) << 3)
}

/// The length a code stands for.
pub fn dequantize(c: u32) -> u32 {
    if c < 8 {
        c
    } else {
        ((c & 7) | 8) << ((c >> 3) - 1).min(24)
    }
}

/// A clause's role in a boolean query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Occur {
    /// Rows must match.
    Must,
    /// Rows may match (adds to the score).
    Should,
    /// Rows must not match.
    MustNot,
}

/// A full-text query (pylance's `lance.query` classes).
#[derive(Clone, Debug, PartialEq)]
pub enum FtsQuery {
    /// Rows holding the query's tokens (any, or all with `and`).
    Match {
        /// Column (None: every indexed column, best field).
        column: Option<String>,
        /// The query text.
        text: String,
        /// All tokens required (ignored on ngram indexes, as pylance does).
        and: bool,
        /// Score multiplier.
        boost: f32,
        /// Levenshtein distance of fuzzy expansion (0: exact tokens).
        fuzziness: u32,
        /// Leading characters an expansion must share with the query token.
        prefix_length: u32,
        /// Expansions kept per query token (the first in byte order).
        max_expansions: usize,
    },
    /// Rows holding the tokens in order, each gap at most `slop` wider than the query's.
    Phrase {
        /// Column (None: the only indexed one).
        column: Option<String>,
        /// The phrase.
        text: String,
        /// Extra positions allowed per gap.
        slop: u32,
    },
    /// Must / should / must-not clauses.
    Boolean(Vec<(Occur, FtsQuery)>),
    /// Rows of `positive`, their score lowered by `negative_boost` × `negative`'s.
    Boost {
        /// The query rows come from.
        positive: Box<FtsQuery>,
        /// The query that demotes.
        negative: Box<FtsQuery>,
        /// Weight of the demotion.
        negative_boost: f32,
    },
    /// The best of a match query on each column.
    MultiMatch {
        /// The query text.
        text: String,
        /// Columns.
        columns: Vec<String>,
        /// Per-column boosts (default 1).
        boosts: Vec<f32>,
        /// All tokens required.
        and: bool,
    },
}

impl FtsQuery {
    /// A query string as the reference reads one: wrapped in double quotes it is a
    /// phrase (`"was a puppy"`), else an OR match of its tokens.
    pub fn from_text(text: &str, column: Option<&str>) -> Self {
        let t = text.trim();
        match t.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            Some(inner) if t.len() >= 2 => FtsQuery::Phrase {
                column: column.map(str::to_string),
                text: inner.to_string(),
                slop: 0,
            },
            _ => Self::matching(text, column),
        }
    }

    /// A plain OR match of `text` on `column` (None: every indexed column).
    pub fn matching(text: &str, column: Option<&str>) -> Self {
        FtsQuery::Match {
            column: column.map(str::to_string),
            text: text.to_string(),
            and: false,
            boost: 1.0,
            fuzziness: 0,
            prefix_length: 0,
            max_expansions: 50,
        }
    }
}

/// One indexed column: the segments of its index and the rows they do not cover.
pub struct ColumnIndex {
    /// Column name.
    pub column: String,
    /// Every segment of the column's INVERTED index (one name); none for a flat
    /// search of a column without an index (pylance's default analyzer then).
    pub segments: Vec<Arc<InvertedSegment>>,
    /// Rows no segment covers (appended since, or every row of a flat search), with
    /// their text: searched by tokenizing them (already restricted to a prefilter's
    /// rows).
    pub unindexed: Vec<(u64, String)>,
}

/// Rows (address or stable id) with their tokens.
type TokenizedRows = Vec<(u64, Vec<Token>)>;

/// A match query's settings: [`FtsQuery::Match`] without its column.
#[derive(Clone, Copy)]
struct MatchArgs<'q> {
    text: &'q str,
    and: bool,
    boost: f32,
    fuzziness: u32,
    prefix_length: u32,
    max_expansions: usize,
}

impl<'q> MatchArgs<'q> {
    /// The column and settings of a match query (None for another kind).
    fn of(q: &'q FtsQuery) -> Option<(Option<&'q str>, Self)> {
        match q {
            FtsQuery::Match {
                column,
                text,
                and,
                boost,
                fuzziness,
                prefix_length,
                max_expansions,
            } => Some((
                column.as_deref(),
                Self {
                    text,
                    and: *and,
                    boost: *boost,
                    fuzziness: *fuzziness,
                    prefix_length: *prefix_length,
                    max_expansions: *max_expansions,
                },
            )),
            _ => None,
        }
    }
}

/// Scores of matching rows (row address or stable row id → score).
pub type Scores = HashMap<u64, f32>;

/// Runs `q` over `columns`; returns every matching row with its score (deleted rows
/// included: the caller drops them).
pub fn search(q: &FtsQuery, columns: &[ColumnIndex]) -> Result<Scores> {
    let mut ctx = Ctx {
        columns,
        analyzers: HashMap::new(),
        unindexed_tokens: HashMap::new(),
    };
    ctx.eval(q)
}

/// The best `limit` rows of `q` (all without a limit), best first (ties by row), among
/// the rows `keep` maps to an answer row (it drops deleted rows and rows a prefilter
/// rejects; it may also map stable row ids to addresses). A match or phrase query on
/// one column streams its scores into a bounded heap, skipping rows that cannot enter
/// it; the others are evaluated whole first.
pub fn search_top(
    q: &FtsQuery,
    columns: &[ColumnIndex],
    limit: Option<usize>,
    keep: &dyn Fn(u64) -> Option<u64>,
) -> Result<Vec<(u64, f32)>> {
    let mut ctx = Ctx {
        columns,
        analyzers: HashMap::new(),
        unindexed_tokens: HashMap::new(),
    };
    let top = std::cell::RefCell::new(Top::new(limit));
    let floor = || top.borrow().floor();
    let mut sink = |r: u64, s: f32| {
        let mut t = top.borrow_mut();
        // most rows cannot enter a full heap: skip the live / filter check
        if t.could_enter(s) {
            if let Some(a) = keep(r) {
                t.push(a, s);
            }
        }
    };
    match q {
        FtsQuery::Match { column, .. } if column.is_some() || columns.len() == 1 => {
            let (column, m) = MatchArgs::of(q).ok_or_else(|| invalid("not a match query"))?;
            let col = ctx.column_of(column)?;
            ctx.match_into(col, &m, Some(&floor), &mut sink)?;
        }
        FtsQuery::Phrase { column, text, slop } => {
            let col = ctx.column_of(column.as_deref())?;
            ctx.phrase_into(col, text, *slop, Some(&floor), &mut sink)?;
        }
        _ => {
            for (r, s) in ctx.eval(q)? {
                sink(r, s);
            }
        }
    }
    Ok(top.into_inner().finish())
}

/// A row and its score, ordered best first (higher score, then lower row).
#[derive(Clone, Copy, PartialEq)]
struct Ranked(f32, u64);

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    /// "Less" is better: a max-heap keeps the worst of the best on top.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

/// The best `limit` of the rows pushed (or all of them).
struct Top {
    limit: Option<usize>,
    heap: std::collections::BinaryHeap<Ranked>,
    all: Vec<Ranked>,
}

impl Top {
    fn new(limit: Option<usize>) -> Self {
        Self {
            limit,
            heap: std::collections::BinaryHeap::with_capacity(limit.unwrap_or(0).min(1 << 16) + 1),
            all: Vec::new(),
        }
    }

    fn push(&mut self, row: u64, score: f32) {
        let r = Ranked(score, row);
        match self.limit {
            None => self.all.push(r),
            Some(0) => {}
            Some(k) => {
                if self.heap.len() < k {
                    self.heap.push(r);
                } else if self.heap.peek().is_some_and(|w| r < *w) {
                    self.heap.pop();
                    self.heap.push(r);
                }
            }
        }
    }

    /// The score a row needs to enter (−∞ until the heap is full).
    fn floor(&self) -> f32 {
        match self.limit {
            Some(k) if self.heap.len() >= k => self.heap.peek().map_or(f32::NEG_INFINITY, |w| w.0),
            Some(0) => f32::INFINITY,
            _ => f32::NEG_INFINITY,
        }
    }

    /// Whether a row of `score` might be among the best (ties go by row, so equal scores
    /// may).
    fn could_enter(&self, score: f32) -> bool {
        match self.limit {
            Some(k) if self.heap.len() >= k => self.heap.peek().is_none_or(|w| score >= w.0),
            Some(_) | None => true,
        }
    }

    fn finish(self) -> Vec<(u64, f32)> {
        let mut v = if self.limit.is_some() {
            self.heap.into_vec()
        } else {
            self.all
        };
        v.sort_unstable();
        v.into_iter().map(|r| (r.1, r.0)).collect()
    }
}

struct Ctx<'a> {
    columns: &'a [ColumnIndex],
    analyzers: HashMap<(usize, bool, bool), Analyzer>,
    /// Per column: every unindexed row's tokens.
    unindexed_tokens: HashMap<usize, Arc<TokenizedRows>>,
}

fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidArgument { what: what.into() }
}

/// Statistics of one column: its index's, and those plus the unindexed rows'.
struct Stats {
    docs: u64,
    avgdl: f32,
    all_docs: u64,
    all_avgdl: f32,
}

impl<'a> Ctx<'a> {
    fn column_of(&self, name: Option<&str>) -> Result<usize> {
        match name {
            Some(n) => self
                .columns
                .iter()
                .position(|c| c.column == n)
                .ok_or_else(|| invalid(format!("column {n:?} has no INVERTED index"))),
            None if self.columns.len() == 1 => Ok(0),
            None => Err(invalid(
                "the query names no column and several columns are indexed: name one",
            )),
        }
    }

    /// The column's analyzer; without stemming for fuzzy expansion, and then for an
    /// ngram index one that keeps whole words (pylance expands the query's words, not
    /// its grams, against the index's grams).
    fn analyzer(&mut self, col: usize, stem: bool, words: bool) -> Result<&mut Analyzer> {
        let key = (col, stem, words);
        if !self.analyzers.contains_key(&key) {
            // a column without an index (a flat search) tokenizes as pylance 14's
            // default index would
            let mut params = match self.columns[col].segments.first() {
                Some(seg) => seg.params.clone(),
                None => super::tokenizer::AnalyzerParams::defaults(),
            };
            if words && params.base_tokenizer == "ngram" {
                params.base_tokenizer = WORDS_TOKENIZER.to_string();
            }
            let a = params.analyzer()?;
            let a = if stem { a } else { a.without_stemming()? };
            self.analyzers.insert(key, a);
        }
        self.analyzers
            .get_mut(&key)
            .ok_or_else(|| invalid("analyzer"))
    }

    fn tokens(&mut self, col: usize, text: &str, stem: bool) -> Result<Vec<Token>> {
        self.analyzer(col, stem, !stem)?.query_tokens(text)
    }

    fn unindexed(&mut self, col: usize) -> Result<Arc<TokenizedRows>> {
        if let Some(t) = self.unindexed_tokens.get(&col) {
            return Ok(t.clone());
        }
        let rows = &self.columns[col].unindexed;
        let mut out = Vec::with_capacity(rows.len());
        for (addr, text) in rows {
            let mut toks = Vec::new();
            self.analyzer(col, true, false)?.tokens(text, &mut toks);
            if !toks.is_empty() {
                out.push((*addr, toks));
            }
        }
        let out = Arc::new(out);
        self.unindexed_tokens.insert(col, out.clone());
        Ok(out)
    }

    fn stats(&mut self, col: usize) -> Result<Stats> {
        let segs = &self.columns[col].segments;
        let docs: u64 = segs.iter().map(|s| s.num_docs()).sum();
        let total: u64 = segs.iter().map(|s| s.total_tokens()).sum();
        let un = self.unindexed(col)?;
        let un_docs = un.len() as u64;
        let un_total: u64 = un.iter().map(|(_, t)| t.len() as u64).sum();
        let (all_docs, all_total) = (docs + un_docs, total + un_total);
        Ok(Stats {
            docs,
            avgdl: total as f32 / docs as f32,
            all_docs,
            all_avgdl: all_total as f32 / all_docs as f32,
        })
    }

    fn eval(&mut self, q: &FtsQuery) -> Result<Scores> {
        match q {
            FtsQuery::Match { .. } => {
                let (column, m) = MatchArgs::of(q).ok_or_else(|| invalid("not a match query"))?;
                if column.is_none() && self.columns.len() > 1 {
                    // every indexed column, best field
                    let mut best = Scores::new();
                    for col in 0..self.columns.len() {
                        max_into(&mut best, self.match_column(col, &m)?);
                    }
                    return Ok(best);
                }
                let col = self.column_of(column)?;
                self.match_column(col, &m)
            }
            FtsQuery::MultiMatch {
                text,
                columns,
                boosts,
                and,
            } => {
                let mut best = Scores::new();
                for (i, c) in columns.iter().enumerate() {
                    let col = self.column_of(Some(c))?;
                    let boost = boosts.get(i).copied().unwrap_or(1.0);
                    let m = MatchArgs {
                        text,
                        and: *and,
                        boost,
                        fuzziness: 0,
                        prefix_length: 0,
                        max_expansions: 50,
                    };
                    max_into(&mut best, self.match_column(col, &m)?);
                }
                Ok(best)
            }
            FtsQuery::Phrase { column, text, slop } => {
                let col = self.column_of(column.as_deref())?;
                let mut out = Scores::new();
                self.phrase_into(col, text, *slop, None, &mut |r, s| {
                    out.insert(r, s);
                })?;
                Ok(out)
            }
            FtsQuery::Boolean(clauses) => {
                if !clauses.iter().any(|(o, _)| *o != Occur::MustNot) {
                    return Err(invalid(
                        "a boolean query needs at least one should or must clause",
                    ));
                }
                let mut results = Vec::with_capacity(clauses.len());
                for (o, c) in clauses {
                    results.push((*o, self.eval(c)?));
                }
                let musts: Vec<&Scores> = results
                    .iter()
                    .filter(|(o, _)| *o == Occur::Must)
                    .map(|(_, s)| s)
                    .collect();
                let mut candidates: HashSet<u64> = match musts.split_first() {
                    Some((first, rest)) => first
                        .keys()
                        .filter(|r| rest.iter().all(|m| m.contains_key(r)))
                        .copied()
                        .collect(),
                    None => results
                        .iter()
                        .filter(|(o, _)| *o == Occur::Should)
                        .flat_map(|(_, s)| s.keys().copied())
                        .collect(),
                };
                for (o, s) in &results {
                    if *o == Occur::MustNot {
                        candidates.retain(|r| !s.contains_key(r));
                    }
                }
                let mut out = Scores::with_capacity(candidates.len());
                for r in candidates {
                    let mut score = 0f32;
                    for (o, s) in &results {
                        if *o != Occur::MustNot {
                            if let Some(v) = s.get(&r) {
                                score += *v;
                            }
                        }
                    }
                    out.insert(r, score);
                }
                Ok(out)
            }
            FtsQuery::Boost {
                positive,
                negative,
                negative_boost,
            } => {
                let pos = self.eval(positive)?;
                let neg = self.eval(negative)?;
                Ok(pos
                    .into_iter()
                    .map(|(r, s)| match neg.get(&r) {
                        Some(n) => (r, s - negative_boost * n),
                        None => (r, s),
                    })
                    .collect())
            }
        }
    }

    fn match_column(&mut self, col: usize, m: &MatchArgs<'_>) -> Result<Scores> {
        let mut out = Scores::new();
        self.match_into(col, m, None, &mut |r, s| {
            out.insert(r, s);
        })?;
        Ok(out)
    }

    /// The posting lists a match query reads from the column's index: its tokens (each
    /// fuzzy token as its expansions), per partition the lists found there, and each
    /// token's document count over all segments and partitions. `None` for a query
    /// without tokens.
    fn prepare(
        &mut self,
        col: usize,
        text: &str,
        fuzziness: u32,
        prefix_length: u32,
        max_expansions: usize,
    ) -> Result<Option<Prepared>> {
        let query = self.tokens(col, text, true)?;
        if query.is_empty() {
            return Ok(None);
        }
        // fuzzy queries expand the query's tokens without stemming
        let plain = if fuzziness > 0 {
            self.tokens(col, text, false)?
        } else {
            Vec::new()
        };
        // Index part: tokens deduplicated on (text, position); each fuzzy query token
        // becomes its expansions.
        let terms: Vec<(u32, String, usize)> = if fuzziness > 0 {
            // `max_expansions` bounds the expansions of all query tokens together,
            // taken token by token in query order (each token's in byte order).
            let mut t = Vec::new();
            for (i, tok) in plain.iter().enumerate() {
                let room = max_expansions.saturating_sub(t.len());
                if room == 0 {
                    break;
                }
                for e in self.expand(col, &tok.text, fuzziness, prefix_length, room)? {
                    t.push((tok.position, e, i));
                }
            }
            t
        } else {
            let mut seen = HashSet::new();
            query
                .iter()
                .filter(|t| seen.insert((t.text.clone(), t.position)))
                .map(|t| (t.position, t.text.clone(), distinct_index(&query, &t.text)))
                .collect()
        };
        let required: usize = if fuzziness > 0 {
            plain.len()
        } else {
            query
                .iter()
                .map(|t| t.text.as_str())
                .collect::<BTreeSet<_>>()
                .len()
        };
        let stats = self.stats(col)?;
        let segs = self.columns[col].segments.clone();
        let mut n_of: HashMap<String, u64> = HashMap::new();
        let mut parts = Vec::new();
        for (si, seg) in segs.iter().enumerate() {
            let quantized = seg.format >= 3 && seg.layout.block == 256;
            for (pi, part) in seg.partitions.iter().enumerate() {
                // each distinct token's list once (a token may recur at other positions)
                let mut lists_of: HashMap<&str, (u32, Arc<Postings>)> = HashMap::new();
                for (_, term, _) in &terms {
                    if lists_of.contains_key(term.as_str()) {
                        continue;
                    }
                    if let Some(id) = part.token_id(term) {
                        let p = part.postings(seg, id)?;
                        *n_of.entry(term.clone()).or_default() += p.docs.len() as u64;
                        lists_of.insert(term.as_str(), (id, p));
                    }
                }
                let mut lists = Vec::new();
                for (pos, term, which) in &terms {
                    if let Some((id, p)) = lists_of.get(term.as_str()) {
                        lists.push(PartTerm {
                            pos: *pos,
                            id: *id,
                            text: term.clone(),
                            which: *which,
                            postings: p.clone(),
                        });
                    }
                }
                lists.sort_by_key(|t| (t.pos, t.id));
                parts.push(PartLists {
                    seg: si,
                    part: pi,
                    quantized,
                    terms: lists,
                });
            }
        }
        Ok(Some(Prepared {
            query,
            required,
            stats,
            n_of,
            segs,
            parts,
        }))
    }

    /// A match query on one column: every matching row and its score handed to `sink`
    /// (with `floor`, a top-k search: rows that cannot score `floor()` may be skipped).
    fn match_into(
        &mut self,
        col: usize,
        m: &MatchArgs<'_>,
        floor: Option<&dyn Fn() -> f32>,
        sink: &mut dyn FnMut(u64, f32),
    ) -> Result<()> {
        let ngram = self.columns[col]
            .segments
            .first()
            .is_some_and(|s| s.params.base_tokenizer == "ngram");
        let (and, boost, fuzziness) = (m.and && !ngram, m.boost, m.fuzziness);
        let Some(pre) = self.prepare(col, m.text, fuzziness, m.prefix_length, m.max_expansions)?
        else {
            return Ok(());
        };
        for pl in &pre.parts {
            let part = &pre.segs[pl.seg].partitions[pl.part];
            let weights = pre.weights(pl, part);
            let terms = pre.terms(pl, &weights);
            let emit = &mut |d: u32, s: f32| sink(part.row_ids[d as usize], s);
            match (floor, terms.as_slice()) {
                // no list, no match
                (_, []) => {}
                // AND of exact tokens: the documents in every list
                _ if and && fuzziness == 0 => {
                    let held: BTreeSet<usize> = pl.terms.iter().map(|t| t.which).collect();
                    if held.len() == pre.required {
                        intersect(&terms, floor.map(|f| (f, boost)), &mut |d, at| {
                            emit(d, exact(&terms, at) * boost)
                        });
                    }
                }
                _ if and => dense_match(&terms, pl, pre.required, true, boost, part, sink),
                // One term and a top-k search: its documents in groups, best bound
                // first, until no group can reach the k-th score.
                (Some(floor), [t]) if boost > 0.0 => {
                    let bounds = &weights[0].groups;
                    let mut order: Vec<usize> = (0..bounds.len()).collect();
                    order.sort_unstable_by(|a, b| bounds[*b].total_cmp(&bounds[*a]));
                    for g in order {
                        if (t.idf * bounds[g]) * boost < floor() {
                            break;
                        }
                        let range = g * BOUND_GROUP..((g + 1) * BOUND_GROUP).min(t.docs.len());
                        for (&d, &x) in t.docs[range.clone()].iter().zip(&t.weights[range]) {
                            let s = 0f32 + t.idf * x;
                            emit(d, s * boost);
                        }
                    }
                }
                (Some(floor), _) if boost > 0.0 => or_top(&terms, boost, floor, emit),
                _ => dense_match(&terms, pl, pre.required, false, boost, part, sink),
            }
        }
        self.unindexed_into(col, &pre, and, boost, sink)
    }

    /// Rows no segment covers: every query token (stemmed, exact; also for a fuzzy
    /// query), scored with the combined statistics.
    fn unindexed_into(
        &mut self,
        col: usize,
        pre: &Prepared,
        and: bool,
        boost: f32,
        sink: &mut dyn FnMut(u64, f32),
    ) -> Result<()> {
        let un = self.unindexed(col)?;
        if un.is_empty() {
            return Ok(());
        }
        let query = &pre.query;
        let mut n_all: HashMap<&str, u64> = HashMap::new();
        for t in query {
            if n_all.contains_key(t.text.as_str()) {
                continue;
            }
            let extra = un
                .iter()
                .filter(|(_, toks)| toks.iter().any(|x| x.text == t.text))
                .count() as u64;
            n_all.insert(&t.text, pre.n_of.get(&t.text).copied().unwrap_or(0) + extra);
        }
        let distinct: BTreeSet<&str> = query.iter().map(|t| t.text.as_str()).collect();
        for (addr, toks) in un.iter() {
            let mut score = 0f32;
            let mut hit = false;
            for t in query {
                let f = toks.iter().filter(|x| x.text == t.text).count() as u32;
                if f > 0 {
                    hit = true;
                    score += idf(n_all[t.text.as_str()], pre.stats.all_docs)
                        * doc_weight(f, toks.len() as f32, pre.stats.all_avgdl);
                }
            }
            if !hit {
                continue;
            }
            if and && !distinct.iter().all(|d| toks.iter().any(|x| x.text == *d)) {
                continue;
            }
            sink(*addr, score * boost);
        }
        Ok(())
    }

    /// The index tokens (all segments and partitions) within `fuzziness` edits of
    /// `token` sharing its first `prefix` characters: the first `max` in byte order.
    fn expand(
        &self,
        col: usize,
        token: &str,
        fuzziness: u32,
        prefix: u32,
        max: usize,
    ) -> Result<Vec<String>> {
        let lev = fst::automaton::Levenshtein::new(token, fuzziness)
            .map_err(|e| invalid(format!("fuzzy query {token:?}: {e}")))?;
        let head: String = token.chars().take(prefix as usize).collect();
        let mut all = BTreeSet::new();
        for seg in &self.columns[col].segments {
            for part in &seg.partitions {
                for (t, _) in part.tokens_matching(&lev) {
                    if t.starts_with(&head) {
                        all.insert(t);
                    }
                }
            }
        }
        Ok(all.into_iter().take(max).collect())
    }

    /// A phrase query on one column: the rows holding every query token (scored as
    /// the AND of them) whose positions hold the tokens in order within `slop`, handed
    /// to `sink`. With `floor` (a top-k search) the candidates are checked best score
    /// first and only while they can reach `floor()`.
    fn phrase_into(
        &mut self,
        col: usize,
        text: &str,
        slop: u32,
        floor: Option<&dyn Fn() -> f32>,
        sink: &mut dyn FnMut(u64, f32),
    ) -> Result<()> {
        let Some(pre) = self.prepare(col, text, 0, 0, 0)? else {
            return Ok(());
        };
        let query = &pre.query;
        let distinct: Vec<&str> = {
            let mut d: Vec<&str> = Vec::new();
            for t in query {
                if !d.contains(&t.text.as_str()) {
                    d.push(&t.text);
                }
            }
            d
        };
        // the query's tokens by position (stable: one position's tokens in query order)
        let mut by_position: Vec<&Token> = query.iter().collect();
        by_position.sort_by_key(|t| t.position);
        let qi: Vec<usize> = by_position
            .iter()
            .map(|t| distinct.iter().position(|d| *d == t.text).unwrap_or(0))
            .collect();
        let qpos: Vec<u32> = by_position.iter().map(|t| t.position).collect();
        let k = distinct.len();
        // Candidates: the documents holding every token (per partition, in document
        // order), scored as the AND of them; each distinct token's index in its list.
        struct PartRef<'p> {
            seg: &'p InvertedSegment,
            part: &'p Partition,
            pl: &'p PartLists,
            first: Vec<usize>,
            data: Vec<Arc<PositionData>>,
        }
        let mut parts: Vec<PartRef> = Vec::new();
        let mut cands: Vec<(f32, u32, u32)> = Vec::new(); // score, part, candidate no.
        let mut at_of: Vec<u32> = Vec::new(); // k per candidate
        let mut docs_of: Vec<u32> = Vec::new();
        for pl in &pre.parts {
            let seg = pre.segs[pl.seg].as_ref();
            let part = &seg.partitions[pl.part];
            let first: Vec<usize> = (0..k)
                .filter_map(|w| pl.terms.iter().position(|t| t.which == w))
                .collect();
            if first.len() < k || k == 0 {
                continue;
            }
            let weights = pre.weights(pl, part);
            let terms = pre.terms(pl, &weights);
            let pi = parts.len() as u32;
            intersect(&terms, None, &mut |d, at| {
                cands.push((exact(&terms, at), pi, docs_of.len() as u32));
                docs_of.push(d);
                at_of.extend(first.iter().map(|&t| at[t].unwrap_or(0) as u32));
            });
            let mut data = Vec::with_capacity(k);
            for &t in &first {
                let term = &pl.terms[t];
                data.push(part.position_data(seg, term.id, &term.postings)?);
            }
            parts.push(PartRef {
                seg,
                part,
                pl,
                first,
                data,
            });
        }
        // checked best score first (a few dozen at a time) while they can reach the
        // caller's top rows; without a floor, all of them
        let better = |x: &(f32, u32, u32), y: &(f32, u32, u32)| {
            y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2)))
        };
        // each distinct token's positions in the candidate checked
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); k];
        let mut rest: &mut [(f32, u32, u32)] = &mut cands;
        'chunks: while !rest.is_empty() {
            let take = if floor.is_some() {
                rest.len().min(64)
            } else {
                rest.len()
            };
            if take < rest.len() {
                rest.select_nth_unstable_by(take - 1, better);
            }
            let (chunk, after) = std::mem::take(&mut rest).split_at_mut(take);
            if floor.is_some() {
                chunk.sort_unstable_by(better);
            }
            for &(score, pi, c) in chunk.iter() {
                if floor.is_some_and(|f| score < f()) {
                    break 'chunks;
                }
                let pr = &parts[pi as usize];
                let c = c as usize;
                for (w, &t) in pr.first.iter().enumerate() {
                    let term = &pr.pl.terms[t];
                    pr.part.doc_positions(
                        pr.seg,
                        term.id,
                        &term.postings,
                        &pr.data[w],
                        at_of[c * k + w] as usize,
                        &mut lists[w],
                    )?;
                }
                let pos: Vec<&[u32]> = lists.iter().map(Vec::as_slice).collect();
                if phrase_at(&qpos, &qi, &pos, slop) {
                    sink(pr.part.row_ids[docs_of[c] as usize], score);
                }
            }
            rest = after;
        }
        // unindexed rows: their AND score, positions from their tokens
        let un = self.unindexed(col)?;
        if !un.is_empty() {
            let mut and = HashMap::new();
            self.unindexed_into(col, &pre, true, 1.0, &mut |r, s| {
                and.insert(r, s);
            })?;
            for (addr, toks) in un.iter() {
                let Some(&score) = and.get(addr) else {
                    continue;
                };
                let lists: Vec<Vec<u32>> = distinct
                    .iter()
                    .map(|d| {
                        toks.iter()
                            .filter(|t| t.text == *d)
                            .map(|t| t.position)
                            .collect()
                    })
                    .collect();
                let pos: Vec<&[u32]> = lists.iter().map(Vec::as_slice).collect();
                if phrase_at(&qpos, &qi, &pos, slop) {
                    sink(*addr, score);
                }
            }
        }
        Ok(())
    }
}

impl Prepared {
    /// Each list's BM25 weights in partition `part` (cached by the partition).
    fn weights(&self, pl: &PartLists, part: &Partition) -> Vec<Arc<Weights>> {
        pl.terms
            .iter()
            .map(|t| part.weights(t.id, &t.postings, self.stats.avgdl, pl.quantized))
            .collect()
    }

    /// The partition's lists as scored terms, in `pl`'s order (the order scores are
    /// summed in).
    fn terms<'a>(&self, pl: &'a PartLists, weights: &'a [Arc<Weights>]) -> Vec<Term<'a>> {
        pl.terms
            .iter()
            .zip(weights)
            .map(|(t, w)| Term {
                docs: &t.postings.docs,
                weights: &w.per_doc,
                idf: idf(self.n_of[&t.text], self.stats.docs),
                max: w.max,
                groups: &w.groups,
            })
            .collect()
    }
}

/// The lists of a match query ([`Ctx::prepare`]).
struct Prepared {
    query: Vec<Token>,
    /// Distinct query tokens an AND query needs.
    required: usize,
    stats: Stats,
    /// Documents holding each token, over all segments and partitions.
    n_of: HashMap<String, u64>,
    segs: Vec<Arc<InvertedSegment>>,
    parts: Vec<PartLists>,
}

/// A partition's lists of the query's tokens, in (position, token id) order: the
/// order scores are summed in.
struct PartLists {
    seg: usize,
    part: usize,
    quantized: bool,
    terms: Vec<PartTerm>,
}

struct PartTerm {
    pos: u32,
    id: u32,
    text: String,
    /// Which distinct query token (or fuzzy query token) the list stands for.
    which: usize,
    postings: Arc<Postings>,
}

/// A match query over one partition by dense accumulation (terms added in order);
/// matched documents listed as they come when they are few, else found by a sweep
/// (cheaper than a list of most of the partition).
fn dense_match(
    terms: &[Term],
    pl: &PartLists,
    required: usize,
    and: bool,
    boost: f32,
    part: &Partition,
    sink: &mut dyn FnMut(u64, f32),
) {
    let n = part.row_ids.len();
    let postings: usize = terms.iter().map(|t| t.docs.len()).sum();
    let sweep = postings > n / 8;
    let mut score = vec![0f32; n];
    let mut mask = vec![0u64; if and || !sweep { n } else { 0 }];
    let mut seen = vec![false; if sweep { n } else { 0 }];
    let mut touched: Vec<u32> = Vec::new();
    for (t, pt) in terms.iter().zip(&pl.terms) {
        let bit = if pt.which < 63 { 1u64 << pt.which } else { 0 };
        for (&d, &x) in t.docs.iter().zip(t.weights) {
            let du = d as usize;
            score[du] += t.idf * x;
            if sweep {
                seen[du] = true;
            }
            if !mask.is_empty() {
                if mask[du] == 0 && !sweep {
                    touched.push(d);
                }
                mask[du] |= bit | (1 << 63);
            }
        }
    }
    let need = required.min(63);
    let mut emit = |du: usize| {
        if and && ((mask[du] & !(1 << 63)).count_ones() as usize) < need {
            return;
        }
        sink(part.row_ids[du], score[du] * boost);
    };
    if sweep {
        for (du, _) in seen.iter().enumerate().filter(|(_, s)| **s) {
            emit(du);
        }
    } else {
        for d in touched {
            emit(d as usize);
        }
    }
}

/// Index of `text` among the query's distinct tokens (first-appearance order).
fn distinct_index(query: &[Token], text: &str) -> usize {
    let mut seen: Vec<&str> = Vec::new();
    for t in query {
        if !seen.contains(&t.text.as_str()) {
            seen.push(&t.text);
        }
        if t.text == text {
            break;
        }
    }
    seen.iter().position(|s| *s == text).unwrap_or(0)
}

/// Whether a row's positions hold the query tokens in order, each gap exceeding the
/// query's own by 0..=slop. `qpos`: the query tokens' positions, ascending (tokens at
/// one position — a jieba word and its parts, an n-gram's grams — in query order);
/// `qi`: each one's distinct token; `pos`: the row's positions of each distinct token,
/// ascending. As pylance 14: each token's position in the row less its position in the
/// query never falls from one token to the next and rises by at most `slop`.
fn phrase_at(qpos: &[u32], qi: &[usize], pos: &[&[u32]], slop: u32) -> bool {
    fn from(i: usize, at: u32, qpos: &[u32], qi: &[usize], pos: &[&[u32]], slop: u32) -> bool {
        if i == qpos.len() {
            return true;
        }
        let gap = qpos[i].saturating_sub(qpos[i - 1]);
        let list = pos.get(qi[i]).copied().unwrap_or_default();
        // candidates lie in at + gap ..= at + gap + slop
        let lo = at.saturating_add(gap);
        let start = list.partition_point(|&p| p < lo);
        let last = u64::from(at) + u64::from(gap) + u64::from(slop);
        list[start..]
            .iter()
            .take_while(|&&p| u64::from(p) <= last)
            .any(|&p| from(i + 1, p, qpos, qi, pos, slop))
    }
    let Some(first) = qi.first().and_then(|&d| pos.get(d)) else {
        return false;
    };
    first.iter().any(|&p| from(1, p, qpos, qi, pos, slop))
}

fn max_into(best: &mut Scores, s: Scores) {
    for (r, v) in s {
        let e = best.entry(r).or_insert(v);
        if v > *e {
            *e = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_worked_example() {
        // docs/fts-index-format.md §8.1: N 6, 15 tokens, `dog` in 3 documents
        let w = idf(3, 6);
        assert_eq!(w, std::f32::consts::LN_2);
        let avgdl = 15f32 / 6f32;
        assert_eq!(w * doc_weight(3, 3.0, avgdl), 1.044_468_4);
        assert_eq!(w * doc_weight(1, 1.0, avgdl), 0.918_628_75);
        assert_eq!(w * doc_weight(1, 3.0, avgdl), 0.640_724_3);
    }

    #[test]
    fn length_codes() {
        for v in [0u32, 7, 8, 9, 15, 16, 100, 1000, 65_535, u32::MAX] {
            let c = quantize(v);
            assert!(dequantize(c) <= v, "{v}");
        }
        assert_eq!(quantize(7), 7);
        assert_eq!(dequantize(quantize(8)), 8);
    }
}
