//! HNSW sub-indexes of IVF vector indexes (`IVF_HNSW_FLAT`, `IVF_HNSW_SQ`,
//! `IVF_HNSW_PQ`), as pylance 11–14 write them: one graph per IVF partition over the
//! partition's rows of `auxiliary.idx` (format guide "Vector Indices" → Index File →
//! HNSW, lines ~2504–2563; HNSW notes ~14660–14840).
//!
//! On disk (`index.idx`): the rows `__vector_id: uint32`, `__neighbors: list<uint32>`,
//! `_distance: list<float32>`, partition after partition (the index file's own IVF
//! model in global buffer `lance:ivf` gives each partition's rows), and inside a
//! partition level after level from level 0; the schema metadata key `lance:hnsw` is a
//! JSON list with one string per partition: `{"entry_point", "params": {"max_level",
//! "m", "ef_construction", "prefetch_distance"}, "level_offsets"}` (empty for an empty
//! partition). `level_offsets[l]..level_offsets[l + 1]` are level `l`'s rows; level 0
//! holds every node of the partition in node order, node `i` being row `i` of the
//! partition in the auxiliary file; a node of level `l > 0` appears on every level
//! below.
//!
//! Search of one partition: greedy descent (one best neighbour at a time) from the
//! entry point over the levels above 0, then a beam search of `ef` on level 0 — a
//! neighbour nearer than the current worst of `ef` results (or any while fewer) joins
//! the candidates; the results only take nodes the caller keeps. When fewer than a tenth of the partition's nodes are kept, the kept
//! ones are scored directly instead (a graph walk would find too few of them). These
//! rules are the reference's, so that answers agree with pylance's on the same index.
//!
//! Every offset, id and neighbour read from the file is checked when the graph is
//! loaded: a search never indexes out of range and never loops (each node is visited
//! once per query).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::Array;
use lancer_format::reader::FileReader;

use crate::{IndexError, Result};

mod build;

pub use build::{
    build_graph, draw_levels, entry_point, graph_schema, BuiltGraph, GraphFile, HnswBuild, Space,
    LEVEL_SEED, MIN_M,
};

/// Kept nodes an ACORN search starts from besides the entry point (the reference's
/// seed count).
pub const ACORN_SEEDS: usize = 16;

/// The schema metadata key of the per-partition HNSW metadata.
pub const HNSW_METADATA_KEY: &str = "lance:hnsw";

fn corrupt(index: &str, what: impl Into<String>) -> IndexError {
    IndexError::Corrupt {
        index: index.to_string(),
        what: what.into(),
    }
}

/// The build settings an HNSW graph records (`params` of its metadata).
#[derive(Clone, Debug, PartialEq)]
pub struct HnswParams {
    /// Levels the graph may have.
    pub max_level: u16,
    /// Neighbours per node above level 0 (twice that on level 0).
    pub m: usize,
    /// Beam width while building.
    pub ef_construction: usize,
    /// How far ahead the builder prefetched vectors (recorded, unused here).
    pub prefetch_distance: Option<usize>,
}

/// The metadata of one partition's graph, as stored.
#[derive(Clone, Debug)]
pub struct HnswMetadata {
    /// Where searches start (a node of the top level).
    pub entry_point: u32,
    /// Build settings.
    pub params: HnswParams,
    /// Row offsets of the levels within the partition's rows, plus the end.
    pub level_offsets: Vec<usize>,
}

impl HnswMetadata {
    /// Parses the stored JSON.
    pub fn parse(json: &str) -> std::result::Result<Self, String> {
        let v: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let uint = |x: &serde_json::Value, what: &str| {
            x.as_u64()
                .ok_or_else(|| format!("{what} is not an unsigned integer"))
        };
        let p = &v["params"];
        let params = HnswParams {
            max_level: u16::try_from(uint(&p["max_level"], "params.max_level")?)
                .map_err(|_| "params.max_level past 65535".to_string())?,
            m: uint(&p["m"], "params.m")? as usize,
            ef_construction: uint(&p["ef_construction"], "params.ef_construction")? as usize,
            prefetch_distance: p["prefetch_distance"].as_u64().map(|x| x as usize),
        };
        let entry_point = u32::try_from(uint(&v["entry_point"], "entry_point")?)
            .map_err(|_| "entry_point past 2^32".to_string())?;
        let level_offsets = v["level_offsets"]
            .as_array()
            .ok_or("level_offsets is not a list")?
            .iter()
            .map(|x| uint(x, "a level offset").map(|x| x as usize))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Self {
            entry_point,
            params,
            level_offsets,
        })
    }

    /// The JSON form pylance writes (and reports in index statistics).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "entry_point": self.entry_point,
            "params": {
                "max_level": self.params.max_level,
                "m": self.params.m,
                "ef_construction": self.params.ef_construction,
                "prefetch_distance": self.params.prefetch_distance,
            },
            "level_offsets": self.level_offsets,
        })
    }
}

