//! Who acts on whom: exclusive qualifiers, swapped roles around a verb, and contests (who won
//! and who lost).

use std::collections::{BTreeMap, BTreeSet};

use super::super::text::{self, stem};
use super::{Lexicon, Name, cased_words};

/// The most content words between two names that [`role_swap`] reads as one verb phrase when
/// the two headlines use different verbs; one of the two must be a single word ("X to buy Y").
/// Longer spans are mostly a title or an apposition ("Kelby council leader Ana Ruiz"), or
/// a converse idiom ("Y shown the door at X"). Chosen on the tuning halves (2 against 3: recall
/// 0.826 against 0.806 on `tune.jsonl`, precision 1.0 both).
const MAX_VERB_WORDS: usize = 2;
/// The most content words [`noun_role_swap`] reads as the verb phrase between two nouns.
const MAX_NOUN_VERB_WORDS: usize = 3;

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

/// Converse verbs: the same transfer told from either end, giver first or receiver first
/// ("X lends Y to Z" is "Z borrows Y from X"). Each side lists its forms, compared by
/// [`stem`] prefix as [`same_verb`] does (irregular pasts spelled out). General English; winning
/// and losing are [`contest`]'s.
const CONVERSE: &[(&str, &str)] = &[
    ("lend lent", "borrow"),
    ("sell sold", "buy bought purchase"),
    ("give gave given donate", "receive"),
];

/// Whether one phrase holds a giving verb of [`CONVERSE`] and the other its receiving verb.
fn converse(a: &[String], b: &[String]) -> bool {
    let has = |ws: &[String], forms: &str| {
        forms
            .split_whitespace()
            .any(|f| ws.iter().any(|w| same_verb(w, &stem(f))))
    };
    CONVERSE
        .iter()
        .any(|(give, take)| (has(a, give) && has(b, take)) || (has(a, take) && has(b, give)))
}

/// Of two names in a headline (position and stem), the one that receives, when the later is
/// governed by "to" or "into" (it receives) or "from" (the earlier one does), with only "the"
/// and the later name's other words between; `None` when no such word says it.
fn receiver<'n>(actors: &Actors, pair: [(usize, &'n String); 2]) -> Option<&'n String> {
    let [first, second] = match pair[0].0 < pair[1].0 {
        true => pair,
        false => [pair[1], pair[0]],
    };
    let name = |i: usize| actors.names.iter().any(|n| n.position == i);
    let before = (first.0 + 1..second.0)
        .rev()
        .find(|&i| !name(i) && actors.words[i] != "the")?;
    match actors.words[before].as_str() {
        "to" | "into" => Some(second.1),
        "from" => Some(first.1),
        _ => None,
    }
}

/// Whether two stems are one verb, inflected alike or not ("beat", "beaten").
fn same_verb(a: &str, b: &str) -> bool {
    a == b || (a.len().min(b.len()) >= 4 && (a.starts_with(b) || b.starts_with(a)))
}

