//! What a headline says happened, beyond its words: who (names, and who acts on whom), how much
//! (figures with their units) and in which state (on a small set of opposed states). Two reports
//! whose frames conflict are never one claim, however many words they share: "Arsenal beat
//! Chelsea 2-1" and "Chelsea beat Arsenal 2-1" have the same words and opposite meanings.
//!
//! - **Names** come from the batch, not from a list: a word is a name when the batch writes it
//!   capitalised inside a sentence-case sentence and never in lower case ([`Lexicon`]). A
//!   headline's first word is a name when the lexicon says so, or when the batch has no lower-case
//!   use of it and it is no function word (a weak name: an unknown first word, such as a company
//!   opening "Kelco recalls vans", must not make two makers one).
//! - **Figures** ([`figures`]) are numbers with what they count: `4.5%` = `4.5 percent` =
//!   `4.5 per cent`, `twelve` = `12`, `48-hour` = `48 hours`, `$2.1bn` = `$2.1 billion`, a score
//!   `2-1` = `1-2` (the order follows the teams, not the figure). Clock times are not figures.
//! - **Roles** ([`role_swap`]): two names that both reports share, in opposite order around the
//!   same verb, are swapped roles; a passive `by` in one of them turns the order back. Around
//!   two different verbs, headlines that both open with one of the names and join them by a
//!   short verb phrase swap too ("X to buy Y" / "Y to acquire X").
//! - **Contests** ([`contest`]): a few general verbs of contest say who won and who lost
//!   ("X beats Y", "Y beaten by X", "X wins ... over Y", "X loses to Y", "Town elects X"); a
//!   name that wins in one headline and loses in the other is another claim, whatever the
//!   words around it ("Dunhallow elects Ashworth" / "Tiernan defeats Ashworth").
//! - **States** ([`state`]): a few general oppositions (running/disrupted, rising/falling,
//!   intact/broken, held/released, leaving/staying), each with the words before it in its clause as its subject. Two reports
//!   oppose when they put one subject in opposite states: "Ferries operating as usual" against
//!   "Ferry services suspended", with no cue word.
//!
//! Limits. English headlines only; no parser, so a role is a position around a shared verb, and
//! a state's subject is what precedes it in its clause. Lower-case names ("port authority") are
//! not names. Everything here only ever splits or opposes reports: a wrong reading costs a
//! confirmation, never fabricates one.

use std::collections::{BTreeMap, BTreeSet};

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
        words
            .iter()
            .enumerate()
            .filter(|(_, w)| w.upper && !text::is_plain(&w.stem))
            .filter_map(|(position, w)| {
                let strong = self.is_name(&w.stem);
                let weak = w.opens && !self.lower.contains(&w.stem);
                (strong || weak).then(|| Name {
                    position,
                    stem: w.stem.clone(),
                    strong,
                    next: (position == 0).then(|| second.clone()).flatten(),
                })
            })
            .collect()
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

/// The most content words between two names that [`role_swap`] reads as one verb phrase.
const MAX_VERB_WORDS: usize = 3;

/// What a figure counts: `percent`, `money:$`, `duration:hour`, `score`, `year`, `count:<the
/// noun after it>`, or `number`.
pub type FigureKind = String;
/// Figures by kind, values as canonical decimal strings.
pub type Figures = BTreeMap<FigureKind, BTreeSet<String>>;

const TENS: &str = "twenty thirty forty fifty sixty seventy eighty ninety";
const SCALES: &[(&str, f64)] = &[
    ("hundred", 1e2),
    ("thousand", 1e3),
    ("k", 1e3),
    ("million", 1e6),
    ("m", 1e6),
    ("mn", 1e6),
    ("billion", 1e9),
    ("bn", 1e9),
    ("trillion", 1e12),
    ("tn", 1e12),
];
const CURRENCY_SIGNS: &[(char, &str)] = &[('$', "$"), ('£', "£"), ('€', "€"), ('¥', "¥")];
const CURRENCY_WORDS: &[(&str, &str)] =
    &[("dollar", "$"), ("pound", "£"), ("euro", "€"), ("yen", "¥")];
const DURATIONS: &str = "second minute hour day week month year";

