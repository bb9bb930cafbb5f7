//! The inbox across processes: messages sent while the engine is down are queued durably and
//! handed over in arrival order, exactly once each, when it becomes active; every turn is on
//! the log.

mod support;

use std::time::{Duration, Instant};

use iron::{
    core::{config::Config, durable::EventLog, envelope::Envelope},
    spine::durable::AnyLog,
};
use support::{Plane, Proc, bin};

/// Bound on every wait: generous, because it only bounds waiting on a loaded machine; whether
/// the behaviour is right is decided by the assertions, never by how long it took.
const T: Duration = Duration::from_secs(60);

/// Polls `done` until it holds; panics with `report()` after `limit`.
fn wait_until(limit: Duration, done: impl Fn() -> bool, report: impl Fn() -> String) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "after {limit:?}: {}", report());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn messages_queue_while_the_engine_is_down_and_drain_in_order() {
    let plane = Plane::start();
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().display().to_string();
    let inbox = Proc::spawn(
        "inbox",
        &bin("inbox_node"),
        &["--ros-args", "-r", "__node:=inbox", "-r", "__ns:=/iron"],
        &[
            ("IRON_ROUTER", &plane.endpoint),
            ("IRON_STATE_DIR", &state_dir),
        ],
    );
    inbox.wait_for("managed node up", T);
    plane.iron_ok(&["lifecycle", "set", "/iron/inbox", "configure"]);
    plane.iron_ok(&["lifecycle", "set", "/iron/inbox", "activate"]);

    // No engine yet: every message is accepted and queued. Each send waits for the inbox's
    // acknowledgement (its `queued` line, written after the commit) before the next one, so a
    // slow machine only makes the test slower, and a message that never arrives is named.
    for i in 1..=5 {
        let text = format!("message {i}");
        plane.iron_ok(&["inbox", "send", "--source", "test", "--user", "ana", &text]);
        wait_until(
            T,
            || inbox.matching("queued a message").len() >= i,
            || {
                format!(
                    "message {i} was sent but never queued:\n{}\n--- router\n{}",
                    inbox.output().join("\n"),
                    plane.router.output().join("\n")
                )
            },
        );
    }
    inbox.wait_for("cannot hand over to the engine", T);
    assert_eq!(inbox.matching("queued a message").len(), 5);

    // Capture does not wait for the engine: all five turns are on the log while it is down.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let turns_on_log = || {
        rt.block_on(async {
            let log = AnyLog::open(&Config {
                state_dir: state.path().to_path_buf(),
                ..Config::default()
            })
            .await
            .unwrap();
            log.read("MEM", "mem.>", 1, 10_000)
                .await
                .unwrap()
                .iter()
                .filter_map(|m| serde_json::from_slice::<Envelope>(&m.payload).ok())
                .filter(|e| e.kind.as_str() == "chat_turn")
                .count()
        })
    };
    wait_until(
        T,
        || turns_on_log() >= 5,
        || {
            format!(
                "{} of 5 turns on the log while the engine is down",
                turns_on_log()
            )
        },
    );

    // The engine appears (the demo node stands in for it at /iron/engine/task).
    let engine = plane.demo("engine", &[]);
    plane.iron_ok(&["lifecycle", "set", "/iron/engine", "configure"]);
    plane.iron_ok(&["lifecycle", "set", "/iron/engine", "activate"]);
    wait_until(
        T,
        || engine.matching("goal accepted").len() >= 5,
        || {
            format!(
                "not all delivered:\n{}\n---\n{}",
                engine.output().join("\n"),
                inbox.output().join("\n")
            )
        },
    );
    std::thread::sleep(Duration::from_millis(500));
    let accepted = engine.matching("goal accepted");
    assert_eq!(
        accepted.len(),
        5,
        "each message exactly once:\n{}",
        accepted.join("\n")
    );
    for (i, line) in accepted.iter().enumerate() {
        assert!(
            line.contains(&format!("\"message {}\"", i + 1)),
            "out of order at {i}: {line}"
        );
    }

    // Every turn is on the log, with its session.
    let out = std::process::Command::new(bin("iron"))
        .args(["log", "tail", "--from-start", "--limit", "5"])
        .env("IRON_STATE_DIR", &state_dir)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert_eq!(log.matches("chat_turn").count(), 5, "{log}");
    assert!(log.contains("message 3"), "{log}");
}
