//! Changes as hunks a person approves one at a time: a unified diff (see
//! [`super::scratch::Scratch::diff`]) split into files and hunks, each hunk named by a digest
//! of its file header's meaning ([`FileHeader`]: new, deleted, modes, symlink, rename, binary)
//! and its content; a patch made of the approved hunks only; and applying it to the
//! real tree with `git apply`, after checking that every approved hunk still applies. A hunk
//! that no longer applies is reported and nothing is applied: never forced, never half-done.
//!
//! A change to the governance of the tree (anything under `aem/`, `config/` or `.git/`, and any
//! `AEM.md`, `SKILL.md` or `capabilities.md`) is marked and can never be approved, and a change
//! that has no hunks to read (a binary file, a mode change, an empty file) or that touches a
//! submodule is reported as such and can never be approved: a hunk is the unit a person
//! approves, and a change with no lines would be approved without anything to read (fail
//! closed; the scratch keeps it for a person to take by hand).
//!
//! Lines are split on `\n` only: a `\r` stays in its line, as stored and as applied (shown
//! escaped, see [`super::display`]).

use std::collections::BTreeSet;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::display::shown;
use super::header::FileHeader;
use super::scratch::{ScratchError, git_with_input};

/// Top-level directories of a tree whose changes are governance.
const GOVERNANCE_DIRS: &[&str] = &["aem", "config", ".git"];
/// File names that are governance wherever they are.
const GOVERNANCE_FILES: &[&str] = &["AEM.md", "SKILL.md", "capabilities.md"];

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path it has after the change (before it, for a deletion), relative to the tree.
    pub path: String,
    /// Its header lines (`diff --git`, `new file mode`, `index`, `---`, `+++`), as written.
    pub header: Vec<String>,
    /// What they mean.
    pub meaning: FileHeader,
    /// Its hunks, in order.
    pub hunks: Vec<Hunk>,
    /// A change without hunks to approve (a binary file, a mode change, a submodule): why it
    /// cannot be reviewed here.
    pub unreadable: Option<String>,
}

/// One hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 16 hex digits of SHA-256 over its file header's meaning, its `@@` line and its lines
    /// ([`hunk_id`]).
    pub id: String,
    /// Its file's path.
    pub path: String,
    /// The `@@ -a,b +c,d @@` line.
    pub range: String,
    /// Its lines (each starting with ` `, `+`, `-` or `\`).
    pub lines: Vec<String>,
    /// Whether it changes governance (never approvable).
    pub governance: bool,
    /// Its file header's meaning.
    pub meaning: FileHeader,
}

impl Hunk {
    /// Lines added and removed.
    pub fn counts(&self) -> (usize, usize) {
        let added = self.lines.iter().filter(|l| l.starts_with('+')).count();
        let removed = self.lines.iter().filter(|l| l.starts_with('-')).count();
        (added, removed)
    }
}

/// Why a diff could not be read or a patch applied.
#[derive(Debug, thiserror::Error)]
pub enum HunkError {
    /// The diff is not a unified git diff.
    #[error("line {line} of the diff: {why}")]
    Malformed {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// An approved id names no hunk of the change.
    #[error("no hunk {0} in this change")]
    Unknown(String),
    /// A governance hunk was approved.
    #[error(
        "hunk {id} changes {}, which is governance and is never applied from a scratch",
        shown(path)
    )]
    Governance {
        /// The hunk.
        id: String,
        /// Its file.
        path: String,
    },
    /// Approved hunks that no longer apply to the target; nothing was applied.
    #[error("{} no longer appl{} to {}; nothing was applied", ids.join(", "), if ids.len() == 1 { "ies" } else { "y" }, target)]
    Stale {
        /// The hunks.
        ids: Vec<String>,
        /// The target tree.
        target: String,
    },
    /// `git apply` failed.
    #[error(transparent)]
    Git(#[from] ScratchError),
}

