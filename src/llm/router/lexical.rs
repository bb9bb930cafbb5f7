//! Words for lexical matching: lower-cased, split on anything not a letter or digit, common
//! words dropped, and crudely stemmed so `cross-checking` meets `Cross-checks`.

/// Words too common to say anything about an expert.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "against", "all", "also", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "but", "by", "can", "could", "do", "does", "each", "for", "from", "get",
    "give", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "need",
    "no", "not", "now", "of", "on", "one", "or", "our", "out", "please", "should", "so", "some",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those",
    "to", "up", "us", "was", "we", "what", "when", "where", "which", "who", "whether", "why",
    "will", "with", "would", "you", "your",
];

/// The terms of `text`, in order, with repeats.
pub(crate) fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .filter(|w| w.len() > 1)
        .collect()
}

/// A crude suffix stripper; only its consistency matters (both sides go through it).
pub(crate) fn stem(word: &str) -> String {
    let mut w = word.to_string();
    let len = w.chars().count();
    if len > 4 && (w.ends_with("ies") || w.ends_with("ied")) {
        w.truncate(w.len() - 3);
        w.push('y');
        return w;
    }
    for suffix in ["ing", "ed", "ly"] {
        if len > suffix.len() + 2 && w.ends_with(suffix) {
            w.truncate(w.len() - suffix.len());
            break;
        }
    }
    if w.chars().count() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        w.pop();
    }
    if w.chars().count() > 4 && w.ends_with("er") {
        w.truncate(w.len() - 2);
    }
    if w.chars().count() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
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
        assert_eq!(stem("writer"), stem("writes"));
        assert_eq!(terms("Cross-check THE claim"), ["cross", "check", "claim"]);
    }
}
