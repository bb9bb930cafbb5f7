//! `tool_manifest.json`: the tools each server declares, keyed by mesh and server, with
//! the descriptor hash that a probed manifest will be keyed by.

use super::model::{Catalog, DeclaredTool, FORMAT_VERSION, ServerDescriptor};
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
    /// Where the tool list came from: `declared` (AEM.md) until probing exists.
    pub origin: String,
    /// Declared tools by name, with effects.
    pub tools: BTreeMap<String, DeclaredTool>,
}

impl Catalog {
    /// The tool manifest for this catalog.
    pub fn tool_manifest(&self) -> ToolManifest {
        let mut servers = BTreeMap::new();
        for (mesh_name, mesh) in &self.meshes {
            for (name, s) in &mesh.servers {
                servers.insert(
                    format!("{mesh_name}/{name}"),
                    ManifestServer {
                        mesh: mesh_name.clone(),
                        server: name.clone(),
                        descriptor_hash: s.descriptor_hash.clone(),
                        descriptor: s.descriptor.clone(),
                        origin: "declared".to_string(),
                        tools: s.tools.clone(),
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
