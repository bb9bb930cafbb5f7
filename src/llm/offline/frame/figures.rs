//! Figures: numbers with what they count, in one canonical form (see the module docs of
//! [`super`]).

use std::collections::{BTreeMap, BTreeSet};

use super::super::text::{self, stem};

/// What a figure counts: `percent`, `money:$`, `duration` (in hours), `score`, `year`, `count:<the
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
    // Indian English: a crore is ten million, a lakh a hundred thousand ("₹1,200 crore",
    // "Rs 1200 Cr" and "12 billion rupees" are one sum).
    ("crore", 1e7),
    ("cr", 1e7),
    ("lakh", 1e5),
];
/// Scales that may stand apart from their number as a word of their own ("2.1 billion", "1200
/// Cr"); the other short ones only glued on ("2.1bn"), where "m" after a bare number is metres.
fn scale_word(w: &str) -> Option<f64> {
    let apart = |name: &str| name.len() > 2 || matches!(name, "bn" | "cr");
    SCALES
        .iter()
        .find(|(name, _)| *name == w && apart(name))
        .map(|&(_, scale)| scale)
}
/// Currency signs before a number (lowercase), longest first, by the currency they stand for.
/// Every dollar is one currency: a story told in Australian dollars by one outlet ("$A1.5m",
/// "A$1.5 million") and in plain dollars by another ("$1.5m") states one sum.
const CURRENCY_SIGNS: &[(&str, &str)] = &[
    ("au$", "$"),
    ("us$", "$"),
    ("ca$", "$"),
    ("nz$", "$"),
    ("hk$", "$"),
    ("a$", "$"),
    ("c$", "$"),
    ("s$", "$"),
    ("$a", "$"),
    ("$", "$"),
    ("£", "£"),
    ("€", "€"),
    ("¥", "¥"),
    ("₹", "₹"),
];
/// Currency names after a number, compared by [`stem`].
const CURRENCY_WORDS: &[(&str, &str)] = &[
    ("dollar", "$"),
    ("pound", "£"),
    ("euro", "€"),
    ("yen", "¥"),
    ("rupe", "₹"),
];
/// Currency codes and abbreviations written as a word before a number ("Rs 1200 Cr", "INR 500",
/// "USD 2m"), lowercase.
const CURRENCY_BEFORE: &[(&str, &str)] = &[
    ("rs", "₹"),
    ("inr", "₹"),
    ("usd", "$"),
    ("aud", "$"),
    ("cad", "$"),
    ("nzd", "$"),
    ("eur", "€"),
    ("gbp", "£"),
];
/// The currency `key` stands for in one of the tables above.
fn currency_in(table: &[(&str, &'static str)], key: &str) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == key).map(|&(_, sign)| sign)
}
/// Punctuation that ends a sentence or a clause: no figure reads across it ([`Unit::Break`]).
const CLAUSE_ENDS: [char; 5] = ['.', ';', ':', '!', '?'];
/// Units of time, compared by [`stem`], with their length in hours: a span is one kind,
/// `duration`, in hours ("48 hours" = "two days"; a month is a twelfth of a year of 365.25
/// days).
const DURATIONS: &[(&str, f64)] = &[
    ("second", 1.0 / 3600.0),
    ("minute", 1.0 / 60.0),
    ("hour", 1.0),
    ("day", 24.0),
    ("week", 168.0),
    ("month", 730.5),
    ("year", 8766.0),
];
/// How far apart two spans of time may be and still be one figure: "three months" and "12
/// weeks" (2,191.5 and 2,016 hours) are one span told two ways; "six weeks" and "three months"
/// are two.
const DURATION_TOLERANCE: f64 = 0.1;

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
    /// The end of a line or a sentence or clause (". ; : ! ?"): no figure reads across it,
    /// neither a number told in words ("rise to nine" / "Three more held") nor the noun a
    /// count is of ("cuts climb to 450" / "Union leaders said ...").
    Break,
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

/// The most digits of each side of a score: a match's goals or points, or a vote's ayes and
/// noes ("312-248"); four digits is a span of years ("2025-26").
const MAX_SCORE_DIGITS: usize = 3;

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
    // A vote told as "312 for, 248 against".
    if word(next) == Some("for")
        && let Some(Unit::Number {
            value: against,
            currency: None,
            percent: false,
            ..
        }) = units.get(next + 1)
        && word(next + 2) == Some("against")
        && value.fract() == 0.0
        && against.fract() == 0.0
    {
        let (x, y) = (value as u64, *against as u64);
        return Some((x.max(y), x.min(y), next + 3));
    }
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
    for line in text.lines() {
        let raws: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '"' | '“' | '”'))
            .filter(|raw| !raw.is_empty())
            .collect();
        for (k, raw) in raws.iter().enumerate() {
            units_of(raw, &mut out);
            // A short word's full stop before a figure is an abbreviation's ("Rs. 1,200", "No.
            // 10", "Feb. 1"), not a sentence's end.
            let abbreviation = raw.strip_suffix('.').is_some_and(|w| {
                (1..=3).contains(&w.chars().count()) && w.chars().all(char::is_alphabetic)
            }) && raws.get(k + 1).is_some_and(|next| {
                let next = next.to_lowercase();
                next.starts_with(|c: char| c.is_ascii_digit())
                    || CURRENCY_SIGNS
                        .iter()
                        .any(|(sign, _)| next.starts_with(sign))
            });
            if raw.ends_with(CLAUSE_ENDS) && !abbreviation {
                out.push(Unit::Break);
            }
        }
        out.push(Unit::Break);
    }
    out
}

