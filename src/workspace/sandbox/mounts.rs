//! What a confined run sees of the filesystem: an allow-list, built on an empty root.
//!
//! - the system's programs and libraries read-only ([`SYSTEM`]: `/usr`, `/bin`, `/sbin`,
//!   `/lib*`), each link of a merged `/usr` kept a link;
//! - `/etc` read-only without its secrets ([`ETC_SECRETS`]);
//! - a fresh `/proc` and a minimal `/dev`;
//! - a private `/tmp`, read-only but for the run's `TMPDIR` ([`super::PRIVATE_TMP`]), and a
//!   private, empty, read-only home directory at the path of the host's (so a toolchain shown
//!   under it is where its tools expect it);
//! - the scratch read-write, its governance (`aem/`, `config/`, `.git`) read-only again;
//! - for a scratch that is a linked git worktree, the repository's object store read-only,
//!   so that git works inside, with its `config` replaced by the `[core]` and `[extensions]`
//!   sections only (remotes, credential helpers and tokens in headers stay outside);
//! - each declared toolchain read-only, with the credential files in it masked.
//!
//! The root everything is mounted on is itself read-only. Nothing else exists inside: not `/run` (the user's D-Bus and agents, a Docker socket), not
//! the host's `/tmp` and its sockets, not the user's home, not the real working tree, not the
//! state directory (which holds the caller key). A path the caller masks that still lies in
//! something shown is masked there.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Confined, PRIVATE_TMP, READ_ONLY_IN_SCRATCH, SandboxError};

/// The system trees shown read-only (those that exist here).
pub const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// What `/etc` holds that a run may not read: password hashes, host keys, sudo rules,
/// private TLS keys.
pub const ETC_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
];

/// The sections of a repository's `config` a run's git needs (the repository format); the
/// rest (remotes, credential helpers, `http.extraheader` tokens) is not shown.
const GIT_CONFIG_KEPT: &[&str] = &["core", "extensions"];

/// Files made for one run (the filtered git config, a network's `resolv.conf`), bound into
/// it read-only and removed with it.
#[derive(Default)]
pub(super) struct Generated {
    dir: Option<tempfile::TempDir>,
}

impl Generated {
    fn file(&mut self, name: &str, content: &str) -> Result<PathBuf, SandboxError> {
        let io = |source| SandboxError::Io {
            what: format!("writing the sandbox's {name}"),
            source,
        };
        let dir = match &mut self.dir {
            Some(dir) => dir,
            none => none.insert(
                tempfile::Builder::new()
                    .prefix("iron-sandbox-")
                    .tempdir()
                    .map_err(io)?,
            ),
        };
        let path = dir.path().join(name);
        std::fs::write(&path, content).map_err(io)?;
        Ok(path)
    }
}

