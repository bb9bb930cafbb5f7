//! The state a headline puts its subject in, on a few general oppositions.

use std::collections::{BTreeMap, BTreeSet};

use super::super::text::{self, stem};
use super::{Word, cased_words, title_case};

/// A state a headline puts its subject in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The opposition: `running|disrupted`, `rising|falling`, `intact|broken`, `held|released`,
    /// `leaving|staying`, `missing|found`, `deliberate|accidental`.
    pub axis: &'static str,
    /// Which side of it (`true`: the first named).
    pub pole: bool,
    /// Stems of the content words before the state in its clause (names included).
    pub subject: BTreeSet<String>,
    /// Whether the headline states it as following its opposite: a reversal ("reopens",
    /// "resumes", "missing … found"), the state "again", or the other pole read after "after"
    /// ("lifts off after a delay"). Such a headline tells of a later moment of the event: an
    /// update, not a denial ([`later_than`]).
    pub after: bool,
}

/// The axis of a service or an event going ahead or not.
const RUNNING: &str = "running|disrupted";

/// General state oppositions of news writing: (axis, first pole's words, second pole's words),
/// compared by [`stem`]. "Usual", "normal" and "timetable" say a service runs as it should.
const OPPOSITIONS: &[(&str, &str, &str)] = &[
    (
        RUNNING,
        "open reopen resume restore operate operating run running normal normally usual \
         timetable schedule proceed unaffected uninterrupted unchanged",
        "close closure shut suspend halt cancel scrub disrupt delay postpone stop outage ground \
         strand",
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
    ("missing|found", "missing disappear vanish", "found locate"),
    (
        "deliberate|accidental",
        "arson deliberate deliberately intentional intentionally",
        "accident accidental accidentally",
    ),
];

/// Words that state their pole as the end of its opposite, compared by [`stem`]: to reopen is to
/// open what was closed, to locate is to find what was sought. (A headline that states both
/// poles of an axis, the other one first, tells the later one too: "Missing hiker found
/// safe".)
const REVERSALS: &str = "reopen resume restore restart reinstate locate";
/// Words that put a headline's state after its opposite ("open again").
const AGAIN: &str = "again";
/// The word that, right before a state, tells it as a return ("back open", "back in
/// service"), compared unstemmed: "backs" is a verb ("council backs closure").
const BACK: &str = "back";
/// Phrases that tell of something going ahead after all, following a failed or called-off try
/// ("reaches orbit at the second attempt", "lights switched on after all", "match back on"),
/// compared word by word by [`stem`]: a headline with one of them and no state word is the
/// running state, later than the disruption it follows.
const RETRIED: &[&str] = &["after all", "second attempt", "back on"];
/// Words after which a state is what came before the headline's news ("after a delay").
const BEFORE: &str = "after following";

/// Verbs that, with the particle after them, mean something off their axis, compared by
/// [`stem`]: to run out of beds is to have none left, not to be running.
const PHRASAL: &[(&str, &str)] = &[("run", "out")];

/// Whether `word` and the one after it are a [`PHRASAL`] verb.
fn phrasal(word: &Word, next: Option<&Word>) -> bool {
    next.is_some_and(|next| {
        PHRASAL
            .iter()
            .any(|&(verb, particle)| word.stem == stem(verb) && next.lower == particle)
    })
}

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
    let listed = |list: &str, w: &str| list.split_whitespace().any(|x| stem(x) == w);
    // A state word just after "after" (a determiner between) is what came before the news.
    let earlier = |i: usize| {
        let before = words[..i]
            .iter()
            .rev()
            .find(|w| !matches!(w.stem.as_str(), "a" | "the"));
        before.is_some_and(|w| listed(BEFORE, &w.stem))
    };
    let stated: Vec<(usize, &'static str, bool)> = words
        .iter()
        .enumerate()
        .filter(|(_, w)| titled || w.opens || !w.upper)
        .filter(|&(i, w)| !phrasal(w, words.get(i + 1)))
        .filter_map(|(i, w)| pole_of(&w.stem).map(|(axis, pole)| (i, axis, pole)))
        .collect();
    let (found, before): (Vec<_>, Vec<_>) = stated.into_iter().partition(|(i, ..)| !earlier(*i));
    let reversal = found.iter().enumerate().find(|(k, (i, axis, pole))| {
        let ends_its_opposite = found[..*k].iter().any(|(_, a, p)| a == axis && p != pole);
        listed(REVERSALS, &words[*i].stem) || ends_its_opposite
    });
    let reversal = reversal.map(|(_, state)| state);
    let again = words.iter().any(|w| listed(AGAIN, &w.stem));
    let (at, axis, pole, after) = match (reversal, found.first(), before.first()) {
        (Some(&(at, axis, pole)), ..) => (at, axis, pole, true),
        (None, Some(_), _) => {
            let first = found.iter().find(|(_, axis, _)| *axis != "leaving|staying");
            let &(at, axis, pole) = first.or(found.first())?;
            let back = at.checked_sub(1).is_some_and(|b| words[b].lower == BACK);
            (at, axis, pole, again || back)
        }
        // Only a state before the news: the headline states the other pole after it.
        (None, None, Some(&(at, axis, pole))) => (at, axis, !pole, true),
        (None, None, None) => {
            let phrases: Vec<Vec<String>> = RETRIED
                .iter()
                .map(|p| p.split_whitespace().map(stem).collect())
                .collect();
            let at = (0..words.len()).find(|&i| {
                phrases.iter().any(|phrase| {
                    let here = words[i..].iter().map(|w| &w.stem).take(phrase.len());
                    here.eq(phrase.iter())
                })
            })?;
            (at, RUNNING, true, true)
        }
    };
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
        after,
    })
}

/// Whether two states put one subject (a shared subject word) in opposite states. A state told
/// as following its opposite opposes only another told so: "bridge reopens" tells what came
/// after "bridge closed" and denies nothing ([`later_than`]).
pub fn states_oppose(a: &State, b: &State) -> bool {
    a.axis == b.axis && a.pole != b.pole && a.after == b.after && !a.subject.is_disjoint(&b.subject)
}

/// Whether `a` is a later moment of what `b` tells: `a` is told as following its opposite and
/// `b` neither is nor states `a`'s state ("bypass reopens" / "bypass closed", "hiker found
/// safe" / "police search for missing hiker", "lifts off after delay" / "launch postponed").
/// `b` may state nothing on the axes: a reversal is news of its own.
pub fn later_than(a: &State, b: Option<&State>) -> bool {
    a.after && b.is_none_or(|b| !b.after && (b.axis != a.axis || b.pole != a.pole))
}
