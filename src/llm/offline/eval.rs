//! How well the newsroom's judgment does on a labelled corpus (`iron eval newsroom`).
//!
//! A corpus is JSON Lines, one report a line: the [`Report`] fields, and its labels — `event`
//! (the happening it is about), `claim` (what exactly it states, `<event>/<letter>`: reports
//! share a claim only when they state the same actors in the same roles, place and figures; a
//! denial carries the label of what it denies), `stance` (`supports` or `denies`), `kind` (the
//! kind of news) and `traps` (the traps it takes part in). The whole corpus is judged as one
//! batch, as a feed window would be.
//!
//! What is counted:
//! - **Grouping**, pairwise over all reports: a pair is truly together when it has one claim
//!   label, judged together when one claim holds both. Precision and recall of "together".
//! - **False confirmed**: a confirmed verdict whose supporters state more than one claim, or
//!   whose claim is not confirmable. A claim is confirmable when reports of at least two owners
//!   (trimmed, case-folded) support it and no report of another owner denies it or states
//!   another claim of its event (an owner's own update of what it reported is no second
//!   account). **Confirmed recall**: confirmable claims that some verdict confirms on their own
//!   reports.
//! - **False contradicted**: a contradicted verdict that none of its denying reports is about:
//!   each is labelled with another event than every supporter's. A reader is told a true
//!   report is disputed.
//! - **Stance**: reports whose stance in the claim that holds them is their labelled stance;
//!   and, of the denials, how many are counted against what they deny (in the `denying` of a
//!   verdict whose supporters state that claim).
//!
//! Per trap and per kind, the pairs and verdicts touching a report of that trap or kind are
//! counted again.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::claims::{self, Report, Stance, Status, Verdict};

/// A report with its labels.
#[derive(Debug, Clone, Deserialize)]
pub struct Labelled {
    #[serde(flatten)]
    pub report: Report,
    pub event: String,
    pub claim: String,
    pub stance: Stance,
    pub kind: String,
    #[serde(default)]
    pub traps: Vec<String>,
}

/// A corpus that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("line {line}: {source}")]
    Line {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("line {line}: the id {id} was used before")]
    Duplicate { line: usize, id: String },
    #[error("line {line}: the claim {claim} does not start with its event {event}")]
    ClaimOutsideEvent {
        line: usize,
        claim: String,
        event: String,
    },
    #[error("it holds no report")]
    Empty,
}

/// Reads a JSON Lines corpus (blank lines and lines starting with `#` are skipped).
pub fn parse(text: &str) -> Result<Vec<Labelled>, CorpusError> {
    let mut out: Vec<Labelled> = Vec::new();
    let mut ids = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let labelled: Labelled =
            serde_json::from_str(line).map_err(|source| CorpusError::Line {
                line: line_no,
                source,
            })?;
        if !ids.insert(labelled.report.id.clone()) {
            return Err(CorpusError::Duplicate {
                line: line_no,
                id: labelled.report.id,
            });
        }
        if !labelled.claim.starts_with(&format!("{}/", labelled.event)) {
            return Err(CorpusError::ClaimOutsideEvent {
                line: line_no,
                claim: labelled.claim,
                event: labelled.event,
            });
        }
        out.push(labelled);
    }
    if out.is_empty() {
        return Err(CorpusError::Empty);
    }
    Ok(out)
}

/// Counts of one slice of the corpus (all of it, one trap, one kind).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Pairs judged together that are together.
    pub pairs_right: usize,
    /// Pairs judged together.
    pub pairs_judged: usize,
    /// Pairs truly together.
    pub pairs_true: usize,
    /// Confirmed verdicts.
    pub confirmed: usize,
    /// Of those, false.
    pub false_confirmed: usize,
    /// Contradicted verdicts.
    pub contradicted: usize,
    /// Of those, contradicted only by reports of other events.
    pub false_contradicted: usize,
    /// Confirmable claims, and how many were confirmed.
    pub confirmable: usize,
    pub confirmable_confirmed: usize,
    /// Reports, and those whose stance is right.
    pub reports: usize,
    pub stance_right: usize,
    /// Denials, and those counted against what they deny.
    pub denials: usize,
    pub denials_caught: usize,
}

fn ratio(a: usize, b: usize) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

impl Counts {
    /// Pairwise grouping precision (`None` when nothing was grouped).
    pub fn precision(&self) -> Option<f64> {
        ratio(self.pairs_right, self.pairs_judged)
    }
    /// Pairwise grouping recall.
    pub fn recall(&self) -> Option<f64> {
        ratio(self.pairs_right, self.pairs_true)
    }
    /// Share of reports with the right stance.
    pub fn stance(&self) -> Option<f64> {
        ratio(self.stance_right, self.reports)
    }
}

