//! The OTLP exporter: finished spans ([`crate::core::trace`]) go to an OpenTelemetry
//! collector over OTLP/HTTP with JSON bodies, in batches, from a task of their own — a slow
//! or absent collector costs the process nothing but the spans it drops (counted and logged).
//!
//! Configured the standard way: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` is added); `OTEL_SERVICE_NAME` (default
//! `iron`); `OTEL_SDK_DISABLED=true` turns it off. Without an endpoint nothing is exported.
//! Only the `http/json` protocol is spoken: another `OTEL_EXPORTER_OTLP_PROTOCOL` is refused
//! with a warning instead of sending a collector what it cannot read.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use crate::core::trace::{AttrValue, SpanKind, SpanRecord, SpanSink, Tracer};

/// Spans queued before new ones are dropped.
const QUEUE: usize = 8_192;
/// Spans sent in one request at most.
const BATCH: usize = 512;
/// How long a span waits for its batch at most.
const LINGER: Duration = Duration::from_millis(500);
/// Bound on one export request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and as whom to export.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpSettings {
    /// The traces URL (`…/v1/traces`).
    pub endpoint: String,
    /// `service.name`.
    pub service: String,
    /// `service.instance.id`: the node's full name.
    pub instance: String,
}

impl OtlpSettings {
    /// The settings the environment gives for the node `instance`; `None` when tracing is
    /// off (no endpoint, disabled, or a protocol other than `http/json`).
    pub fn from_env(instance: &str) -> Option<OtlpSettings> {
        Self::from_vars(instance, |k| std::env::var(k).ok())
    }

    fn from_vars(instance: &str, var: impl Fn(&str) -> Option<String>) -> Option<OtlpSettings> {
        let set = |k: &str| {
            var(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return None;
        }
        let endpoint = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url,
            None => format!(
                "{}/v1/traces",
                set("OTEL_EXPORTER_OTLP_ENDPOINT")?.trim_end_matches('/')
            ),
        };
        let protocol = set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(p) = protocol.filter(|p| p != "http/json") {
            warn!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={p}: only http/json is spoken; traces are not exported"
            );
            return None;
        }
        Some(OtlpSettings {
            endpoint,
            service: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "iron".into()),
            instance: instance.to_string(),
        })
    }
}

/// The sink side: queues without waiting.
struct Queue {
    tx: mpsc::Sender<SpanRecord>,
    dropped: Arc<AtomicU64>,
}

impl SpanSink for Queue {
    fn export(&self, span: SpanRecord) {
        if self.tx.try_send(span).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A running exporter: the tracer to hand to the node, and a way to send what is queued
/// before the process exits.
pub struct Otlp {
    tracer: Tracer,
    flush: Option<mpsc::Sender<oneshot::Sender<()>>>,
}

impl Otlp {
    /// No export: a tracer that only makes ids.
    pub fn off() -> Self {
        Self {
            tracer: Tracer::default(),
            flush: None,
        }
    }

    /// Starts exporting with `settings` (on the current Tokio runtime).
    pub fn start(settings: OtlpSettings) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let (flush_tx, flush_rx) = mpsc::channel(4);
        let dropped = Arc::new(AtomicU64::new(0));
        info!(endpoint = %settings.endpoint, "exporting traces over OTLP/HTTP (JSON)");
        tokio::spawn(export_loop(settings, rx, flush_rx, dropped.clone()));
        Self {
            tracer: Tracer::new(Arc::new(Queue { tx, dropped })),
            flush: Some(flush_tx),
        }
    }

    /// [`Otlp::start`] when the environment configures an endpoint, else [`Otlp::off`].
    pub fn from_env(instance: &str) -> Self {
        OtlpSettings::from_env(instance)
            .map(Self::start)
            .unwrap_or_else(Self::off)
    }

    /// The tracer to give the node.
    pub fn tracer(&self) -> Tracer {
        self.tracer.clone()
    }

    /// Sends everything queued so far, waiting at most `timeout`.
    pub async fn flush(&self, timeout: Duration) {
        let Some(flush) = &self.flush else { return };
        let (done, wait) = oneshot::channel();
        if flush.send(done).await.is_ok() {
            let _ = tokio::time::timeout(timeout, wait).await;
        }
    }
}

async fn export_loop(
    settings: OtlpSettings,
    mut rx: mpsc::Receiver<SpanRecord>,
    mut flush_rx: mpsc::Receiver<oneshot::Sender<()>>,
    dropped: Arc<AtomicU64>,
) {
    let client = match reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build() {
        Ok(c) => c,
        Err(e) => {
            warn!("traces are not exported: cannot build an HTTP client: {e}");
            return;
        }
    };
    let mut batch: Vec<SpanRecord> = Vec::new();
    let mut reported_drops = 0;
    loop {
        let mut flushed = None;
        tokio::select! {
            span = rx.recv() => {
                if let Some(span) = span {
                    batch.push(span);
                    if batch.len() < BATCH {
                        continue;
                    }
                }
            }
            done = flush_rx.recv() => flushed = done,
            _ = tokio::time::sleep(LINGER), if !batch.is_empty() => {}
        }
        // A flush takes everything already queued.
        while flushed.is_some() && batch.len() < QUEUE {
            match rx.try_recv() {
                Ok(span) => batch.push(span),
                Err(_) => break,
            }
        }
        for chunk in batch.chunks(BATCH) {
            let body = encode(&settings, chunk);
            let sent = client.post(&settings.endpoint).json(&body).send().await;
            match sent.map(|r| r.error_for_status()) {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => warn!("{} span(s) not exported: {e}", chunk.len()),
                Err(e) => warn!("{} span(s) not exported: {e}", chunk.len()),
            }
        }
        batch.clear();
        let now_dropped = dropped.load(Ordering::Relaxed);
        if now_dropped > reported_drops {
            warn!(
                "{} span(s) dropped: the exporter could not keep up",
                now_dropped - reported_drops
            );
            reported_drops = now_dropped;
        }
        if let Some(done) = flushed {
            let _ = done.send(());
        }
        if rx.is_closed() && rx.is_empty() {
            return;
        }
    }
}

fn attr_value(v: &AttrValue) -> Value {
    match v {
        AttrValue::Str(s) => json!({ "stringValue": s }),
        // OTLP/JSON writes 64-bit integers as strings.
        AttrValue::Int(i) => json!({ "intValue": i.to_string() }),
        AttrValue::Float(f) => json!({ "doubleValue": f }),
        AttrValue::Bool(b) => json!({ "boolValue": b }),
    }
}

fn attributes<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a AttrValue)>) -> Value {
    pairs
        .into_iter()
        .map(|(k, v)| json!({"key": k, "value": attr_value(v)}))
        .collect()
}

