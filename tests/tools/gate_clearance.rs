//! Gate 1 (clearance) at call time, against real servers: grants, clearance, live
//! annotations that only raise, and reviewed declarations lowered within the cap (and a
//! build that fails beyond it).

use crate::support_tools as support;

use iron::core::effect::{Clearance, Effect};
use iron::tools::{CallContext, DenialReason, Gate, ToolError, ToolEventKind, ToolOutcome};
use serde_json::json;

fn ctx() -> CallContext {
    CallContext {
        task: "task-g1".into(),
        cause: Some("turn-7".into()),
    }
}

fn denial(err: &ToolError) -> (&Gate, &DenialReason) {
    let d = err
        .denial()
        .unwrap_or_else(|| panic!("expected a gate denial, got {err:?}"));
    (&d.gate, &d.reason)
}

#[tokio::test]
async fn read_only_expert_cannot_call_a_write_tool() {
    let p = support::tool_lab();
    let m = p.manager("reader");
    let target = p.work().join("x.txt");
    let err = m
        .call(
            "fs__write_file",
            json!({"path": target, "content": "no"}),
            &ctx(),
        )
        .await
        .unwrap_err();
    assert_eq!(denial(&err), (&Gate::Clearance, &DenialReason::NotGranted));
    assert!(!target.exists());
    // Same refusal by catalog name.
    let err = m
        .call_tool(
            "fs",
            "write_file",
            json!({"path": target, "content": "no"}),
            &ctx(),
        )
        .await
        .unwrap_err();
    assert_eq!(denial(&err).1, &DenialReason::NotGranted);
    // The refusals are events, with the gate and the caller's cause.
    let denied = p.events.of_kind(ToolEventKind::GateDenied);
    assert_eq!(denied.len(), 2);
    assert_eq!(denied[0].actor, "lab/reader");
    assert_eq!(denied[0].task, "task-g1");
    assert_eq!(denied[0].cause.as_deref(), Some("turn-7"));
    assert!(matches!(
        denied[0].outcome,
        ToolOutcome::Denied {
            gate: Gate::Clearance,
            gate_number: 1,
            ..
        }
    ));
    assert!(p.events.of_kind(ToolEventKind::ToolCall).is_empty());
    // What it does hold works.
    std::fs::write(p.work().join("r.txt"), "readable").unwrap();
    let out = m
        .call(
            "fs__read_text_file",
            json!({"path": p.work().join("r.txt")}),
            &ctx(),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), "readable");
    assert_eq!(out.effect, Effect::Read);
}

#[tokio::test]
async fn a_grant_edited_into_the_catalog_is_still_held_to_clearance() {
    // A catalog whose grant was edited (or compiled by an older, laxer compiler): the
    // call-time gate derives the effect again and refuses.
    let p = support::tool_lab();
    let mut catalog = p.catalog.clone();
    let reader = catalog.experts.get_mut("lab/reader").unwrap();
    let mut grant = reader.tools["fs/read_text_file"].clone();
    grant.tool = "write_file".into();
    grant.effect = Effect::Read;
    grant.derived_effect = Effect::Read;
    reader.tools.insert("fs/write_file".into(), grant);
    let m = iron::tools::ToolManager::new(&catalog, &p.manifest, "lab/reader", p.setup()).unwrap();
    let target = p.work().join("x.txt");
    let err = m
        .call(
            "fs__write_file",
            json!({"path": target, "content": "no"}),
            &ctx(),
        )
        .await
        .unwrap_err();
    let (gate, reason) = denial(&err);
    assert_eq!(gate, &Gate::Clearance);
    // The edited `read` is ignored: the name says write, and that is refused before the
    // server is even started.
    assert_eq!(
        reason,
        &DenialReason::AboveClearance {
            effect: Effect::Write,
            clearance: Clearance::Read
        }
    );
    assert_eq!(m.server_pid("fs").await, None);
    assert!(!target.exists());
}