/// Whether two headlines put two shared names in opposite roles (see the module docs): around
/// one verb, order against voice decides; around two, the order too, when both headlines open
/// with one of the names and a short verb phrase joins them in one clause.
pub fn role_swap(a: &Actors, b: &Actors) -> bool {
    let position = |names: &[Name], n: &str| names.iter().find(|m| m.stem == n).map(|m| m.position);
    static FACE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let face = FACE.get_or_init(|| stem("faces"));
    let between = |words: &[String], i: usize, j: usize| -> Vec<String> {
        words[i.min(j) + 1..i.max(j)].to_vec()
    };
    // A place told where the other is ("Orchard Lane surgery in Ambervale", "Ambervale
    // practice on Orchard Lane") is no one acting on anyone.
    let located = |words: &[String], i: usize, j: usize| {
        matches!(words[i.max(j) - 1].as_str(), "in" | "on" | "at" | "near")
    };
    let (names_a, names_b) = (&a.names, &b.names);
    for (x, first) in names_a.iter().enumerate() {
        for second in &names_a[x + 1..] {
            let (ia, xa, ja, ya) = (first.position, &first.stem, second.position, &second.stem);
            if xa == ya {
                continue;
            }
            let (Some(ib), Some(jb)) = (position(names_b, xa), position(names_b, ya)) else {
                continue;
            };
            if located(&a.words, ia, ja) || located(&b.words, ib, jb) {
                continue;
            }
            let (in_a, in_b) = (between(&a.words, ia, ja), between(&b.words, ib, jb));
            // The words between that are neither function words nor names: the verb, if any.
            // Figures ("agrees £640m deal for") are no part of the verb.
            let content = |ws: &[String], names: &[Name]| -> Vec<String> {
                let name = |w: &String| names.iter().any(|n| &n.stem == w);
                let figure = |w: &String| {
                    w.trim_start_matches(['$', '£', '€', '¥'])
                        .starts_with(|c: char| c.is_ascii_digit())
                };
                ws.iter()
                    .filter(|w| !text::is_plain(w) && !name(w) && !figure(w))
                    .cloned()
                    .collect()
            };
            let (verbs_a, verbs_b) = (content(&in_a, names_a), content(&in_b, names_b));
            if verbs_a.is_empty() || verbs_b.is_empty() {
                continue;
            }
            let shared_verb = verbs_a
                .iter()
                .any(|x| verbs_b.iter().any(|y| same_verb(x, y)));
            // "By" turns the order round, and so does "faces" before the other's name: "X faces
            // Y lawsuit" is Y suing X.
            let passive = |ws: &[String]| ws.iter().any(|w| w == "by" || w == face);
            let (reversed, one_passive) =
                ((ib > jb) != (ia > ja), passive(&in_a) != passive(&in_b));
            // Converse verbs turn the order round as the passive does, whatever else stands
            // between: the verbs are known.
            if converse(&in_a, &in_b) {
                if reversed == one_passive {
                    return true;
                }
                continue;
            }
            // Who receives, where both headlines say it with "to" or "from" before the later
            // name ("hoard heads to X on loan from Y" / "X lends hoard to Y").
            let pair_a = [(ia, xa), (ja, ya)];
            let pair_b = [(ib, xa), (jb, ya)];
            if let (Some(ra), Some(rb)) = (receiver(a, pair_a), receiver(b, pair_b)) {
                if ra != rb {
                    return true;
                }
                continue;
            }
            // Around two verbs: "X to buy Y" and "Y to acquire X" swap, "X sues Y" and "X faces
            // Y lawsuit" swap, and so (a split, never a false merge) do converse verbs with no
            // rule above, such as "X beats Y" and "Y loses to X" ([`contest`] reads those).
            // A headline opens with a name when only names and function words come before it
            // ("The Hollow Pines will ...", "Mariel Estrada to ...").
            let leads = |words: &[String], names: &[Name], at: usize| {
                let name = |w: &String| names.iter().any(|n| &n.stem == w);
                words[..at].iter().all(|w| text::is_plain(w) || name(w))
            };
            let phrase = |actors: &Actors, i: usize, j: usize| {
                leads(&actors.words, &actors.names, i.min(j)) && actors.one_clause(i, j)
            };
            let swapped = match shared_verb {
                true => reversed != one_passive,
                false => {
                    reversed != one_passive
                        && phrase(a, ia, ja)
                        && phrase(b, ib, jb)
                        && verbs_a.len().max(verbs_b.len()) <= MAX_VERB_WORDS
                        && verbs_a.len().min(verbs_b.len()) == 1
                }
            };
            if swapped {
                return true;
            }
        }
    }
    false
}

/// Reporting verbs (compared by [`stem`]): a trailing clause with one of them says who speaks,
/// not who acts ("…, Kelco says", "…, says Marden Foods", "…, study finds").
const REPORTING: &str = "say says said tell told report find found suggest conclude confirm \
    claim warn announce";
/// The most words of a trailing attribution.
const MAX_ATTRIBUTION_WORDS: usize = 6;

/// `title` without a trailing attribution after its last comma (see [`REPORTING`]).
pub(super) fn without_attribution(title: &str) -> &str {
    let Some((head, tail)) = title.rsplit_once(',') else {
        return title;
    };
    let words = text::tokenize(tail);
    let reporting = |w: &String| REPORTING.split_whitespace().any(|r| stem(r) == stem(w));
    match words.len() <= MAX_ATTRIBUTION_WORDS && words.iter().any(reporting) {
        true => head,
        false => title,
    }
}

