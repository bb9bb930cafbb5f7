//! The dev mesh end to end: the engineer (scripted model, real filesystem MCP server) is asked
//! to add a `--json` flag to a fixture repository. It works in a scratch worktree, so the
//! fixture is untouched while its changes are proposed hunk by hunk on the log; a command it
//! runs with `run_confined` sees its edit and cannot write outside the scratch; gate 2 stops
//! its write to the scratch's governance and a command run outside the scratch.
//!
//! The task's review job waits for a person on each hunk. One hunk is approved with `iron
//! hunks` and applied at once with `iron hunks apply` (with `effect_intent`, `hunk_applied`,
//! `effect_confirmed` and the verify command confined on the result); the jobs runner is then
//! killed with SIGKILL, a second hunk is approved over ROS by an independent rmw_zenoh client
//! and the third rejected on the job itself; a new runner takes the job up where it waited,
//! lands exactly the approved hunk, verifies, and removes the scratch and its branch.

use crate::support;
use crate::support_tools;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use iron::protocol::payload::{
    HunkApplied, HunkDecided, HunkProposed, OperatorRefused, VerifyFinished,
};
use iron::protocol::tool::{ToolOutcome, ToolRecord};
use support::{copy_dir, git, project::Project, read};

const BOUND: Duration = Duration::from_secs(90);

