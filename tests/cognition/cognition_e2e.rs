//! End to end across processes: a message on /iron/raw_inbox → inbox → engine (routes with the
//! offline router) → an expert process spawned for the task → a tool call through the gates
//! (the real filesystem MCP server, reading the newsroom archive) → the reply delivered on the
//! mesh's declared channel: the terminal, and the chat channel through the delivery bridge
//! process over `iron/srv/ToolCall`, which records what it got. Every step is on the log with
//! a cause chain back to the inbound turn. Run with the scripted backend and against a fake
//! OpenAI-compatible HTTP server (real HTTP, real tool calls).

use crate::support;
use crate::support_llm;

use std::{collections::HashMap, time::Duration};

use iron::core::envelope::Envelope;
use iron::core::event_kind::EventKind;
use iron::protocol::payload::{ReplyDelivered, RoutingDecided, TaskJudged};
use serde_json::{Value, json};
use support::{Proc, project::Project};
use support_llm::{FakeServer, Reply, openai_text, openai_tools};
use tempfile::TempDir;

const T: Duration = Duration::from_secs(60);
const ANSWER: &str = "Two independent sources confirm the bridge is closed.";
/// The document the analyst finds in the archive; its name must reach the model.
const SOURCE_FILE: &str = "port-authority-notice.txt";

/// A running Iron (`iron up` with the delivery bridge, inbox and engine) on a project, and an
/// archive with one saved source.
struct Stack {
    p: Project,
    up: Proc,
    _archive: TempDir,
}

impl Stack {
    /// Saves the source in `archive`, points the newsroom's archive server at it, builds the
    /// catalog and starts the processes.
    fn start(p: Project, archive: TempDir) -> Stack {
        std::fs::write(
            archive.path().join(SOURCE_FILE),
            "The harbour bridge is closed until further notice.",
        )
        .unwrap();
        // The newsroom's archive server serves this directory (see aem/newsroom/AEM.md).
        let p = p.env("NEWSROOM_ARCHIVE", &archive.path().display().to_string());
        support::build_catalog(p.dir.path());
        let up = p.up(
            "nodes:\n  - name: delivery\n    namespace: /iron/tools\n    executable: delivery_node\n  - name: inbox\n    executable: inbox_node\n  - name: engine\n    executable: engine_node\n",
            &[],
        );
        up.wait_for("up: 3 node(s) running", T);
        assert!(
            up.matching("/iron/engine: active").len() == 1,
            "{}",
            up.output().join("\n")
        );
        Stack {
            p,
            up,
            _archive: archive,
        }
    }

    /// `iron inbox send` from `source` to `destination`.
    fn send(&self, source: &str, destination: &str, text: &str) {
        self.p.iron_ok(&[
            "inbox",
            "send",
            "--source",
            source,
            "--user",
            "ana",
            "--destination",
            destination,
            text,
        ]);
    }

    /// Stops everything (SIGINT, as a person would) and returns the log's events and what the
    /// delivery bridge recorded.
    async fn stop(mut self) -> (Vec<Envelope>, Vec<Value>) {
        self.up.signal(libc::SIGINT);
        assert!(self.up.wait_exit(T).expect("up exits").success());
        (self.p.all_events().await, self.p.outbox())
    }
}

/// The arguments the model passes to the archive's `list_directory`.
fn list_args(archive: &std::path::Path) -> Value {
    json!({"path": archive.display().to_string()})
}

/// The first `reply_delivered` of `events` on `channel`, and its payload.
fn delivery_on<'a>(
    events: &'a [Envelope],
    channel: &str,
) -> Option<(&'a Envelope, ReplyDelivered)> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::ReplyDelivered)
        .map(|e| (e, support::read_one::<ReplyDelivered>(e)))
        .find(|(_, r)| r.channel.as_deref() == Some(channel))
}

