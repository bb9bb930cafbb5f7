//! End to end across processes: a message on /iron/raw_inbox → inbox → engine (routes with the
//! offline router) → an expert process spawned for the task (scripted model) → the reply
//! delivered on the mesh's declared channel (the terminal, and the chat channel through the
//! delivery bridge node over `iron/srv/ToolCall`), every step on the log with a cause chain
//! back to the inbound turn.

mod support;

use std::{collections::HashMap, time::Duration};

use iron::{
    core::{config::Config, durable::EventLog, envelope::Envelope},
    spine::durable::AnyLog,
};
use support::{Proc, bin, free_port};

const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_routed_answered_by_a_spawned_expert_and_delivered() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path();
    std::fs::write(
        dir.join("script.yaml"),
        "turns:\n  - expect: \"bridge\"\n    text: \"Two independent sources confirm the bridge is closed.\"\n",
    )
    .unwrap();
    let config = dir.join("iron.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {}\nmodels:\n  backends:\n    offline:\n      kind: scripted\n      script: {}\n  logical:\n    fast: [offline]\n    standard: [offline]\n    strong: [offline]\n    scripted: [offline]\n",
            dir.display(),
            dir.join("script.yaml").display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(bin("iron"))
        .args(["catalog", "build", "--out", &dir.display().to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let list = dir.join("list.yaml");
    std::fs::write(
        &list,
        "nodes:\n  - name: delivery\n    namespace: /iron/tools\n    executable: delivery_node\n  - name: inbox\n    executable: inbox_node\n  - name: engine\n    executable: engine_node\n",
    )
    .unwrap();
    let router = format!("tcp/127.0.0.1:{}", free_port());
    let config_s = config.display().to_string();
    let envs = [
        ("IRON_ROUTER", router.as_str()),
        ("IRON_CONFIG", config_s.as_str()),
    ];
    let mut up = Proc::spawn(
        "up",
        &bin("iron"),
        &["up", "--launch", &list.display().to_string()],
        &envs,
    );
    up.wait_for("up: 3 node(s) running", T);
    assert!(
        up.matching("/iron/engine: active").len() == 1,
        "{}",
        up.output().join("\n")
    );

    let sent = std::process::Command::new(bin("iron"))
        .args([
            "inbox",
            "send",
            "--source",
            "terminal",
            "--user",
            "ana",
            "cross-check the claim that the bridge is closed",
        ])
        .envs(envs)
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );

    up.wait_for("Two independent sources confirm the bridge is closed.", T);

    // The same question on the chat channel: newsroom delivers chat through its native
    // bridge, `delivery/send_message {dest, text}`.
    let sent = std::process::Command::new(bin("iron"))
        .args([
            "inbox",
            "send",
            "--source",
            "chat",
            "--user",
            "ben",
            "--destination",
            "#desk",
            "is the bridge closed? cross-check it",
        ])
        .envs(envs)
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    up.wait_for(
        "[delivery -> #desk] Two independent sources confirm the bridge is closed.",
        T,
    );
    let outbox = std::fs::read_to_string(dir.join("outbox.jsonl")).unwrap();
    let sends: Vec<serde_json::Value> = outbox
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        sends.len(),
        1,
        "only the chat reply goes through the bridge"
    );
    assert_eq!(sends[0]["dest"], "#desk");
    assert_eq!(sends[0]["caller"], "engine");
    up.signal(libc::SIGINT);
    assert!(up.wait_exit(T).expect("up exits").success());

    // The log: every step, each caused by the one before, back to the inbound turn.
    let log = AnyLog::open(&Config {
        state_dir: dir.to_path_buf(),
        ..Config::default()
    })
    .await
    .unwrap();
    let stored = log.read("MEM", "mem.>", 1, 10_000).await.unwrap();
    let events: Vec<Envelope> = stored
        .iter()
        .filter_map(|m| serde_json::from_slice(&m.payload).ok())
        .collect();
    let by_kind = |k: &str| {
        events
            .iter()
            .find(|e| e.kind.as_str() == k)
            .unwrap_or_else(|| {
                panic!(
                    "no {k} event in {:#?}",
                    events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>()
                )
            })
    };
    // The chat reply: delivered through the bridge, and said so on the log.
    let chat = events
        .iter()
        .find(|e| e.kind.as_str() == "reply_delivered" && e.payload["channel"] == "chat")
        .expect("a reply_delivered event for the chat channel");
    assert_eq!(chat.payload["delivered"], true, "{}", chat.payload);
    assert_eq!(chat.payload["via"], "delivery/send_message");
    assert_eq!(chat.payload["destination"], "#desk");

    let turn = by_kind("chat_turn");
    let routed = by_kind("routing_decided");
    let delegated = by_kind("task_delegated");
    let judged = by_kind("task_judged");
    let delivered = by_kind("reply_delivered");
    let finished = by_kind("expert_finished");
    assert_eq!(
        routed.payload["domain"], "newsroom/analyst",
        "the offline router picks the analyst"
    );
    assert_eq!(routed.cause.as_ref(), Some(&turn.event_id));
    assert_eq!(delegated.cause.as_ref(), Some(&routed.event_id));
    assert_eq!(judged.cause.as_ref(), Some(&delegated.event_id));
    assert_eq!(delivered.cause.as_ref(), Some(&judged.event_id));
    assert_eq!(
        finished.cause.as_ref(),
        Some(&turn.event_id),
        "the expert's steps hang off the turn too"
    );
    assert_eq!(judged.payload["answered"], true);
    assert_eq!(delivered.payload["channel"], "terminal");
    assert_eq!(delivered.payload["delivered"], true);
    let ids: HashMap<_, _> = events
        .iter()
        .map(|e| (e.event_id.clone(), e.kind.as_str()))
        .collect();
    assert_eq!(ids.len(), events.len(), "every event once");
}
