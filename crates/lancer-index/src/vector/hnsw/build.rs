//! Building HNSW graphs for `IVF_HNSW_*` indexes: one graph per IVF partition over the
//! partition's stored vectors (as decoded from their codes, so the graph's distances
//! are the ones a search computes), written as the reference lays them out (format
//! guide "Vector Indices" → Index File → HNSW, lines ~2504–2563; reading and the row
//! layout in [`crate::vector::hnsw`]).
//!
//! The construction is the reference's reading of the HNSW paper (Malkov & Yashunin,
//! Algorithms 1 and 4, as lance-index's builder does it since pylance 14): each node
//! draws a level `⌊−ln U / ln m⌋` (at most `max_level − 1`) from a generator seeded
//! the reference's way ([`draw_levels`], [`LEVEL_SEED`]), so nodes sit on the levels
//! pylance puts them on; the first node of the highest level is the entry point, in
//! place before the others are inserted. A node descends greedily to its level, then
//! on each of its levels a beam search of `ef_construction` from the nearest node
//! found above gathers candidates; it links to `m` of them on every level — those the
//! neighbour-selection heuristic keeps (nearer to it than to each other), the places
//! left filled with the nearest passed over — and each links back, a list past its
//! bound (`2m` on level 0, `m` above) cut back to it the same way. A list chosen or
//! cut back this way is stored heuristic-kept entries first, then the filled ones, as
//! the reference stores it; links back are appended as they come.
//! Afterwards every node unreachable on level 0 is linked from a reachable one. The
//! reference's parameter rules apply: `m ≥ 4`, `ef_construction ≥ m`, `max_level ≥ 1`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use arrow_array::builder::{Float32Builder, ListBuilder, UInt32Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::{HnswMetadata, HnswParams, Scored, Visited};
use crate::distance::prefetch;
use crate::distance::{dot_free, l2_free};
use crate::{IndexError, Result};

/// Rows up to this many bytes are prefetched whole as a node's neighbours are found.
const PREFETCH_WHOLE: usize = 1024;
/// Floats of a longer row prefetched up front (its first two cache lines).
const PREFETCH_HEAD: usize = 32;
/// How many rows ahead of its distance a longer row is prefetched whole.
const PREFETCH_AHEAD: usize = 2;

/// The smallest `m` the reference accepts (sparser graphs fall apart).
pub const MIN_M: usize = 4;

/// Settings of an HNSW build (the reference's defaults in [`Default`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HnswBuild {
    /// Neighbours kept per node above level 0 (`2m` on level 0).
    pub m: usize,
    /// Beam width while inserting.
    pub ef_construction: usize,
    /// Levels a graph may have.
    pub max_level: u16,
}

impl Default for HnswBuild {
    fn default() -> Self {
        Self {
            m: 20,
            ef_construction: 150,
            max_level: 7,
        }
    }
}

impl HnswBuild {
    /// Refuses settings the reference refuses.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(IndexError::InvalidArgument { what });
        if self.m < MIN_M {
            return bad(format!(
                "HNSW m = {} must be at least {MIN_M} to avoid severely fragmented graphs",
                self.m
            ));
        }
        if self.ef_construction < self.m {
            return bad(format!(
                "HNSW ef_construction = {} must be at least m = {} (the beam has to find the m \
                 links a node makes)",
                self.ef_construction, self.m
            ));
        }
        if self.max_level == 0 || self.max_level > 64 {
            return bad(format!(
                "HNSW max_level = {} must be between 1 and 64",
                self.max_level
            ));
        }
        Ok(())
    }
}

/// The vectors a graph is built over, with the distance a search uses — squared L2, or
/// `1 − a·b` for dot — computed in a free summation order ([`crate::distance::free`]: the
/// build's own distances, equal to a search's up to rounding).
#[derive(Clone, Copy)]
pub struct Space<'a> {
    /// `n × dim`, row-major.
    pub vectors: &'a [f32],
    /// Dimension.
    pub dim: usize,
    /// Dot-product distance instead of squared L2.
    pub dot: bool,
}

impl Space<'_> {
    fn len(&self) -> usize {
        self.vectors.len() / self.dim.max(1)
    }

    #[inline]
    fn row(&self, i: u32) -> &[f32] {
        let i = i as usize;
        &self.vectors[i * self.dim..(i + 1) * self.dim]
    }

    #[inline]
    fn dist(&self, a: u32, b: u32) -> f32 {
        let (x, y) = (self.row(a), self.row(b));
        // the build's own distances: a free summation order (crate::distance::free)
        if self.dot {
            1.0 - dot_free(x, y)
        } else {
            l2_free(x, y)
        }
    }
}

/// One node's links per level: (distance, neighbour).
type NodeLinks = Vec<Vec<(f32, u32)>>;

/// A built graph: every node's links per level.
pub struct BuiltGraph {
    /// `links[node][level]`: (distance, neighbour), for the node's levels.
    links: Vec<NodeLinks>,
    entry: u32,
    params: HnswBuild,
}

