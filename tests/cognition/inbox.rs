//! The inbox across processes: messages sent while the engine is down are queued durably and
//! handed over in arrival order, exactly once each, when it becomes active; every turn is on
//! the log.

use crate::support;

use std::time::Duration;

use iron::core::envelope::Envelope;
use iron::core::event_kind::EventKind;
use iron::protocol::payload::{ChatTurn, DeadLetter, ReplyDelivered, TaskRejected};
use support::{Proc, bin, project::Project, read, read_one, wait_until};

/// Bound on every wait: generous, because it only bounds waiting on a loaded machine; whether
/// the behaviour is right is decided by the assertions, never by how long it took.
const T: Duration = Duration::from_secs(60);

/// A project with a router, and its inbox node `/iron/inbox`, active.
fn start_inbox(p: &Project) -> Proc {
    p.start_active(&bin("inbox_node"), "/iron/inbox", &[])
}

/// Whether a person's message `text` is on the log (a `chat_turn`).
fn said(events: &[Envelope], text: &str) -> bool {
    events
        .iter()
        .filter(|e| e.kind == EventKind::ChatTurn)
        .any(|e| read_one::<ChatTurn>(e).text == text)
}

#[test]
fn messages_queue_while_the_engine_is_down_and_drain_in_order() {
    let p = Project::offline().with_router();
    let inbox = start_inbox(&p);

    // No engine yet: every message is accepted and queued. Each send waits for the inbox's
    // acknowledgement (its `queued` line, written after the commit) before the next one, so a
    // slow machine only makes the test slower, and a message that never arrives is named.
    for i in 1..=5 {
        let text = format!("message {i}");
        p.iron_ok(&["inbox", "send", "--source", "test", "--user", "ana", &text]);
        wait_until(
            T,
            || inbox.matching("queued a message").len() >= i,
            || {
                format!(
                    "message {i} was sent but never queued:\n{}\n--- router\n{}",
                    inbox.output().join("\n"),
                    p.plane().router.output().join("\n")
                )
            },
        );
    }
    inbox.wait_for("cannot hand over to the engine", T);
    assert_eq!(inbox.matching("queued a message").len(), 5);

    // Capture does not wait for the engine: all five turns are on the log while it is down.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let turns_on_log = || rt.block_on(p.events("chat_turn")).len();
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
    let engine = p.plane().demo("engine", &[]);
    p.iron_ok(&["lifecycle", "set", "/iron/engine", "configure"]);
    // Configured but not active, it refuses the head of the queue as `inactive`: that is
    // waiting, and the message keeps its place (it once was dropped for good when the engine
    // became active between the refusal and the inbox's look at its state).
    engine.wait_for("is not active", T);
    p.iron_ok(&["lifecycle", "set", "/iron/engine", "activate"]);
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
    // Once the inbox has settled every task, nothing is offered again: a duplicate would
    // have been accepted by now.
    wait_until(
        T,
        || inbox.matching("its message(s) are settled").len() >= 5,
        || format!("not all settled:\n{}", inbox.output().join("\n")),
    );
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
    let log = p.iron_ok(&["log", "tail", "--from-start", "--limit", "5"]);
    assert_eq!(log.matches("chat_turn").count(), 5, "{log}");
    assert!(log.contains("message 3"), "{log}");
}

