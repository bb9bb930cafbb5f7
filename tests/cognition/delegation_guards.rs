//! The engine's guards across processes: goals it must refuse (too deep, unknown or malformed
//! domain, empty instruction, parked mesh) are rejected with the reason on the log, on
//! `/iron/engine/task/rejections` and in the error `iron task send` exits with; the deepest
//! allowed goal still runs; and a sixth concurrent delegation waits for one of the five
//! slots, or fails after the configured slot wait.

use crate::support;

use std::time::Duration;

use iron::{
    cognition::delegation::{MAX_CONCURRENT, MAX_DEPTH},
    interfaces::{AolTask, AolTaskGoal},
    protocol::payload::{RoutingDecided, TaskRejected},
    protocol::tool::ToolRecord,
    spine::control::{
        ControlConfig, ControlPlane,
        action::{ActionClient, GoalStatus},
    },
};
use support::{
    bin,
    cognition::{CLERK_ANSWER, Lab, descendants, kill9},
    eventually,
};

const T: Duration = Duration::from_secs(60);
/// Bound on five experts starting and reaching their hanging tool call: seconds alone, over a
/// minute once on a 2-core machine running the whole suite.
const FILL: Duration = Duration::from_secs(180);

fn goal(domain: &str, instruction: &str, depth: u8) -> AolTaskGoal {
    AolTaskGoal {
        task_id: uuid::Uuid::now_v7().to_string(),
        domain: domain.into(),
        instruction: instruction.into(),
        depth,
        context_json: "{}".into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_goals_say_why_and_the_deepest_allowed_goal_runs() {
    let lab = Lab::start(&[]);
    let control = ControlPlane::connect(ControlConfig {
        router: lab.p.router().to_string(),
        domain_id: 0,
    })
    .await
    .unwrap();
    let node = control.node("guards_test", "/").unwrap();
    control.wait_for_router(&node, T).await.unwrap();
    let client = ActionClient::<AolTask>::new(&node, "/iron/engine/task")
        .unwrap()
        .with_rejections(&node)
        .unwrap();
    // What a stock ROS 2 user sees with `ros2 topic echo /iron/engine/task/rejections`.
    let (_echo, mut published) = support::echo_rejections(&node, "/iron/engine/task");

    let refused = [
        (
            goal("lab/clerk", "file this", MAX_DEPTH + 1),
            format!("delegation depth 5 exceeds the limit of {MAX_DEPTH}"),
        ),
        (
            goal("lab/nobody", "file this", 0),
            "no expert lab/nobody in the catalog".to_string(),
        ),
        (
            goal("clerk", "file this", 0),
            "domain \"clerk\" is not `<mesh>/<role>`".to_string(),
        ),
        (
            goal("lab/clerk", "   ", 0),
            "the instruction is empty".to_string(),
        ),
        (
            goal("erp/bookkeeper", "post the entry", 0),
            "mesh erp is parked".to_string(),
        ),
        (
            // A context field of the wrong type is refused, never read as absent.
            AolTaskGoal {
                context_json: r#"{"cause": 5, "user_id": "ana"}"#.into(),
                ..goal("lab/clerk", "file this", 0)
            },
            "the goal's context is malformed: `cause` is 5, not text".to_string(),
        ),
    ];
    for (g, why) in refused {
        let id = g.task_id.clone();
        let err = match client.send(g, T).await {
            Ok(_) => panic!("goal {id} ({why}) was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("rejected"), "{err}");
        // A ROS 2 goal response carries no reason: the engine publishes it, and the client
        // that listens puts it in its error.
        assert!(err.contains(&why), "expected {why:?} in {err:?}");
        let echoed = tokio::time::timeout(T, async {
            while let Some(r) = published.recv().await {
                if r.task_id == id {
                    return r;
                }
            }
            panic!("the rejections subscription closed");
        })
        .await
        .unwrap_or_else(|_| panic!("no GoalRejection for task {id} on the topic"));
        assert!(echoed.reason.contains(&why), "{echoed:?}");
        assert_eq!(echoed.action, "/iron/engine/task", "{echoed:?}");
        assert!(
            !echoed.code.is_empty() && !echoed.goal_id.is_empty(),
            "{echoed:?}"
        );
        // …and writes it to the log.
        let rejected = eventually("task_rejected on the log", T, || async {
            lab.payloads_where("task_rejected", |r: &TaskRejected| r.task_id == id)
                .await
                .into_iter()
                .next()
        })
        .await;
        let reason = &rejected.reason;
        assert!(reason.contains(&why), "expected {why:?} in {reason:?}");
        lab.engine.wait_for(&format!("rejected: {reason}"), T);
    }

    // Through the CLI: it exits non-zero and says why, code included.
    let refused_by_cli = [
        (
            "lab/nobody",
            "file this",
            "no expert lab/nobody in the catalog",
            "unknown_domain",
        ),
        (
            "lab/clerk",
            "   ",
            "the instruction is empty",
            "empty_instruction",
        ),
        (
            "erp/bookkeeper",
            "post the entry",
            "mesh erp is parked",
            "parked_mesh",
        ),
    ];
    for (domain, instruction, why, code) in refused_by_cli {
        let out = std::process::Command::new(bin("iron"))
            .args(["task", "send", "--domain", domain, "--timeout", "30"])
            .arg(instruction)
            .envs(lab.p.envs())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{domain} was accepted: {stderr}");
        assert!(
            stderr.contains("rejected") && stderr.contains(why) && stderr.contains(code),
            "expected {why:?} ({code}) in:\n{stderr}"
        );
    }

    assert!(
        lab.experts().is_empty(),
        "no expert was spawned for a refused goal"
    );

    // The limit itself is allowed.
    let outcome = client
        .run(goal("lab/clerk", "file this note", MAX_DEPTH), T)
        .await
        .unwrap();
    assert_eq!(
        outcome.status,
        GoalStatus::Succeeded,
        "{:?}",
        outcome.result
    );
    assert_eq!(outcome.result.text, CLERK_ANSWER);
}

/// Five sleepers hold every slot, each hanging in its tool call.
async fn fill_the_slots(lab: &Lab) -> Vec<std::process::Child> {
    let tasks: Vec<_> = (0..MAX_CONCURRENT)
        .map(|i| lab.send("lab/sleeper", &format!("wait {i}")))
        .collect();
    eventually("every slot held by a hanging expert", FILL, || async {
        let hanging = lab
            .payloads_where("tool_call", |c: &ToolRecord| c.tool == "faulty/hang")
            .await;
        (hanging.len() == MAX_CONCURRENT).then_some(())
    })
    .await;
    assert_eq!(lab.experts().len(), MAX_CONCURRENT);
    tasks
}

fn finish(child: std::process::Child) -> (bool, serde_json::Value, String) {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let result = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or(serde_json::Value::Null);
    (
        out.status.success(),
        result,
        format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
    )
}

fn stop(lab: &Lab, tasks: Vec<std::process::Child>) {
    for pid in descendants(lab.engine.pid()) {
        kill9(pid);
    }
    for mut t in tasks {
        let _ = t.kill();
        let _ = t.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sixth_delegation_fails_after_the_configured_slot_wait() {
    let lab = Lab::start(&["--slot-wait-secs", "2"]);
    let tasks = fill_the_slots(&lab).await;

    let sixth = lab.send("lab/clerk", "file this note");
    let (ok, result, output) = tokio::task::spawn_blocking(move || finish(sixth))
        .await
        .unwrap();
    assert!(!ok, "{output}");
    assert_eq!(result["goal_status"], "aborted", "{output}");
    assert_eq!(result["status"], "failed", "{output}");
    let text = result["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&format!(
            "{MAX_CONCURRENT} delegations are already running at this depth; none finished within 2s"
        )),
        "{text}"
    );
    assert_eq!(
        lab.experts().len(),
        MAX_CONCURRENT,
        "no sixth expert was started"
    );
    stop(&lab, tasks);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sixth_delegation_waits_for_a_slot_and_then_runs() {
    let lab = Lab::start(&["--slot-wait-secs", "120"]);
    let tasks = fill_the_slots(&lab).await;

    let sixth = lab.send("lab/clerk", "file this note");
    eventually("the sixth task routed", T, || async {
        let routed = lab
            .payloads_where("routing_decided", |r: &RoutingDecided| {
                r.domain == "lab/clerk"
            })
            .await;
        (!routed.is_empty()).then_some(())
    })
    .await;
    // It is waiting, not running: no process of its own while all five slots are held.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let experts = lab.experts();
    assert_eq!(experts.len(), MAX_CONCURRENT, "{experts:?}");
    assert!(
        experts.iter().all(|(_, n)| n.contains("/sleeper_")),
        "{experts:?}"
    );

    // One sleeper dies; its slot goes to the sixth task, which runs to its answer.
    let (pid, _) = experts[0].clone();
    let orphans = descendants(pid);
    kill9(pid);
    let (ok, result, output) = tokio::task::spawn_blocking(move || finish(sixth))
        .await
        .unwrap();
    assert!(ok, "{output}\nengine:\n{}", lab.engine.output().join("\n"));
    assert_eq!(result["goal_status"], "succeeded", "{output}");
    assert_eq!(result["text"], CLERK_ANSWER, "{output}");
    for p in orphans {
        kill9(p);
    }
    stop(&lab, tasks);
}
