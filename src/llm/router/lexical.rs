//! Words for lexical matching: lower-cased, split on anything not a letter or digit, common
//! words dropped, words under a negation dropped, and stemmed so `cross-checking` meets
//! `Cross-checks` and `verification` meets `verifies`.
//!
//! Two views of a text: [`words`] keeps every word (stemmed, in order) for phrase matching;
//! [`terms`] keeps only the words that can say something about an expert.

/// Words too common to say anything about an expert: function words, pronouns, auxiliaries,
/// politeness and chat filler ("pls", "actually", "just").
const STOPWORDS: &[&str] = &[
    "a", "about", "actually", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "anyone", "anything", "are", "as", "at", "be", "been", "before", "being", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "done", "each", "either", "else", "even",
    "every", "for", "from", "get", "give", "go", "going", "got", "had", "has", "have", "he", "her",
    "here", "him", "his", "how", "i", "id", "if", "im", "in", "into", "is", "it", "its", "ive",
    "just", "kind", "let", "lets", "like", "ll", "lot", "many", "may", "me", "might", "more",
    "most", "much", "must", "my", "need", "no", "nor", "not", "now", "of", "off", "ok", "okay",
    "on", "one", "only", "or", "other", "our", "out", "over", "own", "please", "pls", "plz",
    "quite", "re", "really", "s", "same", "shall", "she", "should", "so", "some", "someone",
    "still", "such", "than", "thanks", "that", "thats", "the", "their", "them", "then", "there",
    "these", "they", "thing", "things", "this", "those", "thx", "to", "too", "up", "us", "ve",
    "very", "want", "was", "way", "we", "well", "were", "what", "whats", "when", "where", "which",
    "while", "who", "whether", "why", "will", "with", "would", "yet", "you", "your", "yours",
];

/// Words that negate what follows them up to the end of the clause: a text that says "don't
/// fix anything" or "without changing the API" is not asking for a fix or a change.
const NEGATORS: &[&str] = &["dont", "never", "not", "without", "instead", "rather"];

/// Multi-word negators, in raw (unstemmed) words.
const NEGATOR_PHRASES: &[&[&str]] = &[&["do", "not"], &["no", "need", "to"]];

/// Words that end a negation's scope: contrast and restriction ("don't change anything, just
/// comment"; "not the hype but the studies").
const SCOPE_ENDS: &[&str] = &["but", "just", "only", "so", "and", "then"];

/// Forms the suffix stripper cannot handle, mapped to the form it gives the regular word:
/// irregular verbs (`wrote` meets `writes`, `sent` meets `send`), words whose last letters are
/// not a suffix (`news` is not the plural of `new`), one word family (`analyst`, `analysis`)
/// and a common abbreviation (`stats`).
const IRREGULAR: &[(&str, &str)] = &[
    ("always", "always"),
    ("analyses", "analys"),
    ("analysis", "analys"),
    ("analyst", "analys"),
    ("analysts", "analys"),
    ("analyse", "analys"),
    ("analyze", "analys"),
    ("broke", "break"),
    ("broken", "break"),
    ("built", "build"),
    ("bought", "buy"),
    ("came", "come"),
    ("caught", "catch"),
    ("chose", "choos"),
    ("chosen", "choos"),
    ("did", "do"),
    ("done", "do"),
    ("drew", "draw"),
    ("drawn", "draw"),
    ("fed", "feed"),
    ("found", "find"),
    ("gave", "giv"),
    ("given", "giv"),
    ("goes", "go"),
    ("gone", "go"),
    ("went", "go"),
    ("kept", "keep"),
    ("knew", "know"),
    ("known", "know"),
    ("left", "leav"),
    ("made", "mak"),
    ("news", "news"),
    ("ran", "run"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("series", "series"),
    ("stat", "statistic"),
    ("stats", "statistic"),
    ("shown", "show"),
    ("sought", "seek"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("taken", "tak"),
    ("took", "tak"),
    ("thought", "think"),
    ("told", "tell"),
    ("wrote", "writ"),
    ("written", "writ"),
];

/// One word of a text, as the router sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// Lower-cased and stemmed.
    pub stem: String,
    /// Which clause of the text it is in (clauses end at `.`, `,`, `;`, `:`, `?`, `!`).
    pub clause: usize,
    /// Under a negation ("don't *fix anything*").
    pub negated: bool,
    /// Itself a negation ("*don't*", "*not*").
    pub negator: bool,
    /// Carries meaning: not a stopword, a number or a single letter.
    pub content: bool,
}

/// Every word of `text`, in order, stopwords kept (phrases such as "go over" need them).
/// Apostrophes inside words are dropped first, so `don't` is one word, `dont`.
pub(crate) fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    for (clause, part) in clauses(text).enumerate() {
        let raw = raw_words(part);
        let mut negated = false;
        let mut i = 0;
        while i < raw.len() {
            if let Some(len) = negator_at(&raw, i) {
                for w in &raw[i..i + len] {
                    out.push(Word {
                        stem: stem(w),
                        clause,
                        negated: false,
                        negator: true,
                        content: false,
                    });
                }
                negated = true;
                i += len;
                continue;
            }
            let w = raw[i].as_str();
            if SCOPE_ENDS.contains(&w) {
                negated = false;
            }
            let t = stem(w);
            let content = !STOPWORDS.contains(&w)
                && !STOPWORDS.contains(&t.as_str())
                && !is_number(w)
                && t.chars().count() > 1;
            out.push(Word {
                stem: t,
                clause,
                negated,
                negator: false,
                content,
            });
            i += 1;
        }
    }
    out
}

