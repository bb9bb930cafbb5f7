//! How alike two reports are, vetoes aside ([`similarities`]), and the clustering of a batch
//! into claims by those similarities ([`cluster`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use rayon::prelude::*;

use super::features::{Bag, Features, anchor};
use super::{
    ANCHOR_WEIGHT, MERGE_THRESHOLD, MIN_ANCHORS, MIN_PAIR_SIMILARITY, Meanings,
    OPPOSED_MERGE_THRESHOLD, Sameness, TITLE_SHARE,
};

/// A weighted bag of terms as (term number, weight), sorted by term number, with its squared
/// norm: what [`similarities`] compares, without comparing strings.
struct Vector {
    terms: Vec<(usize, f64)>,
    norm2: f64,
}

impl Vector {
    fn new(bag: &Bag, numbers: &BTreeMap<&str, usize>, idf: &[f64]) -> Self {
        let mut terms: Vec<(usize, f64)> = bag
            .iter()
            .map(|(t, w)| {
                let k = numbers[t.as_str()];
                (k, w * idf[k])
            })
            .collect();
        terms.sort_unstable_by_key(|&(k, _)| k);
        let norm2 = terms.iter().map(|(_, w)| w * w).sum();
        Self { terms, norm2 }
    }

    /// The weights of the terms both have, in term order.
    fn shared<'a>(&'a self, other: &'a Vector) -> impl Iterator<Item = (f64, f64)> + 'a {
        let (mut x, mut y) = (self.terms.iter().peekable(), other.terms.iter().peekable());
        std::iter::from_fn(move || {
            loop {
                let (&&(i, wi), &&(j, wj)) = (x.peek()?, y.peek()?);
                match i.cmp(&j) {
                    std::cmp::Ordering::Less => _ = x.next(),
                    std::cmp::Ordering::Greater => _ = y.next(),
                    std::cmp::Ordering::Equal => {
                        x.next();
                        y.next();
                        return Some((wi, wj));
                    }
                }
            }
        })
    }

    fn cosine(&self, other: &Vector) -> f64 {
        let dot: f64 = self.shared(other).map(|(a, b)| a * b).sum();
        let norms = (self.norm2 * other.norm2).sqrt();
        if norms > 0.0 { dot / norms } else { 0.0 }
    }

    /// How much of the smaller-weighted bag the other covers (the weighted overlap coefficient).
    fn containment(&self, other: &Vector) -> f64 {
        let smaller = self.norm2.min(other.norm2);
        let covered: f64 = self.shared(other).map(|(a, _)| a * a).sum();
        if smaller > 0.0 {
            covered / smaller
        } else {
            0.0
        }
    }
}

/// What comparing every pair of a batch's reports found, kept for the pairs alike from
/// [`MIN_PAIR_SIMILARITY`]: nothing reads a similarity below it (a pair below can never link,
/// and every other test asks for more), so a batch of 10,000 reports keeps its alike pairs
/// rather than all 50 million.
pub(super) struct Pairs {
    /// Row `i`: the pairs of report `i` with later reports, by position.
    rows: Vec<Vec<Pair>>,
}

/// One kept pair of a [`Pairs`] row.
struct Pair {
    /// The later report's position (a batch is far below 4 billion reports).
    j: u32,
    /// How far the model reads the two as one.
    same: Sameness,
    /// The higher of the word and the model similarity.
    sim: f64,
}

impl Pairs {
    fn get(&self, i: usize, j: usize) -> Option<&Pair> {
        let (i, j) = (i.min(j), i.max(j));
        let row = self.rows.get(i)?;
        row.binary_search_by_key(&j, |p| p.j as usize)
            .ok()
            .map(|k| &row[k])
    }

    /// The similarity of reports `i` and `j`: the higher of the words' and the model's; 0 below
    /// [`MIN_PAIR_SIMILARITY`].
    pub(super) fn sim(&self, i: usize, j: usize) -> f64 {
        self.get(i, j).map_or(0.0, |p| p.sim)
    }

    /// How far the model reads reports `i` and `j` as one ([`Sameness::Unknown`] without it;
    /// a pair it reads as one subject is alike past [`MIN_PAIR_SIMILARITY`]).
    pub(super) fn sameness(&self, i: usize, j: usize) -> Sameness {
        self.get(i, j).map_or(Sameness::Unknown, |p| p.same)
    }

    /// The kept pairs of report `i` with later reports: (later report, similarity).
    pub(super) fn row(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.rows[i].iter().map(|p| (p.j as usize, p.sim))
    }
}

