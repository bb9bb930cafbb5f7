//! Gate 2, the path guard: before a `write` or `destructive` tool runs, every path-like
//! argument is resolved the way the kernel would resolve it and checked against the
//! governance files (never writable) and the roots the expert may write.
//!
//! **Which arguments are paths.** An argument (at any depth of the arguments object) whose
//! name holds one of the words in [`PATH_WORDS`] (`path`, `paths`, `file`, `dir`,
//! `directory`, `root`, `source`, `destination`, …, split like tool names, so `filePath`
//! and `repo_path` count), or whose JSON schema in the manifest says it is a path
//! (`"format"` one of `path`, `file-path`, `directory-path`, `uri-reference`, or
//! `"x-iron-path": true`). Its value may be a string, or an array of strings; `file://`
//! URIs are read as paths.
//!
//! **Resolution.** A relative path is taken against the server's root (see
//! [`server_root`]). Then each component is walked on the real filesystem: `.` is dropped,
//! `..` goes to the parent of what has been resolved so far, and a symbolic link is
//! replaced by its target, even when the target does not exist (a dangling link into
//! `aem/` is still a link into `aem/`). The part that does not exist yet is kept as
//! written. Trailing slashes and `/./` change nothing. A path starting with `~` is refused:
//! the server would expand it against a home this guard cannot see.
//!
//! **Checks.** The resolved path is refused when it is inside, equal to, or an ancestor of
//! a governance path (`aem/`, `config/`, `.git/` under the project root and under every
//! granted root, the compiled `catalog.json` and `tool_manifest.json`, and any `.git`
//! directory anywhere); and when it is outside every granted root.
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

    /// Gate 2 for one call: every path-like argument of `arguments` (names, plus the
    /// `schema_paths` the tool's input schema marks) is resolved against `root` and
    /// checked. Returns the resolved paths, by argument, when all are allowed.
    pub fn check_call(
        &self,
        tool: &str,
        root: &Path,
        arguments: &Value,
        schema_paths: &BTreeSet<String>,
    ) -> Result<Vec<(String, PathBuf)>, Box<GateDenial>> {
        let mut found = Vec::new();
        collect_paths(arguments, "", false, schema_paths, &mut found);
        let mut resolved_all = Vec::new();
        for (argument, value) in found {
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

/// The properties of a JSON input schema that declare themselves paths (top level and
/// nested `properties`), by name.
pub fn schema_path_hints(schema: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    fn walk(schema: &Value, out: &mut BTreeSet<String>) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (name, prop) in props {
            let format = prop.get("format").and_then(Value::as_str);
            let hinted = matches!(
                format,
                Some("path" | "file-path" | "directory-path" | "uri-reference")
            ) || prop.get("x-iron-path").and_then(Value::as_bool) == Some(true);
            if hinted {
                out.insert(name.clone());
            }
            walk(prop, out);
            if let Some(items) = prop.get("items") {
                walk(items, out);
            }
        }
    }
    walk(schema, &mut out);
    out
}

fn collect_paths(
    value: &Value,
    name: &str,
    path_like: bool,
    hints: &BTreeSet<String>,
    out: &mut Vec<(String, Value)>,
) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let child = if name.is_empty() {
                    k.clone()
                } else {
                    format!("{name}.{k}")
                };
                let like = path_like_name(k) || hints.contains(k);
                collect_paths(v, &child, like, hints, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_paths(v, &format!("{name}[{i}]"), path_like, hints, out);
            }
        }
        Value::Null => {}
        other if path_like => out.push((name.to_string(), other.clone())),
        _ => {}
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
    fn collects_nested_and_array_paths() {
        let args =
            json!({"paths": ["a", "b"], "opts": {"dir": "c"}, "content": "/aem/x", "n": null});
        let mut out = Vec::new();
        collect_paths(&args, "", false, &BTreeSet::new(), &mut out);
        let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["opts.dir", "paths[0]", "paths[1]"]);
    }

    #[test]
    fn schema_hints() {
        let schema = json!({"type": "object", "properties": {
            "out": {"type": "string", "format": "path"},
            "where": {"type": "string", "x-iron-path": true},
            "text": {"type": "string"}
        }});
        let hints = schema_path_hints(&schema);
        assert_eq!(
            hints.into_iter().collect::<Vec<_>>(),
            ["out".to_string(), "where".to_string()]
        );
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
