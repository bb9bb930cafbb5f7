//! The inbox as a managed node.

use crate::protocol::payload::{ChatTurn, DeadLetter, ReplyDelivered, TaskJudged, TaskRejected};
use crate::protocol::{Payload, TaskContext};
use crate::spine::control::lifecycle::RunError;
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::store::{Arrival, InFlight, Queued, Store, StoreError};
use crate::core::backoff::Backoff;
use crate::core::durable::EventLog;
use crate::{
    cognition::engine::Rejection,
    core::{
        config::Config,
        envelope::{Envelope, now_ms},
        event_kind::EventKind,
        ids::EventId,
    },
    interfaces::{AolTask, AolTaskGoal, InboxMessage, SessionControl},
    memory::emit,
    spine::{
        control::{
            ControlError,
            action::{ActionClient, GoalId, GoalStatus, ServerRefusal},
            lifecycle::{CallbackError, ManagedNode, NodeContext},
        },
        durable::AnyLog,
    },
};

/// At most this many arrived messages are committed in one transaction.
const MAX_BATCH: usize = 1024;
/// Most tasks handed to the engine and not yet ended (the engine runs as many at once at
/// depth 0): the rest wait in the queue, where nothing is lost, instead of in an engine that
/// cannot run them yet.
const MAX_IN_FLIGHT: usize = crate::cognition::delegation::MAX_CONCURRENT;
/// How long a task is followed before the log decides whether it ended.
const TASK_BOUND: Duration = Duration::from_secs(2 * 3600);
/// How long a task found in flight at start is followed before the log decides.
const RESTART_BOUND: Duration = Duration::from_secs(10);

/// How the inbox behaves.
#[derive(Debug, Clone)]
pub struct InboxOptions {
    /// The engine's action.
    pub engine_action: String,
    /// Messages of one session arriving within this window are merged into one turn (0: off).
    pub merge_window: Duration,
    /// Bound on one hand-over attempt.
    pub send_timeout: Duration,
}

impl Default for InboxOptions {
    fn default() -> Self {
        Self {
            engine_action: "/iron/engine/task".into(),
            merge_window: Duration::ZERO,
            send_timeout: Duration::from_secs(3),
        }
    }
}

/// Why a turn was not written.
#[derive(Debug, thiserror::Error)]
enum TurnError {
    /// It never can be: it was set aside.
    #[error("set aside: {0}")]
    Unwritable(String),
    /// The log did not take it this time.
    #[error("{0}")]
    Log(String),
}

