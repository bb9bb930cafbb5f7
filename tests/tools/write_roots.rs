//! Where an expert may change files: a local server holding write-class tools works in the
//! task's scratch workspace or a directory under the project's `workspace/`, nowhere else.
//! The compiler refuses a mesh that names anything else (`.` — the checkout — most of all),
//! the expert refuses to start when the environment points a root outside, and an expert
//! writes through the real filesystem server inside its root and is refused outside it.

use crate::support;
use crate::support_tools as tools;

use std::time::Duration;

use serde_json::json;
use support::project::Project;

const T: Duration = Duration::from_secs(60);

/// A mesh `lab` whose expert `writer` holds the filesystem server's `write_file`, the server
/// rooted at `root` (an argument as written in AEM.md).
fn lab(p: &Project, root: &str) {
    let server = tools::fs_server_js().display().to_string();
    p.write(
        "aem/lab/AEM.md",
        &format!(
            "---\nname: lab\nstatus: active\ndescription: Writes notes.\ndefaults:\n  model: standard\n  clearance: read\nservers:\n  files:\n    transport: local\n    command: {node}\n    args: [{server:?}, {root:?}]\n    tools: [write_file]\n---\n\nA mesh that writes notes.\n",
            node = tools::node(),
        ),
    );
    p.write(
        "aem/lab/skills/writer/SKILL.md",
        "---\nname: writer\nidentity: The writer.\ndescription: Writes notes.\n---\n\nWrite the notes you are asked for.\n",
    );
    p.write(
        "aem/lab/skills/writer/capabilities.md",
        "---\nclearance: read-write\ntools:\n  add: [files/write_file]\neffects:\n  files/write_file: write\n---\n",
    );
}

const WRITER: &str = "nodes:\n  - {name: writer, namespace: /iron/experts/lab, executable: expert_node, args: [--expert, lab/writer]}\n";

#[test]
fn the_compiler_refuses_a_write_tool_on_the_checkout_or_an_unbounded_root() {
    for (root, why) in [
        (".", "is outside `workspace/`"),
        ("${IRON_SCRATCH:-.}", "falls back to `.`"),
        ("${NOTES}", "may name any directory"),
        (
            "${NOTES:-/srv/notes}",
            "its default `/srv/notes` is outside",
        ),
    ] {
        let p = Project::offline();
        lab(&p, root);
        let aem = p.path("aem").display().to_string();
        let out = p.iron(&["catalog", "check", "--aem", &aem]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{root}: must not compile");
        assert!(
            stderr.contains("AEM.md:")
                && stderr.contains("servers.files.args")
                && stderr.contains(
                    "expert `lab/writer` holds write-class tools of `files` (write_file)"
                )
                && stderr.contains(why),
            "{root}: {stderr}"
        );
    }
}

#[test]
fn an_expert_writes_inside_its_workspace_root_and_nowhere_else() {
    let p = Project::scripted("turns: []\n");
    lab(&p, "${NOTES:-./workspace/notes}");
    let inside = p.path("workspace/notes/today.txt");
    let outside = p.path("escape.txt");
    let governance = p.path("aem/lab/AEM.md");
    let before = std::fs::read(&governance).unwrap();
    let call = |path: &std::path::Path, content: &str| json!({"tool_calls": [{"name": "files__write_file", "arguments": {"path": path.display().to_string(), "content": content}}]});
    let script = json!({"turns": [
        call(&inside, "kept"),
        call(&outside, "lost"),
        call(&p.path("workspace/notes/../../aem/lab/AEM.md"), "overwritten"),
        {"text": "done"},
    ]});
    p.write("script.yaml", &script.to_string());

    let aem = p.path("aem").display().to_string();
    let mut up = p.up_inside(WRITER, &["--aem", &aem]);
    up.wait_for("/iron/experts/lab/writer: active", T);
    let out = p.iron(&[
        "task",
        "send",
        "--action",
        "/iron/experts/lab/writer/task",
        "write today's notes",
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "kept");
    assert!(!outside.exists(), "a write outside the root landed");
    assert_eq!(
        std::fs::read(&governance).unwrap(),
        before,
        "governance changed"
    );
    let denied = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(p.events("gate_denied"));
    assert_eq!(
        denied.len(),
        2,
        "both writes outside the root are refused by a gate: {denied:#?}"
    );
    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("iron up stops");
}

/// Starts the writer and expects it to refuse `configure` because `files` would write outside
/// `workspace/`, creating nothing in `elsewhere`.
fn refuses_to_start(p: &Project, elsewhere: &std::path::Path) {
    let aem = p.path("aem").display().to_string();
    let mut up = p.up_inside(WRITER, &["--aem", &aem]);
    up.wait_for("configure failed", T);
    up.wait_for("server `files` would write in", T);
    up.wait_for("which is outside", T);
    assert!(
        std::fs::read_dir(elsewhere).unwrap().next().is_none(),
        "nothing is created outside"
    );
    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("iron up stops");
}

#[test]
fn an_expert_whose_root_resolves_outside_the_workspace_refuses_to_start() {
    // The environment points the root elsewhere.
    let elsewhere = tempfile::tempdir().unwrap();
    let p = Project::offline().env("NOTES", &elsewhere.path().display().to_string());
    lab(&p, "${NOTES:-./workspace/notes}");
    refuses_to_start(&p, elsewhere.path());

    // A symbolic link inside workspace/ points out of it.
    let elsewhere = tempfile::tempdir().unwrap();
    let p = Project::offline();
    lab(&p, "./workspace/notes");
    std::fs::create_dir_all(p.path("workspace")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), p.path("workspace/notes")).unwrap();
    refuses_to_start(&p, elsewhere.path());
}
