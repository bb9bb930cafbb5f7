//! What a headline says happened, beyond its words: who (names, and who acts on whom), how much
//! (figures with their units) and in which state (on a small set of opposed states). Two reports
//! whose frames conflict are never one claim, however many words they share: "Arsenal beat
//! Chelsea 2-1" and "Chelsea beat Arsenal 2-1" have the same words and opposite meanings.
//!
//! - **Names** come from the batch, not from a list: a word is a name when the batch writes it
//!   capitalised inside a sentence-case sentence and never in lower case ([`Lexicon`]). A
//!   headline's first word is a name when the lexicon says so, or when the batch has no lower-case
//!   use of it and it is no function word (a weak name: an unknown first word, such as a company
//!   opening "Kelco recalls vans", must not make two makers one). Followed by a capitalised word
//!   in a sentence-case headline it is a name outright ("Copperline Coaches lands …").
//! - **Figures** ([`figures`]) are numbers with what they count: `4.5%` = `4.5 percent` =
//!   `4.5 per cent`, `twelve` = `12`, `48-hour` = `48 hours`, `$2.1bn` = `$2.1 billion`, a score
//!   `2-1` = `1-2` (the order follows the teams, not the figure). Clock times are not figures.
//! - **Roles** ([`role_swap`]): two names that both reports share, in opposite order around the
//!   same verb, are swapped roles; a passive `by` in one of them turns the order back. Around
//!   two different verbs, headlines that both open with one of the names and join them by a
//!   short verb phrase swap too ("X to buy Y" / "Y to acquire X"). A transfer may be told from
//!   either end: converse verbs ("X lends to Y" / "Y borrows from X") and "to" or "from" before
//!   the later name say who receives.
//! - **Contests** ([`contest`]): a few general verbs of contest say who won and who lost
//!   ("X beats Y", "Y beaten by X", "X wins ... over Y", "X loses to Y", "Town elects X"); a
//!   name that wins in one headline and loses in the other is another claim, whatever the
//!   words around it ("Dunhallow elects Ashworth" / "Tiernan defeats Ashworth"), and so are two
//!   headlines that each name a winner the other never names. Succession reads the same way:
//!   the successor wins, the one succeeded loses ("X succeeds Y", "Y replaced by X", "X takes
//!   over from Y", "Board names X … in place of Y").
//! - **Charges** ([`accused_differ`]): the actor just before a passive verb of charge is the
//!   accused ("Cyclist charged with assaulting taxi driver"); two headlines that each accuse
//!   one the other names unaccused are two events.
//! - **States** ([`state`]): a few general oppositions (running/disrupted, rising/falling,
//!   intact/broken, held/released, leaving/staying, missing/found, deliberate/accidental),
//!   each with the words before it in its clause as its subject. Two reports oppose when they
//!   put one subject in opposite states: "Ferries operating as usual" against "Ferry services
//!   suspended", with no cue word. A state told as following its opposite
//!   ("reopens", "open again", "back open", "missing ... found", "lifts off after a delay") is a
//!   later moment ([`later_than`]), which opposes nothing earlier; so is going ahead after a
//!   called-off try ("reaches orbit at second attempt", "switched on after all", "back on").
//! - **Debunks** ([`debunks`]): a headline that says what others reported was another thing, on
//!   someone's word or in scare quotes ("the bangs were fireworks, police confirm"), denies it.
//! - **Kickers** ([`headline`]): every reading above is of the headline without the desk's
//!   labels ("UPDATE 3-", "BREAKING:", "…: update"); a headline that is only an update's or a
//!   brief's label and a topic ("Update: Castle Row death") has its figures and state read from
//!   its summary's first sentence.
//! - **Actors** ([`Actors`]): roles are read from a headline without a trailing attribution
//!   ("…, Kelco says" names who speaks, not who acts), and a verb phrase never crosses a clause
//!   ("depot fire: crews called").
//!
//! Limits. English headlines only; no parser, so a role is a position around a shared verb, and
//! a state's subject is what precedes it in its clause. Lower-case names ("port authority") are
//! not names. Everything here only ever splits or opposes reports: a wrong reading costs a
//! confirmation, never fabricates one.

use std::collections::BTreeSet;

use super::text::{self, stem};

