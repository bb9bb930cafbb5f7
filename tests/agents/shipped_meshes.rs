//! The meshes shipped in `aem/` compile, and compile to the same bytes every time.

use iron::aem::{self, Access, DeliveryChannel, MeshStatus, Scope, TaskBudget};
use iron::core::effect::{Clearance, Effect};
use std::path::{Path, PathBuf};

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("aem")
}

fn build() -> aem::Catalog {
    match aem::compile(&shipped()) {
        Ok(c) => c,
        Err(e) => panic!("shipped meshes must compile:\n{e}"),
    }
}

#[test]
fn all_five_meshes_compile() {
    let c = build();
    let names: Vec<&str> = c.meshes.keys().map(String::as_str).collect();
    assert_eq!(names, ["core", "dev", "erp", "newsroom", "sim"]);
    assert_eq!(c.format_version, aem::FORMAT_VERSION);
}

#[test]
fn parked_meshes_compile_but_are_not_spawnable() {
    let c = build();
    for mesh in ["erp", "sim"] {
        assert_eq!(c.mesh(mesh).unwrap().status, MeshStatus::Parked);
        let experts: Vec<_> = c.experts.values().filter(|e| e.mesh == mesh).collect();
        assert!(!experts.is_empty());
        assert!(experts.iter().all(|e| !e.spawnable));
    }
    assert!(
        c.spawnable()
            .all(|e| !["erp", "sim"].contains(&e.mesh.as_str()))
    );
    assert!(c.expert("newsroom/analyst").unwrap().spawnable);
}

#[test]
fn newsroom_is_resolved_as_declared() {
    let c = build();
    let analyst = c.expert("newsroom/analyst").unwrap();
    assert_eq!(analyst.clearance, Clearance::Read);
    assert_eq!(analyst.model, "strong");
    assert_eq!(analyst.sources, ["news_wires", "official_feeds"]);
    let peers = c.peers("newsroom/analyst");
    assert!(!peers.contains(&"newsroom/publisher".to_string()));
    assert!(peers.contains(&"newsroom/editor".to_string()));
    assert!(analyst.tools.values().all(|t| t.effect == Effect::Read));
    let own = analyst
        .memory
        .iter()
        .find(|m| m.kind == "episodic" && m.scope == Scope::Own)
        .unwrap();
    assert_eq!(own.access, Access::ReadWrite);
    assert_eq!(own.namespaces, ["facts/newsroom/analyst", "facts/system"]);

    // The mesh's budget, and the publisher's own over it field by field.
    let mesh_budget = TaskBudget {
        max_iterations: 12,
        max_tokens: Some(400_000),
        max_cost_micro_usd: Some(5_000_000),
    };
    assert_eq!(analyst.budget, mesh_budget);
    assert_eq!(analyst.timeouts.task_secs, 1200);
    let publisher = c.expert("newsroom/publisher").unwrap();
    assert_eq!(
        publisher.budget,
        TaskBudget {
            max_iterations: 6,
            ..mesh_budget
        }
    );
    assert_eq!(
        (publisher.timeouts.task_secs, publisher.timeouts.tool_secs),
        (300, 60)
    );
    assert_eq!(publisher.delivery, ["bulletins", "chat", "terminal"]);
    // Nobody else may send anything out.
    for e in c
        .experts
        .values()
        .filter(|e| e.mesh == "newsroom" && e.role != "publisher")
    {
        assert!(e.delivery.is_empty(), "{} holds {:?}", e.id, e.delivery);
    }
    match &c.mesh("newsroom").unwrap().delivery["bulletins"] {
        DeliveryChannel::Tool { args, .. } => {
            assert_eq!(args["bulletin"], "{data}");
            assert_eq!(args["delivery_id"], "{delivery_id}");
        }
        other => panic!("bulletins should be a tool channel, got {other:?}"),
    }
    assert!(publisher.servers.contains(&"delivery".to_string()));
    match &c.mesh("newsroom").unwrap().delivery["chat"] {
        DeliveryChannel::Tool {
            server,
            tool,
            args,
            effect,
        } => {
            assert_eq!(
                (server.as_str(), tool.as_str()),
                ("delivery", "send_message")
            );
            assert_eq!(args["dest"], "{dest}");
            assert_eq!(args["text"], "{text}");
            assert_eq!(*effect, Effect::Write);
        }
        other => panic!("chat should be a tool channel, got {other:?}"),
    }
    // The monitor only reaches the analyst.
    assert_eq!(c.peers("newsroom/monitor"), ["newsroom/analyst"]);
    // New items on either source start the monitor's flow, which is recorded by content.
    let t = &c.mesh("newsroom").unwrap().triggers["new_items"];
    assert_eq!((t.role.as_str(), t.flow.as_str()), ("monitor", "monitor"));
    assert_eq!(
        t.on,
        iron::aem::TriggerOn::Sources {
            sources: vec!["news_wires".into(), "official_feeds".into()],
            settle_secs: 3
        }
    );
    let monitor = c.expert("newsroom/monitor").unwrap();
    assert_eq!(monitor.flows[0].path, "flows/monitor.py");
    assert_eq!(t.flow_sha256, monitor.flows[0].sha256);
}

