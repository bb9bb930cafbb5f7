//! Headlines that debunk what others report, with no cue word: "Casterwick bangs were fireworks,
//! police confirm", "Thistlebury 'space rocks' are slag". A general convention of news writing,
//! no list of words: what others reported is said to be something else, on someone's word or
//! with the reported name in scare quotes.

use super::super::text::{self, stem};
use super::roles::without_attribution;

/// The most words a scare quote holds; a longer quote is speech.
const MAX_SCARE_WORDS: usize = 3;

/// Whether `title` says its subject was (is, were, are) another thing — a thing, not a state
/// ("were fireworks", not "were injured" or "was closed") — under a trailing attribution ("…,
/// police confirm") or with the subject in scare quotes.
pub fn debunks(title: &str) -> bool {
    let head = without_attribution(title);
    let words = text::tokenize(head);
    let copula = words
        .iter()
        .position(|w| matches!(w.as_str(), "was" | "were" | "is" | "are"));
    let Some(at) = copula.filter(|&at| at > 0) else {
        return false;
    };
    let thing = words[at + 1..]
        .iter()
        .find(|w| !matches!(w.as_str(), "a" | "an" | "the"));
    let another_thing = thing.is_some_and(|w| {
        !text::is_plain(w)
            && !w.ends_with("ed")
            && !w.ends_with("en")
            && super::state::state(w).is_none()
            && text::axis(&stem(w)).is_none()
    });
    another_thing && (head.len() < title.len() || scare_quoted(head))
}

/// A lower-case phrase of 1 to [`MAX_SCARE_WORDS`] words between single or double quotes
/// ("Thistlebury 'space rocks' are slag"); a capitalised one is the name of a work ("'Salt
/// Year' wins prize"). An apostrophe inside or at the end of a word ("Cooper's", "Rovers'")
/// opens nothing.
fn scare_quoted(title: &str) -> bool {
    let chars: Vec<char> = title.chars().collect();
    let quote = |c: char| matches!(c, '\'' | '‘' | '’' | '"' | '“' | '”');
    let mut open: Option<usize> = None;
    for (i, &c) in chars.iter().enumerate() {
        if !quote(c) {
            continue;
        }
        let before = i.checked_sub(1).map(|k| chars[k]);
        let after = chars.get(i + 1).copied();
        let opens = before.is_none_or(char::is_whitespace) && after.is_some_and(char::is_lowercase);
        let closes =
            before.is_some_and(char::is_alphanumeric) && after.is_none_or(|a| !a.is_alphanumeric());
        match open {
            Some(from) if closes => {
                let inner: String = chars[from + 1..i].iter().collect();
                if (1..=MAX_SCARE_WORDS).contains(&inner.split_whitespace().count()) {
                    return true;
                }
                open = None;
            }
            None if opens => open = Some(i),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_thing_on_someones_word_or_in_scare_quotes_debunks() {
        assert!(debunks(
            "Thistlebury 'space rocks' are slag from old ironworks"
        ));
        assert!(debunks("Kestrel Bay “beaked whale” was a dolphin"));
        assert!(debunks("Casterwick bangs were fireworks, police confirm"));
        // No one says so, a state, a figure, speech, a work's name, a scare quote on its own.
        assert!(!debunks("Bangs were fireworks"));
        assert!(!debunks("Two were injured, police say"));
        assert!(!debunks("Bridge was closed overnight, council says"));
        assert!(!debunks(
            "Quarry fossil is 1,200,000 years old, scientists say"
        ));
        assert!(!debunks("'I was misled,' says council leader"));
        assert!(!debunks("'Salt Year' is book of the year"));
        assert!(!debunks(
            "Lost flower back: 'extinct' fen orchid found by walker"
        ));
    }
}