#[tokio::test]
async fn read_only_annotation_on_a_delete_tool_does_not_lower_it() {
    let p = support::tool_lab();
    // delete_record claims readOnlyHint = true; its name says delete.
    let mut catalog = p.catalog.clone();
    let op = catalog.experts.get_mut("lab/operator").unwrap();
    op.clearance = Clearance::ReadWrite; // would suffice if the annotation were believed
    let m =
        iron::tools::ToolManager::new(&catalog, &p.manifest, "lab/operator", p.setup()).unwrap();
    let err = m
        .call("faulty__delete_record", json!({"id": "r1"}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(
        denial(&err).1,
        &DenialReason::AboveClearance {
            effect: Effect::Destructive,
            clearance: Clearance::ReadWrite
        }
    );
    // With full clearance it runs, and the event records it as destructive.
    let m = p.manager("operator");
    let out = m
        .call("faulty__delete_record", json!({"id": "r1"}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.effect, Effect::Destructive);
    assert_eq!(out.text(), "deleted r1");
}

#[tokio::test]
async fn live_annotation_raises_a_grant_above_clearance() {
    // `hasty` holds write_file with clearance read-write and no declaration: the catalog
    // says write (from the name); the real server annotates it destructive.
    let p = support::tool_lab();
    assert_eq!(
        p.catalog.experts["lab/hasty"].tools["fs/write_file"].effect,
        Effect::Write
    );
    let m = p.manager("hasty");
    let target = p.work().join("hasty.txt");
    let err = m
        .call(
            "fs__write_file",
            json!({"path": target, "content": "x"}),
            &ctx(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        denial(&err).1,
        &DenialReason::AboveClearance {
            effect: Effect::Destructive,
            clearance: Clearance::ReadWrite
        }
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn declaration_within_the_cap_lowers_the_live_annotation() {
    // `writer` declares fs/write_file: write in capabilities.md: destructive (annotation)
    // lowered one level, within the cap, so read-write may call it.
    let p = support::tool_lab();
    let m = p.manager("writer");
    let target = p.work().join("declared.txt");
    let out = m
        .call(
            "fs__write_file",
            json!({"path": target, "content": "ok"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(out.effect, Effect::Write);
    assert_eq!(support::read(&target), "ok");
    // tool_call then tool_result, linked by cause.
    let events = p.events.events();
    let (call_id, call) = &events[0];
    assert_eq!(call.kind, ToolEventKind::ToolCall);
    assert_eq!(call.tool, "fs/write_file");
    assert!(matches!(
        call.outcome,
        ToolOutcome::Admitted {
            effect: Effect::Write,
            ..
        }
    ));
    let (_, result) = &events[1];
    assert_eq!(result.kind, ToolEventKind::ToolResult);
    assert_eq!(result.cause.as_deref(), Some(call_id.as_str()));
    assert!(matches!(
        result.outcome,
        ToolOutcome::Answered {
            is_error: false,
            ..
        }
    ));
}

fn compile_with_caps(caps: &str) -> Result<iron::aem::Catalog, iron::aem::CatalogErrors> {
    let dir = tempfile::tempdir().unwrap();
    let mesh = dir.path().join("aem/lab");
    let d = mesh.join("skills/tinkerer");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(mesh.join("AEM.md"), support::lab_aem_md()).unwrap();
    std::fs::write(d.join("SKILL.md"), support::skill_md("tinkerer")).unwrap();
    std::fs::write(d.join("capabilities.md"), caps).unwrap();
    iron::aem::compile(&dir.path().join("aem"))
}

#[test]
fn declaration_beyond_the_cap_fails_the_build() {
    // Within the cap: `echo` (no verb: destructive) lowered one level to write.
    let ok = compile_with_caps(
        "---\nclearance: read-write\ntools:\n  add: [faulty/echo]\neffects:\n  faulty/echo: write\n---\n\nOk.\n",
    )
    .unwrap();
    assert_eq!(
        ok.experts["lab/tinkerer"].tools["faulty/echo"].effect,
        Effect::Write
    );
    // Two levels: destructive → read.
    let err = compile_with_caps(
        "---\nclearance: read\ntools:\n  add: [faulty/echo]\neffects:\n  faulty/echo: read\n---\n\nNo.\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("over-reaches") || err.contains("more than"),
        "{err}"
    );
    // An irreversible verb cannot be lowered at all.
    let err = compile_with_caps(
        "---\nclearance: read-write\ntools:\n  add: [faulty/delete_record]\neffects:\n  faulty/delete_record: write\n---\n\nNo.\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("lowers a tool with the irreversible verb `delete`"),
        "{err}"
    );
}

#[tokio::test]
async fn real_time_server_answers_a_read_expert() {
    let p = support::tool_lab();
    let m = p.manager("reader");
    let out = m
        .call("time__get_current_time", json!({"timezone": "UTC"}), &ctx())
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert!(out.text().contains("UTC"), "{}", out.text());
    assert_eq!(out.effect, Effect::Read);
}