/// One lexical unit for figure reading: a number, or a word (lowercase), or a sign.
#[derive(Debug, Clone, PartialEq)]
enum Unit {
    Number {
        value: f64,
        currency: Option<&'static str>,
        percent: bool,
        scale: f64,
        /// Written as a word ("twelve").
        spelled: bool,
    },
    Score(u32, u32),
    Measure {
        value: f64,
        unit: String,
    },
    Clock,
    Word(String),
}

fn canonical_number(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn small_number_word(word: &str) -> Option<f64> {
    if let Some(n) = text::number_word(word) {
        return Some(n as f64);
    }
    TENS.split_whitespace()
        .position(|t| t == word)
        .map(|i| ((i + 2) * 10) as f64)
}

/// Nouns that a contest's tally counts in ("24 points to 17", "by 31 votes to 18"), compared
/// by [`stem`]: the same score as "24-17".
const TALLIES: &str = "point vote goal run try wicket set game frame seat";

/// A tally from the number `value` at `units[at]` (read up to `next`): `<number> <tally noun>
/// to <number>`, preceded by "by" or with the greater number first (so that "up 50 points to
/// 7,500" stays a rise). Returns the greater and the smaller number and the index after it.
fn tally(units: &[Unit], at: usize, value: f64, next: usize) -> Option<(u64, u64, usize)> {
    let word = |i: usize| match units.get(i) {
        Some(Unit::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let noun = stem(word(next)?);
    if !TALLIES.split_whitespace().any(|t| stem(t) == noun) || word(next + 1) != Some("to") {
        return None;
    }
    let (other, end) = spelled_number(units, next + 2).or_else(|| match units.get(next + 2) {
        Some(Unit::Number {
            value,
            currency: None,
            percent: false,
            scale,
            ..
        }) if *scale == 1.0 => Some((*value, next + 3)),
        _ => None,
    })?;
    let by = at.checked_sub(1).and_then(word) == Some("by");
    let whole = |v: f64| v >= 0.0 && v.fract() == 0.0;
    (whole(value) && whole(other) && (by || value >= other))
        .then(|| ((value.max(other)) as u64, (value.min(other)) as u64, end))
}

/// Splits `text` into figure units: numbers keep their currency sign, `%` and a glued scale
/// (`2.1bn`); `2-1` is a score; `06:00`, `6am`, `8pm` are clock times.
fn units(text: &str) -> Vec<Unit> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '"' | '“' | '”'))
    {
        let token = raw.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | ':' | '!' | '?'));
        if token.is_empty() {
            continue;
        }
        let lower = token.to_lowercase();
        if let Some((a, b)) = lower.split_once(['-', '–'])
            && let (Ok(x), Ok(y)) = (a.parse::<u32>(), b.parse::<u32>())
            && a.len() <= 2
            && b.len() <= 2
        {
            out.push(Unit::Score(x.max(y), x.min(y)));
            continue;
        }
        // "48-hour", "10-year": the number, then its unit.
        let parts: Vec<&str> = lower.split(['-', '–']).filter(|p| !p.is_empty()).collect();
        for part in parts {
            out.push(number_unit(part).unwrap_or_else(|| Unit::Word(part.to_string())));
        }
    }
    out
}

fn number_unit(token: &str) -> Option<Unit> {
    let starts_with_digit = token.as_bytes().first().is_some_and(u8::is_ascii_digit);
    if starts_with_digit && (token.contains(':') || token.ends_with("am") || token.ends_with("pm"))
    {
        return Some(Unit::Clock);
    }
    let mut rest = token;
    let mut currency = None;
    for &(sign, name) in CURRENCY_SIGNS {
        if let Some(r) = rest.strip_prefix(sign) {
            (rest, currency) = (r, Some(name));
        }
    }
    let percent = rest.ends_with('%');
    rest = rest.trim_end_matches('%');
    let digits_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(digits_end);
    let value = if number.is_empty() {
        if currency.is_some() || percent {
            return None;
        }
        return small_number_word(rest).map(|value| Unit::Number {
            value,
            currency: None,
            percent: false,
            scale: 1.0,
            spelled: true,
        });
    } else {
        number.replace(',', "").parse::<f64>().ok()?
    };
    let (scale, unit) = match suffix {
        "" | "st" | "nd" | "rd" | "th" | "s" => (1.0, None),
        // "£6m" is six million, "50m" fifty metres.
        "m" if currency.is_none() => (1.0, Some("m")),
        s => match SCALES.iter().find(|(w, _)| *w == s) {
            Some(&(_, scale)) => (scale, None),
            // A unit glued on: "1.8c", "20km", "90mph".
            None if s.chars().all(|c| c.is_alphabetic() || c == '°') => (1.0, Some(s)),
            None => return None,
        },
    };
    if let Some(unit) = unit {
        return Some(Unit::Measure {
            value,
            unit: unit.trim_start_matches('°').to_string(),
        });
    }
    Some(Unit::Number {
        value,
        currency,
        percent,
        scale,
        spelled: false,
    })
}

