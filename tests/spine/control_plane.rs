//! The control plane across real processes: a router, demo node processes, the `iron` CLI and
//! an in-test client, all on loopback.

use crate::support;

use std::time::Duration;

use iron::{
    interfaces::{AolTask, AolTaskGoal, lifecycle::TransitionEvent},
    spine::control::{
        ControlConfig, ControlPlane,
        action::{ActionClient, CancelCode, GoalId, GoalStatus},
    },
};
use support::{Plane, Proc, bin};

const T: Duration = Duration::from_secs(20);

async fn client(plane: &Plane) -> (ControlPlane, hiroz::node::ZNode) {
    let control = ControlPlane::connect(ControlConfig {
        router: plane.endpoint.clone(),
        domain_id: 0,
    })
    .await
    .unwrap();
    let node = control.node("test_client", "/").unwrap();
    control.wait_for_router(&node, T).await.unwrap();
    (control, node)
}

fn goal(instruction: &str, context: serde_json::Value) -> AolTaskGoal {
    AolTaskGoal {
        task_id: uuid::Uuid::now_v7().to_string(),
        instruction: instruction.into(),
        context_json: context.to_string(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transition_in_order_with_callbacks_and_events() {
    let plane = Plane::start();
    let mut demo = plane.demo("cycle", &[]);
    let (_c, node) = client(&plane).await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let events = node
        .create_sub::<TransitionEvent>("/iron/cycle/transition_event")
        .build_with_callback(move |e: TransitionEvent| {
            sink.lock().unwrap().push((
                e.transition.label,
                e.start_state.label,
                e.goal_state.label,
            ));
        })
        .unwrap();
    let _events = events;
    let graph = _c.context().graph().clone();
    let deadline = tokio::time::Instant::now() + T;
    while graph.count(
        hiroz::entity::EndpointKind::Publisher,
        "/iron/cycle/transition_event",
    ) == 0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "transition_event has no publisher"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    assert_eq!(
        plane.iron_ok(&["lifecycle", "get", "/iron/cycle"]).trim(),
        "unconfigured [1]"
    );
    for (step, state) in [
        ("configure", "inactive"),
        ("activate", "active"),
        ("deactivate", "inactive"),
        ("cleanup", "unconfigured"),
        ("configure", "inactive"),
        ("activate", "active"),
    ] {
        plane.iron_ok(&["lifecycle", "set", "/iron/cycle", step]);
        let got = plane.iron_ok(&["lifecycle", "get", "/iron/cycle"]);
        assert!(got.starts_with(state), "after {step}: {got}");
    }
    let listed = plane.iron_ok(&["lifecycle", "list"]);
    assert!(listed.contains("/iron/cycle\tactive"), "{listed}");

    plane.iron_ok(&["lifecycle", "set", "/iron/cycle", "shutdown"]);
    let status = demo.wait_exit(T).expect("shutdown ends the process");
    assert!(status.success(), "exit status {status}");

    let callbacks: Vec<String> = demo
        .matching("callback ")
        .iter()
        .map(|l| l.split("callback ").nth(1).unwrap().trim().to_string())
        .collect();
    assert_eq!(
        callbacks,
        // Shutdown from active runs on_shutdown only, as in rclcpp_lifecycle.
        [
            "configure",
            "activate",
            "deactivate",
            "cleanup",
            "configure",
            "activate",
            "shutdown"
        ]
    );

    let deadline = tokio::time::Instant::now() + T;
    while seen.lock().unwrap().len() < 14 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = seen.lock().unwrap().clone();
    let expect = [
        ("configure", "unconfigured", "configuring"),
        ("transition_success", "configuring", "inactive"),
        ("activate", "inactive", "activating"),
        ("transition_success", "activating", "active"),
        ("deactivate", "active", "deactivating"),
        ("transition_success", "deactivating", "inactive"),
        ("cleanup", "inactive", "cleaningup"),
        ("transition_success", "cleaningup", "unconfigured"),
        ("configure", "unconfigured", "configuring"),
        ("transition_success", "configuring", "inactive"),
        ("activate", "inactive", "activating"),
        ("transition_success", "activating", "active"),
        ("shutdown", "active", "shuttingdown"),
        ("transition_success", "shuttingdown", "finalized"),
    ];
    let expect: Vec<_> = expect
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(seen, expect);
}

/// The helper every command that starts a node uses (`iron up`, the engine's experts, the
/// benches): to active from where the node is, or the node's own reason for refusing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bringing_a_node_up_says_why_it_refused() {
    use iron::spine::control::{ControlError, lifecycle::LifecycleClient};
    let plane = Plane::start();
    let _picky = plane.demo("picky", &["--fail-on", "configure"]);
    let _half = plane.demo("half", &["--fail-on", "activate"]);
    let _fine = plane.demo("fine", &[]);
    let (_c, node) = client(&plane).await;
    let bring_up = |fqn: &'static str| {
        let node = &node;
        async move {
            LifecycleClient::watching(node, fqn, T)
                .unwrap()
                .activate()
                .await
        }
    };
    match bring_up("/iron/picky").await {
        Err(ControlError::Transition {
            node,
            transition,
            reason,
        }) => {
            assert_eq!(
                (node.as_str(), transition.as_str()),
                ("/iron/picky", "configure")
            );
            assert!(reason.contains("configure told to fail"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    match bring_up("/iron/half").await {
        Err(e @ ControlError::Transition { .. }) => assert!(
            e.to_string()
                .contains("/iron/half did not activate: activate failed: activate told to fail"),
            "{e}"
        ),
        other => panic!("{other:?}"),
    }
    // Configured on the way, it stays inactive; a second try starts from there (activate
    // only) and fails for the same reason.
    assert!(
        plane
            .iron_ok(&["lifecycle", "get", "/iron/half"])
            .starts_with("inactive")
    );
    let again = bring_up("/iron/half").await.unwrap_err().to_string();
    assert!(
        again.contains("did not activate: activate failed"),
        "{again}"
    );
    // A node already active is left as it is.
    bring_up("/iron/fine").await.unwrap();
    bring_up("/iron/fine").await.unwrap();
    assert!(
        plane
            .iron_ok(&["lifecycle", "get", "/iron/fine"])
            .starts_with("active")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_and_erroring_callbacks_take_the_documented_paths() {
    let plane = Plane::start();
    let _fail = plane.demo("failing", &["--fail-on", "activate"]);
    let _err = plane.demo("erroring", &["--error-on", "configure"]);

    plane.iron_ok(&["lifecycle", "set", "/iron/failing", "configure"]);
    let out = plane.iron(&["lifecycle", "set", "/iron/failing", "activate"]);
    assert!(!out.status.success(), "a failing activate must be reported");
    // With the reason the node logged on /rosout, not only that it failed.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/iron/failing did not activate: activate failed: activate told to fail"),
        "{err}"
    );
    // Failure returns to where the transition started.
    assert!(
        plane
            .iron_ok(&["lifecycle", "get", "/iron/failing"])
            .starts_with("inactive")
    );

    let out = plane.iron(&["lifecycle", "set", "/iron/erroring", "configure"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("configure errored: configure told to error"),
        "{err}"
    );
    // Error goes through error processing; on_error succeeds, so back to unconfigured.
    assert!(
        plane
            .iron_ok(&["lifecycle", "get", "/iron/erroring"])
            .starts_with("unconfigured")
    );

    // A transition not offered from the current state is refused with the offered list.
    let out = plane.iron(&["lifecycle", "set", "/iron/erroring", "activate"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("configure, shutdown"), "{err}");
}

/// ROS parameters reach the node as its own options (as `ros2 launch` passes them, in a
/// params file); one the node does not have stops it at start, never silently dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_are_honoured_or_refused() {
    let plane = Plane::start();
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path().join("params.yaml");
    std::fs::write(
        &params,
        "/**:\n  ros__parameters:\n    fail_on: [configure]\n",
    )
    .unwrap();
    let envs = [("IRON_ROUTER", plane.endpoint.as_str())];
    let params = params.display().to_string();
    let node = Proc::spawn(
        "params",
        &bin("demo_node"),
        &[
            "--ros-args",
            "-r",
            "__node:=params",
            "-r",
            "__ns:=/iron",
            "--params-file",
            &params,
        ],
        &envs,
    );
    node.wait_for("managed node up", T);
    let out = plane.iron(&["lifecycle", "set", "/iron/params", "configure"]);
    assert!(
        !out.status.success(),
        "fail_on from the params file is honoured"
    );

    for args in [
        vec![
            "--ros-args",
            "-r",
            "__node:=typo",
            "-p",
            "fail_onn:=configure",
        ],
        vec![
            "--ros-args",
            "-r",
            "__node:=remapped",
            "-r",
            "chatter:=talk",
        ],
    ] {
        let mut bad = Proc::spawn("bad", &bin("demo_node"), &args, &envs);
        let status = bad
            .wait_exit(T)
            .expect("a node given what it cannot honour exits");
        assert_eq!(
            status.code(),
            Some(2),
            "{args:?}: {}",
            bad.output().join("\n")
        );
        let said = bad.output().join("\n");
        assert!(
            said.contains("--fail-onn") || said.contains("remapping `chatter:=talk`"),
            "{said}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn action_goals_feedback_results_and_cancel_codes() {
    let plane = Plane::start();
    let _demo = plane.demo("worker", &[]);
    let (_c, node) = client(&plane).await;
    let actions = ActionClient::<AolTask>::new(&node, "/iron/worker/task").unwrap();

    // Inactive: goals are rejected, not left hanging.
    let rejected = actions
        .send(goal("early", serde_json::json!({})), Duration::from_secs(3))
        .await;
    assert!(rejected.is_err(), "an unconfigured node must reject goals");

    plane.iron_ok(&["lifecycle", "set", "/iron/worker", "configure"]);
    plane.iron_ok(&["lifecycle", "set", "/iron/worker", "activate"]);

    // Three concurrent goals, each with feedback and its own result.
    let mut sent = Vec::new();
    for i in 0..3 {
        let g = goal(
            &format!("job {i}"),
            serde_json::json!({"steps": 3, "step_ms": 150}),
        );
        sent.push(actions.send(g, T).await.expect("goal accepted"));
    }
    for (i, s) in sent.iter_mut().enumerate() {
        let outcome = actions.result(s.id, T).await.unwrap();
        assert_eq!(outcome.status, GoalStatus::Succeeded);
        assert_eq!(outcome.result.text, format!("echo: job {i}"));
        let mut feedback = 0;
        while s.feedback.try_recv().is_ok() {
            feedback += 1;
        }
        assert!(feedback >= 1, "goal {i} got no feedback");
    }
    // Results are retained after the goal finished.
    let again = actions.result(sent[0].id, T).await.unwrap();
    assert_eq!(again.status, GoalStatus::Succeeded);

    // A goal run with get_result pipelined behind send_goal (one round trip).
    let ran = actions
        .run(goal("pipelined", serde_json::json!({})), T)
        .await
        .unwrap();
    assert_eq!(ran.status, GoalStatus::Succeeded);
    assert_eq!(ran.result.text, "echo: pipelined");

    // Unknown goal: answered with status unknown, not left waiting.
    let unknown = actions.result(GoalId::new(), T).await.unwrap();
    assert_eq!(unknown.status, GoalStatus::Unknown);

    // Cancel one goal.
    let long = actions
        .send(
            goal("long", serde_json::json!({"steps": 100, "step_ms": 100})),
            T,
        )
        .await
        .unwrap();
    let mut other = actions
        .send(
            goal("other", serde_json::json!({"steps": 100, "step_ms": 100})),
            T,
        )
        .await
        .unwrap();
    // The goals run at once: `other` reports progress while `long` (ten seconds of work) is
    // still running. A server that ran goals one at a time would start `other` only after
    // `long` had finished, and `long` could no longer be canceled.
    tokio::time::timeout(T, other.feedback.recv())
        .await
        .expect("the second goal reports progress")
        .expect("feedback channel open");
    let (code, canceling) = actions.cancel(Some(long.id), T).await.unwrap();
    assert_eq!(code, CancelCode::None, "the first goal is still running");
    assert_eq!(canceling, vec![long.id]);
    assert_eq!(
        actions.result(long.id, T).await.unwrap().status,
        GoalStatus::Canceled
    );

    // Cancel a finished goal and an unknown one: the documented codes.
    assert_eq!(
        actions.cancel(Some(long.id), T).await.unwrap().0,
        CancelCode::GoalTerminated
    );
    assert_eq!(
        actions.cancel(Some(GoalId::new()), T).await.unwrap().0,
        CancelCode::UnknownGoalId
    );

    // Cancel all: takes the remaining running goal.
    let (code, canceling) = actions.cancel(None, T).await.unwrap();
    assert_eq!(code, CancelCode::None);
    assert_eq!(canceling, vec![other.id]);
    assert_eq!(
        actions.result(other.id, T).await.unwrap().status,
        GoalStatus::Canceled
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_are_dropped_and_the_node_keeps_serving() {
    let plane = Plane::start();
    let demo = plane.demo("target", &[]);
    plane.iron_ok(&["lifecycle", "set", "/iron/target", "configure"]);
    plane.iron_ok(&["lifecycle", "set", "/iron/target", "activate"]);
    let (_c, node) = client(&plane).await;
    let session = node.session().clone();

    let services = [
        "iron/target/change_state",
        "iron/target/get_state",
        "iron/target/get_available_states",
        "iron/target/get_available_transitions",
        "iron/target/get_transition_graph",
        "iron/target/task/_action/send_goal",
        "iron/target/task/_action/get_result",
        "iron/target/task/_action/cancel_goal",
    ];
    for service in services {
        let ke = format!("0/{service}/**");
        let cases: Vec<support::RawCase> = vec![
            (
                "garbage without attachment",
                b"\xff\xfe garbage".to_vec(),
                false,
            ),
            ("empty payload", Vec::new(), true),
            ("truncated CDR", vec![0, 1, 0, 0, 5, 0, 0, 0, b'a'], true),
            (
                "wrong encapsulation",
                vec![9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8],
                true,
            ),
        ];
        support::survives_raw_queries(&session, service, &ke, cases, Duration::from_secs(5)).await;
    }
    // Still serving, on both the lifecycle and the action side.
    assert!(
        plane
            .iron_ok(&["lifecycle", "get", "/iron/target"])
            .starts_with("active")
    );
    let out = plane.iron_ok(&[
        "task",
        "send",
        "--action",
        "/iron/target/task",
        "still here",
    ]);
    assert!(out.contains("echo: still here"), "{out}");
    assert!(!demo.matching("dropped a malformed request").is_empty());
    assert!(demo.matching("panicked").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_with_one_goal_id_admit_one_goal() {
    let plane = Plane::start();
    let (control, node) = client(&plane).await;
    let server_node = control.node("racer", "/iron").unwrap();
    let (server, mut goals) = iron::spine::control::action::ActionServer::<AolTask>::new(
        &server_node,
        "/iron/racer/task",
        Default::default(),
    )
    .unwrap();
    server.set_accepting(true);
    server
        .publish_rejections(&server_node, |g: &AolTaskGoal| g.task_id.clone())
        .unwrap();
    let (_echo, mut published) = support::echo_rejections(&node, "/iron/racer/task");
    // The node takes its time to decide, so the second request arrives mid-decision.
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = seen.clone();
    tokio::spawn(async move {
        while let Some(request) = goals.recv().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let (_, handle) = request.accept().await;
                handle
                    .succeed(iron::interfaces::AolTaskResult::default())
                    .await;
            });
        }
    });
    let client = ActionClient::<AolTask>::new(&node, "/iron/racer/task").unwrap();
    let id = GoalId::new();
    let (a, b) = tokio::join!(
        client.send_as(id, goal("once", serde_json::json!({})), T),
        client.send_as(id, goal("once", serde_json::json!({})), T)
    );
    let admitted = [a.is_ok(), b.is_ok()].iter().filter(|x| **x).count();
    assert_eq!(
        admitted,
        1,
        "exactly one request admits the goal: {:?} / {:?}",
        a.as_ref().err(),
        b.as_ref().err()
    );
    let refused = a.err().or(b.err()).unwrap().to_string();
    assert!(refused.contains("rejected"), "{refused}");
    // The refusal is published with the server's stable code.
    let rejection = tokio::time::timeout(T, published.recv())
        .await
        .expect("the refusal is published")
        .unwrap();
    assert_eq!(rejection.code, "duplicate_goal_id", "{rejection:?}");
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the node saw the goal once"
    );
}

/// Every node binary parses its own flags the same way: an unknown one stops it with the
/// usage (a typo is never accepted), `--help` explains the flags and exits 0.
#[test]
fn every_node_binary_refuses_a_flag_it_does_not_know() {
    for exe in [
        env!("CARGO_BIN_EXE_delivery_node"),
        env!("CARGO_BIN_EXE_demo_node"),
        env!("CARGO_BIN_EXE_engine_node"),
        env!("CARGO_BIN_EXE_expert_node"),
        env!("CARGO_BIN_EXE_inbox_node"),
        env!("CARGO_BIN_EXE_jobs_clock"),
        env!("CARGO_BIN_EXE_jobs_gateway"),
        env!("CARGO_BIN_EXE_jobs_runner"),
        env!("CARGO_BIN_EXE_jobs_triggers"),
        env!("CARGO_BIN_EXE_projector_node"),
        env!("CARGO_BIN_EXE_source_node"),
    ] {
        let out = std::process::Command::new(exe)
            .arg("--no-such-flag")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{exe}: {said}");
        assert!(
            said.contains("unexpected argument '--no-such-flag'") && said.contains("Usage:"),
            "{exe}: {said}"
        );
        let help = std::process::Command::new(exe)
            .arg("--help")
            .output()
            .unwrap();
        assert!(help.status.success(), "{exe} --help");
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(
            help.contains("Usage:") && help.contains("ROS 2 arguments follow --ros-args"),
            "{exe} --help: {help}"
        );
    }
}