/// One level of a graph: the nodes on it (ascending) and their neighbour lists.
#[derive(Debug, Default)]
struct Level {
    /// Node ids on this level, ascending (level 0: empty, meaning every node).
    nodes: Vec<u32>,
    /// `offsets[i]..offsets[i + 1]` are the neighbours of the `i`-th node.
    offsets: Vec<u32>,
    neighbors: Vec<u32>,
}

impl Level {
    /// The neighbours of `node` on this level (none when it is not on the level).
    fn neighbors(&self, node: u32, level0: bool) -> &[u32] {
        let i = if level0 {
            node as usize
        } else {
            match self.nodes.binary_search(&node) {
                Ok(i) => i,
                Err(_) => return &[],
            }
        };
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.neighbors[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// One partition's HNSW graph.
#[derive(Debug)]
pub struct Graph {
    /// The metadata as stored.
    pub meta: HnswMetadata,
    /// Nodes of the graph (the partition's rows).
    pub len: usize,
    /// Level 0 first.
    levels: Vec<Level>,
}

/// A node with its distance, ordered by distance (then id, so orders are total).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    /// Distance to the query.
    pub dist: f32,
    /// Node id (row within the partition).
    pub id: u32,
}

/// The positions of `keep`'s true entries, ascending: eight at a time (a word of eight
/// bools, each byte 0 or 1, its set bytes found by their bits) — a per-entry scan of a
/// million-node mask took a quarter of a directly scored search (measured with
/// `examples/kept_scoring.rs`).
pub fn kept_ids(keep: &[bool]) -> Vec<u32> {
    let mut out = Vec::with_capacity(keep.len() / 8);
    let chunks = keep.chunks_exact(8);
    let rest = chunks.remainder();
    for (c, ch) in chunks.enumerate() {
        let mut w = u64::from_le_bytes(std::array::from_fn(|i| u8::from(ch[i])));
        while w != 0 {
            out.push((c * 8) as u32 + w.trailing_zeros() / 8);
            w &= w - 1;
        }
    }
    let base = keep.len() - rest.len();
    out.extend(
        rest.iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .map(|(i, _)| (base + i) as u32),
    );
    out
}
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scored {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.dist.total_cmp(&o.dist).then(self.id.cmp(&o.id))
    }
}

/// What a graph search was asked: results wanted and the beam width.
#[derive(Clone, Copy, Debug)]
pub struct GraphQuery {
    /// Results wanted from the partition.
    pub k: usize,
    /// Beam width on level 0 (at least `k`).
    pub ef: usize,
    /// Walk only kept nodes, reaching past filtered-out ones to their neighbours
    /// (ACORN-1; the reference's `approx_mode="fast"`).
    pub acorn: bool,
}

/// Reusable per-thread buffers of graph searches (the visited set of a partition).
#[derive(Debug, Default)]
pub struct Visited {
    marks: Vec<u32>,
    epoch: u32,
}

impl Visited {
    /// Starts a new search over `n` nodes: nothing visited.
    pub(crate) fn reset(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.marks.fill(0);
            self.epoch = 1;
        }
    }

    /// Marks `i`; true when it was not marked yet in this search.
    #[inline]
    pub(crate) fn insert(&mut self, i: u32) -> bool {
        let m = &mut self.marks[i as usize];
        if *m == self.epoch {
            false
        } else {
            *m = self.epoch;
            true
        }
    }
}

impl Graph {
    /// Levels stored (level 0 included).
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Nodes on level `l`.
    pub fn level_len(&self, l: usize) -> usize {
        match l {
            0 => self.len,
            _ => self.levels.get(l).map_or(0, |v| v.nodes.len()),
        }
    }

    /// The nodes on level `l` (level 0: every node, `0..len`).
    pub fn level_nodes(&self, l: usize) -> Vec<u32> {
        match l {
            0 => (0..self.len as u32).collect(),
            _ => self
                .levels
                .get(l)
                .map_or_else(Vec::new, |v| v.nodes.clone()),
        }
    }

    /// Node `node`'s neighbours on level `l`, as stored.
    pub fn neighbours(&self, l: usize, node: u32) -> &[u32] {
        self.levels
            .get(l)
            .map_or(&[], |v| v.neighbors(node, l == 0))
    }

    /// Neighbour counts of level `l`'s nodes.
    pub fn degrees(&self, l: usize) -> Vec<usize> {
        self.levels.get(l).map_or_else(Vec::new, |v| {
            v.offsets
                .windows(2)
                .map(|w| (w[1] - w[0]) as usize)
                .collect()
        })
    }

