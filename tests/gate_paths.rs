//! Gate 2 (path guard) against the real filesystem server, which is allowed the whole
//! project so that only the guard stands between a write and the governance files.

#[path = "support_tools/mod.rs"]
mod support;

use iron::tools::{CallContext, DenialReason, Gate, ToolError, ToolEventKind, ToolOutcome};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn ctx() -> CallContext {
    CallContext::task("task-g2")
}

/// The governance file every refusal must leave untouched.
fn aem_md(p: &support::ToolLab) -> PathBuf {
    p.root.join("aem/lab/AEM.md")
}

fn expect_governance(err: &ToolError, protected_suffix: &str) -> PathBuf {
    let d = err
        .denial()
        .unwrap_or_else(|| panic!("expected a denial, got {err:?}"));
    assert_eq!(d.gate, Gate::Path, "{err}");
    match &d.reason {
        DenialReason::Governance {
            protected,
            resolved,
            ..
        } => {
            assert!(
                protected.ends_with(protected_suffix),
                "{protected:?} / {err}"
            );
            resolved.clone()
        }
        other => panic!("expected Governance, got {other:?}"),
    }
}

async fn write(
    m: &iron::tools::ToolManager,
    path: Value,
) -> Result<iron::tools::ToolOutput, ToolError> {
    m.call(
        "fs__write_file",
        json!({"path": path, "content": "overwritten"}),
        &ctx(),
    )
    .await
}

#[tokio::test]
async fn absolute_path_into_aem_is_refused() {
    let p = support::tool_lab();
    let before = support::read(&aem_md(&p));
    let m = p.manager("writer");
    let err = write(&m, json!(aem_md(&p))).await.unwrap_err();
    let resolved = expect_governance(&err, "aem");
    assert_eq!(resolved, aem_md(&p));
    assert!(err.to_string().contains("gate 2"), "{err}");
    assert_eq!(support::read(&aem_md(&p)), before);
    // The compiled catalog and manifest, config/ and .git/ likewise.
    for (path, suffix) in [
        (p.build_dir().join("catalog.json"), "catalog.json"),
        (
            p.build_dir().join("tool_manifest.json"),
            "tool_manifest.json",
        ),
        (p.root.join("config/iron.yaml"), "config"),
        (p.root.join(".git/config"), ".git"),
    ] {
        let before = std::fs::read(&path).unwrap();
        let err = write(&m, json!(path)).await.unwrap_err();
        expect_governance(&err, suffix);
        assert_eq!(std::fs::read(&path).unwrap(), before, "{}", path.display());
    }
    let denied = p.events.of_kind(ToolEventKind::GateDenied);
    assert_eq!(denied.len(), 5);
    assert!(denied.iter().all(|e| matches!(
        e.outcome,
        ToolOutcome::Denied {
            gate: Gate::Path,
            gate_number: 2,
            ..
        }
    )));
    assert!(p.events.of_kind(ToolEventKind::ToolCall).is_empty());
}

#[tokio::test]
async fn dot_dot_traversal_is_resolved_before_the_check() {
    let p = support::tool_lab();
    let m = p.manager("writer");
    // Into governance through the granted root.
    let sneaky = format!("{}/../aem/lab/AEM.md", p.work().display());
    let err = write(&m, json!(sneaky)).await.unwrap_err();
    assert_eq!(expect_governance(&err, "aem"), aem_md(&p));
    // Relative, against the server's root (the project).
    let err = write(&m, json!("work/../aem/lab/AEM.md"))
        .await
        .unwrap_err();
    expect_governance(&err, "aem");
    // Out of every granted root.
    let escape = format!("{}/../escape.txt", p.work().display());
    let err = write(&m, json!(escape)).await.unwrap_err();
    let d = err.denial().unwrap();
    assert!(
        matches!(&d.reason, DenialReason::OutsideRoots { resolved, .. } if resolved == &p.root.join("escape.txt")),
        "{err}"
    );
    assert!(!p.root.join("escape.txt").exists());
}

