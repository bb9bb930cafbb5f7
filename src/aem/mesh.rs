//! Validating `AEM.md`: name, status, defaults, delegation and mesh-wide tools of one
//! mesh (servers, delivery and sources have their own files).

use super::channels::{validate_delivery, validate_source};
use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::limits::{self, Place};
use super::memory::one_of;
use super::model::{DelegationScope, MeshEntry, MeshStatus, TaskBudget, Timeouts};
use super::raw::{RawDefaults, RawMesh, RawTrigger};
use super::rules::{ToolRef, clearance_words, name_rule, resolve_tool_ref};
use super::servers::validate_server;
use super::valid_name;
use crate::core::effect::Clearance;
use std::collections::{BTreeMap, BTreeSet};

/// Defaults used when AEM.md leaves them out.
pub const DEFAULT_CLEARANCE: Clearance = Clearance::Read;
/// Default task timeout.
pub const DEFAULT_TASK_SECS: u64 = 600;
/// Default tool-call timeout.
pub const DEFAULT_TOOL_SECS: u64 = 60;
/// Default delegation timeout.
pub const DEFAULT_DELEGATION_SECS: u64 = 120;
/// Default idle lifetime of an expert process.
pub const DEFAULT_IDLE_SECS: u64 = 300;

/// A mesh after validation, before its experts are resolved.
#[derive(Debug)]
pub(crate) struct MeshDraft {
    pub(crate) entry: MeshEntry,
    pub(crate) doc: Document,
    pub(crate) model: String,
    pub(crate) models: BTreeMap<String, String>,
    pub(crate) clearance: Clearance,
    pub(crate) timeouts: Timeouts,
    pub(crate) budget: TaskBudget,
    pub(crate) idle_secs: u64,
    pub(crate) tools: Vec<ToolRef>,
    /// Servers whose descriptor had errors: references to them are not reported again.
    pub(crate) broken_servers: BTreeSet<String>,
    /// `triggers:` as written; checked once the experts (and their flows) are resolved.
    pub(crate) triggers: BTreeMap<String, RawTrigger>,
}

impl MeshDraft {
    /// Resolves `server/tool` against this mesh's registry, reporting at `field`.
    pub(crate) fn tool_ref(
        &self,
        text: &str,
        doc: &Document,
        field: &str,
        sink: &mut Sink,
    ) -> Option<ToolRef> {
        resolve_tool_ref(
            &self.entry.servers,
            &self.broken_servers,
            text,
            doc,
            field,
            sink,
        )
    }
}

/// Validates AEM.md of the mesh in folder `folder`. Returns `None` when the file is too
/// broken to resolve experts against (its errors are in `sink`).
pub(crate) fn validate_mesh(folder: &str, doc: Document, sink: &mut Sink) -> Option<MeshDraft> {
    let raw: RawMesh = match doc.parse() {
        Ok(raw) => raw,
        Err(d) => {
            sink.items.push(*d);
            return None;
        }
    };
    let path = doc.path.clone();
    check_name(folder, raw.name.as_deref(), &doc, sink);
    let status = status_of(raw.status.as_deref(), &doc, sink);
    let defaults = defaults_of(&raw.defaults, &doc, sink);

    let delegation = match raw.delegation.as_ref().map(|d| d.scope.as_str()) {
        None | Some("none") => DelegationScope::None,
        Some("all") => DelegationScope::All,
        Some(other) => {
            sink.push(
                &path,
                doc.line_at(&["delegation", "scope"]),
                "delegation.scope",
                AemError::UnknownDelegationScope(other.to_string()),
                Some("`all` or `none`".to_string()),
            );
            DelegationScope::None
        }
    };

    let mut servers = BTreeMap::new();
    let mut broken_servers = BTreeSet::new();
    for (name, server) in &raw.servers {
        match validate_server(name, server, &doc, sink) {
            Some(entry) => {
                servers.insert(name.clone(), entry);
            }
            None => {
                broken_servers.insert(name.clone());
            }
        }
    }

    let mut delivery = BTreeMap::new();
    for (name, channel) in &raw.delivery {
        if let Some(c) = validate_delivery(name, channel, &servers, &broken_servers, &doc, sink) {
            delivery.insert(name.clone(), c);
        }
    }

    let mut sources = BTreeMap::new();
    if let Some(msp) = &raw.msp {
        for (name, source) in &msp.sources {
            if let Some(s) = validate_source(name, source, &doc, sink) {
                sources.insert(name.clone(), s);
            }
        }
    }

    let mut tools = Vec::new();
    for (i, t) in raw.tools.iter().enumerate() {
        let field = format!("tools[{i}]");
        if let Some(r) = resolve_tool_ref(&servers, &broken_servers, t, &doc, &field, sink) {
            tools.push(r);
        }
    }
    tools.sort();
    tools.dedup();

    let workspace =
        super::workspace::validate_workspace(raw.workspace.as_ref(), &servers, &doc, sink);
    let entry = MeshEntry {
        name: folder.to_string(),
        status,
        description: raw.description.trim().to_string(),
        preamble: doc.body.clone(),
        delegation,
        servers,
        delivery,
        sources,
        triggers: BTreeMap::new(),
        workspace,
        sha256: doc.sha256.clone(),
    };
    let draft = MeshDraft {
        entry,
        doc,
        model: defaults.model,
        models: raw.defaults.models.clone(),
        clearance: defaults.clearance,
        timeouts: defaults.timeouts,
        budget: defaults.budget,
        idle_secs: defaults.idle_secs,
        tools,
        broken_servers,
        triggers: raw.triggers.clone(),
    };
    // A mesh with errors still resolves its experts, so their own errors show in the
    // same run; the build fails on the collected errors either way.
    Some(draft)
}