/// Whether `path` (relative, `/`-separated) is governance.
pub fn is_governance(path: &str) -> bool {
    let mut parts = path.split('/');
    let first = parts.next().unwrap_or("");
    GOVERNANCE_DIRS.contains(&first)
        || path.split('/').any(|p| p == ".git")
        || GOVERNANCE_FILES.contains(&path.rsplit('/').next().unwrap_or(""))
}

/// Whether any path `meaning` touches is governance.
pub fn touches_governance(meaning: &FileHeader) -> bool {
    meaning.paths().any(is_governance)
}

/// The id of a hunk: 16 hex digits of SHA-256 over its file header's meaning, its `@@` line
/// and its lines. A symlink, a mode or a rename changes it as a line does.
pub fn hunk_id(meaning: &FileHeader, range: &str, lines: &[String]) -> String {
    let mut h = Sha256::new();
    h.update(meaning.canonical().as_bytes());
    h.update([0]);
    h.update(range.as_bytes());
    for l in lines {
        h.update([b'\n']);
        h.update(l.as_bytes());
    }
    hex::encode(&h.finalize()[..8])
}

/// Splits a unified git diff into file changes and hunks. A header git would not write, or
/// one whose lines do not add up, is refused: what is not understood is never proposed.
pub fn parse(diff: &str) -> Result<Vec<FileChange>, HunkError> {
    let mut files: Vec<(usize, FileChange)> = Vec::new();
    let malformed = |line: usize, why: &str| HunkError::Malformed {
        line,
        why: why.to_string(),
    };
    let body = diff.strip_suffix('\n').unwrap_or(diff);
    if body.is_empty() {
        return Ok(Vec::new());
    }
    for (i, line) in body.split('\n').enumerate() {
        let n = i + 1;
        if line.starts_with("diff --git ") {
            files.push((
                n,
                FileChange {
                    path: String::new(),
                    header: vec![line.to_string()],
                    meaning: FileHeader::default(),
                    hunks: Vec::new(),
                    unreadable: None,
                },
            ));
            continue;
        }
        let (_, file) = files
            .last_mut()
            .ok_or_else(|| malformed(n, "text before the first `diff --git`"))?;
        if line.starts_with("@@ ") {
            file.hunks.push(Hunk {
                id: String::new(),
                path: String::new(),
                range: line.to_string(),
                lines: Vec::new(),
                governance: false,
                meaning: FileHeader::default(),
            });
        } else if let Some(hunk) = file.hunks.last_mut() {
            if !line.starts_with([' ', '+', '-', '\\']) && !line.is_empty() {
                return Err(malformed(n, "a hunk line that is not context, +, - or \\"));
            }
            hunk.lines.push(line.to_string());
        } else {
            file.header.push(line.to_string());
        }
    }
    let mut out = Vec::with_capacity(files.len());
    for (n, mut file) in files {
        let meaning =
            FileHeader::read(&file.header).map_err(|why| malformed(n, &why.to_string()))?;
        file.path = meaning.path().to_string();
        file.unreadable = if meaning.binary {
            Some("a binary file".to_string())
        } else if meaning.gitlink() {
            Some("a submodule (never applied from a scratch)".to_string())
        } else if file.hunks.is_empty() {
            let summary = meaning.summary();
            Some(format!(
                "no lines changed ({})",
                if summary.is_empty() {
                    "an empty file"
                } else {
                    &summary
                }
            ))
        } else {
            None
        };
        if file.unreadable.is_some() {
            file.hunks.clear();
        }
        let governance = touches_governance(&meaning);
        for hunk in &mut file.hunks {
            hunk.path = file.path.clone();
            hunk.governance = governance;
            hunk.id = hunk_id(&meaning, &hunk.range, &hunk.lines);
            hunk.meaning = meaning.clone();
        }
        file.meaning = meaning;
        out.push(file);
    }
    Ok(out)
}