    /// Nodes no walk from the entry point reaches (over all levels' edges, as a
    /// search could, counting level 0's): the graph's blind spots.
    pub fn unreachable(&self) -> usize {
        if self.len == 0 {
            return 0;
        }
        let mut seen = vec![false; self.len];
        let mut stack = vec![self.meta.entry_point];
        seen[self.meta.entry_point as usize] = true;
        let mut count = 1;
        while let Some(n) = stack.pop() {
            for (l, level) in self.levels.iter().enumerate() {
                for &x in level.neighbors(n, l == 0) {
                    if !seen[x as usize] {
                        seen[x as usize] = true;
                        count += 1;
                        stack.push(x);
                    }
                }
            }
        }
        self.len - count
    }

    /// Loads the graphs of every partition from `index.idx`: `parts[p]` is partition
    /// `p`'s (start row in the index file, rows) and `sizes[p]` its vectors in the
    /// auxiliary file. `label` names the index in errors.
    pub fn load_all(
        index: &FileReader,
        parts: &[(usize, usize)],
        sizes: &[usize],
        label: &str,
    ) -> Result<Vec<Option<Graph>>> {
        let meta_json = index
            .schema()
            .metadata()
            .get(HNSW_METADATA_KEY)
            .cloned()
            .ok_or_else(|| corrupt(label, format!("no {HNSW_METADATA_KEY} key")))?;
        let metas: Vec<String> = serde_json::from_str(&meta_json)
            .map_err(|e| corrupt(label, format!("{HNSW_METADATA_KEY}: {e}")))?;
        if metas.len() != parts.len() || sizes.len() != parts.len() {
            return Err(corrupt(
                label,
                format!(
                    "{} HNSW metadata entries for {} partitions",
                    metas.len(),
                    parts.len()
                ),
            ));
        }
        let batch = index.read_all(Some(&["__vector_id", "__neighbors"]))?;
        let rows = batch.num_rows();
        let cols = Columns::of(&batch, label)?;
        let mut out = Vec::with_capacity(parts.len());
        for (p, ((&(start, len), m), &n)) in parts.iter().zip(&metas).zip(sizes).enumerate() {
            let at = format!("partition {p}");
            if len == 0 {
                out.push(None);
                continue;
            }
            if start.checked_add(len).is_none_or(|e| e > rows) {
                return Err(corrupt(
                    label,
                    format!("{at}: graph rows {start}+{len} past {rows}"),
                ));
            }
            let meta = HnswMetadata::parse(m)
                .map_err(|e| corrupt(label, format!("{at}: HNSW metadata: {e}")))?;
            out.push(Some(
                Graph::load(meta, &cols, start, len, n)
                    .map_err(|what| corrupt(label, format!("{at}: {what}")))?,
            ));
        }
        Ok(out)
    }

    /// The graph of one partition from its rows alone (`lance:hnsw` in the batch's
    /// schema metadata: a list of one entry), over `n` vectors.
    pub fn from_batch(batch: &arrow_array::RecordBatch, n: usize, label: &str) -> Result<Graph> {
        let metas: Vec<String> = batch
            .schema()
            .metadata()
            .get(HNSW_METADATA_KEY)
            .map(|j| serde_json::from_str(j))
            .transpose()
            .map_err(|e| corrupt(label, format!("{HNSW_METADATA_KEY}: {e}")))?
            .unwrap_or_default();
        let [m] = &metas[..] else {
            return Err(corrupt(label, "not one graph's metadata"));
        };
        let meta = HnswMetadata::parse(m).map_err(|e| corrupt(label, e))?;
        let cols = Columns::of(batch, label)?;
        Graph::load(meta, &cols, 0, batch.num_rows(), n).map_err(|e| corrupt(label, e))
    }

    /// One partition's graph from rows `start..start + len` of the columns, over `n`
    /// vectors.
    fn load(
        meta: HnswMetadata,
        cols: &Columns,
        start: usize,
        len: usize,
        n: usize,
    ) -> std::result::Result<Graph, String> {
        let offs = &meta.level_offsets;
        if offs.len() < 2 || offs[0] != 0 {
            return Err(format!("level offsets {offs:?}"));
        }
        if offs.windows(2).any(|w| w[1] < w[0]) || *offs.last().unwrap_or(&0) > len {
            return Err(format!("level offsets {offs:?} for {len} rows"));
        }
        let level_rows: Vec<usize> = offs.windows(2).map(|w| w[1] - w[0]).collect();
        if level_rows[0] != n {
            return Err(format!(
                "level 0 holds {} nodes for {n} vectors",
                level_rows[0]
            ));
        }
        if level_rows.windows(2).any(|w| w[1] > w[0]) {
            return Err(format!("a level longer than the one below: {level_rows:?}"));
        }
        if n > 0 && meta.entry_point as usize >= n {
            return Err(format!("entry point {} of {n} nodes", meta.entry_point));
        }
        let mut levels = Vec::with_capacity(level_rows.len());
        for (l, w) in offs.windows(2).enumerate() {
            let mut level = Level {
                offsets: Vec::with_capacity(w[1] - w[0] + 1),
                ..Default::default()
            };
            level.offsets.push(0);
            for (i, r) in (start + w[0]..start + w[1]).enumerate() {
                let id = cols.ids[r];
                if l == 0 {
                    if id as usize != i {
                        return Err(format!("level 0 row {i} holds node {id}"));
                    }
                } else {
                    let below: &Level = &levels[l - 1];
                    let on_below = l == 1 || below.nodes.binary_search(&id).is_ok();
                    if level.nodes.last().is_some_and(|&last| last >= id)
                        || id as usize >= n
                        || !on_below
                    {
                        return Err(format!("level {l} row {i} holds node {id}"));
                    }
                    level.nodes.push(id);
                }
                let (a, b) = (cols.offsets[r], cols.offsets[r + 1]);
                let (a, b) = (a as usize, b as usize);
                if a > b || b > cols.values.len() {
                    return Err(format!("neighbour list {a}..{b} of node {id}"));
                }
                let list = &cols.values[a..b];
                if let Some(bad) = list.iter().find(|&&x| x as usize >= n) {
                    return Err(format!("node {id} has neighbour {bad} of {n} nodes"));
                }
                level.neighbors.extend_from_slice(list);
                let end = u32::try_from(level.neighbors.len())
                    .map_err(|_| "more than 2^32 edges on a level".to_string())?;
                level.offsets.push(end);
            }
            levels.push(level);
        }
        Ok(Graph {
            meta,
            len: n,
            levels,
        })
    }