/// `name` must be the folder's, and the folder a valid name.
fn check_name(folder: &str, name: Option<&str>, doc: &Document, sink: &mut Sink) {
    let path = &doc.path;
    match name {
        None | Some("") => sink.push(
            path,
            Some(1),
            "name",
            AemError::Empty,
            Some(format!("the mesh folder name `{folder}`")),
        ),
        Some(n) if n != folder => sink.push(
            path,
            doc.line_at(&["name"]),
            "name",
            AemError::NameMismatch {
                found: n.to_string(),
                wanted: folder.to_string(),
            },
            Some(format!("the mesh folder name `{folder}`")),
        ),
        Some(_) => {}
    }
    if !valid_name(folder) {
        sink.push(
            path,
            None,
            "",
            AemError::InvalidName {
                what: "mesh",
                value: folder.to_string(),
            },
            Some(name_rule()),
        );
    }
}

/// `status`: active or parked (parked, with an error, when it is neither).
fn status_of(status: Option<&str>, doc: &Document, sink: &mut Sink) -> MeshStatus {
    let path = &doc.path;
    match status {
        Some("active") => MeshStatus::Active,
        Some("parked") => MeshStatus::Parked,
        other => {
            let error = match other {
                None => AemError::Empty,
                Some(s) => AemError::UnknownStatus(s.to_string()),
            };
            sink.push(
                path,
                doc.line_at(&["status"]),
                "status",
                error,
                Some("`active` or `parked`".to_string()),
            );
            MeshStatus::Parked
        }
    }
}

/// The mesh-wide defaults every expert starts from.
struct Defaults {
    model: String,
    clearance: Clearance,
    timeouts: Timeouts,
    budget: TaskBudget,
    idle_secs: u64,
}

/// `defaults:` of AEM.md, each value checked.
fn defaults_of(d: &RawDefaults, doc: &Document, sink: &mut Sink) -> Defaults {
    let path = &doc.path;
    let model = match d.model.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => {
            sink.push(
                path,
                doc.line_at(&["defaults"]),
                "defaults.model",
                AemError::Empty,
                Some(
                    "the model every expert uses unless `defaults.models` names one for its role"
                        .to_string(),
                ),
            );
            String::new()
        }
    };
    for (role, m) in &d.models {
        if m.trim().is_empty() {
            sink.push(
                path,
                doc.line_at(&["defaults", "models", role]),
                format!("defaults.models.{role}"),
                AemError::Empty,
                Some("a model name".to_string()),
            );
        }
    }
    let clearance = match d.clearance.as_deref() {
        None => DEFAULT_CLEARANCE,
        Some(w) => Clearance::from_word(w).unwrap_or_else(|| {
            sink.push(
                path,
                doc.line_at(&["defaults", "clearance"]),
                "defaults.clearance",
                AemError::UnknownClearance(w.to_string()),
                Some(one_of(&clearance_words())),
            );
            DEFAULT_CLEARANCE
        }),
    };
    let at = Place {
        doc,
        section: "defaults",
        field: "defaults.timeouts",
    };
    let defaults = Timeouts {
        task_secs: DEFAULT_TASK_SECS,
        tool_secs: DEFAULT_TOOL_SECS,
        delegation_secs: DEFAULT_DELEGATION_SECS,
    };
    let timeouts = limits::timeouts(&d.timeouts, defaults, &at, sink);
    let budget = limits::budget(
        &d.budget,
        TaskBudget::default(),
        &Place {
            field: "defaults.budget",
            ..at
        },
        sink,
    );
    let idle_secs = limits::secs(
        d.idle_secs,
        DEFAULT_IDLE_SECS,
        "idle_secs",
        &Place {
            field: "defaults",
            ..at
        },
        sink,
    );
    Defaults {
        model,
        clearance,
        timeouts,
        budget,
        idle_secs,
    }
}
