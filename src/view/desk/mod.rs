//! The newsroom desk: every bulletin published, newest first, each claim with its status, its
//! wording and its evidence (the reports that support or dispute it, grouped by owner, since
//! two outlets of one owner are one source), and why it has that status in one line.
//! Corrections name what they correct.
//!
//! A fold of the log: a bulletin is a delivered `reply_delivered` whose `data` carries an `id`
//! and `claims` (what the newsroom's publisher sends), so the desk needs no file of its own
//! and shows what was really sent, once per bulletin id. The bulletins still waiting for an
//! editor are read from the jobs' diaries ([`held`]).

mod held;

pub use held::{DeskError, Held, RELEASE, held, holding};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::overview::fold_mem;
use crate::core::durable::{DurableError, EventLog};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::llm::offline::bulletin::Cited as Report;
use crate::llm::offline::claims::owner_key;
use crate::protocol::payload::ReplyDelivered;

/// The reports of one owner behind a claim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Owner {
    /// The owner.
    pub owner: String,
    /// Whether its reports support the claim (`false`: they dispute it).
    pub supports: bool,
    /// Its reports.
    pub reports: Vec<Report>,
}

/// A claim as a bulletin published it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    /// Its id (stable across bulletins).
    pub claim: String,
    /// The claim in one sentence.
    pub text: String,
    /// `confirmed`, `single_source` or `contradicted`.
    pub status: String,
    /// How the bulletin worded it.
    pub wording: String,
    /// The bulletin whose claim this one corrects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrects: Option<String>,
    /// Why it has its status, in one line.
    pub why: String,
    /// The evidence, one entry per owner and stance: supporters first.
    pub evidence: Vec<Owner>,
}

/// A published bulletin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bulletin {
    /// Its id.
    pub id: String,
    /// When it was delivered (ms since the epoch).
    pub published_ms: u64,
    /// The task that published it.
    pub task_id: String,
    /// The channel it went out on.
    pub channel: String,
    /// What was sent.
    pub text: String,
    /// Whether an editor gave its wording.
    pub edited: bool,
    /// The bulletins it corrects.
    pub corrects: Vec<String>,
    /// Its claims.
    pub claims: Vec<Claim>,
}

/// A claim as the publisher's data carries it.
#[derive(Deserialize)]
struct Sent {
    #[serde(default)]
    claim: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    wording: String,
    #[serde(default)]
    corrects: Option<String>,
    #[serde(default)]
    sources: Vec<Report>,
}

/// The claims' owners, supporters first, each owner's reports in the order given.
fn evidence(sources: &[Report]) -> Vec<Owner> {
    let mut owners: Vec<Owner> = Vec::new();
    for r in sources {
        let supports = r.stance.as_deref() != Some("denies");
        match owners
            .iter_mut()
            .find(|o| owner_key(&o.owner) == owner_key(&r.owner) && o.supports == supports)
        {
            Some(o) => o.reports.push(r.clone()),
            None => owners.push(Owner {
                owner: r.owner.clone(),
                supports,
                reports: vec![r.clone()],
            }),
        }
    }
    owners.sort_by_key(|o| !o.supports);
    owners
}

/// Why a claim has its status: who supports it, as independent owners, and who disputes it.
fn why(status: &str, evidence: &[Owner]) -> String {
    let names = |supports: bool| -> Vec<String> {
        evidence
            .iter()
            .filter(|o| o.supports == supports)
            .map(|o| match o.reports.len() {
                1 => o.owner.clone(),
                n => format!("{} ({n} outlets)", o.owner),
            })
            .collect()
    };
    let (mut support, mut dispute) = (names(true), names(false));
    support.sort();
    dispute.sort();
    let owners = |n: usize| if n == 1 { "owner" } else { "owners" };
    let supported = match support.len() {
        0 => "no report supports it".to_string(),
        n => format!("{n} independent {}: {}", owners(n), support.join(", ")),
    };
    match (status, dispute.is_empty()) {
        (_, false) => format!(
            "disputed by {}; supported by {supported}",
            dispute.join(", ")
        ),
        ("single_source", true) if support.len() == 1 => {
            format!("one source: {}", support.join(", "))
        }
        _ => supported,
    }
}

/// A bulletin's claims as the desk shows them. A claim of another shape is shown as such,
/// never left out of what was published.
fn claims_of(claims: &[Value]) -> Vec<Claim> {
    claims
        .iter()
        .map(|c| match serde_json::from_value::<Sent>(c.clone()) {
            Ok(c) => {
                let evidence = evidence(&c.sources);
                Claim {
                    why: why(&c.status, &evidence),
                    claim: c.claim,
                    text: c.text,
                    status: c.status,
                    wording: c.wording,
                    corrects: c.corrects,
                    evidence,
                }
            }
            Err(e) => Claim {
                claim: c.get("claim").and_then(Value::as_str).unwrap_or("").into(),
                text: c.get("text").and_then(Value::as_str).unwrap_or("").into(),
                status: "unreadable".into(),
                wording: String::new(),
                corrects: None,
                why: format!("(unreadable: {e})"),
                evidence: Vec::new(),
            },
        })
        .collect()
}

/// The bulletins `claims` correct, each once.
fn corrects_of(claims: &[Claim]) -> Vec<String> {
    let mut corrects: Vec<String> = claims.iter().filter_map(|c| c.corrects.clone()).collect();
    corrects.sort();
    corrects.dedup();
    corrects
}

