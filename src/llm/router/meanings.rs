//! What the local sentence model adds to offline routing: each spawnable expert's profile (its
//! role and one-line description) is embedded once, when the router is made; an instruction is
//! embedded when it is routed, and each expert gains [`W_MEANING`] times the cosine of the two
//! (when positive) on the rules' score, which runs from 0 to 1. The rules still decide what they
//! are sure of; the model's reading carries some requests whose words the declarations do not use.
//!
//! What was tried on `eval/routing/tune.jsonl` (`iron eval routing`), and kept: the role and
//! description alone read better than with the identity, the mesh's description or sentences of
//! the instructions (each taken as its own vector, the best one counting); a weight of 0.6 with
//! no floor beat 0.3, 1.0 and 1.5 and floors of 0.15 to 0.3. The held-out half is reported in
//! BENCHMARKS.md: there the gain is within one case of the rules alone, so the engine does not
//! route this way (it would pay an embedding per goal for nothing measured). A one-line
//! declaration is a thin text to compare a request with; `iron eval routing` is where a richer
//! profile (declared example requests, say) would be measured first.

use std::sync::Arc;

use crate::aem::{Catalog, ExpertEntry};
use crate::memory::semantic::{EmbedError, Embedder};

/// The most the model's reading adds to an expert's score (at a cosine of 1).
pub const W_MEANING: f64 = 0.6;

/// The experts' profiles as vectors, in the router's order, and the model that made them (which
/// embeds the instructions too).
pub struct RouteMeanings {
    embedder: Arc<dyn Embedder>,
    profiles: Vec<Vec<f32>>,
}

impl std::fmt::Debug for RouteMeanings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteMeanings")
            .field("embedder", &self.embedder.name())
            .field("profiles", &self.profiles.len())
            .finish()
    }
}

/// The text of `expert` the model reads: what it is for, in its declaration's own words.
pub fn profile(expert: &ExpertEntry) -> String {
    format!("{}: {}", expert.role, expert.description.trim())
}

impl RouteMeanings {
    /// Embeds the profiles of `experts` (ids of `catalog`, in the router's order) with
    /// `embedder`.
    pub async fn new(
        catalog: &Catalog,
        experts: &[String],
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, EmbedError> {
        let texts: Vec<String> = experts
            .iter()
            .map(|id| catalog.expert(id).map_or_else(String::new, profile))
            .collect();
        let profiles = crate::memory::semantic::embed_each(&*embedder, &texts).await?;
        Ok(Self { embedder, profiles })
    }

    /// Vectors of `texts` (the pieces of an instruction), one per text.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embedder.embed(texts).await
    }

    /// What the model adds to each expert's score for an instruction whose vector is `query`.
    pub fn boosts(&self, query: &[f32]) -> Vec<f64> {
        self.profiles
            .iter()
            .map(|p| {
                let cos: f64 = p
                    .iter()
                    .zip(query)
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum();
                W_MEANING * cos.max(0.0)
            })
            .collect()
    }
}
