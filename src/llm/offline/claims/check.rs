//! Cross-checking claims across independent owners: each claim's stances read again, rivals
//! held against each other, and the safety rule ([`enforce`]) over every verdict.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use super::super::frame;
use super::features::Conflict;
use super::{
    Batch, Claim, MERGE_THRESHOLD, Meanings, RIVAL_THRESHOLD, Report, Stance, Status, Verdict,
    features_of, make_claim, owner_key, sorted_unique,
};

/// Report id → normalised owner; `None` for a blank owner or an id given with several owners.
pub(super) fn owners_by_id(reports: &[Report]) -> BTreeMap<&str, Option<String>> {
    let mut owners: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for r in reports {
        owners.entry(&r.id).or_default().insert(owner_key(&r.owner));
    }
    let single = |set: BTreeSet<String>| match Vec::from_iter(set).as_slice() {
        [owner] if !owner.is_empty() => Some(owner.clone()),
        _ => None,
    };
    owners
        .into_iter()
        .map(|(id, set)| (id, single(set)))
        .collect()
}

/// Distinct named owners of report ids; unknown and ambiguous ids count for none.
fn owners_of(ids: &[String], index: &BTreeMap<&str, Option<String>>) -> BTreeSet<String> {
    ids.iter()
        .filter_map(|id| index.get(id.as_str()).cloned().flatten())
        .collect()
}

fn names(owners: &BTreeSet<String>) -> String {
    let list = Vec::from_iter(owners.iter().map(String::as_str)).join(", ");
    if list.is_empty() {
        "an unknown owner".to_string()
    } else {
        list
    }
}

/// `singular` or `plural`, by count.
fn by_count<'a>(n: usize, singular: &'a str, plural: &'a str) -> &'a str {
    if n == 1 { singular } else { plural }
}

/// Cross-check one claim against the reports it came from. Each report's stance is read again
/// from its text, and a report denies if either the claim or this reading says so (the claim may
/// come from a model). Ids not in `reports` are left out; the result has passed [`enforce`].
pub fn cross_check(claim: &Claim, reports: &[Report]) -> Verdict {
    cross_check_with(claim, &reports_by_id(reports), &owners_by_id(reports))
}

/// Reports by id (an id given several times has several).
fn reports_by_id(reports: &[Report]) -> BTreeMap<&str, Vec<&Report>> {
    let mut by_id: BTreeMap<&str, Vec<&Report>> = BTreeMap::new();
    for r in reports {
        by_id.entry(&r.id).or_default().push(r);
    }
    by_id
}

/// [`cross_check`] with the reports by id ([`reports_by_id`]) and their owners
/// ([`owners_by_id`]) already known.
fn cross_check_with(
    claim: &Claim,
    by_id: &BTreeMap<&str, Vec<&Report>>,
    index: &BTreeMap<&str, Option<String>>,
) -> Verdict {
    let listed: BTreeSet<&str> = claim.reports.iter().map(|r| r.id.as_str()).collect();
    let reports = listed.iter().filter_map(|id| by_id.get(id)).flatten();
    let sorted = sorted_unique(reports.copied());
    let features = features_of(&sorted);
    let all = Vec::from_iter(0..sorted.len());
    let reread = (!all.is_empty()).then(|| make_claim(&all, &sorted, &features).1.reports);
    let stances = claim.reports.iter().chain(reread.iter().flatten());
    let denied: BTreeSet<&str> = stances
        .filter(|r| r.stance == Stance::Denies)
        .map(|r| r.id.as_str())
        .collect();
    let mut seen = BTreeSet::new();
    let known = claim.reports.iter().map(|r| r.id.as_str());
    let known = known.filter(|id| index.contains_key(id) && seen.insert(*id));
    let (denying, supporting): (Vec<&str>, Vec<&str>) = known.partition(|id| denied.contains(id));
    let to_strings = |ids: Vec<&str>| Vec::from_iter(ids.into_iter().map(String::from));
    let (supporting, denying) = (to_strings(supporting), to_strings(denying));
    let supporters = owners_of(&supporting, index);
    let (status, reason) = if !denying.is_empty() {
        let deniers = owners_of(&denying, index);
        let deny = by_count(deniers.len().max(1), "denies", "deny");
        let what = match supporting.is_empty() {
            true => "the claim".to_string(),
            false => {
                let verb = by_count(supporters.len().max(1), "reports", "report");
                format!("what {} {verb}", names(&supporters))
            }
        };
        let reason = format!("contradicted: {} {deny} {what}", names(&deniers));
        (Status::Contradicted, reason)
    } else if supporters.len() >= 2 {
        let (n, who) = (supporters.len(), names(&supporters));
        let reason = format!("confirmed: reported by {n} independent owners ({who})");
        (Status::Confirmed, reason)
    } else {
        let owner = names(&supporters);
        let reason = match supporting.len() {
            0 => "single source: none of its reports is known".to_string(),
            1 => format!("single source: 1 report, owned by {owner}"),
            2 => format!("single source: 2 reports, both owned by {owner}"),
            n => format!("single source: {n} reports, all owned by {owner}"),
        };
        (Status::SingleSource, reason)
    };
    let (claim, text) = (claim.id.clone(), claim.text.clone());
    let verdict = Verdict {
        claim,
        text,
        status,
        supporting,
        denying,
        reason,
    };
    enforce_with(verdict, index)
}

