//! The offline router: scores an instruction against every spawnable expert's role,
//! description, identity and instructions (and its mesh's description), with no model.
//!
//! A term counts once per expert, weighted by the most telling field it appears in and by how
//! rare it is across experts; the score is normalised to `0..=1` (1: every term of the
//! instruction appears in the expert's role or description). Parked meshes are never scored.

use std::collections::{BTreeMap, BTreeSet};

use super::lexical::terms;
use super::{Assignment, RouteError, RouteMethod, Router, RoutingDecision};
use crate::aem::Catalog;
use crate::llm::model::BoxFuture;

/// Field weights, most telling first.
const W_DESCRIPTION: f64 = 3.0;
const W_ROLE: f64 = 3.0;
const W_IDENTITY: f64 = 2.0;
const W_INSTRUCTIONS: f64 = 1.0;
const W_MESH: f64 = 1.0;

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

#[derive(Debug, Clone)]
struct Profile {
    id: String,
    /// Term → the highest weight of a field it appears in.
    weights: BTreeMap<String, f64>,
}

/// Lexical router over a catalog's spawnable experts.
#[derive(Debug, Clone)]
pub struct OfflineRouter {
    profiles: Vec<Profile>,
    idf: BTreeMap<String, f64>,
    fallback: Option<String>,
}

impl OfflineRouter {
    /// Indexes every spawnable expert of `catalog`.
    pub fn new(catalog: &Catalog) -> Self {
        let profiles: Vec<Profile> = catalog
            .spawnable()
            .map(|e| {
                let mesh = catalog.mesh(&e.mesh).map_or("", |m| m.description.as_str());
                let mut weights = BTreeMap::new();
                for (text, w) in [
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
                Profile {
                    id: e.id.clone(),
                    weights,
                }
            })
            .collect();
        let mut df: BTreeMap<String, usize> = BTreeMap::new();
        for p in &profiles {
            for t in p.weights.keys() {
                *df.entry(t.clone()).or_default() += 1;
            }
        }
        let n = profiles.len() as f64;
        let idf = df
            .into_iter()
            .map(|(t, d)| (t, (1.0 + n / d as f64).ln()))
            .collect();
        Self {
            profiles,
            idf,
            fallback: None,
        }
    }

    /// Routes instructions that match no expert to `expert` (`<mesh>/<role>`, spawnable).
    pub fn with_fallback(mut self, expert: &str) -> Result<Self, RouteError> {
        if !self.profiles.iter().any(|p| p.id == expert) {
            return Err(RouteError::BadFallback(expert.to_string()));
        }
        self.fallback = Some(expert.to_string());
        Ok(self)
    }

    /// Ids of the experts it can choose, sorted.
    pub fn experts(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().map(|p| p.id.as_str())
    }

    /// Every spawnable expert with its score for `instruction`, best first (ties by id).
    pub fn rank(&self, instruction: &str) -> Vec<(String, f64)> {
        let query: BTreeSet<String> = terms(instruction).into_iter().collect();
        let max: f64 = query
            .iter()
            .map(|t| self.idf.get(t).copied().unwrap_or(0.0) * W_DESCRIPTION)
            .sum();
        let mut ranked: Vec<(String, f64)> = self
            .profiles
            .iter()
            .map(|p| {
                let raw: f64 = query
                    .iter()
                    .filter_map(|t| Some(p.weights.get(t)? * self.idf.get(t)?))
                    .sum();
                let score = if max > 0.0 { raw / max } else { 0.0 };
                (p.id.clone(), score)
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

    /// Splits `instruction` at explicit sequencing words ("then", "after that", …) and gives
    /// each piece its best expert; adjacent pieces for one expert are joined, and a piece that
    /// matches nobody joins the piece before it. One assignment when nothing splits.
    /// Returns the assignments with their scores.
    pub fn split(&self, instruction: &str) -> Result<(Vec<Assignment>, Vec<f64>), RouteError> {
        if instruction.trim().is_empty() {
            return Err(RouteError::EmptyInstruction);
        }
        if self.profiles.is_empty() {
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
            match self.best(&text) {
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
        let decided = self
            .split(instruction)
            .map(|(assignments, scores)| RoutingDecision {
                assignments,
                method: RouteMethod::Offline { scores },
            });
        Box::pin(async move { decided })
    }
}

/// Pieces of an instruction at sequencing words, each cleaned; empty pieces dropped.
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
}
