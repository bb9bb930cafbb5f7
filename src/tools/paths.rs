//! Gate 2, the path guard: before a tool runs, every argument that could name a file is
//! resolved the way the kernel would resolve it. For a `write` or `destructive` tool it is
//! checked against the governance files (never writable) and the roots the expert may
//! write; for every tool, `read` too, against the files that hold credentials.
//!
//! **Which strings are checked.** Every string at any depth of the arguments object
//! (object values, array items, and the keys of nested objects, which count as values of
//! the argument they sit in), whatever the argument is called, with one exception: free
//! text that does not read as a path. An argument is free text when its name holds one of
//! the words in [`TEXT_WORDS`] (`content`, `title`, `query`, …, split like tool names, so
//! `oldText` and `commit_message` count) and none of [`PATH_WORDS`], or when its schema says
//! `"x-iron-path": false`; a top-level key is read like free text. Free text is still
//! checked when its value reads as a path (see [`normalise`]): a `title` whose whole value is
//! `aem/news/SKILL.md` or `FILE:///etc/passwd` is a path, a commit message `Fix the bug in
//! src/x.rs` or a file body is prose. Only the schemas Iron ships for its native tools
//! ([`SchemaHints::shipped`]) may exempt an argument entirely: a server's own schema may
//! not lower the guard. An argument whose name is path-like (a word of [`PATH_WORDS`], or a
//! schema `"format"` of `path`, `file-path`, `directory-path`, `uri-reference`, or
//! `"x-iron-path": true`) must moreover be a string.
//!
//! **Options.** A value that starts with `-` (as given, trimmed or percent-decoded) in an
//! argument named like a path or a git ref ([`PATH_WORDS`], [`REF_WORDS`]) is refused, for
//! every effect: `git show --output=…` is a write whatever the tool is called.
//!
//! **Resolution.** Each value is read every way a server might read it ([`normalise`]):
//! trimmed, percent-decoded, as a `file:` URI in any spelling, with `~`, `$HOME` and
//! `${HOME}` expanded to the server's home (refused when the server's home is not known);
//! every reading must pass. A relative path is taken against the server's root, which is
//! also the working directory the server is started in (see [`server_root`] and the tool
//! manager), so the guard and the server agree on where it lands. Then each component is
//! walked on the real filesystem: `.` is dropped, `..` goes to the parent of what has been
//! resolved so far, and a symbolic link is replaced by its target, even when the target does
//! not exist (a dangling link into `aem/` is still a link into `aem/`). The part that does
//! not exist yet is kept as written. Trailing slashes and `/./` change nothing.
//!
//! **Checks.** For every tool, a resolved path is refused when it is one of the
//! [`secrets::SECRETS`] (`.env`, private keys, `.git/config`, credential files) or inside
//! the state directory (caller keys, tokens, the log) outside the granted roots. For a
//! `write` or `destructive` tool it is also refused when it is inside, equal to, or an
//! ancestor of a governance path (`aem/`, `config/`, `.git/` under the project root and
//! under every granted root, the compiled `catalog.json` and `tool_manifest.json`, and any
//! `.git` directory anywhere), and when it is outside every granted root. One exception: an
//! argument naming the place a tool works in ([`REPO_WORDS`]: `repo_path`, `cwd`, …) may be
//! a granted root itself, so git tools work at the root of the scratch worktree; the files
//! they are given are checked as usual. With no granted root, a write tool that takes any
//! string other than prose is refused.
//!
//! The check happens before the call; a process that changes the filesystem between the
//! check and the call (the server itself, another tool) is not covered here — confinement
//! of what a process may touch is the sandbox's job.

pub mod normalise;
pub mod secrets;

use super::error::{DenialReason, Gate, GateDenial};
use crate::aem::{CATALOG_FILE, TOOL_MANIFEST_FILE};
use crate::core::effect::split_words;
use normalise::Unreadable;
use serde_json::Value;
use std::collections::{BTreeSet, VecDeque};
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Words that make an argument name path-like.
pub const PATH_WORDS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filepath",
    "dir",
    "dirs",
    "directory",
    "directories",
    "folder",
    "root",
    "roots",
    "source",
    "destination",
    "dest",
    "cwd",
];

