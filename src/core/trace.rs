//! Traces: spans that follow one task across processes (engine → expert → model and tool
//! calls), named and attributed after the OpenTelemetry GenAI semantic conventions. This is
//! the port: a [`Tracer`] hands finished spans to a [`SpanSink`] (the OTLP exporter of the
//! view layer, when an endpoint is configured) and does nothing otherwise. The trace context
//! crosses processes as a W3C `traceparent` string inside the goal.

use std::sync::Arc;

/// The key of a goal's context that carries the caller's span (a W3C `traceparent`).
pub const TRACEPARENT: &str = "traceparent";
use std::time::{SystemTime, UNIX_EPOCH};

/// A trace id (16 bytes, never all zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span id (8 bytes, never all zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    fn random() -> Self {
        Self(*uuid::Uuid::new_v4().as_bytes())
    }

    /// Lower-case hex, as OTLP/JSON and `traceparent` write it.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl SpanId {
    fn random() -> Self {
        let bytes = uuid::Uuid::new_v4();
        let mut id = [0u8; 8];
        id.copy_from_slice(&bytes.as_bytes()[..8]);
        if id == [0; 8] {
            id[7] = 1;
        }
        Self(id)
    }

    /// Lower-case hex.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// Where a span sits: its trace and its own id (what a child names as its parent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    /// The trace.
    pub trace_id: TraceId,
    /// The span.
    pub span_id: SpanId,
}

impl SpanContext {
    /// The W3C `traceparent` header value (version 00, sampled).
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.trace_id.hex(), self.span_id.hex())
    }

    /// Reads a `traceparent`; `None` for anything malformed or all-zero (a fresh trace then
    /// starts, as the W3C rules say).
    pub fn parse(traceparent: &str) -> Option<SpanContext> {
        let mut parts = traceparent.trim().split('-');
        let (version, trace, span, _flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version != "00" || parts.next().is_some() {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        hex::decode_to_slice(trace, &mut trace_id).ok()?;
        hex::decode_to_slice(span, &mut span_id).ok()?;
        (trace_id != [0; 16] && span_id != [0; 8]).then_some(SpanContext {
            trace_id: TraceId(trace_id),
            span_id: SpanId(span_id),
        })
    }
}

/// The OpenTelemetry span kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// Work inside the process.
    Internal,
    /// A call this process makes (to a model, to a tool).
    Client,
    /// Work this process does for a caller (a goal it accepted).
    Server,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// Text.
    Str(String),
    /// A whole number.
    Int(i64),
    /// A number.
    Float(f64),
    /// Yes or no.
    Bool(bool),
}

impl From<&str> for AttrValue {
    fn from(v: &str) -> Self {
        AttrValue::Str(v.to_string())
    }
}
impl From<String> for AttrValue {
    fn from(v: String) -> Self {
        AttrValue::Str(v)
    }
}
impl From<i64> for AttrValue {
    fn from(v: i64) -> Self {
        AttrValue::Int(v)
    }
}
impl From<u64> for AttrValue {
    fn from(v: u64) -> Self {
        AttrValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<f64> for AttrValue {
    fn from(v: f64) -> Self {
        AttrValue::Float(v)
    }
}
impl From<bool> for AttrValue {
    fn from(v: bool) -> Self {
        AttrValue::Bool(v)
    }
}

/// A finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    /// Its trace and id.
    pub context: SpanContext,
    /// The span it is part of (`None`: the trace's root).
    pub parent: Option<SpanId>,
    /// Its name (`invoke_agent newsroom/analyst`, `chat gpt-4o`, `execute_tool files/read`).
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// Start, nanoseconds since the epoch.
    pub start_ns: u64,
    /// End, nanoseconds since the epoch.
    pub end_ns: u64,
    /// Attributes, in order.
    pub attributes: Vec<(String, AttrValue)>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Where finished spans go. `export` must not block: an exporter queues and drops (and
/// counts) when it cannot keep up.
pub trait SpanSink: Send + Sync {
    /// Takes one finished span.
    fn export(&self, span: SpanRecord);
}

/// Makes spans and hands them to the sink, if any. Cheap to clone; the default traces nothing
/// (spans still get ids, so a trace context passes through a process that exports nothing).
#[derive(Clone, Default)]
pub struct Tracer {
    sink: Option<Arc<dyn SpanSink>>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("exporting", &self.sink.is_some())
            .finish()
    }
}

/// Nanoseconds since the epoch, now.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Tracer {
    /// A tracer that hands its spans to `sink`.
    pub fn new(sink: Arc<dyn SpanSink>) -> Self {
        Self { sink: Some(sink) }
    }

    /// Whether spans go anywhere.
    pub fn is_exporting(&self) -> bool {
        self.sink.is_some()
    }

    /// Starts a span now, as a child of `parent` (a new trace when `None`).
    pub fn start(
        &self,
        name: impl Into<String>,
        kind: SpanKind,
        parent: Option<SpanContext>,
    ) -> Span {
        self.start_at(name, kind, parent, now_ns())
    }

    /// Starts a span that began at `start_ns` (for work measured before it was recorded).
    pub fn start_at(
        &self,
        name: impl Into<String>,
        kind: SpanKind,
        parent: Option<SpanContext>,
        start_ns: u64,
    ) -> Span {
        let context = SpanContext {
            trace_id: parent.map(|p| p.trace_id).unwrap_or_else(TraceId::random),
            span_id: SpanId::random(),
        };
        Span {
            sink: self.sink.clone(),
            record: Some(SpanRecord {
                context,
                parent: parent.map(|p| p.span_id),
                name: name.into(),
                kind,
                start_ns,
                end_ns: start_ns,
                attributes: Vec::new(),
                error: None,
            }),
        }
    }
}

/// A span being timed. Ends (and is exported) on [`Span::end`] or when dropped.
pub struct Span {
    sink: Option<Arc<dyn SpanSink>>,
    record: Option<SpanRecord>,
}

impl Span {
    /// Its context, to start children under it or pass on.
    pub fn context(&self) -> SpanContext {
        self.record
            .as_ref()
            .map(|r| r.context)
            .unwrap_or(SpanContext {
                trace_id: TraceId([0; 16]),
                span_id: SpanId([0; 8]),
            })
    }

