//! The state a headline puts its subject in, on a few general oppositions.

use std::collections::{BTreeMap, BTreeSet};

use super::super::text::{self, stem};
use super::{cased_words, title_case};

/// A state a headline puts its subject in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The opposition: `running|disrupted`, `rising|falling`, `intact|broken`, `held|released`,
    /// `leaving|staying`.
    pub axis: &'static str,
    /// Which side of it (`true`: the first named).
    pub pole: bool,
    /// Stems of the content words before the state in its clause (names included).
    pub subject: BTreeSet<String>,
}

/// General state oppositions of news writing: (axis, first pole's words, second pole's words),
/// compared by [`stem`]. "Usual", "normal" and "timetable" say a service runs as it should.
const OPPOSITIONS: &[(&str, &str, &str)] = &[
    (
        "running|disrupted",
        "open reopen resume restore operate operating run running normal normally usual \
         timetable schedule proceed unaffected uninterrupted unchanged",
        "close shut suspend halt cancel disrupt delay stop outage ground strand",
    ),
    (
        "rising|falling",
        "rise rose risen increase climb jump soar surge gain grow",
        "fall fell fallen drop decrease decline slump plunge slide shrink",
    ),
    (
        "intact|broken",
        "intact hold holding firm safe stable sound survive",
        "breach burst collapse destroy break broke broken fail wreck",
    ),
    (
        "held|released",
        "arrest detain charge custody remand jail imprison convict",
        "release free freed acquit clear bail",
    ),
    (
        "leaving|staying",
        "resign quit leave step oust sack depart exit",
        "stay remain serve continue retain keep",
    ),
];

/// The state `title` states, if it states one of [`OPPOSITIONS`]: the first such word decides
/// (for leaving/staying, only when no other axis is stated: "remains closed" is about running).
pub fn state(title: &str) -> Option<State> {
    // In "Stabbing arrest: man released", what follows the colon is the news.
    if let Some((_, tail)) = title.rsplit_once(':')
        && let Some(state) = state_of(tail)
    {
        return Some(state);
    }
    state_of(title)
}

fn state_of(title: &str) -> Option<State> {
    let words = cased_words(title);
    let titled = title_case(&words);
    static POLES: std::sync::OnceLock<BTreeMap<String, (&'static str, bool)>> =
        std::sync::OnceLock::new();
    let poles = POLES.get_or_init(|| {
        let mut poles = BTreeMap::new();
        // The first axis and the first pole that list a stem keep it.
        for &(axis, a, b) in OPPOSITIONS {
            for (list, pole) in [(a, true), (b, false)] {
                for w in list.split_whitespace() {
                    poles.entry(stem(w)).or_insert((axis, pole));
                }
            }
        }
        poles
    });
    let pole_of = |stem_: &str| poles.get(stem_).copied();
    let found: Vec<(usize, &'static str, bool)> = words
        .iter()
        .enumerate()
        .filter(|(_, w)| titled || w.opens || !w.upper)
        .filter_map(|(i, w)| pole_of(&w.stem).map(|(axis, pole)| (i, axis, pole)))
        .collect();
    let &(at, axis, pole) = found
        .iter()
        .find(|(_, axis, _)| *axis != "leaving|staying")
        .or_else(|| found.first())?;
    let clause_start = words[..=at].iter().rposition(|w| w.opens).unwrap_or(0);
    let mut subject: BTreeSet<String> = words[clause_start..at]
        .iter()
        .map(|w| w.stem.clone())
        .filter(|s| !text::is_plain(s) && pole_of(s).is_none())
        .collect();
    if subject.is_empty() {
        // "Suspended: ferry services" / "Closure of the bridge": what follows, to a preposition.
        subject = words[at + 1..]
            .iter()
            .take_while(|w| !w.opens)
            .map(|w| w.stem.clone())
            .filter(|s| !text::is_plain(s) && pole_of(s).is_none())
            .take(3)
            .collect();
    }
    Some(State {
        axis,
        pole,
        subject,
    })
}

/// Whether two states put one subject (a shared subject word) in opposite states.
pub fn states_oppose(a: &State, b: &State) -> bool {
    a.axis == b.axis && a.pole != b.pole && !a.subject.is_disjoint(&b.subject)
}
