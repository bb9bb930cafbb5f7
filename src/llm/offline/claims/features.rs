//! What the judge reads of one report ([`Features`]), and how two reports' frames differ
//! ([`Conflict`]).

use std::collections::{BTreeMap, BTreeSet};

use super::super::frame::{self, Figures, Lexicon};
use super::super::text;
use super::{Report, SAME_EVENT_WINDOW_SECS, SUMMARY_WEIGHT};
use crate::msp::date::parse_rfc3339;

pub(super) type Bag = BTreeMap<String, f64>;
pub(super) type States = BTreeMap<&'static str, BTreeSet<String>>;

/// What grouping and stance need to know about one report.
pub(super) struct Features {
    pub(super) time: Option<i64>,
    pub(super) has_summary: bool,
    pub(super) title: Bag,
    pub(super) full: Bag,
    pub(super) objects: BTreeSet<String>,
    /// Event terms of the title, axes folded; `incidents` are those not on an axis.
    pub(super) events: BTreeSet<String>,
    pub(super) incidents: BTreeSet<String>,
    /// Names of the title ([`Lexicon::names`]); `strong_names`, those the batch confirms.
    pub(super) name_list: Vec<frame::Name>,
    pub(super) strong_names: BTreeSet<String>,
    pub(super) mentions: BTreeSet<String>,
    pub(super) title_stems: Vec<String>,
    /// Who may act on whom in the title ([`frame::role_swap`], [`frame::noun_role_swap`]).
    actors: frame::Actors,
    /// Which words of the title are written as names ([`frame::capitalised`]).
    pub(super) title_capitals: Vec<bool>,
    /// The title's names as runs of words ([`name_runs`]), for [`Features::named_apart`].
    name_runs: Vec<Vec<String>>,
    pub(super) title_figures: Figures,
    pub(super) all_figures: Figures,
    /// Names the batch confirms and figure values, of title and summary: see `similarity::anchor_overlap`.
    pub(super) anchors: BTreeSet<String>,
    /// The names among the anchors.
    pub(super) anchor_names: BTreeSet<String>,
    /// Who won and who lost, by the headline ([`frame::contest`]).
    pub(super) contest: frame::Contest,
    pub(super) state: Option<frame::State>,
    /// The state the summary states, when the headline states none ([`frame::state`] of it).
    pub(super) summary_state: Option<frame::State>,
    pub(super) cues: text::Cues,
    pub(super) title_cues: text::Cues,
    pub(super) states: States,
    pub(super) title_states: States,
}

pub(super) fn disjoint(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    !a.is_empty() && !b.is_empty() && a.is_disjoint(b)
}

pub(super) fn states_conflict(a: &States, b: &States) -> bool {
    a.iter()
        .any(|(axis, poles)| b.get(axis).is_some_and(|other| other != poles))
}

/// Whether word `i` of a headline is written as part of a name: capitalised inside a
/// sentence-case headline (`capitals`, [`frame::capitalised`]), or its opening word when a
/// capitalised word follows ("North Quay Street").
fn written_as_name(capitals: &[bool], i: usize) -> bool {
    let capital = |i: usize| capitals.get(i).copied().unwrap_or(false);
    capital(i) || (i == 0 && capital(1))
}

/// A headline's names as runs of consecutive name words (stems): words [`written_as_name`]
/// and the names the batch reads ([`Lexicon::names`]). "Quay Street", "Linnet Prize".
fn name_runs(stems: &[String], capitals: &[bool], names: &[frame::Name]) -> Vec<Vec<String>> {
    let read = |i: usize| names.iter().any(|n| n.position == i);
    let mut runs: Vec<Vec<String>> = Vec::new();
    let mut last = None;
    for (i, w) in stems.iter().enumerate() {
        if !(written_as_name(capitals, i) || read(i)) || text::is_plain(w) {
            continue;
        }
        match (runs.last_mut(), last) {
            (Some(run), Some(l)) if l + 1 == i => run.push(w.clone()),
            _ => runs.push(vec![w.clone()]),
        }
        last = Some(i);
    }
    runs
}

/// A term on a state axis as its axis (`close` → `close|open`), any other as it is.
fn fold(term: &str) -> String {
    text::axis(term).map_or_else(|| term.to_string(), str::to_string)
}

