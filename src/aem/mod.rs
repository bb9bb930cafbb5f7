//! The catalog layer: the only reader of `aem/`. It validates agent folders, collects
//! every error with its place, and compiles them into `catalog.json` and
//! `tool_manifest.json`, which are all the runtime ever reads.
//!
//! The format is documented in `aem/README.md`. This layer uses `crate::core` only.

mod channels;
mod error;
mod expert;
mod frontmatter;
mod limits;
mod load;
mod manifest;
pub mod memory;
mod mesh;
mod model;
pub mod native;
mod portable;
mod positions;
mod raw;
pub mod roots;
mod rules;
pub mod scaffold;
mod servers;
mod skill;
pub mod transfer;
pub mod triggers;
pub mod workspace;

pub use error::{AemError, CatalogErrors, Diagnostic};
pub use limits::{DEFAULT_MAX_ITERATIONS, MAX_COST_USD, MAX_ITERATIONS, MAX_SECS, MAX_TOKENS};
pub use manifest::{ManifestServer, ProbeRecord, ProbeStatus, ProbedTool, ToolManifest};
pub use mesh::{
    DEFAULT_CLEARANCE, DEFAULT_DELEGATION_SECS, DEFAULT_IDLE_SECS, DEFAULT_TASK_SECS,
    DEFAULT_TOOL_SECS,
};
pub use model::{
    Access, Catalog, DeclaredTool, DelegationScope, DeliveryChannel, ExpertEntry, ExpertHashes,
    FORMAT_VERSION, FileRecord, MemoryMount, MeshEntry, MeshStatus, PeerRule, Scope,
    ServerDescriptor, ServerEntry, SourceEntry, Startup, TaskBudget, Timeouts, ToolGrant,
    TriggerEntry, TriggerOn, WorkspaceEntry, WorkspaceProvider,
};
pub use native::native_tools;
pub use servers::descriptor_hash;

use sha2::{Digest, Sha256};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// File name of the compiled catalog.
pub const CATALOG_FILE: &str = "catalog.json";
/// File name of the tool manifest.
pub const TOOL_MANIFEST_FILE: &str = "tool_manifest.json";

/// Compiles the `aem/` tree at `aem_dir` (one folder per mesh). Returns the catalog, or
/// every error found, in file order; nothing is written.
pub fn compile(aem_dir: &Path) -> Result<Catalog, CatalogErrors> {
    let mut sink = error::Sink::default();
    match load::compile_tree(aem_dir, &mut sink) {
        Some(catalog) if sink.items.is_empty() => Ok(catalog),
        _ => Err(CatalogErrors(sink.items)),
    }
}

/// Writes `catalog.json` and `tool_manifest.json` into `out_dir` (created if missing),
/// each through a temporary file and a rename, and returns the path of `catalog.json`.
/// Probe records of a `tool_manifest.json` already in `out_dir` are carried over (see
/// [`ToolManifest::carry_probes`]); an unreadable previous manifest is ignored.
pub fn write_catalog(catalog: &Catalog, out_dir: &Path) -> io::Result<PathBuf> {
    fs::create_dir_all(out_dir)?;
    let mut manifest = catalog.tool_manifest();
    if let Ok(previous) = read_tool_manifest(&out_dir.join(TOOL_MANIFEST_FILE)) {
        manifest.carry_probes(&previous);
    }
    write_tool_manifest(&manifest, out_dir)?;
    let path = out_dir.join(CATALOG_FILE);
    write_atomic(&path, catalog.to_json().as_bytes())?;
    Ok(path)
}

/// Writes `tool_manifest.json` into `out_dir` through a temporary file and a rename.
pub fn write_tool_manifest(manifest: &ToolManifest, out_dir: &Path) -> io::Result<PathBuf> {
    fs::create_dir_all(out_dir)?;
    let path = out_dir.join(TOOL_MANIFEST_FILE);
    write_atomic(&path, model::to_pretty_json(manifest).as_bytes())?;
    Ok(path)
}

/// Reads a `tool_manifest.json`.
pub fn read_tool_manifest(path: &Path) -> io::Result<ToolManifest> {
    let text = fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Reads a `catalog.json` written by [`write_catalog`].
pub fn read_catalog(path: &Path) -> io::Result<Catalog> {
    let text = fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The catalog of a state directory could not be read.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot read the catalog {}: {source}; run `iron catalog build --out {}` (`iron up` does it at start)",
    path.display(),
    path.parent().unwrap_or(Path::new(".")).display()
)]
pub struct CatalogUnreadable {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: io::Error,
}

/// The catalog a running node reads: `catalog.json` in the state directory.
pub fn read_state_catalog(
    config: &crate::core::config::Config,
) -> Result<Catalog, CatalogUnreadable> {
    let path = config.state_path(Path::new(CATALOG_FILE));
    read_catalog(&path).map_err(|source| CatalogUnreadable { path, source })
}

fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, path)
}

/// SHA-256 of `bytes` as lower-case hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A name usable as an identifier and a namespace token: `[a-z][a-z0-9_-]{0,63}`.
pub(crate) fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// An MCP tool name: `[A-Za-z0-9_.-]{1,128}`.
pub(crate) fn valid_tool_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

/// Whether a server argument looks like a secret written inline.
pub(crate) fn portable_secret(arg: &str) -> bool {
    portable::looks_secret(arg).is_some()
}