#[test]
fn dev_engineer_holds_workspace_tools_with_declared_lowerings() {
    let c = build();
    let eng = c.expert("dev/engineer").unwrap();
    assert_eq!(eng.clearance, Clearance::ReadWrite);
    assert_eq!(eng.tools["workspace/edit_file"].effect, Effect::Write);
    let log = &eng.tools["git/git_log"];
    assert_eq!(log.derived_effect, Effect::Destructive);
    assert_eq!(log.declared, Some(Effect::Write));
    assert_eq!(log.effect, Effect::Write);
    assert!(!eng.tools.contains_key("git/git_reset"));
    // Commands run confined in its scratch: `run` is destructive, declared `write`.
    assert_eq!(eng.servers, ["git", "sandbox", "time", "workspace"]);
    let run = &eng.tools["sandbox/run_confined"];
    assert_eq!(run.derived_effect, Effect::Destructive);
    assert_eq!(run.effect, Effect::Write);
    // The mesh declares the tree its experts change; the reviewer reads it, never runs.
    let ws = c.mesh("dev").unwrap().workspace.as_ref().unwrap();
    assert_eq!((ws.target.as_str(), ws.network), (".", false));
    assert!(
        !c.expert("dev/reviewer")
            .unwrap()
            .servers
            .contains(&"sandbox".to_string())
    );
    let reviewer = c.expert("dev/reviewer").unwrap();
    assert!(reviewer.tools.values().all(|t| t.effect == Effect::Read));
    assert!(reviewer.memory.iter().all(|m| m.kind != "working"));
}

#[test]
fn two_builds_are_byte_identical() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let pa = aem::write_catalog(&build(), a.path()).unwrap();
    let pb = aem::write_catalog(&build(), b.path()).unwrap();
    assert_eq!(std::fs::read(&pa).unwrap(), std::fs::read(&pb).unwrap());
    let ma = std::fs::read(a.path().join(aem::TOOL_MANIFEST_FILE)).unwrap();
    let mb = std::fs::read(b.path().join(aem::TOOL_MANIFEST_FILE)).unwrap();
    assert_eq!(ma, mb);
    // And the file reads back to the same catalog.
    assert_eq!(aem::read_catalog(&pa).unwrap(), build());
}

#[test]
fn tool_manifest_lists_declared_tools_with_descriptor_hashes() {
    let c = build();
    let m = c.tool_manifest();
    let fs = &m.servers["newsroom/archive"];
    assert_eq!(fs.descriptor_hash.len(), 64);
    assert_eq!(
        fs.descriptor_hash,
        aem::descriptor_hash(&c.mesh("newsroom").unwrap().servers["archive"].descriptor)
    );
    assert!(fs.tools.contains_key("read_text_file"));
    // Same descriptor text in two meshes (the time server with different env) hashes
    // differently; identical descriptors hash the same.
    assert_ne!(
        m.servers["core/time"].descriptor_hash,
        m.servers["newsroom/time"].descriptor_hash
    );
}
