//! Claims for the offline newsroom: grouping feed reports into claims and cross-checking each
//! claim across independent owners, deterministically and without a language model.
//!
//! Grouping. Each report becomes two IDF-weighted bags of [`text::terms`] (title; title plus
//! summary at half weight), with opposite states (`close`/`open`) folded onto one axis term so
//! "bridge closed" and "bridge reopened" read as one subject. Similarity is the title cosine,
//! blended 60/40 with the full-text cosine when both reports have a summary, or, when higher,
//! the share of anchors two reports have in common (names the batch confirms and figures,
//! anywhere in them: [`anchor_overlap`]). Clustering is average linkage: the most similar pair
//! of clusters merges while its agreeing pairs average [`MERGE_THRESHOLD`], its opposed pairs
//! [`OPPOSED_MERGE_THRESHOLD`], and none of its pairs is below [`MIN_PAIR_SIMILARITY`].
//!
//! Meanings. With a sentence-embedding model ([`Meanings`]: a unit vector per report, from
//! `crate::llm::local`), the similarity of two reports is the higher of the word similarity
//! and the model's ([`Meanings::similarity`]): paraphrases that share few words come together.
//! The model only ever brings reports closer; every veto below still splits them, so a model
//! can find a paraphrase but never merge two reports whose frames conflict.
//!
//! Vetoes. Two reports never share a claim when each names a place or person (a name the batch
//! confirms, [`frame`]) that the other never mentions, or when their titles name disjoint
//! objects (bridge vs tunnel), or when their roles are swapped (even if one denies: "X has not
//! sued Y" denies "X sues Y", not "Y sues X"). Unless their titles oppose, they also never do
//! when their frames conflict (an opening actor the other never mentions doing the same thing,
//! another figure of one kind, a winner who loses in the other), when they name disjoint events (fire vs opening hours), or when
//! they lie more than [`SAME_EVENT_WINDOW_SECS`] apart. Opposed titles (one denies or negates,
//! or they put one subject in opposite states) merge from [`OPPOSED_MERGE_THRESHOLD`], judged by
//! how much of the shorter one the other covers: a denier left outside its claim could let the
//! claim be confirmed, while joining it wrongly only yields "contradicted".
//!
//! Stance. The anchor is the earliest report without any cue, else the earliest report. A report
//! denies when its cues differ from the anchor's, when it states the opposite state, or when its
//! figures conflict with the claim's; states and figures the anchor lacks come from the earliest
//! report agreeing with it. Independence is by owner only (trimmed, lowercased; a blank owner
//! never counts).
//!
//! Rivals. A claim whose frame conflicts with another claim about the same subject (a shared
//! name, close in time, alike in words: another winner, figure or role) is contradicted by it
//! ([`cross_check_all`]). When unclear, not confirmed: a confirmed claim beside a report of
//! another owner on the same subject that was not grouped with it is single-source (the judge
//! cannot tell a paraphrase it missed from a denial it cannot read). [`enforce`] has the last
//! word on every verdict.
//!
//! Limits. English headlines; no parser, so roles are positions around a verb and converse
//! verbs ("X beats Y" / "Y loses to X") read as a swap (a split, never a merge). Paraphrases
//! that share neither words nor names and figures stay apart. Updated figures ("toll rises to
//! 15") read as rival accounts: safe, but noisy. A denial must share distinctive words with its
//! claim ("Authority denies closure" alone attaches to nothing). IDF and names come from the
//! batch, so a pair can group differently in another batch, and a claim id changes if an
//! earlier report joins later. Clustering is O(n³): meant for batches of hundreds.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::frame::{self, Figures, Lexicon};
use super::text;
use crate::msp::date::parse_rfc3339;

/// What a sentence-embedding model makes of each report, by report id: a unit vector of the
/// text [`meaning_text`] gives, compared by cosine ([`Meanings::similarity`]). The judge works
/// without it, on words alone.
#[derive(Debug, Clone, Default)]
pub struct Meanings {
    vectors: BTreeMap<String, Vec<f32>>,
    floor: f64,
    weight: f64,
    same: f64,
}

impl Meanings {
    /// Vectors by report id, on the tuned scale ([`MEANING_FLOOR`], [`MEANING_WEIGHT`]).
    pub fn new(vectors: BTreeMap<String, Vec<f32>>) -> Self {
        Self {
            vectors,
            floor: MEANING_FLOOR,
            weight: MEANING_WEIGHT,
            same: MEANING_SAME_SUBJECT,
        }
    }

    /// The same vectors on another scale (for measuring the scale on a tuning set).
    pub fn with_scale(self, floor: f64, weight: f64, same: f64) -> Self {
        Self {
            floor,
            weight,
            same,
            ..self
        }
    }

    fn cosine(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    }

    /// Whether the model reads two reports as about one subject, past what word tables can
    /// tell (a "port" and a "harbour"): the object and event-kind vetoes then do not apply.
    pub fn same_subject(&self, a: &[f32], b: &[f32]) -> bool {
        Self::cosine(a, b) >= self.same
    }

