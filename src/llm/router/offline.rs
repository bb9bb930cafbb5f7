//! The offline router: scores an instruction against every spawnable expert's role,
//! description, identity and instructions (and its mesh's description and prose), with no
//! model.
//!
//! How an instruction is read:
//!
//! - its terms: words without stopwords, numbers and anything under a negation ("don't fix
//!   anything yet" asks for no fix), stemmed (see `lexical`);
//! - its concepts: everyday phrasings mapped onto the catalog's own words ("look over my diff"
//!   → "reviews"; see `concepts`); the words of a phrase give way to its meaning; concepts of a
//!   team's field (software, journalism) count only toward choosing the mesh;
//! - code-like tokens (`snake_case`, `--flags`, `file.ext`) are software signals, read as the
//!   software concept;
//! - a question ("…?", "how do I …") is evidence for the experts whose descriptions say they
//!   take questions;
//! - what perception has seen is evidence too: when the engine finds the instruction's words in
//!   a source's recent items, the experts granted that source gain [`W_PERCEIVED`] ("is the
//!   harbour bridge closed?" goes to the team watching the harbour, though no declaration says
//!   "harbour").
//!
//! How experts are scored, in two views that are added:
//!
//! - the member view: each term counts by the most telling field of the expert it appears in
//!   (its mesh's description and prose included) and by how rare it is among the experts;
//! - the team view: the same against each mesh as a whole (all its experts' words), with
//!   rarity among meshes, so the team is chosen by its whole vocabulary and the member by what
//!   sets it apart from the others.
//!
//! Each view is normalised by what a perfect match of the instruction's terms would score, and
//! words the catalog never uses count a little in that perfect score: an instruction mostly
//! about things no expert mentions matches weakly. With a fallback expert set, a weak best
//! match goes to the fallback; without one, any positive match wins. Parked meshes are never
//! scored.

use std::collections::{BTreeMap, BTreeSet};

use std::sync::Arc;

use super::concepts::{Concepts, QUESTION, SOFTWARE};
use super::lexical::{code_tokens, is_question, terms, words};
use super::meanings::RouteMeanings;
use super::{Assignment, Known, NOTHING_KNOWN, RouteError, RouteMethod, Router, RoutingDecision};
use crate::aem::Catalog;
use crate::llm::model::BoxFuture;
use crate::memory::semantic::{EmbedError, Embedder};

/// The model's vectors of an instruction's pieces, by piece text.
pub type Meanings = std::collections::HashMap<String, Vec<f32>>;

/// Field weights, most telling first: the role name and the one-line description say what an
/// expert is for; the identity who it is; the instructions how it works (long, so many words
/// there are incidental); the mesh's description and prose what its team is about.
const W_ROLE: f64 = 3.0;
const W_DESCRIPTION: f64 = 3.0;
const W_IDENTITY: f64 = 2.0;
const W_INSTRUCTIONS: f64 = 1.0;
const W_MESH: f64 = 1.0;
const W_PREAMBLE: f64 = 0.5;
/// The highest field weight: a term's weight in a perfect match.
const W_TOP: f64 = 3.0;

/// Share of the score that comes from the team view (the rest from the member view).
const MESH_SHARE: f64 = 0.4;

/// How much a word no expert uses counts in the perfect score, relative to the rarest word the
/// catalog does use: enough that an instruction made mostly of such words scores low, not so
/// much that one unfamiliar noun sinks a clear request.
const UNKNOWN_SHARE: f64 = 0.35;

/// A concept found in an instruction weighs twice a plain word: a phrasing of what an expert
/// does ("look over my diff") states the request, where a single word may be incidental. The
/// weight is spread over the concept's `k` catalog words (each gets `W_CONCEPT / sqrt(k)`), so
/// a concept counts about the same however many words the catalog uses for it.
const W_CONCEPT: f64 = 2.0;

/// A question's form is weak evidence, half of one plain word: it says "this wants an answer",
/// not what about.
const W_QUESTION: f64 = 0.5;

/// An expert granted a perception source whose recent items share the instruction's words gains
/// this much (scores run from 0 to 1): the team that has seen what is asked about is the one to
/// ask, whatever its declarations call it.
pub const W_PERCEIVED: f64 = 0.3;

/// With a fallback expert, a best score under this goes to the fallback: a request whose best
/// match is weak is a general one.
const MIN_SCORE: f64 = 0.15;