/// The seed of every graph's level draws: the reference's, so that a partition's nodes
/// sit on the levels pylance's build puts them on.
pub const LEVEL_SEED: u64 = 42;

/// Each node's level, drawn in node order as the reference draws them: `⌊−ln U / ln m⌋`
/// with `U` a float32 in `[0, 1)` from `rand` 0.9's `SmallRng` seeded with `seed`,
/// at most `max_level − 1`.
pub fn draw_levels(n: usize, params: HnswBuild, seed: u64) -> Vec<usize> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let ml = 1.0 / (params.m as f32).ln();
    let cap = usize::from(params.max_level).saturating_sub(1);
    (0..n)
        .map(|_| {
            let u: f32 = rng.random();
            // `as` saturates: U = 0 (ln = −∞) lands on the cap
            ((-u.ln() * ml) as u16 as usize).min(cap)
        })
        .collect()
}

/// The entry point of a graph whose nodes have `levels`: the first node of the highest
/// level (in place before the others are inserted), and that level.
pub fn entry_point(levels: &[usize]) -> (usize, usize) {
    levels.iter().enumerate().fold(
        (0, 0),
        |(e, t), (i, &l)| if l > t { (i, l) } else { (e, t) },
    )
}

/// Builds the graph of `space`'s vectors with `params`, levels drawn from `seed`
/// ([`LEVEL_SEED`] for the reference's), on `threads` threads (1: nodes inserted in id
/// order, the same graph every time; more: each thread inserts its slice of the ids,
/// concurrently, each node's links behind its own lock, as the reference builds a
/// partition's graph).
pub fn build_graph(space: Space<'_>, params: HnswBuild, seed: u64, threads: usize) -> BuiltGraph {
    let n = space.len();
    let levels = draw_levels(n, params, seed);
    let (entry, top) = entry_point(&levels);
    let g = Builder {
        space,
        params,
        base: Base::new(n, 2 * params.m),
        upper: levels
            .iter()
            .map(|&l| RwLock::new(vec![Vec::new(); l]))
            .collect(),
        locks: (0..n).map(|_| Mutex::new(())).collect(),
        levels: &levels,
        entry: entry as u32,
        top,
    };
    // Insertion order as the reference's (a parallel iterator over the node range):
    // each thread inserts its own slice of the ids front to back, then helps with the
    // others' — several fronts growing at once. Against one shared counter (ids in
    // order across the threads) this took 1M x 128 recall@10 from 0.794 / 0.878 / 0.936
    // to 0.799 / 0.892 / 0.945 at ef 10 / 20 / 40 (1,000 queries): pylance's own graph's.
    let threads = threads.clamp(1, n.max(1));
    let slices: Vec<(AtomicUsize, usize)> = (0..threads)
        .map(|t| (AtomicUsize::new(t * n / threads), (t + 1) * n / threads))
        .collect();
    let work = |t: usize| {
        let mut scratch = Scratch::default();
        for (next, end) in slices[t..].iter().chain(&slices[..t]) {
            loop {
                let q = next.fetch_add(1, Ordering::Relaxed);
                if q >= *end {
                    break;
                }
                if q != entry {
                    g.insert(q as u32, &mut scratch);
                }
            }
        }
    };
    if threads == 1 {
        work(0);
    } else {
        std::thread::scope(|sc| {
            for t in 0..threads {
                let work = &work;
                sc.spawn(move || work(t));
            }
        });
    }
    let Builder { base, upper, .. } = g;
    let mut links: Vec<NodeLinks> = upper
        .into_iter()
        .enumerate()
        .map(|(node, l)| {
            let above = l.into_inner().unwrap_or_else(|e| e.into_inner());
            let mut all = Vec::with_capacity(above.len() + 1);
            all.push(base.list(node as u32));
            all.extend(above);
            all
        })
        .collect();
    reconnect(&mut links, entry as u32, 2 * params.m + 1, space);
    BuiltGraph {
        links,
        entry: entry as u32,
        params,
    }
}

/// Level 0's links of every node in one table: each node a slot of a count and `cap`
/// neighbour ids (and, apart, their distances), so a beam search reads a node's
/// neighbours in one place instead of through three pointers (the build's time was
/// mostly those cache misses). Entries are atomics: searches read them without a lock
/// (a list rewritten meanwhile may show a mix of its old and new entries, each a node
/// id either way); a list is written only under its node's lock.
struct Base {
    cap: usize,
    /// Per node: `[count, id_0 .. id_cap)`.
    ids: Vec<AtomicU32>,
    /// Per node: `cap` distances (`f32` bits), read and written under the node's lock.
    dists: Vec<AtomicU32>,
    /// Per node: 0 while its list was last set or grown otherwise, else 1 + how many of
    /// its first entries the heuristic kept when the list was last cut back (the rest
    /// filled in with the nearest it passed over); under the node's lock.
    kept: Vec<AtomicU32>,
}