/// The outcome of an evaluation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Evaluation {
    pub events: usize,
    pub claims: usize,
    pub all: Counts,
    pub by_trap: BTreeMap<String, Counts>,
    pub by_kind: BTreeMap<String, Counts>,
    /// One line per false confirmation: its reason and the claims its supporters state.
    pub false_confirmations: Vec<String>,
    /// One line per false contradiction: the claim and the reports held against it.
    pub false_contradictions: Vec<String>,
    /// One line per pair of reports grouped as one claim that state different claims: what
    /// to read when tuning the grouping (on a tuning set only).
    pub wrong_pairs: Vec<String>,
    /// One line per pair of reports of one claim that were not grouped together.
    pub missed_pairs: Vec<String>,
}

fn owner(r: &Report) -> String {
    claims::owner_key(&r.owner)
}

/// Claim labels that can be confirmed (see the module docs).
fn confirmable(corpus: &[Labelled]) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    let claims: BTreeSet<&str> = corpus.iter().map(|l| l.claim.as_str()).collect();
    for claim in claims {
        let of = corpus.iter().filter(|l| l.claim == claim);
        let supporters: BTreeSet<String> = of
            .clone()
            .filter(|l| l.stance == Stance::Supports && !owner(&l.report).is_empty())
            .map(|l| owner(&l.report))
            .collect();
        let event = claim.split_once('/').map_or(claim, |(e, _)| e);
        let conflict = corpus.iter().any(|l| {
            let against = (l.claim == claim && l.stance == Stance::Denies)
                || (l.event == event && l.claim != claim);
            against && !supporters.contains(&owner(&l.report))
        });
        if supporters.len() >= 2 && !conflict {
            out.insert(claim);
        }
    }
    out
}

/// Judges `corpus` offline and counts (see the module docs).
pub fn evaluate(corpus: &[Labelled]) -> Evaluation {
    evaluate_with(corpus, None)
}

/// [`evaluate`], with the model's [`claims::Meanings`] of the reports when there are some.
pub fn evaluate_with(corpus: &[Labelled], meanings: Option<&claims::Meanings>) -> Evaluation {
    let reports: Vec<Report> = corpus.iter().map(|l| l.report.clone()).collect();
    let claims = claims::group_with(&reports, meanings);
    let verdicts = claims::cross_check_all_with(&claims, &reports, meanings);
    let verdicts = claims::enforce_all(verdicts, &reports);
    score(corpus, &claims, &verdicts)
}

