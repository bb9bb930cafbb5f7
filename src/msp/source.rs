//! The source node `/iron/msp/<mesh>/<source>`: runs the command `AEM.md` declares for the
//! source, keeps the newest state it printed, serves it as `<node>/state`
//! (`iron/srv/SourceState`), and keeps itself listed in the KV phone book while active.
//!
//! `configure` reads the catalog entry (an unregistered source fails closed) and expands the
//! declared environment references (a missing variable fails with its name); `activate` starts
//! the command and lists the node; `deactivate` stops both and removes the listing. A command
//! that exits is started again after [`RESTART_BACKOFF`]; meanwhile the last state is served
//! with the reason it may be stale. An `iron msp feeds` command's feed list is read at
//! `configure`: a line that is not a feed fails the node with the list's file and line.
//!
//! When a state line reports its inputs' health, the node tells a person once per change (a
//! warning naming the input, where it is listed and why; a note when it recovers), records the
//! health on the log (`source_health`, which the console shows), and when every input fails
//! it answers readers that it has nothing to show and says so on `/rosout`.

use crate::protocol::Payload;
use crate::protocol::payload::SourceHealth;
use crate::spine::control::lifecycle::RunError;
use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::{
    MspError, changes, feeds,
    health::{self, Change, FeedHealth},
    phone_book_key, split_name,
};
use crate::{
    aem::{Catalog, SourceEntry},
    core::{config::Config, envelope::Envelope, event_kind::EventKind},
    interfaces::{SourceState, SourceStateRequest, SourceStateResponse, rosout::Log},
    memory::emit,
    spine::{
        control::{
            ControlError,
            lifecycle::{CallbackError, ManagedNode, NodeContext, rosout::Rosout},
            serve::{answer, serve_service},
        },
        durable::{
            AnyLog,
            registry::{self, Listing},
        },
    },
    tools::env::{EnvMap, expand},
};

/// Wait before starting a command that exited.
pub const RESTART_BACKOFF: Duration = Duration::from_secs(5);
/// How often the listing is written again (well inside the phone book's 60 s TTL).
pub const RELIST_EVERY: Duration = Duration::from_secs(20);

/// What the source shows now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shown {
    /// The composed state.
    pub text: String,
    /// Items in it.
    pub items: u32,
    /// When it was last replaced (Unix ms; 0 = never).
    pub updated_at_ms: i64,
    /// What went wrong last, if anything.
    pub error: String,
    /// Structured items, each a JSON object with a string `id` (others are dropped).
    pub records: Vec<serde_json::Value>,
    /// Each input's health, as the command last reported it.
    pub health: Vec<FeedHealth>,
    /// Every input fails: there is nothing to show.
    pub failing: bool,
}

/// One line of the source protocol.
#[derive(Debug, Deserialize)]
struct Line {
    text: String,
    /// Absent: one item per non-empty line of `text`.
    #[serde(default)]
    items: Option<u32>,
    #[serde(default)]
    error: String,
    #[serde(default)]
    records: Vec<serde_json::Value>,
    #[serde(default)]
    health: Vec<FeedHealth>,
    #[serde(default)]
    failing: bool,
}

impl Shown {
    /// Applies one stdout line of the command; `false` when it is not a protocol line.
    pub fn apply(&mut self, line: &str, now_ms: i64) -> bool {
        match serde_json::from_str::<Line>(line) {
            Ok(l) => {
                *self = Shown {
                    items: l.items.unwrap_or_else(|| {
                        l.text.lines().filter(|x| !x.trim().is_empty()).count() as u32
                    }),
                    text: l.text,
                    updated_at_ms: now_ms,
                    error: l.error,
                    records: l
                        .records
                        .into_iter()
                        .filter(|r| changes::record_id(r).is_some())
                        .collect(),
                    health: l.health,
                    failing: l.failing,
                };
                true
            }
            Err(_) => false,
        }
    }

