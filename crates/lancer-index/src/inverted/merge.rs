//! Merging INVERTED segments built apart into one (a distributed full-text build's
//! per-worker segments; reference "Distributed indexing", lines ~7862–8438:
//! `merge_existing_index_segments` supports inverted segments, and pylance 14 merges
//! them into one partition). Every partition's documents, token map and posting lists
//! (frequencies and positions) are decoded and laid out as one build over the same rows
//! lays them out: documents in row order, token ids in order of first appearance (a
//! token first seen in document `d` ranks by `d`, then by its id in `d`'s partition,
//! which is its place in `d`), each list's documents ascending. The merged partition is
//! then written by the builder ([`InvertedBuilder`]), so its files are those one build
//! of the same rows writes. Nothing is tokenized again.

use std::collections::HashMap;

use lancer_format::container::FileVersion;

use super::build::{BuiltInverted, InvertedBuilder, List};
use super::segment::InvertedSegment;
use super::tokenizer::AnalyzerParams;
use crate::segment::corrupt;
use crate::{IndexError, Result};

fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidArgument { what: what.into() }
}

/// Where one partition's token sits in the merge: its first document (merged order)
/// and its id in the partition.
struct Seen {
    first: u32,
    local: u32,
    /// (partition, token id in it), every partition holding the token.
    at: Vec<(usize, u32)>,
}

/// Merges `segments` (INVERTED segments of one column, over disjoint rows, built with
/// the same analyzer settings) into one segment's files, written as Lance files of
/// `version`.
pub fn merge(segments: &[InvertedSegment], version: FileVersion) -> Result<BuiltInverted> {
    let first = segments
        .first()
        .ok_or_else(|| invalid("no INVERTED segments to merge"))?;
    let settings = |s: &InvertedSegment| -> Result<serde_json::Value> {
        serde_json::from_str(&s.params_json)
            .map_err(|e| corrupt(&s.label, format!("analyzer params: {e}")))
    };
    let want = settings(first)?;
    for s in &segments[1..] {
        if settings(s)? != want {
            return Err(invalid(format!(
                "segments {} and {} were built with different analyzer settings: only \
                 segments of one configuration merge; commit these side by side",
                first.label, s.label
            )));
        }
        if s.field_id != first.field_id {
            return Err(invalid(format!(
                "segments {} and {} index different columns",
                first.label, s.label
            )));
        }
    }
    let mut params = AnalyzerParams::from_json(&first.params_json)
        .map_err(|e| corrupt(&first.label, format!("analyzer params: {e}")))?;
    params.models = first.params.models.clone();
    let with_position = params.with_position;

    // every partition of every segment, with the segment it belongs to
    let parts: Vec<(&InvertedSegment, &super::segment::Partition)> = segments
        .iter()
        .flat_map(|s| s.partitions.iter().map(move |p| (s, p)))
        .collect();

    // documents in row order; each partition's documents mapped to their merged place
    let mut docs: Vec<(u64, usize, u32)> = Vec::new();
    for (k, (_, p)) in parts.iter().enumerate() {
        docs.extend(
            p.row_ids
                .iter()
                .enumerate()
                .map(|(d, &row)| (row, k, d as u32)),
        );
    }
    if docs.len() > u32::MAX as usize {
        return Err(invalid("more than 2^32 documents in one merged segment"));
    }
    docs.sort_unstable();
    if let Some(w) = docs.windows(2).find(|w| w[0].0 == w[1].0) {
        let (a, b) = (parts[w[0].1].0, parts[w[1].1].0);
        return Err(invalid(format!(
            "segments {} and {} both index row {}: merged segments must cover disjoint \
             fragments",
            a.label, b.label, w[0].0
        )));
    }
    let mut place: Vec<Vec<u32>> = parts
        .iter()
        .map(|(_, p)| vec![0; p.row_ids.len()])
        .collect();
    let mut row_ids = Vec::with_capacity(docs.len());
    let mut lengths = Vec::with_capacity(docs.len());
    for (g, &(row, k, d)) in docs.iter().enumerate() {
        place[k][d as usize] = g as u32;
        row_ids.push(row);
        lengths.push(parts[k].1.lengths[d as usize]);
    }

    // each partition's postings, decoded once; tokens ranked by first appearance
    let mut decoded: Vec<Vec<(super::posting::Postings, Vec<Vec<u32>>)>> = Vec::new();
    let mut seen: HashMap<String, Seen> = HashMap::new();
    for (k, (seg, p)) in parts.iter().enumerate() {
        let n = p.num_tokens();
        let listed = p.tokens_matching(fst::automaton::AlwaysMatch);
        if n as usize > listed.len() {
            return Err(corrupt(
                &seg.label,
                format!("{n} token ids for a token map of {}", listed.len()),
            ));
        }
        let mut names: Vec<Option<String>> = vec![None; n as usize];
        for (token, id) in listed {
            if let Some(slot) = names.get_mut(id as usize) {
                if slot.replace(token).is_some() {
                    return Err(corrupt(&seg.label, format!("token id {id} given twice")));
                }
            }
        }
        let mut lists = Vec::with_capacity(n as usize);
        let all = p.all_postings(seg)?;
        for ((id, name), postings) in names.into_iter().enumerate().zip(all) {
            let id = id as u32;
            let name =
                name.ok_or_else(|| corrupt(&seg.label, format!("token id {id} has no token")))?;
            let positions = if with_position {
                p.positions(seg, id, &postings)?
            } else {
                Vec::new()
            };
            if let Some(&d) = postings.docs.first() {
                let at = place[k]
                    .get(d as usize)
                    .copied()
                    .ok_or_else(|| corrupt(&seg.label, format!("token id {id}: document {d}")))?;
                let e = seen.entry(name).or_insert(Seen {
                    first: u32::MAX,
                    local: 0,
                    at: Vec::new(),
                });
                if at < e.first {
                    e.first = at;
                    e.local = id;
                }
                e.at.push((k, id));
            }
            lists.push((postings, positions));
        }
        decoded.push(lists);
    }
    let mut order: Vec<(String, Seen)> = seen.into_iter().collect();
    order.sort_unstable_by_key(|(_, s)| (s.first, s.local));

    let mut tokens = Vec::with_capacity(order.len());
    let mut lists = Vec::with_capacity(order.len());
    for (name, s) in order {
        let mut entries: Vec<(u32, u32, &[u32])> = Vec::new();
        for &(k, id) in &s.at {
            let (postings, positions) = &decoded[k][id as usize];
            for (i, (&d, &f)) in postings.docs.iter().zip(&postings.freqs).enumerate() {
                let g = place[k].get(d as usize).copied().ok_or_else(|| {
                    corrupt(&parts[k].0.label, format!("token {name:?}: document {d}"))
                })?;
                let pos = positions.get(i).map_or(&[][..], Vec::as_slice);
                if with_position && pos.len() != f as usize {
                    return Err(corrupt(
                        &parts[k].0.label,
                        format!("token {name:?}: {} positions for frequency {f}", pos.len()),
                    ));
                }
                entries.push((g, f, pos));
            }
        }
        if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
            entries.sort_unstable_by_key(|e| e.0);
        }
        let mut list = List::default();
        for (g, f, pos) in entries {
            list.docs.push(g);
            list.freqs.push(f);
            list.positions.extend_from_slice(pos);
        }
        tokens.push(name);
        lists.push(list);
    }
    InvertedBuilder::from_merged(params, tokens, lists, row_ids, lengths)?.finish(version)
}
