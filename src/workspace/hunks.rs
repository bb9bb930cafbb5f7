//! Changes as hunks a person approves one at a time: a unified diff (see
//! [`super::scratch::Scratch::diff`]) split into files and hunks, each hunk named by a digest
//! of its file and content; a patch made of the approved hunks only; and applying it to the
//! real tree with `git apply`, after checking that every approved hunk still applies. A hunk
//! that no longer applies is reported and nothing is applied: never forced, never half-done.
//!
//! A change to the governance of the tree (anything under `aem/`, `config/` or `.git/`, and any
//! `AEM.md`, `SKILL.md` or `capabilities.md`) is marked and can never be approved, and a change
//! that has no hunks to read (a binary file, a mode change) is reported as such.

use std::collections::BTreeSet;
use std::path::Path;

use sha2::{Digest, Sha256};

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
    /// Its header lines (`diff --git`, `new file mode`, `index`, `---`, `+++`).
    pub header: Vec<String>,
    /// Its hunks, in order.
    pub hunks: Vec<Hunk>,
    /// A change without hunks (a binary file, a mode change): why it cannot be reviewed here.
    pub unreadable: Option<String>,
}

/// One hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 16 hex digits of SHA-256 over its file's path, its `@@` line and its lines.
    pub id: String,
    /// Its file's path.
    pub path: String,
    /// The `@@ -a,b +c,d @@` line.
    pub range: String,
    /// Its lines (each starting with ` `, `+`, `-` or `\`).
    pub lines: Vec<String>,
    /// Whether it changes governance (never approvable).
    pub governance: bool,
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
    #[error("hunk {id} changes {path}, which is governance and is never applied from a scratch")]
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

/// Splits a unified git diff into file changes and hunks.
pub fn parse(diff: &str) -> Result<Vec<FileChange>, HunkError> {
    let mut files: Vec<FileChange> = Vec::new();
    let malformed = |line: usize, why: &str| HunkError::Malformed {
        line,
        why: why.to_string(),
    };
    for (i, line) in diff.lines().enumerate() {
        let n = i + 1;
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest
                .split_once(" b/")
                .map(|(_, b)| b.to_string())
                .ok_or_else(|| malformed(n, "a `diff --git a/… b/…` line without paths"))?;
            files.push(FileChange {
                path,
                header: vec![line.to_string()],
                hunks: Vec::new(),
                unreadable: None,
            });
            continue;
        }
        let file = files
            .last_mut()
            .ok_or_else(|| malformed(n, "text before the first `diff --git`"))?;
        if line.starts_with("@@ ") {
            file.hunks.push(Hunk {
                id: String::new(),
                path: file.path.clone(),
                range: line.to_string(),
                lines: Vec::new(),
                governance: is_governance(&file.path),
            });
        } else if let Some(hunk) = file.hunks.last_mut() {
            if !line.starts_with([' ', '+', '-', '\\']) && !line.is_empty() {
                return Err(malformed(n, "a hunk line that is not context, +, - or \\"));
            }
            hunk.lines.push(line.to_string());
        } else {
            if line.starts_with("Binary files ") {
                file.unreadable = Some("a binary file".to_string());
            }
            file.header.push(line.to_string());
        }
    }
    for file in &mut files {
        if file.hunks.is_empty() && file.unreadable.is_none() {
            file.unreadable = Some("no lines changed (a mode change or an empty file)".to_string());
        }
        for hunk in &mut file.hunks {
            let mut h = Sha256::new();
            h.update(hunk.path.as_bytes());
            h.update([0]);
            h.update(hunk.range.as_bytes());
            for l in &hunk.lines {
                h.update([b'\n']);
                h.update(l.as_bytes());
            }
            hunk.id = hex::encode(&h.finalize()[..8]);
        }
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
}