    /// The vector of report `id`.
    pub fn get(&self, id: &str) -> Option<&Vec<f32>> {
        self.vectors.get(id)
    }

    /// The model's similarity of two unit vectors on the word similarity's scale: 0 at or
    /// below the floor, rising linearly to the weight at a cosine of 1.
    pub fn similarity(&self, a: &[f32], b: &[f32]) -> f64 {
        (self.weight * (Self::cosine(a, b) - self.floor) / (1.0 - self.floor)).max(0.0)
    }
}

/// The text of a report a model embeds: its title, then its summary.
pub fn meaning_text(report: &Report) -> String {
    match report.summary.trim() {
        "" => report.title.clone(),
        summary => format!("{}. {summary}", report.title.trim_end_matches('.')),
    }
}

/// Cosine below which the model says nothing of two reports. The three meaning constants were
/// chosen on `eval/newsroom/tune.jsonl` only, by a sweep (floor 0.45–0.6, weight 0.6–1.0,
/// same subject 0.7–never): the most recall with precision 1.0 and no false confirmation, in
/// a flat neighbourhood (floor 0.6 scores the same).
pub const MEANING_FLOOR: f64 = 0.55;
/// The similarity a cosine of 1 stands for, on the scale of the word similarity.
pub const MEANING_WEIGHT: f64 = 0.8;
/// Cosine from which the model's reading of one subject overrides the word tables' object and
/// event-kind vetoes (never the frame checks: names, roles, figures, states).
pub const MEANING_SAME_SUBJECT: f64 = 0.75;

/// Mean similarity at which two clusters are one event. On the planted fixture, rewordings of
/// one event by different outlets score 0.27–0.65 pairwise (the four-report bridge cluster links
/// at 0.34), while agreeing pairs that share only a place or object word score at most 0.26 even
/// before the vetoes remove them. 0.3 sits between, leaning to split: a split costs a
/// confirmation, a wrong merge can fabricate one.
pub const MERGE_THRESHOLD: f64 = 0.3;
/// The bar for clusters whose titles oppose each other (see the module docs). Opposed pairs are
/// scored by containment, so on the fixture they reach 0.27–0.35 across objects (tunnel reopened
/// vs bridge closed, water restored vs blackout); the object veto keeps those apart, and where
/// it cannot, the wrong merge yields "contradicted", never "confirmed".
pub const OPPOSED_MERGE_THRESHOLD: f64 = 0.2;
/// Similarity from which two reports whose frames conflict, sharing a name, are rival accounts of
/// one subject (see [`cross_check_all`]): below [`MERGE_THRESHOLD`], since another figure or
/// winner is often worded differently too ("Magnitude 5.8 earthquake shakes X" / "Strong 6.1
/// earthquake hits off X"). A rival only ever withholds a confirmation.
pub const RIVAL_THRESHOLD: f64 = 0.2;
/// Similarity from which a report of another owner, sharing a name with a confirmed claim's
/// report but left out of the claim, makes the claim unclear (see [`cross_check_all`]).
pub const UNCLEAR_THRESHOLD: f64 = 0.15;
/// Every two reports of a claim must share at least this much: some rare term, in practice.
pub const MIN_PAIR_SIMILARITY: f64 = 0.05;
/// Agreeing reports more than 72 hours apart are never the same event.
pub const SAME_EVENT_WINDOW_SECS: i64 = 72 * 3600;
/// Names and figures two reports must share before they count as anchors of one event.
const MIN_ANCHORS: usize = 2;
/// What sharing every anchor is worth against word similarity.
const ANCHOR_WEIGHT: f64 = 0.5;
/// Weight of summary-only terms against title terms in the full-text bag.
const SUMMARY_WEIGHT: f64 = 0.5;
/// Share of the title cosine in the similarity when both reports have a summary.
const TITLE_SHARE: f64 = 0.6;

/// One feed item as the newsroom sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Stable id of the item.
    pub id: String,
    /// The headline.
    pub title: String,
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub url: String,
    /// RFC 3339, e.g. "2026-11-30T07:30:00Z".
    #[serde(default)]
    pub published: Option<String>,
    /// Who publishes it, e.g. "Sample Wire" or "Harbour Authority".
    pub outlet: String,
    /// Independence token: reports with the same owner are one source.
    pub owner: String,
    /// The perception source it came from, e.g. "official_feeds".
    #[serde(default)]
    pub source: String,
}

/// Whether a report supports or denies its claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stance {
    Supports,
    Denies,
}

/// A report's place in a claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimReport {
    pub id: String,
    pub stance: Stance,
}

/// Reports that describe one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// [`claim_id`] of the anchor report.
    pub id: String,
    /// What is claimed: the anchor's headline.
    pub text: String,
    /// In (published, id) order.
    pub reports: Vec<ClaimReport>,
}

/// The outcome of cross-checking a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Confirmed,
    SingleSource,
    Contradicted,
}

/// A claim's cross-check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The claim id.
    pub claim: String,
    pub text: String,
    pub status: Status,
    /// Report ids.
    pub supporting: Vec<String>,
    /// Report ids.
    pub denying: Vec<String>,
    /// One sentence for a person, naming the owners counted.
    pub reason: String,
}