/// The safety rule for any verdict, including a model's: `confirmed` stands only if its
/// supporting ids resolve to at least two distinct named owners and nothing denies it. Unknown
/// ids count for no owner; any denying entry, known or not, blocks confirmation (stricter than
/// ignoring it: enforce only ever downgrades). Other statuses pass through unchanged.
pub fn enforce(verdict: Verdict, reports: &[Report]) -> Verdict {
    enforce_with(verdict, &owners_by_id(reports))
}

/// [`enforce`] over every verdict of a cross-check, the owners of the reports read once.
pub fn enforce_all(
    verdicts: impl IntoIterator<Item = Verdict>,
    reports: &[Report],
) -> Vec<Verdict> {
    let index = owners_by_id(reports);
    verdicts
        .into_iter()
        .map(|v| enforce_with(v, &index))
        .collect()
}

/// [`enforce`] with the owners of the reports ([`owners_by_id`]) already known.
fn enforce_with(verdict: Verdict, index: &BTreeMap<&str, Option<String>>) -> Verdict {
    if verdict.status != Status::Confirmed {
        return verdict;
    }
    let owners = owners_of(&verdict.supporting, index);
    let (status, reason) = if !verdict.denying.is_empty() {
        let (n, ids) = (verdict.denying.len(), verdict.denying.join(", "));
        let reports = by_count(n, "report", "reports");
        let verb = by_count(n, "denies", "deny");
        let reason =
            format!("contradicted: downgraded from confirmed, {n} {reports} ({ids}) {verb} it");
        (Status::Contradicted, reason)
    } else if owners.len() < 2 {
        let (n, who) = (owners.len(), names(&owners));
        let owner = by_count(n, "owner", "owners");
        let reason =
            format!("single source: downgraded from confirmed, supported by {n} {owner} ({who})");
        (Status::SingleSource, reason)
    } else {
        return verdict;
    };
    Verdict {
        status,
        reason,
        ..verdict
    }
}

/// Cross-check every claim ([`cross_check`]), then hold each against its rivals: a claim about
/// the same subject as another (a shared name, close in time, most words alike) whose frame
/// says otherwise — another winner, another figure, swapped roles. A confirmed or single-source
/// claim with a rival is contradicted, the rival's reports listed as denying it, unless every
/// rival report comes from an owner that also supports the claim (an owner's own update is no
/// second account).
///
/// Then, when unclear, not confirmed: a confirmed claim stays confirmed only when no report of
/// another owner about the same subject (a shared name the batch confirms, close in time, alike
/// in words: [`super::UNCLEAR_THRESHOLD`]; and plainly apart from none of the claim's reports: another
/// place, object, kind of happening or template) was left out of it. A report that opposes one of
/// them (a denial, or the opposite state) need only be near and not apart from one: an answer
/// often names its speaker ("River Board: embankment intact"), which sets it apart from a report
/// naming something else. Such a report is either the same
/// account worded past what the judge can match, or another account it cannot read (a denial
/// without cue words, another name in a role): the judge cannot tell which, so the claim is
/// single-source, its reason naming the report.
pub fn cross_check_all(claims: &[Claim], reports: &[Report]) -> Vec<Verdict> {
    cross_check_all_with(claims, reports, None)
}