/// Why a message was not handed to the engine this time (it stays queued).
#[derive(Debug, thiserror::Error)]
enum DispatchError {
    #[error("the queue: {0}")]
    Store(#[from] StoreError),
    #[error("writing the turn: {0}")]
    Turn(#[from] TurnError),
    #[error("{0}")]
    Engine(#[from] ControlError),
    #[error("a queued turn's id: {0}")]
    Id(#[from] crate::core::ids::InvalidEventId),
}

/// The inbox node.
#[derive(Debug, Default)]
pub struct InboxNode {
    pub options: InboxOptions,
}

/// What `configure` opened.
pub struct InboxDeps {
    config: Config,
    log: AnyLog,
    store: Mutex<Store>,
    engine: ActionClient<AolTask>,
    ctx: NodeContext,
}

impl ManagedNode for InboxNode {
    type Deps = InboxDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<InboxDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let path = config.state_path(std::path::Path::new(super::store::STORE_FILE));
        let store =
            Store::open(&path).map_err(|e| CallbackError::refused_while(path.display(), e))?;
        let engine = ActionClient::<AolTask>::new(&ctx.node, &self.options.engine_action)
            .and_then(|c| c.with_rejections(&ctx.node))
            .map_err(CallbackError::broken_by)?;
        let pending = store.pending().unwrap_or(0);
        info!(
            "inbox store {} ({pending} message(s) waiting)",
            path.display()
        );
        Ok(InboxDeps {
            config,
            log,
            store: Mutex::new(store),
            engine,
            ctx: ctx.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<InboxDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let (msg_tx, mut msg_rx) = mpsc::unbounded_channel::<InboxMessage>();
        let (ctl_tx, mut ctl_rx) = mpsc::unbounded_channel::<SessionControl>();
        let _inbound = deps
            .ctx
            .node
            .create_sub::<InboxMessage>("/iron/raw_inbox")
            .build_with_callback(move |m: InboxMessage| {
                let _ = msg_tx.send(m);
            })
            .map_err(|e| RunError::new("subscribing /iron/raw_inbox", e))?;
        let _control = deps
            .ctx
            .node
            .create_sub::<SessionControl>("/iron/session_control")
            .build_with_callback(move |m: SessionControl| {
                let _ = ctl_tx.send(m);
            })
            .map_err(|e| RunError::new("subscribing /iron/session_control", e))?;

        // Accepting (here) never waits on the engine: hand-over runs in its own task.
        let wake = Arc::new(tokio::sync::Notify::new());
        let dispatcher = tokio::spawn(dispatch_loop(
            deps.clone(),
            self.options.clone(),
            wake.clone(),
            shutdown.clone(),
        ));
        // Nor does capture: every accepted turn goes to the log at once, engine up or down.
        let captured = Arc::new(tokio::sync::Notify::new());
        let capture = tokio::spawn(capture_loop(
            deps.clone(),
            captured.clone(),
            shutdown.clone(),
        ));
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                Some(m) = msg_rx.recv() => {
                    // Everything already waiting goes into the same transaction: one sync to
                    // disk per batch instead of per message, in arrival order.
                    let mut batch = vec![m];
                    while batch.len() < MAX_BATCH {
                        match msg_rx.try_recv() {
                            Ok(m) => batch.push(m),
                            Err(_) => break,
                        }
                    }
                    if !deps.accept_until_kept(batch, &shutdown).await {
                        break;
                    }
                    wake.notify_one();
                    captured.notify_one();
                }
                Some(c) = ctl_rx.recv() => deps.control(c),
            }
        }
        let _ = dispatcher.await;
        let _ = capture.await;
        Ok(())
    }
}

/// Writes accepted turns to the log, oldest first, as soon as they are queued (rule 2: capture
/// is immediate and never waits on the engine). The dispatcher writes any turn still missing
/// before it hands it over; a turn written twice has the same id and is stored once.
async fn capture_loop(
    deps: Arc<InboxDeps>,
    wake: Arc<tokio::sync::Notify>,
    shutdown: CancellationToken,
) {
    loop {
        let waiting = deps.store.lock().expect("store lock").unemitted(256);
        let mut more = false;
        match waiting {
            Ok(rows) => {
                more = rows.len() == 256;
                for q in &rows {
                    match deps.emit_turn(q).await {
                        Ok(()) | Err(TurnError::Unwritable(_)) => {}
                        Err(e) => {
                            warn!("turns wait to be written to the log: {e}");
                            more = false;
                            break;
                        }
                    }
                }
            }
            Err(e) => warn!("reading the queue for the log: {e}"),
        }
        if more {
            continue;
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// Hands queued messages to the engine, oldest first, backing off while it is unavailable.
async fn dispatch_loop(
    deps: Arc<InboxDeps>,
    options: InboxOptions,
    wake: Arc<tokio::sync::Notify>,
    shutdown: CancellationToken,
) {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut engine_down_logged = false;
    // Tasks handed over before a restart: followed to their end, or offered again.
    match deps.store.lock().expect("store lock").in_flight() {
        Ok(tasks) => {
            for task in tasks {
                tokio::spawn(deps.clone().follow(task, RESTART_BOUND, wake.clone()));
            }
        }
        Err(e) => warn!("reading the tasks in flight: {e}"),
    }
    loop {
        let wait = match deps.dispatch_one(&options, &wake).await {
            Ok(true) => {
                backoff.reset();
                if engine_down_logged {
                    info!("engine reachable again; draining the queue");
                    engine_down_logged = false;
                }
                Duration::ZERO
            }
            Ok(false) => Duration::from_millis(200),
            Err(why) => {
                if !engine_down_logged {
                    let pending = deps
                        .store
                        .lock()
                        .expect("store lock")
                        .pending()
                        .unwrap_or(0);
                    warn!(
                        "cannot hand over to the engine ({why}); {pending} message(s) queued, retrying"
                    );
                    engine_down_logged = true;
                }
                backoff.fail()
            }
        };
        if wait.is_zero() {
            if shutdown.is_cancelled() {
                return;
            }
            continue;
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = wake.notified(), if !engine_down_logged => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

impl InboxDeps {
    /// [`accept`](Self::accept), retried with backoff while the queue cannot take the batch
    /// (a locked or full disk): the batch is kept, and the messages arriving meanwhile wait
    /// behind it. `false` when told to stop first (the batch was never acknowledged).
    async fn accept_until_kept(
        &self,
        batch: Vec<InboxMessage>,
        shutdown: &CancellationToken,
    ) -> bool {
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
        let mut said = false;
        loop {
            match self.accept(batch.clone()) {
                Ok(()) => {
                    if said {
                        info!("the queue took the {} waiting message(s)", batch.len());
                    }
                    return true;
                }
                Err(e) if !said => {
                    warn!(
                        "the queue cannot take {} message(s) ({e}); keeping them and retrying",
                        batch.len()
                    );
                    said = true;
                }
                Err(_) => {}
            }
            tokio::select! {
                _ = shutdown.cancelled() => {
                    warn!("stopping with {} message(s) the queue never took", batch.len());
                    return false;
                }
                _ = tokio::time::sleep(backoff.fail()) => {}
            }
        }
    }

    /// Writes arriving messages to the queue, in one transaction: the only thing that must
    /// happen before the inbox forgets about the wire messages. Each is acknowledged (its
    /// `queued` line) and becomes visible to the dispatcher only once the batch is committed.
    fn accept(&self, batch: Vec<InboxMessage>) -> Result<(), StoreError> {
        let now = now_ms() as i64;
        let arrivals = batch
            .into_iter()
            .map(|m| {
                let received =
                    i64::from(m.received.sec) * 1000 + i64::from(m.received.nanosec / 1_000_000);
                Arrival {
                    source: m.source,
                    user_id: m.user_id,
                    destination: m.destination,
                    text: m.text,
                    attachments_json: if m.attachments_json.is_empty() {
                        "[]".into()
                    } else {
                        m.attachments_json
                    },
                    received_ms: if received > 0 { received } else { now },
                    event_id: EventId::capture().to_string(),
                }
            })
            .collect();
        let queued = self
            .store
            .lock()
            .expect("store lock")
            .accept(arrivals, now)?;
        for q in &queued {
            info!(session = %q.session_id, seq = q.seq, "queued a message from {}:{}", q.source, q.user_id);
        }
        Ok(())
    }

    fn control(&self, c: SessionControl) {
        let expert = match c.op {
            SessionControl::OP_STICK if c.expert.is_empty() => {
                warn!(session = %c.session_id, "ignored session_control sticking to no expert");
                return;
            }
            SessionControl::OP_STICK => Some(c.expert.as_str()),
            SessionControl::OP_UNSTICK => None,
            other => {
                warn!("ignored session_control with unknown op {other}");
                return;
            }
        };
        match self
            .store
            .lock()
            .expect("store lock")
            .stick(&c.session_id, expert, now_ms() as i64)
        {
            Ok(true) => {
                info!(session = %c.session_id, "session {}", expert.map_or("unstuck".to_string(), |e| format!("stuck to {e}")))
            }
            Ok(false) => warn!(session = %c.session_id, "session_control for an unknown session"),
            Err(e) => warn!("session_control: {e}"),
        }
    }

    /// Hands the oldest waiting message (merged with its session's followers inside the merge
    /// window) to the engine, and follows the task to its end. `Ok(false)`: nothing to do yet
    /// (nothing waits, or [`MAX_IN_FLIGHT`] tasks are already in the engine's hands).
    async fn dispatch_one(
        self: &Arc<Self>,
        options: &InboxOptions,
        wake: &Arc<tokio::sync::Notify>,
    ) -> Result<bool, DispatchError> {
        let merge_ms = options.merge_window.as_millis() as i64;
        let batch = {
            let store = self.store.lock().expect("store lock");
            if store.in_flight()?.len() >= MAX_IN_FLIGHT {
                return Ok(false);
            }
            store.next_batch(merge_ms)?
        };
        let Some(first) = batch.first().cloned() else {
            return Ok(false);
        };
        if merge_ms > 0 && (now_ms() as i64) - first.received_ms < merge_ms {
            return Ok(false);
        }
        for q in batch.iter().filter(|q| !q.emitted) {
            match self.emit_turn(q).await {
                Ok(()) => {}
                // Set aside: the next call takes the messages behind it.
                Err(TurnError::Unwritable(_)) => return Ok(true),
                Err(e) => return Err(e.into()),
            }
        }
        let stuck = self
            .store
            .lock()
            .expect("store lock")
            .stuck_expert(&first.session_id)?;
        let stuck_to = stuck.is_some();
        let task_id = EventId::computed(&["inbox", &first.event_id]).to_string();
        // Queued turns were given their ids by this inbox; one that does not read as an id
        // means the queue's file was changed under it.
        let turns = batch
            .iter()
            .map(|q| EventId::parse(&q.event_id))
            .collect::<Result<Vec<_>, _>>()?;
        let first_turn = turns[0].clone();
        let goal = AolTaskGoal {
            task_id: task_id.clone(),
            session_id: first.session_id.clone(),
            domain: stuck.unwrap_or_default(),
            instruction: batch
                .iter()
                .map(|q| q.text.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            depth: 0,
            parent_task_id: String::new(),
            context_json: TaskContext {
                cause: Some(first_turn),
                turns,
                source: Some(first.source.clone()),
                user_id: Some(first.user_id.clone()),
                destination: Some(first.destination.clone()),
                ..TaskContext::default()
            }
            .to_json(),
        };
        let seqs: Vec<i64> = batch.iter().map(|q| q.seq).collect();
        let session_id = goal.session_id.clone();
        let sent = match self.engine.send(goal, options.send_timeout).await {
            Ok(sent) => sent,
            Err(e) => {
                // A session stuck to an expert that cannot take goals (never existed, gone
                // from the catalog, its mesh parked) is unstuck instead: its messages are not
                // at fault, and routing offers them again to whichever expert fits.
                if let ControlError::Rejected {
                    code: Some(code), ..
                } = &e
                    && stuck_to
                    && Rejection::is_about_domain(code)
                {
                    warn!(
                        session = %session_id,
                        "the engine refused the expert the session is stuck to ({e}); unstuck, the message is routed instead"
                    );
                    self.store.lock().expect("store lock").stick(
                        &session_id,
                        None,
                        now_ms() as i64,
                    )?;
                    return Ok(true);
                }
                // An engine that refuses a goal for its content refuses it for good (it wrote
                // why to the log): the message leaves the queue so it cannot block the ones
                // behind it. An engine that is not active (or is full) refuses everything: that
                // is waiting, not refusal. A refusal whose reason did not arrive (the engine's
                // publisher not yet seen, right after it started) is waiting too: a message is
                // dropped only on a reason that says it is the goal itself.
                if let ControlError::Rejected {
                    code: Some(code), ..
                } = &e
                    && !ServerRefusal::is_transient(code)
                {
                    warn!(task = %task_id, "the engine refused the message for good: {e}");
                    self.store
                        .lock()
                        .expect("store lock")
                        .mark_rejected(&seqs, &task_id)?;
                    return Ok(true);
                }
                return Err(e.into());
            }
        };
        let goal_id = sent.id.to_string();
        self.store
            .lock()
            .expect("store lock")
            .mark_sent(&seqs, &task_id, &goal_id)?;
        info!(task = %task_id, "handed {} message(s) to the engine", seqs.len());
        let task = InFlight {
            task_id,
            session_id,
            goal_id,
        };
        tokio::spawn(self.clone().follow(task, TASK_BOUND, wake.clone()));
        Ok(true)
    }

    /// Follows a task handed to the engine (at most `bound`) until it ends, then forgets its
    /// messages. An engine that went away (killed, restarted) or a task whose end cannot be
    /// seen is checked on the log: a task that did not end there is offered again, in its old
    /// place in the queue. At least once: a task that ended without leaving its end on the log
    /// (the engine killed between the two) runs again.
    async fn follow(
        self: Arc<Self>,
        task: InFlight,
        bound: Duration,
        wake: Arc<tokio::sync::Notify>,
    ) {
        let goal = uuid::Uuid::parse_str(&task.goal_id)
            .ok()
            .map(|u| GoalId::from_bytes(*u.as_bytes()));
        let ended = match goal {
            Some(id) => matches!(
                self.engine.result(id, bound).await,
                Ok(outcome) if matches!(
                    outcome.status,
                    GoalStatus::Succeeded | GoalStatus::Aborted | GoalStatus::Canceled
                )
            ),
            None => false,
        } || self.ended_on_log(&task).await;
        let store = self.store.lock().expect("store lock");
        let reoffered = if ended {
            store.mark_done(&task.task_id).map(|_| None)
        } else {
            store.reoffer(&task.task_id).map(Some)
        };
        match reoffered {
            Ok(None) => info!(task = %task.task_id, "the task ended; its message(s) are settled"),
            Ok(Some(0)) => {}
            Ok(Some(n)) => {
                warn!(task = %task.task_id, "the engine lost the task; {n} message(s) offered again")
            }
            Err(e) => warn!(task = %task.task_id, "could not settle the task in the queue: {e}"),
        }
        drop(store);
        wake.notify_one();
    }

    /// Whether the log shows `task` ended: delivered (or not), refused, or judged unanswered.
    async fn ended_on_log(&self, task: &InFlight) -> bool {
        let filter = format!(
            "{}.{}.sessions.{}",
            crate::core::envelope::MEM_SUBJECT_ROOT,
            self.config.tenant,
            task.session_id
        );
        let part = format!("{}-", task.task_id);
        let mut from = 1;
        loop {
            let page = match self.log.read("MEM", &filter, from, 1000).await {
                Ok(p) => p,
                Err(e) => {
                    warn!(task = %task.task_id, "cannot read the log to see whether the task ended: {e}");
                    return false;
                }
            };
            for m in &page {
                from = m.seq + 1;
                let Ok(e) = serde_json::from_slice::<Envelope>(&m.payload) else {
                    continue;
                };
                // An end that cannot be read is no end: the task is offered again.
                let ended = match e.kind {
                    EventKind::ReplyDelivered => e
                        .payload::<ReplyDelivered>()
                        .is_ok_and(|p| p.task_id == task.task_id),
                    // Not a refusal of the expert the session was stuck to (the only goals
                    // the inbox names one for): those messages were offered again, routed, as
                    // the same task.
                    EventKind::TaskRejected => e.payload::<TaskRejected>().is_ok_and(|p| {
                        p.task_id == task.task_id && !Rejection::is_about_domain(&p.code)
                    }),
                    EventKind::TaskJudged => e.payload::<TaskJudged>().is_ok_and(|p| {
                        !p.answered && (p.task_id == task.task_id || p.task_id.starts_with(&part))
                    }),
                    _ => false,
                };
                if ended {
                    return true;
                }
            }
            if page.len() < 1000 {
                return false;
            }
        }
    }

    /// Writes a queued message's turn to the log. A turn that can never be written (too large
    /// for the log, invalid) is set aside as a dead letter, with a small record of it on the
    /// log, and reported as [`TurnError::Unwritable`]; a log that did not take it this time is
    /// [`TurnError::Log`] (retried).
    async fn emit_turn(&self, q: &Queued) -> Result<(), TurnError> {
        let id = EventId::parse(&q.event_id)
            .map_err(|e| TurnError::Log(format!("queued event id: {e}")))?;
        let envelope = Envelope::new(
            self.config.tenant.clone(),
            ["sessions", q.session_id.as_str()],
            "inbox",
            EventKind::ChatTurn,
            ChatTurn {
                text: q.text.clone(),
                destination: Some(q.destination.clone()),
                source: Some(q.source.clone()),
                user_id: Some(q.user_id.clone()),
                role: Some("user".into()),
                session_id: Some(q.session_id.clone()),
                attachments: Some(attachments(q)),
                received_ms: Some(q.received_ms),
                rest: Default::default(),
            }
            .to_value(),
        )
        .with_id(id);
        match emit(&self.log, &envelope).await {
            Ok(_) => {}
            Err(e) if e.is_permanent() => {
                let reason = e.to_string();
                self.dead_letter(q, &reason).await;
                return Err(TurnError::Unwritable(reason));
            }
            Err(e) => return Err(TurnError::Log(format!("writing the turn to the log: {e}"))),
        }
        self.store
            .lock()
            .expect("store lock")
            .mark_emitted(q.seq)
            .map_err(|e| TurnError::Log(e.to_string()))?;
        Ok(())
    }

    /// Sets `q` aside and records that it was (without its text: it is what could not be
    /// written).
    async fn dead_letter(&self, q: &Queued, reason: &str) {
        warn!(session = %q.session_id, seq = q.seq, "set a message from {}:{} aside: {reason}", q.source, q.user_id);
        if let Err(e) = self
            .store
            .lock()
            .expect("store lock")
            .mark_dead(q.seq, reason)
        {
            warn!("could not set the message aside in the queue: {e}");
        }
        let record = Envelope::new(
            self.config.tenant.clone(),
            ["inbox", "dead_letters"],
            "inbox",
            DeadLetter::KIND,
            DeadLetter {
                session_id: q.session_id.clone(),
                source: q.source.clone(),
                user_id: q.user_id.clone(),
                destination: q.destination.clone(),
                bytes: q.text.len() + q.attachments_json.len(),
                reason: reason.to_string(),
                event_id: q.event_id.clone(),
            }
            .to_value(),
        )
        .with_id(EventId::computed(&["dead_letter", &q.event_id]));
        if let Err(e) = emit(&self.log, &record).await {
            warn!("the dead letter itself was not recorded on the log: {e}");
        }
    }
}

/// The attachments of `q` as JSON. What a sender put there that is not JSON is kept as the
/// text it sent, never dropped.
fn attachments(q: &Queued) -> serde_json::Value {
    serde_json::from_str(&q.attachments_json).unwrap_or_else(|e| {
        warn!(session = %q.session_id, "attachments that are not JSON ({e}) kept as text");
        q.attachments_json.clone().into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_that_are_not_json_are_kept_as_text() {
        let mut q = Queued {
            seq: 1,
            session_id: "s".into(),
            source: "terminal".into(),
            user_id: "ana".into(),
            destination: String::new(),
            text: "hello".into(),
            attachments_json: r#"[{"name": "a.txt"}]"#.into(),
            received_ms: 0,
            event_id: String::new(),
            emitted: false,
        };
        assert_eq!(attachments(&q), serde_json::json!([{"name": "a.txt"}]));
        q.attachments_json = "{not json".into();
        assert_eq!(attachments(&q), serde_json::json!("{not json"));
    }
}
