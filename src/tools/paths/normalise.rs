//! How gate 2 reads a string as a path: whether free text reads as one at all, and every
//! path a server might take a string for.
//!
//! **Reads as a path** (only asked of free text; every other argument is always read as a
//! path). The value is trimmed of whitespace and of one pair of surrounding quotes, as
//! servers do. A value that still holds a line break or another control character is prose
//! (a file body, a commit message), never a path. Otherwise it reads as a path when it, or
//! its percent-decoding, is
//!
//! * a `file:` URI in any spelling (`FILE:///x`, `file:/x`, `file://localhost/x`);
//! * one word (no whitespace) that starts with `/`, `~` or `$`, is `.` or `..`, or holds a
//!   `/` (`aem/news/SKILL.md`, `x/../y`), unless it is a URL of another scheme
//!   (`https://…`);
//! * words that start like a path: `/` followed by a name (not `//` or `/*`, which open
//!   comments), `~/`, `$HOME/`, `${HOME}/`, `./` or `../` (`/home/Jane Doe/aem/x`).
//!
//! So `Fix the bug in src/x.rs` is prose and `aem/news/SKILL.md` is a path.
//!
//! **Readings.** A server may trim a value or not, percent-decode it or not, take a `file:`
//! URI or its text, expand `~` and `$HOME` or create a directory called `~`. Gate 2 does
//! not guess which: [`readings`] gives every one of these, and each must pass.

use std::path::Path;

/// Most readings one value may have (each transformation adds at most one).
const MAX_READINGS: usize = 64;
/// How many times percent-decoding is applied (`%252e` → `%2e` → `.`).
const MAX_DECODES: usize = 3;

/// Why a value cannot be read as a path safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// It uses the home directory (`~`, `$HOME`, `${HOME}`) and the server's is not known,
    /// or it names another user's home (`~user`).
    Home(String),
    /// A `file:` URI naming another host.
    ForeignHost(String),
    /// A NUL byte.
    Nul,
}

/// The value trimmed of whitespace and one pair of surrounding quotes.
fn trimmed(value: &str) -> &str {
    let t = value.trim();
    for q in ['"', '\''] {
        if let Some(inner) = t.strip_prefix(q).and_then(|t| t.strip_suffix(q)) {
            return inner.trim();
        }
    }
    t
}