/// The terms of a text for its word bag: those of what happened (`happened`, the text without
/// its names) with opposite states folded onto their axis, and the rest (the names' words) as
/// they are, so that a name never reads as a state ("Kiln Close" is not "closed").
fn bag_terms<'t>(terms: &'t [String], happened: &'t [String]) -> impl Iterator<Item = String> + 't {
    let mut names = terms.to_vec();
    for t in happened {
        if let Some(i) = names.iter().position(|n| n == t) {
            names.swap_remove(i);
        }
    }
    happened.iter().map(|t| fold(t)).chain(names)
}

impl Features {
    pub(super) fn new(report: &Report, lexicon: &Lexicon) -> Self {
        // The headline without the desk's kickers ("UPDATE 3-", "BREAKING:").
        let head = frame::headline(&report.title);
        let headline = head.text;
        // A label and a topic ("Update: Castle Row death") states nothing of its own: its
        // summary's first sentence is its news, for its figures and its state.
        let news = head.label.then(|| frame::first_sentence(&report.summary));
        let title_terms = text::terms(headline);
        let summary_terms = text::terms(&report.summary);
        // What happened, read without the names ("Kiln Close" closes nothing).
        let happened = text::terms(&frame::without_names(headline));
        let title_states = text::states(&happened);
        let mut states = text::states(&summary_terms);
        states.extend(title_states.clone()); // on its axes, the headline's state wins
        let title: Bag = bag_terms(&title_terms, &happened)
            .map(|t| (t, 1.0))
            .collect();
        let summary_happened = text::terms(&frame::without_names(&report.summary));
        let mut full: Bag = bag_terms(&summary_terms, &summary_happened)
            .map(|t| (t, SUMMARY_WEIGHT))
            .collect();
        full.extend(title.clone());
        // A debunking headline denies without a cue word ("bangs were fireworks, police say").
        let debunks = frame::debunks(headline);
        let mut title_cues = text::cues(headline);
        title_cues.denial |= debunks;
        let mut cues = text::cues(&format!("{headline}\n{}", report.summary));
        cues.denial |= debunks;
        let events = happened.iter().filter(|t| text::is_event(t));
        let incidents = events
            .clone()
            .filter(|t| text::axis(t).is_none())
            .cloned()
            .collect();
        let mut events: BTreeSet<String> = events.map(|t| fold(t)).collect();
        if title_cues.status_quo {
            events.insert("(status quo)".to_string());
        }
        let objects = happened
            .iter()
            .filter(|t| text::is_object(t))
            .cloned()
            .collect();
        let name_list = lexicon.names(headline);
        let title_stems = frame::title_stems(headline);
        let title_capitals = frame::capitalised(headline);
        let state = frame::state(headline).or_else(|| news.and_then(frame::state));
        let name_runs = name_runs(&title_stems, &title_capitals, &name_list);
        let actors = frame::Actors::of(headline, lexicon);
        let contest = actors.contest();
        let all_figures = frame::figures(&format!("{headline}\n{}", report.summary));
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
        let stems = text::tokenize(&format!("{headline}\n{}", report.summary));
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
            actors,
            name_runs,
            title_capitals,
            contest,
            title_figures: match (frame::figures(headline), news) {
                (figures, Some(news)) if figures.is_empty() => frame::figures(news),
                (figures, _) => figures,
            },
            all_figures,
            anchor_names: anchors
                .iter()
                .filter(|a| !a.starts_with('#'))
                .cloned()
                .collect(),
            anchors,
            summary_state: match state {
                Some(_) => None,
                None => frame::state(&report.summary),
            },
            state,
            cues,
            title_cues,
            states,
            title_states,
        }
    }

    /// Whether the headlines oppose: one denies or negates, or they state opposite states.
    pub(super) fn opposes(&self, other: &Features) -> bool {
        let (a, b) = (self.title_cues, other.title_cues);
        (a.denial, a.negation) != (b.denial, b.negation)
            || states_conflict(&self.title_states, &other.title_states)
            || matches!((&self.state, &other.state), (Some(x), Some(y)) if frame::states_oppose(x, y))
    }

    /// Whether one headline tells a later moment of what the other tells ([`frame::later_than`])
    /// about the same thing (water restored is no later moment of a power cut): one event at
    /// two times, never one claim, the later report denying nothing.
    pub(super) fn updates(&self, other: &Features) -> bool {
        let later = |a: &Features, b: &Features| {
            a.state
                .as_ref()
                .is_some_and(|s| frame::later_than(s, b.state.as_ref()))
        };
        (later(self, other) || later(other, self)) && !self.objects_differ(other)
    }

    /// How the frames say different things, if they do: each title names someone or somewhere
    /// the other report never mentions, a later state, different figures of one kind, one
    /// template about another thing, or swapped roles.
    pub(super) fn conflict(&self, other: &Features) -> Option<Conflict> {
        if frame::names_conflict(
            &self.name_list,
            &self.mentions,
            &other.name_list,
            &other.mentions,
        ) {
            Some(Conflict::Names)
        } else if self.updates(other) {
            Some(Conflict::Update)
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
            || frame::role_swap(&self.actors, &other.actors)
            || frame::noun_role_swap(&self.actors, &other.actors)
            || frame::accused_differ(&self.actors, &other.actors)
        {
            Some(Conflict::Roles)
        } else {
            None
        }
    }

    /// Whether the titles may put two actors they share in opposite roles, which no rule
    /// reads ([`frame::order_unclear`]): never a reason to keep them apart, only to withhold a
    /// confirmation.
    pub(super) fn order_unclear(&self, other: &Features) -> bool {
        frame::order_unclear(&self.actors, &other.actors)
    }

    /// Whether the titles are one template with one content word swapped for another that the
    /// other report never uses: word for word the same but at one place (see
    /// [`Conflict::Substitution`]). A reworded headline is never one: it differs in more.
    pub(super) fn substitutes(&self, other: &Features) -> bool {
        let (a, b) = (&self.title_stems, &other.title_stems);
        if a.len() != b.len() {
            return self.extends_a_name(other) || other.extends_a_name(self);
        }
        let mut differ = a.iter().zip(b).filter(|(x, y)| x != y);
        let (Some((x, y)), None) = (differ.next(), differ.next()) else {
            return false;
        };
        self.swaps(x, y, other)
    }

    /// Whether `x` of this title and `y` of `other`'s are one content word swapped for another
    /// that the other report never uses.
    fn swaps(&self, x: &String, y: &String, other: &Features) -> bool {
        let (cx, cy) = (text::canonical(x), text::canonical(y));
        let unused = |w: &String, canon: &String, by: &Features| {
            !text::is_plain(w) && !by.mentions.contains(w) && !by.mentions.contains(canon)
        };
        cx != cy && unused(x, &cx, other) && unused(y, &cy, self)
    }

    /// Whether this title is `other`'s word for word, with at most two words inserted into its
    /// names that the other report never mentions and at most one other word swapped
    /// ([`Features::swaps`]): one template about another team, body or place ("Sedgecombe RFC
    /// Women beat Otterham Saracens Women" / "Sedgecombe RFC beat Otterham Saracens", "North
    /// Quay Street depot closed" / "Quay Street school closed"). Inserted words are written as
    /// names next to another word of the name.
    pub(super) fn extends_a_name(&self, other: &Features) -> bool {
        let (long, short) = (&self.title_stems, &other.title_stems);
        let extra = long.len().saturating_sub(short.len());
        if !(1..=2).contains(&extra) {
            return false;
        }
        let name_word = |i: usize| written_as_name(&self.title_capitals, i);
        let in_a_name = |i: usize| {
            let w = &long[i];
            name_word(i)
                && (i.checked_sub(1).is_some_and(name_word) || name_word(i + 1))
                && !text::is_plain(w)
                && !other.mentions.contains(w)
        };
        // Word by word: the same word, else a word inserted into a name, else the one swap.
        let (mut inserted, mut swapped, mut j) = (0, None, 0);
        for (i, w) in long.iter().enumerate() {
            match short.get(j) {
                Some(v) if v == w => j += 1,
                _ if inserted < extra && in_a_name(i) => inserted += 1,
                Some(v) if swapped.is_none() => {
                    swapped = Some((w, v));
                    j += 1;
                }
                _ => return false,
            }
        }
        j == short.len()
            && inserted == extra
            && swapped.is_none_or(|(x, y)| self.swaps(x, y, other))
    }

    /// Whether two reports may be rival accounts of one subject, whatever their frames: close
    /// in time and sharing a name the batch confirms, or with none on either side. Read once
    /// per pair, before the frames are compared; [`Features::rival_by`] says the rest.
    ///
    /// Never when each headline writes as a name a word the other report never mentions
    /// ([`Features::named_apart`]): in a large batch most place words also occur in lower case
    /// ("street", "harbour", "road"), so the batch confirms few names, and two places' reports
    /// on one template ("Quay Street bridge closed" / "North Harbour Road bridge closed") read
    /// as one nameless subject with two figures, or share the one name word left ("street").
    pub(super) fn may_rival(&self, other: &Features) -> bool {
        let (a, b) = (&self.strong_names, &other.strong_names);
        let subject = !a.is_disjoint(b) || (a.is_empty() && b.is_empty());
        subject && !self.named_apart(other) && !self.too_far(other)
    }

    /// Whether two reports that [`Features::may_rival`] are rival accounts, their frames
    /// conflicting as `how` says: without names on either side, only another figure or swapped
    /// roles make them rivals ("Bus drivers strike" and "Train drivers strike" are two
    /// strikes), and one template about another thing never does.
    pub(super) fn rival_by(&self, other: &Features, how: Conflict) -> bool {
        let nameless = self.strong_names.is_empty() && other.strong_names.is_empty();
        (!nameless || how != Conflict::Names) && how != Conflict::Substitution
    }

    /// Whether the headlines name two things, read from how each is written rather than from
    /// the batch: both name something, and no name of either is mentioned whole by the other
    /// report ("Quay Street" / "Weir Street" share a word, not a name; "Linnet Prize" in both
    /// is one subject whoever won it).
    pub(super) fn named_apart(&self, other: &Features) -> bool {
        let (a, b) = (&self.name_runs, &other.name_runs);
        let named_by = |runs: &[Vec<String>], by: &Features| {
            runs.iter()
                .any(|run| run.iter().all(|w| by.mentions.contains(w)))
        };
        !a.is_empty() && !b.is_empty() && !named_by(a, other) && !named_by(b, self)
    }

    /// Whether the titles name other things: disjoint objects, or each an object the other
    /// report never mentions beside one they share ("tunnel loses power" / "station loses
    /// power": "power" in both).
    pub(super) fn objects_differ(&self, other: &Features) -> bool {
        let foreign =
            |a: &Features, b: &Features| a.objects.iter().any(|o| !b.mentions.contains(o));
        disjoint(&self.objects, &other.objects) || (foreign(self, other) && foreign(other, self))
    }

    pub(super) fn too_far(&self, other: &Features) -> bool {
        matches!((self.time, other.time),
            (Some(a), Some(b)) if (a - b).abs() > SAME_EVENT_WINDOW_SECS)
    }
}