/// The terms of `text`, in order, with repeats: its stemmed words without stopwords, numbers,
/// one-letter words and anything under a negation.
pub(crate) fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| w.content && !w.negated)
        .map(|w| w.stem)
        .collect()
}

/// Whether a whitespace-separated token of the raw text looks like code rather than prose:
/// `snake_case`, `--flag`, `file.ext`, `a::path`, `call()`, `camelCase`. Such tokens are
/// software signals wherever they appear.
pub(crate) fn is_code_token(token: &str) -> bool {
    let t = token.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '?' | '!' | '"' | '\''));
    let t = t.trim_end_matches('.');
    let t = t.trim_matches(|c: char| matches!(c, '(' | ')' | '`' | '[' | ']'));
    if t.len() < 3 {
        return false;
    }
    let letters = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
    let inner_underscore = t.contains('_')
        && t.split('_').filter(|p| !p.is_empty()).count() >= 2
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let flag = t.starts_with("--")
        && t.len() > 3
        && t[2..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    let file = match t.rsplit_once('.') {
        Some((stem, ext)) => {
            stem.len() >= 2
                && stem
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/'))
                && (1..=4).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_lowercase())
                && stem.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    };
    let path = t.contains("::") || t.ends_with("()") || token.contains("()");
    // camelCase: two lower-case letters, then an upper-case one followed by a lower-case one
    // (`parseDate`, not the unit `kWh` nor the brand `iPhone`).
    let camel = letters(t) && {
        let c: Vec<char> = t.chars().collect();
        c.len() > 4
            && c[0].is_ascii_lowercase()
            && c[1].is_ascii_lowercase()
            && c.windows(2)
                .any(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_lowercase())
    };
    inner_underscore || flag || file || path || camel
}

/// Words that open a question.
const QUESTION_WORDS: &[&str] = &[
    "what", "whats", "how", "why", "when", "where", "who", "which",
];

/// Whether `text` is phrased as a question: it ends with `?` or opens with a question word.
pub(crate) fn is_question(text: &str) -> bool {
    text.trim_end().ends_with('?')
        || raw_words(text)
            .first()
            .is_some_and(|w| QUESTION_WORDS.contains(&w.as_str()))
}

/// How many tokens of `text` look like code.
pub(crate) fn code_tokens(text: &str) -> usize {
    text.split_whitespace().filter(|t| is_code_token(t)).count()
}

/// The clauses of `text`: split at punctuation that ends a thought, so a negation never
/// reaches past a comma or a full stop.
fn clauses(text: &str) -> impl Iterator<Item = &str> {
    text.split(['.', ',', ';', ':', '!', '?', '\n', '(', ')'])
}

/// Lower-cased words. Apostrophes inside words are removed (`don't` → `dont`) and so are
/// hyphens between letters, so a compound is one word (`cross-check` → `crosscheck`): its
/// parts alone mean something else (a border *crossing* is not a cross-check).
fn raw_words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let cleaned: String = chars
        .iter()
        .enumerate()
        .filter(|&(i, c)| {
            let joins = |c: char| c.is_alphabetic();
            let between =
                i > 0 && i + 1 < chars.len() && joins(chars[i - 1]) && joins(chars[i + 1]);
            !(matches!(c, '\'' | '\u{2019}') || (*c == '-' && between))
        })
        .map(|(_, c)| *c)
        .collect();
    cleaned
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The length in words of a negator starting at `raw[i]`, if one does.
fn negator_at(raw: &[String], i: usize) -> Option<usize> {
    if NEGATORS.contains(&raw[i].as_str()) {
        return Some(1);
    }
    NEGATOR_PHRASES
        .iter()
        .find(|p| {
            raw.len() >= i + p.len() && p.iter().zip(&raw[i..]).all(|(a, b)| *a == b.as_str())
        })
        .map(|p| p.len())
}

