//! Gate 2, the path guard: before a `write` or `destructive` tool runs, every argument that
//! could name a file is resolved the way the kernel would resolve it and checked against
//! the governance files (never writable) and the roots the expert may write.
//!
//! **Which arguments are checked.** Every string at any depth of the arguments object
//! (object values and array items alike), with one exception: free text. An argument is
//! free text when its name holds one of the words in [`TEXT_WORDS`] (`content`, `text`,
//! `message`, `pattern`, …, split like tool names, so `oldText` and `commit_message`
//! count) and none of [`PATH_WORDS`], or when its JSON schema in the manifest says
//! `"x-iron-path": false`. Everything else is taken as a possible path, whatever it is
//! called: a tool that writes to `dst`, `target` or `output` is checked like one that
//! writes to `path`. An argument whose name is path-like (a word of [`PATH_WORDS`], or a
//! schema `"format"` of `path`, `file-path`, `directory-path`, `uri-reference`, or
//! `"x-iron-path": true`) must moreover be a string. `file://` URIs are read as paths.
//!
//! **Resolution.** A relative path is taken against the server's root (see
//! [`server_root`]). Then each component is walked on the real filesystem: `.` is dropped,
//! `..` goes to the parent of what has been resolved so far, and a symbolic link is
//! replaced by its target, even when the target does not exist (a dangling link into
//! `aem/` is still a link into `aem/`). The part that does not exist yet is kept as
//! written. Trailing slashes and `/./` change nothing. A value starting with `~` is
//! refused: the server would expand it against a home this guard cannot see.
//!
//! **Checks.** The resolved path is refused when it is inside, equal to, or an ancestor of
//! a governance path (`aem/`, `config/`, `.git/` under the project root and under every
//! granted root, the compiled `catalog.json` and `tool_manifest.json`, and any `.git`
//! directory anywhere); and when it is outside every granted root. With no granted root,
//! a write tool that takes any string other than free text is refused.
//!
//! The check happens before the call; a process that changes the filesystem between the
//! check and the call (the server itself, another tool) is not covered here — confinement
//! of what a process may touch is the sandbox's job.

use super::error::{DenialReason, Gate, GateDenial};
use crate::aem::{CATALOG_FILE, TOOL_MANIFEST_FILE};
use crate::core::effect::split_words;
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

/// Words that make an argument free text, never taken as a path (unless its name also
/// holds a word of [`PATH_WORDS`]).
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

/// Names of governance directories, protected under the project root and every granted root.
pub const GOVERNANCE_DIRS: &[&str] = &["aem", "config", ".git"];

const MAX_LINK_HOPS: usize = 40;

/// What gate 2 protects and allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPolicy {
    protected: Vec<PathBuf>,
    granted: Vec<PathBuf>,
}

impl PathPolicy {
    /// Protects the governance of `project_root` (`aem/`, `config/`, `.git/`) and the
    /// compiled `catalog.json` / `tool_manifest.json` in `catalog_dir`. Grants no root yet:
    /// until [`PathPolicy::grant_root`] is called, every write is refused.
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

    /// Checks one resolved path: `Err` with the reason when it may not be written.
    fn check_resolved(&self, resolved: &Path) -> Result<(), CheckFailure> {
        if let Some(git) = git_component(resolved) {
            return Err(CheckFailure::Governance(git));
        }
        for p in &self.protected {
            if resolved.starts_with(p) || p.starts_with(resolved) {
                return Err(CheckFailure::Governance(p.clone()));
            }
        }
        if !self.granted.iter().any(|r| resolved.starts_with(r)) {
            return Err(CheckFailure::Outside);
        }
        Ok(())
    }

    /// Gate 2 for one call: every argument of `arguments` that could name a file (see the
    /// module documentation; `hints` are what the tool's input schema says) is resolved
    /// against `root` and checked. Returns the resolved paths, by argument, when all are
    /// allowed.
    pub fn check_call(
        &self,
        tool: &str,
        root: &Path,
        arguments: &Value,
        hints: &SchemaHints,
    ) -> Result<Vec<(String, PathBuf)>, Box<GateDenial>> {
        let mut found = Vec::new();
        collect_paths(arguments, "", Kind::Maybe, hints, &mut found);
        let mut resolved_all = Vec::new();
        for (argument, _, value) in found {
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
            let path_text = text.strip_prefix("file://").unwrap_or(text);
            if path_text.starts_with('~') {
                return Err(deny(DenialReason::Unresolvable {
                    argument,
                    path: text.to_string(),
                    detail: "home-relative paths are not accepted; give a path inside the root"
                        .to_string(),
                }));
            }
            if path_text.contains('\0') {
                return Err(deny(DenialReason::Unresolvable {
                    argument,
                    path: text.escape_debug().to_string(),
                    detail: "the path contains a NUL byte".to_string(),
                }));
            }
            let resolved = match resolve_path(root, Path::new(path_text)) {
                Ok(r) => r,
                Err(e) => {
                    return Err(deny(DenialReason::Unresolvable {
                        argument,
                        path: text.to_string(),
                        detail: e.to_string(),
                    }));
                }
            };
            match self.check_resolved(&resolved) {
                Ok(()) => resolved_all.push((argument, resolved)),
                Err(CheckFailure::Governance(protected)) => {
                    return Err(deny(DenialReason::Governance {
                        argument,
                        path: text.to_string(),
                        resolved,
                        protected,
                    }));
                }
                Err(CheckFailure::Outside) => {
                    return Err(deny(DenialReason::OutsideRoots {
                        argument,
                        path: text.to_string(),
                        resolved,
                        roots: self.granted.clone(),
                    }));
                }
            }
        }
        Ok(resolved_all)
    }
}

