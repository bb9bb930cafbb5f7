//! A headline without the desk's labels: the kickers that wire services and news sites put
//! before or after what happened ("UPDATE 3-", "BREAKING:", "Westerby shop fire: update").
//! They say how a story is filed, not what it states, and read as part of it they are false
//! figures ("UPDATE 3-Corvais toll rises to five" is not three of anything) and false names;
//! so is a wire source after a spaced dash ("... - Herald").

/// Labels of how a story is filed, compared case-insensitively as whole words: general
/// conventions of news desks and wire services, not words of any feed. A kicker is one of
/// them at the start of a headline, with an optional number ("UPDATE 2"), before `-`, `:`, `|`
/// or a dash; or at its end, after `:`, `|` or a dash.
const KICKERS: &[&str] = &[
    "update",
    "updated",
    "breaking",
    "breaking news",
    "exclusive",
    "live",
    "latest",
    "watch",
    "video",
    "listen",
    "analysis",
    "explainer",
    "factbox",
    "opinion",
    "comment",
    "in brief",
    "brief",
    "corrected",
    "correction",
    "refile",
];
/// Of those, the labels of a story told again with what changed, or in a line: a headline that
/// is only such a label and a topic ("Update: Castle Row death", "IN BRIEF: Kelda Glass") states
/// nothing, and its summary's first sentence is its news ([`Headline::label`]).
const NEWS_BELOW: &[&str] = &["update", "updated", "latest", "in brief", "brief"];
/// What separates a kicker from the headline.
const SEPARATORS: &[char] = &['-', ':', '|', '–', '—'];

/// Words that name where a wire headline's news came from after a spaced dash ("Kelco in
/// talks to sell dairy arm - sources", "... - report"), beside an outlet's capitalised name
/// ("... - Herald").
const SOURCES: &[&str] = &["report", "reports", "source", "sources"];
/// The most words of such a source.
const MAX_SOURCE_WORDS: usize = 3;

/// A headline with its kickers and source taken off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headline<'t> {
    /// What the headline says, kickers off.
    pub text: &'t str,
    /// Whether a kicker says the news is below it ([`NEWS_BELOW`]): what the text states, if
    /// it states nothing of its own, is in the summary.
    pub label: bool,
}

/// `title` without its kickers ([`KICKERS`]), at most one at each end, and without a source
/// named after a spaced dash ([`SOURCES`]).
pub fn headline(title: &str) -> Headline<'_> {
    let mut text = title.trim();
    let mut label = false;
    if let Some((kicker, rest)) = leading(text) {
        label |= NEWS_BELOW.contains(&kicker.as_str());
        text = rest;
    }
    if let Some((rest, kicker)) = trailing(text) {
        label |= NEWS_BELOW.contains(&kicker.as_str());
        text = rest;
    }
    Headline {
        text: without_source(text),
        label,
    }
}

/// `title` without a source named after its last spaced dash: a few words, each an outlet's
/// capitalised name or one of [`SOURCES`].
fn without_source(title: &str) -> &str {
    let Some((rest, tail)) = [" - ", " – ", " — "]
        .iter()
        .filter_map(|dash| title.rsplit_once(dash))
        .max_by_key(|(rest, _)| rest.len())
    else {
        return title;
    };
    let words: Vec<&str> = tail.split_whitespace().collect();
    let source = |w: &&str| {
        w.starts_with(char::is_uppercase) || SOURCES.contains(&w.to_lowercase().as_str())
    };
    match !words.is_empty() && words.len() <= MAX_SOURCE_WORDS && words.iter().all(source) {
        true => rest.trim_end(),
        false => title,
    }
}

/// The kicker a headline opens with (lower case, number dropped) and what follows it.
fn leading(title: &str) -> Option<(String, &str)> {
    let at = title.find(SEPARATORS)?;
    let (head, rest) = title.split_at(at);
    let kicker = kicker(head.trim_end_matches(|c: char| c.is_ascii_digit() || c == ' '))?;
    let rest = rest.trim_start_matches(SEPARATORS).trim_start();
    (!rest.is_empty()).then_some((kicker, rest))
}

/// What a headline says before the kicker it ends with, and the kicker (lower case).
fn trailing(title: &str) -> Option<(&str, String)> {
    let at = title.rfind([':', '|', '–', '—'])?;
    let (rest, tail) = title.split_at(at);
    let kicker = kicker(tail.trim_start_matches(SEPARATORS))?;
    let rest = rest.trim_end();
    (!rest.is_empty()).then_some((rest, kicker))
}

/// `words`, lower-cased with their spaces made one, if they are a kicker.
fn kicker(words: &str) -> Option<String> {
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = words.to_lowercase();
    KICKERS.contains(&lower.as_str()).then_some(lower)
}

/// The first sentence of `text`: up to the first `.`, `!` or `?` followed by a space or the
/// end, a full stop between digits or after a capitalised word of one or two letters aside
/// ("2.4", "St.").
pub fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let next = bytes.get(i + 1).copied();
        if next.is_some_and(|n| n != b' ') {
            continue;
        }
        let word = text[..i].rsplit(' ').next().unwrap_or("");
        if c == '.' && word.chars().count() <= 2 && word.starts_with(char::is_uppercase) {
            continue;
        }
        return &text[..i];
    }
    text
}