/// Words that make an argument free text (unless its name also holds a word of
/// [`PATH_WORDS`]): checked only when its value reads as a path
/// ([`normalise::reads_as_path`]).
pub const TEXT_WORDS: &[&str] = &[
    "content",
    "contents",
    "text",
    "body",
    "message",
    "msg",
    "comment",
    "description",
    "title",
    "summary",
    "note",
    "notes",
    "observation",
    "observations",
    "pattern",
    "query",
    "regex",
];

/// Words that make an argument name a git ref (or the like): a value starting with `-`
/// is refused there, as in a path.
pub const REF_WORDS: &[&str] = &[
    "ref",
    "refs",
    "branch",
    "branches",
    "revision",
    "rev",
    "commit",
    "target",
    "tag",
    "base",
    "sha",
    "treeish",
    "remote",
    "upstream",
    "repo",
    "repository",
];

/// Words that make an argument name the place a tool works in: it may be a granted root
/// itself (which is an ancestor of that root's own `aem/`, `config/` and `.git/`).
pub const REPO_WORDS: &[&str] = &["repo", "repository", "worktree", "workdir", "cwd"];

/// Names of governance directories, protected under the project root and every granted root.
pub const GOVERNANCE_DIRS: &[&str] = &["aem", "config", ".git"];

const MAX_LINK_HOPS: usize = 40;

/// What a call may do, for gate 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A `read` tool: only the secrets are checked.
    Read,
    /// A `write` or `destructive` tool: secrets, governance and the granted roots.
    Write,
}

/// Where a server takes the paths it is given: the directory it runs in and resolves
/// relative paths against, and its home directory (`~`, `$HOME`) when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPlace {
    /// The server's root and working directory.
    pub root: PathBuf,
    /// Its `HOME`, when its environment names one; `None` refuses home-relative paths.
    pub home: Option<PathBuf>,
}

/// What gate 2 protects and allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPolicy {
    protected: Vec<PathBuf>,
    granted: Vec<PathBuf>,
    state: PathBuf,
}

impl PathPolicy {
    /// Protects the governance of `project_root` (`aem/`, `config/`, `.git/`) and the
    /// compiled `catalog.json` / `tool_manifest.json` in `catalog_dir`, the state
    /// directory, which no tool may read outside the granted roots (it holds caller keys and
    /// tokens). Grants no root yet: until [`PathPolicy::grant_root`] is called, every write
    /// is refused.
    pub fn new(project_root: &Path, catalog_dir: &Path) -> io::Result<PathPolicy> {
        let project = resolve_path(&std::env::current_dir()?, project_root)?;
        let catalog = resolve_path(&std::env::current_dir()?, catalog_dir)?;
        let mut protected: Vec<PathBuf> = GOVERNANCE_DIRS.iter().map(|d| project.join(d)).collect();
        for file in [CATALOG_FILE, TOOL_MANIFEST_FILE] {
            protected.push(catalog.join(file));
            protected.push(catalog.join(format!("{file}.tmp")));
        }
        Ok(PathPolicy {
            protected,
            granted: Vec::new(),
            state: catalog,
        })
    }

    /// Allows writes under `root` (resolved now; its own `aem/`, `config/` and `.git/`
    /// stay protected).
    pub fn grant_root(mut self, root: &Path) -> io::Result<PathPolicy> {
        let root = resolve_path(&std::env::current_dir()?, root)?;
        for d in GOVERNANCE_DIRS {
            let p = root.join(d);
            if !self.protected.contains(&p) {
                self.protected.push(p);
            }
        }
        if !self.granted.contains(&root) {
            self.granted.push(root);
        }
        Ok(self)
    }

    /// Also protects `path` (resolved now).
    pub fn protect(mut self, path: &Path) -> io::Result<PathPolicy> {
        let p = resolve_path(&std::env::current_dir()?, path)?;
        self.protected.push(p);
        Ok(self)
    }

    /// The roots writes may go to, resolved.
    pub fn granted_roots(&self) -> &[PathBuf] {
        &self.granted
    }

    /// The governance paths, resolved.
    pub fn protected(&self) -> &[PathBuf] {
        &self.protected
    }

