//! What a file's header in a git diff means. `git apply` acts on every line of it (a new file,
//! a deletion, its modes, a rename or copy, a binary change), so a hunk's id covers this
//! meaning ([`FileHeader::canonical`]) and a person is shown it ([`FileHeader::summary`]):
//! approving "a one-line new file" can never land a symlink or a mode change unsaid. The
//! abbreviated hashes of an `index` line are left out (their length follows git's
//! configuration); its mode is not.
//!
//! Paths are read as git writes them: C-quoted (`"caf\303\251.txt"`, `"a\"b"`) when they hold
//! unusual characters, and for a name with a space, `--- a/x y` followed by a tab. A header line
//! this module does not know is refused: what is not understood is never applied.

/// The mode of a symbolic link.
pub const SYMLINK: &str = "120000";
/// The mode of a submodule (a gitlink).
pub const GITLINK: &str = "160000";

/// Why a header is refused: what in it is not understood, in a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HeaderError(String);

impl From<&str> for HeaderError {
    fn from(why: &str) -> Self {
        Self(why.into())
    }
}

impl From<String> for HeaderError {
    fn from(why: String) -> Self {
        Self(why)
    }
}

/// A file header's meaning.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileHeader {
    /// The path before the change (`None`: a new file).
    pub old_path: Option<String>,
    /// The path after it (`None`: a deleted file).
    pub new_path: Option<String>,
    /// The mode before.
    pub old_mode: Option<String>,
    /// The mode after.
    pub new_mode: Option<String>,
    /// `Some("rename")` or `Some("copy")`: the file came from `old_path`.
    pub moved: Option<String>,
    /// `similarity index 90%` or `dissimilarity index 50%`, as written.
    pub score: Option<String>,
    /// A binary change (no lines to read).
    pub binary: bool,
}

/// Reads a C-quoted string at the start of `text` (which starts with `"`): its bytes, and the
/// rest of `text` after the closing quote.
fn unquote(text: &str) -> Result<(String, &str), HeaderError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let name = String::from_utf8(out)
                    .map_err(|_| "a quoted path that is not UTF-8".to_string())?;
                return Ok((name, &text[i + 1..]));
            }
            b'\\' => {
                let next = *bytes.get(i + 1).ok_or("a quoted path ends in `\\`")?;
                i += 2;
                out.push(match next {
                    b'a' => 7,
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 11,
                    b'f' => 12,
                    b'r' => b'\r',
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'0'..=b'3' => {
                        let digits = bytes.get(i - 1..i + 2).ok_or("a short octal escape")?;
                        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                            return Err("a bad octal escape in a quoted path".into());
                        }
                        i += 2;
                        digits.iter().fold(0u8, |n, d| (n << 3) | (d - b'0'))
                    }
                    _ => return Err("an unknown escape in a quoted path".into()),
                });
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Err("a quoted path without its closing quote".into())
}

/// A path as git writes it (quoted or not) without its `prefix` (`a/`, `b/`); `None` for
/// `/dev/null`.
fn name(text: &str, prefix: &str) -> Result<Option<String>, HeaderError> {
    let raw = if text.starts_with('"') {
        let (name, rest) = unquote(text)?;
        if !rest.trim_end_matches('\t').is_empty() {
            return Err("text after a quoted path".into());
        }
        name
    } else {
        // Git ends `---`/`+++` names holding a space with a tab.
        let t = text.strip_suffix('\t').unwrap_or(text);
        if t == "/dev/null" {
            return Ok(None);
        }
        t.to_string()
    };
    raw.strip_prefix(prefix)
        .map(|p| Some(p.to_string()))
        .ok_or_else(|| format!("a path without its `{prefix}` prefix").into())
}

