//! Scratch workspaces: a disposable working directory per task, holding a copy of the target
//! repository at a known base, so that an expert's changes can be read back as a diff and the
//! real tree is never touched. Two providers behind one trait:
//!
//! - [`GitWorktree`] (the default): a linked `git worktree` of the repository's `HEAD` on a
//!   fresh branch `iron/scratch/<task>`. Uncommitted changes of the real tree are not in it.
//! - [`PlainCopy`]: a copy of the tree's files (without `.git`) made into a repository of its
//!   own with one commit, for a target that is not a git repository.
//!
//! Either way the scratch is a git working tree whose base commit is known, so
//! [`Scratch::diff`] is the same for both. Scratches live under a root outside the target
//! (by default `<state_dir>/scratch/<task>`), and are removed when the task ends unless kept
//! for review.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use crate::aem::WorkspaceProvider;

/// How long one git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a scratch could not be made, read or removed.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    /// A task id that cannot name a directory and a branch.
    #[error("task id {0:?} cannot name a scratch (letters, digits, `-` and `_`, at most 64)")]
    BadTask(String),
    /// The scratch exists already.
    #[error("{} already exists", .0.display())]
    Exists(PathBuf),
    /// A git command failed.
    #[error("git {args} in {}: {detail}", dir.display())]
    Git {
        /// Its arguments.
        args: String,
        /// Where it ran.
        dir: PathBuf,
        /// What it said, or why it did not run.
        detail: String,
    },
    /// A directory asked to be removed as a scratch is not one: not directly under the
    /// scratch root (a path from the log is never trusted to be).
    #[error("{} is not a scratch under {}: not removed", dir.display(), root.display())]
    NotAScratch {
        /// The directory.
        dir: PathBuf,
        /// Where scratches are.
        root: PathBuf,
    },
    /// A file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// A task's scratch: where it is and what it started from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scratch {
    /// The task.
    pub task: String,
    /// The working directory.
    pub dir: PathBuf,
    /// The commit the scratch started from (in the scratch's repository).
    pub base: String,
}

impl Scratch {
    /// Everything that changed since the base, new and deleted files included, as a unified
    /// diff (`--no-renames`: a rename is a deletion and an addition). Written the same
    /// whatever the user's git configuration: non-ASCII paths unquoted (`core.quotePath=false`;
    /// git still quotes a path holding a control character, `"`, or `\`), `a/` and `b/`
    /// prefixes, no external diff or text conversion.
    pub async fn diff(&self) -> Result<String, ScratchError> {
        let bytes = self.diff_bytes().await?;
        String::from_utf8(bytes).map_err(|_| ScratchError::Git {
            args: "diff".into(),
            dir: self.dir.clone(),
            detail: "its output is not UTF-8".into(),
        })
    }

    /// [`Scratch::diff`] as git wrote it: a file whose text (or name) is not UTF-8 is read
    /// as such by [`super::hunks::parse_bytes`], without losing the others.
    pub async fn diff_bytes(&self) -> Result<Vec<u8>, ScratchError> {
        git(&self.dir, &["add", "--all"]).await?;
        git_bytes(
            &self.dir,
            &[
                "-c",
                "core.quotePath=false",
                "diff",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                "--no-textconv",
                "--cached",
                "--no-color",
                "--no-ext-diff",
                "--no-renames",
                "--unified=3",
                &self.base,
            ],
            None,
        )
        .await
    }
}

/// Makes and removes scratches.
pub trait ScratchProvider: Send + Sync {
    /// A new scratch for `task`.
    fn create<'a>(
        &'a self,
        task: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Scratch, ScratchError>>;
    /// Removes `scratch` and whatever it left behind in the target (a branch).
    fn remove<'a>(
        &'a self,
        scratch: &'a Scratch,
    ) -> futures_util::future::BoxFuture<'a, Result<(), ScratchError>>;
}

/// The provider `kind` for the tree `target`, keeping scratches under `root`.
pub fn provider(kind: WorkspaceProvider, target: &Path, root: &Path) -> Box<dyn ScratchProvider> {
    match kind {
        WorkspaceProvider::GitWorktree => Box::new(GitWorktree {
            repo: target.to_path_buf(),
            root: root.to_path_buf(),
        }),
        WorkspaceProvider::Copy => Box::new(PlainCopy {
            source: target.to_path_buf(),
            root: root.to_path_buf(),
        }),
    }
}