/// The OTLP/JSON `ExportTraceServiceRequest` for `spans`.
pub fn encode(settings: &OtlpSettings, spans: &[SpanRecord]) -> Value {
    let resource = [
        ("service.name", AttrValue::from(settings.service.as_str())),
        ("service.instance.id", settings.instance.as_str().into()),
        ("service.version", env!("CARGO_PKG_VERSION").into()),
    ];
    let spans: Vec<Value> = spans
        .iter()
        .map(|s| {
            let mut span = json!({
                "traceId": s.context.trace_id.hex(),
                "spanId": s.context.span_id.hex(),
                "name": s.name,
                "kind": match s.kind {
                    SpanKind::Internal => 1,
                    SpanKind::Server => 2,
                    SpanKind::Client => 3,
                },
                "startTimeUnixNano": s.start_ns.to_string(),
                "endTimeUnixNano": s.end_ns.to_string(),
                "attributes": attributes(s.attributes.iter().map(|(k, v)| (k.as_str(), v))),
                "status": match &s.error {
                    Some(why) => json!({"code": 2, "message": why}),
                    None => json!({"code": 0}),
                },
            });
            if let Some(parent) = s.parent {
                span["parentSpanId"] = parent.hex().into();
            }
            span
        })
        .collect();
    json!({"resourceSpans": [{
        "resource": {"attributes": attributes(resource.iter().map(|(k, v)| (*k, v)))},
        "scopeSpans": [{"scope": {"name": "iron", "version": env!("CARGO_PKG_VERSION")}, "spans": spans}],
    }]})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn the_environment_decides_where_traces_go() {
        let of = |vars: &[(&str, &str)]| {
            let vars: HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            OtlpSettings::from_vars("/iron/engine", |k| vars.get(k).cloned())
        };
        assert_eq!(of(&[]), None);
        let s = of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")]).unwrap();
        assert_eq!(s.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(s.service, "iron");
        let s = of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b/traces"),
            ("OTEL_SERVICE_NAME", "desk"),
        ])
        .unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.service.as_str()),
            ("http://b/traces", "desk")
        );
        assert_eq!(
            of(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
            ]),
            None
        );
        assert_eq!(
            of(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                ("OTEL_SDK_DISABLED", "true")
            ]),
            None
        );
    }

    #[test]
    fn spans_encode_as_otlp_json() {
        use crate::core::trace::{SpanContext, SpanId, TraceId};
        let span = SpanRecord {
            context: SpanContext {
                trace_id: TraceId([1; 16]),
                span_id: SpanId([2; 8]),
            },
            parent: Some(SpanId([3; 8])),
            name: "chat m".into(),
            kind: SpanKind::Client,
            start_ns: 10,
            end_ns: 20,
            attributes: vec![("gen_ai.usage.input_tokens".into(), AttrValue::Int(7))],
            error: Some("boom".into()),
        };
        let settings = OtlpSettings {
            endpoint: "x".into(),
            service: "iron".into(),
            instance: "/iron/x".into(),
        };
        let v = encode(&settings, &[span]);
        let s = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(s["traceId"], "01".repeat(16));
        assert_eq!(s["parentSpanId"], "03".repeat(8));
        assert_eq!(s["kind"], 3);
        assert_eq!(s["startTimeUnixNano"], "10");
        assert_eq!(s["attributes"][0]["value"]["intValue"], "7");
        assert_eq!(s["status"]["code"], 2);
        assert_eq!(
            v["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"],
            "iron"
        );
    }
}