type Bag = BTreeMap<String, f64>;
type States = BTreeMap<&'static str, BTreeSet<String>>;

/// What grouping and stance need to know about one report.
struct Features {
    time: Option<i64>,
    has_summary: bool,
    title: Bag,
    full: Bag,
    objects: BTreeSet<String>,
    /// Event terms of the title, axes folded; `incidents` are those not on an axis.
    events: BTreeSet<String>,
    incidents: BTreeSet<String>,
    /// Names of the title ([`Lexicon::names`]); `strong_names`, those the batch confirms.
    name_list: Vec<frame::Name>,
    strong_names: BTreeSet<String>,
    mentions: BTreeSet<String>,
    title_stems: Vec<String>,
    /// Which words of the title are written as names ([`frame::capitalised`]).
    title_capitals: Vec<bool>,
    title_figures: Figures,
    all_figures: Figures,
    /// Names the batch confirms and figure values, of title and summary: see [`anchor_overlap`].
    anchors: BTreeSet<String>,
    /// The names among the anchors.
    anchor_names: BTreeSet<String>,
    /// Who won and who lost, by the headline ([`frame::contest`]).
    contest: frame::Contest,
    state: Option<frame::State>,
    cues: text::Cues,
    title_cues: text::Cues,
    states: States,
    title_states: States,
}

fn disjoint(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    !a.is_empty() && !b.is_empty() && a.is_disjoint(b)
}

fn states_conflict(a: &States, b: &States) -> bool {
    a.iter()
        .any(|(axis, poles)| b.get(axis).is_some_and(|other| other != poles))
}

impl Features {
    fn new(report: &Report, lexicon: &Lexicon) -> Self {
        let title_terms = text::terms(&report.title);
        let summary_terms = text::terms(&report.summary);
        // What happened, read without the names ("Kiln Close" closes nothing).
        let happened = text::terms(&frame::without_names(&report.title));
        let title_states = text::states(&happened);
        let mut states = text::states(&summary_terms);
        states.extend(title_states.clone()); // on its axes, the headline's state wins
        let fold = |t: &String| text::axis(t).map_or_else(|| t.clone(), str::to_string);
        let title: Bag = title_terms.iter().map(|t| (fold(t), 1.0)).collect();
        let mut full: Bag = summary_terms
            .iter()
            .map(|t| (fold(t), SUMMARY_WEIGHT))
            .collect();
        full.extend(title.clone());
        let title_cues = text::cues(&report.title);
        let events = happened.iter().filter(|t| text::is_event(t));
        let incidents = events
            .clone()
            .filter(|t| text::axis(t).is_none())
            .cloned()
            .collect();
        let mut events: BTreeSet<String> = events.map(fold).collect();
        if title_cues.status_quo {
            events.insert("(status quo)".to_string());
        }
        let objects = happened
            .iter()
            .filter(|t| text::is_object(t))
            .cloned()
            .collect();
        let name_list = lexicon.names(&report.title);
        let title_stems = frame::title_stems(&report.title);
        let contest = frame::contest(&title_stems, &name_list);
        let all_figures = frame::figures(&format!("{}\n{}", report.title, report.summary));
        let mut anchors: BTreeSet<String> = lexicon
            .names(&report.summary)
            .into_iter()
            .chain(name_list.iter().cloned())
            .filter(|n| n.strong)
            .map(|n| n.stem)
            .collect();
        let figure_values = all_figures.iter().filter(|(kind, _)| *kind != "year");
        anchors.extend(figure_values.flat_map(|(kind, vs)| vs.iter().map(|v| anchor(kind, v))));
        let mut mentions: BTreeSet<String> =
            title_terms.iter().chain(&summary_terms).cloned().collect();
        // Names compare as stems; terms may have mapped a word elsewhere ("port" -> "harbour").
        let stems = text::tokenize(&format!("{}\n{}", report.title, report.summary));
        mentions.extend(stems.iter().map(|w| text::stem(w)));
        Self {
            time: report.published.as_deref().and_then(parse_rfc3339),
            has_summary: !report.summary.trim().is_empty(),
            title,
            full,
            objects,
            events,
            incidents,
            strong_names: name_list
                .iter()
                .filter(|n| n.strong)
                .map(|n| n.stem.clone())
                .collect(),
            name_list,
            mentions,
            title_stems,
            title_capitals: frame::capitalised(&report.title),
            contest,
            title_figures: frame::figures(&report.title),
            all_figures,
            anchor_names: anchors
                .iter()
                .filter(|a| !a.starts_with('#'))
                .cloned()
                .collect(),
            anchors,
            state: frame::state(&report.title),
            cues: text::cues(&format!("{}\n{}", report.title, report.summary)),
            title_cues,
            states,
            title_states,
        }
    }

    /// Whether the headlines oppose: one denies or negates, or they state opposite states.
    fn opposes(&self, other: &Features) -> bool {
        let (a, b) = (self.title_cues, other.title_cues);
        (a.denial, a.negation) != (b.denial, b.negation)
            || states_conflict(&self.title_states, &other.title_states)
            || matches!((&self.state, &other.state), (Some(x), Some(y)) if frame::states_oppose(x, y))
    }