/// The units of one whitespace-separated token, pushed onto `out`.
fn units_of(raw: &str, out: &mut Vec<Unit>) {
    let token = raw.trim_matches(|c: char| c == ',' || CLAUSE_ENDS.contains(&c));
    if token.is_empty() {
        return;
    }
    let lower = token.to_lowercase();
    if let Some((a, b)) = lower.split_once(['-', '–'])
        && let (Ok(x), Ok(y)) = (a.parse::<u32>(), b.parse::<u32>())
        && a.len() <= MAX_SCORE_DIGITS
        && b.len() <= MAX_SCORE_DIGITS
    {
        out.push(Unit::Score(x.max(y), x.min(y)));
        return;
    }
    // "M4.6": the seismologists' magnitude, as "magnitude 4.6" reads.
    if let Some(value) = token
        .strip_prefix('M')
        .filter(|v| v.contains('.') && v.starts_with(|c: char| c.is_ascii_digit()))
        .and_then(|v| v.parse::<f64>().ok())
    {
        out.push(Unit::Word("magnitude".to_string()));
        out.push(Unit::Number {
            value,
            currency: None,
            percent: false,
            scale: 1.0,
            spelled: false,
        });
        return;
    }
    // "48-hour", "10-year": the number, then its unit.
    let parts: Vec<&str> = lower.split(['-', '–']).filter(|p| !p.is_empty()).collect();
    for part in parts {
        out.push(number_unit(part).unwrap_or_else(|| Unit::Word(part.to_string())));
    }
}