/// A piece after the first stays with the previous piece's expert unless another expert beats
/// it by more than this share of the best score: "do X, then Y" splits only when Y clearly
/// belongs elsewhere.
const SPLIT_MARGIN: f64 = 0.25;

/// Words that start a new piece of work inside one instruction.
const SEQUENCE_MARKERS: &[&str] = &[
    ", and then ",
    " and then ",
    ", then ",
    "; then ",
    " then ",
    ", after that ",
    ". after that ",
    " after that ",
    ". then ",
    ". next, ",
    ". finally, ",
];

/// Term weights per document (an expert, or a mesh) with the rarity of each term among them.
#[derive(Debug, Clone, Default)]
struct Index {
    /// Per document: term → the highest weight of a field it appears in.
    docs: Vec<BTreeMap<String, f64>>,
    /// Term → inverse document frequency.
    idf: BTreeMap<String, f64>,
    /// The idf a word of no document would have (the rarest possible).
    idf_unknown: f64,
}

impl Index {
    fn new(docs: Vec<BTreeMap<String, f64>>) -> Self {
        let mut df: BTreeMap<String, usize> = BTreeMap::new();
        for d in &docs {
            for t in d.keys() {
                *df.entry(t.clone()).or_default() += 1;
            }
        }
        let n = docs.len() as f64;
        // Smoothed: a term in every document keeps a little weight, a term in one the most.
        let idf = df
            .into_iter()
            .map(|(t, d)| (t, ((n + 1.0) / d as f64).ln()))
            .collect();
        Self {
            docs,
            idf,
            idf_unknown: (n + 1.0).ln(),
        }
    }