    /// The best `q.k` nodes of the graph for a query whose distance to node `i` is
    /// `dist(i)`, among those `keep` passes (`None`: all), nearest first.
    pub fn search(
        &self,
        q: GraphQuery,
        keep: Option<&[bool]>,
        visited: &mut Visited,
        dist: &mut dyn FnMut(u32) -> f32,
    ) -> Vec<Scored> {
        self.search_prefetching(q, keep, visited, dist, &mut |_| {})
    }

    /// Whether a search whose filter keeps `kept` of the graph's nodes scores them
    /// directly: the reference does when fewer than a tenth of them survive it.
    pub fn scores_directly(&self, kept: usize) -> bool {
        kept < self.len * 10 / 100
    }

    /// The `k` nearest of the nodes `keep` passes, each scored directly: `dist(i,
    /// bound)` is node `i`'s distance when below `bound` (the current k-th, infinite
    /// until `k` are held), else any value at or above it (a bounded kernel stops
    /// early); `prefetch(i)` is called a few nodes ahead of scoring `i`.
    pub fn score_kept(
        k: usize,
        keep: &[bool],
        dist: &mut dyn FnMut(u32, f32) -> f32,
        prefetch: &mut dyn FnMut(u32),
    ) -> Vec<Scored> {
        /// Nodes ahead of the one scored whose vectors are fetched.
        const AHEAD: usize = 8;
        if k == 0 {
            return Vec::new();
        }
        let ids = kept_ids(keep);
        let mut top: BinaryHeap<Scored> = BinaryHeap::with_capacity(k.min(ids.len()) + 1);
        for &i in ids.iter().take(AHEAD) {
            prefetch(i);
        }
        for (j, &i) in ids.iter().enumerate() {
            if let Some(&next) = ids.get(j + AHEAD) {
                prefetch(next);
            }
            let bound = if top.len() < k {
                f32::INFINITY
            } else {
                top.peek().map_or(f32::INFINITY, |w| w.dist)
            };
            let s = Scored {
                dist: dist(i, bound),
                id: i,
            };
            if top.len() < k {
                top.push(s);
            } else if top.peek().is_some_and(|w| s.dist < w.dist) {
                top.pop();
                top.push(s);
            }
        }
        top.into_sorted_vec()
    }

    /// [`Self::search`], calling `prefetch(i)` a few nodes before node `i` is scored
    /// directly (the caller fetches its vector into cache: kept nodes scattered over a
    /// large partition are otherwise a cache miss each).
    pub fn search_prefetching(
        &self,
        q: GraphQuery,
        keep: Option<&[bool]>,
        visited: &mut Visited,
        dist: &mut dyn FnMut(u32) -> f32,
        prefetch: &mut dyn FnMut(u32),
    ) -> Vec<Scored> {
        if self.len == 0 || q.k == 0 {
            return Vec::new();
        }
        let kept = keep.map_or(self.len, |k| k.iter().filter(|&&b| b).count());
        if let Some(k) = keep.filter(|_| self.scores_directly(kept)) {
            return Self::score_kept(q.k, k, &mut |i, _| dist(i), prefetch);
        }
        let ep = self.meta.entry_point;
        let mut cur = Scored {
            dist: dist(ep),
            id: ep,
        };
        for l in (1..self.levels.len()).rev() {
            cur = self.greedy(l, cur, dist);
        }
        if let Some(k) = keep.filter(|_| q.acorn && kept < self.len) {
            let mut out = self.acorn(cur, q.ef.max(q.k), k, kept, visited, dist);
            if out.len() >= q.k.min(kept) {
                out.truncate(q.k);
                return out;
            }
            // too few found past the filter: the plain walk
        }
        let mut out = self.beam(cur, q.ef.max(q.k), keep, visited, dist);
        out.truncate(q.k);
        out
    }