/// How two reports' frames differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Conflict {
    /// One word of a title swapped for another that the other report never uses: the same
    /// template about another thing ("Mill Lane school closed" / "Mill Lane depot closed").
    Substitution,
    Names,
    Figures,
    Roles,
    /// One headline tells a later state of what the other tells ([`Features::updates`]).
    Update,
}

impl Conflict {
    /// How the two differ, for a person.
    pub(super) fn what(self) -> &'static str {
        match self {
            Conflict::Substitution => "one headline about another thing",
            Conflict::Names => "their names differ",
            Conflict::Figures => "their figures differ",
            Conflict::Roles => "their roles differ",
            Conflict::Update => "one tells a later state",
        }
    }
}

/// A figure as an anchor: its value, with its kind where the kind is read for certain (a share,
/// a sum of money, a span of time, a score), so that three nurseries and a 3 % rate are two
/// figures. Counts and measures compare by value alone: what they count or measure is read
/// loosely ("12 dead" and "twelve people", "50m" and "50 metres" are each one figure).
pub(super) fn anchor(kind: &str, value: &str) -> String {
    let certain =
        kind == "percent" || kind == "score" || kind.starts_with("money:") || kind == "duration";
    match certain {
        true => format!("#{kind}:{value}"),
        false => format!("#{value}"),
    }
}