    /// Each document's score for `query` (term → weight), normalised by a perfect match.
    fn scores(&self, query: &BTreeMap<String, f64>) -> Vec<f64> {
        let perfect = query
            .iter()
            .map(|(t, q)| {
                q * W_TOP
                    * self
                        .idf
                        .get(t)
                        .copied()
                        .unwrap_or(self.idf_unknown * UNKNOWN_SHARE)
            })
            .fold(0.0, |a, b| a + b);
        self.docs
            .iter()
            .map(|d| {
                // Folded from +0.0: `sum` of nothing is -0.0.
                let raw = query
                    .iter()
                    .filter_map(|(t, q)| Some(q * d.get(t)? * self.idf.get(t)?))
                    .fold(0.0, |a, b| a + b);
                if perfect > 0.0 {
                    (raw / perfect).clamp(0.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect()
    }
}

/// Lexical router over a catalog's spawnable experts.
#[derive(Debug, Clone)]
pub struct OfflineRouter {
    /// Expert ids, in catalog order (sorted), one per document of `experts`.
    ids: Vec<String>,
    /// The member view: one document per expert.
    experts: Index,
    /// The team view: one document per mesh with a spawnable expert.
    meshes: Index,
    /// Per expert, its mesh's document in `meshes`.
    mesh_of: Vec<usize>,
    /// Per expert, the perception sources it is granted, as `<mesh>/<source>`.
    sources: Vec<Vec<String>>,
    concepts: Concepts,
    fallback: Option<String>,
    /// The local model's reading of the experts, when routing reads meanings too.
    meanings: Option<Arc<RouteMeanings>>,
}

impl OfflineRouter {
    /// Indexes every spawnable expert of `catalog`.
    pub fn new(catalog: &Catalog) -> Self {
        let mut ids = Vec::new();
        let mut docs = Vec::new();
        let mut mesh_names: Vec<&str> = Vec::new();
        let mut mesh_docs: Vec<BTreeMap<String, f64>> = Vec::new();
        let mut mesh_of = Vec::new();
        let mut sources = Vec::new();
        for e in catalog.spawnable() {
            let (mesh, preamble) = catalog
                .mesh(&e.mesh)
                .map_or(("", ""), |m| (m.description.as_str(), m.preamble.as_str()));
            let mut weights = BTreeMap::new();
            for (text, w) in [
                (preamble, W_PREAMBLE),
                (e.instructions.as_str(), W_INSTRUCTIONS),
                (mesh, W_MESH),
                (e.identity.as_str(), W_IDENTITY),
                (e.role.as_str(), W_ROLE),
                (e.description.as_str(), W_DESCRIPTION),
            ] {
                for t in terms(text) {
                    let entry = weights.entry(t).or_insert(0.0);
                    if w > *entry {
                        *entry = w;
                    }
                }
            }
            let m = match mesh_names.iter().position(|n| *n == e.mesh) {
                Some(m) => m,
                None => {
                    mesh_names.push(&e.mesh);
                    mesh_docs.push(BTreeMap::new());
                    mesh_names.len() - 1
                }
            };
            for (t, w) in &weights {
                let entry = mesh_docs[m].entry(t.clone()).or_insert(0.0);
                if *w > *entry {
                    *entry = *w;
                }
            }
            mesh_of.push(m);
            sources.push(
                e.sources
                    .iter()
                    .map(|s| format!("{}/{s}", e.mesh))
                    .collect(),
            );
            ids.push(e.id.clone());
            docs.push(weights);
        }
        Self {
            ids,
            experts: Index::new(docs),
            meshes: Index::new(mesh_docs),
            mesh_of,
            sources,
            concepts: Concepts::new(),
            fallback: None,
            meanings: None,
        }
    }

    /// This router reading meanings too: the experts' profiles of `catalog` (the one it was made
    /// from) embedded now with `embedder`, each instruction when it is routed (see `meanings`).
    pub async fn with_meanings(
        mut self,
        catalog: &Catalog,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, EmbedError> {
        let meanings = RouteMeanings::new(catalog, &self.ids, embedder).await?;
        self.meanings = Some(Arc::new(meanings));
        Ok(self)
    }

    /// Vectors of the pieces `instruction` is routed in, by piece text (none without meanings,
    /// or when the model fails: the rules route alone then).
    pub async fn piece_meanings(&self, instruction: &str) -> Meanings {
        let Some(meanings) = &self.meanings else {
            return Meanings::new();
        };
        let texts = pieces(instruction);
        match meanings.embed(&texts).await {
            Ok(vectors) => texts.into_iter().zip(vectors).collect(),
            Err(e) => {
                tracing::warn!("routing by the rules alone: {e}");
                Meanings::new()
            }
        }
    }

    /// Routes instructions that match no expert to `expert` (`<mesh>/<role>`, spawnable).
    pub fn with_fallback(mut self, expert: &str) -> Result<Self, RouteError> {
        if !self.ids.iter().any(|id| id == expert) {
            return Err(RouteError::BadFallback(expert.to_string()));
        }
        self.fallback = Some(expert.to_string());
        Ok(self)
    }

    /// Ids of the experts it can choose, sorted.
    pub fn experts(&self) -> impl Iterator<Item = &str> {
        self.ids.iter().map(String::as_str)
    }

    /// The instruction as weighted terms, for the member view and for the team view: its own
    /// terms, except words a concept's cue accounted for, plus the words of every concept it
    /// mentions (team concepts in the team view only).
    fn query(&self, instruction: &str) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
        let text = words(instruction);
        let (mut found, used) = self.concepts.found(&text);
        if code_tokens(instruction) > 0 && !found.contains(&(SOFTWARE, true)) {
            found.push((SOFTWARE, true));
        }
        if is_question(instruction) {
            found.push((QUESTION, false));
        }
        let mut member: BTreeMap<String, f64> = BTreeMap::new();
        for (w, used) in text.iter().zip(used) {
            // A cue's words that the catalog never uses are accounted for by the concept ("pair"
            // and "eyes" in "second pair of eyes"); the words it does use still count.
            let known = self.experts.idf.contains_key(&w.stem);
            if w.content && !w.negated && (known || !used) {
                member.insert(w.stem.clone(), 1.0);
            }
        }
        let mut team = member.clone();
        for (means, is_team) in found {
            let ts: BTreeSet<String> = terms(means).into_iter().collect();
            let mass = if means == QUESTION {
                W_QUESTION
            } else {
                W_CONCEPT
            };
            let each = mass / (ts.len() as f64).sqrt();
            for t in ts {
                for query in [Some(&mut team), (!is_team).then_some(&mut member)]
                    .into_iter()
                    .flatten()
                {
                    let entry = query.entry(t.clone()).or_insert(0.0);
                    *entry = entry.max(each);
                }
            }
        }
        (member, team)
    }

    /// Every spawnable expert with its score for `instruction`, best first (ties by id).
    pub fn rank(&self, instruction: &str) -> Vec<(String, f64)> {
        self.rank_knowing(instruction, &[])
    }

    /// [`rank`](Self::rank), knowing which perception sources (`<mesh>/<source>`) have seen
    /// what the instruction is about.
    pub fn rank_knowing(&self, instruction: &str, perceived: &[String]) -> Vec<(String, f64)> {
        self.rank_with(instruction, perceived, None)
    }

    /// [`OfflineRouter::rank_knowing`], with the model's vector of `instruction` when there is
    /// one (experts whose profiles read close to it gain on the rules' score).
    fn rank_with(
        &self,
        instruction: &str,
        perceived: &[String],
        vector: Option<&[f32]>,
    ) -> Vec<(String, f64)> {
        let (member, team) = self.query(instruction);
        let meshes = self.meshes.scores(&team);
        let boosts = match (&self.meanings, vector) {
            (Some(meanings), Some(vector)) => meanings.boosts(vector),
            _ => vec![0.0; self.ids.len()],
        };
        let mut ranked: Vec<(String, f64)> = self
            .ids
            .iter()
            .zip(self.experts.scores(&member))
            .zip(self.mesh_of.iter().zip(&self.sources))
            .zip(boosts)
            .map(|(((id, s), (m, sources)), boost)| {
                let mut score = (1.0 - MESH_SHARE) * s + MESH_SHARE * meshes[*m] + boost;
                if sources.iter().any(|s| perceived.contains(s)) {
                    score += W_PERCEIVED;
                }
                (id.clone(), score.clamp(0.0, 1.0))
            })
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked
    }

    /// The best expert and its score, or `None` when nothing matches at all.
    pub fn best(&self, instruction: &str) -> Option<(String, f64)> {
        self.rank(instruction)
            .into_iter()
            .next()
            .filter(|(_, s)| *s > 0.0)
    }

    /// The expert a piece goes to, given the expert of the piece before it: `None` when nothing
    /// matches, or when the best match is weak and a fallback expert is set (the fallback then
    /// takes what matches nobody).
    fn choose(
        &self,
        piece: &str,
        previous: Option<&str>,
        perceived: &[String],
        meanings: &Meanings,
    ) -> Option<(String, f64)> {
        let vector = meanings.get(piece).map(Vec::as_slice);
        let ranked = self.rank_with(piece, perceived, vector);
        let (best, score) = ranked.first().cloned().filter(|(_, s)| *s > 0.0)?;
        if self.fallback.is_some() && score < MIN_SCORE {
            return None;
        }
        if let Some(prev) = previous
            && let Some((_, s)) = ranked.iter().find(|(id, _)| id == prev)
            && *s >= score * (1.0 - SPLIT_MARGIN)
        {
            return Some((prev.to_string(), *s));
        }
        Some((best, score))
    }

    /// Splits `instruction` at explicit sequencing words ("then", "after that", …) and gives
    /// each piece its best expert; a piece stays with the expert before it unless another is
    /// clearly better, adjacent pieces for one expert are joined, and a piece that matches
    /// nobody joins the piece before it. One assignment when nothing splits. With a fallback
    /// expert, an instruction that matches nobody well goes to it whole.
    /// Returns the assignments with their scores.
    pub fn split(&self, instruction: &str) -> Result<(Vec<Assignment>, Vec<f64>), RouteError> {
        self.split_knowing(instruction, &[])
    }

    /// [`split`](Self::split), knowing which perception sources have seen what it is about.
    pub fn split_knowing(
        &self,
        instruction: &str,
        perceived: &[String],
    ) -> Result<(Vec<Assignment>, Vec<f64>), RouteError> {
        self.split_with(instruction, perceived, &Meanings::new())
    }

    /// [`OfflineRouter::split_knowing`] with the model's vectors of the instruction's pieces
    /// ([`OfflineRouter::piece_meanings`]).
    pub fn split_with(
        &self,
        instruction: &str,
        perceived: &[String],
        meanings: &Meanings,
    ) -> Result<(Vec<Assignment>, Vec<f64>), RouteError> {
        if instruction.trim().is_empty() {
            return Err(RouteError::EmptyInstruction);
        }
        if self.ids.is_empty() {
            return Err(RouteError::NoSpawnableExpert);
        }
        let mut out: Vec<(Assignment, f64)> = Vec::new();
        let mut pending = String::new();
        for piece in pieces(instruction) {
            let text = if pending.is_empty() {
                piece
            } else {
                format!("{} {}", std::mem::take(&mut pending), piece)
            };
            let previous = out.last().map(|(a, _)| a.domain.as_str());
            match self.choose(&text, previous, perceived, meanings) {
                Some((id, score)) => match out.last_mut() {
                    Some((last, s)) if last.domain == id => {
                        last.instruction = join(&last.instruction, &text);
                        *s = s.max(score);
                    }
                    _ => out.push((
                        Assignment {
                            domain: id,
                            instruction: text,
                        },
                        score,
                    )),
                },
                None => match out.last_mut() {
                    Some((last, _)) => last.instruction = join(&last.instruction, &text),
                    None => pending = text,
                },
            }
        }
        if out.is_empty() {
            let fallback = self.fallback.clone().ok_or_else(|| RouteError::NoMatch {
                instruction: instruction.trim().to_string(),
            })?;
            out.push((
                Assignment {
                    domain: fallback,
                    instruction: clean(instruction),
                },
                0.0,
            ));
        }
        Ok(out.into_iter().unzip())
    }
}

impl Router for OfflineRouter {
    fn route<'a>(
        &'a self,
        instruction: &'a str,
    ) -> BoxFuture<'a, Result<RoutingDecision, RouteError>> {
        self.route_in(instruction, &NOTHING_KNOWN)
    }

    fn route_in<'a>(
        &'a self,
        instruction: &'a str,
        known: &'a Known,
    ) -> BoxFuture<'a, Result<RoutingDecision, RouteError>> {
        Box::pin(async move {
            let meanings = self.piece_meanings(instruction).await;
            self.split_with(instruction, &known.perceived, &meanings)
                .map(|(assignments, scores)| RoutingDecision {
                    assignments,
                    method: RouteMethod::Offline { scores },
                })
        })
    }
}