/// [`cross_check_all`], with the model's [`Meanings`] of the reports when there are some.
pub fn cross_check_all_with(
    claims: &[Claim],
    reports: &[Report],
    meanings: Option<&Meanings>,
) -> Vec<Verdict> {
    cross_check_batch(claims, None, reports, &Batch::new(reports, meanings))
}

/// [`cross_check_all_with`] for the claims whose ids are in `rate` only, in claim order: every
/// other claim and report is still read, as the rest of what the sources say (a rival account,
/// a report left out of a claim), so a claim is rated as it would be among all of them. What a
/// newsroom asks when a few new items change a few claims of a large window.
pub fn cross_check_some_with(
    claims: &[Claim],
    rate: &BTreeSet<&str>,
    reports: &[Report],
    meanings: Option<&Meanings>,
) -> Vec<Verdict> {
    // Every question the cross-check asks of a pair holds a report of a rated claim.
    let focus = claims
        .iter()
        .filter(|c| rate.contains(c.id.as_str()))
        .flat_map(|c| c.reports.iter().map(|r| r.id.as_str()))
        .collect();
    let batch = Batch::focused(reports, meanings, &focus);
    cross_check_batch(claims, Some(rate), reports, &batch)
}

/// The cross-check of the claims of `rate` (every claim when `None`) among all of `claims`.
pub(super) fn cross_check_batch(
    claims: &[Claim],
    rate: Option<&BTreeSet<&str>>,
    reports: &[Report],
    batch: &Batch,
) -> Vec<Verdict> {
    let owners = owners_by_id(reports);
    let by_id = reports_by_id(reports);
    let rated: Vec<usize> = (0..claims.len())
        .filter(|&i| rate.is_none_or(|r| r.contains(claims[i].id.as_str())))
        .collect();
    let verdicts: Vec<Verdict> = rated
        .par_iter()
        .map(|&i| cross_check_with(&claims[i], &by_id, &owners))
        .collect();
    let sorted = &batch.sorted;
    let index: BTreeMap<&str, usize> = sorted
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let supporters = |c: &Claim| -> Vec<usize> {
        let ids = c.reports.iter().filter(|r| r.stance == Stance::Supports);
        ids.filter_map(|r| index.get(r.id.as_str()).copied())
            .collect()
    };
    let members: Vec<Vec<usize>> = claims.iter().map(supporters).collect();
    let wanted = rate.map(|_| {
        rated
            .iter()
            .flat_map(|&i| members[i].iter().copied())
            .collect()
    });
    let rivals_of = rivals(batch, &members, wanted.as_ref());
    let ids = |idx: &[usize]| Vec::from_iter(idx.iter().map(|&k| sorted[k].id.clone()));
    let with_rivals = rated.iter().zip(verdicts).map(|(&i, verdict)| {
        if verdict.status == Status::Contradicted {
            return verdict;
        }
        // The reports of other claims that say otherwise than one of this claim's own: a
        // rival claim's other reports may only resemble them, and listing those too made each
        // claim's denials grow with every look-alike in a dense batch.
        let said_otherwise: BTreeSet<usize> = members[i]
            .iter()
            .flat_map(|&a| rivals_of[a].iter().copied())
            .collect();
        let rival_reports: Vec<usize> = match said_otherwise.is_empty() {
            true => Vec::new(),
            false => (0..claims.len())
                .filter(|&j| j != i)
                .flat_map(|j| members[j].iter().copied())
                .filter(|b| said_otherwise.contains(b))
                .collect(),
        };
        let supporters = owners_of(&ids(&members[i]), &owners);
        let denying = ids(&rival_reports);
        let deniers = owners_of(&denying, &owners);
        if deniers.is_subset(&supporters) {
            return verdict;
        }
        let verb = by_count(deniers.len().max(1), "reports", "report");
        let reason = format!(
            "contradicted: {} {verb} it otherwise (another winner, figure, role or later state)",
            names(&deniers)
        );
        Verdict {
            status: Status::Contradicted,
            denying,
            reason,
            ..verdict
        }
    });
    let with_rivals: Vec<Verdict> = with_rivals.collect();
    let everyone = Vec::from_iter(0..sorted.len());
    with_rivals
        .into_par_iter()
        .zip(rated.par_iter())
        .map(|(verdict, &i)| {
            if verdict.status != Status::Confirmed {
                return verdict;
            }
            let inside: BTreeSet<&str> = claims[i].reports.iter().map(|r| r.id.as_str()).collect();
            let support: Vec<usize> = verdict
                .supporting
                .iter()
                .filter_map(|id| index.get(id.as_str()).copied())
                .collect();
            let supporters = owners_of(&verdict.supporting, &owners);
            // Two owners must state it in so many words, not only through a third report that
            // each resembles.
            let owner_of = |k: usize| owners.get(sorted[k].id.as_str()).cloned().flatten();
            // Each two of its supporting reports from different owners.
            let across = || {
                let pairs = support
                    .iter()
                    .enumerate()
                    .flat_map(|(x, &s)| support[x + 1..].iter().map(move |&t| (s, t)));
                pairs.filter(|&(s, t)| owner_of(s) != owner_of(t))
            };
            let direct = across().any(|(s, t)| batch.pairs.sim(s, t) >= MERGE_THRESHOLD);
            if !direct {
                let reason = format!(
                    "single source: not confirmed, no two of its owners ({}) report it in words \
                     alike enough",
                    names(&supporters)
                );
                return Verdict {
                    status: Status::SingleSource,
                    reason,
                    ..verdict
                };
            }
            // Nor when two of its owners may tell who did what the other way round.
            let reversed =
                across().find(|&(s, t)| batch.features[s].order_unclear(&batch.features[t]));
            if let Some((s, t)) = reversed {
                let reason = format!(
                    "single source: not confirmed, {} and {} may tell who did what the other way \
                     round",
                    sorted[s].id, sorted[t].id
                );
                return Verdict {
                    status: Status::SingleSource,
                    reason,
                    ..verdict
                };
            }
            let span = batch.span(&support);
            let outside = batch.within(&everyone, span).copied().find(|&k| {
                let owner = owners.get(sorted[k].id.as_str()).cloned().flatten();
                !inside.contains(sorted[k].id.as_str())
                    && owner.is_some_and(|o| !supporters.contains(&o))
                    && support.iter().any(|&s| batch.near(s, k))
                    && {
                        // Each supporter's frames compared once.
                        let apart = Vec::from_iter(support.iter().map(|&s| batch.apart(s, k)));
                        let mut pairs = support.iter().zip(&apart);
                        let near_one = pairs.any(|(&s, &apart)| !apart && batch.near(s, k));
                        // Apart from some, unless it opposes one: a speaker's name sets an
                        // answer apart from a report that names a place instead.
                        let opposes = |&s: &usize| batch.features[s].opposes(&batch.features[k]);
                        let opposes_one = || support.iter().any(opposes);
                        near_one && (!apart.contains(&true) || opposes_one())
                    }
            });
            let Some(k) = outside else { return verdict };
            let owner = owners.get(sorted[k].id.as_str()).cloned().flatten();
            let reason = format!(
                "single source: not confirmed, {} also reports on this subject ({}) in words the \
                 judge cannot match to it",
                owner.unwrap_or_default(),
                sorted[k].id
            );
            Verdict {
                status: Status::SingleSource,
                reason,
                ..verdict
            }
        })
        .collect()
}