/// Names known from a batch of texts (see the module docs).
#[derive(Debug, Default, Clone)]
pub struct Lexicon {
    /// Stems seen capitalised inside a sentence-case sentence.
    capitalised: BTreeSet<String>,
    /// Stems seen in lower case anywhere.
    lower: BTreeSet<String>,
}

/// A word of a text with where it stands.
#[derive(Debug, Clone)]
struct Word {
    stem: String,
    /// The word in lower case, unstemmed ("back", not "backs").
    lower: String,
    upper: bool,
    /// First word of the text or of a clause (after `:`, `;`, `.`, a dash, a quote).
    opens: bool,
}

/// Words of `text`, split as [`text::tokenize`] splits, keeping case and clause openings.
fn cased_words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut opens = true;
    for piece in text.split_inclusive(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’') {
        let word = piece.trim_end_matches(|c: char| !c.is_alphanumeric());
        let word = word.trim_start_matches(['\'', '’']);
        if !word.is_empty() {
            let lower = text::tokenize(word).into_iter().next().unwrap_or_default();
            out.push(Word {
                stem: stem(&lower),
                lower,
                upper: word.starts_with(char::is_uppercase),
                opens,
            });
            opens = false;
        }
        let end = piece.chars().last().unwrap_or(' ');
        if matches!(
            end,
            ':' | ';' | '.' | '?' | '!' | '"' | '“' | '”' | '|' | '—' | '–'
        ) {
            opens = true;
        }
    }
    out
}

/// Whether the content words of `words` are all capitalised: Title Case says nothing of names,
/// while a sentence-case headline dense with names still has a lower-case verb.
fn title_case(words: &[Word]) -> bool {
    let content = words
        .iter()
        .filter(|w| !w.opens && !text::is_plain(&w.stem));
    let (mut all, mut upper) = (0, 0);
    for w in content {
        all += 1;
        upper += usize::from(w.upper);
    }
    all >= 2 && upper == all
}

/// `text` without its capitalised words inside a sentence-case sentence: what it says happened,
/// with "Kiln Close" or "Mill Lane" no longer reading as a closure or a lane.
pub fn without_names(text: &str) -> String {
    let words = cased_words(text);
    if title_case(&words) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    for piece in text.split_inclusive(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’') {
        let word = piece.trim_end_matches(|c: char| !c.is_alphanumeric());
        let word = word.trim_start_matches(['\'', '’']);
        if word.is_empty() {
            out.push_str(piece);
            continue;
        }
        let name = words.get(index).is_some_and(|w| w.upper && !w.opens);
        index += 1;
        if name {
            // Keep what follows the word (a space, a comma), drop the word.
            let word_end = piece.trim_end_matches(|c: char| !c.is_alphanumeric()).len();
            out.push_str(&piece[word_end..]);
        } else {
            out.push_str(piece);
        }
    }
    out
}

impl Lexicon {
    /// The names of a batch of texts (titles and summaries alike).
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut lexicon = Self::default();
        for text in texts {
            let words = cased_words(text);
            let titled = title_case(&words);
            for w in &words {
                if !w.upper {
                    lexicon.lower.insert(w.stem.clone());
                } else if !w.opens && !titled {
                    lexicon.capitalised.insert(w.stem.clone());
                }
            }
        }
        lexicon
    }

    /// Whether the batch uses `stem` as a name (written capitalised inside a sentence-case
    /// sentence, never in lower case).
    pub fn is_name(&self, stem: &str) -> bool {
        self.capitalised.contains(stem) && !self.lower.contains(stem)
    }

    /// The names of `title` in order. Function words, cue words and numbers are never names; an
    /// opening word is one when the batch never writes it in lower case (a weak name, unless the
    /// batch also writes it as a name; see the module docs).
    pub fn names(&self, title: &str) -> Vec<Name> {
        let words = cased_words(title);
        let second = words.get(1).map(|w| w.stem.clone());
        // A sentence-case headline that opens with two capitalised words opens with a name of
        // two words or more ("Copperline Coaches lands …"), however rare the first.
        let run = !title_case(&words)
            && words
                .get(1)
                .is_some_and(|w| w.upper && !w.opens && !text::is_plain(&w.stem));
        let mut names: Vec<Name> = words
            .iter()
            .enumerate()
            .filter(|(_, w)| w.upper && !text::is_plain(&w.stem))
            .filter_map(|(position, w)| {
                let weak = w.opens && !self.lower.contains(&w.stem);
                let strong = self.is_name(&w.stem) || (weak && position == 0 && run);
                (strong || weak).then(|| Name {
                    position,
                    stem: w.stem.clone(),
                    strong,
                    next: (position == 0).then(|| second.clone()).flatten(),
                })
            })
            .collect();
        // A title before a name, which the batch writes capitalised somewhere ("mayor Idris
        // Penhaligon", "Mayor Penhaligon"), is a weak part of it: not the verb between two names.
        let strong_at =
            |i: usize, names: &[Name]| names.iter().any(|n| n.position == i && n.strong);
        let titles: Vec<Name> = (0..words.len().saturating_sub(1))
            .filter(|&i| {
                let w = &words[i];
                strong_at(i + 1, &names)
                    && !names.iter().any(|n| n.position == i)
                    && !text::is_plain(&w.stem)
                    && self.capitalised.contains(&w.stem)
            })
            .map(|position| Name {
                position,
                stem: words[position].stem.clone(),
                strong: false,
                next: (position == 0).then(|| second.clone()).flatten(),
            })
            .collect();
        names.extend(titles);
        names.sort_by_key(|n| n.position);
        names
    }
}

