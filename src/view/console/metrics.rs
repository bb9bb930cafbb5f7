//! `/metrics`: Prometheus text format, folded from the log (MEM, JOBS, LOGS). The fold lives
//! only in the console's memory and is rebuilt from the log when the console restarts; each
//! scrape reads what was appended since the previous one.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::cognition::inbox::store::depth_at;
use crate::core::durable::{DurableError, EventLog};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::jobs::JobState;
use crate::memory::projector::projected_to;
use crate::protocol::payload::{ExpertFinished, ModelCall, RoutingDecided, TaskRejected};
use crate::protocol::tool::{ToolOutcome, ToolRecord};
use crate::spine::durable::AnyLog;
use crate::spine::durable::streams::{JOBS, LOGS, MEM};
use crate::view::overview::fold_mem;
use tracing::warn;

/// Why the log could not be read for metrics.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The log failed.
    #[error("reading the log: {0}")]
    Log(#[from] DurableError),
}

/// Labels of one series, in order.
type Labels = Vec<(&'static str, String)>;

/// One metric: its help, type and series.
struct Family {
    help: &'static str,
    kind: &'static str,
    series: BTreeMap<Labels, f64>,
}

/// What the log says so far.
#[derive(Default)]
pub struct Metrics {
    families: BTreeMap<&'static str, Family>,
    /// Next MEM sequence to read.
    next_mem: u64,
    /// The projection database, whose cursor gives the projector's lag.
    projection: Option<std::path::PathBuf>,
    /// The inbox's store, whose queue gives its depth.
    inbox: Option<std::path::PathBuf>,
}

impl Metrics {
    /// Metrics that also report how far behind the projection at `projection` is, and how
    /// many messages the inbox's store at `inbox` holds by state.
    pub fn with_stores(projection: std::path::PathBuf, inbox: std::path::PathBuf) -> Self {
        Self {
            projection: Some(projection),
            inbox: Some(inbox),
            ..Self::default()
        }
    }

    fn add(&mut self, name: &'static str, help: &'static str, labels: Labels, by: f64) {
        let family = self.families.entry(name).or_insert_with(|| Family {
            help,
            kind: "counter",
            series: BTreeMap::new(),
        });
        *family.series.entry(labels).or_default() += by;
    }

    fn set(&mut self, name: &'static str, help: &'static str, labels: Labels, value: f64) {
        let family = self.families.entry(name).or_insert_with(|| Family {
            help,
            kind: "gauge",
            series: BTreeMap::new(),
        });
        family.series.insert(labels, value);
    }

    /// Folds one MEM event. Each is counted by kind; one whose payload does not have its
    /// kind's shape adds to nothing else.
    fn absorb(&mut self, e: &Envelope) {
        self.add(
            "iron_events_total",
            "Events on the MEM stream, by kind.",
            vec![("kind", e.kind.as_str().to_string())],
            1.0,
        );
        match &e.kind {
            EventKind::ExpertFinished => {
                let Ok(f) = e.payload::<ExpertFinished>() else {
                    return;
                };
                self.add(
                    "iron_tasks_total",
                    "Tasks experts finished, by status.",
                    vec![("status", f.status)],
                    1.0,
                );
            }
            EventKind::ModelCalled => match e.payload::<ModelCall>() {
                Ok(ModelCall::ModelCalled {
                    backend,
                    model,
                    usage,
                    cost_usd,
                    latency_ms,
                    ..
                }) => {
                    self.model_call(&backend, &model, "answered", latency_ms);
                    for (direction, n) in [
                        ("input", usage.input_tokens),
                        ("output", usage.output_tokens),
                    ] {
                        self.add(
                            "iron_model_tokens_total",
                            "Model tokens spent by experts, by direction.",
                            vec![("direction", direction.into())],
                            n as f64,
                        );
                    }
                    self.add(
                        "iron_model_cost_usd_total",
                        "What experts' model calls cost, in US dollars.",
                        Vec::new(),
                        cost_usd.unwrap_or(0.0),
                    );
                }
                Ok(ModelCall::ModelFailed { latency_ms, .. }) => {
                    self.model_call("", "", "failed", latency_ms);
                }
                Err(_) => {}
            },
            EventKind::RoutingDecided => {
                let Ok(r) = e.payload::<RoutingDecided>() else {
                    return;
                };
                self.add(
                    "iron_routing_decisions_total",
                    "Routing decisions, by chosen domain and method.",
                    vec![("domain", r.domain), ("method", r.by.name().into())],
                    1.0,
                );
            }
            EventKind::TaskRejected => {
                let Ok(r) = e.payload::<TaskRejected>() else {
                    return;
                };
                self.add(
                    "iron_tasks_rejected_total",
                    "Goals refused before any work, by code.",
                    vec![("code", r.code)],
                    1.0,
                );
            }
            EventKind::ToolCall | EventKind::ToolResult | EventKind::GateDenied => {
                let Ok(r) = e.payload::<ToolRecord>() else {
                    return;
                };
                self.tool(r);
            }
            _ => {}
        }
    }

    /// One model call, by backend, model and outcome, and the time it took.
    fn model_call(&mut self, backend: &str, model: &str, outcome: &str, latency_ms: u64) {
        self.add(
            "iron_model_calls_total",
            "Model calls, by backend, model and outcome.",
            vec![
                ("backend", backend.into()),
                ("model", model.into()),
                ("outcome", outcome.into()),
            ],
            1.0,
        );
        self.add(
            "iron_model_latency_seconds_total",
            "Time spent waiting for models, by backend (divide by the calls for the mean).",
            vec![("backend", backend.into())],
            latency_ms as f64 / 1000.0,
        );
    }

    /// One tool event: a call both gates admitted, a result, or a gate's refusal.
    fn tool(&mut self, r: ToolRecord) {
        let gate = "Gate decisions on tool calls, by gate and decision.";
        match r.outcome {
            ToolOutcome::Admitted { effect } => {
                self.add(
                    "iron_tool_calls_total",
                    "Tool calls both gates admitted, by tool and effect.",
                    vec![("tool", r.tool), ("effect", effect.as_str().into())],
                    1.0,
                );
                self.add(
                    "iron_gate_decisions_total",
                    gate,
                    vec![("gate", "both".into()), ("decision", "allowed".into())],
                    1.0,
                );
            }
            outcome @ (ToolOutcome::Answered { .. } | ToolOutcome::Failed { .. }) => self.add(
                "iron_tool_results_total",
                "Tool call results, by tool and outcome.",
                vec![
                    ("tool", r.tool),
                    (
                        "outcome",
                        if outcome.succeeded() { "ok" } else { "error" }.into(),
                    ),
                ],
                1.0,
            ),
            ToolOutcome::Denied { gate_number, .. } => self.add(
                "iron_gate_decisions_total",
                gate,
                vec![
                    ("gate", gate_number.to_string()),
                    ("decision", "denied".into()),
                ],
                1.0,
            ),
        }
    }

    /// How long `e` took from its making to its storage by the log (what an `emit()` waits,
    /// queueing and the commit included), summed and counted.
    fn absorb_append(&mut self, e: &Envelope, stored_ms: u64) {
        if stored_ms == 0 {
            return;
        }
        let seconds = stored_ms.saturating_sub(e.ts) as f64 / 1000.0;
        self.add(
            "iron_log_append_seconds_total",
            "Time from each MEM event's making to its storage by the log, summed (divide by iron_log_appends_total for the mean).",
            Vec::new(),
            seconds,
        );
        self.add(
            "iron_log_appends_total",
            "MEM events whose storage time the log reported.",
            Vec::new(),
            1.0,
        );
    }

    /// Reads what MEM gained since the last call and the stream heads; counts `jobs` by state.
    pub async fn refresh(
        &mut self,
        log: &AnyLog,
        jobs: &[crate::jobs::ops::Summary],
    ) -> Result<(), MetricsError> {
        let next = fold_mem(log, "mem.>", self.next_mem, |e, stored_ms| {
            self.absorb(e);
            self.absorb_append(e, stored_ms);
        })
        .await?;
        self.next_mem = next;
        let mem_last = next.saturating_sub(1);
        self.set(
            "iron_log_last_sequence",
            "The last sequence of each stream this console has read.",
            vec![("stream", MEM.into())],
            mem_last as f64,
        );
        if let Some(path) = self.projection.clone() {
            let read = tokio::task::spawn_blocking(move || projected_to(&path, MEM)).await;
            match read {
                Ok(Ok(Some(at))) => self.set(
                    "iron_projector_lag_events",
                    "MEM events appended that the projection has not applied yet.",
                    Vec::new(),
                    mem_last.saturating_sub(at) as f64,
                ),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => warn!("projector lag not reported: {e}"),
                Err(e) => warn!("projector lag not reported: {e}"),
            }
        }
        if let Some(path) = self.inbox.clone() {
            match tokio::task::spawn_blocking(move || depth_at(&path)).await {
                Ok(Ok(depth)) => {
                    for (state, n) in depth {
                        self.set(
                            "iron_inbox_messages",
                            "Messages in the inbox's durable queue, by state (pending: not yet handed to the engine).",
                            vec![("state", state)],
                            n as f64,
                        );
                    }
                }
                Ok(Err(e)) => warn!("inbox depth not reported: {e}"),
                Err(e) => warn!("inbox depth not reported: {e}"),
            }
        }
        for stream in [JOBS, LOGS] {
            let last = log.last_sequence(stream).await?;
            self.set(
                "iron_log_last_sequence",
                "The last sequence of each stream this console has read.",
                vec![("stream", stream.into())],
                last as f64,
            );
        }
        // Jobs are few and change state: counted afresh each time.
        if let Some(f) = self.families.get_mut("iron_jobs") {
            f.series.clear();
        }
        for state in ["running", "waiting", "parked", "done", "cancelled"] {
            self.set(
                "iron_jobs",
                "Durable jobs, by state.",
                vec![("state", state.into())],
                0.0,
            );
        }
        for job in jobs {
            let state = match job.state {
                JobState::Waiting { .. } => "waiting",
                JobState::Parked { .. } => "parked",
                JobState::Done { .. } => "done",
                JobState::Cancelled => "cancelled",
                _ => "running",
            };
            if let Some(f) = self.families.get_mut("iron_jobs") {
                *f.series.entry(vec![("state", state.into())]).or_default() += 1.0;
            }
        }
        Ok(())
    }

    /// The Prometheus text exposition of everything folded.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, f) in &self.families {
            let _ = writeln!(out, "# HELP {name} {}", f.help);
            let _ = writeln!(out, "# TYPE {name} {}", f.kind);
            for (labels, value) in &f.series {
                let labels: Vec<String> = labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                    .collect();
                if labels.is_empty() {
                    let _ = writeln!(out, "{name} {value}");
                } else {
                    let _ = writeln!(out, "{name}{{{}}} {value}", labels.join(","));
                }
            }
        }
        out
    }
}