    /// How the frames say different things, if they do: each title names someone or somewhere
    /// the other report never mentions, different figures of one kind, or swapped roles.
    fn conflict(&self, other: &Features) -> Option<Conflict> {
        if frame::names_conflict(
            &self.name_list,
            &self.mentions,
            &other.name_list,
            &other.mentions,
        ) {
            Some(Conflict::Names)
        } else if frame::figures_conflict(
            &self.title_figures,
            &self.all_figures,
            &other.title_figures,
            &other.all_figures,
        ) {
            Some(Conflict::Figures)
        } else if self.substitutes(other)
            || frame::exclusive_qualifiers(
                &self.title_stems,
                &self.mentions,
                &other.title_stems,
                &other.mentions,
            )
        {
            Some(Conflict::Substitution)
        } else if frame::contests_conflict(&self.contest, &other.contest)
            || frame::role_swap(
                &self.title_stems,
                &self.name_list,
                &other.title_stems,
                &other.name_list,
            )
            || frame::noun_role_swap(
                &self.title_stems,
                &self.name_list,
                &other.title_stems,
                &other.name_list,
            )
        {
            Some(Conflict::Roles)
        } else {
            None
        }
    }

    /// Whether the titles are one template with one content word swapped for another that the
    /// other report never uses: word for word the same but at one place (see
    /// [`Conflict::Substitution`]). A reworded headline is never one: it differs in more.
    fn substitutes(&self, other: &Features) -> bool {
        let (a, b) = (&self.title_stems, &other.title_stems);
        if a.len() != b.len() {
            return self.extends_a_name(other) || other.extends_a_name(self);
        }
        let mut differ = a.iter().zip(b).filter(|(x, y)| x != y);
        let (Some((x, y)), None) = (differ.next(), differ.next()) else {
            return false;
        };
        let (cx, cy) = (text::canonical(x), text::canonical(y));
        let unused = |w: &String, canon: &String, by: &Features| {
            !text::is_plain(w) && !by.mentions.contains(w) && !by.mentions.contains(canon)
        };
        cx != cy && unused(x, &cx, other) && unused(y, &cy, self)
    }

    /// Whether this title is `other`'s word for word, with at most two words inserted into its
    /// names that the other report never mentions: one template about another team or body
    /// ("Sedgecombe RFC Women beat Otterham Saracens Women" / "Sedgecombe RFC beat Otterham
    /// Saracens"). Inserted words are written capitalised next to another capitalised word.
    fn extends_a_name(&self, other: &Features) -> bool {
        let (long, short) = (&self.title_stems, &other.title_stems);
        let extra = long.len().saturating_sub(short.len());
        if !(1..=2).contains(&extra) {
            return false;
        }
        let capital = |i: usize| self.title_capitals.get(i).copied().unwrap_or(false);
        let (mut inserted, mut j) = (Vec::new(), 0);
        for (i, w) in long.iter().enumerate() {
            if short.get(j) == Some(w) {
                j += 1;
            } else {
                inserted.push(i);
            }
        }
        let in_a_name = |i: usize| {
            let w = &long[i];
            capital(i)
                && (i.checked_sub(1).is_some_and(capital) || capital(i + 1))
                && !text::is_plain(w)
                && !other.mentions.contains(w)
        };
        j == short.len() && inserted.len() == extra && inserted.iter().all(|&i| in_a_name(i))
    }

    /// Whether two reports whose frames conflict (`how`) are rival accounts of one subject:
    /// close in time and sharing a name the batch confirms; without names on either side, only
    /// another figure or swapped roles make them rivals ("Bus drivers strike" and "Train
    /// drivers strike" are two strikes).
    fn rivals(&self, other: &Features, how: Conflict) -> bool {
        let (a, b) = (&self.strong_names, &other.strong_names);
        let named = how == Conflict::Names;
        let subject = !a.is_disjoint(b) || (a.is_empty() && b.is_empty() && !named);
        let subject = subject && how != Conflict::Substitution;
        subject && !self.too_far(other)
    }

    fn too_far(&self, other: &Features) -> bool {
        matches!((self.time, other.time),
            (Some(a), Some(b)) if (a - b).abs() > SAME_EVENT_WINDOW_SECS)
    }
}

/// How two reports' frames differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conflict {
    /// One word of a title swapped for another that the other report never uses: the same
    /// template about another thing ("Mill Lane school closed" / "Mill Lane depot closed").
    Substitution,
    Names,
    Figures,
    Roles,
}

/// Total order of reports: (published, id), missing or unreadable dates last; the other fields
/// break ties between duplicates of one id, so that input order never matters.
fn sort_key(r: &Report) -> impl Ord + '_ {
    let time = r.published.as_deref().and_then(parse_rfc3339);
    let rest = (&r.owner, &r.outlet, &r.title, &r.summary, &r.url, &r.source);
    (time.is_none(), time, &r.id, &r.published, rest)
}