fn number_unit(token: &str) -> Option<Unit> {
    let starts_with_digit = token.as_bytes().first().is_some_and(u8::is_ascii_digit);
    if starts_with_digit && (token.contains(':') || token.ends_with("am") || token.ends_with("pm"))
    {
        return Some(Unit::Clock);
    }
    let mut rest = token;
    let mut currency = None;
    if let Some((r, name)) = CURRENCY_SIGNS
        .iter()
        .find_map(|&(sign, name)| Some((rest.strip_prefix(sign)?, name)))
    {
        (rest, currency) = (r, Some(name));
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
                Some(Unit::Word(w)) => match scale_word(w) {
                    Some(scale) => {
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
        let mut currency = currency.or_else(|| {
            let code = i.checked_sub(1).and_then(word)?;
            currency_in(CURRENCY_BEFORE, code)
        });
        let mut next = i + 1;
        if let Some((spelled, end)) = spelled_number(&units, i) {
            // "one thousand two hundred and forty", "forty-eight thousand".
            (value, next) = (spelled, end);
        } else {
            // Scales after digits: "2.1 billion".
            while let Some(s) = word(next).and_then(scale_word) {
                scale *= s;
                next += 1;
            }
        }
        match (word(next), word(next + 1)) {
            (Some("percent" | "pc"), _) => (percent, next) = (true, next + 1),
            (Some("per"), Some("cent")) => (percent, next) = (true, next + 2),
            (Some(w), _) => {
                if let Some(sign) = currency_in(CURRENCY_WORDS, &stem(w)) {
                    currency = Some(sign);
                    next += 1;
                }
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
        // A figure told as the one a change started from ("650, up from 400", "rose from 12 to
        // 15", "to 450 from the 300 announced") is the past, not what the report states now:
        // left out, so a report of the old figure reads as another moment.
        let article = matches!(i.checked_sub(1).and_then(word), Some("the" | "a" | "an"));
        let from = i.checked_sub(1 + usize::from(article));
        let from = from.filter(|&f| word(f) == Some("from"));
        let changed = from.is_some_and(|f| {
            matches!(f.checked_sub(1).and_then(word), Some("up" | "down"))
                || (f >= 2
                    && matches!(units[f - 1], Unit::Number { .. })
                    && word(f - 2) == Some("to"))
        }) || (word(next) == Some("to")
            && matches!(units.get(next + 1), Some(Unit::Number { .. })));
        if from.is_some() && changed {
            i = next;
            continue;
        }
        let mut amount = canonical_number(value * scale);
        let hours = word(next)
            .map(stem)
            .and_then(|w| DURATIONS.iter().find(|(d, _)| *d == w))
            .map(|(_, hours)| hours);
        let kind = if percent {
            "percent".to_string()
        } else if let Some(c) = currency {
            format!("money:{c}")
        } else if let Some(hours) = hours {
            amount = canonical_number(value * scale * hours);
            "duration".to_string()
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

/// Whether two spans of time (hours) are one within [`DURATION_TOLERANCE`].
fn near(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(a), Ok(b)) => (a - b).abs() <= DURATION_TOLERANCE * a.max(b),
        _ => a == b,
    }
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
        all.get(kind).is_some_and(|a| match kind {
            "duration" => vs.iter().any(|v| a.iter().any(|w| near(v, w))),
            _ => !a.is_disjoint(vs),
        })
    };
    let typed = title_a.iter().any(|(kind, values)| {
        title_b
            .get(kind)
            .is_some_and(|other| !seen_in(kind, values, all_b) || !seen_in(kind, other, all_a))
    });
    // Every figure but years, as (kind, value).
    fn values(f: &Figures) -> Vec<(&str, &str)> {
        f.iter()
            .filter(|(kind, _)| *kind != "year")
            .flat_map(|(kind, vs)| vs.iter().map(move |v| (kind.as_str(), v.as_str())))
            .collect()
    }
    // A figure of one report is in the other in any kind; a span of time only as a span.
    let one = |(k, v): (&str, &str), (l, w): (&str, &str)| match (k, l) {
        ("duration", "duration") => near(v, w),
        _ => v == w,
    };
    let none_in = |title: &Figures, all: &Figures| {
        let all = values(all);
        values(title)
            .into_iter()
            .all(|x| !all.iter().any(|&y| one(x, y)))
    };
    let untyped = !values(title_a).is_empty()
        && !values(title_b).is_empty()
        && none_in(title_a, all_b)
        && none_in(title_b, all_a);
    typed || untyped
}
