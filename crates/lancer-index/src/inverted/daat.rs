//! Document-at-a-time evaluation of one partition's posting lists
//! (docs/fts-index-format.md §16): MaxScore for a top-k OR query — lists whose score
//! bounds together cannot lift a document to the k-th best score are only probed at the
//! documents the other lists bring, never walked — and a galloping intersection for AND
//! and phrase queries. A document's score is summed in the caller's term order, as the
//! dense evaluation sums it, so the two agree bit for bit.

use super::segment::BOUND_GROUP;

/// One query term's list in a partition.
#[derive(Clone, Copy)]
pub struct Term<'a> {
    /// Document ids, ascending.
    pub docs: &'a [u32],
    /// Each document's BM25 weight before idf.
    pub weights: &'a [f32],
    /// The term's idf.
    pub idf: f32,
    /// The highest of `weights`.
    pub max: f32,
    /// The highest of each group of [`BOUND_GROUP`] weights.
    pub groups: &'a [f32],
}

impl Term<'_> {
    fn at(&self, i: usize) -> f32 {
        self.idf * self.weights[i]
    }

    fn bound(&self) -> f64 {
        f64::from(self.idf) * f64::from(self.max)
    }
}

/// The first index at or after `from` whose document is at least `target`.
pub fn gallop(docs: &[u32], from: usize, target: u32) -> usize {
    if from >= docs.len() || docs[from] >= target {
        return from;
    }
    // docs[lo] < target throughout; the answer lies in lo + 1 ..= hi
    let (mut lo, mut step) = (from, 1usize);
    loop {
        let hi = lo.saturating_add(step);
        if hi >= docs.len() {
            return lo + 1 + docs[lo + 1..].partition_point(|&d| d < target);
        }
        if docs[hi] >= target {
            return lo + 1 + docs[lo + 1..hi].partition_point(|&d| d < target);
        }
        lo = hi;
        step *= 2;
    }
}

/// A document's score: the contributions of the terms it holds (`at[t]`: its index in
/// term `t`'s list), added in term order from zero.
pub fn exact(terms: &[Term], at: &[Option<usize>]) -> f32 {
    let mut s = 0f32;
    for (t, a) in terms.iter().zip(at) {
        if let Some(i) = a {
            s += t.at(*i);
        }
    }
    s
}

/// A bound made safe against f32 rounding of the exact sum.
fn loose(x: f64) -> f64 {
    x * (1.0 + 1e-5) + 1e-30
}

/// OR of `terms` for a top-k search: hands `emit` every document that may score at
/// least `floor()` (checked again as `floor` rises), with its exact score times
/// `boost` (> 0). Documents that cannot reach it are skipped unscored.
pub fn or_top(terms: &[Term], boost: f32, floor: &dyn Fn() -> f32, emit: &mut dyn FnMut(u32, f32)) {
    let n = terms.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| terms[*a].bound().total_cmp(&terms[*b].bound()));
    // cum[j]: the bounds of order[0..=j] together
    let cum: Vec<f64> = order
        .iter()
        .scan(0f64, |s, &t| {
            *s += terms[t].bound();
            Some(*s)
        })
        .collect();
    let mut cur = vec![0usize; n];
    let mut at: Vec<Option<usize>> = vec![None; n];
    // order[first..] are walked; order[..first] only probed
    let mut first = 0;
    loop {
        let th = f64::from(floor()) / f64::from(boost);
        while first < n && loose(cum[first]) < th {
            first += 1;
        }
        let Some(d) = order[first..]
            .iter()
            .filter_map(|&t| terms[t].docs.get(cur[t]).copied())
            .min()
        else {
            return;
        };
        at.iter_mut().for_each(|a| *a = None);
        let mut partial = 0f64;
        for &t in &order[first..] {
            let c = cur[t];
            if terms[t].docs.get(c) == Some(&d) {
                at[t] = Some(c);
                partial += f64::from(terms[t].at(c));
                cur[t] = c + 1;
            }
        }
        let mut pruned = false;
        for j in (0..first).rev() {
            if loose(partial + cum[j]) < th {
                pruned = true;
                break;
            }
            let t = order[j];
            let c = gallop(terms[t].docs, cur[t], d);
            cur[t] = c;
            if terms[t].docs.get(c) == Some(&d) {
                at[t] = Some(c);
                partial += f64::from(terms[t].at(c));
            }
        }
        if !pruned {
            emit(d, exact(terms, &at) * boost);
        }
    }
}