/// The model's vectors of a batch's reports, by position (`None`: it has none for a report).
pub(super) type Model<'m> = (&'m Meanings, Vec<Option<&'m Vec<f32>>>);

/// Compares every pair of reports, vetoes aside: the words (see the module docs of `claims`)
/// and, where both have a vector, the model ([`Meanings::read_pair`]). Rows run in parallel:
/// this is the one step every pair of a batch goes through. With `focus` (by position), only
/// the pairs holding a report it marks: the others read as unalike.
pub(super) fn similarities(
    features: &[Features],
    numbered: &Numbered,
    model: Option<&Model<'_>>,
    focus: Option<&[bool]>,
) -> Pairs {
    let mut numbers: BTreeMap<&str, usize> = BTreeMap::new();
    let mut df: Vec<f64> = Vec::new();
    for term in features.iter().flat_map(|f| f.full.keys()) {
        let next = numbers.len();
        let k = *numbers.entry(term).or_insert(next);
        if k == df.len() {
            df.push(0.0);
        }
        df[k] += 1.0;
    }
    // Title terms are all in the full bag, so every term has a number.
    let n = features.len();
    let idf: Vec<f64> = df.iter().map(|d| (1.0 + n as f64 / d).ln()).collect();
    let vectors: Vec<(Vector, Vector)> = features
        .iter()
        .map(|f| {
            let title = Vector::new(&f.title, &numbers, &idf);
            (title, Vector::new(&f.full, &numbers, &idf))
        })
        .collect();
    let words = |i: usize, j: usize| {
        let (a, b, (title_a, full_a), (title_b, full_b)) =
            (&features[i], &features[j], &vectors[i], &vectors[j]);
        let title = title_a.cosine(title_b);
        let sim = match a.has_summary && b.has_summary {
            true => TITLE_SHARE * title + (1.0 - TITLE_SHARE) * full_a.cosine(full_b),
            false => title,
        };
        // A denial is often a fragment of what it denies: judge it by how much of it is covered.
        let sim = if a.opposes(b) {
            sim.max(title_a.containment(title_b))
        } else {
            sim
        };
        sim.max(anchor_overlap(a, b, numbered.share_all(i, j)))
    };
    let pair = |i: usize, j: usize| {
        let sim = words(i, j);
        let read = model.and_then(|(m, vectors)| {
            let (a, b) = (vectors[i]?, vectors[j]?);
            Some(m.read_pair(a, b))
        });
        let (sim, same) = read.map_or((sim, Sameness::Unknown), |(s, same)| (sim.max(s), same));
        (sim >= MIN_PAIR_SIMILARITY).then_some(Pair {
            j: j as u32,
            same,
            sim,
        })
    };
    let wanted = |i: usize, j: usize| focus.is_none_or(|f| f[i] || f[j]);
    let rows = (0..n)
        .into_par_iter()
        .map(|i| {
            let later = (i + 1..n).filter(|&j| wanted(i, j));
            later.filter_map(|j| pair(i, j)).collect()
        })
        .collect();
    Pairs { rows }
}

/// What every pair of a batch compares of two reports' words, numbered once per batch: each
/// report's anchors ([`Features::anchors`]) and the names among them, the strong names of its
/// title and every stem it mentions, as sorted lists of numbers. Comparing the
/// strings took a third of the time of judging 10,000 reports.
pub(super) struct Numbered {
    all: Vec<Vec<u32>>,
    names: Vec<Vec<u32>>,
    strong: Vec<Vec<u32>>,
    mentions: Vec<Vec<u32>>,
}

