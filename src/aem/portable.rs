//! SKILL.md travels between deployments, so nothing in it may name this deployment:
//! no tool servers or their tool identifiers, no hosts or URLs, no absolute paths, no
//! environment references, nothing that looks like a secret.

use std::collections::BTreeSet;

/// One piece of deployment data found in a SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// 1-based line in the file.
    pub(crate) line: usize,
    /// What kind of thing it is.
    pub(crate) what: &'static str,
    /// The text (shortened for secrets).
    pub(crate) text: String,
}

/// What this deployment calls its things.
pub(crate) struct DeploymentNames<'a> {
    /// Registered server names.
    pub(crate) servers: &'a BTreeSet<String>,
    /// Declared tool names made of several words (`send_message`): specific enough to be
    /// a reference, unlike a one-word tool such as `search`.
    pub(crate) tools: &'a BTreeSet<String>,
}

const TLDS: &[&str] = &[
    "ai", "app", "biz", "cloud", "co", "com", "de", "dev", "edu", "eu", "fr", "gov", "in", "info",
    "int", "internal", "io", "lan", "local", "mil", "net", "org", "uk", "us",
];

const SECRET_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "sk_test_",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "AKIA",
    "ASIA",
    "AIza",
];

const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "api_key",
    "apikey",
    "api-key",
    "secret",
    "token",
    "access_key",
];

/// Scans every line of `text` and returns what is deployment-specific, in line order.
pub(crate) fn scan(text: &str, names: &DeploymentNames<'_>) -> Vec<Finding> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.contains("-----BEGIN") {
            found.push(Finding {
                line: line_no,
                what: "a private key",
                text: "-----BEGIN …".to_string(),
            });
        }
        if let Some(key) = secret_assignment(line) {
            found.push(Finding {
                line: line_no,
                what: "a secret assignment",
                text: format!("{key}=…"),
            });
        }
        for raw in line.split_whitespace() {
            if let Some((what, text)) = classify_token(raw, names) {
                found.push(Finding {
                    line: line_no,
                    what,
                    text,
                });
            }
        }
    }
    found
}

fn trim_punct(s: &str) -> &str {
    s.trim_matches(|c: char| "\"'()[]{}<>,;!?*".contains(c))
        .trim_end_matches([':', '.'])
}

fn classify_token(raw: &str, names: &DeploymentNames<'_>) -> Option<(&'static str, String)> {
    if let Some(at) = raw.find("${") {
        let rest = &raw[at..];
        let end = rest.find('}').map_or(rest.len(), |e| e + 1);
        return Some(("an environment reference", rest[..end].to_string()));
    }
    let t = trim_punct(raw);
    let in_code = t.len() > 2 && t.starts_with('`') && t.ends_with('`');
    let t = trim_punct(t.trim_matches('`'));
    if t.is_empty() {
        return None;
    }
    if t.contains("://") || t.to_ascii_lowercase().starts_with("www.") {
        return Some(("a URL", t.to_string()));
    }
    if let Some(secret) = looks_secret(t) {
        return Some(("a secret-looking string", secret));
    }
    if is_absolute_path(t) {
        return Some(("an absolute path", t.to_string()));
    }
    if is_host(t) {
        return Some(("a host name", t.to_string()));
    }
    if let Some((server, rest)) = t.split_once('/')
        && !rest.is_empty()
        && names.servers.contains(server)
    {
        return Some(("a tool reference", t.to_string()));
    }
    if in_code && names.servers.contains(t) {
        return Some(("a server name", t.to_string()));
    }
    if names.tools.contains(t) {
        return Some(("a tool name", t.to_string()));
    }
    None
}

fn is_absolute_path(t: &str) -> bool {
    let mut chars = t.chars();
    match (chars.next(), chars.next()) {
        (Some('/'), Some(c)) => c.is_ascii_alphanumeric() || c == '.' || c == '_',
        (Some('~'), Some('/')) => true,
        (Some(d), Some(':')) => d.is_ascii_alphabetic() && t[2..].starts_with('\\'),
        _ => false,
    }
}

fn is_host(t: &str) -> bool {
    if t.eq_ignore_ascii_case("localhost") || t.to_ascii_lowercase().starts_with("localhost:") {
        return true;
    }
    let host = t.split(['/', ':']).next().unwrap_or(t);
    let labels: Vec<&str> = host.split('.').collect();
    if labels.len() == 4 && labels.iter().all(|l| l.parse::<u8>().is_ok()) {
        return true;
    }
    labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && labels
            .last()
            .is_some_and(|tld| TLDS.contains(&tld.to_ascii_lowercase().as_str()))
}

fn shorten(t: &str) -> String {
    let head: String = t.chars().take(6).collect();
    format!("{head}…")
}

pub(crate) fn looks_secret(t: &str) -> Option<String> {
    if SECRET_PREFIXES
        .iter()
        .any(|p| t.starts_with(p) && t.len() >= p.len() + 12)
    {
        return Some(shorten(t));
    }
    let charset = t
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "+/=_-".contains(c));
    let has = |f: fn(&char) -> bool| t.chars().any(|c| f(&c));
    if t.len() >= 32
        && charset
        && has(char::is_ascii_digit)
        && has(char::is_ascii_lowercase)
        && has(char::is_ascii_uppercase)
    {
        return Some(shorten(t));
    }
    None
}

/// `password: hunter22`, `API_KEY=abc…` and the like; returns the key word.
fn secret_assignment(line: &str) -> Option<&'static str> {
    let lower = line.to_ascii_lowercase();
    for key in SECRET_KEYS {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(key) {
            let after = &lower[from + pos + key.len()..];
            let rest = after.trim_start_matches([' ', '"', '\'']);
            if let Some(value) = rest.strip_prefix([':', '=']) {
                let value = value.trim().trim_matches(['"', '\'']);
                let word = value.split_whitespace().next().unwrap_or("");
                if word.len() >= 6 && !word.contains("${") {
                    return Some(key);
                }
            }
            from += pos + key.len();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> (BTreeSet<String>, BTreeSet<String>) {
        (
            ["fs".to_string(), "time".to_string()].into(),
            ["read_text_file".to_string()].into(),
        )
    }

    fn scan_one(text: &str) -> Vec<&'static str> {
        let (servers, tools) = names();
        let n = DeploymentNames {
            servers: &servers,
            tools: &tools,
        };
        scan(text, &n).into_iter().map(|f| f.what).collect()
    }

    #[test]
    fn plain_prose_is_portable() {
        assert!(
            scan_one("At the time of writing, check two sources (e.g. wires) and/or 24/7 feeds.")
                .is_empty()
        );
        assert!(scan_one("Write catalog.json and SKILL.md files.").is_empty());
    }

    #[test]
    fn deployment_data_is_found() {
        assert_eq!(scan_one("see https://x.org/a"), ["a URL"]);
        assert_eq!(scan_one("open /etc/passwd"), ["an absolute path"]);
        assert_eq!(scan_one("call fs/read_text_file"), ["a tool reference"]);
        assert_eq!(scan_one("use `time` for clocks"), ["a server name"]);
        assert_eq!(scan_one("use read_text_file"), ["a tool name"]);
        assert_eq!(scan_one("host api.example.com"), ["a host name"]);
        assert_eq!(scan_one("addr 10.0.0.1"), ["a host name"]);
        assert_eq!(scan_one("password: hunter22"), ["a secret assignment"]);
        assert_eq!(
            scan_one("key sk-abcdefghijklmnopqrstuv"),
            ["a secret-looking string"]
        );
        assert_eq!(scan_one("value ${TOKEN}"), ["an environment reference"]);
    }
}