/// The mount arguments for `run` (everything before the namespaces and the environment).
pub(super) fn arguments(
    run: &Confined,
    scratch: &Path,
    home: &Path,
    generated: &mut Generated,
) -> Result<Vec<OsString>, SandboxError> {
    let mut a = Args::default();
    for dir in SYSTEM.iter().map(Path::new) {
        match std::fs::read_link(dir) {
            Ok(target) => a.symlink(&target, dir),
            Err(_) if dir.is_dir() => a.bind("--ro-bind", dir),
            Err(_) => {}
        }
    }
    a.bind("--ro-bind", Path::new("/etc"));
    a.add(&["--dev", "/dev", "--proc", "/proc"]);
    let tmp_size = run.limits.tmp_size.to_string();
    a.add(&["--size", &tmp_size, "--tmpfs", "/tmp", "--dir", PRIVATE_TMP]);
    a.add(&["--size", &tmp_size, "--tmpfs"]);
    a.path(home);
    a.bind("--bind", scratch);
    for dir in READ_ONLY_IN_SCRATCH {
        let p = scratch.join(dir);
        if p.exists() {
            a.bind("--ro-bind", &p);
        }
    }
    if let Some(store) = linked_store(scratch) {
        a.bind("--ro-bind", &store);
        let config = store.join("config");
        if config.is_file() {
            let kept = kept_git_config(&std::fs::read_to_string(&config).unwrap_or_default());
            let file = generated.file("gitconfig", &kept)?;
            a.add(&["--ro-bind"]);
            a.path(&file);
            a.path(&config);
        }
    }
    for path in run.expose.iter().filter(|p| p.exists()) {
        a.bind("--ro-bind", path);
    }
    if run.network {
        let file = generated.file("resolv.conf", super::net::RESOLV_CONF)?;
        a.add(&["--ro-bind"]);
        a.path(&file);
        a.path(Path::new("/etc/resolv.conf"));
    }
    // Masks last, over whatever shows them; a mask that holds the scratch is simply not
    // shown (the scratch is mounted alone).
    let shown: Vec<PathBuf> = [PathBuf::from("/etc"), scratch.to_path_buf()]
        .into_iter()
        .chain(run.expose.iter().cloned())
        .collect();
    let masks: Vec<(PathBuf, bool)> = ETC_SECRETS
        .iter()
        .map(PathBuf::from)
        .chain(run.mask.iter().cloned())
        .filter(|m| !scratch.starts_with(m))
        .filter(|m| shown.iter().any(|s| m.starts_with(s)))
        .filter_map(|p| std::fs::symlink_metadata(&p).ok().map(|m| (p, m.is_dir())))
        .collect();
    for (path, dir) in &masks {
        a.mask(path, *dir);
    }
    // An empty mask, the home directory and /tmp are read-only too: a write that seems to
    // work and then vanishes is worse than one that fails. TMPDIR is the one exception.
    for (path, _) in masks.iter().filter(|(_, dir)| *dir) {
        a.add(&["--remount-ro"]);
        a.path(path);
    }
    a.add(&["--remount-ro"]);
    a.path(home);
    a.add(&[
        "--remount-ro",
        "/tmp",
        "--size",
        &tmp_size,
        "--tmpfs",
        PRIVATE_TMP,
    ]);
    // The empty root the rest is mounted on (and the directories made in it on the way to
    // the scratch) is read-only as well.
    a.add(&["--remount-ro", "/"]);
    Ok(a.0)
}

/// The repository store (`$GIT_COMMON_DIR`) of a scratch that is a linked worktree: its
/// `.git` is a file naming `gitdir: <repo>/.git/worktrees/<name>`, whose `commondir` names
/// the store.
fn linked_store(scratch: &Path) -> Option<PathBuf> {
    let link = std::fs::read_to_string(scratch.join(".git")).ok()?;
    let gitdir = scratch.join(link.strip_prefix("gitdir:")?.trim());
    let common = std::fs::read_to_string(gitdir.join("commondir")).ok()?;
    gitdir.join(common.trim()).canonicalize().ok()
}

/// `config` with only the [`GIT_CONFIG_KEPT`] sections.
fn kept_git_config(config: &str) -> String {
    let mut keep = false;
    let mut out = String::new();
    for line in config.lines() {
        let t = line.trim_start();
        if let Some(header) = t.strip_prefix('[') {
            let name: String = header
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            keep = GIT_CONFIG_KEPT.contains(&name.to_ascii_lowercase().as_str());
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// bwrap's command line, as it is built.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn add(&mut self, words: &[&str]) {
        self.0.extend(words.iter().map(OsString::from));
    }

    fn path(&mut self, p: &Path) {
        self.0.push(p.as_os_str().to_os_string());
    }

    /// `flag p p`: `p` mounted at itself.
    fn bind(&mut self, flag: &str, p: &Path) {
        self.add(&[flag]);
        self.path(p);
        self.path(p);
    }

    /// A symbolic link at `at` to `target`.
    fn symlink(&mut self, target: &Path, at: &Path) {
        self.add(&["--symlink"]);
        self.path(target);
        self.path(at);
    }

    /// An empty directory over a directory, an empty file over anything else.
    fn mask(&mut self, p: &Path, dir: bool) {
        if dir {
            self.add(&["--tmpfs"]);
        } else {
            self.add(&["--ro-bind", "/dev/null"]);
        }
        self.path(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_config_keeps_the_format_and_drops_remotes_and_credentials() {
        let config = "[core]\n\trepositoryformatversion = 1\n[remote \"origin\"]\n\turl = \
                      https://x:tok@example.com/r\n[http]\n\textraheader = AUTHORIZATION: \
                      basic c2VjcmV0\n[extensions]\n\tobjectformat = sha256\n[credential]\n\t\
                      helper = store\n";
        let kept = kept_git_config(config);
        assert_eq!(
            kept,
            "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n"
        );
    }
}
