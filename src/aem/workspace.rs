//! `workspace:` in AEM.md: the tree a mesh's experts change, through a scratch copy per
//! expert process, and the command that checks the result once approved hunks are applied.
//!
//! ```yaml
//! workspace:
//!   target: .                 # relative to the project; no `..`, no `${…}`
//!   provider: git_worktree    # or `copy` (a target that is not a git repository)
//!   verify: [cargo, test]     # optional: run confined on a copy of the result
//!   verify_secs: 900          # its time limit (default 600)
//!   network: false            # whether confined commands may use the network
//!   toolchain: [~/.cargo, ~/.rustup]  # shown read-only though the home is masked
//! ```
//!
//! A local server whose arguments name `${IRON_SCRATCH}` works in that scratch, and so does the
//! native `sandbox` (`run_confined`); a mesh that registers one without declaring `workspace:`
//! is refused, because nothing would make the scratch and the server could never work.
//! An expert that works in a scratch starts all its local servers confined in it (the expert's
//! `confined` module).

use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::model::{ServerDescriptor, ServerEntry, WorkspaceEntry, WorkspaceProvider};
use super::raw::RawWorkspace;
use super::roots::SCRATCH_VAR;
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// Default time limit of the verify command, in seconds.
pub const DEFAULT_VERIFY_SECS: u64 = 600;
/// Longest time limit of the verify command, in seconds.
const MAX_VERIFY_SECS: u64 = 24 * 3600;

/// The native server that runs commands in the scratch (`run_confined`).
pub const SANDBOX_SERVER: &str = "sandbox";

/// Whether the server `name` reached through `descriptor` works in the scratch: a local
/// server naming `${IRON_SCRATCH}` among its arguments, or the native sandbox.
pub fn works_in_scratch(name: &str, descriptor: &ServerDescriptor) -> bool {
    match descriptor {
        ServerDescriptor::Local { args, .. } => args
            .iter()
            .any(|a| a.contains(&format!("${{{SCRATCH_VAR}"))),
        ServerDescriptor::Native => name == SANDBOX_SERVER,
        ServerDescriptor::Remote { .. } => false,
    }
}

/// Validates `workspace:` (absent: `None`) and the servers that need it.
pub(crate) fn validate_workspace(
    raw: Option<&RawWorkspace>,
    servers: &BTreeMap<String, ServerEntry>,
    doc: &Document,
    sink: &mut Sink,
) -> Option<WorkspaceEntry> {
    let mut bad = |keys: &[&str], what: String, valid: &str| {
        sink.push(
            &doc.path,
            doc.line_at(keys),
            keys.join("."),
            AemError::BadWorkspace(what),
            Some(valid.to_string()),
        );
    };
    let Some(raw) = raw else {
        for (name, s) in servers {
            if works_in_scratch(name, &s.descriptor) {
                let key = match s.descriptor {
                    ServerDescriptor::Local { .. } => "args",
                    _ => "transport",
                };
                bad(
                    &["servers", name, key],
                    format!(
                        "server `{name}` works in the scratch, but the mesh declares no `workspace:`, so nothing would make one"
                    ),
                    "a `workspace:` block naming the target tree",
                );
            }
        }
        return None;
    };
    let target = raw.target.as_deref().unwrap_or(".");
    let path = Path::new(target);
    let target_ok = !target.is_empty()
        && !target.contains("${")
        && !path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !target_ok {
        bad(
            &["workspace", "target"],
            format!("target `{target}` is not a path inside the project"),
            "a relative path without `..` or `${…}`, e.g. `.`",
        );
    }
    let provider = match raw.provider.as_deref() {
        None | Some("git_worktree") => WorkspaceProvider::GitWorktree,
        Some("copy") => WorkspaceProvider::Copy,
        Some(other) => {
            bad(
                &["workspace", "provider"],
                format!("unknown provider `{other}`"),
                "`git_worktree` or `copy`",
            );
            WorkspaceProvider::GitWorktree
        }
    };
    let verify = raw.verify.clone().unwrap_or_default();
    if raw.verify.is_some() && (verify.is_empty() || verify.iter().any(|w| w.trim().is_empty())) {
        bad(
            &["workspace", "verify"],
            "verify must name a program and its arguments".to_string(),
            "a list such as `[cargo, test]`",
        );
    }
    let verify_secs = raw.verify_secs.unwrap_or(DEFAULT_VERIFY_SECS);
    if verify_secs == 0 || verify_secs > MAX_VERIFY_SECS {
        bad(
            &["workspace", "verify_secs"],
            format!("{verify_secs} s"),
            "between 1 and 86400",
        );
    }
    let toolchain = raw.toolchain.clone().unwrap_or_default();
    for (i, entry) in toolchain.iter().enumerate() {
        if let Err(why) = check_toolchain(entry) {
            bad(
                &["workspace", "toolchain"],
                format!("toolchain entry {} `{entry}` {why}", i + 1),
                "an absolute path or `~/…`, without `..` or `${…}`, e.g. `~/.cargo`",
            );
        }
    }
    Some(WorkspaceEntry {
        target: target.to_string(),
        provider,
        verify,
        verify_secs,
        network: raw.network.unwrap_or(false),
        toolchain,
    })
}

/// Why a `toolchain:` entry is not acceptable: it must name a tree below `/` or `~`, never
/// the whole of either (that would undo the mask), without `..` or variables.
fn check_toolchain(entry: &str) -> Result<(), &'static str> {
    let rest = if let Some(rest) = entry.strip_prefix("~/") {
        rest
    } else if let Some(rest) = entry.strip_prefix('/') {
        rest
    } else {
        return Err("is neither absolute nor under `~/`");
    };
    let path = Path::new(rest);
    if entry.contains("${") || entry.chars().any(char::is_control) {
        return Err("holds a variable or a control character");
    }
    if path.components().count() == 0
        || !path.components().all(|c| matches!(c, Component::Normal(_)))
    {
        return Err("must name a directory below it, without `.` or `..`");
    }
    Ok(())
}