impl Base {
    fn new(n: usize, cap: usize) -> Self {
        Self {
            cap,
            ids: (0..n * (cap + 1)).map(|_| AtomicU32::new(0)).collect(),
            dists: (0..n * cap).map(|_| AtomicU32::new(0)).collect(),
            kept: (0..n).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// Node `x`'s neighbour ids (a snapshot, read without the lock).
    #[inline]
    fn neighbours(&self, x: u32, out: &mut Vec<u32>) {
        let slot = &self.ids[x as usize * (self.cap + 1)..][..self.cap + 1];
        let c = (slot[0].load(Ordering::Relaxed) as usize).min(self.cap);
        out.clear();
        out.extend(slot[1..=c].iter().map(|a| a.load(Ordering::Relaxed)));
    }

    /// Starts loading node `x`'s slot.
    #[inline]
    fn prefetch(&self, x: u32) {
        prefetch(&self.ids[x as usize * (self.cap + 1)..][..self.cap + 1]);
    }

    /// Node `x`'s list with distances (under its lock while others write).
    fn list(&self, x: u32) -> Vec<(f32, u32)> {
        let slot = &self.ids[x as usize * (self.cap + 1)..][..self.cap + 1];
        let d = &self.dists[x as usize * self.cap..][..self.cap];
        let c = (slot[0].load(Ordering::Relaxed) as usize).min(self.cap);
        (0..c)
            .map(|i| {
                (
                    f32::from_bits(d[i].load(Ordering::Relaxed)),
                    slot[1 + i].load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    /// How many of node `x`'s first entries the heuristic kept when its list was last
    /// cut back (`None`: never cut back since it last grew).
    fn kept(&self, x: u32) -> Option<usize> {
        (self.kept[x as usize].load(Ordering::Relaxed) as usize).checked_sub(1)
    }

    /// Replaces node `x`'s list (under its lock; at most `cap` entries), `kept` as
    /// [`Self::kept`] reports it.
    fn set(&self, x: u32, list: &[(f32, u32)], kept: Option<usize>) {
        self.kept[x as usize].store(kept.map_or(0, |k| k as u32 + 1), Ordering::Relaxed);
        let slot = &self.ids[x as usize * (self.cap + 1)..][..self.cap + 1];
        let d = &self.dists[x as usize * self.cap..][..self.cap];
        let c = list.len().min(self.cap);
        for (i, &(dist, id)) in list[..c].iter().enumerate() {
            slot[1 + i].store(id, Ordering::Relaxed);
            d[i].store(dist.to_bits(), Ordering::Relaxed);
        }
        slot[0].store(c as u32, Ordering::Relaxed);
    }
}

/// Per-thread buffers of inserts: the visited set, the beam's heaps, neighbour ids.
#[derive(Default)]
struct Scratch {
    visited: Visited,
    cands: BinaryHeap<Reverse<Scored>>,
    res: BinaryHeap<Scored>,
    ids: Vec<u32>,
    fresh: Vec<u32>,
}

/// A node's links, read (a poisoned lock's data is still the links).
fn read(l: &RwLock<NodeLinks>) -> std::sync::RwLockReadGuard<'_, NodeLinks> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// A node's links, written.
fn write(l: &RwLock<NodeLinks>) -> std::sync::RwLockWriteGuard<'_, NodeLinks> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// Links every node a search from `entry` cannot reach on level 0 from a reachable
/// node it links to (its nearest such), so no vector is lost to every search. Pruning
/// can leave nodes without incoming links (for the dot distance, most of those of
/// small norm); each repair adds one link, so a list may pass its bound by a few. A
/// node none of whose neighbours is reachable (a group of equal vectors linked only
/// among themselves: a column of a few distinct values) is linked from the nearest
/// reachable node a search for it finds, which brings its whole group in.
fn reconnect(links: &mut [NodeLinks], entry: u32, room: usize, space: Space<'_>) {
    let n = links.len();
    if n == 0 {
        return;
    }
    let mut seen = vec![false; n];
    let mut stack = Vec::new();
    let mut mark = |from: u32, seen: &mut Vec<bool>, links: &[NodeLinks]| {
        seen[from as usize] = true;
        stack.push(from);
        while let Some(u) = stack.pop() {
            for &(_, v) in &links[u as usize][0] {
                if !seen[v as usize] {
                    seen[v as usize] = true;
                    stack.push(v);
                }
            }
        }
    };
    mark(entry, &mut seen, links);
    loop {
        let mut changed = false;
        for u in 0..n {
            if seen[u] {
                continue;
            }
            // the nearest reachable neighbour with room, else the nearest reachable
            let reachable = |&&(_, v): &&(f32, u32)| seen[v as usize];
            let nearest = |a: &&(f32, u32), b: &&(f32, u32)| a.0.total_cmp(&b.0);
            let roomy = links[u][0]
                .iter()
                .filter(reachable)
                .filter(|&&(_, v)| links[v as usize][0].len() < room)
                .min_by(nearest);
            let found = roomy
                .or_else(|| links[u][0].iter().filter(reachable).min_by(nearest))
                .copied();
            let Some((d, v)) =
                found.or_else(|| nearest_reachable(links, entry, u as u32, &seen, space))
            else {
                continue;
            };
            links[v as usize][0].push((d, u as u32));
            mark(u as u32, &mut seen, links);
            changed = true;
        }
        if !changed {
            break;
        }
    }
}

/// The reachable node nearest to `u` a best-first walk of level 0 from `entry` finds
/// (a beam of 32 over reachable nodes), with its distance.
fn nearest_reachable(
    links: &[NodeLinks],
    entry: u32,
    u: u32,
    seen: &[bool],
    space: Space<'_>,
) -> Option<(f32, u32)> {
    const BEAM: usize = 32;
    if !seen.get(entry as usize).copied().unwrap_or(false) {
        return None;
    }
    let mut visited = Visited::default();
    visited.reset(links.len());
    visited.insert(entry);
    let first = Scored {
        dist: space.dist(u, entry),
        id: entry,
    };
    let mut cands = BinaryHeap::from([Reverse(first)]);
    let mut best: BinaryHeap<Scored> = BinaryHeap::from([first]);
    while let Some(Reverse(c)) = cands.pop() {
        if best.len() >= BEAM && best.peek().is_some_and(|w| c.dist > w.dist) {
            break;
        }
        for &(_, x) in &links[c.id as usize][0] {
            if !seen[x as usize] || !visited.insert(x) {
                continue;
            }
            let s = Scored {
                dist: space.dist(u, x),
                id: x,
            };
            if best.len() < BEAM || best.peek().is_some_and(|w| s.dist < w.dist) {
                cands.push(Reverse(s));
                best.push(s);
                if best.len() > BEAM {
                    best.pop();
                }
            }
        }
    }
    best.into_sorted_vec().first().map(|s| (s.dist, s.id))
}

struct Builder<'a> {
    space: Space<'a>,
    params: HnswBuild,
    /// Level 0's links.
    base: Base,
    /// Every node's links on levels `1..=level` (most nodes have none).
    upper: Vec<RwLock<NodeLinks>>,
    /// Every node's lock: held while its lists are written (one held at a time).
    locks: Vec<Mutex<()>>,
    /// Every node's level.
    levels: &'a [usize],
    /// The entry point (in place before any other node is inserted) and its level.
    entry: u32,
    top: usize,
}

impl Builder<'_> {
    fn bound(&self, level: usize) -> usize {
        if level == 0 {
            2 * self.params.m
        } else {
            self.params.m
        }
    }

    fn lock(&self, x: u32) -> std::sync::MutexGuard<'_, ()> {
        self.locks[x as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Node `x`'s neighbour ids on level `l` into `out`.
    #[inline]
    fn neighbours(&self, x: u32, l: usize, out: &mut Vec<u32>) {
        if l == 0 {
            self.base.neighbours(x, out);
        } else {
            out.clear();
            if let Some(list) = read(&self.upper[x as usize]).get(l - 1) {
                out.extend(list.iter().map(|&(_, y)| y));
            }
        }
    }

    /// Inserts node `q` as the reference does (HNSW paper, Algorithms 1 and 4): a
    /// greedy descent from the entry point to `q`'s level; then on each of its levels a
    /// beam search of `ef_construction` from the nearest node found above, `q` linked
    /// to `m` of the candidates (those the heuristic keeps, filled with the nearest it
    /// passed over); each of those links back to `q`, its list cut back the same way
    /// when it passes its bound (`2m` on level 0, `m` above) — a far link the
    /// heuristic keeps is kept (a full list that refused every link farther than its
    /// own lost 0.08 recall@10 at ef 10 on 1M x 128 clustered vectors).
    fn insert(&self, q: u32, scratch: &mut Scratch) {
        let (entry, top) = (self.entry, self.top);
        let level = self.levels[q as usize];
        let sp = self.space;
        let mut ep = Scored {
            dist: sp.dist(q, entry),
            id: entry,
        };
        let mut ids = std::mem::take(&mut scratch.ids);
        for l in (level + 1..=top).rev() {
            loop {
                let mut moved = false;
                self.neighbours(ep.id, l, &mut ids);
                for &x in &ids {
                    let d = sp.dist(q, x);
                    if d < ep.dist {
                        ep = Scored { dist: d, id: x };
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        scratch.ids = ids;
        for l in (0..=level).rev() {
            let found = self.search_level(q, ep, l, scratch);
            let (chosen, _) = self.select(&found, self.params.m);
            let own: Vec<(f32, u32)> = chosen.iter().map(|s| (s.dist, s.id)).collect();
            {
                let _g = self.lock(q);
                // a node inserted meanwhile may have linked to `q` already (it found
                // `q` from above): those links join `q`'s own
                let early = self.get_list(q, l);
                self.set_list(q, l, &own, None);
                // (link_back skips one `q` already links to)
                for (dist, id) in early {
                    self.link_back(q, Scored { dist, id }, l);
                }
            }
            for s in &chosen {
                let _g = self.lock(s.id);
                self.link_back(
                    s.id,
                    Scored {
                        dist: s.dist,
                        id: q,
                    },
                    l,
                );
            }
            ep = found[0];
        }
    }

    /// Adds `new` to node `x`'s list on level `l` (its lock held), as [`add_link`].
    fn link_back(&self, x: u32, new: Scored, l: usize) {
        let list = self.get_list(x, l);
        // two nodes inserted at once may each link the other: one link each way
        if new.id == x || list.iter().any(|&(_, y)| y == new.id) {
            return;
        }
        let (list, kept) = add_link(self.space, list, self.kept_of(x, l), new, self.bound(l));
        self.set_list(x, l, &list, kept);
    }

    /// How many of node `x`'s first entries on level `l` the heuristic kept when the
    /// list was last cut back (level 0 keeps count; above, `None`: cut back in full).
    fn kept_of(&self, x: u32, l: usize) -> Option<usize> {
        if l == 0 {
            self.base.kept(x)
        } else {
            None
        }
    }

    /// Node `x`'s list on level `l` (its lock held).
    fn get_list(&self, x: u32, l: usize) -> Vec<(f32, u32)> {
        if l == 0 {
            self.base.list(x)
        } else {
            read(&self.upper[x as usize])
                .get(l - 1)
                .cloned()
                .unwrap_or_default()
        }
    }

    /// Replaces node `x`'s list on level `l` (its lock held); `kept` as
    /// [`Self::kept_of`] reports it, kept on level 0 only (upper lists are few and
    /// short: cut back in full).
    fn set_list(&self, x: u32, l: usize, list: &[(f32, u32)], kept: Option<usize>) {
        if l == 0 {
            self.base.set(x, list, kept);
        } else if let Some(slot) = write(&self.upper[x as usize]).get_mut(l - 1) {
            *slot = list.to_vec();
        }
    }

    /// Beam search of `ef_construction` for node `q` on level `l` from `ep`; nearest
    /// first. A node's unvisited neighbours are gathered first and their vectors
    /// prefetched (short rows whole; long rows' heads, then each whole a few rows
    /// ahead of its distance), then compared.
    fn search_level(&self, q: u32, ep: Scored, l: usize, s: &mut Scratch) -> Vec<Scored> {
        let ef = self.params.ef_construction;
        let sp = self.space;
        let Scratch {
            visited,
            cands,
            res,
            ids,
            fresh,
        } = s;
        visited.reset(self.levels.len());
        cands.clear();
        res.clear();
        // `q` itself is never a candidate (a node inserted meanwhile may already link
        // to it)
        visited.insert(q);
        visited.insert(ep.id);
        cands.push(Reverse(ep));
        res.push(ep);
        let worst = |r: &BinaryHeap<Scored>| r.peek().map_or(f32::INFINITY, |s| s.dist);
        while let Some(Reverse(c)) = cands.pop() {
            if c.dist > worst(res) && res.len() >= ef {
                break;
            }
            // the next node to expand: its list starts loading while this one's
            // neighbours are compared
            if let (0, Some(Reverse(next))) = (l, cands.peek()) {
                self.base.prefetch(next.id);
            }
            self.neighbours(c.id, l, ids);
            fresh.clear();
            for &x in ids.iter() {
                if visited.insert(x) {
                    fresh.push(x);
                }
            }
            // Long rows: a row's head for every fresh node, each whole row a few
            // rows ahead of its distance (prefetching dozens of 3 KB rows at once
            // stalled on the CPU's outstanding-miss slots: a quarter of a 768-d
            // build sat on the prefetch instructions). Short rows: every row now.
            let whole = sp.dim * 4 <= PREFETCH_WHOLE;
            for (j, &x) in fresh.iter().enumerate() {
                let row = sp.row(x);
                let head = whole || j < PREFETCH_AHEAD;
                prefetch(if head {
                    row
                } else {
                    &row[..row.len().min(PREFETCH_HEAD)]
                });
            }
            for (j, &x) in fresh.iter().enumerate() {
                if let (false, Some(&next)) = (whole, fresh.get(j + PREFETCH_AHEAD)) {
                    prefetch(sp.row(next));
                }
                let d = sp.dist(q, x);
                if res.len() < ef || d < worst(res) {
                    let s = Scored { dist: d, id: x };
                    cands.push(Reverse(s));
                    res.push(s);
                    if res.len() > ef {
                        res.pop();
                    }
                }
            }
        }
        let mut out: Vec<Scored> = res.drain().collect();
        out.sort_unstable();
        out
    }

    /// [`select`] in this graph's space.
    fn select(&self, cands: &[Scored], bound: usize) -> (Vec<Scored>, usize) {
        select(self.space, cands, bound)
    }
}

/// The paper's neighbour-selection heuristic over `cands` (nearest first), as the
/// reference configures it (no candidate extension, pruned connections kept): a
/// candidate is kept when it is nearer to the node than to every one kept before, until
/// `bound` are kept; the places left are filled with the nearest of those passed over.
/// Returns the kept ones (nearest first), then the filled ones (nearest first) — the
/// order the reference stores a list in — and how many were kept. `bound` candidates
/// or fewer are returned as they are, all counted as kept (the heuristic is not run).
fn select(space: Space<'_>, cands: &[Scored], bound: usize) -> (Vec<Scored>, usize) {
    if cands.len() <= bound {
        return (cands.to_vec(), cands.len());
    }
    let mut out: Vec<Scored> = Vec::with_capacity(bound);
    let mut passed: Vec<Scored> = Vec::new();
    for &c in cands {
        if out.len() >= bound {
            break;
        }
        if out.iter().all(|r| c.dist < space.dist(c.id, r.id)) {
            out.push(c);
        } else {
            passed.push(c);
        }
    }
    let kept = out.len();
    out.extend(passed.into_iter().take(bound - kept));
    (out, kept)
}

/// A node's list (distance, neighbour) with `new` added: past `bound` it is cut back by
/// [`select`] over all its entries and `new`. `kept` is how many of the list's first
/// entries the heuristic kept when it was last cut back (`None`: not cut back since it
/// last grew); when `new` sorts after every entry of the list (distance, then id), the
/// heuristic over the whole list would keep the same entries and decide `new` against
/// the kept ones alone — so only those distances are computed. Returns the list and
/// its kept count.
fn add_link(
    space: Space<'_>,
    mut list: Vec<(f32, u32)>,
    kept: Option<usize>,
    new: Scored,
    bound: usize,
) -> (Vec<(f32, u32)>, Option<usize>) {
    if list.len() < bound {
        list.push((new.dist, new.id));
        return (list, None);
    }
    let last = list.iter().all(|&(dist, id)| Scored { dist, id } < new);
    if let Some(k) = kept.filter(|_| last && list.len() == bound) {
        if k < bound
            && list[..k]
                .iter()
                .all(|&(_, r)| new.dist < space.dist(new.id, r))
        {
            list.insert(k, (new.dist, new.id));
            list.truncate(bound);
            return (list, Some(k + 1));
        }
        return (list, Some(k));
    }
    let mut cands: Vec<Scored> = list.iter().map(|&(dist, id)| Scored { dist, id }).collect();
    cands.push(new);
    cands.sort_unstable();
    let (out, k) = select(space, &cands, bound);
    (out.iter().map(|s| (s.dist, s.id)).collect(), Some(k))
}

impl BuiltGraph {
    /// Nodes.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The graph's rows as the reference stores them (levels `0..max_level`, each its
    /// nodes ascending with their neighbour ids and distances) and its metadata.
    pub fn to_batch(&self) -> Result<(RecordBatch, HnswMetadata)> {
        let mut ids = UInt32Builder::new();
        let mut neighbors = ListBuilder::new(UInt32Builder::new());
        let mut dists = ListBuilder::new(Float32Builder::new());
        let mut offsets = vec![0usize];
        let mut rows = 0usize;
        for l in 0..usize::from(self.params.max_level) {
            for (node, levels) in self.links.iter().enumerate() {
                let Some(list) = levels.get(l) else { continue };
                ids.append_value(node as u32);
                neighbors.append_value(list.iter().map(|&(_, x)| Some(x)));
                dists.append_value(list.iter().map(|&(d, _)| Some(d)));
                rows += 1;
            }
            offsets.push(rows);
        }
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(ids.finish()),
            Arc::new(neighbors.finish()),
            Arc::new(dists.finish()),
        ];
        let batch = RecordBatch::try_new(graph_schema(), arrays)?;
        let meta = HnswMetadata {
            entry_point: self.entry,
            params: HnswParams {
                max_level: self.params.max_level,
                m: self.params.m,
                ef_construction: self.params.ef_construction,
                prefetch_distance: Some(2),
            },
            level_offsets: offsets,
        };
        Ok((batch, meta))
    }
}

/// The schema of `index.idx`'s graph rows (without metadata).
pub fn graph_schema() -> Arc<Schema> {
    let list = |t: DataType| DataType::List(Arc::new(Field::new("item", t, true)));
    Arc::new(Schema::new(vec![
        Field::new("__vector_id", DataType::UInt32, true),
        Field::new("__neighbors", list(DataType::UInt32), true),
        Field::new("_distance", list(DataType::Float32), true),
    ]))
}

/// `index.idx` of an HNSW index, written as the partitions' graphs are built: the
/// graph rows partition after partition, the IVF model with each partition's graph
/// rows, `lance:hnsw` with each graph's metadata (empty for an empty partition).
pub struct GraphFile {
    w: lancer_format::writer::FileWriter<Vec<u8>>,
    offsets: Vec<u64>,
    lengths: Vec<u32>,
    metas: Vec<String>,
    rows: u64,
}

impl GraphFile {
    /// A new file for an index named `type_name` (e.g. `IVF_HNSW_SQ`) of `metric`.
    pub fn new(
        type_name: &str,
        metric: crate::distance::Metric,
        version: lancer_format::container::FileVersion,
    ) -> Result<Self> {
        let meta: std::collections::HashMap<String, String> = [
            (
                "lance:index".to_string(),
                serde_json::json!({"type": type_name, "distance_type": metric.name()}).to_string(),
            ),
            ("lance:ivf".to_string(), "1".to_string()),
        ]
        .into();
        let schema = Arc::new(graph_schema().as_ref().clone().with_metadata(meta));
        let w = lancer_format::writer::FileWriter::try_new(
            Vec::new(),
            schema,
            lancer_format::writer::WriteOptions {
                version,
                ..Default::default()
            },
        )?;
        Ok(Self {
            w,
            offsets: Vec::new(),
            lengths: Vec::new(),
            metas: Vec::new(),
            rows: 0,
        })
    }

    /// Appends the next partition's graph (None: an empty partition).
    pub fn push(&mut self, graph: Option<&BuiltGraph>) -> Result<()> {
        self.offsets.push(self.rows);
        match graph.filter(|g| !g.is_empty()) {
            None => {
                self.lengths.push(0);
                self.metas.push(String::new());
            }
            Some(g) => {
                let (batch, meta) = g.to_batch()?;
                let n = batch.num_rows();
                self.w.write_batch(&batch)?;
                self.lengths.push(n as u32);
                self.metas.push(meta.to_json().to_string());
                self.rows += n as u64;
            }
        }
        Ok(())
    }

    /// The file's bytes, with the IVF model's `centroids` tensor and `loss`.
    pub fn finish(mut self, centroids: crate::pb::Tensor, loss: f64) -> Result<Vec<u8>> {
        use prost::Message;
        self.w.set_schema_metadata(
            crate::vector::hnsw::HNSW_METADATA_KEY,
            &serde_json::to_string(&self.metas)?,
        );
        let model = crate::pb::Ivf {
            offsets: self.offsets,
            lengths: self.lengths,
            centroids_tensor: Some(centroids),
            loss: Some(loss),
            ..Default::default()
        };
        self.w.add_global_buffer(model.encode_to_vec());
        Ok(self.w.finish()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::{dot, l2};
    use crate::vector::hnsw::{Graph, GraphQuery};

    /// The entry point of pylance 14's 1M-node graph (see the level test).
    const ENTRY_1M: usize = 299_562;

    fn points(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        use rand::{Rng, SeedableRng};
        let mut r = rand::rngs::SmallRng::seed_from_u64(seed);
        (0..n * dim)
            .map(|_| r.random::<f32>() * 2.0 - 1.0)
            .collect()
    }

    /// A graph built here, written as rows and read back by the searcher, finds the
    /// exact nearest neighbours of most queries (recall@10 over 50 queries ≥ 0.95 at
    /// ef 64), for L2 and dot; the layout is the reference's.
    /// `g` written as `index.idx`'s rows (its metadata in the schema) and read back.
    fn load(g: &BuiltGraph) -> Graph {
        let (batch, meta) = g.to_batch().unwrap();
        let json = serde_json::to_string(&vec![meta.to_json().to_string()]).unwrap();
        let schema = batch
            .schema()
            .as_ref()
            .clone()
            .with_metadata([(crate::vector::hnsw::HNSW_METADATA_KEY.to_string(), json)].into());
        let batch = batch.with_schema(Arc::new(schema)).unwrap();
        Graph::from_batch(&batch, g.len(), "test").unwrap()
    }

    /// Columns of a few distinct values (groups of equal vectors, which the heuristic
    /// links only among themselves), and half zero vectors under dot: every node is
    /// reachable from the entry point (2,272 of 3,000 were not before the repair
    /// searched for a reachable node to link a group from).
    #[test]
    fn degenerate_columns_leave_no_node_unreachable() {
        let dim = 8;
        let distinct = points(5, dim, 3);
        let few: Vec<f32> = (0..3000)
            .flat_map(|i| distinct[(i * 7 % 5) * dim..][..dim].to_vec())
            .collect();
        let mut zeros = points(3000, dim, 4);
        zeros[..1500 * dim].fill(0.0);
        for (v, dot) in [(&few, false), (&few, true), (&zeros, true), (&zeros, false)] {
            let space = Space {
                vectors: v,
                dim,
                dot,
            };
            let params = HnswBuild {
                m: 8,
                ef_construction: 40,
                max_level: 7,
            };
            for threads in [1, 2] {
                let g = build_graph(space, params, 5, threads);
                let loaded = load(&g);
                assert_eq!(loaded.unreachable(), 0, "dot {dot}, {threads} threads");
            }
        }
    }

    #[test]
    fn built_graphs_load_and_find_neighbours() {
        // 12-d rows prefetched whole; 300-d ones head first, then two rows ahead (and
        // a wider beam: uniform 300-d points are far harder to search)
        for (n, dim, ef) in [(2000, 12, 64), (600, 300, 200)] {
            graphs_find_neighbours(n, dim, ef);
        }
    }

    fn graphs_find_neighbours(n: usize, dim: usize, ef: usize) {
        let v = points(n, dim, 7);
        for dotp in [false, true] {
            let space = Space {
                vectors: &v,
                dim,
                dot: dotp,
            };
            let params = HnswBuild {
                m: 8,
                ef_construction: 64,
                max_level: 7,
            };
            let g = build_graph(space, params, 42, 2);
            let meta = g.to_batch().unwrap().1;
            assert_eq!(meta.level_offsets.len(), 8);
            assert_eq!(meta.level_offsets[1], n);
            // two threads inserting at once: no node links to itself or twice to one
            for (x, levels) in g.links.iter().enumerate() {
                for list in levels {
                    let mut ids: Vec<u32> = list.iter().map(|&(_, y)| y).collect();
                    assert!(!ids.contains(&(x as u32)), "node {x} links to itself");
                    ids.sort_unstable();
                    ids.dedup();
                    assert_eq!(ids.len(), list.len(), "node {x} links twice to one node");
                }
            }
            let loaded = load(&g);
            assert_eq!(loaded.unreachable(), 0);
            let queries = points(50, dim, 99);
            let (mut hit, mut all) = (0, 0);
            let mut vis = Visited::default();
            for q in queries.chunks(dim) {
                let d = |i: u32| {
                    let x = &v[i as usize * dim..(i as usize + 1) * dim];
                    if dotp {
                        1.0 - dot(q, x)
                    } else {
                        l2(q, x)
                    }
                };
                let mut exact: Vec<(f32, u32)> = (0..n as u32).map(|i| (d(i), i)).collect();
                exact.sort_by(|a, b| a.0.total_cmp(&b.0));
                let want: Vec<u32> = exact[..10].iter().map(|e| e.1).collect();
                let mut dist = d;
                let got = loaded.search(
                    GraphQuery {
                        k: 10,
                        ef,
                        acorn: false,
                    },
                    None,
                    &mut vis,
                    &mut dist,
                );
                hit += got.iter().filter(|s| want.contains(&s.id)).count();
                all += 10;
            }
            let recall = hit as f64 / all as f64;
            assert!(recall >= 0.95, "dim {dim} dot {dotp}: recall {recall}");
        }
    }

    /// A list cut back by its kept count ([`add_link`] with the count) is the list
    /// the heuristic over all its entries gives (the count withheld), link after link:
    /// uniform points, a few distinct points (ties everywhere), one repeated point.
    #[test]
    fn cut_backs_by_the_kept_count_equal_the_full_heuristic() {
        let dim = 8;
        let uniform = points(3000, dim, 11);
        let distinct = points(6, dim, 12);
        let few: Vec<f32> = (0..3000)
            .flat_map(|i| distinct[(i * 5 % 6) * dim..][..dim].to_vec())
            .collect();
        let same: Vec<f32> = (0..3000).flat_map(|_| distinct[..dim].to_vec()).collect();
        for (name, v) in [("uniform", &uniform), ("few", &few), ("same", &same)] {
            let space = Space {
                vectors: v,
                dim,
                dot: false,
            };
            for bound in [8, 40] {
                let (mut fast, mut full) = ((Vec::new(), None), Vec::new());
                let (mut shortcuts, mut taken) = (0, 0);
                for y in 1..3000u32 {
                    let new = Scored {
                        dist: space.dist(0, y),
                        id: y,
                    };
                    let before = fast.0.clone();
                    if fast.1.is_some()
                        && before.iter().all(|&(d, i)| Scored { dist: d, id: i } < new)
                    {
                        shortcuts += 1;
                    }
                    fast = add_link(space, fast.0, fast.1, new, bound);
                    if before.len() == bound && fast.0.contains(&(new.dist, new.id)) {
                        taken += 1;
                    }
                    full = add_link(space, full, None, new, bound).0;
                    assert_eq!(fast.0, full, "{name}, bound {bound}, link {y}");
                    assert_eq!(fast.0.len(), (y as usize).min(bound));
                }
                assert!(
                    shortcuts > 100,
                    "{name}, bound {bound}: {shortcuts} shortcuts"
                );
                // full lists took new links and refused others (among repeated points
                // the first copy keeps out every later one)
                assert!(
                    taken > 0 || name != "uniform",
                    "{name}, bound {bound}: {taken}"
                );
                assert!(taken < 2999 - bound, "{name}, bound {bound}: {taken}");
            }
        }
    }

    /// Levels as pylance 14 draws them: its 1M-node graph (m 20, 7 levels) holds
    /// 49,920 / 2,499 / 120 / 4 / 1 / 1 nodes on levels 1 to 6 (a node on a level is on
    /// every level below), entered at node 299,562 on level 6.
    #[test]
    fn levels_are_drawn_as_pylance_draws_them() {
        let levels = draw_levels(1_000_000, HnswBuild::default(), LEVEL_SEED);
        let above: Vec<usize> = (1..7)
            .map(|l| levels.iter().filter(|&&x| x >= l).count())
            .collect();
        assert_eq!(above, [49_920, 2_499, 120, 4, 1, 1]);
        assert_eq!(entry_point(&levels), (ENTRY_1M, 6));
    }

    #[test]
    fn settings_below_the_references_minimums_are_refused() {
        for (m, ef, lv) in [(3, 10, 7), (8, 0, 7), (8, 7, 7), (8, 10, 0), (8, 10, 65)] {
            let p = HnswBuild {
                m,
                ef_construction: ef,
                max_level: lv,
            };
            assert!(p.validate().is_err(), "{p:?}");
        }
        assert!(HnswBuild::default().validate().is_ok());
    }
}
