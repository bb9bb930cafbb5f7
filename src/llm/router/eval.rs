//! How well the offline router routes a labelled set: `{"cases": [{"instruction",
//! "expert"}]}`. A case counts as routed right when the router gives it one assignment, to the
//! labelled expert (splitting a single request in two is a miss).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::OfflineRouter;
use super::offline::Meanings;

/// One labelled instruction.
#[derive(Debug, Deserialize)]
struct Case {
    instruction: String,
    expert: String,
}

#[derive(Debug, Deserialize)]
struct LabelledSet {
    cases: Vec<Case>,
}

/// The result over a set.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingReport {
    /// Cases in the set.
    pub cases: usize,
    /// One line per miss: `expected -> got: instruction`.
    pub misses: Vec<String>,
}

impl RoutingReport {
    /// Share of cases routed right (0 for an empty set).
    pub fn accuracy(&self) -> f64 {
        if self.cases == 0 {
            0.0
        } else {
            (self.cases - self.misses.len()) as f64 / self.cases as f64
        }
    }
}

/// Routes every case of the labelled set `json` with `router`, by its rules alone.
pub fn accuracy(router: &OfflineRouter, json: &str) -> Result<RoutingReport, serde_json::Error> {
    let set: LabelledSet = serde_json::from_str(json)?;
    let misses = set
        .cases
        .iter()
        .filter_map(|c| {
            let got = routed(router, &c.instruction, &Meanings::new());
            (got != c.expert).then(|| format!("{} -> {got}: {}", c.expert, c.instruction))
        })
        .collect();
    Ok(RoutingReport {
        cases: set.cases.len(),
        misses,
    })
}

/// Where `router` sends `instruction`: its experts joined by ` + ` (or the error).
fn routed(router: &OfflineRouter, instruction: &str, meanings: &Meanings) -> String {
    match router.split_with(instruction, &[], meanings) {
        Ok((a, _)) => a
            .iter()
            .map(|a| a.domain.as_str())
            .collect::<Vec<_>>()
            .join(" + "),
        Err(e) => format!("error: {e}"),
    }
}

/// One case of a labelled set in JSON Lines (`eval/routing/README.md`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingCase {
    /// Its id in the set.
    pub id: String,
    /// The expert it should go to.
    pub expert: String,
    /// What it tests (`direct`, `paraphrase`, `boundary`).
    pub kind: String,
    /// The instruction, as a person would send it.
    pub instruction: String,
}

/// Cases routed right out of cases seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tally {
    pub cases: usize,
    pub right: usize,
}

impl Tally {
    /// Share routed right (0 for none).
    pub fn accuracy(&self) -> f64 {
        match self.cases {
            0 => 0.0,
            n => self.right as f64 / n as f64,
        }
    }
}

/// How a router did on a set: overall, per kind of case, per expert, and every miss.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RoutingEvaluation {
    pub overall: Tally,
    pub by_kind: BTreeMap<String, Tally>,
    pub by_expert: BTreeMap<String, Tally>,
    /// One line per miss: `id expected -> got: instruction`.
    pub misses: Vec<String>,
}

/// Routes every case with `router`, reading meanings when it has them, as the engine routes.
pub async fn evaluate(router: &OfflineRouter, cases: &[RoutingCase]) -> RoutingEvaluation {
    let mut out = RoutingEvaluation::default();
    for case in cases {
        let meanings = router.piece_meanings(&case.instruction).await;
        let got = routed(router, &case.instruction, &meanings);
        let right = got == case.expert;
        for tally in [
            &mut out.overall,
            out.by_kind.entry(case.kind.clone()).or_default(),
            out.by_expert.entry(case.expert.clone()).or_default(),
        ] {
            tally.cases += 1;
            tally.right += usize::from(right);
        }
        if !right {
            out.misses.push(format!(
                "{} {} -> {got}: {}",
                case.id, case.expert, case.instruction
            ));
        }
    }
    out
}
