//! A goal's context (`AolTask`'s `context_json`): everything a task carries besides its
//! instruction, from whoever sent it to the engine and from the engine to the expert.

use serde_json::{Map, Value};

use super::ProtocolError;
use crate::core::ids::EventId;
use crate::core::trace::TRACEPARENT;

/// What a goal carries besides its instruction. Every field is optional: each sender sets
/// the ones it knows. On the wire it is a JSON object with these keys (absent when `None` or
/// empty), in sorted order, plus [`TaskContext::extra`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskContext {
    /// The event that caused the task (the chat turn that started it, the delegating task's
    /// cause): the cause of every event the task writes.
    pub cause: Option<EventId>,
    /// The chat turns the inbox batched into this task, oldest first: the engine leaves them
    /// out of the conversation it recalls, since the instruction already holds them.
    pub turns: Vec<EventId>,
    /// The inbox channel the messages came in on (`terminal`, `webhook`, …).
    pub source: Option<String>,
    /// Where the reply goes on that channel (a chat id, a callback).
    pub destination: Option<String>,
    /// The task's owner: who may answer its questions and correct it.
    pub user_id: Option<String>,
    /// The expert (`mesh/role`) that delegated this task; the engine lets it reach only that
    /// expert's peers.
    pub delegated_by: Option<String>,
    /// The caller's span (W3C `traceparent`). A value that is not a valid traceparent is
    /// ignored where it is read, as the W3C rule says, so it stays text here.
    pub traceparent: Option<String>,
    /// The conversation so far, as the engine recalled it for the expert.
    pub memory: Option<String>,
    /// The durable job that asked (through the jobs gateway): its answer goes back to the
    /// job, and only such tasks perform structured tasks.
    pub job: Option<String>,
    /// The mesh of that job.
    pub mesh: Option<String>,
    /// The job's signal the answer is sent back on.
    pub signal: Option<String>,
    /// This task is a fork of a recorded one (`iron task fork`): it starts from that task's
    /// conversation instead of a wake.
    pub fork: Option<Fork>,
    /// Anything else the sender put (`iron task send --context`), carried along unread.
    pub extra: Map<String, Value>,
}

/// Where a forked task starts: the conversation of a recorded task as it stood before one of
/// its model calls, and what the fork changes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fork {
    /// The task it is forked from.
    pub from: String,
    /// The model call (1-based) the fork makes first, live; the ones before it are the record's.
    pub at: u32,
    /// The conversation sent to that call (as the models layer's messages, the task's
    /// correction marker written as the record writes it), with the fork's change applied.
    pub prefix: Vec<Value>,
    /// Another model than the expert's, for the live part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The keys [`TaskContext`] knows; everything else is [`TaskContext::extra`].
const KNOWN: &[&str] = &[
    "cause",
    "turns",
    "source",
    "destination",
    "user_id",
    "delegated_by",
    TRACEPARENT,
    "memory",
    "job",
    "mesh",
    "signal",
    "fork",
];