/// Reports in [`sort_key`] order, one per id.
fn sorted_unique<'a>(reports: impl IntoIterator<Item = &'a Report>) -> Vec<&'a Report> {
    let mut sorted: Vec<&Report> = reports.into_iter().collect();
    sorted.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    let mut seen = BTreeSet::new();
    sorted.retain(|r| seen.insert(r.id.as_str()));
    sorted
}

/// [`Features`] of sorted reports, names read against the batch they came in.
fn features_of(sorted: &[&Report]) -> Vec<Features> {
    let texts = sorted
        .iter()
        .flat_map(|r| [r.title.as_str(), r.summary.as_str()]);
    let lexicon = Lexicon::new(texts);
    sorted.iter().map(|r| Features::new(r, &lexicon)).collect()
}

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

/// Pairwise similarity of all reports, vetoes aside (symmetric).
fn similarities(features: &[Features]) -> Vec<Vec<f64>> {
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
    let pair = |i: usize, j: usize| {
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
        sim.max(anchor_overlap(a, b))
    };
    // Each pair once (`upper[i][j - i]` for `j >= i`), then mirrored.
    let upper: Vec<Vec<f64>> = (0..n)
        .map(|i| (i..n).map(|j| pair(i, j)).collect())
        .collect();
    let at = |i: usize, j: usize| match j >= i {
        true => upper[i][j - i],
        false => upper[j][i - j],
    };
    (0..n).map(|i| (0..n).map(|j| at(i, j)).collect()).collect()
}

/// A figure as an anchor: its value, with its kind where the kind is read for certain (a share,
/// a sum of money, a span of time, a score), so that three nurseries and a 3 % rate are two
/// figures. Counts and measures compare by value alone: what they count or measure is read
/// loosely ("12 dead" and "twelve people", "50m" and "50 metres" are each one figure).
fn anchor(kind: &str, value: &str) -> String {
    let certain = kind == "percent"
        || kind == "score"
        || kind.starts_with("money:")
        || kind.starts_with("duration:");
    match certain {
        true => format!("#{kind}:{value}"),
        false => format!("#{value}"),
    }
}

/// How much two reports share of what pins an event down — names the batch confirms and figures,
/// anywhere in them — as a share of the fewer: paraphrases that share few words still name the
/// same people and places with the same numbers. Needs [`MIN_ANCHORS`] in common, and nothing
/// when a headline gives a figure that the other report does not: names alone are a place or a
/// club, not an event (a match report with its score and a ground's sale both name the club
/// and its ground).
fn anchor_overlap(a: &Features, b: &Features) -> f64 {
    let (x, y) = (&a.anchors, &b.anchors);
    let shared = x.intersection(y).count();
    let fewer = x.len().min(y.len());
    let unmatched = |f: &Features, other: &BTreeSet<String>| {
        let mut headline = f.title_figures.iter().filter(|(kind, _)| *kind != "year");
        headline.any(|(kind, values)| values.iter().any(|v| !other.contains(&anchor(kind, v))))
    };
    if shared < MIN_ANCHORS || fewer == 0 || unmatched(a, y) || unmatched(b, x) {
        return 0.0;
    }
    ANCHOR_WEIGHT * shared as f64 / fewer as f64
}

/// Average-linkage clustering over `sim` (`None`: cannot link), where `opposed[i][j]` marks the
/// pairs whose titles oppose (see [`Features::opposes`]). A pair of clusters merges when none of
/// its pairs is below [`MIN_PAIR_SIMILARITY`], its agreeing pairs average [`MERGE_THRESHOLD`]
/// and its opposed pairs [`OPPOSED_MERGE_THRESHOLD`]: a denial in a cluster lowers the bar for
/// itself only, never for the reports that agree with each other (else a denial of a stadium
/// sale would carry a match report at the same ground into its claim). Ties go to the earliest
/// pair, so the result depends only on the order of the input. Returns clusters of indices,
/// each sorted.
fn cluster(sim: &[Vec<Option<f64>>], opposed: &[Vec<bool>]) -> Vec<Vec<usize>> {
    let n = sim.len();
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    // Per linkable pair of clusters (`i < j`): (sum, count) of agreeing pairs, (sum, count) of
    // opposed pairs, the lowest pair. A pair that cannot link is absent, and stays absent: a
    // merged cluster links to `k` only when both of its parts did. Kept sparse, since vetoes
    // leave most pairs of a batch unlinkable.
    type Link = (f64, usize, f64, usize, f64);
    let mut links: BTreeMap<(usize, usize), Link> = BTreeMap::new();
    for (i, row) in sim.iter().enumerate() {
        for (j, s) in row.iter().enumerate().skip(i + 1) {
            if let Some(s) = *s {
                let link = match opposed[i][j] {
                    true => (0.0, 0, s, 1, s),
                    false => (s, 1, 0.0, 0, s),
                };
                links.insert((i, j), link);
            }
        }
    }
    let key = |a: usize, b: usize| (a.min(b), a.max(b));
    let mean = |sum: f64, count: usize| (count > 0).then(|| sum / count as f64);
    loop {
        let mut best: Option<(f64, usize, usize)> = None;
        for (&(i, j), &(agree, n_agree, opp, n_opp, min)) in &links {
            let eligible = min >= MIN_PAIR_SIMILARITY
                && mean(agree, n_agree).is_none_or(|m| m >= MERGE_THRESHOLD)
                && mean(opp, n_opp).is_none_or(|m| m >= OPPOSED_MERGE_THRESHOLD);
            let overall = (agree + opp) / (n_agree + n_opp) as f64;
            if eligible && best.is_none_or(|(b, _, _)| overall > b) {
                best = Some((overall, i, j));
            }
        }
        let Some((_, i, j)) = best else { break };
        let moved = std::mem::take(&mut members[j]);
        members[i].extend(moved);
        links.remove(&(i, j));
        let of = |c: usize, links: &BTreeMap<(usize, usize), Link>| -> BTreeMap<usize, Link> {
            let at = links.iter().filter(|((a, b), _)| *a == c || *b == c);
            at.map(|(&(a, b), &l)| (if a == c { b } else { a }, l))
                .collect()
        };
        let (from_i, from_j) = (of(i, &links), of(j, &links));
        links.retain(|&(a, b), _| a != i && b != i && a != j && b != j);
        for (k, a) in from_i {
            if let Some(b) = from_j.get(&k) {
                let merged = (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3, a.4.min(b.4));
                links.insert(key(i, k), merged);
            }
        }
    }
    members.retain(|m| !m.is_empty());
    members.iter_mut().for_each(|m| m.sort_unstable());
    members
}

