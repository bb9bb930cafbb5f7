//! The Anthropic backend over real HTTP, and failover between backends.

use crate::support_llm as support;

use std::sync::Arc;
use std::time::Duration;

use iron::cognition::agent::{AgentLoop, ExpertBrief, Limits, TaskInput, TaskStatus};
use iron::llm::{
    ANTHROPIC_VERSION, AnthropicBackend, ChatModel, ChatRequest, Failover, HttpSettings, KeyRef,
    LlmError, MapEnv, Message, ModelRegistry, ModelsConfig, OpenAiBackend, RetryPolicy,
    SecretSource,
};
use serde_json::json;
use support::{
    FakeServer, FakeTools, RecordingSleeper, Reply, anthropic_text, anthropic_tools, openai_text,
};

const KEY: &str = "sk-ant-test-93c1d0e7aa41b2";

fn env() -> Arc<dyn SecretSource> {
    Arc::new(MapEnv::new([("FAKE_ANTHROPIC_KEY", KEY)]))
}

fn settings(name: &str, base_url: String) -> HttpSettings {
    HttpSettings {
        name: name.into(),
        base_url,
        model: "fake-claude".into(),
        api_key: Some(KeyRef::parse("${FAKE_ANTHROPIC_KEY}").unwrap()),
        timeout: Duration::from_secs(10),
        max_tokens: Some(1024),
        prices: None,
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 2,
        initial_backoff_ms: 50,
        max_backoff_ms: 1_000,
        jitter: false,
        jitter_seed: None,
    }
}

fn ask() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("sys"), Message::user("hello")],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_tool_calling_loop_runs_against_the_messages_api() {
    let server = FakeServer::start(vec![
        Reply::ok(anthropic_tools(&[
            ("toolu_1", "search_sources", json!({"query": "harbour"})),
            ("toolu_2", "read_document", json!({"id": 7})),
        ])),
        Reply::ok(anthropic_text("Corroborated.")),
    ])
    .await;
    let model = AnthropicBackend::new(settings("claude", server.url()), env()).unwrap();
    let tools = FakeTools::new(&["search_sources", "read_document"], |name, _| {
        Ok(json!({"from": name}))
    });
    let mut state = AgentLoop::start(
        &ExpertBrief {
            id: "newsroom/analyst".into(),
            identity: "The analyst.".into(),
            ..Default::default()
        },
        &TaskInput {
            instruction: "Check it".into(),
            ..Default::default()
        },
    );
    let outcome = AgentLoop::new(&model, &tools, Limits::default())
        .run(&mut state)
        .await;
    assert_eq!(
        outcome.status,
        TaskStatus::Done {
            answer: "Corroborated.".into()
        }
    );
    assert_eq!(tools.called(), ["search_sources", "read_document"]);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.headers["x-api-key"], KEY);
    assert_eq!(first.headers["anthropic-version"], ANTHROPIC_VERSION);
    assert!(!first.headers.contains_key("authorization"));
    assert_eq!(first.body["max_tokens"], 1024);
    assert!(
        first.body["system"]
            .as_str()
            .unwrap()
            .contains("The analyst.")
    );
    assert_eq!(first.body["tools"][0]["input_schema"]["type"], "object");
    let second = requests[1].body["messages"].as_array().unwrap();
    // user instruction, assistant tool uses, user tool results (both, in order)
    assert_eq!(second.len(), 3);
    assert_eq!(second[1]["content"][1]["id"], "toolu_1");
    let results = second[2]["content"].as_array().unwrap();
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert_eq!(results[1]["tool_use_id"], "toolu_2");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("untrusted data")
    );
}

#[tokio::test]
async fn anthropic_overload_529_is_retryable_and_401_is_not() {
    let server = FakeServer::start(vec![
        Reply::status(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
        Reply::status(401, json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})),
    ])
    .await;
    let model = AnthropicBackend::new(settings("claude", server.url()), env()).unwrap();
    let first = model.chat(&ask()).await.unwrap_err();
    assert!(
        matches!(first, LlmError::Server { status: 529, .. }),
        "{first:?}"
    );
    assert!(first.is_retryable());
    let second = model.chat(&ask()).await.unwrap_err();
    assert!(
        matches!(second, LlmError::Unauthorized { .. }),
        "{second:?}"
    );
    assert!(second.to_string().contains("invalid x-api-key"));
    assert!(!second.to_string().contains(KEY) && !format!("{model:?}").contains(KEY));
}