impl TaskContext {
    /// Reads a goal's `context_json`. Empty text is an empty context; anything that is not a
    /// JSON object, or a known field of the wrong type (an id that is not an event id), is
    /// refused with why.
    pub fn parse(json: &str) -> Result<TaskContext, ProtocolError> {
        if json.trim().is_empty() {
            return Ok(TaskContext::default());
        }
        let bad = |what: String| ProtocolError::Context(what);
        let map: Map<String, Value> = match serde_json::from_str(json) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(bad("it is not a JSON object".into())),
            Err(e) => return Err(bad(format!("it is not JSON ({e})"))),
        };
        let text = |key: &str| -> Result<Option<String>, ProtocolError> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(bad(format!("`{key}` is {other}, not text"))),
            }
        };
        let event_id = |key: &str, s: &str| {
            EventId::parse(s).map_err(|e| bad(format!("`{key}` {s:?} is not an event id: {e}")))
        };
        let cause = text("cause")?.map(|c| event_id("cause", &c)).transpose()?;
        let turns = match map.get("turns") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|t| match t {
                    Value::String(s) => event_id("turns", s),
                    other => Err(bad(format!("`turns` holds {other}, not an event id"))),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(bad(format!("`turns` is {other}, not a list"))),
        };
        Ok(TaskContext {
            cause,
            turns,
            source: text("source")?,
            destination: text("destination")?,
            user_id: text("user_id")?,
            delegated_by: text("delegated_by")?,
            traceparent: text(TRACEPARENT)?,
            memory: text("memory")?,
            job: text("job")?,
            mesh: text("mesh")?,
            signal: text("signal")?,
            fork: match map.get("fork") {
                None | Some(Value::Null) => None,
                Some(v) => Some(
                    serde_json::from_value(v.clone())
                        .map_err(|e| bad(format!("`fork` is not a fork: {e}")))?,
                ),
            },
            extra: map
                .iter()
                .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
    }

    /// The context as `context_json`: a JSON object, keys sorted.
    pub fn to_json(&self) -> String {
        let mut map = self.extra.clone();
        let mut put = |key: &str, value: &Option<String>| {
            if let Some(v) = value {
                map.insert(key.to_string(), Value::String(v.clone()));
            }
        };
        put("source", &self.source);
        put("destination", &self.destination);
        put("user_id", &self.user_id);
        put("delegated_by", &self.delegated_by);
        put(TRACEPARENT, &self.traceparent);
        put("memory", &self.memory);
        put("job", &self.job);
        put("mesh", &self.mesh);
        put("signal", &self.signal);
        if let Some(cause) = &self.cause {
            map.insert("cause".into(), Value::String(cause.to_string()));
        }
        if let Some(fork) = &self.fork {
            map.insert(
                "fork".into(),
                serde_json::to_value(fork).expect("a fork serialises"),
            );
        }
        if !self.turns.is_empty() {
            map.insert(
                "turns".into(),
                self.turns
                    .iter()
                    .map(|t| Value::String(t.to_string()))
                    .collect(),
            );
        }
        // serde_json's map keeps its keys sorted, whatever the order of insertion.
        Value::Object(map).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_is_read_and_written_back_unchanged() {
        let turn = EventId::capture().to_string();
        let json = format!(
            r#"{{"cause":"{turn}","destination":"chat-1","priority":"high","source":"terminal","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","turns":["{turn}"],"user_id":"ana"}}"#
        );
        let context = TaskContext::parse(&json).unwrap();
        assert_eq!(context.user_id.as_deref(), Some("ana"));
        assert_eq!(context.turns.len(), 1);
        assert_eq!(context.extra["priority"], "high");
        assert_eq!(context.to_json(), json);
        assert_eq!(TaskContext::parse("").unwrap(), TaskContext::default());
        assert_eq!(TaskContext::default().to_json(), "{}");
    }

    #[test]
    fn a_fork_is_carried_whole() {
        let context = TaskContext {
            fork: Some(Fork {
                from: "t-1".into(),
                at: 2,
                prefix: vec![serde_json::json!({"role": "user", "content": "hi"})],
                model: Some("strong".into()),
            }),
            ..TaskContext::default()
        };
        let json = context.to_json();
        assert!(
            json.starts_with(r#"{"fork":{"at":2,"from":"t-1","model":"strong","#),
            "{json}"
        );
        assert_eq!(TaskContext::parse(&json).unwrap(), context);
    }

    #[test]
    fn a_malformed_context_is_refused_with_its_reason() {
        for (json, says) in [
            ("[1]", "not a JSON object"),
            ("{", "not JSON"),
            (r#"{"cause":""}"#, "`cause` \"\" is not an event id"),
            (r#"{"user_id":7}"#, "`user_id` is 7, not text"),
            (r#"{"turns":"a"}"#, "`turns` is \"a\", not a list"),
            (r#"{"turns":[1]}"#, "`turns` holds 1"),
            (r#"{"fork":{"from":"t"}}"#, "`fork` is not a fork"),
        ] {
            let e = TaskContext::parse(json).unwrap_err().to_string();
            assert!(e.contains(says), "{json}: {e}");
        }
    }
}