/// Linked git worktrees of the repository `repo`, under `root`.
#[derive(Debug, Clone)]
pub struct GitWorktree {
    /// The target repository.
    pub repo: PathBuf,
    /// Where scratches go.
    pub root: PathBuf,
}

/// The branch of `task`'s worktree.
pub fn branch_of(task: &str) -> String {
    format!("iron/scratch/{task}")
}

impl ScratchProvider for GitWorktree {
    fn create<'a>(
        &'a self,
        task: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Scratch, ScratchError>> {
        Box::pin(async move {
            let dir = prepare(&self.root, task)?;
            let base = git(&self.repo, &["rev-parse", "--verify", "HEAD^{commit}"])
                .await?
                .trim()
                .to_string();
            let dir_text = dir.display().to_string();
            git(
                &self.repo,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "-b",
                    &branch_of(task),
                    &dir_text,
                    &base,
                ],
            )
            .await?;
            Ok(Scratch {
                task: task.to_string(),
                dir,
                base,
            })
        })
    }

    fn remove<'a>(
        &'a self,
        scratch: &'a Scratch,
    ) -> futures_util::future::BoxFuture<'a, Result<(), ScratchError>> {
        Box::pin(async move {
            let dir_text = scratch.dir.display().to_string();
            git(&self.repo, &["worktree", "remove", "--force", &dir_text]).await?;
            git(&self.repo, &["branch", "-D", &branch_of(&scratch.task)]).await?;
            Ok(())
        })
    }
}

/// Plain copies of the tree `source` (without `.git`; of a git repository, only the files git
/// does not ignore), under `root`.
#[derive(Debug, Clone)]
pub struct PlainCopy {
    /// The target tree.
    pub source: PathBuf,
    /// Where scratches go.
    pub root: PathBuf,
}

impl ScratchProvider for PlainCopy {
    fn create<'a>(
        &'a self,
        task: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Scratch, ScratchError>> {
        Box::pin(async move {
            let dir = prepare(&self.root, task)?;
            // In a git repository, the files git sees (tracked, and untracked but not
            // ignored): never a build directory of gigabytes.
            let listed = if self.source.join(".git").exists() {
                let out = git(
                    &self.source,
                    &[
                        "ls-files",
                        "-z",
                        "--cached",
                        "--others",
                        "--exclude-standard",
                    ],
                )
                .await?;
                Some(
                    out.split('\0')
                        .filter(|f| !f.is_empty())
                        .map(PathBuf::from)
                        .collect::<Vec<_>>(),
                )
            } else {
                None
            };
            let (from, to) = (self.source.clone(), dir.clone());
            tokio::task::spawn_blocking(move || match listed {
                Some(files) => copy_listed(&from, &to, &files),
                None => copy_tree(&from, &to),
            })
            .await
            .map_err(|e| ScratchError::Io {
                what: "copying the tree".into(),
                source: std::io::Error::other(e),
            })??;
            git(&dir, &["init", "--quiet"]).await?;
            git(&dir, &["add", "--all"]).await?;
            git(
                &dir,
                &[
                    "-c",
                    "user.name=iron",
                    "-c",
                    "user.email=iron@localhost",
                    "commit",
                    "--quiet",
                    "--allow-empty",
                    "--no-verify",
                    "-m",
                    "scratch base",
                ],
            )
            .await?;
            let base = git(&dir, &["rev-parse", "HEAD"]).await?.trim().to_string();
            Ok(Scratch {
                task: task.to_string(),
                dir,
                base,
            })
        })
    }

    fn remove<'a>(
        &'a self,
        scratch: &'a Scratch,
    ) -> futures_util::future::BoxFuture<'a, Result<(), ScratchError>> {
        Box::pin(async move {
            tokio::fs::remove_dir_all(&scratch.dir)
                .await
                .map_err(|source| ScratchError::Io {
                    what: format!("removing {}", scratch.dir.display()),
                    source,
                })
        })
    }
}