    /// Checks one resolved path: `Err` with the reason when this access may not touch it.
    /// `workplace`: the argument names where a tool works, which may be a granted root.
    fn check_resolved(
        &self,
        resolved: &Path,
        access: Access,
        workplace: bool,
    ) -> Result<(), CheckFailure> {
        if access == Access::Write {
            if let Some(git) = git_component(resolved) {
                return Err(CheckFailure::Governance(git));
            }
            let at_a_root = workplace && self.granted.iter().any(|r| r == resolved);
            for p in &self.protected {
                if resolved.starts_with(p) || (p.starts_with(resolved) && !at_a_root) {
                    return Err(CheckFailure::Governance(p.clone()));
                }
            }
        }
        if let Some(secret) = secrets::secret_of(resolved) {
            return Err(CheckFailure::Secret(secret.describe()));
        }
        let in_a_root = self.granted.iter().any(|r| resolved.starts_with(r));
        if resolved.starts_with(&self.state) && !in_a_root {
            return Err(CheckFailure::Secret(format!(
                "inside the state directory `{}`",
                self.state.display()
            )));
        }
        if access == Access::Write && !in_a_root {
            return Err(CheckFailure::Outside);
        }
        Ok(())
    }

    /// Gate 2 for one write or destructive call of a server whose home is not known; see
    /// [`PathPolicy::check`].
    pub fn check_call(
        &self,
        tool: &str,
        root: &Path,
        arguments: &Value,
        hints: &SchemaHints,
    ) -> Result<Vec<(String, PathBuf)>, Box<GateDenial>> {
        let place = ServerPlace {
            root: root.to_path_buf(),
            home: None,
        };
        self.check(tool, Access::Write, &place, arguments, hints)
    }

    /// Gate 2 for one call: every string of `arguments` that could name a file (see the
    /// module documentation; `hints` are what the tool's input schema says) is read every
    /// way the server at `place` might read it, resolved and checked. Returns the resolved
    /// paths, by argument (the most normalised reading), when all are allowed.
    pub fn check(
        &self,
        tool: &str,
        access: Access,
        place: &ServerPlace,
        arguments: &Value,
        hints: &SchemaHints,
    ) -> Result<Vec<(String, PathBuf)>, Box<GateDenial>> {
        let mut found = Vec::new();
        collect_paths(arguments, "", "", Kind::Text, hints, &mut found);
        let mut resolved_all = Vec::new();
        for Found {
            argument,
            name,
            kind,
            value,
        } in found
        {
            let deny = |reason| {
                Box::new(GateDenial {
                    gate: Gate::Path,
                    tool: tool.to_string(),
                    reason,
                })
            };
            let Some(text) = value.as_str() else {
                return Err(deny(DenialReason::Unresolvable {
                    argument,
                    path: value.to_string(),
                    detail: "a path argument must be a string".to_string(),
                }));
            };
            if hints.option_guarded(&name) && normalise::option_like(text) {
                return Err(deny(DenialReason::OptionLike {
                    argument,
                    value: text.to_string(),
                }));
            }
            if kind == Kind::Text && !normalise::reads_as_path(text) {
                continue;
            }
            let readings = match normalise::readings(text, place.home.as_deref()) {
                Ok(r) => r,
                Err(Unreadable::Home(_)) => {
                    return Err(deny(DenialReason::UnexpandableHome {
                        argument,
                        path: text.to_string(),
                    }));
                }
                Err(e) => {
                    let detail = match e {
                        Unreadable::ForeignHost(_) => "a `file:` URI of another host",
                        _ => "the path contains a NUL byte",
                    };
                    return Err(deny(DenialReason::Unresolvable {
                        argument,
                        path: text.escape_debug().to_string(),
                        detail: detail.to_string(),
                    }));
                }
            };
            let workplace = repo_like_name(&name);
            let mut first = None;
            for reading in readings {
                let resolved = match resolve_path(&place.root, Path::new(&reading)) {
                    Ok(r) => r,
                    Err(e) => {
                        return Err(deny(DenialReason::Unresolvable {
                            argument,
                            path: text.to_string(),
                            detail: e.to_string(),
                        }));
                    }
                };
                let path = text.to_string();
                match self.check_resolved(&resolved, access, workplace) {
                    Ok(()) => {
                        first.get_or_insert(resolved);
                    }
                    Err(CheckFailure::Governance(protected)) => {
                        return Err(deny(DenialReason::Governance {
                            argument,
                            path,
                            resolved,
                            protected,
                        }));
                    }
                    Err(CheckFailure::Secret(secret)) => {
                        return Err(deny(DenialReason::Secret {
                            argument,
                            path,
                            resolved,
                            secret,
                        }));
                    }
                    Err(CheckFailure::Outside) => {
                        return Err(deny(DenialReason::OutsideRoots {
                            argument,
                            path,
                            resolved,
                            roots: self.granted.clone(),
                        }));
                    }
                }
            }
            if let Some(resolved) = first {
                resolved_all.push((argument, resolved));
            }
        }
        Ok(resolved_all)
    }
}

