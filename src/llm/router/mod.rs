//! Routing: which expert(s) should take an instruction. One trait, two routers: the offline
//! router (lexical scoring against the catalog, no model) and the model-backed router (asks a
//! small model for `(domain, instruction)` pairs, validates them against the catalog, and
//! falls back to the offline router on anything invalid).

mod concepts;
mod eval;
mod lexical;
pub mod meanings;
mod model_router;
mod offline;

pub use eval::{RoutingCase, RoutingEvaluation, RoutingReport, Tally, accuracy, evaluate};
pub use meanings::RouteMeanings;
pub use model_router::{ModelRouter, ROUTER_PROMPT};
pub use offline::OfflineRouter;

use serde::{Deserialize, Serialize};

use super::model::BoxFuture;

/// One piece of work for one expert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// The expert, `<mesh>/<role>`.
    pub domain: String,
    /// What that expert is asked to do.
    pub instruction: String,
}

pub use crate::protocol::payload::RouteMethod;

/// The routers' answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutingDecision {
    /// Work, in the order it should be done.
    pub assignments: Vec<Assignment>,
    /// How it was decided.
    pub method: RouteMethod,
}

/// Why nothing was routed.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The instruction is empty or only whitespace.
    #[error("the instruction is empty; say what should be done")]
    EmptyInstruction,
    /// The catalog has no spawnable expert (every mesh parked, or none declared).
    #[error("the catalog has no spawnable expert; activate a mesh in aem/")]
    NoSpawnableExpert,
    /// No expert's description matches and no fallback expert is set.
    #[error(
        "no expert matches {instruction:?}; name one as the goal's domain (<mesh>/<role>) or set a fallback expert"
    )]
    NoMatch {
        /// The instruction.
        instruction: String,
    },
    /// The fallback expert is not a spawnable expert of the catalog.
    #[error("fallback expert {0:?} is not a spawnable expert of the catalog")]
    BadFallback(String),
}

/// Decides which experts take an instruction.
pub trait Router: Send + Sync {
    /// Splits `instruction` into assignments, in order; at least one on success.
    fn route<'a>(
        &'a self,
        instruction: &'a str,
    ) -> BoxFuture<'a, Result<RoutingDecision, RouteError>>;

    /// Routes `instruction` knowing what the engine read before it (see [`Known`]). Routers
    /// that cannot use it ignore it.
    fn route_in<'a>(
        &'a self,
        instruction: &'a str,
        known: &'a Known,
    ) -> BoxFuture<'a, Result<RoutingDecision, RouteError>> {
        let _ = known;
        self.route(instruction)
    }
}

/// What is known before routing an instruction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Known {
    /// Recent turns, recalled facts, the experts' records and what perception has seen, as
    /// text for a model (data, not instructions).
    pub text: String,
    /// Perception sources (`<mesh>/<source>`) whose recent items share words with the
    /// instruction: the experts granted them have seen what it is about.
    pub perceived: Vec<String>,
}

/// Nothing known: what [`Router::route`] routes with.
pub(crate) static NOTHING_KNOWN: Known = Known {
    text: String::new(),
    perceived: Vec::new(),
};