fn pieces(instruction: &str) -> Vec<String> {
    let lower = instruction.to_lowercase();
    // Byte offsets are shared because to_lowercase keeps ASCII markers in place; only split
    // when the lengths agree (no case change altered the byte length).
    let mut cuts = Vec::new();
    if lower.len() == instruction.len() {
        for marker in SEQUENCE_MARKERS {
            let mut from = 0;
            while let Some(at) = lower[from..].find(marker) {
                let start = from + at;
                cuts.push((start, start + marker.len()));
                from = start + marker.len();
            }
        }
    }
    cuts.sort();
    let mut out = Vec::new();
    let mut pos = 0;
    for (start, end) in cuts {
        if start < pos {
            continue; // overlaps a longer marker already cut
        }
        out.push(&instruction[pos..start]);
        pos = end;
    }
    out.push(&instruction[pos..]);
    out.into_iter()
        .map(clean)
        .filter(|p| !p.is_empty())
        .collect()
}

/// Trims whitespace, leading connectives and trailing separators.
fn clean(piece: &str) -> String {
    let mut s = piece.trim();
    loop {
        let before = s;
        for lead in ["and ", "then ", "also ", ",", ";"] {
            if s.len() >= lead.len() && s[..lead.len()].eq_ignore_ascii_case(lead) {
                s = s[lead.len()..].trim_start();
            }
        }
        if s == before {
            break;
        }
    }
    s.trim_end_matches([',', ';', ' ']).trim().to_string()
}