#[tokio::test]
async fn symlink_inside_the_root_to_a_governance_file_is_refused() {
    let p = support::tool_lab();
    let before = support::read(&aem_md(&p));
    let link = p.work().join("innocent.md");
    std::os::unix::fs::symlink(aem_md(&p), &link).unwrap();
    // A link to a directory, then a path through it.
    std::os::unix::fs::symlink(p.root.join("config"), p.work().join("settings")).unwrap();
    // A dangling link to a governance file that does not exist yet.
    std::os::unix::fs::symlink(p.root.join("aem/lab/NEW.md"), p.work().join("later.md")).unwrap();
    let m = p.manager("writer");
    let err = write(&m, json!(link)).await.unwrap_err();
    assert_eq!(expect_governance(&err, "aem"), aem_md(&p));
    let err = write(&m, json!(p.work().join("settings/iron.yaml")))
        .await
        .unwrap_err();
    expect_governance(&err, "config");
    let err = write(&m, json!(p.work().join("later.md")))
        .await
        .unwrap_err();
    expect_governance(&err, "aem");
    assert_eq!(support::read(&aem_md(&p)), before);
    assert!(!p.root.join("aem/lab/NEW.md").exists());
}

#[tokio::test]
async fn dot_segments_and_trailing_slashes_do_not_hide_governance() {
    let p = support::tool_lab();
    let m = p.manager("writer");
    let r = p.root.display().to_string();
    for path in [
        format!("{r}/./aem/./lab/AEM.md"),
        format!("{r}//aem//lab/"),
        format!("{r}/work/./../config/"),
        format!("{r}/aem"),
        format!("{r}/aem/"),
        // An ancestor of governance: moving or writing it would touch aem/.
        r.clone(),
    ] {
        let err = m
            .call("fs__create_directory", json!({"path": path}), &ctx())
            .await
            .unwrap_err();
        assert_eq!(
            err.denial().map(|d| d.gate),
            Some(Gate::Path),
            "{path}: {err}"
        );
        assert!(
            matches!(
                err.denial().unwrap().reason,
                DenialReason::Governance { .. }
            ),
            "{path}: {err}"
        );
    }
}