/// Who holds a scratch and whether it must be kept: two small files beside it in its root
/// (`<dir>.owner`, the owning process id; `<dir>.review`, present once changes were proposed
/// from it). A scratch whose owner is gone and that holds no proposals is abandoned: an expert
/// killed outright never removed it, so the next expert of the deployment does
/// ([`sweep`]).
fn sidecar(dir: &Path, what: &str) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(format!(".{what}"));
    PathBuf::from(name)
}

/// Records this process as the owner of `scratch`.
pub fn claim(scratch: &Scratch) -> std::io::Result<()> {
    std::fs::write(
        sidecar(&scratch.dir, "owner"),
        std::process::id().to_string(),
    )
}

/// Marks `scratch` as holding proposals: it stays until its review is over.
pub fn keep_for_review(scratch: &Scratch) -> std::io::Result<()> {
    std::fs::write(sidecar(&scratch.dir, "review"), "")
}

/// Whether process `pid` is alive (Linux: its `/proc` entry exists).
fn alive(pid: &str) -> bool {
    !pid.is_empty()
        && pid.chars().all(|c| c.is_ascii_digit())
        && Path::new("/proc").join(pid).exists()
}

/// The scratches under `root` that are abandoned: an owner file naming a process that is
/// gone, and no proposals.
pub fn abandoned(root: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = read
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|d| d.is_dir())
        .filter(|d| !sidecar(d, "review").exists())
        .filter(|d| {
            std::fs::read_to_string(sidecar(d, "owner")).is_ok_and(|pid| !alive(pid.trim()))
        })
        .collect();
    out.sort();
    out
}

/// Removes the scratch `dir` of the tree `target`, whichever provider made it (a linked
/// worktree has a `.git` file, a copy a `.git` directory), with its branch and side files.
/// `dir` must be a directory directly under `root`, where scratches are made (it may be
/// named by an event on the log, which is never trusted to be one).
pub async fn remove_dir(target: &Path, root: &Path, dir: &Path) -> Result<(), ScratchError> {
    let not_one = || ScratchError::NotAScratch {
        dir: dir.to_path_buf(),
        root: root.to_path_buf(),
    };
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(not_one)?;
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let parent = dir
        .parent()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_path_buf()));
    let is_link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
    if parent.as_deref() != Some(root.as_path()) || !valid_task(named) || is_link {
        return Err(not_one());
    }
    let kind = if dir.join(".git").is_file() {
        WorkspaceProvider::GitWorktree
    } else {
        WorkspaceProvider::Copy
    };
    let scratch = Scratch {
        task: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dir: dir.to_path_buf(),
        base: String::new(),
    };
    if dir.exists() {
        provider(kind, target, &root).remove(&scratch).await?;
    }
    for what in ["owner", "review"] {
        let _ = std::fs::remove_file(sidecar(dir, what));
    }
    Ok(())
}

/// Removes every abandoned scratch under `root` of the tree `target`; returns those removed.
pub async fn sweep(target: &Path, root: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for dir in abandoned(root) {
        match remove_dir(target, root, &dir).await {
            Ok(()) => removed.push(dir),
            Err(e) => tracing::warn!(
                "could not remove the abandoned scratch {}: {e}",
                dir.display()
            ),
        }
    }
    removed
}

/// Checks `task` and returns `root/task`, which must not exist yet (its parent is created).
/// Whether `task` can name a scratch directory and a branch.
fn valid_task(task: &str) -> bool {
    !task.is_empty()
        && task.len() <= 64
        && task
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn prepare(root: &Path, task: &str) -> Result<PathBuf, ScratchError> {
    if !valid_task(task) {
        return Err(ScratchError::BadTask(task.to_string()));
    }
    std::fs::create_dir_all(root).map_err(|source| ScratchError::Io {
        what: format!("creating {}", root.display()),
        source,
    })?;
    let root = root.canonicalize().map_err(|source| ScratchError::Io {
        what: format!("resolving {}", root.display()),
        source,
    })?;
    let dir = root.join(task);
    if dir.exists() {
        return Err(ScratchError::Exists(dir));
    }
    Ok(dir)
}

/// Copies the files of `from` into `to` (created), without `.git`; symbolic links are copied
/// as links, never followed.
fn copy_tree(from: &Path, to: &Path) -> Result<(), ScratchError> {
    std::fs::create_dir_all(to).map_err(io_err(format!("creating {}", to.display())))?;
    let reading = || io_err(format!("reading {}", from.display()));
    for item in std::fs::read_dir(from).map_err(reading())? {
        let item = item.map_err(reading())?;
        if item.file_name() == ".git" {
            continue;
        }
        let (src, dst) = (item.path(), to.join(item.file_name()));
        let kind = item
            .file_type()
            .map_err(io_err(format!("reading {}", src.display())))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            copy_entry(&src, &dst, kind)?;
        }
    }
    Ok(())
}