/// `c-` and the first 16 hex digits of sha256(report id).
pub fn claim_id(anchor_report_id: &str) -> String {
    let digest = hex::encode(Sha256::digest(anchor_report_id.as_bytes()));
    format!("c-{}", &digest[..16])
}

/// One claim from a non-empty, sorted cluster of indices into `sorted` and `features`; also
/// returns the anchor's index.
fn make_claim(members: &[usize], sorted: &[&Report], features: &[Features]) -> (usize, Claim) {
    let anchor = *members
        .iter()
        .min_by_key(|&&i| (features[i].cues.any(), i))
        .unwrap_or(&0);
    let reference = &features[anchor];
    let mut states = reference.states.clone();
    // The claim's figures: the anchor's, else those of the first report agreeing with it.
    let mut figured = reference;
    for f in members.iter().map(|&i| &features[i]) {
        if f.cues != reference.cues {
            continue;
        }
        for (axis, poles) in &f.states {
            states.entry(axis).or_insert_with(|| poles.clone());
        }
        if figured.title_figures.is_empty() {
            figured = f;
        }
    }
    // The claim's state in the frame's terms: the anchor's, else the first that agrees with it.
    let agreeing = members
        .iter()
        .map(|&i| &features[i])
        .filter(|f| f.cues == reference.cues);
    let state = reference
        .state
        .as_ref()
        .or_else(|| agreeing.filter_map(|f| f.state.as_ref()).next());
    let opposite = |f: &Features| matches!((state, &f.state), (Some(x), Some(y)) if x.axis == y.axis && x.pole != y.pole);
    let stance = |f: &Features| match f.cues != reference.cues
        || states_conflict(&states, &f.states)
        || opposite(f)
        || frame::figures_conflict(
            &figured.title_figures,
            &figured.all_figures,
            &f.title_figures,
            &f.all_figures,
        ) {
        true => Stance::Denies,
        false => Stance::Supports,
    };
    let reports = members.iter().map(|&i| ClaimReport {
        id: sorted[i].id.clone(),
        stance: stance(&features[i]),
    });
    let a = sorted[anchor];
    let text = [&a.title, &a.summary]
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| format!("(untitled report {})", a.id));
    let claim = Claim {
        id: claim_id(&a.id),
        text,
        reports: reports.collect(),
    };
    (anchor, claim)
}

/// What one batch of reports needs for grouping and cross-checking, computed once: the reports
/// in [`sort_key`] order, their [`Features`], the pairwise similarity and the pairwise frame
/// conflicts (both symmetric). [`newsroom`] builds it once for both steps.
struct Batch<'a> {
    sorted: Vec<&'a Report>,
    features: Vec<Features>,
    sims: Vec<Vec<f64>>,
    /// Pairs the model reads as one subject ([`Meanings::same_subject`]).
    same_subject: Vec<Vec<bool>>,
    /// `None` on the diagonal and where the frames agree.
    conflicts: Vec<Vec<Option<Conflict>>>,
}

impl<'a> Batch<'a> {
    fn new(reports: &'a [Report], meanings: Option<&Meanings>) -> Self {
        let sorted = sorted_unique(reports);
        let features = features_of(&sorted);
        let mut sims = similarities(&features);
        let n = features.len();
        let mut same_subject = vec![vec![false; n]; n];
        if let Some(meanings) = meanings {
            let vectors: Vec<Option<&Vec<f32>>> =
                sorted.iter().map(|r| meanings.get(&r.id)).collect();
            for i in 0..n {
                for j in i + 1..n {
                    if let (Some(a), Some(b)) = (vectors[i], vectors[j]) {
                        let s = sims[i][j].max(meanings.similarity(a, b));
                        (sims[i][j], sims[j][i]) = (s, s);
                        let same = meanings.same_subject(a, b);
                        (same_subject[i][j], same_subject[j][i]) = (same, same);
                    }
                }
            }
        }
        let mut conflicts = vec![vec![None; n]; n];
        for i in 0..n {
            for j in i + 1..n {
                let how = features[i].conflict(&features[j]);
                (conflicts[i][j], conflicts[j][i]) = (how, how);
            }
        }
        Self {
            sorted,
            features,
            sims,
            same_subject,
            conflicts,
        }
    }

