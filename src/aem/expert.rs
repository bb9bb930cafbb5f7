//! Resolving one expert against its mesh: clearance, tools with effects, servers, peers,
//! perception sources, delivery channels and memory mounts.

use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::limits::{self, Place};
use super::memory::{namespaces, one_of};
use super::mesh::MeshDraft;
use super::model::{
    DelegationScope, DeliveryChannel, ExpertEntry, ExpertHashes, MemoryMount, MeshStatus, PeerRule,
    ServerDescriptor, ToolGrant,
};
use super::raw::RawCapabilities;
use super::roots;
use super::rules::{ToolRef, clearance_words, effect_words};
use super::skill::SkillDraft;
use crate::core::effect::{Clearance, Effect, resolve_effect};
use std::collections::{BTreeMap, BTreeSet};

/// Every mesh's status and roles, for peer references across meshes.
pub(crate) type Index = BTreeMap<String, (MeshStatus, BTreeSet<String>)>;

/// Where a granted tool came from, to report an error in the file that granted it.
#[derive(Debug, Clone)]
enum Origin {
    Mesh,
    Added(String),
    Server(String),
}

/// Resolves one expert. Errors go to `sink`; the entry is returned only when it is clean.
pub(crate) fn resolve_expert(
    mesh: &MeshDraft,
    skill: &SkillDraft,
    index: &Index,
    sink: &mut Sink,
) -> Option<ExpertEntry> {
    let before = sink.items.len();
    let mesh_name = mesh.entry.name.as_str();
    let role = skill.role.as_str();
    let id = format!("{mesh_name}/{role}");
    let empty = RawCapabilities::default();
    let (caps_doc, caps) = match &skill.caps {
        Some((doc, raw)) => (Some(doc), raw),
        None => (None, &empty),
    };
    // Errors about capabilities are reported in capabilities.md; with no such file there
    // are no capability fields to blame, so the skill file stands in.
    let doc: &Document = caps_doc.unwrap_or(&skill.skill);
    let at = Grants {
        mesh,
        caps,
        doc,
        id: &id,
    };

    let clearance = at.clearance(sink);
    let held = at.tools(sink);
    let declared = at.declared_effects(&held.tools, sink);
    let grants = at.grants(&held.tools, &declared, clearance, sink);
    let mut servers: BTreeSet<String> = held.tools.keys().map(|r| r.server.clone()).collect();
    servers.extend(held.servers_added);
    for s in &held.servers_removed {
        servers.remove(s);
    }

    let peers = resolve_peers(mesh, role, caps, doc, index, sink);
    let sources = resolve_sources(mesh, caps, doc, sink);
    let delivery = at.delivery(clearance, &mut servers, sink);
    at.write_roots(&grants, &delivery, sink);

    let mut memory: Vec<MemoryMount> = skill
        .memory
        .iter()
        .map(|m| MemoryMount {
            kind: m.kind.clone(),
            scope: m.scope,
            access: m.access,
            namespaces: namespaces(m.scope, mesh_name, role),
        })
        .collect();
    memory.sort();

    let model = caps
        .model
        .clone()
        .filter(|m| !m.trim().is_empty())
        .or_else(|| mesh.models.get(role).cloned())
        .unwrap_or_else(|| mesh.model.clone());

    let timeouts = limits::timeouts(
        &caps.timeouts,
        mesh.timeouts,
        &Place {
            doc,
            section: "timeouts",
            field: "timeouts",
        },
        sink,
    );
    let budget = limits::budget(
        &caps.budget,
        mesh.budget,
        &Place {
            doc,
            section: "budget",
            field: "budget",
        },
        sink,
    );

    if sink.items.len() > before {
        return None;
    }
    Some(ExpertEntry {
        id,
        mesh: mesh_name.to_string(),
        role: role.to_string(),
        spawnable: mesh.entry.status == MeshStatus::Active,
        identity: skill.identity.clone(),
        description: skill.description.clone(),
        instructions: skill.skill.body.clone(),
        model,
        clearance,
        timeouts,
        budget,
        idle_secs: mesh.idle_secs,
        tools: grants,
        servers: servers.into_iter().collect(),
        memory,
        sources,
        peers,
        delivery: delivery.into_iter().collect(),
        flows: skill.flows.clone(),
        tests: skill.tests.clone(),
        hashes: ExpertHashes {
            skill: skill.skill.sha256.clone(),
            capabilities: caps_doc.map(|d| d.sha256.clone()),
        },
    })
}

/// What one expert's grants are resolved against: its mesh, its capabilities.md (as parsed
/// and as a document, for line numbers) and its id.
struct Grants<'a> {
    mesh: &'a MeshDraft,
    caps: &'a RawCapabilities,
    doc: &'a Document,
    id: &'a str,
}

