//! The OpenAI-compatible backend against a fake server over real HTTP.

use crate::support_llm as support;

use std::sync::Arc;
use std::time::Duration;

use iron::cognition::agent::{AgentLoop, ExpertBrief, Limits, TaskInput, TaskStatus};
use iron::llm::{
    ChatModel, ChatRequest, Failover, HttpSettings, KeyRef, LlmError, MapEnv, Message,
    OpenAiBackend, Prices, RetryPolicy, SecretSource,
};
use serde_json::json;
use support::{FakeServer, FakeTools, RecordingSleeper, Reply, openai_text, openai_tools};

const KEY: &str = "sk-test-4f9a1c7e2b8d0a3f6e5c";

fn backend(server: &FakeServer, timeout: Duration) -> OpenAiBackend {
    let settings = HttpSettings {
        name: "local".into(),
        base_url: format!("{}/v1", server.url()),
        model: "fake-gpt".into(),
        api_key: Some(KeyRef::parse("${FAKE_OPENAI_KEY}").unwrap()),
        timeout,
        max_tokens: None,
        prices: Some(Prices {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
        }),
    };
    let env: Arc<dyn SecretSource> = Arc::new(MapEnv::new([("FAKE_OPENAI_KEY", KEY)]));
    OpenAiBackend::new(settings, env).unwrap()
}

fn ask() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user("hello")],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_tool_calling_loop_runs_against_an_openai_compatible_server() {
    let server = FakeServer::start(vec![
        Reply::ok(openai_tools(&[
            ("c1", "search_sources", json!({"query": "harbour"})),
            ("c2", "read_document", json!({"id": 7})),
        ])),
        Reply::ok(openai_text("Corroborated by two sources.")),
    ])
    .await;
    let model = backend(&server, Duration::from_secs(10));
    let tools = FakeTools::new(&["search_sources", "read_document"], |name, _| {
        Ok(json!(format!("{name} output")))
    });
    let brief = ExpertBrief {
        id: "newsroom/analyst".into(),
        identity: "The analyst.".into(),
        ..Default::default()
    };
    let mut state = AgentLoop::start(
        &brief,
        &TaskInput {
            instruction: "Check the harbour claim".into(),
            ..Default::default()
        },
    );
    let outcome = AgentLoop::new(&model, &tools, Limits::default())
        .run(&mut state)
        .await;

    assert_eq!(
        outcome.status,
        TaskStatus::Done {
            answer: "Corroborated by two sources.".into()
        }
    );
    assert_eq!(tools.called(), ["search_sources", "read_document"]);
    assert_eq!(outcome.spend.input_tokens, 50);
    assert_eq!(outcome.spend.output_tokens, 15);
    assert!((outcome.spend.cost_usd - (50.0 + 30.0) / 1e6).abs() < 1e-12);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(first.body["model"], "fake-gpt");
    let offered: Vec<&str> = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["search_sources", "read_document", "ask_operator"]);
    assert_eq!(first.body["messages"][0]["role"], "system");

    let second = &requests[1].body["messages"];
    assert_eq!(second[2]["tool_calls"][1]["id"], "c2");
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "c1");
    assert_eq!(second[4]["tool_call_id"], "c2");
    let wrapped = second[3]["content"].as_str().unwrap();
    assert!(
        wrapped.starts_with("<tool_output tool=\"search_sources\" call_id=\"c1\" status=\"ok\">")
    );
    assert!(wrapped.contains("untrusted data"));
    assert!(wrapped.contains("search_sources output"));
}

#[tokio::test]
async fn a_429_is_retried_after_the_servers_pause_then_succeeds() {
    let server = FakeServer::start(vec![
        Reply::Json(
            429,
            json!({"error": {"message": "slow down"}}),
            vec![("Retry-After".into(), "2".into())],
        ),
        Reply::ok(openai_text("ok")),
    ])
    .await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let policy = RetryPolicy {
        max_attempts: 3,
        initial_backoff_ms: 100,
        max_backoff_ms: 5_000,
        jitter: false,
        jitter_seed: None,
    };
    let failover = Failover::new(
        "fast",
        vec![Arc::new(backend(&server, Duration::from_secs(10)))],
        policy,
        sleeper.clone(),
    );
    let response = failover.chat(&ask()).await.unwrap();
    assert_eq!(response.text.as_deref(), Some("ok"));
    assert_eq!(response.backend, "local");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(sleeper.pauses(), [Duration::from_secs(2)]);
}