    /// ACORN-1 beam search of width `ef` on level 0 over the nodes `keep` passes:
    /// the walk starts at `ep` (when kept) and at up to [`ACORN_SEEDS`] kept nodes
    /// spread over the graph, moves only through kept nodes, and from a neighbour the
    /// filter rejects reaches on to that neighbour's neighbours (at most `4 × ef` such
    /// waypoints per search), so a selective filter does not strand it.
    fn acorn(
        &self,
        ep: Scored,
        ef: usize,
        keep: &[bool],
        kept: usize,
        visited: &mut Visited,
        dist: &mut dyn FnMut(u32) -> f32,
    ) -> Vec<Scored> {
        let level = &self.levels[0];
        let ef = ef.clamp(1, self.len);
        visited.reset(self.len);
        let mut candidates = BinaryHeap::with_capacity(ef * 2);
        let mut results: BinaryHeap<Scored> = BinaryHeap::with_capacity(ef + 1);
        let worst = |r: &BinaryHeap<Scored>| r.peek().map_or(f32::INFINITY, |s| s.dist);
        let consider = |x: u32,
                        d: f32,
                        results: &mut BinaryHeap<Scored>,
                        candidates: &mut BinaryHeap<Reverse<Scored>>| {
            if d <= worst(results) || results.len() < ef {
                results.push(Scored { dist: d, id: x });
                if results.len() > ef {
                    results.pop();
                }
                candidates.push(Reverse(Scored { dist: d, id: x }));
            }
        };
        let step = kept.div_ceil(ACORN_SEEDS).max(1);
        let seeds = keep
            .iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .step_by(step)
            .map(|(i, _)| i as u32);
        for s in std::iter::once(ep.id).chain(seeds) {
            if keep[s as usize] && visited.insert(s) {
                let d = if s == ep.id { ep.dist } else { dist(s) };
                consider(s, d, &mut results, &mut candidates);
            }
        }
        let mut waypoints = 4 * ef;
        while let Some(Reverse(cur)) = candidates.pop() {
            if cur.dist > worst(&results) && results.len() == ef {
                break;
            }
            for &x in level.neighbors(cur.id, true) {
                if !visited.insert(x) {
                    continue;
                }
                if keep[x as usize] {
                    let d = dist(x);
                    consider(x, d, &mut results, &mut candidates);
                } else if waypoints > 0 {
                    waypoints -= 1;
                    for &y in level.neighbors(x, true) {
                        if keep[y as usize] && visited.insert(y) {
                            let d = dist(y);
                            consider(y, d, &mut results, &mut candidates);
                        }
                    }
                }
            }
        }
        results.into_sorted_vec()
    }

    /// One unfiltered search of the graph, told as it goes (for `lancer inspect`): the
    /// entry point, each level's greedy hops down to level 1 (node, distance), then the
    /// level-0 beam of width `ef` — nodes expanded, distances computed, the `k` best.
    pub fn trace(
        &self,
        k: usize,
        ef: usize,
        dist: &mut dyn FnMut(u32) -> f32,
    ) -> serde_json::Value {
        if self.len == 0 {
            return serde_json::json!({"nodes": 0});
        }
        let mut computed = 0usize;
        let mut counted = |x: u32| {
            computed += 1;
            dist(x)
        };
        let ep = self.meta.entry_point;
        let mut cur = Scored {
            dist: counted(ep),
            id: ep,
        };
        let mut descent = Vec::new();
        for l in (1..self.levels.len()).rev() {
            if self.level_len(l) == 0 {
                continue;
            }
            let mut hops = vec![serde_json::json!([cur.id, cur.dist])];
            loop {
                let next = self.greedy_step(l, cur, &mut counted);
                if next.id == cur.id {
                    break;
                }
                cur = next;
                hops.push(serde_json::json!([cur.id, cur.dist]));
            }
            descent.push(serde_json::json!({"level": l, "nodes": self.level_len(l), "hops": hops}));
        }
        let mut visited = Visited::default();
        let ef = ef.max(k);
        let (out, expanded) = self.beam_counted(cur, ef, &mut visited, &mut counted);
        let best: Vec<serde_json::Value> = out
            .iter()
            .take(k)
            .map(|s| serde_json::json!([s.id, s.dist]))
            .collect();
        serde_json::json!({"nodes": self.len, "entry_point": ep, "descent": descent,
                           "beam": {"ef": ef, "start": cur.id, "expanded": expanded, "best": best},
                           "distances_computed": computed})
    }