    /// Whether reports `i` and `j` can never be one event (see "Vetoes" in the module docs).
    fn cannot_link(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.features[i], &self.features[j]);
        // The word tables' reading of what a report is about, unless the model reads the two
        // as one subject.
        let tables_apart = !self.same_subject[i][j]
            && (disjoint(&a.events, &b.events) || disjoint(&a.incidents, &b.incidents));
        let agreeing_veto = a.too_far(b) || tables_apart;
        let conflict = self.conflicts[i][j];
        let elsewhere =
            frame::strong_names_conflict(&a.name_list, &a.mentions, &b.name_list, &b.mentions);
        let opposes = a.opposes(b);
        (disjoint(&a.objects, &b.objects) && !self.same_subject[i][j])
            || elsewhere
            // Swapped roles are another claim whatever the stance: "X has not sued Y" denies
            // "X sues Y", not "Y sues X".
            || conflict == Some(Conflict::Roles)
            || ((agreeing_veto || conflict.is_some()) && !opposes)
    }

    /// Whether reports `i` and `j` may be about one subject (see [`cross_check_all`]): close in
    /// time, sharing a name the batch confirms, and alike from [`UNCLEAR_THRESHOLD`].
    fn near(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.features[i], &self.features[j]);
        !a.too_far(b)
            && !a.anchor_names.is_disjoint(&b.anchor_names)
            && self.subject_similarity(i, j) >= UNCLEAR_THRESHOLD
    }

    /// Whether reports `i` and `j` are plainly about different subjects: another place or
    /// person each side never mentions, another object, another kind of happening (a closure,
    /// an evacuation, a fire), or one headline template about two things ("Quay Street depot
    /// closed" / "Quay Street tunnel closed").
    fn apart(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.features[i], &self.features[j]);
        frame::strong_names_conflict(&a.name_list, &a.mentions, &b.name_list, &b.mentions)
            || disjoint(&a.objects, &b.objects)
            || disjoint(&a.events, &b.events)
            || self.conflicts[i][j] == Some(Conflict::Substitution)
    }

    /// Similarity for telling whether two reports are about one subject although their frames
    /// differ: the word similarity, or the share of names the batch confirms that they have in
    /// common (figures left out: they differ by definition when the frames conflict).
    fn subject_similarity(&self, i: usize, j: usize) -> f64 {
        let (a, b) = (
            &self.features[i].anchor_names,
            &self.features[j].anchor_names,
        );
        let shared = a.intersection(b).count();
        let fewer = a.len().min(b.len());
        let overlap = match shared >= MIN_ANCHORS && fewer > 0 {
            true => ANCHOR_WEIGHT * shared as f64 / fewer as f64,
            false => 0.0,
        };
        self.sims[i][j].max(overlap)
    }
}

/// Group reports into claims, one per event. The result does not depend on the order of
/// `reports` (a duplicated id counts once); claims are in their anchors' (published, id) order.
pub fn group(reports: &[Report]) -> Vec<Claim> {
    group_with(reports, None)
}

/// [`group`], with the model's [`Meanings`] of the reports when there are some.
pub fn group_with(reports: &[Report], meanings: Option<&Meanings>) -> Vec<Claim> {
    group_batch(&Batch::new(reports, meanings))
}

fn group_batch(batch: &Batch) -> Vec<Claim> {
    let features = &batch.features;
    let opposed = Vec::from_iter(
        features
            .iter()
            .map(|a| features.iter().map(|b| a.opposes(b)).collect()),
    );
    let sims = Vec::from_iter(batch.sims.iter().enumerate().map(|(i, row)| {
        Vec::from_iter(
            row.iter()
                .enumerate()
                .map(|(j, &s)| (i == j || !batch.cannot_link(i, j)).then_some(s)),
        )
    }));
    let clusters = cluster(&sims, &opposed);
    let mut claims: Vec<(usize, Claim)> = clusters
        .iter()
        .map(|members| make_claim(members, &batch.sorted, features))
        .collect();
    claims.sort_by_key(|(anchor, _)| *anchor);
    claims.into_iter().map(|(_, claim)| claim).collect()
}