#[test]
fn a_message_the_log_cannot_take_is_set_aside_and_blocks_nothing() {
    let p = Project::offline().with_router();
    let start = || start_inbox(&p);
    let inbox = start();
    // Over what one event may carry, even spilled to the object store (64 MiB). Then an
    // ordinary message behind it.
    let big = iron::spine::durable::spill::MAX_EVENT_BYTES + 1;
    let send = |text: &str| {
        use std::io::Write;
        let mut child = std::process::Command::new(bin("iron"))
            .args(["inbox", "send", "--source", "test", "--user", "ana", "-"])
            .envs(p.envs())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        assert!(child.wait_with_output().unwrap().status.success());
    };
    send(&"x".repeat(big));
    send("after the big one");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let log = || rt.block_on(p.all_events());
    wait_until(
        T,
        || {
            let events = log();
            events.iter().any(|e| e.kind.as_str() == "dead_letter")
                && said(&events, "after the big one")
        },
        || {
            let kinds: Vec<String> = log().iter().map(|e| e.kind.as_str().to_owned()).collect();
            format!("{kinds:?}\n{}", inbox.output().join("\n"))
        },
    );
    let dead: DeadLetter = log()
        .iter()
        .find(|e| e.kind.as_str() == "dead_letter")
        .map(read_one)
        .unwrap();
    assert!(dead.bytes >= big, "{dead:?}");
    assert!(dead.reason.contains("over the log's limit"), "{dead:?}");
    // A restart does not bring it back to the head of the queue.
    drop(inbox);
    let inbox = start();
    send("after the restart");
    wait_until(
        T,
        || said(&log(), "after the restart"),
        || inbox.output().join("\n"),
    );
    assert_eq!(
        log()
            .iter()
            .filter(|e| e.kind.as_str() == "dead_letter")
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_in_the_hands_of_a_killed_engine_are_offered_again() {
    // The engine takes five at a time; it is killed (SIGKILL) as its first task runs. Every
    // message it held is offered again to the engine iron up restarts, and answered.
    let p = Project::offline();
    let list = "nodes:\n  - {name: delivery, namespace: /iron/tools, executable: delivery_node, autostart: true}\n  - {name: inbox, namespace: /iron, executable: inbox_node, autostart: true}\n  - {name: engine, namespace: /iron, executable: engine_node, autostart: true, respawn: true}\n";
    let up = p.up(list, &["--aem", "aem"]);
    up.wait_for("/iron/engine: active", T);
    const N: usize = 12;
    for i in 0..N {
        let user = format!("user{i}");
        p.iron_ok(&[
            "inbox",
            "send",
            "--source",
            "terminal",
            "--user",
            &user,
            "what is new today?",
        ]);
    }
    support::eventually("the engine's first task", T, || async {
        (!p.events("routing_decided").await.is_empty()).then_some(())
    })
    .await;
    let engine = up
        .matching("/iron/engine: started")
        .pop()
        .and_then(|l| {
            l.rsplit("pid Some(")
                .next()?
                .split(')')
                .next()?
                .parse::<i32>()
                .ok()
        })
        .expect("the engine's pid");
    // SAFETY: kill(2) on a process this test started through iron up.
    unsafe { libc::kill(engine, libc::SIGKILL) };
    let lost_before = N - p.events("reply_delivered").await.len();
    assert!(lost_before > 0, "the kill came after every task had ended");

    // Every message's task (computed from its turn, as the inbox computes it) is answered.
    let turns = p.events("chat_turn").await;
    assert_eq!(turns.len(), N);
    let tasks: Vec<String> = turns
        .iter()
        .map(|t| iron::core::ids::EventId::computed(&["inbox", t.event_id.as_str()]).to_string())
        .collect();
    support::eventually(
        "every message answered",
        Duration::from_secs(120),
        || async {
            let delivered: Vec<ReplyDelivered> = read(&p.events("reply_delivered").await);
            tasks
                .iter()
                .all(|t| delivered.iter().any(|d| &d.task_id == t))
                .then_some(())
        },
    )
    .await;
    assert!(
        !up.matching("offered again").is_empty(),
        "the inbox offered lost tasks again"
    );
}

#[test]
fn a_batch_the_queue_cannot_take_is_kept_and_retried() {
    let p = Project::offline().with_router();
    let inbox = start_inbox(&p);
    // Another writer holds the queue's database: the inbox cannot commit.
    let db = rusqlite::Connection::open(p.path("inbox.db")).unwrap();
    db.execute_batch("BEGIN IMMEDIATE;").unwrap();
    p.iron_ok(&["inbox", "send", "--source", "test", "--user", "ana", "kept"]);
    wait_until(
        T,
        || !inbox.matching("keeping them and retrying").is_empty(),
        || inbox.output().join("\n"),
    );
    db.execute_batch("ROLLBACK;").unwrap();
    wait_until(
        T,
        || !inbox.matching("queued a message").is_empty(),
        || inbox.output().join("\n"),
    );
    assert!(
        p.iron_ok(&["lifecycle", "get", "/iron/inbox"])
            .starts_with("active"),
        "the inbox kept serving"
    );
}

/// A mesh with one expert, `<mesh>/<role>`, with `status`.
fn write_mesh(p: &Project, mesh: &str, role: &str, status: &str) {
    p.write(
        &format!("aem/{mesh}/AEM.md"),
        &format!("---\nname: {mesh}\nstatus: {status}\ndescription: The {mesh} team of the test.\ndefaults:\n  model: standard\n  clearance: read\n---\n\nFor tests.\n"),
    );
    p.write(
        &format!("aem/{mesh}/skills/{role}/SKILL.md"),
        &format!("---\nname: {role}\nidentity: The {role}.\ndescription: Answers what it is asked.\n---\n\nAnswer.\n"),
    );
    p.write(
        &format!("aem/{mesh}/skills/{role}/capabilities.md"),
        "---\nclearance: read\n---\n\nAnswers.\n",
    );
}

/// A session stuck to an expert (`iron inbox stick`) gets its messages there without routing;
/// once the engine refuses that expert (its mesh parked since), the message is neither dropped
/// nor retried against it: the inbox unsticks the session and the message is routed and
/// answered, as the same task.
#[test]
fn a_session_stuck_to_an_expert_the_engine_refuses_is_routed_instead() {
    let p = Project::offline();
    write_mesh(&p, "core", "assistant", "active");
    write_mesh(&p, "lab", "clerk", "active");
    let up = p.up_inside(
        "nodes:\n  - name: delivery\n    namespace: /iron/tools\n    executable: delivery_node\n  - name: inbox\n    executable: inbox_node\n  - name: engine\n    executable: engine_node\n",
        &[],
    );
    up.wait_for("up: 3 node(s) running", T);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let events = |kind: &str| rt.block_on(p.events(kind));
    let send = |text: &str, replies: usize| {
        p.iron_ok(&["inbox", "send", "--source", "test", "--user", "ana", text]);
        wait_until(
            T,
            || events("reply_delivered").len() >= replies,
            || {
                format!(
                    "no reply to {text:?}: {:#?}\n{}",
                    rt.block_on(p.all_events())
                        .iter()
                        .map(|e| (e.kind.as_str().to_string(), e.payload.clone()))
                        .collect::<Vec<_>>(),
                    up.output().join("\n")
                )
            },
        );
    };
    send("first", 1);
    let turn: ChatTurn = read_one(&events("chat_turn")[0]);
    let session = turn.session_id.expect("a turn names its session");

    // Refused up front: an expert the catalog does not have, or none.
    for (expert, why) in [
        ("lab/nobody", "cannot stick a session to lab/nobody"),
        ("", "the expert must not be empty"),
    ] {
        let refused = p.iron(&["inbox", "stick", "--session", &session, expert]);
        assert!(!refused.status.success());
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains(why),
            "{refused:?}"
        );
    }
    p.iron_ok(&["inbox", "stick", "--session", &session, "lab/clerk"]);
    up.wait_for("stuck to lab/clerk", T);
    send("second", 2);
    let given = events("routing_decided");
    assert!(
        given
            .last()
            .is_some_and(|e| e.payload.to_string().contains("lab/clerk")),
        "the stuck session's message did not go to lab/clerk: {given:#?}"
    );

    // The lab mesh is parked and the engine reconfigured on the new catalog.
    write_mesh(&p, "lab", "clerk", "parked");
    p.build_catalog();
    for step in ["deactivate", "cleanup", "configure", "activate"] {
        p.iron_ok(&["lifecycle", "set", "/iron/engine", step]);
    }
    send("third", 3);
    let rejected: Vec<TaskRejected> = read(&events("task_rejected"));
    assert_eq!(rejected.len(), 1, "{rejected:#?}");
    assert_eq!(rejected[0].code, "parked_mesh");
    let task = &rejected[0].task_id;
    let replies: Vec<ReplyDelivered> = read(&events("reply_delivered"));
    assert_eq!(
        &replies[2].task_id, task,
        "the third reply is not the refused task's, routed: {replies:#?}"
    );
    assert_eq!(
        up.matching("unstuck, the message is routed instead").len(),
        1
    );
    assert!(up.matching("refused the message for good").is_empty());
}
