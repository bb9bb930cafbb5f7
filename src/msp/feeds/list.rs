//! Feed lists: one feed per line, the address (a local path relative to the list, or an
//! http(s) URL) then optional `key=value` words; the one key is `owner=<token>`. A line that
//! cannot be read as a feed is an error naming the list and the line, and so is a list with no
//! feed at all: a source that reads nothing would look like a quiet one.
//!
//! The source node checks the list of an `iron msp feeds` command when it is configured (see
//! [`list_of_command`]), so a bad list stops the source at start, with file and line, the way
//! a catalog error stops `iron catalog build`.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use super::super::MspError;

/// Where a feed is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedAddress {
    /// A file on disk.
    File(PathBuf),
    /// An `http://` or `https://` URL.
    Url(String),
}

impl std::fmt::Display for FeedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FeedAddress::File(p) => write!(f, "{}", p.display()),
            FeedAddress::Url(u) => f.write_str(u),
        }
    }
}

/// One line of a feed list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedSpec {
    /// Where it is read from.
    pub address: FeedAddress,
    /// The address as resolved (the feed's name in records and errors).
    pub name: String,
    /// Its owner, if the line names one.
    pub owner: Option<String>,
    /// The list that names it.
    pub list: PathBuf,
    /// Its line in that list (1-based).
    pub line: usize,
}

impl FeedSpec {
    /// The independence token of its items: the owner, else the feed itself.
    pub fn owner_token(&self) -> String {
        self.owner.clone().unwrap_or_else(|| self.name.clone())
    }

    /// Where it is listed: `<list>:<line>`.
    pub fn at(&self) -> String {
        format!("{}:{}", self.list.display(), self.line)
    }
}

/// The line without its comment: `#` at the start of the line or of a word (a URL may hold a
/// `#` of its own).
fn strip_comment(raw: &str) -> &str {
    let mut prev_space = true;
    for (i, c) in raw.char_indices() {
        if c == '#' && prev_space {
            return &raw[..i];
        }
        prev_space = c.is_whitespace();
    }
    raw
}

