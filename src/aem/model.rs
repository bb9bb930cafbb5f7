//! The compiled catalog: what the runtime reads instead of `aem/`. Every map is a
//! `BTreeMap` and every list is sorted, so the same tree always gives the same bytes.

use crate::core::effect::{Clearance, Effect};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the `catalog.json` and `tool_manifest.json` layout; bumped on any change a
/// reader must know about.
pub const FORMAT_VERSION: u32 = 1;

/// The whole compiled catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// [`FORMAT_VERSION`] at build time.
    pub format_version: u32,
    /// Meshes by name.
    pub meshes: BTreeMap<String, MeshEntry>,
    /// Experts by id, `<mesh>/<role>`.
    pub experts: BTreeMap<String, ExpertEntry>,
}

/// Who an expert may delegate to: the other experts of its own mesh when the mesh's
/// `delegation` is `all`, less those its capabilities remove, plus those they add (each
/// checked when the catalog was built).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerRule {
    /// Every other expert of its own mesh.
    pub mesh: bool,
    /// Taken out of the mesh's experts, `<mesh>/<role>`, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Added, `<mesh>/<role>`, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
}

impl Catalog {
    /// The experts `id` may delegate to, `<mesh>/<role>`, sorted (none for an unknown id).
    pub fn peers(&self, id: &str) -> Vec<String> {
        let Some(entry) = self.experts.get(id) else {
            return Vec::new();
        };
        let rule = &entry.peers;
        let mut peers: Vec<String> = if rule.mesh {
            let prefix = format!("{}/", entry.mesh);
            self.experts
                .range(prefix.clone()..)
                .take_while(|(other, _)| other.starts_with(&prefix))
                .map(|(other, _)| other.clone())
                .filter(|other| other != id && rule.removed.binary_search(other).is_err())
                .collect()
        } else {
            Vec::new()
        };
        for added in &rule.added {
            if let Err(at) = peers.binary_search(added) {
                peers.insert(at, added.clone());
            }
        }
        peers
    }

    /// The expert with id `<mesh>/<role>`, if the catalog has it.
    pub fn expert(&self, id: &str) -> Option<&ExpertEntry> {
        self.experts.get(id)
    }

    /// The mesh called `name`, if the catalog has it.
    pub fn mesh(&self, name: &str) -> Option<&MeshEntry> {
        self.meshes.get(name)
    }

    /// Experts that may be spawned (their mesh is active), in id order.
    pub fn spawnable(&self) -> impl Iterator<Item = &ExpertEntry> {
        self.experts.values().filter(|e| e.spawnable)
    }

    /// The catalog as pretty JSON with a final newline: the bytes of `catalog.json`.
    pub fn to_json(&self) -> String {
        to_pretty_json(self)
    }
}

pub(crate) fn to_pretty_json<T: Serialize>(value: &T) -> String {
    // Serialising plain structs, strings, integers and BTreeMaps cannot fail.
    let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
    s.push('\n');
    s
}

/// Whether a mesh's experts may be spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MeshStatus {
    /// Its experts are spawnable.
    Active,
    /// It compiles and is recorded, but nothing in it may be spawned or used as a peer.
    Parked,
}

/// Who an expert may delegate to by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DelegationScope {
    /// Every other expert of the mesh.
    All,
    /// Nobody, unless the expert's capabilities add peers.
    None,
}

/// Timeouts every cross-process wait of an expert obeys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// Whole task.
    pub task_secs: u64,
    /// One tool call.
    pub tool_secs: u64,
    /// Waiting for a delegated expert.
    pub delegation_secs: u64,
}

/// What one task of an expert may spend beyond time (`defaults.budget` in AEM.md, `budget` in
/// capabilities.md). Enforced by the expert's agent loop; what was spent is in the task result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskBudget {
    /// Model calls, at most.
    pub max_iterations: u32,
    /// Input plus output tokens over all model calls, when bounded.
    pub max_tokens: Option<u64>,
    /// Estimated cost in millionths of a US dollar, when bounded (integral, so catalogs
    /// compare exactly).
    pub max_cost_micro_usd: Option<u64>,
}