enum CheckFailure {
    Governance(PathBuf),
    Secret(String),
    Outside,
}

/// The path up to and including its first `.git` component, if it has one.
fn git_component(path: &Path) -> Option<PathBuf> {
    let mut prefix = PathBuf::new();
    for c in path.components() {
        prefix.push(c);
        if c.as_os_str() == ".git" {
            return Some(prefix);
        }
    }
    None
}

fn has_word(name: &str, words: &[&str]) -> bool {
    split_words(name)
        .iter()
        .any(|w| words.contains(&w.as_str()))
}

/// Whether an argument name is path-like by its words.
pub fn path_like_name(name: &str) -> bool {
    has_word(name, PATH_WORDS)
}

/// Whether an argument name is a git ref or the like by its words.
pub fn ref_like_name(name: &str) -> bool {
    has_word(name, REF_WORDS)
}

/// Whether an argument name is the place a tool works in by its words.
pub fn repo_like_name(name: &str) -> bool {
    has_word(name, REPO_WORDS)
}

/// Whether an argument name is free text by its words (and not path-like).
pub fn text_like_name(name: &str) -> bool {
    has_word(name, TEXT_WORDS) && !path_like_name(name)
}

/// What a tool's JSON input schema says about its properties (top level and nested
/// `properties`, by name): which are paths and which are free text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaHints {
    /// Declared paths: `"format"` a path format, or `"x-iron-path": true`.
    pub paths: BTreeSet<String>,
    /// Declared free text: `"x-iron-path": false` (still checked when it reads as a path).
    pub text: BTreeSet<String>,
    /// Never taken for a path: `"x-iron-path": false` in a schema Iron ships.
    pub exempt: BTreeSet<String>,
}

impl SchemaHints {
    /// Reads the hints of an input schema (`Value::Null` gives none).
    pub fn of(schema: &Value) -> SchemaHints {
        fn walk(schema: &Value, out: &mut SchemaHints) {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (name, prop) in props {
                let format = prop.get("format").and_then(Value::as_str);
                let marked = prop.get("x-iron-path").and_then(Value::as_bool);
                if marked == Some(true)
                    || matches!(
                        format,
                        Some("path" | "file-path" | "directory-path" | "uri-reference")
                    )
                {
                    out.paths.insert(name.clone());
                } else if marked == Some(false) {
                    out.text.insert(name.clone());
                }
                walk(prop, out);
                if let Some(items) = prop.get("items") {
                    walk(items, out);
                }
            }
        }
        let mut out = SchemaHints::default();
        walk(schema, &mut out);
        out
    }

    /// The hints of a schema Iron ships (a native tool's, reviewed with its code): what it
    /// marks `"x-iron-path": false` is exempt, never taken for a path.
    pub fn shipped(schema: &Value) -> SchemaHints {
        let mut out = SchemaHints::of(schema);
        out.exempt = std::mem::take(&mut out.text);
        out
    }

    fn kind(&self, name: &str) -> Kind {
        if self.paths.contains(name) || path_like_name(name) {
            Kind::Path
        } else if self.exempt.contains(name) {
            Kind::Exempt
        } else if self.text.contains(name) || text_like_name(name) {
            Kind::Text
        } else {
            Kind::Maybe
        }
    }

