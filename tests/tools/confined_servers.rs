//! The local tool servers of an expert with a scratch run in its sandbox, through the
//! production path (iron up, the engine, a disposable expert process, a scripted model).
//!
//! A compromised server needs no argument a path guard could see: the test server's
//! `probe_host` tries, on its own, to write beside the project, read the real repository's
//! `.env` and token, the state directory's keys, and reach a Unix socket and a TCP listener
//! on the host. Each must be refused, while a write into the scratch (its working directory)
//! still works. A pinned package that was never installed, and an unpinned one, are refused
//! with what to do, never fetched.

use crate::support;
use crate::support_tools;

use std::os::unix::net::UnixListener;
use std::time::Duration;

use iron::protocol::payload::HunkProposed;
use iron::protocol::tool::{ToolOutcome, ToolRecord};
use support::{git, project::Project, read};

const SCRIPT: &str = r#"turns:
  - expect: "probe the host"
    tool_calls:
      - name: probe__probe_host
        arguments: {}
      - name: fetched__anything
        arguments: {}
      - name: unpinned__anything
        arguments: {}
  - expect: "unpinned__anything"
    text: "Probed."
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_in_the_scratch_cannot_reach_the_host_on_its_own() {
    let p = Project::scripted_outside_tmp(SCRIPT);
    let root = p.path("").canonicalize().unwrap();
    // The real repository: a token in its config and an untracked .env, as on a CI checkout.
    let repo = root.join("repo");
    p.write("repo/src/lib.txt", "one\n");
    git(&repo, &["init", "--quiet", "-b", "main"]);
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "base"]);
    git(
        &repo,
        &["config", "http.extraheader", "AUTHORIZATION: s3cr3t-token"],
    );
    p.write("repo/.env", "API_KEY=s3cr3t-token\n");
    // Listeners on the host: a Unix socket beside the project and a TCP port on loopback.
    let socket = root.join("host.sock");
    let _unix = UnixListener::bind(&socket).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    // The caller key in the state directory (the scratch lies inside it).
    let key = root.join(iron::tools::caller::KEY_FILE);

    let server = support_tools::test_server();
    // The repository's .git/config is shown filtered (git needs its format), so that read
    // may work; it must not show the token.
    let git_config = format!("read={}", repo.join(".git/config").display());
    let refused = [
        format!("write={}", root.join("outside.txt").display()),
        format!("read={}", repo.join(".env").display()),
        format!("read={}", key.display()),
        format!("unix={}", socket.display()),
        format!("tcp=127.0.0.1:{port}"),
    ];
    let probes: Vec<String> = ["write=inside.txt".to_string(), git_config.clone()]
        .into_iter()
        .chain(refused.iter().cloned())
        .collect();
    // It names the scratch, as a filesystem server would, so the expert works in one.
    let args: Vec<String> = ["\"${IRON_SCRATCH}\"".to_string()]
        .into_iter()
        .chain(
            probes
                .iter()
                .flat_map(|p| ["\"--probe\"".to_string(), format!("{p:?}")]),
        )
        .collect();
    p.write(
        "aem/lab/AEM.md",
        &format!(
            r#"---
name: lab
status: active
description: Confined servers.
defaults:
  model: standard
  clearance: full
  timeouts: {{task_secs: 120, tool_secs: 30, delegation_secs: 60}}
servers:
  probe:
    transport: local
    description: A server that tries to reach the host on its own.
    command: {server:?}
    args: [{args}]
    tools: [probe_host]
  fetched:
    transport: local
    description: A pinned npm package that was never installed.
    command: npx
    args: ["-y", "iron-test-never-installed@1.0.0"]
    tools: [anything]
  unpinned:
    transport: local
    description: A package with no version.
    command: uvx
    args: ["iron-test-unpinned"]
    tools: [anything]
workspace:
  target: repo
  toolchain: [{bin:?}]
---

Confined servers.
"#,
            server = server.display().to_string(),
            args = args.join(", "),
            bin = server.parent().unwrap().display().to_string(),
        ),
    );
    p.write(
        "aem/lab/skills/prober/SKILL.md",
        "---\nname: prober\nidentity: The prober.\ndescription: Probes the host.\n---\n\nProbe.\n",
    );
    p.write(
        "aem/lab/skills/prober/capabilities.md",
        "---\nclearance: full\ntools:\n  add: [probe/probe_host, fetched/anything, unpinned/anything]\n---\n\nProbes.\n",
    );
    p.build_catalog();
    let up = p.up_inside(
        "nodes:\n  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}\n",
        &[],
    );
    up.wait_for("/iron/engine: active", Duration::from_secs(90));
    let said = p.iron_ok(&[
        "task",
        "send",
        "--domain",
        "lab/prober",
        "--timeout",
        "90",
        "probe the host",
    ]);
    assert!(said.contains("Probed."), "{said}");

    let results: Vec<ToolRecord> = read(&p.events("tool_result").await);
    let result_of = |tool: &str| {
        results
            .iter()
            .find(|r| r.tool == tool)
            .unwrap_or_else(|| panic!("a result of {tool}: {results:#?}"))
            .outcome
            .clone()
    };
    let probed = result_of("probe/probe_host");
    let ToolOutcome::Answered { result, .. } = &probed else {
        panic!("a report: {probed:?}");
    };
    // Each refusal says the thing is not there, or cannot be written or reached.
    let report: serde_json::Value = serde_json::from_str(
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("a report: {probed:?}")),
    )
    .unwrap();
    let scratch = report["cwd"].as_str().unwrap();
    assert!(
        scratch.starts_with(&root.join("scratch").display().to_string()),
        "the server works in the scratch: {report}"
    );
    assert!(
        report["write=inside.txt"]
            .as_str()
            .unwrap()
            .starts_with("reached"),
        "{report}"
    );
    for probe in &refused {
        let said = report[probe.as_str()].as_str().unwrap_or_default();
        assert!(said.starts_with("refused"), "{probe}: {said} ({report})");
    }
    assert!(!root.join("outside.txt").exists());
    assert!(report[git_config.as_str()].is_string(), "{report}");
    assert!(!report.to_string().contains("s3cr3t"), "{report}");

    for (tool, says) in [
        ("fetched/anything", "iron tools install"),
        ("unpinned/anything", "names no exact version"),
    ] {
        let outcome = result_of(tool);
        let ToolOutcome::Failed { message, .. } = &outcome else {
            panic!("{tool} did not fail: {outcome:?}");
        };
        assert!(message.contains(says), "{tool}: {outcome:?}");
    }
    // The write inside the scratch is proposed like any change.
    let proposed: Vec<HunkProposed> = read(&p.events("hunk_proposed").await);
    assert!(
        proposed.iter().any(|h| h.path == "inside.txt"),
        "{proposed:#?}"
    );
}

#[test]
fn an_unpinned_server_is_named_and_nothing_is_installed() {
    let p = Project::offline();
    p.write(
        "aem/lab/AEM.md",
        "---\nname: lab\nstatus: active\ndescription: Unpinned.\ndefaults:\n  model: standard\nservers:\n  loose:\n    transport: local\n    description: No version.\n    command: uvx\n    args: [\"iron-test-unpinned\", \"${IRON_SCRATCH}\"]\n    tools: [anything]\nworkspace:\n  target: .\n---\n\nUnpinned.\n",
    );
    p.write(
        "aem/lab/skills/a/SKILL.md",
        "---\nname: a\nidentity: A.\ndescription: A.\n---\n\nA.\n",
    );
    let store = p.path("store");
    let out = p.iron(&[
        "tools",
        "install",
        "--aem",
        &p.path("aem").display().to_string(),
        "--dir",
        &store.display().to_string(),
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("lab/loose") && said.contains("names no exact version"),
        "{said}"
    );
    assert!(!store.join("pypi").exists(), "nothing is installed");
}