/// The tools an expert holds before effects are checked, each with where it came from, and
/// the servers its capabilities add or remove whole.
struct Held {
    tools: BTreeMap<ToolRef, Origin>,
    servers_added: BTreeSet<String>,
    servers_removed: BTreeSet<String>,
}

impl Grants<'_> {
    /// The capabilities' clearance, else the mesh's.
    fn clearance(&self, sink: &mut Sink) -> Clearance {
        let (mesh, caps, doc) = (self.mesh, self.caps, self.doc);
        match caps.clearance.as_deref() {
            None => mesh.clearance,
            Some(w) => match Clearance::from_word(w) {
                Some(c) => c,
                None => {
                    sink.push(
                        &doc.path,
                        doc.line_at(&["clearance"]),
                        "clearance",
                        AemError::UnknownClearance(w.to_string()),
                        Some(one_of(&clearance_words())),
                    );
                    mesh.clearance
                }
            },
        }
    }

    /// Mesh tools, then additions (tools and whole servers), then removals.
    fn tools(&self, sink: &mut Sink) -> Held {
        let (mesh, caps, doc) = (self.mesh, self.caps, self.doc);
        let mut tools: BTreeMap<ToolRef, Origin> = mesh
            .tools
            .iter()
            .map(|t| (t.clone(), Origin::Mesh))
            .collect();
        for (i, t) in caps.tools.add.iter().enumerate() {
            if let Some(r) = mesh.tool_ref(t, doc, &format!("tools.add[{i}]"), sink) {
                tools.insert(r, Origin::Added(t.clone()));
            }
        }
        let mut servers_added = BTreeSet::new();
        let mut servers_removed = BTreeSet::new();
        for (i, s) in caps.servers.add.iter().enumerate() {
            if let Some(entry) = known_server(mesh, s, doc, &format!("servers.add[{i}]"), sink) {
                servers_added.insert(s.clone());
                for tool in entry {
                    tools
                        .entry(ToolRef {
                            server: s.clone(),
                            tool,
                        })
                        .or_insert(Origin::Server(s.clone()));
                }
            }
        }
        for (i, t) in caps.tools.remove.iter().enumerate() {
            if let Some(r) = mesh.tool_ref(t, doc, &format!("tools.remove[{i}]"), sink) {
                tools.remove(&r);
            }
        }
        for (i, s) in caps.servers.remove.iter().enumerate() {
            if known_server(mesh, s, doc, &format!("servers.remove[{i}]"), sink).is_some() {
                servers_removed.insert(s.clone());
                tools.retain(|r, _| &r.server != s);
            }
        }
        Held {
            tools,
            servers_added,
            servers_removed,
        }
    }

    /// The human effect declarations, only for tools the expert holds.
    fn declared_effects(
        &self,
        tools: &BTreeMap<ToolRef, Origin>,
        sink: &mut Sink,
    ) -> BTreeMap<ToolRef, Effect> {
        let (mesh, caps, doc) = (self.mesh, self.caps, self.doc);
        let mut declared: BTreeMap<ToolRef, Effect> = BTreeMap::new();
        for (key, word) in &caps.effects {
            let field = format!("effects.{key}");
            let Some(r) = mesh.tool_ref(key, doc, &field, sink) else {
                continue;
            };
            if !tools.contains_key(&r) {
                sink.push(
                    &doc.path,
                    doc.line_of_value(key),
                    &field,
                    AemError::StrayEffectDeclaration(key.clone()),
                    Some(
                        "a tool granted to this expert (mesh `tools`, `tools.add` or `servers.add`)"
                            .to_string(),
                    ),
                );
                continue;
            }
            match Effect::from_word(word) {
                Some(e) => {
                    declared.insert(r, e);
                }
                None => sink.push(
                    &doc.path,
                    doc.line_of_value(key),
                    &field,
                    AemError::UnknownEffect(word.clone()),
                    Some(one_of(&effect_words())),
                ),
            }
        }
        declared
    }

    /// Each held tool with its effect (derived, raised by an annotation, lowered by a
    /// declaration within the cap), if the clearance permits it.
    fn grants(
        &self,
        tools: &BTreeMap<ToolRef, Origin>,
        declared: &BTreeMap<ToolRef, Effect>,
        clearance: Clearance,
        sink: &mut Sink,
    ) -> BTreeMap<String, ToolGrant> {
        let (mesh, doc, id) = (self.mesh, self.doc, self.id);
        let mut grants = BTreeMap::new();
        for (r, origin) in tools {
            let key = r.key();
            let server_decl = &mesh.entry.servers[&r.server].tools[&r.tool];
            let decl = declared.get(r).copied();
            let res = match resolve_effect(&r.tool, server_decl.annotation, decl) {
                Ok(res) => res,
                Err(refused) => {
                    sink.push(
                        &doc.path,
                        doc.line_of_value(&key),
                        format!("effects.{key}"),
                        AemError::LoweringOverCap { tool: key, refused },
                        Some("at most one level below the derived effect, and none for delete/drop/purge/remove/destroy/erase/truncate/wipe/uninstall verbs".to_string()),
                    );
                    continue;
                }
            };
            if !clearance.permits(res.effect) {
                let why = if decl.is_some() {
                    "declared in capabilities.md".to_string()
                } else if res.annotated > res.derived.effect {
                    "raised by the server's annotation".to_string()
                } else if let Some(v) = res.derived.verb {
                    format!("verb `{v}`")
                } else {
                    "no recognised verb, so destructive by default".to_string()
                };
                let (file, field, line) = match origin {
                    Origin::Mesh => (&mesh.doc, "tools".to_string(), mesh.doc.line_of_value(&key)),
                    Origin::Added(t) => (doc, "tools.add".to_string(), doc.line_of_value(t)),
                    Origin::Server(s) => (doc, "servers.add".to_string(), doc.line_of_value(s)),
                };
                sink.push(
                    &file.path,
                    line,
                    field,
                    AemError::ToolAboveClearance {
                        expert: id.to_string(),
                        tool: key.clone(),
                        effect: res.effect,
                        why,
                        needed: res.effect.required_clearance(),
                        clearance,
                    },
                    Some(format!(
                        "clearance `{}` for this expert, or the tool removed with `tools.remove`",
                        res.effect.required_clearance()
                    )),
                );
                continue;
            }
            grants.insert(
                key,
                ToolGrant {
                    server: r.server.clone(),
                    tool: r.tool.clone(),
                    effect: res.effect,
                    derived_effect: res.derived.effect,
                    verb: res.derived.verb.map(str::to_string),
                    annotation: server_decl.annotation,
                    declared: decl,
                },
            );
        }
        grants
    }

    /// The delivery channels granted, each permitted by the clearance; a tool channel's
    /// server joins `servers`.
    fn delivery(
        &self,
        clearance: Clearance,
        servers: &mut BTreeSet<String>,
        sink: &mut Sink,
    ) -> BTreeSet<String> {
        let (mesh, caps, doc, id) = (self.mesh, self.caps, self.doc, self.id);
        let mut delivery = BTreeSet::new();
        for (i, c) in caps.delivery.iter().enumerate() {
            let field = format!("delivery[{i}]");
            match mesh.entry.delivery.get(c) {
                None => {
                    let known: Vec<&str> = mesh.entry.delivery.keys().map(String::as_str).collect();
                    sink.push(
                        &doc.path,
                        doc.line_of_value(c),
                        field,
                        AemError::UnknownChannel(c.clone()),
                        Some(format!(
                            "a channel of the mesh's `delivery` ({})",
                            known.join(", ")
                        )),
                    );
                }
                Some(DeliveryChannel::Tool {
                    server,
                    tool,
                    effect,
                    ..
                }) if !clearance.permits(*effect) => sink.push(
                    &doc.path,
                    doc.line_of_value(c),
                    field,
                    AemError::ToolAboveClearance {
                        expert: id.to_string(),
                        tool: format!("{server}/{tool}"),
                        effect: *effect,
                        why: format!("delivery channel `{c}`"),
                        needed: effect.required_clearance(),
                        clearance,
                    },
                    Some(format!("clearance `{}`", effect.required_clearance())),
                ),
                Some(channel) => {
                    if let DeliveryChannel::Tool { server, .. } = channel {
                        servers.insert(server.clone());
                    }
                    delivery.insert(c.clone());
                }
            }
        }
        delivery
    }

    /// Refuses every local server this expert may change files through (a write-class tool
    /// granted or used as a delivery channel) whose arguments name a path outside the
    /// scratch workspace and `workspace/` (see [`super::roots`]).
    fn write_roots(
        &self,
        grants: &BTreeMap<String, ToolGrant>,
        delivery: &BTreeSet<String>,
        sink: &mut Sink,
    ) {
        let mesh = self.mesh;
        for (server, tools) in roots::write_tools(grants, delivery, &mesh.entry.delivery) {
            let Some(ServerDescriptor::Local { args, .. }) =
                mesh.entry.servers.get(server).map(|s| &s.descriptor)
            else {
                continue;
            };
            if let Err(outside) = roots::writable_roots(args) {
                sink.push(
                    &mesh.doc.path,
                    mesh.doc.line_at(&["servers", server, "args"]),
                    format!("servers.{server}.args"),
                    AemError::WriteOutsideWorkspace {
                        expert: self.id.to_string(),
                        server: server.to_string(),
                        tools: tools.into_iter().collect::<Vec<_>>().join(", "),
                        arg: outside.arg,
                        why: outside.why,
                    },
                    Some(format!(
                        "`${{{}}}` or a directory under `{}/`",
                        roots::SCRATCH_VAR,
                        roots::WORKSPACE_DIR
                    )),
                );
            }
        }
    }
}