    /// Whether a value of argument `name` starting with `-` is refused.
    fn option_guarded(&self, name: &str) -> bool {
        self.paths.contains(name) || path_like_name(name) || ref_like_name(name)
    }
}

/// How gate 2 reads an argument, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Named or declared a path: must be a string, and is checked.
    Path,
    /// Named or declared free text: checked when it reads as a path.
    Text,
    /// Declared free text by a schema Iron ships: never checked.
    Exempt,
    /// Anything else: a string is checked as a possible path.
    Maybe,
}

/// One string (or path-named value) gate 2 looks at.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    /// Where it is, for the refusal (`a.b[0]`, `files[key "/x"]`).
    argument: String,
    /// The name of the argument it belongs to (the last object key above it).
    name: String,
    kind: Kind,
    value: Value,
}

/// The leaves of `value` gate 2 looks at, by argument name (`a.b[0]`), with how it reads
/// them: array items take the kind of the array; the keys of an object take the kind of
/// the argument holding it (top-level keys, the argument names, read like free text).
fn collect_paths(
    value: &Value,
    argument: &str,
    name: &str,
    kind: Kind,
    hints: &SchemaHints,
    out: &mut Vec<Found>,
) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if kind != Kind::Exempt {
                    out.push(Found {
                        argument: format!("{argument}[key {k:?}]"),
                        name: name.to_string(),
                        kind: if kind == Kind::Path {
                            Kind::Maybe
                        } else {
                            kind
                        },
                        value: Value::String(k.clone()),
                    });
                }
                let child = if argument.is_empty() {
                    k.clone()
                } else {
                    format!("{argument}.{k}")
                };
                let child_kind = if kind == Kind::Exempt {
                    Kind::Exempt
                } else {
                    hints.kind(k)
                };
                collect_paths(v, &child, k, child_kind, hints, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_paths(v, &format!("{argument}[{i}]"), name, kind, hints, out);
            }
        }
        Value::Null => {}
        _ if kind == Kind::Exempt => {}
        other if kind != Kind::Path && !other.is_string() => {}
        other => out.push(Found {
            argument: argument.to_string(),
            name: name.to_string(),
            kind,
            value: other.clone(),
        }),
    }
}

/// The root a server's relative paths are taken against: the first of its arguments that
/// names an existing directory (taken against `cwd`), else `cwd` itself. The filesystem
/// and git servers take their root directory as an argument this way.
pub fn server_root(args: &[String], cwd: &Path) -> PathBuf {
    args.iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| cwd.join(a))
        .find(|p| p.is_dir())
        .and_then(|p| resolve_path(cwd, &p).ok())
        .unwrap_or_else(|| resolve_path(cwd, Path::new(".")).unwrap_or_else(|_| cwd.to_path_buf()))
}

/// Resolves `path` (relative paths against `base`) as the kernel would: `.` dropped, `..`
/// to the parent of what is resolved so far, symbolic links replaced by their targets
/// (dangling ones too), the part that does not exist kept as written.
pub fn resolve_path(base: &Path, path: &Path) -> io::Result<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    if !absolute.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not absolute", absolute.display()),
        ));
    }
    let mut queue: VecDeque<OsString> = normal_parts(&absolute);
    let mut out = PathBuf::from("/");
    let mut hops = 0;
    while let Some(part) = queue.pop_front() {
        if part == ".." {
            out.pop();
            continue;
        }
        let candidate = out.join(&part);
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_LINK_HOPS {
                    return Err(io::Error::other(format!(
                        "more than {MAX_LINK_HOPS} symbolic links (a loop?) at `{}`",
                        candidate.display()
                    )));
                }
                let target = std::fs::read_link(&candidate)?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for p in normal_parts(&target).into_iter().rev() {
                    queue.push_front(p);
                }
            }
            Ok(_) => out = candidate,
            Err(e) if e.kind() == io::ErrorKind::NotFound => out = candidate,
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => out = candidate,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The components of `p` as strings, `..` kept as `..`, `.` and the root dropped.
fn normal_parts(p: &Path) -> VecDeque<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
