//! How well the offline router routes a labelled set: `{"cases": [{"instruction",
//! "expert"}]}`. A case counts as routed right when the router gives it one assignment, to the
//! labelled expert (splitting a single request in two is a miss).

use serde::Deserialize;

use super::OfflineRouter;

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

/// Routes every case of the labelled set `json` with `router`.
pub fn accuracy(router: &OfflineRouter, json: &str) -> Result<RoutingReport, serde_json::Error> {
    let set: LabelledSet = serde_json::from_str(json)?;
    let misses = set
        .cases
        .iter()
        .filter_map(|c| {
            let got = match router.split(&c.instruction) {
                Ok((a, _)) => a
                    .iter()
                    .map(|a| a.domain.as_str())
                    .collect::<Vec<_>>()
                    .join(" + "),
                Err(e) => format!("error: {e}"),
            };
            (got != c.expert).then(|| format!("{} -> {got}: {}", c.expert, c.instruction))
        })
        .collect();
    Ok(RoutingReport {
        cases: set.cases.len(),
        misses,
    })
}