/// Report id → normalised owner; `None` for a blank owner or an id given with several owners.
fn owners_by_id(reports: &[Report]) -> BTreeMap<&str, Option<String>> {
    let mut owners: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for r in reports {
        owners
            .entry(&r.id)
            .or_default()
            .insert(r.owner.trim().to_lowercase());
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
    cross_check_with(claim, reports, &owners_by_id(reports))
}

/// [`cross_check`] with the owners of `reports` ([`owners_by_id`]) already known.
fn cross_check_with(
    claim: &Claim,
    reports: &[Report],
    index: &BTreeMap<&str, Option<String>>,
) -> Verdict {
    let listed: BTreeSet<&str> = claim.reports.iter().map(|r| r.id.as_str()).collect();
    let sorted = sorted_unique(reports.iter().filter(|r| listed.contains(r.id.as_str())));
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
/// in words: [`UNCLEAR_THRESHOLD`]; and plainly apart from none of the claim's reports: another
/// place, object, kind of happening or template) was left out of it. Such a report is either the same
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
    cross_check_batch(claims, reports, &Batch::new(reports, meanings))
}

fn cross_check_batch(claims: &[Claim], reports: &[Report], batch: &Batch) -> Vec<Verdict> {
    let owners = owners_by_id(reports);
    let verdicts = claims.iter().map(|c| cross_check_with(c, reports, &owners));
    let (sorted, features) = (&batch.sorted, &batch.features);
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
    let rivals = |i: usize, j: usize| {
        members[i].iter().any(|&a| {
            members[j].iter().any(|&b| {
                let (fa, fb) = (&features[a], &features[b]);
                batch.subject_similarity(a, b) >= RIVAL_THRESHOLD
                    && batch.conflicts[a][b].is_some_and(|how| fa.rivals(fb, how))
            })
        })
    };
    let ids = |idx: &[usize]| Vec::from_iter(idx.iter().map(|&k| sorted[k].id.clone()));
    let with_rivals = verdicts.enumerate().map(|(i, verdict)| {
        if verdict.status == Status::Contradicted {
            return verdict;
        }
        let rival_reports: Vec<usize> = (0..claims.len())
            .filter(|&j| j != i && rivals(i, j))
            .flat_map(|j| members[j].clone())
            .collect();
        let supporters = owners_of(&ids(&members[i]), &owners);
        let denying = ids(&rival_reports);
        let deniers = owners_of(&denying, &owners);
        if deniers.is_subset(&supporters) {
            return verdict;
        }
        let verb = by_count(deniers.len().max(1), "reports", "report");
        let reason = format!(
            "contradicted: {} {verb} it otherwise (another winner, figure or role)",
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
    with_rivals
        .into_iter()
        .enumerate()
        .map(|(i, verdict)| {
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
            let direct = support.iter().enumerate().any(|(x, &s)| {
                support[x + 1..]
                    .iter()
                    .any(|&t| owner_of(s) != owner_of(t) && batch.sims[s][t] >= MERGE_THRESHOLD)
            });
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
            let outside = (0..sorted.len()).find(|&k| {
                let owner = owners.get(sorted[k].id.as_str()).cloned().flatten();
                !inside.contains(sorted[k].id.as_str())
                    && owner.is_some_and(|o| !supporters.contains(&o))
                    && support.iter().any(|&s| batch.near(s, k))
                    && !support.iter().any(|&s| batch.apart(s, k))
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

/// Why two of `claim`'s supporting reports from different owners cannot state one event (their
/// frames conflict: another actor or name, another figure of one kind, swapped roles, one
/// template about another thing), for a grouping the judge did not make, a model's. `None` when
/// nothing in the frames says so.
pub fn frame_conflict(claim: &Claim, reports: &[Report]) -> Option<String> {
    let batch = Batch::new(reports, None);
    let index: BTreeMap<&str, usize> = batch
        .sorted
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let supporting: Vec<usize> = claim
        .reports
        .iter()
        .filter(|r| r.stance == Stance::Supports)
        .filter_map(|r| index.get(r.id.as_str()).copied())
        .collect();
    let owner = |i: usize| batch.sorted[i].owner.trim().to_lowercase();
    for (n, &i) in supporting.iter().enumerate() {
        for &j in &supporting[n + 1..] {
            let (a, b) = (&batch.features[i], &batch.features[j]);
            let elsewhere =
                frame::strong_names_conflict(&a.name_list, &a.mentions, &b.name_list, &b.mentions);
            let how = batch.conflicts[i][j].map(|c| format!("{c:?}").to_lowercase());
            if owner(i) == owner(j) || !(elsewhere || how.is_some()) {
                continue;
            }
            let why = how.unwrap_or_else(|| "names".into());
            let (x, y) = (&batch.sorted[i].id, &batch.sorted[j].id);
            return Some(format!(
                "{x} and {y} do not state one event (their {why} differ)"
            ));
        }
    }
    None
}

/// Group `reports` and cross-check every claim, in claim order.
pub fn newsroom(reports: &[Report]) -> Vec<Verdict> {
    newsroom_with(reports, None)
}

/// [`newsroom`], with the model's [`Meanings`] of the reports when there are some.
pub fn newsroom_with(reports: &[Report], meanings: Option<&Meanings>) -> Vec<Verdict> {
    let batch = Batch::new(reports, meanings);
    cross_check_batch(&group_batch(&batch), reports, &batch)
}

#[cfg(test)]
#[path = "claims_tests.rs"]
mod tests;