/// Who may act on whom in a headline, read once per report for [`role_swap`],
/// [`noun_role_swap`], [`accused_differ`] and [`contest`]: its words ([`super::title_stems`]) and names
/// ([`super::Lexicon::names`]) up to a trailing attribution, the clause of each word (after
/// `:`, `;`, a dash...: a verb phrase never crosses one, "depot fire: crews called"), and its
/// nouns: content words of three letters or more, used once, that the batch does not write as
/// a strong name (a headline's unknown first word is a weak name; "Tanker" opening one is
/// still the noun another writes in lower case).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actors {
    words: Vec<String>,
    /// The words as written, lower-cased and unstemmed ("spreads", not "spread").
    forms: Vec<String>,
    names: Vec<Name>,
    clause: Vec<usize>,
    nouns: BTreeMap<String, usize>,
    /// The actors a passive verb of charge accuses ([`ACCUSED`]), read once per report.
    accused: BTreeSet<String>,
}

impl Actors {
    /// The actors of `title`, its names read with `lexicon`.
    pub fn of(title: &str, lexicon: &Lexicon) -> Self {
        let title = without_attribution(title);
        let cased = cased_words(title);
        let names = lexicon.names(title);
        let words: Vec<String> = cased.iter().map(|w| w.stem.clone()).collect();
        let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (i, w) in words.iter().enumerate() {
            let named = names.iter().any(|n| &n.stem == w && n.strong);
            if w.chars().count() >= 3 && !text::is_plain(w) && !named {
                seen.entry(w.clone()).or_insert((i, 0)).1 += 1;
            }
        }
        let once = seen.into_iter().filter(|(_, (_, n))| *n == 1);
        let clause = cased
            .iter()
            .scan(0, |n, w| {
                *n += usize::from(w.opens);
                Some(*n)
            })
            .collect();
        let mut actors = Self {
            nouns: once.map(|(w, (i, _))| (w, i)).collect(),
            forms: cased.iter().map(|w| w.lower.clone()).collect(),
            words,
            names,
            clause,
            accused: BTreeSet::new(),
        };
        actors.accused = actors.read_accused();
        actors
    }

    /// Who won and who lost, by the headline ([`contest`]).
    pub fn contest(&self) -> Contest {
        contest(&self.words, &self.names)
    }

    /// Each actor of the headline (a name or a noun) by stem, at its first position.
    fn actor_positions(&self) -> BTreeMap<&String, usize> {
        let names = self.names.iter().map(|n| (&n.stem, n.position));
        let mut at = BTreeMap::new();
        for (w, i) in names.chain(self.nouns.iter().map(|(w, &i)| (w, i))) {
            at.entry(w)
                .and_modify(|p: &mut usize| *p = (*p).min(i))
                .or_insert(i);
        }
        at
    }

    /// Whether words `i` and `j` are in one clause.
    fn one_clause(&self, i: usize, j: usize) -> bool {
        self.clause.get(i) == self.clause.get(j)
    }
}

