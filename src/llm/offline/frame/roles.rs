//! Who acts on whom: exclusive qualifiers, swapped roles around a verb, and contests (who won
//! and who lost).

use std::collections::{BTreeMap, BTreeSet};

use super::super::text::{self, stem};
use super::Name;

/// The most content words between two names that [`role_swap`] reads as one verb phrase.
const MAX_VERB_WORDS: usize = 3;

/// Qualifiers that pick one of two things of a kind and exclude the other, compared by
/// [`stem`]: general English, not any feed's wording. A headline about the men's side and one
/// about the women's side are two events, whatever else they share (even the score).
const EXCLUSIVE: &[(&str, &str)] = &[
    ("men", "women"),
    ("boys", "girls"),
    ("male", "female"),
    ("northbound", "southbound"),
    ("eastbound", "westbound"),
    ("inbound", "outbound"),
    ("upstream", "downstream"),
];

/// Whether each title (its [`super::title_stems`]) uses one of a pair of [`EXCLUSIVE`] qualifiers
/// that the other report never uses, while the other's title uses the opposite one.
pub fn exclusive_qualifiers(
    words_a: &[String],
    mentions_a: &BTreeSet<String>,
    words_b: &[String],
    mentions_b: &BTreeSet<String>,
) -> bool {
    EXCLUSIVE.iter().any(|(x, y)| {
        let (x, y) = (stem(x), stem(y));
        let only = |words: &[String], mentions: &BTreeSet<String>, this: &String, that: &String| {
            words.contains(this) && !mentions.contains(that)
        };
        (only(words_a, mentions_a, &x, &y) && only(words_b, mentions_b, &y, &x))
            || (only(words_a, mentions_a, &y, &x) && only(words_b, mentions_b, &x, &y))
    })
}

/// Whether two stems are one verb, inflected alike or not ("beat", "beaten").
fn same_verb(a: &str, b: &str) -> bool {
    a == b || (a.len().min(b.len()) >= 4 && (a.starts_with(b) || b.starts_with(a)))
}

/// Whether the titles (their [`super::title_stems`]) put two shared names in opposite roles around the same verb (see the
/// module docs). `names_*` are [`super::Lexicon::names`] of the titles.
pub fn role_swap(
    words_a: &[String],
    names_a: &[Name],
    words_b: &[String],
    names_b: &[Name],
) -> bool {
    let position = |names: &[Name], n: &str| names.iter().find(|m| m.stem == n).map(|m| m.position);
    let between = |words: &[String], i: usize, j: usize| -> Vec<String> {
        words[i.min(j) + 1..i.max(j)].to_vec()
    };
    for (x, a) in names_a.iter().enumerate() {
        for b in &names_a[x + 1..] {
            let (ia, xa, ja, ya) = (&a.position, &a.stem, &b.position, &b.stem);
            if xa == ya {
                continue;
            }
            let (Some(ib), Some(jb)) = (position(names_b, xa), position(names_b, ya)) else {
                continue;
            };
            let (in_a, in_b) = (between(words_a, *ia, *ja), between(words_b, ib, jb));
            // The words between that are neither function words nor names: the verb, if any.
            let content = |ws: &[String], names: &[Name]| -> Vec<String> {
                let name = |w: &String| names.iter().any(|n| &n.stem == w);
                ws.iter()
                    .filter(|w| !text::is_plain(w) && !name(w))
                    .cloned()
                    .collect()
            };
            let (verbs_a, verbs_b) = (content(&in_a, names_a), content(&in_b, names_b));
            if verbs_a.is_empty() || verbs_b.is_empty() {
                continue;
            }
            let shared_verb = verbs_a
                .iter()
                .any(|a| verbs_b.iter().any(|b| same_verb(a, b)));
            let passive = |ws: &[String]| ws.iter().any(|w| w == "by");
            let (reversed, one_passive) =
                ((ib > jb) != (ia > ja), passive(&in_a) != passive(&in_b));
            // Around one verb, order against voice decides. Around two verbs, the order alone
            // when both headlines open with one of the two and a short verb phrase joins them:
            // "X to buy Y" and "Y to acquire X" swap, and so (a split, never a false merge) do
            // converse pairs such as "X beats Y" and "Y loses to X".
            let short = |verbs: &[String]| verbs.len() <= MAX_VERB_WORDS;
            // A headline opens with a name when only names and function words come before it
            // ("The Hollow Pines will ...", "Mariel Estrada to ...").
            let leads = |words: &[String], names: &[Name], at: usize| {
                let name = |w: &String| names.iter().any(|n| &n.stem == w);
                words[..at].iter().all(|w| text::is_plain(w) || name(w))
            };
            let opens = leads(words_a, names_a, *ia.min(ja)) && leads(words_b, names_b, ib.min(jb));
            let swapped = match shared_verb {
                true => reversed != one_passive,
                false => {
                    reversed
                        && opens
                        && short(&verbs_a)
                        && short(&verbs_b)
                        && !passive(&in_a)
                        && !passive(&in_b)
                }
            };
            if swapped {
                return true;
            }
        }
    }
    false
}