/// The two paths of a `diff --git` line (after `diff --git `). Unquoted, both are the same
/// path (`a/P b/P`, P may hold spaces); quoted, each is read as one string. `None` when the
/// line alone cannot say (an unquoted rename with spaces): the other header lines name them.
fn git_names(rest: &str) -> Result<Option<(String, String)>, HeaderError> {
    if rest.starts_with('"') {
        let (a, tail) = unquote(rest)?;
        let tail = tail
            .strip_prefix(' ')
            .ok_or("two paths without a space between")?;
        let b = name(tail, "b/")?.ok_or("`/dev/null` on a `diff --git` line")?;
        let a = a
            .strip_prefix("a/")
            .ok_or("a path without its `a/` prefix")?;
        return Ok(Some((a.to_string(), b)));
    }
    if rest.ends_with('"')
        && let Some(at) = rest.find(" \"b/")
    {
        let a = name(&rest[..at], "a/")?.ok_or("`/dev/null` on a `diff --git` line")?;
        let b = name(&rest[at + 1..], "b/")?.ok_or("`/dev/null` on a `diff --git` line")?;
        return Ok(Some((a, b)));
    }
    // `a/P b/P`: P is as long as half of what is left after the prefixes and the space.
    if rest.len() >= 5 && rest.len() % 2 == 1 {
        let half = (rest.len() - 5) / 2;
        if rest.is_char_boundary(2 + half) && rest.is_char_boundary(2 + half + 3) {
            let (a, b) = (&rest[2..2 + half], &rest[2 + half + 3..]);
            if rest.starts_with("a/") && &rest[2 + half..2 + half + 3] == " b/" && a == b {
                return Ok(Some((a.to_string(), b.to_string())));
            }
        }
    }
    match rest.match_indices(" b/").count() {
        1 => {
            let (a, b) = rest.split_once(" b/").unwrap_or_default();
            let a = a
                .strip_prefix("a/")
                .ok_or("a path without its `a/` prefix")?;
            Ok(Some((a.to_string(), b.to_string())))
        }
        _ => Ok(None),
    }
}

fn mode(text: &str) -> Result<String, HeaderError> {
    if text.len() == 6 && text.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        Ok(text.to_string())
    } else {
        Err(format!("{text:?} is not a file mode").into())
    }
}

impl FileHeader {
    /// Reads the header `lines` of one file (the first is its `diff --git` line).
    pub fn read(lines: &[String]) -> Result<FileHeader, HeaderError> {
        let first = lines.first().ok_or("a file without a header")?;
        let rest = first
            .strip_prefix("diff --git ")
            .ok_or("a header that does not start with `diff --git`")?;
        let names = git_names(rest)?;
        let mut h = FileHeader::default();
        let (mut added, mut deleted) = (false, false);
        let (mut minus, mut plus) = (None, None);
        let (mut from, mut to) = (None, None);
        let mut index_mode = None;
        for line in &lines[1..] {
            if let Some(m) = line.strip_prefix("old mode ") {
                h.old_mode = Some(mode(m)?);
            } else if let Some(m) = line.strip_prefix("new mode ") {
                h.new_mode = Some(mode(m)?);
            } else if let Some(m) = line.strip_prefix("deleted file mode ") {
                deleted = true;
                h.old_mode = Some(mode(m)?);
            } else if let Some(m) = line.strip_prefix("new file mode ") {
                added = true;
                h.new_mode = Some(mode(m)?);
            } else if let Some(p) = line.strip_prefix("rename from ") {
                h.moved = Some("rename".into());
                from = name(p, "")?;
            } else if let Some(p) = line.strip_prefix("rename to ") {
                to = name(p, "")?;
            } else if let Some(p) = line.strip_prefix("copy from ") {
                h.moved = Some("copy".into());
                from = name(p, "")?;
            } else if let Some(p) = line.strip_prefix("copy to ") {
                to = name(p, "")?;
            } else if line.starts_with("similarity index ")
                || line.starts_with("dissimilarity index ")
            {
                h.score = Some(line.clone());
            } else if let Some(i) = line.strip_prefix("index ") {
                let (hashes, m) = i.split_once(' ').unwrap_or((i, ""));
                let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
                if !hashes
                    .split_once("..")
                    .is_some_and(|(a, b)| hex(a) && hex(b))
                {
                    return Err("an `index` line without two hashes".into());
                }
                if !m.is_empty() {
                    index_mode = Some(mode(m)?);
                }
            } else if let Some(p) = line.strip_prefix("--- ") {
                minus = Some(name(p, "a/")?);
            } else if let Some(p) = line.strip_prefix("+++ ") {
                plus = Some(name(p, "b/")?);
            } else if (line.starts_with("Binary files ") && line.ends_with(" differ"))
                || line == "GIT binary patch"
            {
                h.binary = true;
            } else {
                return Err(format!("a header line git does not write: {line:?}").into());
            }
        }
        if added && deleted {
            return Err("a file both new and deleted".into());
        }
        let (a, b) = match names {
            Some((a, b)) => (Some(a), Some(b)),
            None => (None, None),
        };
        h.old_path = from.or_else(|| minus.clone().flatten()).or(a);
        h.new_path = to.or_else(|| plus.clone().flatten()).or(b);
        for (said, path, null) in [(&minus, &h.old_path, added), (&plus, &h.new_path, deleted)] {
            match said {
                Some(None) if !null => return Err("`/dev/null` for a file that exists".into()),
                Some(Some(p)) if Some(p) != path.as_ref() => {
                    return Err("the header names two different files".into());
                }
                _ => {}
            }
        }
        if h.moved.is_none() && h.old_path != h.new_path {
            return Err("the header names two different files".into());
        }
        if h.old_path.is_none() || h.new_path.is_none() {
            return Err("a header whose paths cannot be read".into());
        }
        if added {
            h.old_path = None;
            h.old_mode = None;
        } else if deleted {
            h.new_path = None;
            h.new_mode = None;
        } else if h.old_mode.is_none() && h.new_mode.is_none() {
            h.old_mode = index_mode.clone();
            h.new_mode = index_mode;
        }
        Ok(h)
    }