/// Whether the titles put two things named by common nouns in opposite roles, each headline
/// opening with one of them (a modifier aside) and joining it to the other by a short verb
/// phrase: "Tanker strikes ferry" and "Ferry rams tanker". A noun is a content word each title
/// uses once that the batch does not write as a name (names are [`role_swap`]'s). One verb
/// counts only when the phrase is word for word the same (and then names may come before the
/// first noun: "Fan charged with assaulting Kelby winger" / "Kelby winger charged with
/// assaulting fan"), or when the verb is written alike in the present tense in both, whatever
/// modifiers stand around it ("Warehouse blaze spreads to church" / "Fire at church spreads to
/// warehouse"). Reversed order around two passives, or around one verb whose voice is not
/// written out, never counts: one verb read backwards ("Bridge closed after crash", "Crash
/// closes bridge") is as often the same report in another voice as a swap. A passive with `by`
/// against an active verb does, in the same order ("Trawler damaged by ferry" / "Trawler rams
/// ferry").
pub fn noun_role_swap(a: &Actors, b: &Actors) -> bool {
    let shared: Vec<(&String, usize, usize)> = a
        .nouns
        .iter()
        .filter_map(|(w, i)| b.nouns.get(w).map(|j| (w, *i, *j)))
        .collect();
    // The title opens with the first noun of the pair (only function words before it, no
    // name: "Corriemore coast braces for…" is about Corriemore, unless the verb phrases are one),
    // and between the two comes a short verb phrase.
    let verbs = |actors: &Actors, from: usize, to: usize, pair: [&String; 2]| {
        let (words, names) = (&actors.words, &actors.names);
        let content = |w: &String| !text::is_plain(w) && !names.iter().any(|n| &n.stem == w);
        // Names before it, and at most one word that is neither a name nor a function word (a
        // modifier: "Moored trawler damaged by berthing ferry"); one clause.
        let before = &words[..from];
        if before.iter().filter(|w| content(w)).count() > 1 || !actors.one_clause(from, to) {
            return None;
        }
        let passive = words[from + 1..to].iter().any(|w| w == "by");
        let plain = before.iter().all(|w| text::is_plain(w));
        let phrase = || {
            words[from + 1..to]
                .iter()
                .filter(|w| !names.iter().any(|n| &n.stem == *w))
        };
        let between: Vec<String> = phrase()
            .filter(|w| content(w) && !pair.contains(w))
            .cloned()
            .collect();
        let whole: Vec<String> = phrase().cloned().collect();
        // A verb written in the present tense ("spreads", "strikes"): active, whatever
        // modifiers stand around it; unless a word of setting after it joins the second noun
        // as a circumstance ("Bridge closes after crash" / "Crash closes bridge").
        let finite = (from + 1..to)
            .find(|&i| {
                let w = &actors.forms[i];
                w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && content(&words[i])
            })
            .filter(|&i| !words[i + 1..to].iter().any(|w| is_setting(w)))
            .map(|i| actors.forms[i].clone());
        (!between.is_empty() && between.len() <= MAX_NOUN_VERB_WORDS)
            .then_some((between, whole, plain, passive, finite))
    };
    for (k, (x, xa, xb)) in shared.iter().enumerate() {
        for (y, ya, yb) in &shared[k + 1..] {
            let (fa, ta) = (xa.min(ya), xa.max(ya));
            let (fb, tb) = (xb.min(yb), xb.max(yb));
            let (
                Some((va, whole_a, plain_a, by_a, finite_a)),
                Some((vb, whole_b, plain_b, by_b, finite_b)),
            ) = (verbs(a, *fa, *ta, [x, y]), verbs(b, *fb, *tb, [x, y]))
            else {
                continue;
            };
            let reversed = (xa < ya) != (xb < yb);
            // One told with "by", the other with a verb right before the second noun (not a
            // preposition, as the passive "blamed on" has): the voices are written out, so
            // the order says who acted ("Trawler damaged by ferry" / "Trawler rams ferry" swap;
            // "Councilman assaulted by neighbour" / "Councilman charged with assaulting
            // neighbour" swap).
            if by_a != by_b {
                let (active, finite) = match by_a {
                    true => (&whole_b, &finite_b),
                    false => (&whole_a, &finite_a),
                };
                // Or a verb written in the present tense, a particle after it ("Van struck by
                // tram" / "Van crashes into tram").
                let written = active.last().is_some_and(|w| !text::is_plain(w)) || finite.is_some();
                if !reversed && written {
                    return true;
                }
                continue;
            }
            if by_a || !reversed {
                continue;
            }
            let other_verbs = !va.iter().any(|a| vb.iter().any(|b| same_verb(a, b)));
            // One verb, active in both as written ("Warehouse blaze spreads to church" /
            // "Fire at church spreads to warehouse").
            let one_active = finite_a.is_some() && finite_a == finite_b;
            if whole_a == whole_b || one_active || (plain_a && plain_b && other_verbs) {
                return true;
            }
        }
    }
    false
}

/// Verbs of a charge, in the passive a headline uses, compared by [`stem`]: the actor right
/// before one is the one accused ("Cyclist charged with assaulting taxi driver", "Driver
/// arrested after crash"). General English.
const ACCUSED: &str = "charged arrested accused convicted jailed fined sentenced detained";

impl Actors {
    /// The actors (stems) a passive verb of [`ACCUSED`] has just before it.
    fn read_accused(&self) -> BTreeSet<String> {
        let verbs: Vec<String> = ACCUSED.split_whitespace().map(stem).collect();
        let charged = |i: usize| verbs.contains(&self.words[i]);
        self.actor_positions()
            .into_iter()
            .filter(|&(_, i)| i + 1 < self.words.len() && charged(i + 1))
            .map(|(w, _)| w.clone())
            .collect()
    }
}