    /// Sets an attribute.
    pub fn set(&mut self, key: &str, value: impl Into<AttrValue>) -> &mut Self {
        if let Some(r) = &mut self.record {
            let value = value.into();
            match r.attributes.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => r.attributes.push((key.to_string(), value)),
            }
        }
        self
    }

    /// Marks it failed with `why` (and the convention's `error.type`).
    pub fn fail(&mut self, error_type: &str, why: impl Into<String>) -> &mut Self {
        self.set("error.type", error_type);
        if let Some(r) = &mut self.record {
            r.error = Some(why.into());
        }
        self
    }

    /// Ends it now.
    pub fn end(self) {
        drop(self)
    }

    /// Ends it at `end_ns`.
    pub fn end_at(mut self, end_ns: u64) {
        if let Some(r) = &mut self.record {
            r.end_ns = end_ns.max(r.start_ns);
        }
        self.finish();
    }

    fn finish(&mut self) {
        if let (Some(sink), Some(record)) = (&self.sink, self.record.take()) {
            sink.export(record);
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(r) = &mut self.record
            && r.end_ns == r.start_ns
        {
            r.end_ns = now_ns().max(r.start_ns);
        }
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Kept(Mutex<Vec<SpanRecord>>);
    impl SpanSink for Kept {
        fn export(&self, span: SpanRecord) {
            self.0.lock().unwrap().push(span);
        }
    }

    #[test]
    fn a_traceparent_round_trips_and_rejects_what_is_malformed() {
        let kept = Arc::new(Kept::default());
        let tracer = Tracer::new(kept.clone());
        let root = tracer.start("invoke_agent engine", SpanKind::Server, None);
        let header = root.context().traceparent();
        assert_eq!(SpanContext::parse(&header), Some(root.context()));
        for bad in [
            "",
            "00-abc-def-01",
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
        ] {
            assert_eq!(SpanContext::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn children_share_the_trace_and_name_their_parent() {
        let kept = Arc::new(Kept::default());
        let tracer = Tracer::new(kept.clone());
        let mut root = tracer.start("invoke_agent engine", SpanKind::Server, None);
        root.set("gen_ai.operation.name", "invoke_agent");
        let mut child = tracer.start("chat m", SpanKind::Client, Some(root.context()));
        child
            .set("gen_ai.usage.input_tokens", 12u64)
            .fail("timeout", "slow");
        let (root_ctx, child_ctx) = (root.context(), child.context());
        child.end();
        root.end();
        let spans = kept.0.lock().unwrap();
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].context, child_ctx);
        assert_eq!(spans[0].parent, Some(root_ctx.span_id));
        assert_eq!(spans[0].context.trace_id, root_ctx.trace_id);
        assert_eq!(spans[0].error.as_deref(), Some("slow"));
        assert!(spans[0].end_ns >= spans[0].start_ns);
        assert_eq!(spans[1].parent, None);
        // Without a sink nothing is exported, but ids still flow.
        let quiet = Tracer::default().start("x", SpanKind::Internal, Some(root_ctx));
        assert_eq!(quiet.context().trace_id, root_ctx.trace_id);
    }
}