/// The tool names of server `name`, or an error when the mesh does not register it.
fn known_server(
    mesh: &MeshDraft,
    name: &str,
    doc: &Document,
    field: &str,
    sink: &mut Sink,
) -> Option<Vec<String>> {
    match mesh.entry.servers.get(name) {
        Some(s) => Some(s.tools.keys().cloned().collect()),
        None if mesh.broken_servers.contains(name) => None,
        None => {
            let known: Vec<&str> = mesh.entry.servers.keys().map(String::as_str).collect();
            sink.push(
                &doc.path,
                doc.line_of_value(name),
                field,
                AemError::UnknownServer(name.to_string()),
                Some(format!(
                    "a server registered in AEM.md ({})",
                    known.join(", ")
                )),
            );
            None
        }
    }
}

fn resolve_peers(
    mesh: &MeshDraft,
    role: &str,
    caps: &RawCapabilities,
    doc: &Document,
    index: &Index,
    sink: &mut Sink,
) -> PeerRule {
    let mesh_name = mesh.entry.name.as_str();
    let no_roles = BTreeSet::new();
    let own_roles = index.get(mesh_name).map_or(&no_roles, |(_, r)| r);
    let me = format!("{mesh_name}/{role}");
    let mut rule = PeerRule {
        mesh: mesh.entry.delegation == DelegationScope::All,
        ..PeerRule::default()
    };
    let in_mesh = |id: &str| {
        rule.mesh
            && id
                .strip_prefix(&format!("{mesh_name}/"))
                .is_some_and(|r| own_roles.contains(r))
    };
    let expected = || {
        let known: Vec<String> = own_roles
            .iter()
            .filter(|r| r.as_str() != role)
            .cloned()
            .collect();
        Some(format!(
            "a role of this mesh ({}) or `<mesh>/<role>` of an active mesh",
            known.join(", ")
        ))
    };
    let lookup = |text: &str, field: String, sink: &mut Sink| -> Option<String> {
        let (m, r) = text.split_once('/').unwrap_or((mesh_name, text));
        let id = format!("{m}/{r}");
        let line = doc.line_of_value(text);
        let Some((status, roles)) = index.get(m).filter(|(_, roles)| roles.contains(r)) else {
            sink.push(
                &doc.path,
                line,
                field,
                AemError::UnknownPeer(text.to_string()),
                expected(),
            );
            return None;
        };
        let _ = roles;
        if id == me {
            sink.push(&doc.path, line, field, AemError::SelfPeer, expected());
            return None;
        }
        if *status == MeshStatus::Parked && m != mesh_name {
            sink.push(
                &doc.path,
                line,
                field,
                AemError::ParkedPeer(id),
                Some("an expert of an active mesh".to_string()),
            );
            return None;
        }
        Some(id)
    };
    let mut removed = BTreeSet::new();
    for (i, p) in caps.peers.remove.iter().enumerate() {
        if let Some(id) = lookup(p, format!("peers.remove[{i}]"), sink)
            && in_mesh(&id)
        {
            removed.insert(id);
        }
    }
    let mut added = BTreeSet::new();
    for (i, p) in caps.peers.add.iter().enumerate() {
        if let Some(id) = lookup(p, format!("peers.add[{i}]"), sink) {
            // An add wins over a remove; one the mesh already gives is no exception.
            if !removed.remove(&id) && !in_mesh(&id) {
                added.insert(id);
            }
        }
    }
    rule.removed = removed.into_iter().collect();
    rule.added = added.into_iter().collect();
    rule
}

fn resolve_sources(
    mesh: &MeshDraft,
    caps: &RawCapabilities,
    doc: &Document,
    sink: &mut Sink,
) -> Vec<String> {
    let known: Vec<&str> = mesh.entry.sources.keys().map(String::as_str).collect();
    let check = |name: &String, field: String, sink: &mut Sink| -> bool {
        let ok = mesh.entry.sources.contains_key(name);
        if !ok {
            sink.push(
                &doc.path,
                doc.line_of_value(name),
                field,
                AemError::UnknownSource(name.clone()),
                Some(format!(
                    "a source registered under `msp.sources` in AEM.md ({})",
                    known.join(", ")
                )),
            );
        }
        ok
    };
    let mut sources = BTreeSet::new();
    for (i, s) in caps.sources.add.iter().enumerate() {
        if check(s, format!("sources.add[{i}]"), sink) {
            sources.insert(s.clone());
        }
    }
    for (i, s) in caps.sources.remove.iter().enumerate() {
        if check(s, format!("sources.remove[{i}]"), sink) {
            sources.remove(s);
        }
    }
    sources.into_iter().collect()
}
