//! The two date formats feeds use — RFC 3339 (Atom) and RFC 2822 (RSS, weekday and seconds
//! optional, obsolete zone names such as `EST` included) — read into Unix seconds by chrono,
//! and Unix seconds written back as a UTC minute a model can read.

use chrono::{DateTime, SecondsFormat, Utc};

/// `2026-11-30T14:05:00Z`, `2026-11-30T14:05:00.123+01:00` → Unix seconds.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|t| t.timestamp())
}

/// `Mon, 30 Nov 2026 14:05:00 +0000` (weekday and seconds optional) → Unix seconds.
pub fn parse_rfc2822(text: &str) -> Option<i64> {
    DateTime::parse_from_rfc2822(text.trim())
        .ok()
        .map(|t| t.timestamp())
}

/// Either format.
pub fn parse_any(text: &str) -> Option<i64> {
    parse_rfc3339(text).or_else(|| parse_rfc2822(text))
}

fn utc(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).unwrap_or_default()
}

/// Unix seconds as `2026-11-30 14:05 UTC`.
pub fn utc_minute(secs: i64) -> String {
    utc(secs).format("%Y-%m-%d %H:%M UTC").to_string()
}

/// Unix seconds as RFC 3339 in UTC, `2026-11-30T14:05:00Z`.
pub fn rfc3339(secs: i64) -> String {
    utc(secs).to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_agree_on_one_instant() {
        let a = parse_rfc3339("2026-11-30T14:05:00Z").unwrap();
        assert_eq!(a, 1_796_047_500);
        assert_eq!(parse_rfc2822("Mon, 30 Nov 2026 14:05:00 +0000"), Some(a));
        assert_eq!(parse_rfc2822("30 Nov 2026 15:05 +0100"), Some(a));
        assert_eq!(parse_rfc2822("Mon, 30 Nov 2026 09:05:00 EST"), Some(a));
        assert_eq!(parse_rfc3339("2026-11-30T16:05:00.250+02:00"), Some(a));
        assert_eq!(utc_minute(a), "2026-11-30 14:05 UTC");
        assert_eq!(rfc3339(a), "2026-11-30T14:05:00Z");
        assert_eq!(parse_rfc3339(&rfc3339(a + 7)), Some(a + 7));
    }

    #[test]
    fn nonsense_is_none() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-11-30",
            "Mon, 30 Foo 2026 1:00",
        ] {
            assert_eq!(parse_any(bad), None, "{bad}");
        }
    }

    #[test]
    fn leap_days_round_trip() {
        let t = parse_rfc3339("2024-02-29T23:59:00Z").unwrap();
        assert_eq!(utc_minute(t), "2024-02-29 23:59 UTC");
        assert_eq!(utc_minute(0), "1970-01-01 00:00 UTC");
    }
}