/// The one hunk that `header`, `range` and `lines` (as a proposal on the log carries them) make
/// when written as a patch and read back, as [`parse`] reads a diff: refused unless it is one
/// file with one hunk made of exactly these lines. A line holding a newline, or a hunk line
/// that is a header (`diff --git a/aem/…`), would otherwise apply something not reviewed.
pub fn reread(header: &[String], range: &str, lines: &[String]) -> Result<Hunk, HunkError> {
    let mut text = String::new();
    for line in header
        .iter()
        .map(String::as_str)
        .chain([range])
        .chain(lines.iter().map(String::as_str))
    {
        text.push_str(line);
        text.push('\n');
    }
    let mut files = parse(&text)?;
    let refused = |why: &str| HunkError::Malformed {
        line: 1,
        why: why.to_string(),
    };
    match files.as_mut_slice() {
        [file] if file.header == header && file.hunks.len() == 1 => {
            let hunk = file.hunks.remove(0);
            if hunk.range == range && hunk.lines == lines {
                Ok(hunk)
            } else {
                Err(refused("its lines do not read back as one hunk"))
            }
        }
        _ => Err(refused("it does not read back as one file with one hunk")),
    }
}

/// Why a file whose diff is not UTF-8 is not reviewed here.
pub const NOT_UTF8: &str =
    "its diff is not UTF-8 (a text in another encoding, or a name that is not UTF-8)";

/// [`parse`] of a diff as git wrote it: each file whose part of the diff is not UTF-8 (a
/// Latin-1 text, a name that is not UTF-8) becomes a change without hunks that says so
/// ([`NOT_UTF8`]), and the others are read as ever. A file's part starts at a line starting
/// with `diff --git `, which no line of a hunk can (each starts with ` `, `+`, `-` or `\`).
pub fn parse_bytes(diff: &[u8]) -> Result<Vec<FileChange>, HunkError> {
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in diff.split_inclusive(|b| *b == b'\n') {
        if line.starts_with(b"diff --git ") {
            starts.push(at);
        }
        at += line.len();
    }
    if starts.first().is_some_and(|first| *first > 0) || (starts.is_empty() && !diff.is_empty()) {
        // Text before the first file: said by `parse` with its line.
        return parse(&String::from_utf8_lossy(diff));
    }
    let mut files = Vec::new();
    let mut line = 0;
    for (i, start) in starts.iter().enumerate() {
        let part = &diff[*start..starts.get(i + 1).copied().unwrap_or(diff.len())];
        match std::str::from_utf8(part) {
            Ok(text) => files.extend(parse(text).map_err(|e| match e {
                HunkError::Malformed { line: n, why } => HunkError::Malformed {
                    line: line + n,
                    why,
                },
                other => other,
            })?),
            Err(_) => {
                let first = part.split(|b| *b == b'\n').next().unwrap_or_default();
                let first = String::from_utf8_lossy(first).into_owned();
                let path = FileHeader::read(std::slice::from_ref(&first))
                    .map(|m| m.path().to_string())
                    .unwrap_or_else(|_| first.trim_start_matches("diff --git ").to_string());
                files.push(FileChange {
                    path,
                    header: Vec::new(),
                    meaning: FileHeader::default(),
                    hunks: Vec::new(),
                    unreadable: Some(NOT_UTF8.to_string()),
                });
            }
        }
        line += part.iter().filter(|b| **b == b'\n').count();
    }
    Ok(files)
}

/// A patch holding only the hunks of `files` whose ids are in `approved` (each with its
/// file's header). Refuses an id that names no hunk and any governance hunk.
pub fn patch_of(files: &[FileChange], approved: &BTreeSet<String>) -> Result<String, HunkError> {
    let known: BTreeSet<&str> = files
        .iter()
        .flat_map(|f| f.hunks.iter().map(|h| h.id.as_str()))
        .collect();
    if let Some(id) = approved.iter().find(|id| !known.contains(id.as_str())) {
        return Err(HunkError::Unknown(id.clone()));
    }
    let mut patch = String::new();
    for file in files {
        let chosen: Vec<&Hunk> = file
            .hunks
            .iter()
            .filter(|h| approved.contains(&h.id))
            .collect();
        if chosen.is_empty() {
            continue;
        }
        if let Some(h) = chosen.iter().find(|h| h.governance) {
            return Err(HunkError::Governance {
                id: h.id.clone(),
                path: h.path.clone(),
            });
        }
        for line in &file.header {
            patch.push_str(line);
            patch.push('\n');
        }
        for hunk in chosen {
            patch.push_str(&hunk.range);
            patch.push('\n');
            for line in &hunk.lines {
                patch.push_str(line);
                patch.push('\n');
            }
        }
    }
    Ok(patch)
}