impl Numbered {
    pub(super) fn of(features: &[Features]) -> Self {
        fn ids<'f>(
            numbers: &mut HashMap<&'f str, u32>,
            words: impl IntoIterator<Item = &'f String>,
        ) -> Vec<u32> {
            let mut v = Vec::new();
            for w in words {
                let next = numbers.len() as u32;
                v.push(*numbers.entry(w.as_str()).or_insert(next));
            }
            v.sort_unstable();
            v
        }
        let mut numbers = HashMap::new();
        let mut each = |of: &dyn Fn(&Features) -> Vec<&String>| -> Vec<Vec<u32>> {
            features.iter().map(|f| ids(&mut numbers, of(f))).collect()
        };
        Self {
            all: each(&|f| f.anchors.iter().collect()),
            names: each(&|f| f.anchor_names.iter().collect()),
            strong: each(&|f| {
                f.name_list
                    .iter()
                    .filter(|n| n.strong)
                    .map(|n| &n.stem)
                    .collect()
            }),
            mentions: each(&|f| f.mentions.iter().collect()),
        }
    }

    /// Whether each of reports `i` and `j` names a place or person the batch confirms that
    /// the other never mentions, as [`crate::llm::offline::frame::strong_names_conflict`]
    /// reads it.
    pub(super) fn names_elsewhere(&self, i: usize, j: usize) -> bool {
        let foreign = |x: usize, y: usize| {
            let mentions = &self.mentions[y];
            self.strong[x]
                .iter()
                .any(|n| mentions.binary_search(n).is_err())
        };
        foreign(i, j) && foreign(j, i)
    }

    /// [`share`] of the anchors of reports `i` and `j`.
    pub(super) fn share_all(&self, i: usize, j: usize) -> Option<f64> {
        share(&self.all[i], &self.all[j])
    }

    /// [`share`] of the names among the anchors of reports `i` and `j`.
    pub(super) fn share_names(&self, i: usize, j: usize) -> Option<f64> {
        share(&self.names[i], &self.names[j])
    }

    /// Whether reports `i` and `j` have a name among their anchors in common.
    pub(super) fn names_meet(&self, i: usize, j: usize) -> bool {
        common(&self.names[i], &self.names[j]) > 0
    }
}

/// How many numbers two sorted lists have in common.
fn common(x: &[u32], y: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while let (Some(a), Some(b)) = (x.get(i), y.get(j)) {
        match a.cmp(b) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => (i, j, n) = (i + 1, j + 1, n + 1),
        }
    }
    n
}

/// The share of anchors two lists have in common, as a share of the fewer and weighted by
/// [`ANCHOR_WEIGHT`]; `None` unless both have and share at least [`MIN_ANCHORS`].
fn share(x: &[u32], y: &[u32]) -> Option<f64> {
    let fewer = x.len().min(y.len());
    if fewer < MIN_ANCHORS {
        return None;
    }
    let shared = common(x, y);
    (shared >= MIN_ANCHORS).then(|| ANCHOR_WEIGHT * shared as f64 / fewer as f64)
}

/// How much two reports share of what pins an event down — names the batch confirms and figures,
/// anywhere in them — as a share of the fewer (`share`, [`Numbered::share_all`]): paraphrases
/// that share few words still name the same people and places with the same numbers. Needs
/// [`MIN_ANCHORS`] in common, and nothing when a headline gives a figure that the other report
/// does not: names alone are a place or a club, not an event (a match report with its score and
/// a ground's sale both name the club and its ground).
fn anchor_overlap(a: &Features, b: &Features, share: Option<f64>) -> f64 {
    let unmatched = |f: &Features, other: &BTreeSet<String>| {
        let mut headline = f.title_figures.iter().filter(|(kind, _)| *kind != "year");
        headline.any(|(kind, values)| values.iter().any(|v| !other.contains(&anchor(kind, v))))
    };
    match share {
        Some(share) if !unmatched(a, &b.anchors) && !unmatched(b, &a.anchors) => share,
        _ => 0.0,
    }
}

/// Two reports that may share a claim: `i < j`, their similarity, and whether their titles
/// oppose (see [`Features::opposes`]).
pub(super) struct Linkable {
    pub(super) i: usize,
    pub(super) j: usize,
    pub(super) sim: f64,
    pub(super) opposed: bool,
}

/// Per linkable pair of clusters: (sum, count) of its agreeing pairs, (sum, count) of its
/// opposed pairs, and its lowest pair.
#[derive(Clone, Copy)]
struct Link {
    agree: f64,
    n_agree: usize,
    opposed: f64,
    n_opposed: usize,
    min: f64,
}

impl Link {
    fn of(pair: &Linkable) -> Self {
        let (s, o) = (pair.sim, usize::from(pair.opposed));
        Self {
            agree: s * (1 - o) as f64,
            n_agree: 1 - o,
            opposed: s * o as f64,
            n_opposed: o,
            min: s,
        }
    }

    fn merged(self, other: Link) -> Self {
        Self {
            agree: self.agree + other.agree,
            n_agree: self.n_agree + other.n_agree,
            opposed: self.opposed + other.opposed,
            n_opposed: self.n_opposed + other.n_opposed,
            min: self.min.min(other.min),
        }
    }

