//! Text for a person to read: shortened (a log line, a console cell, a recorded excerpt), and
//! times as UTC.

/// The first `max` characters of `text`, with `…` when anything was cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// `text` on one line (every run of whitespace one space), clipped to `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    clip(&text.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

/// `ms` since the epoch as UTC, to the second (`2026-12-06 05:22:27 UTC`).
pub fn utc(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// An error and its causes on one line, each cause once: a cause whose text the line already
/// holds is not repeated (a transport error's own text is only "error sending request"; its
/// cause says DNS, refused, TLS, timeout).
pub fn chain(error: &dyn std::error::Error) -> String {
    with_causes(error.to_string(), error.source())
}

/// `text` followed by `cause` and its causes, each whose text `text` does not already hold.
pub fn with_causes(mut text: String, mut cause: Option<&dyn std::error::Error>) -> String {
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_on_characters_and_marks_the_cut() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("héllo", 5), "héllo");
        assert_eq!(clip("", 3), "");
    }

    #[test]
    fn a_time_is_written_in_utc() {
        assert_eq!(utc(1_796_534_547_931), "2026-12-06 05:22:27 UTC");
    }

    #[test]
    fn one_line_folds_whitespace_before_clipping() {
        assert_eq!(one_line("  a\n\n b\tc ", 10), "a b c");
        assert_eq!(one_line("a\nbcdef", 3), "a b…");
    }
}