enum CheckFailure {
    Governance(PathBuf),
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

/// Whether an argument name is path-like by its words.
pub fn path_like_name(name: &str) -> bool {
    split_words(name)
        .iter()
        .any(|w| PATH_WORDS.contains(&w.as_str()))
}

/// Whether an argument name is free text by its words (and not path-like).
pub fn text_like_name(name: &str) -> bool {
    let words = split_words(name);
    words.iter().any(|w| TEXT_WORDS.contains(&w.as_str()))
        && !words.iter().any(|w| PATH_WORDS.contains(&w.as_str()))
}

/// What a tool's JSON input schema says about its properties (top level and nested
/// `properties`, by name): which are paths and which are free text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaHints {
    /// Declared paths: `"format"` a path format, or `"x-iron-path": true`.
    pub paths: BTreeSet<String>,
    /// Declared free text: `"x-iron-path": false`.
    pub text: BTreeSet<String>,
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

    fn kind(&self, name: &str) -> Kind {
        if self.paths.contains(name) || path_like_name(name) {
            Kind::Path
        } else if self.text.contains(name) || text_like_name(name) {
            Kind::Text
        } else {
            Kind::Maybe
        }
    }
}

/// How gate 2 reads an argument, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Named or declared a path: must be a string, and is checked.
    Path,
    /// Named or declared free text: not checked.
    Text,
    /// Anything else: a string is checked as a possible path.
    Maybe,
}

/// The leaves of `value` gate 2 looks at, by argument name (`a.b[0]`), with how it reads
/// them; array items take the kind of the array.
fn collect_paths(
    value: &Value,
    name: &str,
    kind: Kind,
    hints: &SchemaHints,
    out: &mut Vec<(String, Kind, Value)>,
) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let child = if name.is_empty() {
                    k.clone()
                } else {
                    format!("{name}.{k}")
                };
                collect_paths(v, &child, hints.kind(k), hints, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_paths(v, &format!("{name}[{i}]"), kind, hints, out);
            }
        }
        Value::Null => {}
        _ if kind == Kind::Text => {}
        other if kind == Kind::Maybe && !other.is_string() => {}
        other => out.push((name.to_string(), kind, other.clone())),
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_that_are_paths() {
        for n in [
            "path",
            "paths",
            "filePath",
            "repo_path",
            "source",
            "destination",
            "root",
            "targetDir",
        ] {
            assert!(path_like_name(n), "{n}");
        }
        for n in ["content", "text", "pattern", "edits", "oldText", "message"] {
            assert!(!path_like_name(n), "{n}");
        }
    }

    #[test]
    fn names_that_are_free_text() {
        for n in [
            "content",
            "oldText",
            "commit_message",
            "observations",
            "query",
        ] {
            assert!(text_like_name(n), "{n}");
        }
        // A path word wins: these are checked.
        for n in [
            "text_file",
            "contentPath",
            "dst",
            "target",
            "output",
            "branch",
        ] {
            assert!(!text_like_name(n), "{n}");
        }
    }

    #[test]
    fn every_string_but_free_text_is_collected() {
        let args = json!({
            "paths": ["a", "b"], "opts": {"dir": "c", "dst": "d"}, "content": "/aem/x",
            "edits": [{"oldText": "/x", "newText": "/y"}], "target": "t", "n": null,
            "count": 3, "notes": ["free", "text"]
        });
        let mut out = Vec::new();
        collect_paths(&args, "", Kind::Maybe, &SchemaHints::default(), &mut out);
        let names: Vec<(&str, Kind)> = out.iter().map(|(n, k, _)| (n.as_str(), *k)).collect();
        assert_eq!(
            names,
            [
                ("opts.dir", Kind::Path),
                ("opts.dst", Kind::Maybe),
                ("paths[0]", Kind::Path),
                ("paths[1]", Kind::Path),
                ("target", Kind::Maybe),
            ]
        );
    }

    #[test]
    fn schema_hints() {
        let schema = json!({"type": "object", "properties": {
            "out": {"type": "string", "format": "path"},
            "where": {"type": "string", "x-iron-path": true},
            "patch": {"type": "string", "x-iron-path": false},
            "text": {"type": "string"}
        }});
        let hints = SchemaHints::of(&schema);
        assert_eq!(hints.paths.iter().collect::<Vec<_>>(), ["out", "where"]);
        assert_eq!(hints.kind("patch"), Kind::Text);
        assert_eq!(hints.kind("other"), Kind::Maybe);
    }

    #[test]
    fn lexical_parts_resolve_without_links() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let r = resolve_path(&base, Path::new("a/./b/../c//")).unwrap();
        assert_eq!(r, base.join("a/c"));
        let r = resolve_path(&base, Path::new("../../x")).unwrap();
        assert_eq!(r, base.parent().unwrap().parent().unwrap().join("x"));
    }

    #[test]
    fn dangling_links_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(base.join("secret/new.md"), base.join("link")).unwrap();
        assert_eq!(
            resolve_path(&base, Path::new("link")).unwrap(),
            base.join("secret/new.md")
        );
    }

    #[test]
    fn link_loops_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(base.join("b"), base.join("a")).unwrap();
        std::os::unix::fs::symlink(base.join("a"), base.join("b")).unwrap();
        assert!(resolve_path(&base, Path::new("a/x")).is_err());
    }
}