/// One mesh, with its registries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeshEntry {
    /// Mesh name (its folder).
    pub name: String,
    /// Active or parked.
    pub status: MeshStatus,
    /// One line about the mesh.
    pub description: String,
    /// Prose of AEM.md, read by every expert of the mesh before its own instructions.
    pub preamble: String,
    /// Default delegation scope.
    pub delegation: DelegationScope,
    /// Tool servers by name.
    pub servers: BTreeMap<String, ServerEntry>,
    /// Delivery channels by name.
    pub delivery: BTreeMap<String, DeliveryChannel>,
    /// Perception sources by name (registered here, granted to nobody by default).
    pub sources: BTreeMap<String, SourceEntry>,
    /// What starts the mesh's flows without a person, by trigger name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub triggers: BTreeMap<String, TriggerEntry>,
    /// The tree its experts change through a scratch, if it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceEntry>,
    /// SHA-256 of AEM.md.
    pub sha256: String,
}

/// `workspace:` of a mesh (see [`crate::aem::workspace`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceEntry {
    /// The tree changed, relative to the project.
    pub target: String,
    /// How a scratch is made.
    pub provider: WorkspaceProvider,
    /// The command run confined on a copy of the result after hunks are applied (empty: none).
    pub verify: Vec<String>,
    /// Its time limit.
    pub verify_secs: u64,
    /// Whether confined commands may use the network.
    pub network: bool,
    /// Trees shown read-only to confined commands even where the sandbox masks (a toolchain
    /// under the home directory): absolute, or `~/…` (the home directory of the process that
    /// runs the command). Each one's `bin/` goes first on `PATH`.
    #[serde(default)]
    pub toolchain: Vec<String>,
}

/// How a scratch is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceProvider {
    /// A linked git worktree of the target's `HEAD`.
    GitWorktree,
    /// A plain copy of the target's files.
    Copy,
}

/// How a tool server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum ServerDescriptor {
    /// A child process over stdio, started on demand inside the expert.
    Local {
        /// Program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment, each value a `${VAR}` or `${VAR:-default}` reference.
        env: BTreeMap<String, String>,
    },
    /// A tool bridge that is itself a node, `/iron/tools/<server>`.
    Native,
    /// A networked tool reached over a ROS service.
    Remote {
        /// The ROS service name.
        service: String,
    },
}

/// One registered tool server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEntry {
    /// What it is for.
    pub description: String,
    /// How to reach it.
    pub descriptor: ServerDescriptor,
    /// SHA-256 of the descriptor's canonical JSON (key of its probed manifest).
    pub descriptor_hash: String,
    /// Tools it declares, by name.
    pub tools: BTreeMap<String, DeclaredTool>,
}

/// A tool as its server declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredTool {
    /// Effect from the name alone.
    pub derived_effect: Effect,
    /// The verb that decided it (`None`: no verb, destructive by default).
    pub verb: Option<String>,
    /// The server's own annotation, if declared.
    pub annotation: Option<Effect>,
    /// Effect after the annotation (before any expert's declaration).
    pub effect: Effect,
}

/// How a reply leaves the system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeliveryChannel {
    /// Printed on the terminal of the process that delivers.
    Terminal,
    /// A call to a tool with an argument template.
    Tool {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// Arguments; `{dest}` and `{text}` are filled in at delivery.
        args: BTreeMap<String, String>,
        /// Effect of that tool.
        effect: Effect,
    },
}

/// A trigger: what starts a flow of the mesh, with what input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerEntry {
    /// The role whose flow it starts.
    pub role: String,
    /// The flow (`skills/<role>/flows/<flow>.py`).
    pub flow: String,
    /// SHA-256 of the flow's file at build time.
    pub flow_sha256: String,
    /// What fires it.
    pub on: TriggerOn,
    /// A JSON object merged into every input the trigger gives the flow.
    pub input: serde_json::Value,
}

