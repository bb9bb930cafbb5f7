//! The probe behind `iron catalog build --probe`: start each declared `local` server once,
//! list its tools with their input schemas and annotations, and record them in
//! `tool_manifest.json` under the server's descriptor hash.
//!
//! The probe also checks the catalog against what the servers said: a tool the mesh
//! declares that the server does not offer, and a grant whose effect the live annotation
//! raises above the expert's clearance (or beyond what its reviewed declaration may
//! lower). Gate 1 refuses such calls at run time anyway; the report lets the build say so
//! first.

use super::client::{LaunchSpec, McpClient};
use super::env::EnvMap;
use super::error::ToolError;
use crate::aem::{
    self, Catalog, ProbeRecord, ProbeStatus, ProbedTool, ServerDescriptor, TOOL_MANIFEST_FILE,
    ToolManifest,
};
use crate::core::effect::{Clearance, Effect, resolve_effect};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How servers are started for the probe.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Environment `${VAR}` references expand from.
    pub env: EnvMap,
    /// Working directory of the servers.
    pub workdir: PathBuf,
    /// Start + handshake + listing timeout per server.
    pub start_timeout: Duration,
}

/// A grant the probed annotations make impossible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantConflict {
    /// Expert id.
    pub expert: String,
    /// `server/tool`.
    pub tool: String,
    /// Its clearance.
    pub clearance: Clearance,
    /// What is wrong, in words.
    pub detail: String,
}

/// What a probe did.
#[derive(Debug, Default)]
pub struct ProbeReport {
    /// `<mesh>/<server>` probed successfully.
    pub probed: Vec<String>,
    /// `<mesh>/<server>` that could not be probed, and why (their old record is kept).
    pub failed: Vec<(String, ToolError)>,
    /// `(<mesh>/<server>, tool)` declared in AEM.md but not offered by the server.
    pub missing: Vec<(String, String)>,
    /// Grants the live annotations make impossible.
    pub conflicts: Vec<GrantConflict>,
    /// Status of every server after the probe.
    pub status: ProbeStatus,
    /// Where the manifest was written.
    pub manifest_path: PathBuf,
}

/// Probes every local server of `catalog` and writes `tool_manifest.json` into `out_dir`
/// (probe records of servers that could not be probed are carried over from the manifest
/// already there). Servers with the same descriptor are started once.
pub async fn probe(
    catalog: &Catalog,
    out_dir: &Path,
    options: &ProbeOptions,
) -> io::Result<ProbeReport> {
    let mut manifest = catalog.tool_manifest();
    if let Ok(previous) = aem::read_tool_manifest(&out_dir.join(TOOL_MANIFEST_FILE)) {
        manifest.carry_probes(&previous);
    }
    let mut report = ProbeReport::default();
    let mut by_hash: BTreeMap<String, Result<ProbeRecord, ToolError>> = BTreeMap::new();
    let keys: Vec<String> = manifest.servers.keys().cloned().collect();
    for key in keys {
        let entry = &manifest.servers[&key];
        if !matches!(entry.descriptor, ServerDescriptor::Local { .. }) {
            continue;
        }
        let hash = entry.descriptor_hash.clone();
        if !by_hash.contains_key(&hash) {
            let outcome = probe_one(&entry.server, &entry.descriptor, &hash, options).await;
            by_hash.insert(hash.clone(), outcome);
        }
        match &by_hash[&hash] {
            Ok(record) => {
                let entry = manifest.servers.get_mut(&key).expect("key listed above");
                for tool in entry.tools.keys() {
                    if !record.tools.contains_key(tool) {
                        report.missing.push((key.clone(), tool.clone()));
                    }
                }
                entry.set_probe(record.clone());
                report.probed.push(key);
            }
            Err(e) => report.failed.push((key, e.clone())),
        }
    }
    report.conflicts = conflicts(catalog, &manifest);
    report.status = manifest.probe_status();
    report.manifest_path = aem::write_tool_manifest(&manifest, out_dir)?;
    Ok(report)
}

/// Which servers of the manifest in `out_dir` are probed, stale or never probed: what a
/// build without `--probe` reports.
pub fn manifest_status(out_dir: &Path) -> io::Result<ProbeStatus> {
    Ok(aem::read_tool_manifest(&out_dir.join(TOOL_MANIFEST_FILE))?.probe_status())
}

async fn probe_one(
    server: &str,
    descriptor: &ServerDescriptor,
    hash: &str,
    options: &ProbeOptions,
) -> Result<ProbeRecord, ToolError> {
    let spec = LaunchSpec::from_descriptor(server, descriptor, &options.env, &options.workdir)
        .ok_or_else(|| ToolError::StartFailed {
        server: server.to_string(),
        reason: "not a local server".into(),
        stderr: Vec::new(),
    })??;
    let client = McpClient::start(&spec, options.start_timeout, None).await?;
    let tools = client
        .tools()
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                ProbedTool {
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                    read_only_hint: t.read_only_hint,
                    destructive_hint: t.destructive_hint,
                    idempotent_hint: t.idempotent_hint,
                    open_world_hint: t.open_world_hint,
                    annotation: t.annotation(),
                },
            )
        })
        .collect();
    client.shutdown().await;
    Ok(ProbeRecord {
        descriptor_hash: hash.to_string(),
        tools,
    })
}

/// Grants whose effect, with the probed annotation, the expert may not hold.
pub fn conflicts(catalog: &Catalog, manifest: &ToolManifest) -> Vec<GrantConflict> {
    let mut out = Vec::new();
    for expert in catalog.experts.values() {
        for (key, grant) in &expert.tools {
            let probed = manifest
                .servers
                .get(&format!("{}/{}", expert.mesh, grant.server))
                .and_then(|s| s.current_probe())
                .and_then(|p| p.tools.get(&grant.tool))
                .and_then(|t| t.annotation);
            let annotation = grant.annotation.max(probed);
            let conflict = |detail: String| GrantConflict {
                expert: expert.id.clone(),
                tool: key.clone(),
                clearance: expert.clearance,
                detail,
            };
            match resolve_effect(&grant.tool, annotation, grant.declared) {
                Err(refused) => out.push(conflict(format!(
                    "the server's annotation raises it and the declaration over-reaches: {refused}"
                ))),
                Ok(r) => {
                    let effect: Effect = r.effect.max(grant.effect);
                    if !expert.clearance.permits(effect) {
                        out.push(conflict(format!(
                            "the server annotates it `{effect}`, which needs clearance `{}`; declare a lower effect in capabilities.md (within the cap) or raise the clearance",
                            effect.required_clearance()
                        )));
                    }
                }
            }
        }
    }
    out
}