/// The fold. See the module documentation.
#[derive(Debug, Default)]
pub struct Desk {
    filter: String,
    next: u64,
    bulletins: BTreeMap<String, Bulletin>,
}

impl Desk {
    /// The desk of `tenant`'s log.
    pub fn of_tenant(tenant: &str) -> Self {
        Self {
            filter: format!("mem.{tenant}.>"),
            ..Self::default()
        }
    }

    /// Reads what the log gained since the last call.
    pub async fn refresh<L: EventLog>(&mut self, log: &L) -> Result<(), DurableError> {
        let filter = self.filter.clone();
        self.next = fold_mem(log, &filter, self.next, |e, _| self.absorb(e)).await?;
        Ok(())
    }

    /// Folds one event: a delivered bulletin is kept, the first delivery of its id only.
    pub fn absorb(&mut self, e: &Envelope) {
        if e.kind != EventKind::ReplyDelivered {
            return;
        }
        let Ok(sent) = e.payload::<ReplyDelivered>() else {
            return;
        };
        let Some(data) = sent.data.as_ref().filter(|_| sent.delivered) else {
            return;
        };
        let (Some(id), Some(claims)) = (
            data.get("id").and_then(Value::as_str),
            data.get("claims").and_then(Value::as_array),
        ) else {
            return;
        };
        if self.bulletins.contains_key(id) {
            return;
        }
        let claims = claims_of(claims);
        self.bulletins.insert(
            id.to_string(),
            Bulletin {
                id: id.to_string(),
                published_ms: e.ts,
                task_id: sent.task_id.clone(),
                channel: sent.channel.clone().unwrap_or_default(),
                text: sent.text.clone(),
                edited: data.get("edited") == Some(&Value::Bool(true)),
                corrects: corrects_of(&claims),
                claims,
            },
        );
    }

    /// Every bulletin, newest first.
    pub fn bulletins(&self) -> Vec<&Bulletin> {
        let mut all: Vec<&Bulletin> = self.bulletins.values().collect();
        all.sort_by_key(|b| std::cmp::Reverse(b.published_ms));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source(outlet: &str, owner: &str, stance: &str) -> Value {
        json!({"outlet": outlet, "owner": owner, "stance": stance, "url": "u", "published": "p"})
    }

    fn delivered(id: &str, delivered: bool, claims: Value) -> Envelope {
        Envelope::new(
            "t",
            ["tasks", "t1"],
            "newsroom/publisher",
            EventKind::ReplyDelivered,
            json!({"task_id": "t1", "delivered": delivered, "channel": "bulletins",
                   "text": "…", "data": {"id": id, "claims": claims}}),
        )
    }

    #[test]
    fn a_claim_says_why_and_its_evidence_is_grouped_by_owner() {
        let mut desk = Desk::default();
        desk.absorb(&delivered(
            "b-1",
            true,
            json!([
                {"claim": "c-1", "text": "bridge closed", "status": "confirmed", "wording": "W",
                 "sources": [source("Wire", "coastal", "supports"), source("Herald", "coastal", "supports"),
                             source("Authority", "harbour", "supports")]},
                {"claim": "c-2", "text": "ferry stopped", "status": "contradicted",
                 "sources": [source("Wire", "coastal", "supports"), source("Authority", "harbour", "denies")]},
                {"claim": "c-3", "text": "flood", "status": "single_source", "corrects": "b-0",
                 "sources": [source("Wire", "coastal", "supports"), source("Herald", "coastal", "supports")]},
            ]),
        ));
        let b = &desk.bulletins()[0];
        assert_eq!(b.corrects, ["b-0"]);
        let [bridge, ferry, flood] = &b.claims[..] else {
            panic!("{b:#?}")
        };
        assert_eq!(
            bridge.why,
            "2 independent owners: coastal (2 outlets), harbour"
        );
        assert_eq!(bridge.evidence.len(), 2);
        assert_eq!(
            bridge.evidence[0].reports.len(),
            2,
            "two outlets, one owner"
        );
        assert_eq!(
            ferry.why,
            "disputed by harbour; supported by 1 independent owner: coastal"
        );
        assert!(!ferry.evidence[1].supports);
        assert_eq!(flood.why, "one source: coastal (2 outlets)");
        assert_eq!(flood.corrects.as_deref(), Some("b-0"));
    }

    #[test]
    fn a_bulletin_is_shown_once_and_only_when_delivered() {
        let mut desk = Desk::default();
        desk.absorb(&delivered("b-2", false, json!([])));
        assert!(
            desk.bulletins().is_empty(),
            "a refused send is not a bulletin"
        );
        desk.absorb(&delivered(
            "b-2",
            true,
            json!([{"claim": "c", "status": "confirmed"}]),
        ));
        desk.absorb(&delivered("b-2", true, json!([])));
        assert_eq!(desk.bulletins().len(), 1);
        assert_eq!(
            desk.bulletins.get("b-2").unwrap().claims.len(),
            1,
            "the first delivery is kept"
        );
        // A claim whose source has no outlet is shown as unreadable, not dropped.
        desk.absorb(&delivered(
            "b-3",
            true,
            json!([{"claim": "c", "sources": [{"owner": "x"}]}]),
        ));
        let odd = &desk.bulletins.get("b-3").unwrap().claims[0];
        assert_eq!(odd.status, "unreadable");
        assert!(odd.why.contains("outlet"), "{odd:?}");
    }
}
