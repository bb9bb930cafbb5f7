//! Where a local server that changes files may work. A `local` server holding a granted
//! write-class tool (effect `write` or `destructive`) may name, as a path, only
//!
//! * `${IRON_SCRATCH}`: the task's scratch workspace, which the workspace layer sets for a
//!   task (no default: without a scratch the server does not start, it never falls back to
//!   the real tree), or
//! * a directory under the project's `workspace/` (`./workspace/archive`, or a reference whose
//!   default is one, `${ARCHIVE:-./workspace/archive}`; the expert checks the expanded value
//!   again when it starts).
//!
//! Anything else an argument could name — `.`, an absolute path, `~`, a reference without a
//! default — is refused at compile time: it would let the tool change the checkout or the
//! machine. An argument counts as a path when it is a `${…}` reference, starts with `.`, `/`
//! or `~`, or starts with `workspace/`; for `--flag=value` the value is judged. Flags and
//! package names (`-y`, `@modelcontextprotocol/server-filesystem`) are not paths, and neither
//! is a first positional argument that is an existing file (the script an interpreter runs:
//! `node /opt/fs/index.js ./workspace/notes`). A server with no path among its arguments (a
//! database client, an API) is not judged here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

use super::model::{DeliveryChannel, ToolGrant};
use crate::core::effect::Effect;

/// The variable through which the workspace layer names a task's scratch workspace.
pub const SCRATCH_VAR: &str = "IRON_SCRATCH";

/// The project directory under which local servers keep what they write.
pub const WORKSPACE_DIR: &str = "workspace";

/// A place a write-capable local server's arguments name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    /// `${IRON_SCRATCH}`: the task's scratch workspace.
    Scratch,
    /// A directory under `workspace/`; the argument (or the value of `--flag=value`) as
    /// written, to be expanded when the server starts.
    Workspace(String),
}

/// An argument naming a place outside the scratch workspace and `workspace/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideRoot {
    /// The argument as written.
    pub arg: String,
    /// Why it is refused.
    pub why: String,
}

/// The servers an expert may change things through, each with the tools that can: its granted
/// tools of effect `write` or `destructive`, and the tools of its `delivery` channels (declared
/// in `channels`) with such an effect. The compiler and the expert at start ask this same
/// question.
pub fn write_tools<'a>(
    grants: &'a BTreeMap<String, ToolGrant>,
    delivery: impl IntoIterator<Item = &'a String>,
    channels: &'a BTreeMap<String, DeliveryChannel>,
) -> BTreeMap<&'a str, BTreeSet<&'a str>> {
    let mut writers: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for g in grants.values().filter(|g| g.effect >= Effect::Write) {
        writers.entry(&g.server).or_default().insert(&g.tool);
    }
    for c in delivery {
        if let Some(DeliveryChannel::Tool {
            server,
            tool,
            effect,
            ..
        }) = channels.get(c)
            && *effect >= Effect::Write
        {
            writers.entry(server).or_default().insert(tool);
        }
    }
    writers
}

/// The roots a local server's `args` name, or the first argument that names a path outside
/// the scratch workspace and `workspace/`.
pub fn writable_roots(args: &[String]) -> Result<Vec<Root>, OutsideRoot> {
    let mut roots = Vec::new();
    let mut first_positional = true;
    for arg in args {
        let value = match arg.strip_prefix('-') {
            Some(flag) => match flag.split_once('=') {
                Some((_, value)) => value,
                None => continue,
            },
            None if std::mem::take(&mut first_positional) && Path::new(arg).is_file() => {
                continue;
            }
            None => arg.as_str(),
        };
        let refuse = |why: String| OutsideRoot {
            arg: arg.clone(),
            why,
        };
        if value.contains("${") {
            let Some((var, default)) = whole_reference(value) else {
                return Err(refuse(
                    "mixes a `${…}` reference with other text; write the root as an argument of its own".into(),
                ));
            };
            match (var == SCRATCH_VAR, default) {
                (true, None) => roots.push(Root::Scratch),
                (true, Some(d)) => {
                    return Err(refuse(format!(
                        "falls back to `{d}` when the task has no scratch workspace; write `${{{SCRATCH_VAR}}}` with no default"
                    )));
                }
                (false, Some(d)) if under_workspace(d) => {
                    roots.push(Root::Workspace(value.to_string()));
                }
                (false, Some(d)) => {
                    return Err(refuse(format!(
                        "its default `{d}` is outside `{WORKSPACE_DIR}/`"
                    )));
                }
                (false, None) => {
                    return Err(refuse(format!(
                        "may name any directory; give it a default under `{WORKSPACE_DIR}/`, or use `${{{SCRATCH_VAR}}}`"
                    )));
                }
            }
        } else if value.starts_with(['.', '/', '~'])
            || value == WORKSPACE_DIR
            || value.starts_with("workspace/")
        {
            if !under_workspace(value) {
                return Err(refuse(format!(
                    "is outside `{WORKSPACE_DIR}/` and is not the scratch workspace (`${{{SCRATCH_VAR}}}`)"
                )));
            }
            roots.push(Root::Workspace(value.to_string()));
        }
    }
    Ok(roots)
}

