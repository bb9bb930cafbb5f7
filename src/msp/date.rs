//! The two date formats feeds use — RFC 3339 (Atom) and RFC 2822 (RSS) — read into Unix
//! seconds, and Unix seconds written back as a UTC minute a model can read.

/// Days from 1970-01-01 to the civil date `y-m-d` (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of `days` since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn number(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn valid(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> bool {
    (1..=12).contains(&mo) && (1..=31).contains(&d) && h < 24 && mi < 60 && s <= 60 && y > 0
}

/// `±HH:MM`, `±HHMM`, `Z`, `UT`, `GMT` or a US zone name, as seconds east of UTC.
fn offset(zone: &str) -> Option<i64> {
    let named = match zone {
        "Z" | "UT" | "UTC" | "GMT" => Some(0),
        "EST" => Some(-5),
        "EDT" => Some(-4),
        "CST" => Some(-6),
        "CDT" => Some(-5),
        "MST" => Some(-7),
        "MDT" => Some(-6),
        "PST" => Some(-8),
        "PDT" => Some(-7),
        _ => None,
    };
    if let Some(h) = named {
        return Some(h * 3600);
    }
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = zone[1..].chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 {
        return None;
    }
    Some(sign * (number(&digits[..2])? * 3600 + number(&digits[2..])? * 60))
}

/// `2026-11-30T14:05:00Z`, `2026-11-30T14:05:00.123+01:00` → Unix seconds.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.trim();
    let (date, rest) = text.split_at_checked(10)?;
    let mut parts = date.split('-');
    let (y, mo, d) = (
        number(parts.next()?)?,
        number(parts.next()?)?,
        number(parts.next()?)?,
    );
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let (clock, zone) = rest.split_at_checked(8)?;
    let mut hms = clock.split(':');
    let (h, mi, s) = (
        number(hms.next()?)?,
        number(hms.next()?)?,
        number(hms.next()?)?,
    );
    let zone = match zone.strip_prefix('.') {
        Some(frac) => frac.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => zone,
    };
    if !valid(y, mo, d, h, mi, s) {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset(zone)?)
}

/// `Mon, 30 Nov 2026 14:05:00 +0000` (weekday and seconds optional) → Unix seconds.
pub fn parse_rfc2822(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = match text.split_once(',') {
        Some((_, rest)) => rest,
        None => text,
    };
    let mut words = text.split_whitespace();
    let d = number(words.next()?)?;
    let month = words.next()?;
    let mo = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .iter()
    .position(|m| month.len() >= 3 && month[..3].eq_ignore_ascii_case(m))? as i64
        + 1;
    let y = number(words.next()?)?;
    let y = if y < 100 { y + 2000 } else { y };
    let mut hms = words.next()?.split(':');
    let (h, mi) = (number(hms.next()?)?, number(hms.next()?)?);
    let s = match hms.next() {
        Some(s) => number(s)?,
        None => 0,
    };
    let zone = offset(words.next().unwrap_or("GMT"))?;
    if !valid(y, mo, d, h, mi, s) {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - zone)
}

/// Either format.
pub fn parse_any(text: &str) -> Option<i64> {
    parse_rfc3339(text).or_else(|| parse_rfc2822(text))
}

/// Unix seconds as `2026-11-30 14:05 UTC`.
pub fn utc_minute(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        t / 3600,
        t % 3600 / 60
    )
}

/// Unix seconds as RFC 3339 in UTC, `2026-11-30T14:05:00Z`.
pub fn rfc3339(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        t / 3600,
        t % 3600 / 60,
        t % 60
    )
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