    /// Its mean similarity when the two clusters may merge (see [`cluster`]), else `None`.
    fn eligible(&self) -> Option<f64> {
        let mean = |sum: f64, count: usize| (count > 0).then(|| sum / count as f64);
        let ok = self.min >= MIN_PAIR_SIMILARITY
            && mean(self.agree, self.n_agree).is_none_or(|m| m >= MERGE_THRESHOLD)
            && mean(self.opposed, self.n_opposed).is_none_or(|m| m >= OPPOSED_MERGE_THRESHOLD);
        ok.then(|| (self.agree + self.opposed) / (self.n_agree + self.n_opposed) as f64)
    }
}

/// Average-linkage clustering of `n` reports over the pairs that may link (any other pair
/// cannot). A pair of clusters merges when none of its pairs is below [`MIN_PAIR_SIMILARITY`],
/// its agreeing pairs average [`MERGE_THRESHOLD`] and its opposed pairs
/// [`OPPOSED_MERGE_THRESHOLD`]: a denial in a cluster lowers the bar for itself only, never for
/// the reports that agree with each other (else a denial of a stadium sale would carry a match
/// report at the same ground into its claim). The most similar pair merges first, ties to the
/// earliest pair, so the result depends only on the order of the input. A merged cluster links
/// to another only when both of its parts did. Returns clusters of indices, each sorted.
///
/// Kept sparse, since vetoes leave most pairs of a batch unlinkable ([`Links`]).
pub(super) fn cluster(n: usize, pairs: impl IntoIterator<Item = Linkable>) -> Vec<Vec<usize>> {
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut links = Links::new(n);
    for pair in pairs {
        links.insert(pair.i, pair.j, Link::of(&pair));
    }
    while let Some((i, j)) = links.best() {
        let moved = std::mem::take(&mut members[j]);
        members[i].extend(moved);
        let (from_i, from_j) = (links.take(i), links.take(j));
        for (k, a) in from_i {
            if let Some(&b) = from_j.get(&k) {
                links.insert(i, k, a.merged(b));
            }
        }
    }
    members.retain(|m| !m.is_empty());
    members.iter_mut().for_each(|m| m.sort_unstable());
    members
}

/// The links between clusters: by pair (`i < j`), each cluster's neighbours, and the eligible
/// links ordered by mean, highest first, then by pair (similarities are never negative, so
/// their bits order as they do).
struct Links {
    by_pair: BTreeMap<(usize, usize), Link>,
    neighbours: Vec<BTreeSet<usize>>,
    ready: BTreeSet<(Reverse<u64>, usize, usize)>,
}

impl Links {
    fn new(n: usize) -> Self {
        Self {
            by_pair: BTreeMap::new(),
            neighbours: vec![BTreeSet::new(); n],
            ready: BTreeSet::new(),
        }
    }

    fn rank(link: &Link, (i, j): (usize, usize)) -> Option<(Reverse<u64>, usize, usize)> {
        link.eligible().map(|mean| (Reverse(mean.to_bits()), i, j))
    }

    fn insert(&mut self, a: usize, b: usize, link: Link) {
        let pair = (a.min(b), a.max(b));
        self.by_pair.insert(pair, link);
        self.ready.extend(Self::rank(&link, pair));
        self.neighbours[a].insert(b);
        self.neighbours[b].insert(a);
    }

    /// The pair of clusters to merge next, if any may.
    fn best(&self) -> Option<(usize, usize)> {
        self.ready.first().map(|&(_, i, j)| (i, j))
    }

    /// Every link of cluster `c`, removed, by the other cluster.
    fn take(&mut self, c: usize) -> BTreeMap<usize, Link> {
        let mut out = BTreeMap::new();
        for k in std::mem::take(&mut self.neighbours[c]) {
            self.neighbours[k].remove(&c);
            let pair = (c.min(k), c.max(k));
            if let Some(link) = self.by_pair.remove(&pair) {
                if let Some(rank) = Self::rank(&link, pair) {
                    self.ready.remove(&rank);
                }
                out.insert(k, link);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_as_numbers_count_what_two_reports_share() {
        assert_eq!(common(&[1, 4, 7, 9], &[2, 4, 9, 11]), 2);
        assert_eq!(common(&[], &[1]), 0);
        // Shared as a share of the fewer, and nothing below the least to share.
        let expected = ANCHOR_WEIGHT * MIN_ANCHORS as f64 / MIN_ANCHORS as f64;
        let few: Vec<u32> = (0..MIN_ANCHORS as u32).collect();
        let more: Vec<u32> = (0..MIN_ANCHORS as u32 + 3).collect();
        assert_eq!(share(&few, &more), Some(expected));
        assert_eq!(share(&few[1..], &more), None);
    }
}