/// For each report, the supporting reports `b` it is a rival account to: about the same
/// subject (alike from [`RIVAL_THRESHOLD`]), their frames in conflict the way
/// [`super::features::Features::may_rival`] and `rival_by` read. Each pair of supporters is
/// compared once, the cheap tests first: a dense batch has millions of pairs. With `wanted`,
/// only the pairs holding one of those reports: the rivals of the others may be left out.
fn rivals(
    batch: &Batch,
    members: &[Vec<usize>],
    wanted: Option<&BTreeSet<usize>>,
) -> Vec<BTreeSet<usize>> {
    let supporting = BTreeSet::from_iter(members.iter().flatten().copied());
    let supporting = Vec::from_iter(supporting);
    let features = &batch.features;
    let rival = |a: usize, b: usize| {
        let by = |how| features[a].rival_by(&features[b], how);
        batch.conflict(a, b).is_some_and(by).then_some((a, b))
    };
    // Each pair read in one order, the earlier report first, whichever report it is found from.
    let pair = |a: usize, b: usize| {
        let may =
            features[a].may_rival(&features[b]) && batch.alike_in_subject(a, b, RIVAL_THRESHOLD);
        may.then(|| [rival(a, b), rival(b, a)])
            .into_iter()
            .flatten()
            .flatten()
    };
    let near = |a: usize| batch.within(&supporting, batch.span(&[a])).copied();
    let found: Vec<(usize, usize)> = match wanted {
        None => supporting
            .par_iter()
            .flat_map_iter(|&a| {
                near(a)
                    .filter(move |&b| b > a)
                    .flat_map(move |b| pair(a, b))
            })
            .collect(),
        Some(wanted) => {
            let wanted = Vec::from_iter(wanted.iter().copied());
            let pairs = wanted.par_iter().flat_map_iter(|&a| {
                let others = near(a).filter(move |&b| b != a);
                others.flat_map(move |b| pair(a.min(b), a.max(b)))
            });
            pairs.collect()
        }
    };
    let mut rivals_of = vec![BTreeSet::new(); batch.sorted.len()];
    for (a, b) in found {
        rivals_of[a].insert(b);
    }
    rivals_of
}

