//! The engine killed (SIGKILL) while a goal it accepted is running: `iron task send` sees the
//! action server leave the graph and fails, naming the loss, long before its `--wait` runs
//! out, and the expert it started dies with it. (A live engine that is merely slow keeps its
//! client waiting: `tests/cognition/expert_crash.rs`.)

use crate::support;

use std::time::Duration;

use iron::protocol::tool::ToolRecord;
use support::{
    bin,
    cognition::{Lab, alive, descendants, kill9},
    eventually,
};

const T: Duration = Duration::from_secs(60);

/// Kills what the dead engine left behind (its expert and the expert's tool server are no
/// longer its descendants once it is gone), whatever the test's outcome.
struct Orphans(Vec<u32>);

impl Drop for Orphans {
    fn drop(&mut self) {
        for pid in &self.0 {
            kill9(*pid);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_a_killed_engine_fails_fast_and_says_why() {
    let lab = Lab::start(&[]);
    let task = std::process::Command::new(bin("iron"))
        .args([
            "task",
            "send",
            "--domain",
            "lab/sleeper",
            "--timeout",
            "30",
            "--wait",
            "300",
            "wait for the tool",
        ])
        .envs(lab.p.envs())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let client = task.id();

    // The goal is accepted and running: its expert hangs in a tool call.
    eventually("the sleeper's hanging tool call on the log", T, || async {
        (!lab
            .payloads_where("tool_call", |c: &ToolRecord| c.tool == "faulty/hang")
            .await
            .is_empty())
        .then_some(())
    })
    .await;
    let left = descendants(lab.engine.pid());
    assert!(!left.is_empty(), "the engine runs an expert");
    let _orphans = Orphans(left.clone());
    kill9(lab.engine.pid());
    // Its expert (and what the expert started) die with it instead of living on unsupervised.
    eventually("the expert to die with the engine", T, || async {
        left.iter().all(|p| !alive(*p)).then_some(())
    })
    .await;

    // The bound only proves the client did not wait out --wait 300.
    let waited = tokio::time::timeout(
        T,
        tokio::task::spawn_blocking(move || task.wait_with_output()),
    )
    .await;
    let out = match waited {
        Ok(out) => out.unwrap().unwrap(),
        Err(_) => {
            kill9(client);
            panic!("iron task send still waits {T:?} after the engine was killed");
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("the action server /iron/engine/task went away"),
        "the error names the lost server:\n{stderr}"
    );
    assert!(
        !stdout.lines().any(|l| l.contains("goal_status")),
        "no result was invented:\n{stdout}"
    );
}