/// Applies the approved hunks of `files` to the tree `target` (a git repository or a plain
/// directory). First every approved hunk is checked on its own and all of them together; if
/// any no longer applies, nothing is applied and they are named.
pub async fn apply(
    target: &Path,
    files: &[FileChange],
    approved: &BTreeSet<String>,
) -> Result<(), HunkError> {
    let patch = patch_of(files, approved)?;
    if patch.is_empty() {
        return Ok(());
    }
    let check = |patch: String| async move {
        git_with_input(target, &["apply", "--check", "-"], Some(&patch))
            .await
            .is_ok()
    };
    if !check(patch.clone()).await {
        let mut stale = Vec::new();
        for id in approved {
            let one = patch_of(files, &BTreeSet::from([id.clone()]))?;
            if !check(one).await {
                stale.push(id.clone());
            }
        }
        if stale.is_empty() {
            // Each applies alone but not together: name them all.
            stale = approved.iter().cloned().collect();
        }
        return Err(HunkError::Stale {
            ids: stale,
            target: target.display().to_string(),
        });
    }
    git_with_input(target, &["apply", "-"], Some(&patch)).await?;
    Ok(())
}

/// Whether the approved hunks of `files` are in the tree `target` now (their patch reverses
/// cleanly): an observation of an apply, not an assumption.
pub async fn are_applied(target: &Path, files: &[FileChange], approved: &BTreeSet<String>) -> bool {
    match patch_of(files, approved) {
        Ok(patch) if !patch.is_empty() => git_with_input(
            target,
            &["apply", "--reverse", "--check", "-"],
            Some(&patch),
        )
        .await
        .is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/main.rs b/src/main.rs
index 1111111..2222222 100644
--- a/src/main.rs
+++ b/src/main.rs
@@ -1,3 +1,4 @@
 fn main() {
+    let json = false;
     run();
 }
@@ -10,2 +11,2 @@ fn run() {
-    println!(\"a\");
+    println!(\"b\");
 }
diff --git a/aem/dev/AEM.md b/aem/dev/AEM.md
index 3333333..4444444 100644
--- a/aem/dev/AEM.md
+++ b/aem/dev/AEM.md
@@ -1 +1 @@
-status: active
+status: parked
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..5555555
Binary files /dev/null and b/logo.png differ
";

    #[test]
    fn a_diff_splits_into_files_and_hunks_with_stable_ids() {
        let files = parse(DIFF).unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].path, "src/main.rs");
        assert_eq!(files[0].hunks.len(), 2);
        assert_eq!(files[0].hunks[0].counts(), (1, 0));
        assert_eq!(files[0].hunks[1].counts(), (1, 1));
        assert!(!files[0].hunks[0].governance);
        assert!(files[1].hunks[0].governance);
        assert_eq!(files[2].unreadable.as_deref(), Some("a binary file"));
        assert!(files[2].hunks.is_empty());
        assert_eq!(
            parse(DIFF).unwrap(),
            files,
            "ids are digests, the same every time"
        );
        assert_ne!(files[0].hunks[0].id, files[0].hunks[1].id);
    }

    #[test]
    fn a_patch_holds_only_approved_hunks_and_never_governance() {
        let files = parse(DIFF).unwrap();
        let second = files[0].hunks[1].id.clone();
        let patch = patch_of(&files, &BTreeSet::from([second])).unwrap();
        assert!(patch.starts_with("diff --git a/src/main.rs"));
        assert!(patch.contains("println!(\"b\")"));
        assert!(!patch.contains("let json"));
        assert!(!patch.contains("AEM.md"));
        let governance = files[1].hunks[0].id.clone();
        assert!(matches!(
            patch_of(&files, &BTreeSet::from([governance])),
            Err(HunkError::Governance { .. })
        ));
        assert!(matches!(
            patch_of(&files, &BTreeSet::from(["nope".to_string()])),
            Err(HunkError::Unknown(_))
        ));
        assert!(parse("hello\n").is_err());
    }

    #[test]
    fn governance_paths() {
        for p in [
            "aem/x/SKILL.md",
            "config/iron.yaml",
            ".git/config",
            "a/.git/x",
            "x/capabilities.md",
        ] {
            assert!(is_governance(p), "{p}");
        }
        for p in ["src/aem.rs", "docs/config.md", "README.md"] {
            assert!(!is_governance(p), "{p}");
        }
    }

    /// A one-line new file, as git writes it with `mode`, and the `+` line it adds.
    fn new_file(mode: &str, line: &str) -> String {
        format!(
            "diff --git a/run b/run\nnew file mode {mode}\nindex 0000000..1111111\n--- /dev/null\n+++ b/run\n@@ -0,0 +1 @@\n+{line}\n"
        )
    }

    #[test]
    fn a_hunk_id_changes_when_a_new_file_becomes_a_symlink() {
        let file = &parse(&new_file("100644", "/etc/passwd")).unwrap()[0];
        let link = &parse(&new_file("120000", "/etc/passwd")).unwrap()[0];
        assert_eq!(file.hunks[0].lines, link.hunks[0].lines);
        assert_ne!(file.hunks[0].id, link.hunks[0].id);
        assert_eq!(link.hunks[0].meaning.summary(), "new symlink, mode 120000");
        let exe = &parse(&new_file("100755", "/etc/passwd")).unwrap()[0];
        assert_ne!(file.hunks[0].id, exe.hunks[0].id);
        assert_eq!(exe.hunks[0].meaning.summary(), "new file, mode 100755");
        // Abbreviated hashes are not part of the meaning; the mode of `index` is.
        let longer =
            new_file("100644", "/etc/passwd").replace("0000000..1111111", "00000000..11111111");
        assert_eq!(parse(&longer).unwrap()[0].hunks[0].id, file.hunks[0].id);
    }

    #[test]
    fn a_mode_change_is_shown_and_part_of_the_id() {
        let plain = "diff --git a/x.sh b/x.sh\nindex 1..2 100644\n--- a/x.sh\n+++ b/x.sh\n@@ -1 +1 @@\n-a\n+b\n";
        let moded = "diff --git a/x.sh b/x.sh\nold mode 100644\nnew mode 100755\nindex 1..2\n--- a/x.sh\n+++ b/x.sh\n@@ -1 +1 @@\n-a\n+b\n";
        let symlink = plain.replace("100644", "120000");
        let (a, b, c) = (
            &parse(plain).unwrap()[0].hunks[0],
            &parse(moded).unwrap()[0].hunks[0],
            &parse(&symlink).unwrap()[0].hunks[0],
        );
        assert_ne!(a.id, b.id);
        assert_ne!(a.id, c.id);
        assert_eq!(b.meaning.summary(), "mode 100644 → 100755");
        assert_eq!(c.meaning.summary(), "symlink, mode 120000");
        // A mode change alone has no line to approve: shown, never approvable.
        let alone =
            &parse("diff --git a/x.sh b/x.sh\nold mode 100644\nnew mode 100755\n").unwrap()[0];
        assert!(alone.hunks.is_empty());
        assert_eq!(
            alone.unreadable.as_deref(),
            Some("no lines changed (mode 100644 → 100755)")
        );
    }

    #[test]
    fn a_carriage_return_stays_in_its_line_and_in_the_patch() {
        let diff = "diff --git a/w.txt b/w.txt\nindex 1..2 100644\n--- a/w.txt\n+++ b/w.txt\n@@ -1 +1,2 @@\n-a\r\n+evil();\r+ok();\r\n+b\r\n";
        let files = parse(diff).unwrap();
        let hunk = &files[0].hunks[0];
        assert_eq!(hunk.lines, ["-a\r", "+evil();\r+ok();\r", "+b\r"]);
        let patch = patch_of(&files, &BTreeSet::from([hunk.id.clone()])).unwrap();
        assert!(
            patch.ends_with("-a\r\n+evil();\r+ok();\r\n+b\r\n"),
            "{patch:?}"
        );
    }

    #[test]
    fn a_header_git_does_not_write_is_refused() {
        for diff in [
            "diff --git a/x b/x\nindex 1..2 100644\nfrom: elsewhere\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
            "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/aem/dev/AEM.md\n@@ -1 +1 @@\n-a\n+b\n",
            "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\nnot a hunk line\n",
        ] {
            assert!(
                matches!(parse(diff), Err(HunkError::Malformed { .. })),
                "{diff}"
            );
        }
    }

    #[test]
    fn a_rename_into_governance_is_governance_and_a_submodule_is_never_approvable() {
        let rename = "diff --git a/notes.md b/aem/dev/SKILL.md\nsimilarity index 90%\nrename from notes.md\nrename to aem/dev/SKILL.md\nindex 1..2 100644\n--- a/notes.md\n+++ b/aem/dev/SKILL.md\n@@ -1 +1 @@\n-a\n+b\n";
        let hunk = &parse(rename).unwrap()[0].hunks[0];
        assert!(hunk.governance);
        assert_eq!(
            hunk.meaning.summary(),
            "rename from notes.md to aem/dev/SKILL.md (similarity index 90%)"
        );
        let out_of_governance = rename.replace("aem/dev/SKILL.md", "docs/x.md");
        let out = out_of_governance.replace("notes.md", "aem/dev/AEM.md");
        assert!(parse(&out).unwrap()[0].hunks[0].governance);
        let sub = "diff --git a/lib b/lib\nnew file mode 160000\nindex 0..1\n--- /dev/null\n+++ b/lib\n@@ -0,0 +1 @@\n+Subproject commit 1111111111111111111111111111111111111111\n";
        let files = parse(sub).unwrap();
        assert!(files[0].hunks.is_empty());
        assert!(
            files[0]
                .unreadable
                .as_deref()
                .unwrap()
                .contains("submodule")
        );
    }

    #[test]
    fn a_file_that_is_not_utf8_is_unreadable_and_the_others_are_read() {
        let mut diff = DIFF.as_bytes().to_vec();
        diff.extend_from_slice(
            b"diff --git a/l1.txt b/l1.txt\nindex 1..2 100644\n--- a/l1.txt\n+++ b/l1.txt\n@@ -1 +1 @@\n-caf\xe9\n+th\xe9\n",
        );
        diff.extend_from_slice(
            b"diff --git a/caf\xe9 b/caf\xe9\nnew file mode 100644\nindex 0..2\n--- /dev/null\n+++ b/caf\xe9\n@@ -0,0 +1 @@\n+x\n",
        );
        diff.extend_from_slice(b"diff --git a/z.txt b/z.txt\nindex 1..2 100644\n--- a/z.txt\n+++ b/z.txt\n@@ -1 +1 @@\n-a\n+b\n");
        let files = parse_bytes(&diff).unwrap();
        assert_eq!(files.len(), 6);
        assert_eq!(files[..3], parse(DIFF).unwrap()[..]);
        assert_eq!(files[3].path, "l1.txt");
        assert_eq!(files[4].path, "caf\u{fffd}");
        for f in &files[3..5] {
            assert_eq!(f.unreadable.as_deref(), Some(NOT_UTF8));
            assert!(f.hunks.is_empty() && f.header.is_empty());
        }
        assert_eq!(files[5].hunks.len(), 1);
        assert_eq!(parse_bytes(b"").unwrap(), []);
        assert!(matches!(
            parse_bytes(b"junk\ndiff --git a/x b/x\n"),
            Err(HunkError::Malformed { line: 1, .. })
        ));
        let bad = b"diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\nnot a hunk line\n";
        let mut two = DIFF.as_bytes().to_vec();
        two.extend_from_slice(bad);
        let at = DIFF.lines().count() + 7;
        assert!(matches!(parse_bytes(&two), Err(HunkError::Malformed { line, .. }) if line == at));
    }
}