/// `value` with every `%XX` decoded (bytes that are not UTF-8 kept lossily), or `None`
/// when it holds none.
fn percent_decoded(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut changed = false;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            changed = true;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    changed.then(|| String::from_utf8_lossy(&out).into_owned())
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Whether `value` starts with a URI scheme (`x:`), and which, lowercased.
fn scheme(value: &str) -> Option<String> {
    let (head, _) = value.split_once(':')?;
    let mut chars = head.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then(|| head.to_ascii_lowercase())
}

/// The path of a `file:` URI (`file:///x`, `file:/x`, `file://localhost/x`, `file:x`, any
/// case), `Ok(None)` when `value` is not one.
fn file_uri_path(value: &str) -> Result<Option<String>, Unreadable> {
    if scheme(value).as_deref() != Some("file") {
        return Ok(None);
    }
    let rest = &value["file:".len()..];
    let Some(authority_and_path) = rest.strip_prefix("//") else {
        return Ok(Some(rest.to_string()));
    };
    let (host, path) = match authority_and_path.find('/') {
        Some(i) => authority_and_path.split_at(i),
        None => (authority_and_path, ""),
    };
    if host.is_empty() || host.eq_ignore_ascii_case("localhost") {
        Ok(Some(if path.is_empty() { "/" } else { path }.to_string()))
    } else {
        Err(Unreadable::ForeignHost(value.to_string()))
    }
}

/// Whether free text reads as a path (see the module documentation).
pub fn reads_as_path(value: &str) -> bool {
    let mut forms = vec![trimmed(value).to_string()];
    let mut current = forms[0].clone();
    for _ in 0..MAX_DECODES {
        match percent_decoded(&current) {
            Some(d) => {
                current = trimmed(&d).to_string();
                forms.push(current.clone());
            }
            None => break,
        }
    }
    forms.iter().any(|f| form_reads_as_path(f))
}

fn form_reads_as_path(t: &str) -> bool {
    if t.is_empty() || t.chars().any(char::is_control) {
        return false;
    }
    if let Some(s) = scheme(t) {
        if s == "file" {
            return true;
        }
        if t[s.len() + 1..].starts_with("//") {
            // A URL of another scheme: an address, not a file.
            return false;
        }
    }
    if !t.chars().any(char::is_whitespace) {
        return t.starts_with(['/', '~', '$']) || t == "." || t == ".." || t.contains('/');
    }
    let mut chars = t.chars();
    let named_root =
        chars.next() == Some('/') && chars.next().is_some_and(|c| c != '/' && c != '*');
    named_root
        || ["~/", "$HOME/", "${HOME}/", "./", "../"]
            .iter()
            .any(|p| t.starts_with(p))
}

/// Whether `value`, as given, trimmed or percent-decoded, starts with `-` (an option to a
/// program that takes it on its command line).
pub fn option_like(value: &str) -> bool {
    let mut forms = vec![value.to_string(), trimmed(value).to_string()];
    if let Some(d) = percent_decoded(value) {
        forms.push(trimmed(&d).to_string());
    }
    forms.iter().any(|f| f.starts_with('-'))
}

/// The home-relative part of `value` (`~`, `~/x`, `$HOME/x`, `${HOME}`), `Ok(None)` when it
/// does not use the home directory, `Err` for `~user`.
fn home_relative(value: &str) -> Result<Option<&str>, ()> {
    for prefix in ["${HOME}", "$HOME", "~"] {
        if let Some(rest) = value.strip_prefix(prefix) {
            if rest.is_empty() || rest.starts_with('/') {
                return Ok(Some(rest.trim_start_matches('/')));
            }
            if prefix == "~" {
                // `~user/…`: another user's home, which this guard cannot see.
                return Err(());
            }
        }
    }
    Ok(None)
}

/// What a careful server would open: trimmed, a `file:` URI's path without its query or
/// fragment, percent-decoded, the home expanded.
fn canonical(value: &str, home: Option<&Path>) -> Result<String, Unreadable> {
    let mut v = trimmed(value).to_string();
    if let Some(p) = file_uri_path(&v)? {
        v = match p.find(['?', '#']) {
            Some(i) => p[..i].to_string(),
            None => p,
        };
    }
    for _ in 0..MAX_DECODES {
        match percent_decoded(&v) {
            Some(d) => v = d,
            None => break,
        }
    }
    let v = trimmed(&v).to_string();
    match (home_relative(&v), home) {
        (Ok(None), _) => Ok(v),
        (Ok(Some(rest)), Some(h)) => Ok(h.join(rest).display().to_string()),
        _ => Err(Unreadable::Home(value.to_string())),
    }
}

/// Every path a server might take `value` for: as given, trimmed, percent-decoded, as a
/// `file:` URI's path (with and without a query or fragment), and with the home directory
/// expanded (`~`, `$HOME`, `${HOME}` against `home`; the unexpanded text stays a reading
/// too, for a server that expands nothing). The first reading is the most normalised one
/// (what a careful server would open). Refused when a reading needs a home that is not
/// known, names another host, or holds a NUL byte.
pub fn readings(value: &str, home: Option<&Path>) -> Result<Vec<String>, Unreadable> {
    let mut out: Vec<String> = Vec::new();
    let mut queue = vec![value.to_string()];
    while let Some(v) = queue.pop() {
        if out.contains(&v) || out.len() >= MAX_READINGS {
            continue;
        }
        if v.contains('\0') {
            return Err(Unreadable::Nul);
        }
        let mut next = vec![trimmed(&v).to_string()];
        if let Some(d) = percent_decoded(&v) {
            next.push(d);
        }
        if let Some(p) = file_uri_path(&v)? {
            if let Some(i) = p.find(['?', '#']) {
                next.push(p[..i].to_string());
            }
            next.push(p);
        }
        match home_relative(&v) {
            Ok(None) => {}
            Ok(Some(rest)) => match home {
                Some(h) => next.push(h.join(rest).display().to_string()),
                None => return Err(Unreadable::Home(value.to_string())),
            },
            Err(()) => return Err(Unreadable::Home(value.to_string())),
        }
        out.push(v);
        queue.extend(next);
    }
    let first = canonical(value, home)?;
    out.retain(|r| r != &first);
    out.insert(0, first);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_is_not_a_path_and_a_whole_path_is() {
        for prose in [
            "Fix the bug in src/x.rs",
            "src/cli.rs: handle the empty case",
            "aem/news/SKILL.md is broken",
            "Q3/Q4 results",
            "//! Module docs\nfn main() {}",
            "/* a comment */",
            "// a comment",
            "line one\n/etc/passwd",
            "https://example.com/a/b",
            "README.md",
            "HEAD~1",
            "",
        ] {
            assert!(!reads_as_path(prose), "{prose:?}");
        }
        for path in [
            "aem/news/SKILL.md",
            "/etc/passwd",
            "  /etc/passwd\n",
            "\"/etc/passwd\"",
            "~",
            "~/x",
            "$HOME/.ssh/id_rsa",
            "${HOME}/x",
            ".",
            "..",
            "../aem",
            "./x",
            "/home/Jane Doe/proj/aem/x.md",
            "~/My Notes/x",
            "file:///etc/passwd",
            "FILE:///etc/passwd",
            "file:/etc/passwd",
            "File://localhost/etc/passwd",
            "%2e%2e%2faem",
            "%252e%252e%252faem",
            "and/or",
        ] {
            assert!(reads_as_path(path), "{path:?}");
        }
    }

    #[test]
    fn file_uris_in_every_spelling_give_their_path() {
        for uri in [
            "file:///etc/passwd",
            "FILE:///etc/passwd",
            "File:/etc/passwd",
            "file://localhost/etc/passwd",
            "file://LOCALHOST/etc/passwd",
            "file:///etc/pass%77d",
            "file:///etc/passwd?x=1",
            "file:///etc/passwd#top",
        ] {
            let r = readings(uri, None).unwrap();
            assert!(r.iter().any(|p| p == "/etc/passwd"), "{uri}: {r:?}");
        }
        assert_eq!(
            readings("file://evil.example/etc/passwd", None),
            Err(Unreadable::ForeignHost(
                "file://evil.example/etc/passwd".into()
            ))
        );
    }

    #[test]
    fn percent_decoding_reveals_dot_dot_and_slashes() {
        let r = readings("%2e%2e%2Faem%2fx", None).unwrap();
        assert!(r.contains(&"../aem/x".to_string()), "{r:?}");
        assert!(r.contains(&"%2e%2e%2Faem%2fx".to_string()), "{r:?}");
        let r = readings("%252e%252e/aem", None).unwrap();
        assert!(r.contains(&"../aem".to_string()), "{r:?}");
        // A lone `%` or a bad escape is left as it is.
        assert_eq!(readings("100%", None).unwrap(), ["100%"]);
        assert_eq!(readings("%zz", None).unwrap(), ["%zz"]);
    }

    #[test]
    fn home_is_expanded_when_known_and_refused_when_not() {
        let home = Path::new("/srv/home");
        for (value, expanded) in [
            ("~", "/srv/home/"),
            ("~/x", "/srv/home/x"),
            ("$HOME/x", "/srv/home/x"),
            ("${HOME}/x", "/srv/home/x"),
            ("file:~/x", "/srv/home/x"),
        ] {
            let r = readings(value, Some(home)).unwrap();
            assert!(
                r.iter().any(|p| Path::new(p) == Path::new(expanded)),
                "{value}: {r:?}"
            );
            // The literal reading stays (a server that expands nothing).
            assert!(r.contains(&value.to_string()), "{value}: {r:?}");
        }
        for value in ["~/x", "$HOME", "${HOME}/.ssh", " ~/x"] {
            assert!(
                matches!(readings(value, None), Err(Unreadable::Home(_))),
                "{value}"
            );
        }
        assert!(matches!(
            readings("~root/.ssh", Some(home)),
            Err(Unreadable::Home(_))
        ));
        // `$HOMEWORK` is not `$HOME`.
        assert_eq!(readings("$HOMEWORK", None).unwrap(), ["$HOMEWORK"]);
    }

    #[test]
    fn nul_bytes_are_refused_even_encoded() {
        assert_eq!(readings("a\0b", None), Err(Unreadable::Nul));
        assert_eq!(readings("a%00b", None), Err(Unreadable::Nul));
    }

    #[test]
    fn the_first_reading_is_the_most_normalised() {
        let r = readings(" file:///tmp/a%20b ", None).unwrap();
        assert_eq!(r[0], "/tmp/a b", "{r:?}");
    }

    #[test]
    fn option_like_values() {
        for v in ["-x", "--output=/tmp/x", " --all", "%2d%2dforce"] {
            assert!(option_like(v), "{v}");
        }
        for v in ["main", "x-y", "HEAD~1", "./-x"] {
            assert!(!option_like(v), "{v}");
        }
    }
}
