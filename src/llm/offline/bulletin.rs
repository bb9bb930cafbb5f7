//! Offline wording of a bulletin: one line per checked claim, worded by its status the way the
//! newsroom's house rules ask (confirmed: stated and attributed; single source: "X says";
//! contradicted: both sides), each with its sources, and a footer that says no model wrote it.

use serde::{Deserialize, Serialize};

use super::claims::{Status, owner_key};

/// One source of a claim, as the bulletin cites it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cited {
    /// Who published it.
    pub outlet: String,
    /// Its owner (the independence token).
    #[serde(default)]
    pub owner: String,
    /// Link.
    #[serde(default)]
    pub url: String,
    /// When (RFC 3339), if known.
    #[serde(default)]
    pub published: Option<String>,
    /// `supports` or `denies`.
    #[serde(default)]
    pub stance: Option<String>,
}

/// A claim to word.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// The claim id.
    pub claim: String,
    /// The claim, as one sentence.
    pub text: String,
    /// Its checked status.
    pub status: Status,
    /// Its sources.
    #[serde(default)]
    pub sources: Vec<Cited>,
    /// The bulletin this corrects, when the status changed since it was published there.
    #[serde(default)]
    pub corrects: Option<String>,
    /// The status it was published with before, for a correction.
    #[serde(default)]
    pub previous_status: Option<Status>,
    /// Denying reports left out of `sources`, which cite each disputing owner once.
    #[serde(default)]
    pub uncited_denials: usize,
}

/// What the editor hands back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wording {
    /// At most twelve words.
    pub headline: String,
    /// Per claim: its sentence in the bulletin.
    pub lines: Vec<Worded>,
    /// The whole bulletin as a reader sees it.
    pub text: String,
}

/// One claim's sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worded {
    /// The claim id.
    pub claim: String,
    /// The sentence.
    pub text: String,
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Confirmed => "confirmed",
        Status::SingleSource => "single source",
        Status::Contradicted => "contradicted",
    }
}

fn when(published: &Option<String>) -> String {
    // `2026-11-30T07:30:00Z` → `2026-11-30 07:30 UTC`.
    match published.as_deref() {
        Some(t) if t.len() >= 16 && t.ends_with('Z') => format!("{} {} UTC", &t[..10], &t[11..16]),
        Some(t) => t.to_string(),
        None => "undated".into(),
    }
}

fn cite(sources: &[Cited], stance: &str) -> String {
    let picked: Vec<String> = sources
        .iter()
        .filter(|s| s.stance.as_deref().unwrap_or("supports") == stance)
        .map(|s| format!("{} ({})", s.outlet, when(&s.published)))
        .collect();
    picked.join("; ")
}

/// The sentence for one claim.
pub fn sentence(line: &Line) -> String {
    let text = line.text.trim().trim_end_matches('.');
    let supporters = cite(&line.sources, "supports");
    let owners = {
        let mut o: Vec<String> = line
            .sources
            .iter()
            .filter(|s| s.stance.as_deref().unwrap_or("supports") == "supports")
            .map(|s| owner_key(&s.owner))
            .collect();
        o.sort_unstable();
        o.dedup();
        o.len()
    };
    let body = match line.status {
        Status::Confirmed => {
            format!("CONFIRMED: {text}. Reported by {owners} independent sources: {supporters}.")
        }
        Status::SingleSource => format!(
            "SINGLE SOURCE: {supporters} says: {text}. Not confirmed by an independent source."
        ),
        Status::Contradicted => {
            let more = match line.uncited_denials {
                0 => String::new(),
                1 => " and 1 more report of theirs".into(),
                n => format!(" and {n} more reports of theirs"),
            };
            format!(
                "CONTRADICTED: {text}. Reported by {supporters}; disputed by {}{more}.",
                cite(&line.sources, "denies")
            )
        }
    };
    match (&line.corrects, line.previous_status) {
        (Some(b), Some(before)) => {
            format!("CORRECTION to {b} (was {}): {body}", status_word(before))
        }
        (Some(b), None) => format!("CORRECTION to {b}: {body}"),
        _ => body,
    }
}

/// Words a bulletin for `lines`, in the order given.
pub fn write(lines: &[Line]) -> Wording {
    let count = |s: Status| lines.iter().filter(|l| l.status == s).count();
    let headline = match lines {
        [one] => {
            let words: Vec<&str> = one.text.split_whitespace().take(12).collect();
            words.join(" ")
        }
        _ => format!(
            "{} claims: {} confirmed, {} single-source, {} contradicted",
            lines.len(),
            count(Status::Confirmed),
            count(Status::SingleSource),
            count(Status::Contradicted)
        ),
    };
    let worded: Vec<Worded> = lines
        .iter()
        .map(|l| Worded {
            claim: l.claim.clone(),
            text: sentence(l),
        })
        .collect();
    let mut text = format!("{headline}\n");
    for w in &worded {
        text.push_str(&format!("- {}\n", w.text));
    }
    text.push_str(
        "(Compiled without a language model: statuses follow the rule of two independent owners.)",
    );
    Wording {
        headline,
        lines: worded,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(outlet: &str, owner: &str, stance: &str) -> Cited {
        Cited {
            outlet: outlet.into(),
            owner: owner.into(),
            url: String::new(),
            published: Some("2026-11-30T07:30:00Z".into()),
            stance: Some(stance.into()),
        }
    }

    #[test]
    fn wording_follows_the_status() {
        let confirmed = Line {
            claim: "c-1".into(),
            text: "Harbour bridge closed to traffic".into(),
            status: Status::Confirmed,
            sources: vec![
                src("Authority", "a", "supports"),
                src("Wire", "w", "supports"),
            ],
            corrects: Some("b-0".into()),
            previous_status: Some(Status::SingleSource),
            uncited_denials: 0,
        };
        let s = sentence(&confirmed);
        assert!(s.starts_with("CORRECTION to b-0 (was single source): CONFIRMED: Harbour bridge closed to traffic. Reported by 2 independent sources: Authority (2026-11-30 07:30 UTC); Wire"), "{s}");
        let single = Line {
            status: Status::SingleSource,
            sources: vec![src("Wire", "w", "supports")],
            corrects: None,
            previous_status: None,
            ..confirmed.clone()
        };
        assert!(sentence(&single).starts_with("SINGLE SOURCE: Wire (2026-11-30 07:30 UTC) says:"));
        let disputed = Line {
            status: Status::Contradicted,
            sources: vec![
                src("Wire", "w", "supports"),
                src("Authority", "a", "denies"),
            ],
            ..single.clone()
        };
        assert!(sentence(&disputed).ends_with("; disputed by Authority (2026-11-30 07:30 UTC)."));
        let many = Line {
            uncited_denials: 40,
            ..disputed.clone()
        };
        assert!(
            sentence(&many).ends_with(" (2026-11-30 07:30 UTC) and 40 more reports of theirs."),
            "{}",
            sentence(&many)
        );
        let w = write(&[confirmed, single, disputed]);
        assert_eq!(
            w.headline,
            "3 claims: 1 confirmed, 1 single-source, 1 contradicted"
        );
        assert!(w.text.contains("without a language model"));
        assert_eq!(w.lines.len(), 3);
    }
}