/// `${VAR}` → (`VAR`, None); `${VAR:-d}` → (`VAR`, Some(`d`)); anything else → None.
fn whole_reference(value: &str) -> Option<(&str, Option<&str>)> {
    let inner = value.strip_prefix("${")?.strip_suffix('}')?;
    if inner.contains(['{', '}', '$']) {
        return None;
    }
    Some(match inner.split_once(":-") {
        Some((var, default)) => (var, Some(default)),
        None => (inner, None),
    })
}

/// A relative path to a directory strictly inside `workspace/`, with no `..`.
pub fn under_workspace(path: &str) -> bool {
    let mut components = Path::new(path)
        .components()
        .filter(|c| *c != Component::CurDir);
    components.next() == Some(Component::Normal(WORKSPACE_DIR.as_ref())) && {
        let rest: Vec<Component> = components.collect();
        !rest.is_empty() && rest.iter().all(|c| matches!(c, Component::Normal(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(args: &[&str]) -> Result<Vec<Root>, OutsideRoot> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        writable_roots(&args)
    }

    #[test]
    fn scratch_and_workspace_directories_are_roots() {
        assert_eq!(
            roots(&[
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "${IRON_SCRATCH}"
            ]),
            Ok(vec![Root::Scratch])
        );
        assert_eq!(
            roots(&["mcp-server-git", "--repository", "${IRON_SCRATCH}"]),
            Ok(vec![Root::Scratch])
        );
        assert_eq!(
            roots(&["${ARCHIVE:-./workspace/news}", "--root=workspace/b"]),
            Ok(vec![
                Root::Workspace("${ARCHIVE:-./workspace/news}".into()),
                Root::Workspace("workspace/b".into())
            ])
        );
        assert_eq!(
            roots(&["mcp-server-time", "--local-timezone", "UTC"]),
            Ok(vec![])
        );
        // The script an interpreter runs is not a root; the same file later is.
        let script = env!("CARGO_MANIFEST_DIR").to_string() + "/Cargo.toml";
        assert_eq!(
            roots(&[&script, "./workspace/a"]),
            Ok(vec![Root::Workspace("./workspace/a".into())])
        );
        assert!(roots(&["./workspace/a", &script]).is_err());
    }

    #[test]
    fn anything_that_could_reach_the_checkout_or_the_machine_is_refused() {
        for bad in [
            ".",
            "./",
            "/",
            "/tmp/x",
            "~/notes",
            "./workspace",
            "workspace",
            "./workspace/../aem",
            "workspace/a/../../src",
            "${IRON_SCRATCH:-.}",
            "${ROOT}",
            "${ROOT:-/srv}",
            "${ROOT:-workspace}",
            "--root=.",
            "--root=${HOME}",
            "prefix${ROOT}",
        ] {
            assert!(
                roots(&["-y", "server", bad]).is_err(),
                "{bad} must be refused"
            );
        }
        let refused = roots(&["${IRON_SCRATCH:-.}"]).unwrap_err();
        assert_eq!(refused.arg, "${IRON_SCRATCH:-.}");
        assert!(refused.why.contains("falls back to `.`"), "{}", refused.why);
    }
}