#[tokio::test]
async fn server_errors_are_retried_with_doubling_pauses_until_the_bound() {
    let err = || Reply::status(503, json!({"error": {"message": "overloaded"}}));
    let server = FakeServer::start(vec![err(), err(), err(), err()]).await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let policy = RetryPolicy {
        max_attempts: 3,
        initial_backoff_ms: 100,
        max_backoff_ms: 5_000,
        jitter: false,
        jitter_seed: None,
    };
    let failover = Failover::new(
        "fast",
        vec![Arc::new(backend(&server, Duration::from_secs(10)))],
        policy,
        sleeper.clone(),
    );
    let err = failover.chat(&ask()).await.unwrap_err();
    assert_eq!(err.code(), "all_backends_failed");
    assert!(err.to_string().contains("overloaded"), "{err}");
    assert_eq!(server.requests().len(), 3, "bounded attempts");
    assert_eq!(
        sleeper.pauses(),
        [Duration::from_millis(100), Duration::from_millis(200)]
    );
}

#[tokio::test]
async fn a_hanging_server_ends_in_a_timeout_error() {
    let server = FakeServer::start(vec![Reply::Hang]).await;
    let err = backend(&server, Duration::from_millis(300))
        .chat(&ask())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Timeout { .. }), "{err:?}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn malformed_json_is_a_clear_non_retryable_error() {
    let server = FakeServer::start(vec![Reply::Raw(200, "{\"choices\": [".into())]).await;
    let err = backend(&server, Duration::from_secs(10))
        .chat(&ask())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Malformed { .. }), "{err:?}");
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("not JSON"), "{err}");
}

#[tokio::test]
async fn a_401_is_not_retried_and_the_key_never_shows() {
    // The server echoes the key, as some providers do.
    let server = FakeServer::start(vec![
        Reply::status(
            401,
            json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}),
        ),
        Reply::ok(openai_text("must not be reached")),
    ])
    .await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let model = backend(&server, Duration::from_secs(10));
    let debug_of_backend = format!("{model:?}");
    let failover = Failover::new(
        "fast",
        vec![Arc::new(model)],
        RetryPolicy::default(),
        sleeper.clone(),
    );
    let err = failover.chat(&ask()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Unauthorized { status: 401, .. }),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
    assert!(sleeper.pauses().is_empty());
    for shown in [
        err.to_string(),
        format!("{err:?}"),
        debug_of_backend,
        format!("{failover:?}"),
    ] {
        assert!(!shown.contains(KEY), "key leaked: {shown}");
    }
    assert!(err.to_string().contains("[redacted]"), "{err}");
}

#[tokio::test]
async fn a_400_fails_at_once_with_the_servers_message() {
    let server = FakeServer::start(vec![Reply::status(
        400,
        json!({"error": {"message": "model 'nope' not found"}}),
    )])
    .await;
    let err = backend(&server, Duration::from_secs(10))
        .chat(&ask())
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Rejected { status: 400, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("model 'nope' not found"), "{err}");
}

#[tokio::test]
async fn an_unset_key_variable_fails_before_any_request() {
    let server = FakeServer::start(vec![Reply::ok(openai_text("x"))]).await;
    let settings = HttpSettings {
        name: "local".into(),
        base_url: server.url(),
        model: "m".into(),
        api_key: Some(KeyRef::parse("${NOT_SET_ANYWHERE}").unwrap()),
        timeout: Duration::from_secs(5),
        max_tokens: None,
        prices: None,
    };
    let model = OpenAiBackend::new(settings, Arc::new(MapEnv::default())).unwrap();
    let err = model.chat(&ask()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::MissingKey { ref variable, .. } if variable == "NOT_SET_ANYWHERE")
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_refused_connection_is_retryable() {
    // Bind then drop, so nothing listens on the port.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let settings = HttpSettings {
        name: "gone".into(),
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: "m".into(),
        api_key: None,
        timeout: Duration::from_secs(5),
        max_tokens: None,
        prices: None,
    };
    let err = OpenAiBackend::new(settings, Arc::new(MapEnv::default()))
        .unwrap()
        .chat(&ask())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Connection { .. }), "{err:?}");
    assert!(err.is_retryable());
}