/// The documents in every one of `terms`' lists, ascending, each with its index in
/// every list. With `floor` (and a `boost` > 0), groups of the shortest list whose
/// documents cannot score `floor()` (times `boost`) are skipped.
pub fn intersect(
    terms: &[Term],
    floor: Option<(&dyn Fn() -> f32, f32)>,
    emit: &mut dyn FnMut(u32, &[Option<usize>]),
) {
    let Some(driver) = (0..terms.len()).min_by_key(|&t| terms[t].docs.len()) else {
        return;
    };
    let mut cur = vec![0usize; terms.len()];
    let mut at: Vec<Option<usize>> = vec![None; terms.len()];
    let others: f64 = (0..terms.len())
        .filter(|&t| t != driver)
        .map(|t| terms[t].bound())
        .sum();
    let dt = &terms[driver];
    let mut checked_group = usize::MAX;
    let mut i = 0;
    'docs: while i < dt.docs.len() {
        if let Some((floor, boost)) = floor {
            let g = i / BOUND_GROUP;
            if g != checked_group && boost > 0.0 {
                checked_group = g;
                let th = f64::from(floor()) / f64::from(boost);
                let bound =
                    f64::from(dt.idf) * f64::from(dt.groups.get(g).copied().unwrap_or(f32::MAX));
                if loose(bound + others) < th {
                    i = (g + 1) * BOUND_GROUP;
                    continue;
                }
            }
        }
        let d = dt.docs[i];
        at[driver] = Some(i);
        for (t, term) in terms.iter().enumerate() {
            if t == driver {
                continue;
            }
            let c = gallop(term.docs, cur[t], d);
            cur[t] = c;
            match term.docs.get(c) {
                Some(&x) if x == d => at[t] = Some(c),
                Some(&x) => {
                    // leap the driver to the next document this list holds
                    i = gallop(terms[driver].docs, i + 1, x);
                    continue 'docs;
                }
                None => return,
            }
        }
        emit(d, &at);
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term<'a>(docs: &'a [u32], weights: &'a [f32], idf: f32) -> Term<'a> {
        let max = weights.iter().copied().fold(0f32, f32::max);
        Term {
            docs,
            weights,
            idf,
            max,
            groups: &[],
        }
    }

    #[test]
    fn gallop_finds_the_first_not_below() {
        let docs: Vec<u32> = (0..1000).map(|i| i * 3).collect();
        for from in [0, 1, 17, 500, 999, 1000] {
            for target in [0, 1, 2, 3, 299, 300, 1500, 2997, 2998, 5000] {
                let want = from + docs[from.min(docs.len())..].partition_point(|&d| d < target);
                assert_eq!(gallop(&docs, from, target), want, "{from} {target}");
            }
        }
        assert_eq!(gallop(&[], 0, 5), 0);
    }

    /// Every document's score by dense accumulation, in term order.
    fn dense(terms: &[Term]) -> std::collections::BTreeMap<u32, f32> {
        let mut m = std::collections::BTreeMap::new();
        for t in terms {
            for (i, &d) in t.docs.iter().enumerate() {
                *m.entry(d).or_insert(0f32) += t.at(i);
            }
        }
        m
    }

    fn lists(seed: u64) -> Vec<(Vec<u32>, Vec<f32>, f32)> {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..4)
            .map(|k| {
                let every = [1, 3, 17, 101][k];
                let docs: Vec<u32> = (0..5000u32).filter(|_| next() % every == 0).collect();
                let w = docs
                    .iter()
                    .map(|_| (next() % 1000) as f32 / 400.0 + 0.1)
                    .collect();
                (docs, w, [0.05f32, 0.7, 2.3, 4.9][k])
            })
            .collect()
    }

    #[test]
    fn or_top_keeps_the_dense_top_k() {
        for seed in 1..20u64 {
            let l = lists(seed);
            let terms: Vec<Term> = l.iter().map(|(d, w, i)| term(d, w, *i)).collect();
            let all = dense(&terms);
            let mut want: Vec<(f32, u32)> = all.iter().map(|(d, s)| (*s, *d)).collect();
            want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            want.truncate(10);
            let top = std::cell::RefCell::new(Vec::<(f32, u32)>::new());
            let floor = || {
                let t = top.borrow();
                if t.len() < 10 {
                    f32::NEG_INFINITY
                } else {
                    t[9].0
                }
            };
            let mut emitted = 0;
            or_top(&terms, 1.0, &floor, &mut |d, s| {
                emitted += 1;
                assert_eq!(s, all[&d], "doc {d}: the exact score");
                let mut t = top.borrow_mut();
                t.push((s, d));
                t.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                t.truncate(10);
            });
            assert_eq!(top.into_inner(), want, "seed {seed}");
            assert!(
                emitted < all.len() / 2,
                "seed {seed}: {emitted} of {}",
                all.len()
            );
        }
    }

    #[test]
    fn intersect_is_the_common_documents() {
        for seed in 1..10u64 {
            let l = lists(seed);
            let terms: Vec<Term> = l[..3].iter().map(|(d, w, i)| term(d, w, *i)).collect();
            let mut got = Vec::new();
            intersect(&terms, None, &mut |d, at| {
                for (t, a) in terms.iter().zip(at) {
                    assert_eq!(t.docs[a.unwrap()], d);
                }
                got.push(d);
            });
            let want: Vec<u32> = l[0]
                .0
                .iter()
                .copied()
                .filter(|d| l[1].0.contains(d) && l[2].0.contains(d))
                .collect();
            assert_eq!(got, want);
        }
    }
}