/// The nouns of a title that [`noun_role_swap`] compares, each with its position: content
/// words of three letters or more, used once, that the batch does not write as a strong name
/// (a headline's unknown first word is a weak name; "Tanker" opening one is still the noun
/// another writes in lower case). Read once per report, as every pair of reports asks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TitleNouns(BTreeMap<String, usize>);

impl TitleNouns {
    /// The nouns of the title `words`, its names being `names`.
    pub fn of(words: &[String], names: &[Name]) -> Self {
        let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (i, w) in words.iter().enumerate() {
            let named = names.iter().any(|n| &n.stem == w && n.strong);
            if w.chars().count() >= 3 && !text::is_plain(w) && !named {
                seen.entry(w.clone()).or_insert((i, 0)).1 += 1;
            }
        }
        let once = seen.into_iter().filter(|(_, (_, n))| *n == 1);
        Self(once.map(|(w, (i, _))| (w, i)).collect())
    }
}

/// Whether the titles put two things named by common nouns in opposite roles, each headline
/// opening with one of them and joining it to the other by its own short verb phrase: "Tanker
/// strikes ferry" and "Ferry rams tanker". A noun is a content word each title uses once that
/// the batch does not write as a name (names are [`role_swap`]'s). Only different verbs count, and never a passive
/// `by`: one verb read backwards ("Bridge closed after crash", "Crash closes bridge") is as
/// often the same report in another voice as a swap.
pub fn noun_role_swap(
    words_a: &[String],
    names_a: &[Name],
    in_a: &TitleNouns,
    words_b: &[String],
    names_b: &[Name],
    in_b: &TitleNouns,
) -> bool {
    let (in_a, in_b) = (&in_a.0, &in_b.0);
    let shared: Vec<(&String, usize, usize)> = in_a
        .iter()
        .filter_map(|(w, i)| in_b.get(w).map(|j| (w, *i, *j)))
        .collect();
    // The title opens with the first noun of the pair (only function words before it, no
    // name: "Corriemore coast braces for…" is about Corriemore), and between the two comes a
    // short verb phrase.
    let verbs = |words: &[String], names: &[Name], from: usize, to: usize, pair: [&String; 2]| {
        let content = |w: &String| !text::is_plain(w) && !names.iter().any(|n| &n.stem == w);
        let opens = words[..from].iter().all(|w| text::is_plain(w));
        if !opens || words[from + 1..to].iter().any(|w| w == "by") {
            return None;
        }
        let between: Vec<String> = words[from + 1..to]
            .iter()
            .filter(|w| content(w) && !pair.contains(w))
            .cloned()
            .collect();
        (!between.is_empty() && between.len() <= MAX_VERB_WORDS).then_some(between)
    };
    for (k, (x, xa, xb)) in shared.iter().enumerate() {
        for (y, ya, yb) in &shared[k + 1..] {
            let (fa, ta) = (xa.min(ya), xa.max(ya));
            let (fb, tb) = (xb.min(yb), xb.max(yb));
            if (xa < ya) == (xb < yb) {
                continue;
            }
            let (Some(va), Some(vb)) = (
                verbs(words_a, names_a, *fa, *ta, [x, y]),
                verbs(words_b, names_b, *fb, *tb, [x, y]),
            ) else {
                continue;
            };
            if !va.iter().any(|a| vb.iter().any(|b| same_verb(a, b))) {
                return true;
            }
        }
    }
    false
}

