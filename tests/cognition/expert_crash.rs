//! An expert process killed (SIGKILL) in the middle of its task: the task's goal ends aborted
//! with a status and text that say the expert crashed, the log records the failed delegation,
//! and the engine stays active and runs the next task to a delivered answer. Before the kill
//! the task outlives Zenoh's 10 s query timeout, which must not end it.

use crate::support;

use std::time::Duration;

use iron::protocol::payload::TaskDelegated;
use iron::protocol::tool::ToolRecord;
use support::{
    cognition::{CLERK_ANSWER, Lab, descendants, kill9},
    eventually,
};

const T: Duration = Duration::from_secs(60);

fn finished(child: std::process::Child) -> (bool, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The JSON line `iron task send` prints last.
fn result_line(stdout: &str) -> serde_json::Value {
    stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .unwrap_or_else(|| panic!("no result line in {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_expert_aborts_its_goal_and_the_engine_carries_on() {
    let lab = Lab::start(&[]);
    let task = lab.send("lab/sleeper", "wait for the tool");

    // Mid-task: the expert process exists and its tool call has been made (and hangs).
    let (pid, node) = eventually("the sleeper's expert process", T, || async {
        lab.experts().into_iter().next()
    })
    .await;
    assert!(
        node.starts_with("/iron/experts/lab/sleeper_"),
        "expert node name: {node}"
    );
    let deadline = std::time::Instant::now() + T;
    while lab
        .payloads_where("tool_call", |c: &ToolRecord| c.tool == "faulty/hang")
        .await
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no hanging tool call on the log; events: {:#?}\nengine:\n{}",
            lab.p
                .all_events()
                .await
                .iter()
                .map(|e| (e.kind.as_str().to_string(), e.payload.clone()))
                .collect::<Vec<_>>(),
            lab.engine.output().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let listed = lab.p.iron_ok(&["node", "list"]);
    assert!(listed.contains(&node), "{node} not in:\n{listed}");

    // Outlive Zenoh's default query timeout (10 s): a long task is still a running task, for
    // the engine waiting on the expert and for the client waiting on the engine.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let mut task = task;
    assert!(
        task.try_wait().unwrap().is_none(),
        "the client gave up on a running task:\n{}",
        lab.engine.output().join("\n")
    );
    assert!(
        lab.payloads_where("task_delegated", |d: &TaskDelegated| d.domain
            == "lab/sleeper")
            .await
            .is_empty(),
        "the engine gave up on a running task"
    );

    let tool_servers = descendants(pid);
    kill9(pid);

    let (ok, stdout, stderr) = tokio::task::spawn_blocking(move || finished(task))
        .await
        .unwrap();
    assert!(!ok, "the task must not succeed:\n{stdout}\n{stderr}");
    let result = result_line(&stdout);
    assert_eq!(result["goal_status"], "aborted", "{result}");
    assert_eq!(result["status"], "failed", "{result}");
    let text = result["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&node) && text.contains("crashed") && text.contains("killed by signal 9"),
        "the text names the expert and the crash: {text}"
    );
    for p in tool_servers {
        kill9(p);
    }

    // The log says the delegation failed, and why.
    let delegated = eventually("task_delegated on the log", T, || async {
        lab.payloads_where("task_delegated", |d: &TaskDelegated| {
            d.domain == "lab/sleeper"
        })
        .await
        .into_iter()
        .next()
    })
    .await;
    assert_eq!(delegated.status, "aborted", "{delegated:?}");
    assert!(delegated.error.contains("crash"), "{}", delegated.error);

    // The engine is still active and answers the next task.
    let state = lab.p.iron_ok(&["lifecycle", "get", "/iron/engine"]);
    assert!(state.contains("active"), "engine state: {state}");
    let next = lab.send("lab/clerk", "file this note");
    let (ok, stdout, stderr) = tokio::task::spawn_blocking(move || finished(next))
        .await
        .unwrap();
    assert!(
        ok,
        "{stdout}\n{stderr}\nengine:\n{}",
        lab.engine.output().join("\n")
    );
    let result = result_line(&stdout);
    assert_eq!(result["goal_status"], "succeeded", "{result}");
    assert_eq!(result["text"], CLERK_ANSWER, "{result}");
}