#[tokio::test]
async fn failover_moves_from_a_failing_backend_to_a_working_one() {
    let broken = FakeServer::start(vec![
        Reply::status(500, json!({"error": {"message": "boom 1"}})),
        Reply::status(502, json!({"error": {"message": "boom 2"}})),
    ])
    .await;
    let working = FakeServer::start(vec![Reply::ok(anthropic_text("from the second"))]).await;
    let openai = OpenAiBackend::new(
        HttpSettings {
            api_key: None,
            ..settings("local", format!("{}/v1", broken.url()))
        },
        env(),
    )
    .unwrap();
    let claude = AnthropicBackend::new(settings("claude", working.url()), env()).unwrap();
    let sleeper = Arc::new(RecordingSleeper::default());
    let failover = Failover::new(
        "strong",
        vec![Arc::new(openai), Arc::new(claude)],
        policy(),
        sleeper.clone(),
    );
    let response = failover.chat(&ask()).await.unwrap();
    assert_eq!(response.text.as_deref(), Some("from the second"));
    assert_eq!(response.backend, "claude");
    assert_eq!(broken.requests().len(), 2, "retried up to max_attempts");
    assert_eq!(working.requests().len(), 1);
    assert_eq!(sleeper.pauses(), [Duration::from_millis(50)]);
}

#[tokio::test]
async fn a_non_retryable_error_stops_failover_at_once() {
    let first = FakeServer::start(vec![Reply::status(
        403,
        json!({"error": {"message": "no access to this model"}}),
    )])
    .await;
    let second = FakeServer::start(vec![Reply::ok(openai_text("never"))]).await;
    let a = OpenAiBackend::new(settings("a", first.url()), env()).unwrap();
    let b = OpenAiBackend::new(settings("b", second.url()), env()).unwrap();
    let sleeper = Arc::new(RecordingSleeper::default());
    let failover = Failover::new(
        "m",
        vec![Arc::new(a), Arc::new(b)],
        policy(),
        sleeper.clone(),
    );
    let err = failover.chat(&ask()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Unauthorized { status: 403, ref backend, .. } if backend == "a")
    );
    assert!(err.to_string().contains("no access to this model"));
    assert!(second.requests().is_empty());
    assert!(sleeper.pauses().is_empty());
}

#[tokio::test]
async fn the_registry_builds_failover_lists_from_yaml() {
    let broken = FakeServer::start(vec![Reply::status(500, json!({"error": "down"}))]).await;
    let working = FakeServer::start(vec![Reply::ok(openai_text("hi"))]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("demo.yaml"),
        "turns:\n  - text: scripted hello\n",
    )
    .unwrap();
    let yaml = format!(
        r#"
backends:
  first: {{kind: openai, base_url: "{}/v1", model: m, timeout_secs: 5}}
  second: {{kind: openai, base_url: "{}/v1", model: m, api_key: "${{FAKE_ANTHROPIC_KEY}}", prices: {{input_per_mtok: 1000000, output_per_mtok: 0}}}}
  demo: {{kind: scripted, script: demo.yaml}}
logical:
  fast: [first, second]
  scripted: [demo]
retry: {{max_attempts: 1, initial_backoff_ms: 1, max_backoff_ms: 1, jitter: false}}
"#,
        broken.url(),
        working.url()
    );
    let config = ModelsConfig::from_yaml(&yaml).unwrap();
    let registry = ModelRegistry::with(
        config,
        dir.path(),
        env(),
        Arc::new(RecordingSleeper::default()),
    );
    let fast = registry.model("fast").unwrap();
    let r = fast.chat(&ask()).await.unwrap();
    assert_eq!(
        (r.backend.as_str(), r.text.as_deref()),
        ("second", Some("hi"))
    );
    assert_eq!(
        r.cost_usd,
        Some(20.0),
        "20 input tokens at the configured price"
    );
    assert_eq!(
        working.requests()[0].headers["authorization"],
        format!("Bearer {KEY}")
    );
    assert!(!broken.requests()[0].headers.contains_key("authorization"));

    let scripted = registry.model("scripted").unwrap();
    assert_eq!(
        scripted.chat(&ask()).await.unwrap().text.as_deref(),
        Some("scripted hello")
    );
    assert!(!format!("{registry:?}").contains(KEY));
}