/// Whether two headlines accuse different actors they both name: one is accused in each, and
/// each headline's accused stands in the other unaccused ("Cyclist charged with assaulting taxi
/// driver" / "Taxi driver charged after cyclist assaulted"). Two headlines that each accuse
/// someone the other never names may still tell one event ("Man charged" / "Teenager charged")
/// and do not conflict here.
pub fn accused_differ(a: &Actors, b: &Actors) -> bool {
    let (accused_a, accused_b) = (&a.accused, &b.accused);
    if accused_a.is_empty() || accused_b.is_empty() || !accused_a.is_disjoint(accused_b) {
        return false;
    }
    // Whether one accused in `x` is named by `y` without being accused there.
    let elsewhere = |x: &BTreeSet<String>, y: &Actors| {
        let at = y.actor_positions();
        x.iter()
            .any(|w| !y.accused.contains(w) && at.contains_key(w))
    };
    elsewhere(accused_a, b) && elsewhere(accused_b, a)
}

/// Prepositions that make what follows them a setting of the event (a place, a time, a cause,
/// a whole of which the other is part), not one of who acts and on whom; "to" and "into" are
/// left out: they mark who receives. General English.
const SETTING: &str =
    "in at on for across near under within from after as over with of via among amid during";

/// Whether `word` (a stem) is one of [`SETTING`].
fn is_setting(word: &str) -> bool {
    SETTING.split_whitespace().any(|p| p == word)
}