fn join(a: &str, b: &str) -> String {
    let a = a.trim_end_matches(['.', ' ']);
    format!("{a}, then {b}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_only_at_sequencing_words() {
        assert_eq!(
            pieces("Verify the claim, then write a bulletin and then publish it."),
            ["Verify the claim", "write a bulletin", "publish it."]
        );
        assert_eq!(
            pieces("Check sources. Use official ones."),
            ["Check sources. Use official ones."]
        );
        assert_eq!(clean("  and then  do it ; "), "do it");
    }

    #[test]
    fn a_perfect_match_scores_one_and_words_nobody_uses_lower_it() {
        let doc = |ts: &[&str]| ts.iter().map(|t| (t.to_string(), W_TOP)).collect();
        let query = |ts: &[&str]| ts.iter().map(|t| (t.to_string(), 1.0)).collect();
        let index = Index::new(vec![doc(&["review", "diff"]), doc(&["send", "bulletin"])]);
        let s = index.scores(&query(&["review", "diff"]));
        assert!((s[0] - 1.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s[1], 0.0);
        let s = index.scores(&query(&["review", "diff", "zxqv"]));
        assert!(s[0] > 0.5 && s[0] < 1.0, "{s:?}");
        assert_eq!(index.scores(&query(&["zxqv"])), [0.0, 0.0]);
    }
}
