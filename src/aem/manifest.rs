//! `tool_manifest.json`: the tools each server declares, keyed by mesh and server, with
//! the descriptor hash its probe record is keyed by.
//!
//! A **probe** (the tools layer starts each local server once and lists its tools) adds a
//! [`ProbeRecord`] to a server: the tools with their descriptions, input schemas and
//! annotations, and the descriptor hash they were probed with. A build without a probe
//! carries the recorded probes over ([`ToolManifest::carry_probes`]); a record whose hash
//! differs from the server's current descriptor hash is **stale** and is not used.

use super::model::{Catalog, DeclaredTool, FORMAT_VERSION, ServerDescriptor};
use crate::core::effect::Effect;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The tool manifest written beside the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolManifest {
    /// Same as the catalog's.
    pub format_version: u32,
    /// Servers by `<mesh>/<server>`.
    pub servers: BTreeMap<String, ManifestServer>,
}

/// One server in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestServer {
    /// Mesh that registers it.
    pub mesh: String,
    /// Server name in that mesh.
    pub server: String,
    /// SHA-256 of the descriptor's canonical JSON.
    pub descriptor_hash: String,
    /// How it is reached.
    pub descriptor: ServerDescriptor,
    /// Where the tool list came from: `probed` when a current probe record is attached,
    /// `native` for a bridge Iron ships (the binary describes its tools), else `declared`
    /// (AEM.md).
    pub origin: String,
    /// Declared tools by name, with effects.
    pub tools: BTreeMap<String, DeclaredTool>,
    /// What the last probe of the running server found (absent: never probed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeRecord>,
}

/// The tools a running server listed when it was probed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// The descriptor hash the server was started with when probed.
    pub descriptor_hash: String,
    /// Its tools by name.
    pub tools: BTreeMap<String, ProbedTool>,
}

/// One tool as a running server listed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbedTool {
    /// The server's description.
    pub description: Option<String>,
    /// JSON schema of its arguments.
    pub input_schema: serde_json::Value,
    /// MCP `readOnlyHint`.
    pub read_only_hint: Option<bool>,
    /// MCP `destructiveHint`.
    pub destructive_hint: Option<bool>,
    /// MCP `idempotentHint`.
    pub idempotent_hint: Option<bool>,
    /// MCP `openWorldHint`.
    pub open_world_hint: Option<bool>,
    /// The effect the hints claim (may only raise the derived effect).
    pub annotation: Option<Effect>,
}

/// Which servers have a usable probe record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeStatus {
    /// `<mesh>/<server>` with a current record.
    pub probed: Vec<String>,
    /// Records made with another descriptor: probe again.
    pub stale: Vec<String>,
    /// Local servers never probed.
    pub unprobed: Vec<String>,
}

impl ManifestServer {
    /// The probe record, when it was made with the current descriptor.
    pub fn current_probe(&self) -> Option<&ProbeRecord> {
        self.probe
            .as_ref()
            .filter(|p| p.descriptor_hash == self.descriptor_hash)
    }

    /// A record exists but was made with another descriptor.
    pub fn is_stale(&self) -> bool {
        self.probe.is_some() && self.current_probe().is_none()
    }

    /// Attaches a probe record (and sets `origin` accordingly).
    pub fn set_probe(&mut self, record: ProbeRecord) {
        self.probe = Some(record);
        self.origin = if self.current_probe().is_some() {
            "probed"
        } else {
            "declared"
        }
        .to_string();
    }
}

impl ToolManifest {
    /// Carries every probe record of `previous` over to the same `<mesh>/<server>` here.
    /// Records made with another descriptor are kept (and reported stale) until a new
    /// probe replaces them. A native server keeps what this binary says of its tools.
    pub fn carry_probes(&mut self, previous: &ToolManifest) {
        for (key, server) in &mut self.servers {
            if server.descriptor == ServerDescriptor::Native {
                continue;
            }
            if let Some(record) = previous.servers.get(key).and_then(|s| s.probe.clone()) {
                server.set_probe(record);
            }
        }
    }

    /// Which servers are probed, stale, or never probed (local servers only: native and
    /// remote ones are not probed from here).
    pub fn probe_status(&self) -> ProbeStatus {
        let mut status = ProbeStatus::default();
        for (key, s) in &self.servers {
            // A native server's tools are described by this binary, never probed.
            if s.descriptor == ServerDescriptor::Native {
                continue;
            }
            if s.current_probe().is_some() {
                status.probed.push(key.clone());
            } else if s.is_stale() {
                status.stale.push(key.clone());
            } else if matches!(s.descriptor, ServerDescriptor::Local { .. }) {
                status.unprobed.push(key.clone());
            }
        }
        status
    }
}

impl Catalog {
    /// The tool manifest for this catalog (no probe records).
    pub fn tool_manifest(&self) -> ToolManifest {
        let mut servers = BTreeMap::new();
        for (mesh_name, mesh) in &self.meshes {
            for (name, s) in &mesh.servers {
                let native = match s.descriptor {
                    ServerDescriptor::Native => native_probe(name, &s.descriptor_hash),
                    _ => None,
                };
                servers.insert(
                    format!("{mesh_name}/{name}"),
                    ManifestServer {
                        mesh: mesh_name.clone(),
                        server: name.clone(),
                        descriptor_hash: s.descriptor_hash.clone(),
                        descriptor: s.descriptor.clone(),
                        origin: if native.is_some() {
                            "native"
                        } else {
                            "declared"
                        }
                        .to_string(),
                        tools: s.tools.clone(),
                        probe: native,
                    },
                );
            }
        }
        ToolManifest {
            format_version: FORMAT_VERSION,
            servers,
        }
    }
}
/// What the binary says about native server `name`'s tools, as a probe record made with
/// `descriptor_hash` (`None` when Iron ships no such server).
pub(crate) fn native_probe(name: &str, descriptor_hash: &str) -> Option<ProbeRecord> {
    let tools: std::collections::BTreeMap<String, ProbedTool> = super::native::NATIVE_TOOLS
        .iter()
        .filter(|t| t.server == name)
        .map(|t| {
            (
                t.tool.to_string(),
                ProbedTool {
                    description: Some(t.description.to_string()),
                    input_schema: super::native::native_schema(t.server, t.tool),
                    read_only_hint: None,
                    destructive_hint: None,
                    idempotent_hint: None,
                    open_world_hint: None,
                    annotation: None,
                },
            )
        })
        .collect();
    (!tools.is_empty()).then(|| ProbeRecord {
        descriptor_hash: descriptor_hash.to_string(),
        tools,
    })
}
