//! The front matter of the three AEM files, exactly as written. Keys are strict
//! (`deny_unknown_fields`: a misspelt key is an error, not an ignored line); words with a
//! closed list of values stay strings here so that every bad value in a file is reported,
//! not only the first.

use serde::Deserialize;
use std::collections::BTreeMap;

/// `aem/<mesh>/AEM.md`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMesh {
    pub(crate) name: Option<String>,
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) defaults: RawDefaults,
    #[serde(default)]
    pub(crate) servers: BTreeMap<String, RawServer>,
    #[serde(default)]
    pub(crate) tools: Vec<String>,
    pub(crate) delegation: Option<RawDelegation>,
    #[serde(default)]
    pub(crate) delivery: BTreeMap<String, RawDelivery>,
    pub(crate) msp: Option<RawMsp>,
    #[serde(default)]
    pub(crate) triggers: BTreeMap<String, RawTrigger>,
    pub(crate) workspace: Option<RawWorkspace>,
}

/// `workspace:` in AEM.md.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorkspace {
    pub(crate) target: Option<String>,
    pub(crate) provider: Option<String>,
    pub(crate) verify: Option<Vec<String>>,
    pub(crate) verify_secs: Option<u64>,
    pub(crate) network: Option<bool>,
    pub(crate) toolchain: Option<Vec<String>>,
}

/// One entry of `triggers:` in AEM.md: the flow to start and exactly one of `sources`,
/// `schedule` or `webhook`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTrigger {
    pub(crate) flow: Option<String>,
    pub(crate) sources: Option<Vec<String>>,
    pub(crate) settle_secs: Option<u64>,
    pub(crate) schedule: Option<String>,
    pub(crate) webhook: Option<RawWebhook>,
    pub(crate) input: Option<serde_json::Value>,
}

/// `webhook:` of a trigger.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWebhook {
    pub(crate) token: Option<String>,
}

/// `defaults:` in AEM.md.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDefaults {
    pub(crate) model: Option<String>,
    #[serde(default)]
    pub(crate) models: BTreeMap<String, String>,
    pub(crate) clearance: Option<String>,
    #[serde(default)]
    pub(crate) timeouts: RawTimeouts,
    #[serde(default)]
    pub(crate) budget: RawBudget,
    pub(crate) idle_secs: Option<u64>,
}

/// `defaults.budget:` in AEM.md, `budget:` in capabilities.md.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBudget {
    pub(crate) max_iterations: Option<u32>,
    pub(crate) max_tokens: Option<u64>,
    pub(crate) max_cost_usd: Option<f64>,
}

/// `defaults.timeouts:` in AEM.md, `timeouts:` in capabilities.md.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTimeouts {
    pub(crate) task_secs: Option<u64>,
    pub(crate) tool_secs: Option<u64>,
    pub(crate) delegation_secs: Option<u64>,
}

/// One entry of `servers:` in AEM.md. Which fields are allowed depends on `transport`,
/// so that is checked after parsing, with a message per field.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    pub(crate) transport: Option<String>,
    #[serde(default)]
    pub(crate) description: String,
    pub(crate) command: Option<String>,
    pub(crate) args: Option<Vec<String>>,
    pub(crate) env: Option<BTreeMap<String, String>>,
    pub(crate) service: Option<String>,
    #[serde(default)]
    pub(crate) tools: Vec<RawTool>,
}

/// A tool a server declares: a bare name, or a name with the server's annotation.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawTool {
    Name(String),
    Annotated(RawAnnotatedTool),
}

/// `{name, annotation}` form of [`RawTool`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAnnotatedTool {
    pub(crate) name: String,
    pub(crate) annotation: Option<String>,
}

impl RawTool {
    pub(crate) fn name(&self) -> &str {
        match self {
            RawTool::Name(n) => n,
            RawTool::Annotated(a) => &a.name,
        }
    }

    pub(crate) fn annotation(&self) -> Option<&str> {
        match self {
            RawTool::Name(_) => None,
            RawTool::Annotated(a) => a.annotation.as_deref(),
        }
    }
}

/// `delegation:` in AEM.md.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDelegation {
    pub(crate) scope: String,
}

/// One channel of `delivery:` in AEM.md.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDelivery {
    pub(crate) builtin: Option<String>,
    pub(crate) server: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) args: Option<BTreeMap<String, String>>,
}

/// `msp:` in AEM.md.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMsp {
    #[serde(default)]
    pub(crate) sources: BTreeMap<String, RawSource>,
}

/// One perception source of `msp.sources:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSource {
    #[serde(default)]
    pub(crate) description: String,
    pub(crate) startup: Option<String>,
    #[serde(default)]
    pub(crate) command: Vec<String>,
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// Read only to be refused (not implemented), whatever it holds.
    pub(crate) working_memory: Option<serde_norway::Value>,
}

/// `skills/<name>/SKILL.md`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSkill {
    pub(crate) name: Option<String>,
    pub(crate) identity: Option<String>,
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) memory: Vec<RawMemory>,
}

/// One memory declaration of SKILL.md.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMemory {
    pub(crate) kind: String,
    pub(crate) scope: String,
    pub(crate) access: String,
}

/// `skills/<name>/capabilities.md`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCapabilities {
    pub(crate) clearance: Option<String>,
    pub(crate) model: Option<String>,
    #[serde(default)]
    pub(crate) tools: RawDelta,
    #[serde(default)]
    pub(crate) servers: RawDelta,
    #[serde(default)]
    pub(crate) sources: RawDelta,
    #[serde(default)]
    pub(crate) peers: RawDelta,
    #[serde(default)]
    pub(crate) effects: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) delivery: Vec<String>,
    #[serde(default)]
    pub(crate) timeouts: RawTimeouts,
    #[serde(default)]
    pub(crate) budget: RawBudget,
}

/// `add`/`remove` against the mesh defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDelta {
    #[serde(default)]
    pub(crate) add: Vec<String>,
    #[serde(default)]
    pub(crate) remove: Vec<String>,
}