/// A label value as the text format wants it: backslash, quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::event_kind::EventKind;
    use serde_json::json;

    #[test]
    fn events_become_labelled_counters() {
        let mut m = Metrics::default();
        let e = |kind, payload| Envelope::new("t", ["tasks", "a"], "x", kind, payload);
        m.absorb(&e(
            EventKind::ModelCalled,
            json!({"event": "model_called", "task_id": "a", "iteration": 1, "backend": "b",
                   "model": "m", "usage": {"input_tokens": 10, "output_tokens": 4},
                   "cost_usd": 0.5, "latency_ms": 250, "text": "ok", "tool_calls": [],
                   "calls": [], "finish": "stop"}),
        ));
        m.absorb(&e(
            EventKind::ExpertFinished,
            json!({"event": "finished", "task_id": "a", "status": "done",
                   "spend": {"model_calls": 1, "input_tokens": 10, "output_tokens": 4,
                             "cost_usd": 0.5}}),
        ));
        m.absorb(&e(
            EventKind::ToolCall,
            json!({"task": "a", "tool": "fs/read", "arguments": {},
                   "outcome": {"status": "admitted", "effect": "read"}}),
        ));
        m.absorb(&e(
            EventKind::ToolResult,
            json!({"task": "a", "tool": "fs/read", "arguments": {},
                   "outcome": {"status": "answered", "is_error": false, "result": {}}}),
        ));
        m.absorb(&e(
            EventKind::GateDenied,
            json!({"task": "a", "tool": "fs/write", "arguments": {},
                   "outcome": {"status": "denied", "gate": "path", "gate_number": 2,
                               "message": "outside the roots",
                               "denial": {"gate": "path", "tool": "fs/write",
                                          "reason": "not_granted"}}}),
        ));
        m.absorb(&e(
            EventKind::RoutingDecided,
            json!({"task_id": "a", "domain": "a/\"b\"", "instruction": "x",
                   "by": {"method": "given"}, "part": 1, "of": 1, "depth": 0,
                   "parent_task_id": "",
                   "context": {"facts": 0, "turns": 0, "scorecard": [], "perceived": []}}),
        ));
        let text = m.render();
        assert!(
            text.contains("iron_tasks_total{status=\"done\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("iron_model_tokens_total{direction=\"input\"} 10\n"),
            "{text}"
        );
        assert!(text.contains("iron_model_cost_usd_total 0.5\n"), "{text}");
        assert!(
            text.contains("iron_model_latency_seconds_total{backend=\"b\"} 0.25\n"),
            "{text}"
        );
        assert!(
            text.contains("iron_gate_decisions_total{gate=\"2\",decision=\"denied\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("iron_tool_calls_total{tool=\"fs/read\",effect=\"read\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("iron_tool_results_total{tool=\"fs/read\",outcome=\"ok\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("domain=\"a/\\\"b\\\"\""), "{text}");
        assert!(
            text.contains("# TYPE iron_events_total counter\n"),
            "{text}"
        );
    }
}