/// Digits, alone or with a unit or ordinal (`2021`, `9am`, `200k`, `3rd`): never a word a
/// description uses.
fn is_number(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// A suffix stripper in the spirit of Porter's: inflections (`-s`, `-ed`, `-ing`), agent nouns
/// (`-er`, `-itor`), adverbs (`-ly`) and a few derivations (`-ication`, `-ation`,
/// `-ness`, `-able`, `-ity`) come off so a word family meets in one form. Only its consistency
/// matters: both the catalog and the instruction go through it.
pub(crate) fn stem(word: &str) -> String {
    if let Some((_, s)) = IRREGULAR.iter().find(|(w, _)| *w == word) {
        return (*s).to_string();
    }
    let mut w = word.to_string();
    let n = |w: &str| w.chars().count();
    // Plurals and third person.
    if n(&w) > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if n(&w) > 4 && w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if n(&w) > 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        w.pop();
    }
    // Past and progressive.
    if n(&w) > 4 && w.ends_with("ied") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else {
        for suffix in ["ing", "ed"] {
            if n(&w) > suffix.len() + 2 && w.ends_with(suffix) {
                let base = &w[..w.len() - suffix.len()];
                if base.chars().any(is_vowel) {
                    w.truncate(base.len());
                    undouble(&mut w);
                }
                break;
            }
        }
    }
    // Derivations, longest first; each leaves a stem of at least four letters.
    for (suffix, with) in [
        ("ication", "y"),
        ("mentation", "ment"),
        ("ization", "iz"),
        ("isation", "is"),
        ("ation", "at"),
        ("ison", ""),
        ("ution", "ut"),
        ("ness", ""),
        ("ability", ""),
        ("ibility", ""),
        ("able", ""),
        ("ible", ""),
        ("ity", ""),
        ("ive", ""),
        ("ful", ""),
        ("ally", ""),
        ("ly", ""),
    ] {
        if w.ends_with(suffix) && n(&w) >= suffix.len() + 4 {
            w.truncate(w.len() - suffix.len());
            w.push_str(with);
            break;
        }
    }
    // Agent nouns: writer, reviewer, editor, monitor.
    if n(&w) > 5 && w.ends_with("itor") {
        w.truncate(w.len() - 2);
    } else if n(&w) > 4 && w.ends_with("er") {
        w.truncate(w.len() - 2);
        undouble(&mut w);
    }
    if n(&w) > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'y')
}

/// `stopp` → `stop`, `committ` → `commit`; `ll`, `ss` and `zz` stay (`fill`, `pass`).
fn undouble(w: &mut String) {
    let b = w.as_bytes();
    if b.len() > 3 {
        let (x, y) = (b[b.len() - 1], b[b.len() - 2]);
        if x == y && !matches!(x, b'l' | b's' | b'z') && !is_vowel(x as char) {
            w.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflections_meet() {
        assert_eq!(stem("checking"), stem("checks"));
        assert_eq!(stem("checked"), stem("check"));
        assert_eq!(stem("sources"), stem("source"));
        assert_eq!(stem("verifies"), stem("verify"));
        assert_eq!(stem("verification"), stem("verify"));
        assert_eq!(stem("verified"), stem("verify"));
        assert_eq!(stem("writer"), stem("writes"));
        assert_eq!(stem("wrote"), stem("write"));
        assert_eq!(stem("sent"), stem("sends"));
        assert_eq!(stem("committing"), stem("commit"));
        assert_eq!(stem("reviewer"), stem("reviews"));
        assert_eq!(stem("editor"), stem("edits"));
        assert_eq!(stem("publisher"), stem("published"));
        assert_eq!(stem("comparisons"), stem("compare"));
        assert_eq!(terms("Cross-check THE claim"), ["crosscheck", "claim"]);
        assert_eq!(terms("cross-checking"), terms("Cross-checks"));
    }

    #[test]
    fn negated_words_are_dropped_to_the_end_of_the_clause() {
        assert_eq!(terms("Reproduce it. Don't fix anything yet."), ["reproduc"]);
        assert_eq!(terms("dont change anything just comment"), ["comment"]);
        assert_eq!(terms("the studies, not the hype"), ["study"]);
        assert_eq!(terms("we haven't sent it"), ["havent", "send"]);
    }

    #[test]
    fn code_like_tokens_are_recognised() {
        for t in [
            "parse_date",
            "--json",
            "main.rs",
            "config.yaml",
            "std::fs",
            "run()",
            "parseDate",
        ] {
            assert!(is_code_token(t), "{t}");
        }
        for t in [
            "end.", "e.g.", "Tokyo", "and/or", "it's", "U.K.", "--", "kWh", "iPhone",
        ] {
            assert!(!is_code_token(t), "{t}");
        }
        assert_eq!(code_tokens("refactor parse_date, add --json"), 2);
    }

    #[test]
    fn questions_are_recognised() {
        assert!(is_question("is it done?"));
        assert!(is_question("How long does it take"));
        assert!(!is_question("Fix the build."));
    }
}