/// Reads a feed list: one feed per line, `#` starts a comment; relative paths are relative to
/// the list's own directory. A line may end with `owner=<token>` (letters, digits, `-`, `_`,
/// `.`); any other word, a second owner, an address that is neither a path nor an http(s) URL,
/// or a feed listed twice is an error naming the line. A list with no feed is an error too.
pub fn read_list(path: &Path) -> Result<Vec<FeedSpec>, MspError> {
    let text = std::fs::read_to_string(path).map_err(|source| MspError::Io {
        what: format!("feed list {}", path.display()),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut specs: Vec<FeedSpec> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = strip_comment(raw).trim();
        let mut words = line.split_whitespace();
        let Some(address) = words.next() else {
            continue;
        };
        let bad = |why: String| MspError::FeedList {
            path: path.display().to_string(),
            line: n + 1,
            why,
        };
        if address.starts_with("owner=") {
            return Err(bad(format!(
                "{address:?} comes before any address; a line is the feed's path or URL, then owner=<token>"
            )));
        }
        let mut owner = None;
        for word in words {
            match word.split_once('=') {
                Some(("owner", _)) if owner.is_some() => {
                    return Err(bad("owner is given twice".into()));
                }
                Some(("owner", token)) if valid_owner(token) => owner = Some(token.to_string()),
                Some(("owner", token)) => {
                    return Err(bad(format!(
                        "owner {token:?} is not a token; use letters, digits, '-', '_' or '.'"
                    )));
                }
                _ => {
                    return Err(bad(format!(
                        "{word:?} is not understood; after the address only owner=<token> may follow"
                    )));
                }
            }
        }
        let address = match address.split_once("://") {
            Some(("http" | "https", _)) => match reqwest::Url::parse(address) {
                Ok(url) if url.host_str().is_some_and(|h| !h.is_empty()) => {
                    FeedAddress::Url(address.to_string())
                }
                Ok(_) => return Err(bad(format!("{address:?} names no host"))),
                Err(e) => return Err(bad(format!("{address:?} is not a URL: {e}"))),
            },
            Some((scheme, _)) => {
                return Err(bad(format!(
                    "{scheme}:// is not read; a feed is a local path or an http(s) URL"
                )));
            }
            None => FeedAddress::File(base.join(address)),
        };
        let name = address.to_string();
        if let Some(first) = specs.iter().find(|s| s.name == name) {
            return Err(bad(format!(
                "{name} is listed already, at line {}",
                first.line
            )));
        }
        specs.push(FeedSpec {
            name,
            address,
            owner,
            list: path.to_path_buf(),
            line: n + 1,
        });
    }
    if specs.is_empty() {
        return Err(MspError::EmptyFeedList {
            path: path.display().to_string(),
        });
    }
    Ok(specs)
}

fn valid_owner(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 64
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The feed list a source command reads, when the command is `iron msp feeds`: its `--feeds`
/// argument, else `FEEDS` in `env` (the source's declared environment), else in this process's
/// environment (which the command inherits); relative to `base`, where the command runs.
/// `None` for any other command; an error when it is `iron msp feeds` with no list.
pub fn list_of_command(
    command: &[String],
    env: &BTreeMap<String, String>,
    base: &Path,
) -> Option<Result<PathBuf, MspError>> {
    let program = Path::new(command.first()?).file_name()?;
    if program != "iron" || command.get(1..3)? != ["msp", "feeds"] {
        return None;
    }
    let mut args = command[3..].iter();
    let mut named = None;
    while let Some(arg) = args.next() {
        if arg == "--feeds" {
            named = args.next().cloned();
        } else if let Some(value) = arg.strip_prefix("--feeds=") {
            named = Some(value.to_string());
        }
    }
    let list = named
        .or_else(|| env.get("FEEDS").cloned())
        .or_else(|| std::env::var("FEEDS").ok())
        .filter(|l| !l.trim().is_empty());
    Some(match list {
        Some(l) => Ok(base.join(l)),
        None => Err(MspError::NoFeedList),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_paths_are_relative_to_the_list() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("feeds.txt");
        std::fs::write(
            &list,
            "# official\nmin.xml\n\nhttps://x.example/rss#top owner=x-media # remote\n",
        )
        .unwrap();
        let specs = read_list(&list).unwrap();
        let addresses: Vec<&FeedAddress> = specs.iter().map(|s| &s.address).collect();
        assert_eq!(
            addresses,
            vec![
                &FeedAddress::File(dir.path().join("min.xml")),
                &FeedAddress::Url("https://x.example/rss#top".into())
            ]
        );
        assert_eq!(
            specs[0].owner_token(),
            dir.path().join("min.xml").display().to_string()
        );
        assert_eq!(specs[1].owner.as_deref(), Some("x-media"));
        assert_eq!(specs[1].at(), format!("{}:4", list.display()));
    }

    #[test]
    fn a_line_that_is_not_a_feed_is_an_error_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("feeds.txt");
        let err = |text: &str| {
            std::fs::write(&list, text).unwrap();
            read_list(&list).unwrap_err().to_string()
        };
        let at = |line: usize| format!("{}:{line}: ", list.display());
        for (text, line, why) in [
            (
                "a.xml\nb.xml owner=bad/token\n",
                2,
                "owner \"bad/token\" is not a token",
            ),
            ("a.xml onwer=x\n", 1, "\"onwer=x\" is not understood"),
            ("a.xml owner=\n", 1, "owner \"\" is not a token"),
            ("a.xml owner=a owner=b\n", 1, "owner is given twice"),
            ("# c\nowner=x\n", 2, "comes before any address"),
            ("ftp://x.example/f.xml\n", 1, "ftp:// is not read"),
            ("https://\n", 1, "is not a URL"),
            (
                "a.xml\n\na.xml owner=x\n",
                3,
                "is listed already, at line 1",
            ),
        ] {
            let e = err(text);
            assert!(e.starts_with(&at(line)) && e.contains(why), "{text:?}: {e}");
        }
        assert!(err("# nothing here\n\n").contains("lists no feed"));
    }

    #[test]
    fn the_list_of_a_feeds_command_is_found_where_the_command_looks() {
        let base = Path::new("/srv/news");
        let cmd = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let env: BTreeMap<String, String> = [("FEEDS".to_string(), "w.txt".to_string())].into();
        let found = |c: &[&str], env: &BTreeMap<String, String>| {
            list_of_command(&cmd(c), env, base).map(|r| r.map_err(|e| e.to_string()))
        };
        assert_eq!(
            found(&["iron", "msp", "feeds", "--set", "x"], &env),
            Some(Ok(base.join("w.txt")))
        );
        assert_eq!(
            found(&["/opt/iron", "msp", "feeds", "--feeds=/l.txt"], &env),
            Some(Ok(PathBuf::from("/l.txt")))
        );
        assert_eq!(found(&["python3", "feeds.py"], &env), None);
        assert_eq!(found(&["iron", "msp"], &env), None);
        if std::env::var_os("FEEDS").is_none() {
            assert!(
                found(&["iron", "msp", "feeds"], &BTreeMap::new())
                    .unwrap()
                    .unwrap_err()
                    .contains("FEEDS")
            );
        }
    }
}