    /// The path the change is shown under: after it, or before it for a deletion.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }

    /// Every path the change touches.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.old_path
            .iter()
            .chain(&self.new_path)
            .map(String::as_str)
    }

    /// Whether the change touches a submodule.
    pub fn gitlink(&self) -> bool {
        self.old_mode.as_deref() == Some(GITLINK) || self.new_mode.as_deref() == Some(GITLINK)
    }

    /// The meaning, in a fixed text form a hunk's id digests.
    pub fn canonical(&self) -> String {
        let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        format!(
            "old {}\0new {}\0old-mode {}\0new-mode {}\0moved {}\0score {}\0binary {}",
            o(&self.old_path),
            o(&self.new_path),
            o(&self.old_mode),
            o(&self.new_mode),
            o(&self.moved),
            o(&self.score),
            self.binary
        )
    }

    /// The meaning for a person: empty for a text file of mode 100644 changed in place;
    /// else e.g. `new file, mode 100755`, `new symlink`, `mode 100644 → 100755`,
    /// `rename from a to b (similarity index 90%)`, `binary`. Paths are as stored: pass the
    /// result through [`super::display::shown`].
    pub fn summary(&self) -> String {
        let kind = |m: &Option<String>| match m.as_deref() {
            Some(SYMLINK) => "symlink",
            Some(GITLINK) => "submodule",
            _ => "file",
        };
        let o = |v: &Option<String>| v.clone().unwrap_or_default();
        let mut parts = Vec::new();
        match (&self.old_path, &self.new_path) {
            (None, _) => parts.push(format!(
                "new {}, mode {}",
                kind(&self.new_mode),
                o(&self.new_mode)
            )),
            (_, None) => parts.push(format!(
                "deleted {}, mode {}",
                kind(&self.old_mode),
                o(&self.old_mode)
            )),
            (Some(old), Some(new)) => {
                if let Some(how) = &self.moved {
                    let score = self.score.as_ref().map(|s| format!(" ({s})"));
                    parts.push(format!(
                        "{how} from {old} to {new}{}",
                        score.unwrap_or_default()
                    ));
                }
                if self.old_mode != self.new_mode {
                    let (was, is) = (kind(&self.old_mode), kind(&self.new_mode));
                    let becomes = if was == is {
                        String::new()
                    } else {
                        format!(": a {was} becomes a {is}")
                    };
                    parts.push(format!(
                        "mode {} → {}{becomes}",
                        o(&self.old_mode),
                        o(&self.new_mode)
                    ));
                } else if let Some(m) = self.new_mode.as_deref()
                    && m != "100644"
                {
                    parts.push(format!("{}, mode {m}", kind(&self.new_mode)));
                }
            }
        }
        if self.binary {
            parts.push("binary".into());
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<FileHeader, HeaderError> {
        FileHeader::read(&text.lines().map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn quoted_spaced_and_non_ascii_paths_are_read() {
        for (header, path) in [
            (
                "diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"\nindex 1..2 100644\n--- \"a/caf\\303\\251.txt\"\n+++ \"b/caf\\303\\251.txt\"",
                "café.txt",
            ),
            (
                "diff --git a/café.txt b/café.txt\nnew file mode 100644\nindex 0..2\n--- /dev/null\n+++ b/café.txt",
                "café.txt",
            ),
            (
                "diff --git a/a b.txt b/a b.txt\nindex 1..2 100644\n--- a/a b.txt\t\n+++ b/a b.txt\t",
                "a b.txt",
            ),
            (
                "diff --git \"a/q\\\"uo\\\\te\" \"b/q\\\"uo\\\\te\"\nold mode 100644\nnew mode 100755",
                "q\"uo\\te",
            ),
            (
                "diff --git \"a/e\\033[31mvil\" \"b/e\\033[31mvil\"\nindex 1..2 100644",
                "e\x1b[31mvil",
            ),
        ] {
            let h = read(header).unwrap_or_else(|e| panic!("{header}: {e}"));
            assert_eq!(h.path(), path, "{header}");
        }
    }

    #[test]
    fn the_meaning_of_a_header_is_summarised() {
        for (header, summary) in [
            (
                "diff --git a/x b/x\nnew file mode 100755\nindex 0..1\n--- /dev/null\n+++ b/x",
                "new file, mode 100755",
            ),
            (
                "diff --git a/l b/l\nnew file mode 120000\nindex 0..1\n--- /dev/null\n+++ b/l",
                "new symlink, mode 120000",
            ),
            (
                "diff --git a/l b/l\nindex 1..2 120000\n--- a/l\n+++ b/l",
                "symlink, mode 120000",
            ),
            (
                "diff --git a/x b/x\nold mode 100644\nnew mode 100755",
                "mode 100644 → 100755",
            ),
            (
                "diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\nindex 1..2 100644\n--- a/x\n+++ b/y",
                "rename from x to y (similarity index 90%)",
            ),
            (
                "diff --git a/x b/x\ndeleted file mode 100644\nindex 1..0\n--- a/x\n+++ /dev/null",
                "deleted file, mode 100644",
            ),
            (
                "diff --git a/p.png b/p.png\nindex 1..2 100644\nBinary files a/p.png and b/p.png differ",
                "binary",
            ),
            (
                "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x",
                "",
            ),
        ] {
            assert_eq!(read(header).unwrap().summary(), summary, "{header}");
        }
    }

    #[test]
    fn headers_that_do_not_add_up_are_refused() {
        for header in [
            "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/y",
            "diff --git a/x b/x\nsomething new\n--- a/x\n+++ b/x",
            "diff --git a/x b/x\nnew file mode 100644\ndeleted file mode 100644",
            "diff --git a/x b/x\nold mode 12\nnew mode 100755",
            "diff --git a/x b/x\nindex 1..2 100644\n--- /dev/null\n+++ b/x",
            "diff --git \"a/x b/x\n",
            "diff --git \"a/\\377\" \"b/\\377\"\n",
        ] {
            assert!(read(header).is_err(), "{header}");
        }
    }
}