/// What fires a trigger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TriggerOn {
    /// New items on any of these perception sources, once they have been quiet for
    /// `settle_secs` (so one refresh of several sources starts one job).
    Sources {
        /// Source names, sorted.
        sources: Vec<String>,
        /// Quiet time before firing, in seconds.
        settle_secs: u64,
    },
    /// Each tick of a cron expression (UTC; five fields, or six with seconds first).
    Schedule {
        /// The expression.
        cron: String,
    },
    /// An authenticated HTTP POST to `/hooks/<mesh>/<trigger>`.
    Webhook {
        /// The bearer token, as a `${VAR}` reference.
        token: String,
    },
}

/// When a perception source is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Startup {
    /// When an expert that holds it wakes.
    OnDemand,
    /// With the system.
    Always,
}

/// A perception (MSP) source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceEntry {
    /// What it shows.
    pub description: String,
    /// When it starts.
    pub startup: Startup,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Environment, references only.
    pub env: BTreeMap<String, String>,
}

/// One expert, resolved: everything its process needs at `configure`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpertEntry {
    /// `<mesh>/<role>`.
    pub id: String,
    /// Its mesh.
    pub mesh: String,
    /// Its role (SKILL.md `name`).
    pub role: String,
    /// False when the mesh is parked.
    pub spawnable: bool,
    /// Who it is, in a sentence.
    pub identity: String,
    /// What it does; used for routing.
    pub description: String,
    /// The SKILL.md prose the model reads.
    pub instructions: String,
    /// Model name.
    pub model: String,
    /// Clearance word.
    pub clearance: Clearance,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// What one task may spend.
    pub budget: TaskBudget,
    /// Seconds idle before the process exits.
    pub idle_secs: u64,
    /// Granted tools by `server/tool`.
    pub tools: BTreeMap<String, ToolGrant>,
    /// Servers it may start or call, sorted.
    pub servers: Vec<String>,
    /// Memory mounts, sorted by kind then scope.
    pub memory: Vec<MemoryMount>,
    /// Perception sources, sorted.
    pub sources: Vec<String>,
    /// Who it may delegate to, as a rule over the catalog (see [`Catalog::peers`]): stored by
    /// reference, since a list per expert would grow with the square of the mesh.
    pub peers: PeerRule,
    /// Delivery channels it may use, sorted.
    pub delivery: Vec<String>,
    /// Files under `flows/`.
    pub flows: Vec<FileRecord>,
    /// Files under `tests/`.
    pub tests: Vec<FileRecord>,
    /// Content hashes of its declaration files.
    pub hashes: ExpertHashes,
}

/// One granted tool with its effect and how it was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolGrant {
    /// Server name.
    pub server: String,
    /// Tool name.
    pub tool: String,
    /// The effect gate 1 enforces.
    pub effect: Effect,
    /// Effect from the name alone.
    pub derived_effect: Effect,
    /// The deciding verb, if any.
    pub verb: Option<String>,
    /// The server's annotation, if any.
    pub annotation: Option<Effect>,
    /// The human declaration from capabilities.md, if any.
    pub declared: Option<Effect>,
}

/// What a memory mount allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Recall only.
    Read,
    /// Write only.
    Write,
    /// Both.
    ReadWrite,
}

/// Where a memory declaration reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The expert's own facts and the system's.
    Own,
    /// The mesh's facts and the system's.
    Mesh,
    /// Everything.
    System,
}

/// One memory declaration, resolved to namespace prefixes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MemoryMount {
    /// Memory kind (`episodic`, …).
    pub kind: String,
    /// Declared scope.
    pub scope: Scope,
    /// Declared access.
    pub access: Access,
    /// Namespace prefixes the scope reaches, e.g. `facts/newsroom/analyst`.
    pub namespaces: Vec<String>,
}

/// A file recorded by path and content.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FileRecord {
    /// Path relative to the expert folder, `/`-separated.
    pub path: String,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
}

/// Hashes of an expert's declaration files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpertHashes {
    /// SHA-256 of SKILL.md.
    pub skill: String,
    /// SHA-256 of capabilities.md, if there is one.
    pub capabilities: Option<String>,
}