#[tokio::test]
async fn every_path_argument_is_checked() {
    let p = support::tool_lab();
    let m = p.manager("writer");
    let src = p.work().join("draft.md");
    std::fs::write(&src, "draft").unwrap();
    // move_file: the destination is governance.
    let err = m
        .call(
            "fs__move_file",
            json!({"source": src, "destination": p.root.join(".git/hooks/pre-commit")}),
            &ctx(),
        )
        .await
        .unwrap_err();
    expect_governance(&err, ".git");
    // move_file: the source is governance.
    let err = m
        .call("fs__move_file", json!({"source": p.root.join("config/iron.yaml"), "destination": p.work().join("stolen.yaml")}), &ctx())
        .await
        .unwrap_err();
    expect_governance(&err, "config");
    assert!(src.exists() && p.root.join("config/iron.yaml").exists());
    // Outside the granted roots, though not governance.
    let err = write(&m, json!(p.root.join("notes.txt")))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.denial().unwrap().reason,
            DenialReason::OutsideRoots { .. }
        ),
        "{err}"
    );
    // Home-relative paths cannot be resolved here.
    let err = write(&m, json!("~/x.txt")).await.unwrap_err();
    assert!(
        matches!(
            err.denial().unwrap().reason,
            DenialReason::Unresolvable { .. }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_normal_write_inside_the_root_succeeds_on_the_real_server() {
    let p = support::tool_lab();
    let m = p.manager("writer");
    let target = p.work().join("notes/today.md");
    let out = m
        .call(
            "fs__create_directory",
            json!({"path": p.work().join("notes")}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    let out = write(&m, json!(target)).await.unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(support::read(&target), "overwritten");
    // Relative to the server's root, and with harmless dot segments.
    let out = write(&m, json!("work/./notes/../rel.md")).await.unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(support::read(&p.work().join("rel.md")), "overwritten");
    // A move inside the root.
    let out = m
        .call(
            "fs__move_file",
            json!({"source": target, "destination": p.work().join("moved.md")}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert!(p.work().join("moved.md").exists() && !target.exists());
    assert!(p.events.of_kind(ToolEventKind::GateDenied).is_empty());
}

#[tokio::test]
async fn reads_are_not_path_guarded() {
    // Gate 2 guards writes; reading governance is not its business (gate 1 and the
    // server's own allow-list are).
    let p = support::tool_lab();
    let m = p.manager("writer");
    let out = m
        .call("fs__read_text_file", json!({"path": aem_md(&p)}), &ctx())
        .await
        .unwrap();
    assert!(out.text().contains("name: lab"));
    let _: &Path = &p.root;
}

/// A write tool whose file argument is called `dst` (no path word): gate 2 checks it all
/// the same, nested arguments too, while free text (`text`) is never taken as a path.
#[tokio::test]
async fn an_argument_of_any_name_that_names_a_file_is_checked() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    let own = p.root.join("aem/lab/skills/operator/capabilities.md");
    let before = support::read(&own);
    let save = |args: Value| {
        let m = &m;
        async move { m.call("faulty__save_text", args, &ctx()).await }
    };
    // Relative to the server's working directory (the work root), up into governance.
    let err = save(
        json!({"dst": "../aem/lab/skills/operator/capabilities.md", "text": "clearance: full"}),
    )
    .await
    .unwrap_err();
    assert_eq!(expect_governance(&err, "aem"), own);
    assert!(err.to_string().contains("`dst`"), "{err}");
    assert_eq!(support::read(&own), before);
    // Out of the roots through a name that is no path word, at any depth.
    for args in [
        json!({"dst": "/tmp/iron-gate2-escape.txt", "text": "x"}),
        json!({"dst": "ok.txt", "text": "x", "opts": {"target": p.root.join("notes.txt")}}),
        json!({"dst": "ok.txt", "text": "x", "outputs": [{"output": "../escape.txt"}]}),
        json!({"dst": "file:///etc/passwd", "text": "x"}),
        json!({"dst": "~/x.txt", "text": "x"}),
    ] {
        let err = save(args.clone()).await.unwrap_err();
        assert!(
            matches!(
                err.denial().map(|d| &d.reason),
                Some(DenialReason::OutsideRoots { .. } | DenialReason::Unresolvable { .. })
            ),
            "{args}: {err}"
        );
    }
    assert!(!Path::new("/tmp/iron-gate2-escape.txt").exists());
    assert!(!p.root.join("notes.txt").exists() && !p.root.join("escape.txt").exists());
    assert!(!p.work().join("ok.txt").exists());
    // Inside the root it writes, and free text that looks like a path is left alone.
    let out = save(json!({"dst": "ok.txt", "text": "/etc/passwd and ../aem/ are just words"}))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(
        support::read(&p.work().join("ok.txt")),
        "/etc/passwd and ../aem/ are just words"
    );
    assert!(p.events.of_kind(ToolEventKind::ToolCall).len() == 1);
}

#[tokio::test]
async fn a_relative_path_resolves_where_the_server_runs() {
    // As in an expert: servers' relative arguments are taken from the project, and the
    // granted root of a write-capable server is its own (the scratch, here `work/`).
    let p = support::tool_lab();
    let setup = iron::tools::ManagerSetup::new(p.events.clone(), p.policy(), &p.root, p.env())
        .with_server_root("faulty", p.work());
    let m = p.manager_with("operator", setup);
    std::fs::create_dir_all(p.root.join("src")).unwrap();
    std::fs::create_dir_all(p.work().join("src")).unwrap();
    let out = m
        .call(
            "faulty__save_text",
            json!({"dst": "src/cli.txt", "text": "x"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    // Written in the root gate 2 checked, not in the project the expert runs in.
    assert!(!p.root.join("src/cli.txt").exists());
    assert_eq!(support::read(&p.work().join("src/cli.txt")), "x");
}