/// Copies the file or symbolic link `src` (of `kind`) to `dst`; a link is copied as a link.
fn copy_entry(src: &Path, dst: &Path, kind: std::fs::FileType) -> Result<(), ScratchError> {
    if kind.is_symlink() {
        let target =
            std::fs::read_link(src).map_err(io_err(format!("reading {}", src.display())))?;
        std::os::unix::fs::symlink(target, dst)
            .map_err(io_err(format!("writing {}", dst.display())))?;
    } else if kind.is_file() {
        std::fs::copy(src, dst).map_err(io_err(format!("writing {}", dst.display())))?;
    }
    Ok(())
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> ScratchError {
    move |source| ScratchError::Io { what, source }
}

/// Copies `files` (relative to `from`; a listed file that is gone is skipped) into `to`;
/// symbolic links are copied as links, never followed.
fn copy_listed(from: &Path, to: &Path, files: &[PathBuf]) -> Result<(), ScratchError> {
    for file in files {
        let (src, dst) = (from.join(file), to.join(file));
        let Ok(kind) = std::fs::symlink_metadata(&src).map(|m| m.file_type()) else {
            continue;
        };
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io_err(format!("creating {}", parent.display())))?;
        }
        copy_entry(&src, &dst, kind)?;
    }
    Ok(())
}

/// Runs `git args…` in `dir` within [`GIT_TIMEOUT`]; its stdout, or why it failed.
pub(crate) async fn git(dir: &Path, args: &[&str]) -> Result<String, ScratchError> {
    git_with_input(dir, args, None).await
}

/// [`git`] with `input` on its stdin.
pub(crate) async fn git_with_input(
    dir: &Path,
    args: &[&str],
    input: Option<&str>,
) -> Result<String, ScratchError> {
    let out = git_bytes(dir, args, input).await?;
    String::from_utf8(out).map_err(|_| ScratchError::Git {
        args: args.join(" "),
        dir: dir.to_path_buf(),
        detail: "its output is not UTF-8".into(),
    })
}

/// [`git_with_input`], its stdout as bytes.
async fn git_bytes(
    dir: &Path,
    args: &[&str],
    input: Option<&str>,
) -> Result<Vec<u8>, ScratchError> {
    use tokio::io::AsyncWriteExt;
    let failed = |detail: String| ScratchError::Git {
        args: args.join(" "),
        dir: dir.to_path_buf(),
        detail,
    };
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(if input.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(text.as_bytes())
            .await
            .map_err(|e| failed(e.to_string()))?;
    }
    let out = tokio::time::timeout(GIT_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| failed(format!("no answer in {} s", GIT_TIMEOUT.as_secs())))?
        .map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        return Err(failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_directory_named_by_the_log_is_removed_only_when_it_is_a_scratch() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("state/scratch");
        let victim = tmp.path().join("project");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(victim.join("src")).unwrap();
        std::os::unix::fs::symlink(&victim, root.join("link-1")).unwrap();
        for dir in [
            victim.clone(),
            root.join("../../project"),
            root.join("link-1"),
            root.clone(),
            root.join("a/b"),
        ] {
            match remove_dir(&victim, &root, &dir).await {
                Err(ScratchError::NotAScratch { .. }) => {}
                other => panic!("{}: {other:?}", dir.display()),
            }
        }
        assert!(victim.join("src").is_dir(), "nothing outside was removed");
        let scratch = root.join("task-1");
        std::fs::create_dir_all(scratch.join("x")).unwrap();
        remove_dir(&victim, &root, &scratch).await.unwrap();
        assert!(!scratch.exists());
    }
}