/// Whether two headlines join two actors they share (names or nouns: [`Actors`]) in opposite
/// order where no rule above reads who acts on whom: in each, the two stand in one clause with
/// a word between that is neither a function word, an actor nor a figure (a verb, say), and
/// their order, turned round by a passive "by" or a converse verb, differs ("Hearing loss
/// speeds memory decline" / "Failing memory leads to faster hearing loss"; "Memory decline
/// accelerated by hearing loss" keeps the first order). Weaker evidence than [`role_swap`] and
/// [`noun_role_swap`]: a paraphrase may reorder its actors too ("Crash closes bridge" / "Bridge
/// shut after crash"), so this never keeps two reports apart; it only withholds a confirmation
/// (the cross-check's "when unclear, not confirmed"). Headlines that both read as a contest
/// ([`contest`]) are left to [`contests_conflict`].
pub fn order_unclear(a: &Actors, b: &Actors) -> bool {
    if !a.contest().winners.is_empty() && !b.contest().winners.is_empty() {
        return false;
    }
    let (at_a, at_b) = (a.actor_positions(), b.actor_positions());
    let shared: Vec<(&String, usize, usize)> = at_a
        .iter()
        .filter_map(|(&w, &i)| at_b.get(w).map(|&j| (w, i, j)))
        .collect();
    let both: BTreeSet<&String> = shared.iter().map(|(w, _, _)| *w).collect();
    // Between `i` and `j`: whether "by" stands there, and the words; `None` unless a verb-like
    // word does too (not a name, nor a word both headlines share), in one clause.
    fn read<'w>(
        actors: &'w Actors,
        both: &BTreeSet<&String>,
        i: usize,
        j: usize,
    ) -> Option<(bool, &'w [String])> {
        let (from, to) = (i.min(j), i.max(j));
        let words = &actors.words[from + 1..to];
        let actor = |w: &String| both.contains(w) || actors.names.iter().any(|n| &n.stem == w);
        let figure = |w: &String| w.chars().next().is_some_and(|c| c.is_ascii_digit());
        let verb = words
            .iter()
            .any(|w| !text::is_plain(w) && !actor(w) && !figure(w));
        let by = words.iter().any(|w| w == "by");
        (verb && actors.one_clause(from, to)).then_some((by, words))
    }
    // Whether the actor at `i` is a setting: a preposition of place, time, cause or part
    // ([`SETTING`]) among the two words before it, names and shared words skipped ("for
    // central Pelbrook", "after Legionella detected").
    let setting = |actors: &Actors, i: usize| {
        let skip = |w: &&String| both.contains(w) || actors.names.iter().any(|n| &n.stem == *w);
        let mut before = actors.words[..i].iter().rev().skip_while(skip).take(2);
        before.any(|w| is_setting(w))
    };
    for (k, (_, xa, xb)) in shared.iter().enumerate() {
        for (_, ya, yb) in &shared[k + 1..] {
            let set = [(a, *xa), (a, *ya), (b, *xb), (b, *yb)];
            if set.iter().any(|&(actors, i)| setting(actors, i)) {
                continue;
            }
            let (Some((by_a, in_a)), Some((by_b, in_b))) =
                (read(a, &both, *xa, *ya), read(b, &both, *xb, *yb))
            else {
                continue;
            };
            let turned = (by_a != by_b) != converse(in_a, in_b);
            if ((xa < ya) != (xb < yb)) != turned {
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
    /// Every name of the headline, in whatever role.
    pub named: BTreeSet<String>,
}

/// Verbs of contest, compared by [`stem`] prefix: the subject wins and the object loses
/// ("X beats Y", "X edges Y"; "Y beaten by X" turns them round).
const DEFEAT_VERBS: &str = "beat beaten defeat edge overcome outvote thrash rout";
/// The most words from a verb of contest to its passive's "by".
const MAX_PASSIVE_GAP: usize = 6;
/// The subject wins; whoever comes after "over" or "against" loses ("X wins derby over Y").
const WIN_VERBS: &str = "win won";
/// The subject loses to whoever comes after "to" ("X loses to Y").
const LOSE_VERBS: &str = "lose lost";
/// The object wins ("Town elects X"), or takes the post ("Board appoints X", "Club names X
/// coach").
const ELECT_VERBS: &str = "elect appoint name";
/// Succession, read as a contest: the successor takes the winner's side and the one succeeded
/// the loser's ("X succeeds Y", "X replaces Y"; a passive "by" turns them round). Only with a
/// name right after the verb, or its passive's "by": "X succeeds in Y" names no one succeeded.
const SUCCEED_VERBS: &str = "succeed replace";

/// The winners and losers a headline states, if it uses one of the verbs above, or one of two
/// general phrases of succession: "X takes over from Y", and "in place of Y" / "instead of Y"
/// (Y is the one succeeded). Names are
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
    // A passive's "by" after the verb, before any name ("beaten three goals to one by X").
    let by_after = |i: usize| {
        (i + 1..words.len().min(i + 1 + MAX_PASSIVE_GAP))
            .take_while(|&k| !is_name(k))
            .find(|&k| words[k] == "by")
    };
    let mut out = Contest {
        named: names.iter().map(|n| n.stem.clone()).collect(),
        ..Contest::default()
    };
    // Whether the words from `i` on are `phrase`'s.
    let reads = |i: usize, phrase: &[&str]| {
        words.len() >= i + phrase.len() && phrase.iter().zip(&words[i..]).all(|(p, w)| p == w)
    };
    let (place, take) = (stem("place"), ["take", "took", "taken"].map(stem));
    for (i, w) in words.iter().enumerate() {
        let succeeds = one_of(SUCCEED_VERBS, w) && (is_name(i + 1) || by_after(i).is_some());
        if one_of(DEFEAT_VERBS, w) || succeeds {
            match by_after(i) {
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
        } else if take.contains(w) && reads(i + 1, &["over", "from"]) {
            out.winners.extend(before(i));
            out.losers.extend(after(i + 2));
        } else if (w == "instead" || (*w == place && i > 0 && words[i - 1] == "in"))
            && reads(i + 1, &["of"])
        {
            out.losers.extend(after(i + 1));
        }
    }
    out
}

/// Whether two headlines' contests put one name on opposite sides: a winner in one is a loser
/// in the other ("Dunhallow elects Ashworth" / "Tiernan defeats Ashworth"), or each names a
/// winner the other headline never names ("… as Brisco wins" / "… as Lalwani wins"). A word on
/// both sides of one headline ("Vale Ladies beat Rangers Ladies") tells no side.
pub fn contests_conflict(a: &Contest, b: &Contest) -> bool {
    let unnamed =
        |x: &Contest, y: &Contest| !x.winners.is_empty() && x.winners.is_disjoint(&y.named);
    if unnamed(a, b) && unnamed(b, a) {
        return true;
    }
    let only = |x: &BTreeSet<String>, y: &BTreeSet<String>| -> BTreeSet<String> {
        x.difference(y).cloned().collect()
    };
    let (wa, la) = (only(&a.winners, &a.losers), only(&a.losers, &a.winners));
    let (wb, lb) = (only(&b.winners, &b.losers), only(&b.losers, &b.winners));
    !wa.is_disjoint(&lb) || !la.is_disjoint(&wb)
}