/// Decides hunks over ROS with the independent client; its JSON answer.
fn decide_over_ros(
    router: &str,
    decision: &str,
    operator: &str,
    proof: &str,
    hunks: &[&str],
) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/decide_hunks.py");
    let out = Command::new(support::test_python())
        .arg(script)
        .args(["--router", router, "--operator", operator])
        .args(["--proof", proof, decision])
        .args(hunks)
        .output()
        .expect("start decide_hunks.py");
    assert!(out.status.success(), "decide_hunks.py: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// The dev mesh's jobs runner, working in the project directory as `iron up` would.
fn dev_runner(p: &Project, tag: &str) -> support::Proc {
    p.spawn_inside(
        tag,
        env!("CARGO_BIN_EXE_jobs_runner"),
        &[
            "--mesh",
            "dev",
            "--autostart",
            "--ros-args",
            "-r",
            "__node:=runner",
            "-r",
            "__ns:=/iron/jobs/dev",
        ],
    )
}

const SCRIPT: &str = r#"turns:
  - expect: "--json"
    tool_calls:
      - name: workspace__edit_file
        arguments: {path: "src/cli.txt", edits: [{oldText: "flags: verbose", newText: "flags: verbose, json"}]}
      - name: workspace__write_file
        arguments: {path: "JSON.md", content: "Use --json for machine-readable output.\n"}
      - name: workspace__write_file
        arguments: {path: "CHANGES.md", content: "- a --json flag\n"}
      - name: sandbox__run_confined
        arguments: {command: sh, args: ["-c", "grep -c json src/cli.txt; echo x > /etc/escaped"]}
      - name: sandbox__run_confined
        arguments: {command: "true", cwd: "/"}
      - name: workspace__write_file
        arguments: {path: "aem/dev/AEM.md", content: "status: parked\n"}
      - name: git__git_status
        arguments: {repo_path: "."}
  - expect: "git_status"
    text: "Added the --json flag to the CLI and documented it."
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engineer_proposes_and_only_approved_hunks_land() {
    let p = Project::scripted(SCRIPT);
    p.operator("ana");
    p.operator("bo");
    // The shipped agent folders, with the filesystem server as shipped (run confined) and the
    // workspace pointed at the fixture, with a verify command.
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("aem"),
        &p.path("aem"),
    );
    let aem_md = p.path("aem/dev/AEM.md");
    let text = std::fs::read_to_string(&aem_md).unwrap();
    let text = support_tools::dev_servers_installed(&text)
        .replace("  target: .\n", "  target: repo\n")
        .replace(
            "  verify: [cargo, check, --offline, --all-targets]\n  verify_secs: 1800\n",
            "  verify: [sh, -c, \"grep -q json src/cli.txt\"]\n  verify_secs: 60\n",
        );
    assert!(
        text.contains("target: repo") && text.contains("grep -q json"),
        "the shipped dev mesh changed"
    );
    std::fs::write(&aem_md, text).unwrap();
    p.build_catalog();

    // The fixture repository: the real tree.
    let repo = p.path("repo");
    p.write("repo/src/cli.txt", "usage: tool [flags]\nflags: verbose\n");
    p.write("repo/aem/dev/AEM.md", "status: active\n");
    git(&repo, &["init", "--quiet", "-b", "main"]);
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "fixture"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);

    let up = p.up_inside(
        "nodes:\n  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}\n  - {name: gateway, namespace: /iron/jobs, executable: jobs_gateway, autostart: true}\n",
        &[],
    );
    up.wait_for("/iron/engine: active", BOUND);
    up.wait_for("/iron/jobs/gateway: active", BOUND);
    let runner = dev_runner(&p, "runner");
    let said = p.iron_ok(&[
        "task",
        "send",
        "--domain",
        "dev/engineer",
        "--timeout",
        "90",
        "add a --json flag to the CLI",
    ]);
    assert!(said.contains("change(s) proposed for review"), "{said}");

    // Nothing touched the fixture.
    assert!(git(&repo, &["status", "--porcelain"]).is_empty());
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head);
    let proposed: Vec<HunkProposed> = read(&p.events("hunk_proposed").await);
    assert_eq!(proposed.len(), 3, "{proposed:#?}");
    let task = proposed[0].task_id.clone();
    let scratch = proposed[0].scratch.clone();
    assert!(scratch.join("JSON.md").exists());
    let id_of = |path: &str| {
        proposed
            .iter()
            .find(|h| h.path == path)
            .unwrap_or_else(|| panic!("a hunk of {path}: {proposed:#?}"))
            .hunk
            .clone()
    };
    let (cli, docs, changes) = (id_of("src/cli.txt"), id_of("JSON.md"), id_of("CHANGES.md"));
    // Gate 2 stopped the write to the scratch's governance and a command run outside it.
    let denied: Vec<ToolRecord> = read(&p.events("gate_denied").await);
    assert_eq!(denied.len(), 2, "{denied:#?}");
    assert!(
        denied
            .iter()
            .any(|d| d.arguments.to_string().contains("aem/dev/AEM.md"))
    );
    assert!(
        denied.iter().any(|d| d.tool == "sandbox/run_confined"),
        "{denied:#?}"
    );
    // The confined command saw the edit and could not write outside the scratch.
    let results: Vec<ToolRecord> = read(&p.events("tool_result").await);
    let result = results
        .iter()
        .find_map(|r| match &r.outcome {
            ToolOutcome::Answered { result, .. } if r.tool == "sandbox/run_confined" => {
                Some(result)
            }
            _ => None,
        })
        .expect("the confined command's result");
    assert_eq!(result["stdout"], "1\n", "{result}");
    assert_eq!(result["exit_code"], 2, "{result}");
    assert!(
        result["stderr"]
            .as_str()
            .unwrap()
            .contains("Read-only file system"),
        "{result}"
    );
    assert!(!Path::new("/etc/escaped").exists());
    // The real git server (PyPI, from the package store) ran confined in the scratch and
    // read it: it sees the engineer's new file.
    let status = results
        .iter()
        .find(|r| r.tool == "git/git_status")
        .expect("git_status's result");
    let status = serde_json::to_string(&status.outcome).unwrap();
    assert!(status.contains("JSON.md"), "{status}");

    // The review job waits for a person.
    let job = format!("review-{task}");
    let show = || p.iron_ok(&["jobs", "show", &job]);
    support::wait_until(
        BOUND,
        || show().contains(": waiting"),
        || {
            format!(
                "the review job never waited:\n{}\n{:#?}",
                show(),
                runner.output()
            )
        },
    );
    let listed = p.iron_ok_inside(&["hunks", "list", "--task", &task]);
    assert_eq!(listed.lines().count(), 3, "{listed}");
    assert!(
        listed.contains(&format!("{cli} pending  src/cli.txt")),
        "{listed}"
    );
    let shown = p.iron_ok_inside(&["hunks", "show", &cli]);
    assert!(shown.contains("+flags: verbose, json"), "{shown}");

    // One hunk approved and applied at once by hand.
    p.iron_ok_inside(&["hunks", "approve", &cli, "--user", "ana"]);
    // From anywhere but the project, the workspace target differs: refused, nothing applied.
    let elsewhere = p.iron(&["hunks", "apply", "--task", &task]);
    assert!(!elsewhere.status.success(), "{elsewhere:?}");
    assert!(
        String::from_utf8_lossy(&elsewhere.stderr).contains("from the project directory"),
        "{elsewhere:?}"
    );
    assert!(git(&repo, &["status", "--porcelain"]).is_empty());
    let applied = p.iron_ok_inside(&["hunks", "apply", "--task", &task, "--user", "ana"]);
    assert!(applied.contains("applied 1 hunk(s)"), "{applied}");
    assert!(
        applied.contains("verify `sh -c grep -q json src/cli.txt` passed"),
        "{applied}"
    );
    assert!(applied.contains("2 hunk(s) of task"), "{applied}");
    assert_eq!(
        std::fs::read_to_string(repo.join("src/cli.txt")).unwrap(),
        "usage: tool [flags]\nflags: verbose, json\n"
    );
    assert!(Path::new(&scratch).exists(), "kept while hunks are pending");

    // The runner dies outright; the review waits in the log meanwhile.
    runner.signal(libc::SIGKILL);
    // A second hunk is approved over ROS by a client no one on Iron wrote, the third is
    // rejected on the job itself.
    // The proof is bo's signature of exactly this decision, as `iron operator sign` prints it.
    let sign = |ids: &str, decision: &str| {
        let args = [
            "operator",
            "sign",
            "hunks.decide",
            ids,
            decision,
            "--operator",
            "bo",
        ];
        p.iron_ok(&args).trim().to_string()
    };
    let approve_docs = sign(&docs, "approved");
    let answer = decide_over_ros(p.router(), "approve", "bo", &approve_docs, &[&docs]);
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(
        answer["decided"][0],
        format!("{docs} approved JSON.md"),
        "{answer}"
    );
    p.iron_ok(&[
        "jobs",
        "approve",
        &job,
        &format!("hunk-{changes}"),
        "--reject",
        "--operator",
        "ana",
    ]);
    assert!(
        !repo.join("JSON.md").exists(),
        "nothing lands without a runner"
    );
    // Over ROS, bad requests are refused with why and decide nothing: among them every way
    // of deciding without bo's signature of that very decision.
    let reject_changes = sign(&changes, "rejected");
    for (decision, operator, proof, hunks, why) in [
        (
            "approve",
            "bo",
            sign("nope", "approved"),
            vec!["nope"],
            "no hunk nope",
        ),
        (
            "reject",
            "",
            reject_changes.clone(),
            vec![docs.as_str()],
            "name the operator",
        ),
        ("approve", "bo", sign("", "approved"), vec![], "name 1 to"),
        (
            "approve",
            "bo",
            sign(&cli, "approved"),
            vec![cli.as_str()],
            "applied already",
        ),
        (
            "approve",
            "bo",
            String::new(),
            vec![changes.as_str()],
            "not signed",
        ),
        (
            "approve",
            "bo",
            "v1:1:00".into(),
            vec![changes.as_str()],
            "does not verify",
        ),
        // Replayed: bo's proof for another decision, another hunk, another operator.
        (
            "approve",
            "bo",
            reject_changes.clone(),
            vec![changes.as_str()],
            "does not verify",
        ),
        (
            "approve",
            "bo",
            approve_docs.clone(),
            vec![changes.as_str()],
            "does not verify",
        ),
        (
            "approve",
            "ana",
            approve_docs.clone(),
            vec![changes.as_str()],
            "does not verify",
        ),
        (
            "approve",
            "eve",
            approve_docs.clone(),
            vec![changes.as_str()],
            "not registered",
        ),
    ] {
        let answer = decide_over_ros(p.router(), decision, operator, &proof, &hunks);
        assert_eq!(answer["ok"], false, "{answer}");
        assert!(answer["error"].as_str().unwrap().contains(why), "{answer}");
    }
    // Each refusal is on the log, with why.
    let refused: Vec<OperatorRefused> = read(&p.events("operator_refused").await);
    assert!(
        refused.iter().any(|r| r.what == "hunk decision"
            && r.operator_id == "eve"
            && r.reason.contains("not registered")),
        "{refused:#?}"
    );

    // A new runner takes the review up where it waited and lands it.
    let runner = dev_runner(&p, "runner2");
    support::wait_until(
        BOUND,
        || show().contains(": done"),
        || {
            format!(
                "the review job did not finish:\n{}\n{:#?}",
                show(),
                runner.output()
            )
        },
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("JSON.md")).unwrap(),
        "Use --json for machine-readable output.\n"
    );
    assert!(
        !repo.join("CHANGES.md").exists(),
        "the rejected hunk left no trace"
    );
    let status = git(&repo, &["status", "--porcelain"]);
    assert_eq!(status, " M src/cli.txt\n?? JSON.md\n", "{status}");
    let decided = p.events("hunk_decided").await;
    let by_job = format!("job/{job}");
    assert!(
        decided.iter().any(|e| {
            let d: HunkDecided = e.payload().unwrap();
            d.hunk == changes && d.decision == "rejected" && e.actor == by_job
        }),
        "the decision taken on the job is on the review: {decided:#?}"
    );
    let applied = p.events("hunk_applied").await;
    let hunks: Vec<HunkApplied> = read(&applied);
    let actors: Vec<(&str, &str)> = hunks
        .iter()
        .zip(&applied)
        .map(|(h, e)| (h.hunk.as_str(), e.actor.as_str()))
        .collect();
    assert_eq!(
        actors,
        [
            (cli.as_str(), "operator/ana"),
            (docs.as_str(), by_job.as_str())
        ]
    );
    for kind in ["effect_intent", "effect_confirmed", "verify_finished"] {
        let events = p.events(kind).await;
        assert_eq!(events.len(), 2, "{kind}: {events:#?}");
        assert_eq!(events[1].actor, by_job, "{kind}");
    }
    let verified: Vec<VerifyFinished> = read(&p.events("verify_finished").await);
    assert!(verified.iter().all(|v| v.ok), "{verified:#?}");
    // The job's own diary carries the effect gate around the landing.
    let diary = show();
    assert!(
        diary.contains("effect_intent") && diary.contains("effect_confirmed"),
        "{diary}"
    );
    assert!(
        !Path::new(&scratch).exists(),
        "the scratch is removed once all is decided"
    );
    let branches = git(&repo, &["branch", "--list", "iron/scratch/*"]);
    assert!(branches.trim().is_empty(), "{branches}");

    // Bad input is refused with why.
    for args in [
        vec!["hunks", "approve", "nope"],
        vec!["hunks", "approve", cli.as_str()],
        vec!["hunks", "apply", "--task", "no-such-task"],
    ] {
        let out = p.iron_inside(&args);
        assert!(!out.status.success(), "{args:?}: {out:?}");
        assert!(!out.stderr.is_empty());
    }
}