    /// One greedy move on level `l`: the nearest neighbour of `cur` if nearer, else
    /// `cur`.
    fn greedy_step(&self, l: usize, cur: Scored, dist: &mut dyn FnMut(u32) -> f32) -> Scored {
        let mut best = cur;
        for &x in self.levels[l].neighbors(cur.id, false) {
            let d = dist(x);
            if d < best.dist {
                best = Scored { dist: d, id: x };
            }
        }
        best
    }

    /// [`Self::beam`] without a filter, also counting the nodes it expands.
    fn beam_counted(
        &self,
        ep: Scored,
        ef: usize,
        visited: &mut Visited,
        dist: &mut dyn FnMut(u32) -> f32,
    ) -> (Vec<Scored>, usize) {
        let mut expanded = 0usize;
        let out = self.beam_with(ep, ef, None, visited, dist, &mut |_| expanded += 1);
        (out, expanded)
    }

    /// Greedy descent on level `l`: moves to the nearest neighbour while it is nearer.
    fn greedy(&self, l: usize, start: Scored, dist: &mut dyn FnMut(u32) -> f32) -> Scored {
        let mut cur = start;
        loop {
            let next = self.greedy_step(l, cur, dist);
            if next.id == cur.id {
                return cur;
            }
            cur = next;
        }
    }

    /// Beam search of width `ef` on level 0 from `ep`.
    fn beam(
        &self,
        ep: Scored,
        ef: usize,
        keep: Option<&[bool]>,
        visited: &mut Visited,
        dist: &mut dyn FnMut(u32) -> f32,
    ) -> Vec<Scored> {
        self.beam_with(ep, ef, keep, visited, dist, &mut |_| {})
    }

    /// [`Self::beam`], telling `on_expand` each node it expands.
    fn beam_with(
        &self,
        ep: Scored,
        ef: usize,
        keep: Option<&[bool]>,
        visited: &mut Visited,
        dist: &mut dyn FnMut(u32) -> f32,
        on_expand: &mut dyn FnMut(u32),
    ) -> Vec<Scored> {
        let level = &self.levels[0];
        // a beam wider than the graph holds it all
        let ef = ef.clamp(1, self.len);
        let kept = |i: u32| keep.is_none_or(|k| k[i as usize]);
        visited.reset(self.len);
        visited.insert(ep.id);
        let mut candidates = BinaryHeap::with_capacity(ef * 2);
        candidates.push(Reverse(ep));
        let mut results: BinaryHeap<Scored> = BinaryHeap::with_capacity(ef + 1);
        if kept(ep.id) {
            results.push(ep);
        }
        let worst = |r: &BinaryHeap<Scored>| r.peek().map_or(f32::INFINITY, |s| s.dist);
        while let Some(Reverse(cur)) = candidates.pop() {
            if cur.dist > worst(&results) && results.len() == ef {
                break;
            }
            on_expand(cur.id);
            for &x in level.neighbors(cur.id, true) {
                if !visited.insert(x) {
                    continue;
                }
                let d = dist(x);
                // the bound is the current worst result (the paper's rule, which
                // pylance 11-14 follow: answers equal theirs node for node)
                if d <= worst(&results) || results.len() < ef {
                    if kept(x) {
                        if results.len() < ef {
                            results.push(Scored { dist: d, id: x });
                        } else if d < worst(&results) {
                            results.pop();
                            results.push(Scored { dist: d, id: x });
                        }
                    }
                    candidates.push(Reverse(Scored { dist: d, id: x }));
                }
            }
        }
        results.into_sorted_vec()
    }
}

/// What the graphs of a segment look like, as JSON for `lancer inspect --index`: the
/// build settings, nodes per level (summed over partitions), level-0 degrees (min,
/// median, max, mean), the partitions' entry points and the nodes no walk from them
/// reaches.
pub fn describe(graphs: &[Option<Graph>]) -> serde_json::Value {
    let built: Vec<&Graph> = graphs.iter().flatten().collect();
    let levels = built.iter().map(|g| g.levels()).max().unwrap_or(0);
    let per_level: Vec<usize> = (0..levels)
        .map(|l| built.iter().map(|g| g.level_len(l)).sum())
        .collect();
    let mut degrees: Vec<usize> = built.iter().flat_map(|g| g.degrees(0)).collect();
    degrees.sort_unstable();
    let mean = if degrees.is_empty() {
        0.0
    } else {
        degrees.iter().sum::<usize>() as f64 / degrees.len() as f64
    };
    serde_json::json!({
        "params": built.first().map(|g| g.meta.to_json()["params"].clone()),
        "graphs": built.len(),
        "nodes_per_level": per_level,
        "level0_degree": {
            "min": degrees.first().copied().unwrap_or(0),
            "median": degrees.get(degrees.len() / 2).copied().unwrap_or(0),
            "max": degrees.last().copied().unwrap_or(0),
            "mean": (mean * 100.0).round() / 100.0,
        },
        "entry_points": built.iter().map(|g| g.meta.entry_point).collect::<Vec<_>>(),
        "unreachable_nodes": built.iter().map(|g| g.unreachable()).sum::<usize>(),
    })
}

