//! Test support: a tiny HTTP/1.1 server on 127.0.0.1 that records requests and answers from
//! a script (JSON replies, raw bodies, or a hang), response builders for the OpenAI and
//! Anthropic wire formats, and recording doubles for the loop's ports.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iron::cognition::agent::{ToolExecutor, ToolFailure};
use iron::llm::{BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, Sleeper, ToolSpec};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// One scripted answer of the fake server.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status and a JSON body, with extra headers.
    Json(u16, Value, Vec<(String, String)>),
    /// A status and a body sent as is.
    Raw(u16, String),
    /// Accept the request and never answer.
    Hang,
}

impl Reply {
    /// 200 with `body`.
    pub fn ok(body: Value) -> Self {
        Reply::Json(200, body, Vec::new())
    }

    /// `status` with `body`.
    pub fn status(status: u16, body: Value) -> Self {
        Reply::Json(status, body, Vec::new())
    }
}

/// A request the fake server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`, …
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

/// The fake server. Dropping it stops it and every connection it holds.
pub struct FakeServer {
    addr: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeServer {
    /// Starts on a free port; each request takes the next reply (a 500 saying so when none
    /// is left).
    pub async fn start(replies: Vec<Reply>) -> Self {
        let replies = Mutex::new(VecDeque::from(replies));
        Self::respond(move |_| {
            replies.lock().unwrap().pop_front().unwrap_or_else(|| {
                Reply::status(
                    500,
                    json!({"error": {"message": "fake server: no scripted reply left"}}),
                )
            })
        })
        .await
    }

    /// Starts on a free port; each request is answered by `answer` (for answers that depend
    /// on what was asked).
    pub async fn respond(answer: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let answer: Answer = Arc::new(answer);
        let recorded = requests.clone();
        let accept = tokio::spawn(async move {
            // Connection tasks live in this set, so aborting the accept task ends them too.
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                connections.spawn(serve(stream, recorded.clone(), answer.clone()));
            }
        });
        Self {
            addr,
            requests,
            accept,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

type Answer = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

async fn serve(mut stream: TcpStream, recorded: Arc<Mutex<Vec<Recorded>>>, answer: Answer) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let reply = answer(&request);
    recorded.lock().unwrap().push(request);
    let (status, body, headers) = match reply {
        Reply::Hang => {
            std::future::pending::<()>().await;
            return;
        }
        Reply::Json(s, v, h) => (s, v.to_string(), h),
        Reply::Raw(s, b) => (s, b, Vec::new()),
    };
    let mut head = format!(
        "HTTP/1.1 {status} Fake\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[header_end..]).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// An OpenAI chat-completions answer with text.
pub fn openai_text(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake-gpt",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    })
}

/// An OpenAI chat-completions answer with tool calls `(id, name, arguments)`.
pub fn openai_tools(calls: &[(&str, &str, Value)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    json!({
        "id": "chatcmpl-2", "object": "chat.completion", "model": "fake-gpt",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}
    })
}

/// An Anthropic Messages answer with text.
pub fn anthropic_text(text: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "fake-claude",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 5}
    })
}

/// An Anthropic Messages answer with tool uses `(id, name, input)`.
pub fn anthropic_tools(calls: &[(&str, &str, Value)]) -> Value {
    let mut content = vec![json!({"type": "text", "text": "Checking."})];
    content.extend(calls.iter().map(
        |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
    ));
    json!({
        "id": "msg_2", "type": "message", "role": "assistant", "model": "fake-claude",
        "content": content,
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 30, "output_tokens": 10}
    })
}

/// Records requested pauses and returns at once.
#[derive(Debug, Default)]
pub struct RecordingSleeper(pub Mutex<Vec<Duration>>);

impl RecordingSleeper {
    /// The pauses requested so far.
    pub fn pauses(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

/// Wraps a model and keeps every request it was sent.
pub struct RecordingModel<M> {
    pub inner: M,
    pub requests: Mutex<Vec<ChatRequest>>,
}

impl<M> RecordingModel<M> {
    pub fn new(inner: M) -> Self {
        Self {
            inner,
            requests: Mutex::new(Vec::new()),
        }
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl<M: ChatModel> ChatModel for RecordingModel<M> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.chat(request)
    }
}

/// A tool executor with fixed tools; each call is recorded and answered by `answer`.
pub struct FakeTools {
    pub specs: Vec<ToolSpec>,
    pub calls: Mutex<Vec<(String, Value)>>,
    #[allow(clippy::type_complexity)]
    pub answer: Box<dyn Fn(&str, &Value) -> Result<Value, String> + Send + Sync>,
}

impl FakeTools {
    /// Tools named `names`, each answering `answer(name, args)`.
    pub fn new(
        names: &[&str],
        answer: impl Fn(&str, &Value) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            specs: names
                .iter()
                .map(|n| ToolSpec {
                    name: n.to_string(),
                    description: format!("the {n} tool"),
                    parameters: json!({"type": "object", "properties": {}}),
                })
                .collect(),
            calls: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        }
    }

    /// Names called so far, in order.
    pub fn called(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }
}

impl ToolExecutor for FakeTools {
    fn tools(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        self.calls
            .lock()
            .unwrap()
            .push((name.to_string(), arguments.clone()));
        let out = (self.answer)(name, arguments).map_err(ToolFailure::Reported);
        Box::pin(async move { out })
    }
}