    /// The service's answer, cut to `max_chars` (0: whole). A source whose every input fails
    /// answers `ok: false` with why: it has nothing to show, which is not the same as quiet.
    pub fn response(&self, max_chars: u32) -> SourceStateResponse {
        if self.updated_at_ms == 0 || self.failing {
            return SourceStateResponse {
                ok: false,
                text: String::new(),
                items: 0,
                updated_at_ms: self.updated_at_ms,
                error: match (self.error.is_empty(), self.failing) {
                    (false, _) => self.error.clone(),
                    (true, true) => "every input of the source fails".into(),
                    (true, false) => "the source has not produced a state yet".into(),
                },
            };
        }
        let text = if max_chars > 0 && self.text.chars().count() > max_chars as usize {
            let mut cut: String = self.text.chars().take(max_chars as usize).collect();
            cut.push_str("\n[… cut]");
            cut
        } else {
            self.text.clone()
        };
        SourceStateResponse {
            ok: true,
            text,
            items: self.items,
            updated_at_ms: self.updated_at_ms,
            error: self.error.clone(),
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The source node for `<mesh>/<source>`.
#[derive(Debug, Clone)]
pub struct SourceNode {
    /// `<mesh>/<source>`.
    pub source: String,
}

/// What `configure` built.
pub struct SourceDeps {
    kv: AnyLog,
    tenant: String,
    /// Ids of the records last written to the log (`None`: nothing written by this process).
    recorded: tokio::sync::Mutex<Option<BTreeSet<String>>>,
    mesh: String,
    name: String,
    command: Vec<String>,
    env: EnvMap,
    base: PathBuf,
    shown: Arc<Mutex<Shown>>,
    /// The health last reported to a person.
    reported: tokio::sync::Mutex<Reported>,
    rosout: Rosout,
    ctx: NodeContext,
}

/// What a person was last told about the source's inputs.
struct Reported {
    health: Vec<FeedHealth>,
    failing: bool,
    /// The last change is not on the log yet (writing it failed), or nothing was written
    /// yet: write it with the next report.
    unlogged: bool,
}

impl Default for Reported {
    fn default() -> Self {
        // The first report goes on the log whatever it says, so the health of a source whose
        // inputs all work is known too.
        Reported {
            health: Vec::new(),
            failing: false,
            unlogged: true,
        }
    }
}

/// The source's catalog entry and its environment, expanded from `env`.
pub fn resolve(
    catalog: &Catalog,
    source: &str,
    env: &EnvMap,
) -> Result<(SourceEntry, EnvMap), MspError> {
    let (mesh, name) = split_name(source)?;
    let unknown = |known: Vec<&String>| MspError::UnknownSource {
        mesh: mesh.into(),
        name: name.into(),
        known: if known.is_empty() {
            String::new()
        } else {
            format!(
                "; registered: {}",
                known
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    };
    let m = catalog.mesh(mesh).ok_or_else(|| unknown(Vec::new()))?;
    let entry = m
        .sources
        .get(name)
        .ok_or_else(|| unknown(m.sources.keys().collect()))?;
    let mut expanded = BTreeMap::new();
    for (var, value) in &entry.env {
        let v = expand(value, env).map_err(|error| MspError::Env {
            source_name: source.to_string(),
            var: var.clone(),
            error,
        })?;
        expanded.insert(var.clone(), v);
    }
    Ok((entry.clone(), expanded))
}

impl ManagedNode for SourceNode {
    type Deps = SourceDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<SourceDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let catalog = crate::aem::read_state_catalog(&config)
            .map_err(|e| CallbackError::refused_by(MspError::Catalog(e.to_string())))?;
        let (entry, env) = resolve(&catalog, &self.source, &std::env::vars().collect())
            .map_err(CallbackError::refused_by)?;
        if entry.command.is_empty() {
            return Err(CallbackError::refused(format!(
                "source {} declares no command",
                self.source
            )));
        }
        let base = std::env::current_dir().map_err(CallbackError::refused_by)?;
        // An `iron msp feeds` source whose list has a line that is not a feed does not start:
        // the reason names the list's file and line.
        if let Some(list) = feeds::list_of_command(&entry.command, &env, &base) {
            let list = list
                .map_err(|e| CallbackError::refused_while(format!("source {}", self.source), e))?;
            feeds::read_list(&list)
                .map_err(|e| CallbackError::refused_while(format!("source {}", self.source), e))?;
        }
        let (mesh, name) = split_name(&self.source).map_err(CallbackError::refused_by)?;
        let kv = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let rosout = Rosout::new(&ctx.node, &ctx.fqn()).map_err(CallbackError::refused_by)?;
        Ok(SourceDeps {
            kv,
            tenant: config.tenant.clone(),
            recorded: tokio::sync::Mutex::new(None),
            mesh: mesh.to_string(),
            name: name.to_string(),
            command: entry.command.clone(),
            env,
            base,
            shown: Arc::default(),
            reported: tokio::sync::Mutex::default(),
            rosout,
            ctx: ctx.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<SourceDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let service = format!("{}/state", deps.ctx.fqn());
        serve_state(&deps.ctx, &service, deps.shown.clone(), shutdown.clone())
            .map_err(|e| RunError::new("serving the source's state", e))?;
        let runner = tokio::spawn(run_command(deps.clone(), shutdown.clone()));
        let key = phone_book_key(&deps.mesh, &deps.name);
        let listing = Listing {
            endpoint: service.clone(),
            owner: deps.ctx.fqn(),
        };
        info!(source = %self.source, %service, "serving; listed as {key}");
        loop {
            if let Err(e) = registry::register(&deps.kv, &key, &listing).await {
                warn!(source = %self.source, "could not list the source in the phone book: {e}");
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(RELIST_EVERY) => {}
            }
        }
        if let Err(e) = registry::unregister(&deps.kv, &key).await {
            warn!(source = %self.source, "could not remove the phone-book listing: {e}");
        }
        let _ = runner.await;
        Ok(())
    }
}

impl SourceDeps {
    /// Tells a person what changed in the inputs' health since the last report: a warning per
    /// input that starts failing (or is cut), a note per input that recovers, and on `/rosout`
    /// when every input fails or one reads again; the new health goes on the log.
    async fn report_health(&self, health: &[FeedHealth], failing: bool) {
        let mut last = self.reported.lock().await;
        let who = format!("{}/{}", self.mesh, self.name);
        let told = health::changes(&last.health, health);
        for change in &told {
            match change {
                Change::Failing(h) => {
                    warn!("{who}: feed {} ({}) fails: {}", h.feed, h.at, h.reason)
                }
                Change::Truncated(h) => warn!(
                    "{who}: feed {} ({}) is truncated: {}; {} item(s) read",
                    h.feed, h.at, h.reason, h.items
                ),
                Change::Recovered(h) => info!(
                    "{who}: feed {} ({}) recovered: {} item(s) read",
                    h.feed, h.at, h.items
                ),
            }
        }
        if failing != last.failing {
            if failing {
                let msg = format!(
                    "every input of source {who} fails; it has nothing to show: {}",
                    health
                        .iter()
                        .map(|h| format!("{} ({}): {}", h.feed, h.at, h.reason))
                        .collect::<Vec<_>>()
                        .join("; ")
                );
                error!("{msg}");
                self.rosout.log(Log::ERROR, "report_health", &msg).await;
            } else {
                let read = health
                    .iter()
                    .filter(|h| h.status != health::Status::Failing)
                    .count();
                let msg = format!(
                    "source {who} reads again: {read} of {} input(s)",
                    health.len()
                );
                info!("{msg}");
                self.rosout.log(Log::INFO, "report_health", &msg).await;
            }
        }
        if health.is_empty() || (told.is_empty() && failing == last.failing && !last.unlogged) {
            return;
        }
        last.health = health.to_vec();
        last.failing = failing;
        let envelope = Envelope::new(
            self.tenant.clone(),
            ["perception", self.mesh.as_str(), self.name.as_str()],
            format!("msp/{}/{}", self.mesh, self.name),
            SourceHealth::KIND,
            SourceHealth {
                mesh: self.mesh.clone(),
                source: self.name.clone(),
                failing,
                feeds: health.to_vec(),
            }
            .to_value(),
        );
        last.unlogged = match emit(&self.kv, &envelope).await {
            Ok(_) => false,
            Err(e) => {
                warn!(source = %self.name, "could not record the inputs' health: {e}");
                true
            }
        };
    }

    /// Writes `source_changed` when the set of record ids differs from the last one written.
    /// A failed write is retried with the next state line (the ids are only remembered once
    /// every part is on the log).
    async fn record_changes(&self, records: &[serde_json::Value]) {
        let mut recorded = self.recorded.lock().await;
        if records.is_empty() && recorded.is_none() {
            return;
        }
        let Some(change) = changes::change(recorded.as_ref(), records) else {
            return;
        };
        for (id, payload) in changes::payloads(&self.mesh, &self.name, &change) {
            let envelope = Envelope::new(
                self.tenant.clone(),
                ["perception", self.mesh.as_str(), self.name.as_str()],
                format!("msp/{}/{}", self.mesh, self.name),
                EventKind::SourceChanged,
                payload,
            )
            .with_id(id);
            if let Err(e) = emit(&self.kv, &envelope).await {
                warn!(source = %self.name, "could not record the change of items: {e}");
                return;
            }
        }
        info!(
            source = %self.name,
            shown = change.current.len(),
            new = change.new.len(),
            "items changed"
        );
        *recorded = Some(change.current.into_iter().collect());
    }
}

/// Serves `shown` as `iron/srv/SourceState` at `service` until `stop`.
fn serve_state(
    ctx: &NodeContext,
    service: &str,
    shown: Arc<Mutex<Shown>>,
    stop: CancellationToken,
) -> Result<(), ControlError> {
    let what = service.to_string();
    serve_service::<SourceState, _, _>(&ctx.node, service, stop, move |req| {
        let (shown, what) = (shown.clone(), what.clone());
        async move {
            let request: &SourceStateRequest = req.message();
            let response = shown
                .lock()
                .expect("source state lock")
                .response(request.max_chars);
            tracing::debug!(service = %what, reader = %request.reader, "state read");
            answer(req, &response, &what).await;
        }
    })
}

/// Runs the command until `stop`, restarting it when it exits; each protocol line replaces
/// the state.
async fn run_command(deps: Arc<SourceDeps>, stop: CancellationToken) {
    let program = crate::core::exe::beside_current(&deps.command[0]);
    loop {
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&deps.command[1..])
            .envs(&deps.env)
            .current_dir(&deps.base)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        // The command dies with this node, even when the node is killed outright.
        crate::core::exe::die_with_parent(&mut cmd, false);
        let why = match cmd.spawn() {
            Err(e) => format!("could not start {}: {e}", program.display()),
            Ok(mut child) => {
                let stdout = child.stdout.take().expect("stdout is piped");
                let mut lines = BufReader::new(stdout).lines();
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => {
                            let _ = child.kill().await;
                            return;
                        }
                        line = lines.next_line() => match line {
                            Ok(Some(line)) => {
                                let applied = {
                                    let mut shown = deps.shown.lock().expect("source state lock");
                                    shown.apply(&line, now_ms()).then(|| {
                                        (shown.records.clone(), shown.health.clone(), shown.failing)
                                    })
                                };
                                match applied {
                                    Some((records, health, failing)) => {
                                        deps.report_health(&health, failing).await;
                                        // Every input failing is not every item gone: the
                                        // items last recorded stand until an input reads.
                                        if !failing {
                                            deps.record_changes(&records).await;
                                        }
                                    }
                                    None if !line.trim().is_empty() => {
                                        warn!(source = %deps.name, "ignored a line that is not a state object: {line}");
                                    }
                                    None => {}
                                }
                            }
                            Ok(None) | Err(_) => break,
                        }
                    }
                }
                match child.wait().await {
                    Ok(status) => format!("the source command exited ({status})"),
                    Err(e) => format!("the source command was lost: {e}"),
                }
            }
        };
        warn!(source = %deps.name, "{why}; starting it again in {RESTART_BACKOFF:?}");
        deps.shown.lock().expect("source state lock").error = why;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(RESTART_BACKOFF) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_line_replaces_the_state_and_other_lines_do_not() {
        let mut s = Shown::default();
        assert!(!s.response(0).ok);
        assert!(!s.apply("starting up", 5));
        assert!(s.apply(r#"{"text": "- a\n- b\n"}"#, 7));
        assert_eq!((s.items, s.updated_at_ms), (2, 7));
        let r = s.response(0);
        assert!(r.ok && r.text == "- a\n- b\n" && r.error.is_empty());
        assert!(s.apply(
            r#"{"text": "one", "items": 1, "error": "feed x: HTTP 503"}"#,
            9
        ));
        assert_eq!(s.response(0).error, "feed x: HTTP 503");
        assert_eq!(s.response(2).text, "on\n[… cut]");
        assert!(s.apply(r#"{"text": "(no items)\nFeeds: 1 listed", "items": 0}"#, 11));
        assert_eq!(s.items, 0, "a count given is the count, zero included");
    }

    #[test]
    fn a_source_whose_every_input_fails_has_nothing_to_show() {
        let mut s = Shown::default();
        let line = serde_json::json!({
            "text": "(no items)\n",
            "error": "every feed fails (1 listed); nothing can be shown:\nfailing · a.xml (l.txt:1): not found",
            "health": [{"feed": "a.xml", "at": "l.txt:1", "status": "failing", "reason": "not found", "since_ms": 5}],
            "failing": true,
        });
        assert!(s.apply(&line.to_string(), 9));
        assert_eq!(s.health[0].status, health::Status::Failing);
        let r = s.response(0);
        assert!(!r.ok && r.text.is_empty(), "{r:?}");
        assert!(
            r.error.contains("a.xml (l.txt:1): not found"),
            "{}",
            r.error
        );
        assert_eq!(r.updated_at_ms, 9);
    }
}
