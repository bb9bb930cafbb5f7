//! What a person reads of a change. A diff is bytes an expert chose: a carriage return, an
//! ANSI escape or a bidi override in a line or a file name would make a terminal (or a
//! browser) show something other than what is applied (`+evil();\r+ok();` shows as
//! `+ok();`). [`shown`] renders text so that every such character is visible as an escape;
//! it is used wherever a hunk or a path is printed for a person, never on what is stored or
//! applied.
//!
//! A backslash is left as it is: escaping it would double every `\n` of source code, and a
//! literal `\x1b` in a file hides nothing (it reads as what it is). A tab stays a tab.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must be shown escaped: C0 controls but tab, DEL, C1 controls, bidi embeddings,
/// overrides, isolates and marks, zero-width characters, the byte-order mark, and the line and
/// paragraph separators.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(
            c,
            '\u{061c}'
                | '\u{00ad}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// `text` with every character a terminal would act on or hide shown escaped: `\r`, `\n`,
/// `\x1b` (any control below U+0100), `\u{202e}` (any other).
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            c if hidden(c) && (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisible_characters_are_shown_escaped() {
        for (raw, seen) in [
            ("+evil();\r+ok();", "+evil();\\r+ok();"),
            ("e\x1b[31mvil", "e\\x1b[31mvil"),
            ("a\u{7f}b\u{85}c\u{0}", "a\\x7fb\\x85c\\x00"),
            (
                "x = 1; \u{202e}// }\u{2066}",
                "x = 1; \\u{202e}// }\\u{2066}",
            ),
            ("zero\u{200b}width\u{feff}", "zero\\u{200b}width\\u{feff}"),
            ("two\nlines", "two\\nlines"),
        ] {
            assert_eq!(shown(raw), seen, "{raw:?}");
        }
    }

    #[test]
    fn plain_text_tabs_and_non_ascii_are_left_alone() {
        for text in ["fn main() {", "\tindented", "café ünïcødé 名前", "a\\nb"] {
            assert!(
                matches!(shown(text), Cow::Borrowed(t) if t == text),
                "{text:?}"
            );
        }
    }
}
