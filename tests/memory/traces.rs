//! Traces across processes: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, one message through the
//! inbox produces one trace at an OTLP/HTTP receiver (a minimal one in this test): the
//! engine's `invoke_agent` span, the expert's under it (in another process), and under that
//! the expert's `chat` spans with token usage and its `execute_tool` span, named and
//! attributed after the OpenTelemetry GenAI conventions. (Without the variable nothing is
//! exported: `view::otlp`'s unit tests.)

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::{Json, Router, extract::State, routing::post};
use serde_json::{Value, json};
use support::project::Project;

const T: Duration = Duration::from_secs(60);

/// Every span the receiver was sent, flattened: (service instance, span).
type Received = Arc<Mutex<Vec<(String, Value)>>>;

async fn receive(State(got): State<Received>, Json(body): Json<Value>) -> Json<Value> {
    for rs in body["resourceSpans"].as_array().into_iter().flatten() {
        let instance = rs["resource"]["attributes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["key"] == "service.instance.id")
            .and_then(|a| a["value"]["stringValue"].as_str())
            .unwrap_or("")
            .to_string();
        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
            for span in ss["spans"].as_array().into_iter().flatten() {
                got.lock().unwrap().push((instance.clone(), span.clone()));
            }
        }
    }
    Json(json!({}))
}

/// A minimal OTLP/HTTP (JSON) receiver on a free port: its base URL and what it received.
async fn receiver() -> (String, Received) {
    let got: Received = Arc::default();
    let app = Router::new()
        .route("/v1/traces", post(receive))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

fn attr(span: &Value, key: &str) -> Value {
    span["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["key"] == key)
        .map(|a| {
            let v = &a["value"];
            v.get("stringValue")
                .or_else(|| v.get("intValue"))
                .cloned()
                .unwrap_or(Value::Null)
        })
        .unwrap_or(Value::Null)
}

fn project(archive: &std::path::Path) -> Project {
    let p = Project::scripted(&format!(
        "turns:\n  - expect: \"bridge\"\n    tool_calls:\n      - name: archive__list_directory\n        arguments: {}\n  - expect: \"notice.txt\"\n    text: \"The bridge is closed, per the port authority's notice.\"\n",
        json!({"path": archive.display().to_string()})
    ));
    std::fs::write(archive.join("notice.txt"), "The harbour bridge is closed.").unwrap();
    support::build_catalog(p.dir.path());
    p.env("NEWSROOM_ARCHIVE", &archive.display().to_string())
}

const LAUNCH: &str = "nodes:\n  - {name: delivery, namespace: /iron/tools, executable: delivery_node}\n  - {name: inbox, executable: inbox_node}\n  - {name: engine, executable: engine_node}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_is_one_trace_across_engine_expert_model_and_tool() {
    let (url, got) = receiver().await;
    let archive = tempfile::tempdir().unwrap();
    let p = project(archive.path()).env("OTEL_EXPORTER_OTLP_ENDPOINT", &url);
    let up = p.up(LAUNCH, &[]);
    up.wait_for("up: 3 node(s) running", T);
    p.iron_ok(&[
        "inbox",
        "send",
        "--source",
        "terminal",
        "--user",
        "ana",
        "cross-check the claim that the bridge is closed",
    ]);
    up.wait_for("[newsroom -> terminal] The bridge is closed", T);

    let spans = support::eventually("the engine's, expert's, model and tool spans", T, || {
        let got = got.clone();
        async move {
            let spans = got.lock().unwrap().clone();
            let named = |prefix: &str| {
                spans
                    .iter()
                    .any(|(_, s)| s["name"].as_str().unwrap_or("").starts_with(prefix))
            };
            (named("invoke_agent engine")
                && named("invoke_agent newsroom/")
                && named("chat ")
                && named("execute_tool "))
            .then_some(spans)
        }
    })
    .await;
    let by_id: BTreeMap<String, &Value> = spans
        .iter()
        .map(|(_, s)| (s["spanId"].as_str().unwrap().to_string(), s))
        .collect();
    let find = |prefix: &str| -> Vec<&(String, Value)> {
        spans
            .iter()
            .filter(|(_, s)| s["name"].as_str().unwrap().starts_with(prefix))
            .collect()
    };
    let engine = &find("invoke_agent engine")[0];
    let expert = &find("invoke_agent newsroom/")[0];
    assert_eq!(engine.0, "/iron/engine");
    assert!(
        expert.0.starts_with("/iron/experts/newsroom/"),
        "the expert's span comes from its own process: {}",
        expert.0
    );
    let trace = engine.1["traceId"].as_str().unwrap();
    assert_eq!(
        spans.iter().filter(|(_, s)| s["traceId"] == trace).count(),
        spans.len(),
        "one task, one trace: {spans:#?}"
    );
    assert_eq!(expert.1["parentSpanId"], engine.1["spanId"]);
    assert_eq!(attr(&expert.1, "gen_ai.operation.name"), "invoke_agent");
    let chats = find("chat ");
    assert_eq!(chats.len(), 2, "two model calls: {chats:#?}");
    for (_, chat) in &chats {
        assert_eq!(chat["parentSpanId"], expert.1["spanId"]);
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
        let input: u64 = attr(chat, "gen_ai.usage.input_tokens")
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(input > 0, "{chat:#}");
    }
    let tool = &find("execute_tool ")[0].1;
    assert_eq!(attr(tool, "gen_ai.tool.name"), "archive__list_directory");
    assert_eq!(tool["parentSpanId"], expert.1["spanId"]);
    for (_, s) in &spans {
        let start: u64 = s["startTimeUnixNano"].as_str().unwrap().parse().unwrap();
        let end: u64 = s["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
        assert!(end >= start, "{s:#}");
        if let Some(parent) = s["parentSpanId"].as_str() {
            assert!(by_id.contains_key(parent), "a dangling parent: {s:#}");
        }
    }
    assert!(
        engine.1.get("parentSpanId").is_none(),
        "the engine's span is the root"
    );
}