/// Counts a judgment (`claims` and their `verdicts`, in one order) of `corpus`.
pub fn score(corpus: &[Labelled], claims: &[claims::Claim], verdicts: &[Verdict]) -> Evaluation {
    let by_id: BTreeMap<&str, &Labelled> =
        corpus.iter().map(|l| (l.report.id.as_str(), l)).collect();
    let mut judged: BTreeMap<&str, (usize, Stance)> = BTreeMap::new();
    for (c, claim) in claims.iter().enumerate() {
        for r in &claim.reports {
            judged.entry(r.id.as_str()).or_insert((c, r.stance));
        }
    }
    let confirmable = confirmable(corpus);
    let mut eval = Evaluation {
        events: corpus
            .iter()
            .map(|l| &l.event)
            .collect::<BTreeSet<_>>()
            .len(),
        claims: corpus
            .iter()
            .map(|l| &l.claim)
            .collect::<BTreeSet<_>>()
            .len(),
        ..Evaluation::default()
    };
    // Each count goes to the whole corpus and to every trap and kind of the reports it touches.
    let mut count = |touching: &[&Labelled], add: &dyn Fn(&mut Counts)| {
        add(&mut eval.all);
        let traps: BTreeSet<&String> = touching.iter().flat_map(|l| &l.traps).collect();
        for t in traps {
            add(eval.by_trap.entry(t.clone()).or_default());
        }
        let kinds: BTreeSet<&String> = touching.iter().map(|l| &l.kind).collect();
        for k in kinds {
            add(eval.by_kind.entry(k.clone()).or_default());
        }
    };
    for (i, a) in corpus.iter().enumerate() {
        for b in &corpus[i + 1..] {
            let truly = a.claim == b.claim;
            let together = match (
                judged.get(a.report.id.as_str()),
                judged.get(b.report.id.as_str()),
            ) {
                (Some(x), Some(y)) => x.0 == y.0,
                _ => false,
            };
            if together != truly {
                let pairs = match together {
                    true => &mut eval.wrong_pairs,
                    false => &mut eval.missed_pairs,
                };
                pairs.push(format!(
                    "{} [{}] + {} [{}]",
                    a.report.title, a.claim, b.report.title, b.claim
                ));
            }
            if truly || together {
                count(&[a, b], &|c: &mut Counts| {
                    c.pairs_true += usize::from(truly);
                    c.pairs_judged += usize::from(together);
                    c.pairs_right += usize::from(truly && together);
                });
            }
        }
        let stance_right = judged
            .get(a.report.id.as_str())
            .is_some_and(|(_, s)| *s == a.stance);
        count(&[a], &|c: &mut Counts| {
            c.reports += 1;
            c.stance_right += usize::from(stance_right);
        });
    }
    // The labelled reports of verdict ids (an id the corpus lacks is left out).
    let labelled = |ids: &[String]| -> Vec<&Labelled> {
        ids.iter()
            .filter_map(|id| by_id.get(id.as_str()).copied())
            .collect()
    };
    // The claims a verdict's supporters state.
    let states = |v: &Verdict| -> BTreeSet<&str> {
        let supporters = labelled(&v.supporting);
        supporters.iter().map(|l| l.claim.as_str()).collect()
    };
    for l in corpus.iter().filter(|l| l.stance == Stance::Denies) {
        let caught = verdicts
            .iter()
            .any(|v| v.denying.contains(&l.report.id) && states(v).contains(l.claim.as_str()));
        count(&[l], &|c: &mut Counts| {
            c.denials += 1;
            c.denials_caught += usize::from(caught);
        });
    }
    for v in verdicts.iter().filter(|v| v.status == Status::Confirmed) {
        let stated = states(v);
        let touching = labelled(&v.supporting);
        let falsely = stated.len() != 1 || !stated.iter().all(|c| confirmable.contains(c));
        if falsely {
            eval.false_confirmations.push(format!(
                "{} [{}]: {}",
                v.text,
                Vec::from_iter(stated.iter().copied()).join(", "),
                v.reason
            ));
        }
        count(&touching, &|c: &mut Counts| {
            c.confirmed += 1;
            c.false_confirmed += usize::from(falsely);
        });
    }
    for v in verdicts.iter().filter(|v| v.status == Status::Contradicted) {
        let (supporters, deniers) = (labelled(&v.supporting), labelled(&v.denying));
        let events: BTreeSet<&str> = supporters.iter().map(|l| l.event.as_str()).collect();
        let falsely = !deniers.iter().any(|l| events.contains(l.event.as_str()));
        if falsely {
            let against = Vec::from_iter(deniers.iter().map(|l| l.report.title.as_str()));
            eval.false_contradictions
                .push(format!("{} <- {}", v.text, against.join(" | ")));
        }
        count(&supporters, &|c: &mut Counts| {
            c.contradicted += 1;
            c.false_contradicted += usize::from(falsely);
        });
    }
    for claim in &confirmable {
        let members: Vec<&Labelled> = corpus.iter().filter(|l| l.claim == *claim).collect();
        let confirmed = verdicts
            .iter()
            .any(|v| v.status == Status::Confirmed && states(v) == BTreeSet::from([*claim]));
        count(&members, &|c: &mut Counts| {
            c.confirmable += 1;
            c.confirmable_confirmed += usize::from(confirmed);
        });
    }
    eval
}

fn show(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{x:.3}"))
}