/// The graph columns of `index.idx`, whole.
struct Columns<'a> {
    ids: &'a [u32],
    offsets: &'a [i32],
    values: &'a [u32],
}

impl<'a> Columns<'a> {
    /// The node ids and neighbour lists of `batch`, checked for type and nulls.
    fn of(batch: &'a arrow_array::RecordBatch, label: &str) -> Result<Self> {
        let ids = batch
            .column_by_name("__vector_id")
            .and_then(|c| c.as_primitive_opt::<UInt32Type>())
            .ok_or_else(|| corrupt(label, "no uint32 __vector_id column"))?;
        let lists = batch
            .column_by_name("__neighbors")
            .and_then(|c| c.as_list_opt::<i32>())
            .ok_or_else(|| corrupt(label, "no list<uint32> __neighbors column"))?;
        let values = lists
            .values()
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(|| corrupt(label, "__neighbors values are not uint32"))?;
        if ids.null_count() > 0 || lists.null_count() > 0 || values.null_count() > 0 {
            return Err(corrupt(label, "null node ids or neighbour lists"));
        }
        Ok(Columns {
            ids: ids.values(),
            offsets: lists.value_offsets(),
            values: values.values(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph over points on a line (node i at position i) with level 0 linking each
    /// node to its two neighbours each side, and level 1 over the even nodes.
    fn line(n: u32) -> (HnswMetadata, Vec<u32>, Vec<i32>, Vec<u32>) {
        let (mut ids, mut offsets, mut values) = (Vec::new(), vec![0i32], Vec::new());
        for i in 0..n {
            ids.push(i);
            for j in [i.wrapping_sub(2), i.wrapping_sub(1), i + 1, i + 2] {
                if j < n {
                    values.push(j);
                }
            }
            offsets.push(values.len() as i32);
        }
        let evens: Vec<u32> = (0..n).step_by(2).collect();
        for &i in &evens {
            ids.push(i);
            for j in [i.wrapping_sub(2), i + 2] {
                if j < n {
                    values.push(j);
                }
            }
            offsets.push(values.len() as i32);
        }
        let meta = HnswMetadata {
            entry_point: 0,
            params: HnswParams {
                max_level: 2,
                m: 2,
                ef_construction: 10,
                prefetch_distance: None,
            },
            level_offsets: vec![0, n as usize, n as usize + evens.len()],
        };
        (meta, ids, offsets, values)
    }

    fn graph(n: u32) -> Graph {
        let (meta, ids, offsets, values) = line(n);
        let cols = Columns {
            ids: &ids,
            offsets: &offsets,
            values: &values,
        };
        Graph::load(meta, &cols, 0, ids.len(), n as usize).unwrap()
    }

    #[test]
    fn kept_ids_are_the_true_positions() {
        for n in [0usize, 1, 7, 8, 9, 63, 64, 65, 1000] {
            for (step, phase) in [(1, 0), (2, 1), (3, 2), (7, 0), (64, 5), (1000, 999)] {
                let keep: Vec<bool> = (0..n).map(|i| i % step == phase).collect();
                let want: Vec<u32> = (0..n as u32).filter(|&i| keep[i as usize]).collect();
                assert_eq!(kept_ids(&keep), want, "n {n} step {step}");
            }
        }
    }

    #[test]
    fn bounded_direct_scoring_answers_as_whole_rows() {
        // clustered 32-d rows, masks of several densities: the bounded kernel (with the
        // cut-rate prefetch policy) keeps the same nodes with the same distance bits
        let (n, dim) = (5000usize, 32usize);
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 10_000) as f32 / 1000.0
        };
        let v: Vec<f32> = (0..n * dim)
            .map(|i| ((i / dim) % 9) as f32 * 3.0 + next())
            .collect();
        let row = |i: u32| &v[i as usize * dim..(i as usize + 1) * dim];
        for (step, k) in [(1usize, 10usize), (3, 10), (17, 5), (250, 10), (4999, 3)] {
            let keep: Vec<bool> = (0..n).map(|i| i % step == 0).collect();
            for qi in [0u32, 1234, 4321] {
                let q: Vec<f32> = row(qi).iter().map(|x| x + 0.25).collect();
                let whole = Graph::score_kept(
                    k,
                    &keep,
                    &mut |i, _| crate::distance::l2(&q, row(i)),
                    &mut |_| {},
                );
                let rate = crate::distance::CutRate::default();
                let bounded = Graph::score_kept(
                    k,
                    &keep,
                    &mut |i, bound| {
                        let d = crate::distance::l2_within(&q, row(i), bound);
                        rate.record(d >= bound);
                        d
                    },
                    &mut |_| {},
                );
                let bits = |x: &[Scored]| {
                    x.iter()
                        .map(|s| (s.id, s.dist.to_bits()))
                        .collect::<Vec<_>>()
                };
                assert_eq!(bits(&bounded), bits(&whole), "step {step} query {qi}");
                assert_eq!(whole.len(), k.min(keep.iter().filter(|&&b| b).count()));
            }
        }
    }

    #[test]
    fn finds_the_nearest_on_a_line_with_and_without_a_filter() {
        let g = graph(200);
        let target = 137.3f32;
        let mut dist = |i: u32| (i as f32 - target).abs();
        let mut v = Visited::default();
        let q = GraphQuery {
            k: 3,
            ef: 8,
            acorn: false,
        };
        let got: Vec<u32> = g
            .search(q, None, &mut v, &mut dist)
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(got, vec![137, 138, 136]);
        // keep odd nodes only: more than a tenth, so the graph is walked
        let keep: Vec<bool> = (0..200).map(|i| i % 2 == 1).collect();
        let got: Vec<u32> = g
            .search(q, Some(&keep), &mut v, &mut dist)
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(got, vec![137, 139, 135]);
        // keep 5 nodes: under a tenth, scored directly
        let keep: Vec<bool> = (0..200).map(|i| i % 40 == 3).collect();
        let got: Vec<u32> = g
            .search(q, Some(&keep), &mut v, &mut dist)
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(got, vec![123, 163, 83]);
        // keep every 3rd node: the plain walk and ACORN (kept nodes only, through the
        // rejected neighbours to theirs) both find the nearest kept nodes
        let keep: Vec<bool> = (0..200).map(|i| i % 3 == 0).collect();
        for acorn in [false, true] {
            let q = GraphQuery { acorn, ..q };
            let got: Vec<u32> = g
                .search(q, Some(&keep), &mut v, &mut dist)
                .iter()
                .map(|s| s.id)
                .collect();
            assert_eq!(got, vec![138, 135, 141], "acorn {acorn}");
        }
        assert_eq!(g.unreachable(), 0);
        assert_eq!(g.level_len(1), 100);
        assert_eq!(g.degrees(1)[0], 1);
    }

    /// Every single-value change of a valid graph's columns either loads (and then a
    /// search terminates within the visited bound) or is refused, never a panic.
    #[test]
    fn damaged_graphs_are_refused_or_safe() {
        let n = 40u32;
        let (meta, ids, offsets, values) = line(n);
        let mut dist = |i: u32| (i as f32 - 17.5).abs();
        let mut v = Visited::default();
        let q = GraphQuery {
            k: 5,
            ef: 10,
            acorn: false,
        };
        let try_load = |m: HnswMetadata, ids: &[u32], offs: &[i32], vals: &[u32]| {
            let cols = Columns {
                ids,
                offsets: offs,
                values: vals,
            };
            Graph::load(m, &cols, 0, ids.len(), n as usize)
        };
        let (mut refused, mut loaded) = (0, 0);
        for bad in [0u32, 1, 39, 40, 41, u32::MAX] {
            for i in 0..ids.len() {
                let mut x = ids.clone();
                x[i] = bad;
                match try_load(meta.clone(), &x, &offsets, &values) {
                    Ok(g) => {
                        loaded += 1;
                        assert!(g.search(q, None, &mut v, &mut dist).len() <= 5);
                    }
                    Err(_) => refused += 1,
                }
            }
            for i in 0..values.len() {
                let mut x = values.clone();
                x[i] = bad;
                match try_load(meta.clone(), &ids, &offsets, &x) {
                    Ok(g) => {
                        loaded += 1;
                        assert!(g.search(q, None, &mut v, &mut dist).len() <= 5);
                    }
                    Err(_) => refused += 1,
                }
            }
        }
        for i in 0..offsets.len() {
            for bad in [-1i32, 0, 3, i32::MAX] {
                let mut x = offsets.clone();
                x[i] = bad;
                if let Ok(g) = try_load(meta.clone(), &ids, &x, &values) {
                    loaded += 1;
                    assert!(g.search(q, None, &mut v, &mut dist).len() <= 5);
                } else {
                    refused += 1;
                }
            }
        }
        let bad_metas = [
            vec![0, 39, 59],
            vec![0, 40, 61],
            vec![0, 40, 30],
            vec![1, 40, 60],
            vec![0],
            vec![0, 20, 60],
            vec![0, 40, 60, 60, 61],
        ];
        for offs in bad_metas {
            let mut m = meta.clone();
            m.level_offsets = offs.clone();
            assert!(
                try_load(m, &ids, &offsets, &values).is_err(),
                "offsets {offs:?}"
            );
        }
        let mut m = meta.clone();
        m.entry_point = 40;
        assert!(try_load(m, &ids, &offsets, &values).is_err());
        assert!(
            refused > 50 && loaded > 50,
            "{refused} refused, {loaded} loaded"
        );
    }
}