/// A number spelled out in words from `units[start]`: its value and the index after it. `None`
/// when `units[start]` is not a number word.
fn spelled_number(units: &[Unit], start: usize) -> Option<(f64, usize)> {
    let small = |i: usize| match units.get(i) {
        Some(Unit::Number {
            value,
            spelled: true,
            ..
        }) => Some(*value),
        _ => None,
    };
    small(start)?;
    let (mut total, mut current, mut i) = (0.0, 0.0, start);
    loop {
        if let Some(v) = small(i) {
            current += v;
        } else {
            match units.get(i) {
                Some(Unit::Word(w)) if w == "hundred" => current *= 100.0,
                Some(Unit::Word(w)) if w == "and" && small(i + 1).is_some() => {}
                Some(Unit::Word(w)) => match SCALES.iter().find(|(n, _)| n == w && n.len() > 2) {
                    Some(&(_, scale)) => {
                        total += current * scale;
                        current = 0.0;
                    }
                    None => break,
                },
                _ => break,
            }
        }
        i += 1;
    }
    Some((total + current, i))
}

/// The figures of `text` by kind (see [`FigureKind`]).
pub fn figures(text: &str) -> Figures {
    let units = units(text);
    let mut out = Figures::new();
    let word = |i: usize| match units.get(i) {
        Some(Unit::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let mut i = 0;
    while i < units.len() {
        let (mut value, currency, mut percent, mut scale) = match &units[i] {
            Unit::Score(a, b) => {
                out.entry("score".into())
                    .or_default()
                    .insert(format!("{a}-{b}"));
                i += 1;
                continue;
            }
            Unit::Number {
                value,
                currency,
                percent,
                scale,
                ..
            } => (*value, *currency, *percent, *scale),
            Unit::Measure { value, unit } => {
                let kind = format!("unit:{unit}");
                out.entry(kind)
                    .or_default()
                    .insert(canonical_number(*value));
                i += 1;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let mut currency = currency;
        let mut next = i + 1;
        if let Some((spelled, end)) = spelled_number(&units, i) {
            // "one thousand two hundred and forty", "forty-eight thousand".
            (value, next) = (spelled, end);
        } else {
            // Scales after digits: "2.1 billion".
            while let Some(&(_, s)) = word(next)
                .and_then(|w| SCALES.iter().find(|(name, _)| *name == w && name.len() > 2))
            {
                scale *= s;
                next += 1;
            }
        }
        match (word(next), word(next + 1)) {
            (Some("percent" | "pc"), _) => (percent, next) = (true, next + 1),
            (Some("per"), Some("cent")) => (percent, next) = (true, next + 2),
            (Some(w), _) if CURRENCY_WORDS.iter().any(|(c, _)| *c == stem(w)) => {
                currency = CURRENCY_WORDS
                    .iter()
                    .find(|(c, _)| *c == stem(w))
                    .map(|(_, s)| *s);
                next += 1;
            }
            _ => {}
        }
        // A tally written out: "by twenty-four points to seventeen", "31 votes to 18".
        if let Some((winner, loser, end)) = tally(&units, i, value, next)
            && currency.is_none()
            && !percent
            && scale == 1.0
        {
            out.entry("score".into())
                .or_default()
                .insert(format!("{winner}-{loser}"));
            i = end;
            continue;
        }
        let amount = canonical_number(value * scale);
        let kind = if percent {
            "percent".to_string()
        } else if let Some(c) = currency {
            format!("money:{c}")
        } else if let Some(unit) = word(next)
            .map(stem)
            .filter(|w| DURATIONS.split_whitespace().any(|d| d == w))
        {
            format!("duration:{unit}")
        } else if scale == 1.0 && value.fract() == 0.0 && (1900.0..=2100.0).contains(&value) {
            "year".to_string()
        } else if let Some(noun) = (next..units.len())
            .map_while(word)
            .map(stem)
            .find(|w| !text::is_plain(w))
        {
            format!("count:{noun}")
        } else {
            "number".to_string()
        };
        // What a bare figure measures may stand before it: "magnitude 6.1", "lane 4".
        let before = i.checked_sub(1).and_then(word).map(stem);
        let counted = kind.starts_with("count:") || kind == "number";
        if let Some(noun) = before.filter(|w| counted && !text::is_plain(w)) {
            out.entry(format!("count:{noun}"))
                .or_default()
                .insert(amount.clone());
        }
        out.entry(kind).or_default().insert(amount);
        i = next;
    }
    out
}

/// Whether two reports state different figures: a kind in both titles whose values in one title
/// appear nowhere in the other report, or titles that both give figures (years aside) none of
/// which the other report gives in any kind ("toll rises to 15" against "twelve dead"). `all_*`
/// are title and summary.
pub fn figures_conflict(
    title_a: &Figures,
    all_a: &Figures,
    title_b: &Figures,
    all_b: &Figures,
) -> bool {
    let seen_in = |kind: &str, vs: &BTreeSet<String>, all: &Figures| {
        all.get(kind).is_some_and(|a| !a.is_disjoint(vs))
    };
    let typed = title_a.iter().any(|(kind, values)| {
        title_b
            .get(kind)
            .is_some_and(|other| !seen_in(kind, values, all_b) && !seen_in(kind, other, all_a))
    });
    let values = |f: &Figures| -> BTreeSet<String> {
        f.iter()
            .filter(|(kind, _)| *kind != "year")
            .flat_map(|(_, vs)| vs.iter().cloned())
            .collect()
    };
    let (va, vb) = (values(title_a), values(title_b));
    let untyped = !va.is_empty()
        && !vb.is_empty()
        && va.is_disjoint(&values(all_b))
        && vb.is_disjoint(&values(all_a));
    typed || untyped
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

/// Whether each title (its [`title_stems`]) uses one of a pair of [`EXCLUSIVE`] qualifiers
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

/// Whether the titles (their [`title_stems`]) put two shared names in opposite roles around the same verb (see the
/// module docs). `names_*` are [`Lexicon::names`] of the titles.
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

/// Whether the titles put two things named by common nouns in opposite roles, each headline
/// opening with one of them and joining it to the other by its own short verb phrase: "Tanker
/// strikes ferry" and "Ferry rams tanker". A noun is a content word each title uses once that
/// the batch does not write as a name (names are [`role_swap`]'s). Only different verbs count, and never a passive
/// `by`: one verb read backwards ("Bridge closed after crash", "Crash closes bridge") is as
/// often the same report in another voice as a swap.
pub fn noun_role_swap(
    words_a: &[String],
    names_a: &[Name],
    words_b: &[String],
    names_b: &[Name],
) -> bool {
    let nouns = |words: &[String], names: &[Name]| -> BTreeMap<String, usize> {
        let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (i, w) in words.iter().enumerate() {
            // A headline's unknown first word is a weak name; "Tanker" opening one is still
            // the noun another writes in lower case.
            let named = names.iter().any(|n| &n.stem == w && n.strong);
            if w.chars().count() >= 3 && !text::is_plain(w) && !named {
                seen.entry(w.clone()).or_insert((i, 0)).1 += 1;
            }
        }
        seen.into_iter()
            .filter(|(_, (_, n))| *n == 1)
            .map(|(w, (i, _))| (w, i))
            .collect()
    };
    let (in_a, in_b) = (nouns(words_a, names_a), nouns(words_b, names_b));
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
/// [`Lexicon::names`] of the title (`names`), words its [`title_stems`]. A name run is the
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

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon(texts: &[&str]) -> Lexicon {
        Lexicon::new(texts.iter().copied())
    }

    /// Whether `a` and `b` swap roles, their names read with `lex`.
    fn swapped(lex: &Lexicon, a: &str, b: &str) -> bool {
        role_swap(
            &title_stems(a),
            &lex.names(a),
            &title_stems(b),
            &lex.names(b),
        )
    }

    fn names(lex: &Lexicon, title: &str) -> Vec<String> {
        lex.names(title).into_iter().map(|n| n.stem).collect()
    }

    #[test]
    fn names_come_from_the_batch_and_include_an_opening_name() {
        let lex = lexicon(&[
            "Kelco recalls vans over airbag fault",
            "The recall follows complaints to Kelco and Marden dealers.",
            "Fire at Eastside school",
            "Crews fought the fire for hours.",
        ]);
        assert_eq!(
            names(&lex, "Kelco recalls vans over airbag fault"),
            ["kelco"]
        );
        assert_eq!(names(&lex, "Marden recalls vans"), ["marden"]);
        assert_eq!(names(&lex, "Fire at Eastside school"), ["eastsid"]);
        assert!(names(&lex, "Fire At Eastside School").contains(&"eastsid".to_string()));
    }

    #[test]
    fn figures_normalise_units_and_formats() {
        let same = [
            (
                "1,240 pairs counted",
                "one thousand two hundred and forty pairs counted",
            ),
            ("48,000 SUVs recalled", "Forty-eight thousand SUVs recalled"),
            ("Visibility under 50 metres", "visibility below 50m"),
            ("Rates raised to 4.5%", "rates raised to 4.5 percent"),
            ("Rates raised to 4.5%", "rates raised to 4.5 per cent"),
            ("twelve dead", "12 dead"),
            ("48-hour strike", "strike of 48 hours"),
            ("$2.1bn deal", "$2.1 billion deal"),
            ("Deal worth 2.1 billion dollars", "$2.1bn deal"),
            ("1,200 jobs cut", "1200 jobs cut"),
            ("Rovers win 2-1", "Rovers lose 1-2"),
            (
                "Bill passes 31-18",
                "Bill passes by thirty-one votes to eighteen",
            ),
            ("Vale win 24-17", "Vale win by 24 points to 17"),
        ];
        for (a, b) in same {
            let (fa, fb) = (figures(a), figures(b));
            assert!(
                !figures_conflict(&fa, &fa, &fb, &fb),
                "{a} / {b}: {fa:?} {fb:?}"
            );
            assert!(!fa.is_empty(), "{a}");
        }
        let different = [
            ("Rates raised to 4.5%", "Rates raised to 4.75%"),
            ("12 dead in flood", "20 dead in flood"),
            ("Rovers win 2-1", "Rovers win 3-1"),
            ("Lane 2 of the bridge closed", "Lane 4 of the bridge closed"),
            ("Bill passes 31-18", "Bill passes by 31 votes to 19"),
        ];
        for (a, b) in different {
            let (fa, fb) = (figures(a), figures(b));
            assert!(
                figures_conflict(&fa, &fa, &fb, &fb),
                "{a} / {b}: {fa:?} {fb:?}"
            );
        }
        assert!(figures("Trains from 06:00 to 6pm").is_empty());
        assert!(!figures("Index up 50 points to 7,500").contains_key("score"));
        assert_eq!(
            figures("Election in 2026")["year"].iter().next().unwrap(),
            "2026"
        );
    }

    #[test]
    fn swapped_roles_are_found_and_the_passive_is_read() {
        let lex = lexicon(&["The derby between Rovers and United drew a crowd."]);
        let swap = |a: &str, b: &str| swapped(&lex, a, b);
        assert!(swap("Rovers beat United 2-1", "United beat Rovers 2-1"));
        assert!(swap("Rovers to acquire United", "United to acquire Rovers"));
        assert!(!swap(
            "Rovers beat United 2-1",
            "Rovers beat United 2-1 at home"
        ));
        assert!(!swap(
            "Rovers to acquire United",
            "United to be acquired by Rovers"
        ));
        assert!(swap("Rovers beaten by United", "Rovers beat United"));
        assert!(swap("Rovers to buy United", "United to acquire Rovers"));
        // A name run, or function words, may open a headline.
        let lex = lexicon(&["The tour pairs Ivy Marsh with the Lantern Coats."]);
        let swap = |a: &str, b: &str| swapped(&lex, a, b);
        assert!(swap(
            "Ivy Marsh to support The Lantern Coats on tour",
            "The Lantern Coats to warm up for Ivy Marsh"
        ));
        assert!(!swap(
            "Ivy Marsh to support The Lantern Coats on tour",
            "Ivy Marsh confirmed as opening act for Lantern Coats"
        ));
        let lex = lexicon(&["The derby between Rovers and United drew a crowd."]);
        let swap = |a: &str, b: &str| swapped(&lex, a, b);
        // Converse verbs read as a swap: a split, never a false merge.
        assert!(swap("Rovers beat United", "United lose to Rovers"));
        assert!(!swap("Rovers beat United", "Rovers edge United"));
        assert!(!swap(
            "Marlin Biotech's Corvudine cleared for migraine",
            "Corvudine tablet approved for migraine, says Marlin Biotech"
        ));
    }

    #[test]
    fn common_nouns_in_swapped_roles_are_found_around_different_verbs_only() {
        let lex = lexicon(&["A collision off Kelby was reported at dawn."]);
        let swap = |a: &str, b: &str| {
            let (wa, wb) = (title_stems(a), title_stems(b));
            noun_role_swap(&wa, &lex.names(a), &wb, &lex.names(b))
        };
        assert!(swap(
            "Tanker strikes ferry off Kelby",
            "Ferry rams tanker in fog off Kelby"
        ));
        assert!(swap(
            "Coach clips lorry on bypass",
            "Lorry crashes into coach on bypass"
        ));
        // The same verb either way, a passive, or the same order: not read as a swap.
        assert!(!swap("Crash closes bridge", "Bridge closed after crash"));
        assert!(!swap(
            "Tanker strikes ferry",
            "Ferry holed after being hit by tanker"
        ));
        assert!(!swap("Tanker strikes ferry", "Tanker collides with ferry"));
        // A noun that opens neither headline is no actor of it.
        assert!(!swap(
            "Fog delays ferry and tanker",
            "Tanker and ferry delayed by fog"
        ));
    }

    #[test]
    fn contests_read_winners_and_losers() {
        let lex = lexicon(&[
            "The count in Pellow put Dana Ruiz and Omar Best level until the recount.",
            "The derby between Rovers and United drew a crowd.",
        ]);
        let read = |t: &str| contest(&title_stems(t), &lex.names(t));
        let set = |names: &[&str]| names.iter().map(|n| stem(n)).collect::<BTreeSet<_>>();
        let elected = read("Pellow elects Dana Ruiz after a recount");
        assert_eq!(elected.winners, set(&["dana", "ruiz"]));
        let defeated = read("Omar Best defeats Ruiz in Pellow race");
        assert_eq!(defeated.winners, set(&["omar", "best"]));
        assert_eq!(defeated.losers, set(&["ruiz"]));
        assert!(contests_conflict(&elected, &defeated));
        // The passive and "lose to" turn the sides round; a figure may stand between.
        let passive = read("Rovers beaten 3-1 by United");
        assert_eq!(
            (passive.winners, passive.losers),
            (set(&["united"]), set(&["rovers"]))
        );
        let lost = read("Rovers lose to United");
        assert!(!contests_conflict(&lost, &read("United beat Rovers 3-1")));
        assert!(contests_conflict(&lost, &read("Rovers beat United 3-1")));
        let over = read("Late goal gives Rovers derby win over United");
        assert!(contests_conflict(
            &over,
            &read("United win derby at Rovers")
        ));
        // A verb with no name beside it states nothing.
        assert_eq!(
            read("Derby ends in a win for the visitors"),
            Contest::default()
        );
    }

    #[test]
    fn states_oppose_on_one_subject_without_cue_words() {
        let st = |t: &str| state(t).unwrap_or_else(|| panic!("no state in {t}"));
        let oppose = |a: &str, b: &str| states_oppose(&st(a), &st(b));
        assert!(oppose(
            "Ferry services suspended",
            "Ferries are operating as usual, harbour operator says"
        ));
        assert!(oppose(
            "Minister to resign",
            "Minister will serve her full term"
        ));
        assert!(oppose(
            "Stadium closed",
            "Stadium open as normal for Saturday fixture"
        ));
        assert!(oppose("Unemployment rises to 5%", "Unemployment falls"));
        assert!(!oppose(
            "Ferry timetable unchanged during bridge inspection",
            "Harbour bridge closed"
        ));
        assert!(!oppose("Bridge closed", "Bridge remains closed"));
        assert_eq!(st("Bridge remains closed").axis, "running|disrupted");
        assert!(
            state("Gas leak at depot on Kiln Close").is_none(),
            "a street is no closure"
        );
        assert_eq!(
            without_names("Gas leak on Kiln Close, police say"),
            "Gas leak on  , police say"
        );
    }
}