/// Who won and who lost in a headline, read from a small set of general English verbs of
/// contest ([`contest`]): stems of the names before and after the verb.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contest {
    pub winners: BTreeSet<String>,
    pub losers: BTreeSet<String>,
}

/// Verbs of contest, compared by [`stem`] prefix: the subject wins and the object loses
/// ("X beats Y", "X edges Y"; "Y beaten by X" turns them round).
const DEFEAT_VERBS: &str = "beat beaten defeat edge overcome outvote thrash rout";
/// The subject wins; whoever comes after "over" or "against" loses ("X wins derby over Y").
const WIN_VERBS: &str = "win won";
/// The subject loses to whoever comes after "to" ("X loses to Y").
const LOSE_VERBS: &str = "lose lost";
/// The object wins ("Town elects X").
const ELECT_VERBS: &str = "elect";

/// The winners and losers a headline states, if it uses one of the verbs above. Names are
/// [`super::Lexicon::names`] of the title (`names`), words its [`super::title_stems`]. A name run is the
/// names next to the verb with only function words and figures between ("X to beat Y", "Y
/// beaten 2-1 by X"). No parser: a verb with no name next to it states nothing.
pub fn contest(words: &[String], names: &[Name]) -> Contest {
    let is_name = |i: usize| names.iter().any(|n| n.position == i);
    let run = |mut i: usize, step: isize| -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        loop {
            match words.get(i) {
                Some(_) if is_name(i) => {
                    out.insert(words[i].clone());
                }
                // Function words and figures may stand between, until the first name.
                Some(w)
                    if out.is_empty()
                        && text::is_plain(w)
                        && !matches!(w.as_str(), "by" | "over" | "against" | "to") => {}
                _ => return out,
            }
            match i.checked_add_signed(step) {
                Some(next) => i = next,
                None => return out,
            }
        }
    };
    let before = |i: usize| i.checked_sub(1).map(|j| run(j, -1)).unwrap_or_default();
    let after = |i: usize| run(i + 1, 1);
    let one_of = |list: &str, w: &str| {
        list.split_whitespace()
            .map(stem)
            .any(|v| w == v || (v.len() >= 4 && w.starts_with(&v)))
    };
    // The word after `i`, figures skipped.
    let next_word = |i: usize| {
        words[i + 1..]
            .iter()
            .position(|w| text::number_word(w).is_none() && !w.chars().all(|c| c.is_ascii_digit()))
            .map(|k| i + 1 + k)
    };
    let mut out = Contest::default();
    for (i, w) in words.iter().enumerate() {
        if one_of(DEFEAT_VERBS, w) {
            match next_word(i).filter(|&k| words[k] == "by") {
                Some(by) => {
                    out.winners.extend(after(by));
                    out.losers.extend(before(i));
                }
                None => {
                    out.winners.extend(before(i));
                    out.losers.extend(after(i));
                }
            }
        } else if one_of(WIN_VERBS, w) {
            out.winners.extend(before(i));
            let over = (i + 1..words.len().min(i + 5))
                .find(|&k| matches!(words[k].as_str(), "over" | "against"));
            out.losers.extend(over.map(after).unwrap_or_default());
        } else if one_of(LOSE_VERBS, w) {
            out.losers.extend(before(i));
            let to = next_word(i).filter(|&k| words[k] == "to");
            out.winners.extend(to.map(after).unwrap_or_default());
        } else if one_of(ELECT_VERBS, w) {
            match next_word(i).filter(|&k| words[k] == "by") {
                Some(_) => out.winners.extend(before(i)),
                None => out.winners.extend(after(i)),
            }
        }
    }
    out
}

/// Whether two headlines' contests put one name on opposite sides: a winner in one is a loser
/// in the other ("Dunhallow elects Ashworth" / "Tiernan defeats Ashworth"). A word on both
/// sides of one headline ("Vale Ladies beat Rangers Ladies") tells no side.
pub fn contests_conflict(a: &Contest, b: &Contest) -> bool {
    let only = |x: &BTreeSet<String>, y: &BTreeSet<String>| -> BTreeSet<String> {
        x.difference(y).cloned().collect()
    };
    let (wa, la) = (only(&a.winners, &a.losers), only(&a.losers, &a.winners));
    let (wb, lb) = (only(&b.winners, &b.losers), only(&b.losers, &b.winners));
    !wa.is_disjoint(&lb) || !la.is_disjoint(&wb)
}