/// A name in a title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    /// Its word position.
    pub position: usize,
    pub stem: String,
    /// Whether the batch writes it as a name; otherwise it only opens the title unseen.
    pub strong: bool,
    /// For the title's first word: the stem of the word after it (what the name does).
    pub next: Option<String>,
}

/// Whether each title has a name the batch confirms that the other report never mentions: two
/// places or people, whatever else the titles say (a denial of one never attaches to the other).
pub fn strong_names_conflict(
    names_a: &[Name],
    mentions_a: &BTreeSet<String>,
    names_b: &[Name],
    mentions_b: &BTreeSet<String>,
) -> bool {
    let foreign = |names: &[Name], mentions: &BTreeSet<String>| {
        names
            .iter()
            .any(|n| n.strong && !mentions.contains(&n.stem))
    };
    foreign(names_a, mentions_b) && foreign(names_b, mentions_a)
}

/// Whether two titles name different actors or places: [`strong_names_conflict`], or both open
/// with a name the other never mentions followed by one word ("Kelco recalls …", "Marden recalls
/// …": another actor in the same role). `mentions_*` are the stems of the whole reports.
pub fn names_conflict(
    names_a: &[Name],
    mentions_a: &BTreeSet<String>,
    names_b: &[Name],
    mentions_b: &BTreeSet<String>,
) -> bool {
    let opening = |names: &[Name], mentions: &BTreeSet<String>| {
        let first = names.iter().find(|n| n.position == 0);
        first
            .filter(|n| !mentions.contains(&n.stem))
            .and_then(|n| n.next.clone())
    };
    strong_names_conflict(names_a, mentions_a, names_b, mentions_b)
        || matches!(
            (opening(names_a, mentions_b), opening(names_b, mentions_a)),
            (Some(x), Some(y)) if x == y
        )
}

/// The [`stem`]s of the words of `title`, as [`Lexicon::names`] counts positions: what
/// [`role_swap`] reads.
pub fn title_stems(title: &str) -> Vec<String> {
    cased_words(title).into_iter().map(|w| w.stem).collect()
}

/// For each word of `title` (as [`title_stems`] counts them), whether it is written
/// capitalised inside a sentence-case headline: a part of a name, whatever the batch says
/// ("Women" in "Sedgecombe RFC Women beat ..."). All false for a Title Case headline.
pub fn capitalised(title: &str) -> Vec<bool> {
    let words = cased_words(title);
    let titled = title_case(&words);
    words
        .iter()
        .map(|w| !titled && w.upper && !w.opens)
        .collect()
}

mod debunk;
mod figures;
mod headline;
mod roles;
mod state;

pub use debunk::debunks;
pub use figures::{FigureKind, Figures, figures, figures_conflict};
pub use headline::{Headline, first_sentence, headline};
pub use roles::{
    Actors, Contest, accused_differ, contest, contests_conflict, exclusive_qualifiers,
    noun_role_swap, order_unclear, role_swap,
};
pub use state::{State, later_than, state, states_oppose};

#[cfg(test)]
mod tests;