/// Why two of a claim's supporting reports from different owners cannot state one event (their
/// frames conflict: another actor or name, another figure of one kind, swapped roles, one
/// template about another thing), for a grouping the judge did not make, a model's: one answer
/// per claim, `None` when nothing in the frames says so. The reports are read once for all the
/// claims (a model's cross-check of a large window confirms thousands).
pub fn frame_conflicts(claims: &[&Claim], reports: &[Report]) -> Vec<Option<String>> {
    let sorted = sorted_unique(reports);
    let features = features_of(&sorted);
    let index: BTreeMap<&str, usize> = sorted
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let owners: Vec<String> = sorted.iter().map(|r| owner_key(&r.owner)).collect();
    let conflict_in = |claim: &Claim| {
        let supporting: Vec<usize> = claim
            .reports
            .iter()
            .filter(|r| r.stance == Stance::Supports)
            .filter_map(|r| index.get(r.id.as_str()).copied())
            .collect();
        for (n, &i) in supporting.iter().enumerate() {
            for &j in &supporting[n + 1..] {
                let (a, b) = (&features[i], &features[j]);
                if i == j || owners[i] == owners[j] {
                    continue;
                }
                let elsewhere = frame::strong_names_conflict(
                    &a.name_list,
                    &a.mentions,
                    &b.name_list,
                    &b.mentions,
                );
                let how = a.conflict(b).map(Conflict::what);
                if !(elsewhere || how.is_some()) {
                    continue;
                }
                let why = how.unwrap_or(Conflict::Names.what());
                let (x, y) = (&sorted[i].id, &sorted[j].id);
                return Some(format!("{x} and {y} do not state one event ({why})"));
            }
        }
        None
    };
    claims.iter().map(|c| conflict_in(c)).collect()
}