impl Evaluation {
    /// A table for a person: the whole corpus, then each trap and kind.
    pub fn table(&self, name: &str) -> String {
        let mut out = format!(
            "{name}: {} reports, {} events, {} claims\n",
            self.all.reports, self.events, self.claims
        );
        out += &format!(
            "{:<22} {:>9} {:>7} {:>7} {:>6} {:>9} {:>9} {:>8} {:>11}\n",
            "",
            "precision",
            "recall",
            "stance",
            "denials",
            "confirmed",
            "false",
            "recall",
            "false contra"
        );
        let row = |label: &str, c: &Counts| {
            format!(
                "{:<22} {:>9} {:>7} {:>7} {:>3}/{:<3} {:>9} {:>9} {:>3}/{:<4} {:>6}/{:<4}\n",
                label,
                show(c.precision()),
                show(c.recall()),
                show(c.stance()),
                c.denials_caught,
                c.denials,
                c.confirmed,
                c.false_confirmed,
                c.confirmable_confirmed,
                c.confirmable,
                c.false_contradicted,
                c.contradicted,
            )
        };
        out += &row("all", &self.all);
        for (trap, c) in &self.by_trap {
            out += &row(&format!("trap {trap}"), c);
        }
        for (kind, c) in &self.by_kind {
            out += &row(&format!("kind {kind}"), c);
        }
        for line in &self.false_confirmations {
            out += &format!("false confirmed: {line}\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, claim: &str, stance: &str, owner: &str, title: &str) -> String {
        let event = claim.split('/').next().unwrap();
        serde_json::json!({
            "id": id, "event": event, "claim": claim, "stance": stance, "kind": "sport",
            "traps": ["role_swap"], "title": title, "summary": "", "outlet": owner,
            "owner": owner, "published": "2026-11-03T09:00:00Z", "url": ""
        })
        .to_string()
    }

    #[test]
    fn a_corpus_is_checked_as_it_is_read() {
        assert!(matches!(parse(""), Err(CorpusError::Empty)));
        let a = line("a", "e1/a", "supports", "x", "Rovers beat United 2-1");
        let twice = format!("{a}\n{a}\n");
        assert!(matches!(
            parse(&twice),
            Err(CorpusError::Duplicate { line: 2, .. })
        ));
        let outside = line("b", "e2/a", "supports", "x", "t").replace("\"e2\"", "\"e3\"");
        assert!(matches!(
            parse(&outside),
            Err(CorpusError::ClaimOutsideEvent { line: 1, .. })
        ));
        let bad = format!("{a}\n{{\"id\": 1}}\n");
        assert!(matches!(
            parse(&bad),
            Err(CorpusError::Line { line: 2, .. })
        ));
    }

    #[test]
    fn swapped_winners_are_not_one_confirmed_claim() {
        let corpus = parse(
            &[
                line(
                    "a",
                    "e1/a",
                    "supports",
                    "x",
                    "Rovers beat United 2-1 at Elm Park",
                ),
                line(
                    "b",
                    "e1/a",
                    "supports",
                    "y",
                    "Rovers beat United 2-1 at Elm Park",
                ),
                line(
                    "c",
                    "e1/b",
                    "supports",
                    "z",
                    "United beat Rovers 2-1 at Elm Park",
                ),
                line(
                    "d",
                    "e1/b",
                    "supports",
                    "w",
                    "United beat Rovers 2-1 at Elm Park",
                ),
            ]
            .join("\n"),
        )
        .unwrap();
        let eval = evaluate(&corpus);
        assert_eq!(eval.all.false_confirmed, 0, "{}", eval.table("t"));
        assert_eq!(eval.all.pairs_true, 2);
        assert_eq!(eval.all.precision(), Some(1.0), "{}", eval.table("t"));
        // A judgment that puts all four together is scored as wrong.
        let reports: Vec<Report> = corpus.iter().map(|l| l.report.clone()).collect();
        let one = claims::Claim {
            id: "c".into(),
            text: "t".into(),
            reports: reports
                .iter()
                .map(|r| claims::ClaimReport {
                    id: r.id.clone(),
                    stance: Stance::Supports,
                })
                .collect(),
        };
        let verdict = Verdict {
            claim: "c".into(),
            text: "t".into(),
            status: Status::Confirmed,
            supporting: reports.iter().map(|r| r.id.clone()).collect(),
            denying: vec![],
            reason: "a model said so".into(),
        };
        let wrong = score(&corpus, &[one], &[verdict]);
        assert_eq!(wrong.all.false_confirmed, 1);
        assert_eq!(wrong.all.pairs_judged, 6);
        assert_eq!(wrong.all.precision(), Some(2.0 / 6.0));
        assert_eq!(wrong.by_trap["role_swap"].false_confirmed, 1);
    }

    #[test]
    fn a_claim_contradicted_by_another_event_only_is_counted_false() {
        let corpus = parse(
            &[
                line("a", "e1/a", "supports", "x", "Rovers beat United 2-1"),
                line("b", "e1/b", "supports", "y", "United beat Rovers 2-1"),
                line("c", "e2/a", "supports", "z", "Elm Park stand to close"),
            ]
            .join("\n"),
        )
        .unwrap();
        let claim = |id: &str, of: &[&str]| claims::Claim {
            id: id.into(),
            text: id.into(),
            reports: of
                .iter()
                .map(|r| claims::ClaimReport {
                    id: (*r).into(),
                    stance: Stance::Supports,
                })
                .collect(),
        };
        let contradicted = |id: &str, supporting: &str, denying: &[&str]| Verdict {
            claim: id.into(),
            text: id.into(),
            status: Status::Contradicted,
            supporting: vec![supporting.into()],
            denying: denying.iter().map(|d| (*d).into()).collect(),
            reason: String::new(),
        };
        let claims = [claim("A", &["a"]), claim("B", &["b"]), claim("C", &["c"])];
        let verdicts = [
            // By the rival account of its own event: a true contradiction.
            contradicted("A", "a", &["b", "c"]),
            // By another event only: false.
            contradicted("C", "c", &["a"]),
        ];
        let eval = score(&corpus, &claims, &verdicts);
        assert_eq!(eval.all.contradicted, 2, "{}", eval.table("t"));
        assert_eq!(eval.all.false_contradicted, 1, "{}", eval.table("t"));
        assert_eq!(eval.false_contradictions, ["C <- Rovers beat United 2-1"]);
    }
}