/// One task's events, checked: routed to the analyst, the tool call and its result, the
/// judgement and the delivery on `channel`, each caused by the step before it.
fn assert_task_chain(events: &[Envelope], channel: &str) {
    let (delivered, reply) = delivery_on(events, channel)
        .unwrap_or_else(|| panic!("no reply_delivered on {channel}: {:#?}", kinds(events)));
    assert!(reply.delivered, "{reply:?}");
    let by_id: HashMap<_, _> = events.iter().map(|e| (e.event_id.clone(), e)).collect();
    let cause_of = |e: &Envelope| {
        let id = e
            .cause
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no cause", e.kind.as_str()));
        *by_id.get(id).expect("the cause is on the log")
    };
    let judged = cause_of(delivered);
    assert_eq!(judged.kind.as_str(), "task_judged");
    assert!(support::read_one::<TaskJudged>(judged).answered);
    let delegated = cause_of(judged);
    assert_eq!(delegated.kind.as_str(), "task_delegated");
    let routed = cause_of(delegated);
    assert_eq!(routed.kind.as_str(), "routing_decided");
    assert_eq!(
        support::read_one::<RoutingDecided>(routed).domain,
        "newsroom/analyst",
        "the offline router picks the analyst"
    );
    let turn = cause_of(routed);
    assert_eq!(turn.kind.as_str(), "chat_turn");

    // The expert's own steps hang off the same turn: its tool call went through the gates to
    // the real server and came back.
    let own: Vec<&Envelope> = events
        .iter()
        .filter(|e| e.cause.as_ref() == Some(&turn.event_id))
        .collect();
    let call = own
        .iter()
        .find(|e| e.kind.as_str() == "tool_call")
        .unwrap_or_else(|| panic!("no tool_call under the turn: {:#?}", kinds(events)));
    assert!(
        call.payload.to_string().contains("list_directory"),
        "{}",
        call.payload
    );
    let result = events
        .iter()
        .find(|e| e.kind.as_str() == "tool_result" && e.payload.to_string().contains(SOURCE_FILE))
        .unwrap_or_else(|| panic!("no tool_result naming {SOURCE_FILE}: {:#?}", kinds(events)));
    assert!(result.cause.is_some());
    assert!(
        own.iter().any(|e| e.kind.as_str() == "expert_finished"),
        "the expert's finish hangs off the turn too"
    );
}

fn kinds(events: &[Envelope]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

fn assert_unique(events: &[Envelope]) {
    let ids: HashMap<_, _> = events
        .iter()
        .map(|e| (e.event_id.clone(), e.kind.as_str()))
        .collect();
    assert_eq!(ids.len(), events.len(), "every event once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_a_message_is_routed_answered_with_a_tool_and_delivered() {
    let archive = tempfile::tempdir().unwrap();
    let p = Project::scripted(&format!(
        "turns:\n  - expect: \"bridge\"\n    tool_calls:\n      - name: archive__list_directory\n        arguments: {}\n  - expect: \"{SOURCE_FILE}\"\n    text: \"{ANSWER}\"\n",
        list_args(archive.path())
    ));
    let stack = Stack::start(p, archive);

    // The terminal channel: the engine prints the reply.
    stack.send(
        "terminal",
        "",
        "cross-check the claim that the bridge is closed",
    );
    stack
        .up
        .wait_for(&format!("[newsroom -> terminal] {ANSWER}"), T);

    // The chat channel: newsroom delivers through its native bridge,
    // `delivery/send_message {dest, text}`.
    stack.send("chat", "#desk", "is the bridge closed? cross-check it");
    stack
        .up
        .wait_for(&format!("[delivery -> #desk] {ANSWER}"), T);

    let (events, sends) = stack.stop().await;
    assert_eq!(
        sends.len(),
        1,
        "only the chat reply goes through the bridge"
    );
    assert_eq!(sends[0]["dest"], "#desk");
    assert_eq!(sends[0]["text"], ANSWER);
    assert_eq!(sends[0]["caller"], "engine");
    assert_task_chain(&events, "terminal");
    assert_task_chain(&events, "chat");
    let (_, chat) = delivery_on(&events, "chat").unwrap();
    // The channel's own fields, which the protocol leaves to it.
    assert_eq!(chat.rest["via"], "delivery/send_message");
    assert_eq!(chat.rest["destination"], "#desk");
    assert_unique(&events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_compatible_a_message_is_routed_answered_with_a_tool_and_delivered() {
    // The expert's two model calls: ask for the archive listing, then answer from it.
    let archive = tempfile::tempdir().unwrap();
    let fake = FakeServer::start(vec![
        Reply::ok(openai_tools(&[(
            "call_1",
            "archive__list_directory",
            list_args(archive.path()),
        )])),
        Reply::ok(openai_text(ANSWER)),
    ])
    .await;
    let stack = Stack::start(Project::openai(&fake.url()), archive);
    stack.send("chat", "#desk", "is the bridge closed? cross-check it");
    stack
        .up
        .wait_for(&format!("[delivery -> #desk] {ANSWER}"), T);
    let (events, sends) = stack.stop().await;

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "two model calls: {requests:#?}");
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools offered to the model")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"archive__list_directory"), "{offered:?}");
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("call_1") && second.contains(SOURCE_FILE),
        "the tool result goes back to the model with its call id: {second}"
    );
    assert_eq!(sends.len(), 1);
    assert_task_chain(&events, "chat");
    assert_unique(&events);
}
