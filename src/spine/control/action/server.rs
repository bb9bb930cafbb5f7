//! The action server: goals arrive as [`GoalRequest`]s on a channel; the node accepts or
//! rejects each, sends feedback through its [`GoalHandle`] and ends it with a result.
//! Everything else (status, cancel, results for late `get_result` calls) is answered here.
//! A server may also publish why it refused each goal (see
//! [`publish_rejections`](ActionServer::publish_rejections)).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use hiroz::{
    Builder,
    action::{
        GoalId, GoalInfo, GoalStatus, Time, ZAction,
        messages::{
            CancelGoalServiceResponse, CancelService, FeedbackMessage, GetResultResponse,
            GoalService, GoalStatusInfo, ResultService, SendGoalResponse, StatusMessage,
        },
    },
    msg::ZMessage,
    node::ZNode,
    pubsub::ZPub,
    qos::{QosDurability, QosHistory, QosProfile},
    service::ServiceReply,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard, WaitForCancellationFuture};
use tracing::{debug, warn};

use super::{
    Endpoints, Refusal, ServerRefusal,
    cancel::{CancelCode, select_for_cancel},
    cancel_goal_type_info, now_stamp, rejections_qos,
};
use crate::{
    interfaces::GoalRejection,
    spine::control::{
        ControlError,
        serve::{answer, spawn_server},
    },
};

/// Limits of an action server.
#[derive(Debug, Clone)]
pub struct ActionOptions {
    /// How long a finished goal's result stays available (rcl_action's default: 15 min).
    pub result_retention: Duration,
    /// How long the node may take to accept or reject a goal before it is rejected for it.
    pub decision_timeout: Duration,
    /// Goals waiting for a decision; beyond this new goals are rejected at once.
    pub max_pending: usize,
    /// How long a `get_result` for a goal id not seen yet waits for that goal to be accepted
    /// before it is answered `STATUS_UNKNOWN`. Lets a client send `get_result` together with
    /// `send_goal` (one round trip instead of two); stock ROS 2 clients never notice.
    pub unknown_goal_grace: Duration,
    /// Status changes within this window go out as one snapshot. The status topic is
    /// keep-last-1 state, so nothing is lost, and a goal that finishes at once costs one
    /// publication instead of two (each is a transient-local put: the dominant cost of an
    /// empty goal's round trip).
    pub status_coalesce: Duration,
}

impl Default for ActionOptions {
    fn default() -> Self {
        Self {
            result_retention: Duration::from_secs(15 * 60),
            decision_timeout: Duration::from_secs(5),
            max_pending: 64,
            unknown_goal_grace: Duration::from_millis(250),
            status_coalesce: Duration::from_millis(5),
        }
    }
}

type FeedbackPub<A> = ZPub<FeedbackMessage<A>, <FeedbackMessage<A> as ZMessage>::Serdes>;
type StatusPub = ZPub<StatusMessage, <StatusMessage as ZMessage>::Serdes>;
type RejectionPub = ZPub<GoalRejection, <GoalRejection as ZMessage>::Serdes>;

/// Names the task a goal belongs to, for the refusal published about it.
type TaskIdOf<G> = Box<dyn Fn(&G) -> String + Send + Sync>;

/// Where refusals go, and how a goal names its task.
struct Rejections<A: ZAction> {
    publisher: RejectionPub,
    task_id: TaskIdOf<A::Goal>,
}

struct Entry<A: ZAction> {
    stamp: Time,
    status: GoalStatus,
    result: Option<A::Result>,
    finished_at: Option<Instant>,
    cancel: CancellationToken,
    waiters: Vec<ServiceReply<ResultService<A>>>,
}

struct Inner<A: ZAction> {
    name: String,
    accepting: std::sync::atomic::AtomicBool,
    goals: Mutex<HashMap<GoalId, Entry<A>>>,
    /// Ids of goals being decided: reserved with the duplicate check, so two requests with
    /// one id can never both be admitted.
    deciding: Mutex<std::collections::HashSet<GoalId>>,
    /// Woken whenever a goal is accepted.
    accepted: tokio::sync::Notify,
    /// Woken whenever a goal's status changes.
    status_dirty: tokio::sync::Notify,
    feedback: FeedbackPub<A>,
    status: StatusPub,
    /// Set once by [`ActionServer::publish_rejections`].
    rejections: std::sync::OnceLock<Rejections<A>>,
    rejections_topic: String,
    opts: ActionOptions,
}

/// A served action. Dropping it stops serving.
pub struct ActionServer<A: ZAction> {
    inner: Arc<Inner<A>>,
    _stop: DropGuard,
}

/// A goal waiting for the node's decision. Dropping it rejects the goal.
pub struct GoalRequest<A: ZAction> {
    id: GoalId,
    goal: A::Goal,
    decide: Option<oneshot::Sender<Result<(), Refusal>>>,
    inner: Arc<Inner<A>>,
}

/// An accepted goal. End it with [`succeed`](Self::succeed), [`abort`](Self::abort) or
/// [`canceled`](Self::canceled); dropping it unfinished aborts it.
pub struct GoalHandle<A: ZAction>
where
    A::Result: Default,
{
    id: GoalId,
    inner: Arc<Inner<A>>,
    cancel: CancellationToken,
    finished: bool,
}

impl<A: ZAction> ActionServer<A>
where
    A::Result: Default,
{
    /// Serves the action `name` (absolute, e.g. `/iron/engine/task`) on `node`. Returns the
    /// server and the channel on which goals arrive. Goals are rejected until
    /// [`set_accepting`](Self::set_accepting)`(true)`, and whenever the receiver is gone.
    pub fn new(
        node: &ZNode,
        name: &str,
        opts: ActionOptions,
    ) -> Result<(Self, mpsc::Receiver<GoalRequest<A>>), ControlError> {
        let ep = Endpoints::of(name);
        let declare = |what: &str| {
            let what = what.to_string();
            move |source| ControlError::Declare { what, source }
        };
        let send_goal = node
            .create_service_impl::<GoalService<A>>(&ep.send_goal, Some(A::send_goal_type_info()))
            .build()
            .map_err(declare(&ep.send_goal))?;
        let get_result = node
            .create_service_impl::<ResultService<A>>(
                &ep.get_result,
                Some(A::get_result_type_info()),
            )
            .build()
            .map_err(declare(&ep.get_result))?;
        let cancel_goal = node
            .create_service_impl::<CancelService<A>>(
                &ep.cancel_goal,
                Some(cancel_goal_type_info::<A>()),
            )
            .build()
            .map_err(declare(&ep.cancel_goal))?;
        let feedback = node
            .create_pub_impl::<FeedbackMessage<A>>(&ep.feedback, Some(A::feedback_type_info()))
            .build()
            .map_err(declare(&ep.feedback))?;
        // rcl_action's status QoS: reliable, transient local, keep last 1.
        let status_qos = QosProfile {
            durability: QosDurability::TransientLocal,
            history: QosHistory::KeepLast(std::num::NonZeroUsize::MIN),
            ..QosProfile::default()
        };
        let status = node
            .create_pub_impl::<StatusMessage>(&ep.status, Some(A::status_type_info()))
            .with_qos(status_qos)
            .build()
            .map_err(declare(&ep.status))?;

        let inner = Arc::new(Inner {
            name: name.to_string(),
            accepting: std::sync::atomic::AtomicBool::new(false),
            goals: Mutex::new(HashMap::new()),
            deciding: Mutex::new(std::collections::HashSet::new()),
            accepted: tokio::sync::Notify::new(),
            status_dirty: tokio::sync::Notify::new(),
            feedback,
            status,
            rejections: std::sync::OnceLock::new(),
            rejections_topic: ep.rejections.clone(),
            opts,
        });
        let stop = CancellationToken::new();
        let (goals_tx, goals_rx) = mpsc::channel(inner.opts.max_pending.max(1));

        let i = inner.clone();
        spawn_server(send_goal, ep.send_goal.clone(), stop.clone(), move |req| {
            let (inner, goals_tx) = (i.clone(), goals_tx.clone());
            async move {
                // Each goal is decided in its own task so a slow decision holds up no other.
                tokio::spawn(async move {
                    let (msg, reply) = req.into_parts();
                    let accepted = inner.decide(msg.goal_id, msg.goal, &goals_tx).await;
                    let stamp = now_stamp();
                    let resp = SendGoalResponse {
                        accepted,
                        stamp_sec: stamp.sec,
                        stamp_nanosec: stamp.nanosec,
                    };
                    if let Err(e) = reply.reply(&resp).await {
                        warn!(action = %inner.name, "could not answer send_goal: {e}");
                    }
                });
            }
        });

        let i = inner.clone();
        let what = ep.get_result.clone();
        spawn_server(
            get_result,
            ep.get_result.clone(),
            stop.clone(),
            move |req| {
                let (inner, what) = (i.clone(), what.clone());
                async move {
                    let (msg, reply) = req.into_parts();
                    // Answered from its own task: it may wait for the goal to finish, or
                    // briefly for a pipelined send_goal to arrive.
                    tokio::spawn(inner.answer_result(msg.goal_id, reply, what));
                }
            },
        );

        let i = inner.clone();
        let what = ep.cancel_goal.clone();
        spawn_server(
            cancel_goal,
            ep.cancel_goal.clone(),
            stop.clone(),
            move |req| {
                let (inner, what) = (i.clone(), what.clone());
                async move {
                    let info = &req.message().goal_info;
                    let (code, canceling) = inner.cancel(info.goal_id, info.stamp);
                    let resp = CancelGoalServiceResponse {
                        return_code: code as i8,
                        goals_canceling: canceling,
                    };
                    answer(req, &resp, &what).await;
                }
            },
        );

        spawn_upkeep(&inner, &stop);
        Ok((
            Self {
                inner,
                _stop: stop.drop_guard(),
            },
            goals_rx,
        ))
    }

    /// The action's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// From now on, publishes every refusal (the node's, with its reason, and the server's
    /// own: inactive, saturated, undecided, bad goal id) as `iron/msg/GoalRejection` on
    /// `<action>/rejections`, before the goal response goes out. `task_id` names the goal's
    /// task in the message (`""` when the goal has none). A second call changes nothing.
    pub fn publish_rejections(
        &self,
        node: &ZNode,
        task_id: impl Fn(&A::Goal) -> String + Send + Sync + 'static,
    ) -> Result<(), ControlError> {
        if self.inner.rejections.get().is_some() {
            return Ok(());
        }
        let topic = &self.inner.rejections_topic;
        let publisher = node
            .create_pub::<GoalRejection>(topic)
            .with_qos(rejections_qos())
            .build()
            .map_err(|source| ControlError::Declare {
                what: format!("publisher on {topic}"),
                source,
            })?;
        let _ = self.inner.rejections.set(Rejections {
            publisher,
            task_id: Box::new(task_id),
        });
        Ok(())
    }

    /// Opens or closes the door to new goals; while closed every goal is rejected at once
    /// (a managed node closes it when it is not active). Closed at first.
    pub fn set_accepting(&self, accepting: bool) {
        self.inner
            .accepting
            .store(accepting, std::sync::atomic::Ordering::SeqCst);
    }

    /// Number of goals not finished yet.
    pub fn active_goals(&self) -> usize {
        let goals = self.inner.goals.lock().expect("goal table lock");
        goals.values().filter(|e| e.status.is_active()).count()
    }
}

/// Releases a goal id's reservation when its decision is made (accepted goals are in the goal
/// table by then).
struct Reserved<'a, A: ZAction> {
    inner: &'a Inner<A>,
    id: GoalId,
}

impl<A: ZAction> Drop for Reserved<'_, A> {
    fn drop(&mut self) {
        self.inner
            .deciding
            .lock()
            .expect("deciding lock")
            .remove(&self.id);
    }
}

/// The server's two background tasks, both ended by `stop` or when the server is gone: the
/// status topic's publisher (one task, so snapshots go out in order) and the sweep that
/// forgets finished goals once their retention has passed.
fn spawn_upkeep<A: ZAction>(inner: &Arc<Inner<A>>, stop: &CancellationToken)
where
    A::Result: Default,
{
    // The status topic: one publisher task, so snapshots go out in order.
    let i = Arc::downgrade(inner);
    let status_stop = stop.clone();
    tokio::spawn(async move {
        loop {
            let Some(inner) = i.upgrade() else { break };
            tokio::select! {
                _ = inner.status_dirty.notified() => {}
                _ = status_stop.cancelled() => break,
            }
            tokio::select! {
                _ = tokio::time::sleep(inner.opts.status_coalesce) => {}
                _ = status_stop.cancelled() => break,
            }
            inner.publish_status().await;
        }
    });

    // Finished goals are forgotten once their retention has passed.
    let i = Arc::downgrade(inner);
    let sweep_stop = stop.clone();
    tokio::spawn(async move {
        let period = Duration::from_secs(1);
        loop {
            tokio::select! {
                _ = tokio::time::sleep(period) => {}
                _ = sweep_stop.cancelled() => break,
            }
            let Some(inner) = i.upgrade() else { break };
            inner.purge_expired();
        }
    });
}

impl<A: ZAction> Inner<A>
where
    A::Result: Default,
{
    /// Marks the goals a cancel request names (by id, by stamp, or all) as canceling and
    /// tells their tasks; returns the answer's code and the goals it names.
    fn cancel(&self, goal_id: GoalId, stamp: Time) -> (CancelCode, Vec<GoalInfo>) {
        let (code, canceling) = {
            let mut goals = self.goals.lock().expect("goal table lock");
            let (code, ids) = select_for_cancel(
                goals
                    .iter()
                    .map(|(id, e)| (*id, e.stamp, e.status))
                    .collect::<Vec<_>>(),
                goal_id,
                stamp,
            );
            let canceling: Vec<GoalInfo> = ids
                .iter()
                .filter_map(|id| {
                    let e = goals.get_mut(id)?;
                    e.status = GoalStatus::Canceling;
                    e.cancel.cancel();
                    Some(GoalInfo {
                        goal_id: *id,
                        stamp: e.stamp,
                    })
                })
                .collect();
            (code, canceling)
        };
        debug!(action = %self.name, "cancel request: {} goal(s) canceling, code {code:?}", canceling.len());
        if !canceling.is_empty() {
            self.status_changed();
        }
        (code, canceling)
    }

    /// Decides a goal: accepted (`true`), or refused, with the refusal published first
    /// when this server publishes them.
    async fn decide(
        self: &Arc<Self>,
        id: GoalId,
        goal: A::Goal,
        goals_tx: &mpsc::Sender<GoalRequest<A>>,
    ) -> bool {
        let task_id = self
            .rejections
            .get()
            .map(|r| (r.task_id)(&goal))
            .unwrap_or_default();
        match self.admit(id, goal, goals_tx).await {
            Ok(()) => true,
            Err(refusal) => {
                self.publish_rejection(id, task_id, refusal).await;
                false
            }
        }
    }

    async fn admit(
        self: &Arc<Self>,
        id: GoalId,
        goal: A::Goal,
        goals_tx: &mpsc::Sender<GoalRequest<A>>,
    ) -> Result<(), Refusal> {
        let refuse = |code: ServerRefusal, reason: String| {
            warn!(action = %self.name, goal = %id, "rejected: {reason}");
            Err(Refusal::new(code.code(), reason))
        };
        if !self.accepting.load(std::sync::atomic::Ordering::SeqCst) {
            return refuse(
                ServerRefusal::Inactive,
                format!("{} is not active", self.name),
            );
        }
        if !id.is_valid() {
            return refuse(
                ServerRefusal::InvalidGoalId,
                "the goal id is all zeros".into(),
            );
        }
        // The check and the reservation are one step: a resent request that arrives while the
        // first is still being decided is a duplicate too.
        let known = {
            let goals = self.goals.lock().expect("goal table lock");
            let mut deciding = self.deciding.lock().expect("deciding lock");
            goals.contains_key(&id) || !deciding.insert(id)
        };
        if known {
            return refuse(
                ServerRefusal::DuplicateGoalId,
                format!("goal id {id} is already known"),
            );
        }
        let _reserved = Reserved { inner: self, id };
        let (tx, rx) = oneshot::channel();
        let request = GoalRequest {
            id,
            goal,
            decide: Some(tx),
            inner: self.clone(),
        };
        match goals_tx.try_send(request) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                return refuse(
                    ServerRefusal::Saturated,
                    format!(
                        "{} already has {} goals waiting for a decision",
                        self.name, self.opts.max_pending
                    ),
                );
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                return refuse(
                    ServerRefusal::Inactive,
                    format!("{} is not taking goals", self.name),
                );
            }
        }
        match tokio::time::timeout(self.opts.decision_timeout, rx).await {
            Ok(Ok(decision)) => decision,
            Ok(Err(_)) => refuse(
                ServerRefusal::Undecided,
                format!("{} dropped the goal without deciding", self.name),
            ),
            Err(_) => refuse(
                ServerRefusal::Undecided,
                format!(
                    "{} did not decide within {:?}",
                    self.name, self.opts.decision_timeout
                ),
            ),
        }
    }

    /// Publishes a refusal, when this server publishes them; a failure is only logged (the
    /// goal response still says the goal was rejected).
    async fn publish_rejection(&self, id: GoalId, task_id: String, refusal: Refusal) {
        let Some(rejections) = self.rejections.get() else {
            return;
        };
        let stamp = now_stamp();
        let msg = GoalRejection {
            action: self.name.clone(),
            goal_id: id.to_string(),
            task_id,
            code: refusal.code,
            reason: refusal.reason,
            stamp: hiroz_msgs::builtin_interfaces::Time {
                sec: stamp.sec,
                nanosec: stamp.nanosec,
            },
        };
        if let Err(e) = rejections.publisher.async_publish(&msg).await {
            warn!(action = %self.name, goal = %id, "could not publish the rejection on {}: {e}", self.rejections_topic);
        }
    }

    /// Answers a `get_result`: at once for a finished goal, when it finishes for a running
    /// one, and `STATUS_UNKNOWN` for an id that is not accepted within the grace period.
    async fn answer_result(
        self: Arc<Self>,
        id: GoalId,
        reply: ServiceReply<ResultService<A>>,
        what: String,
    ) {
        let deadline = tokio::time::Instant::now() + self.opts.unknown_goal_grace;
        let resp = loop {
            let accepted = self.accepted.notified();
            tokio::pin!(accepted);
            accepted.as_mut().enable();
            {
                let mut goals = self.goals.lock().expect("goal table lock");
                match goals.get_mut(&id) {
                    Some(e) if !e.status.is_terminal() => {
                        e.waiters.push(reply);
                        return;
                    }
                    Some(e) => {
                        break GetResultResponse::<A> {
                            status: e.status as i8,
                            result: e.result.clone().unwrap_or_default(),
                        };
                    }
                    None => {}
                }
            }
            if tokio::time::Instant::now() >= deadline {
                break GetResultResponse::<A> {
                    status: GoalStatus::Unknown as i8,
                    result: A::Result::default(),
                };
            }
            tokio::select! {
                _ = accepted => {}
                _ = tokio::time::sleep_until(deadline) => {}
            }
        };
        if let Err(e) = reply.reply(&resp).await {
            warn!(service = %what, "could not answer get_result: {e}");
        }
    }

    fn status_list(&self) -> StatusMessage {
        let goals = self.goals.lock().expect("goal table lock");
        let mut list: Vec<GoalStatusInfo> = goals
            .iter()
            .map(|(id, e)| GoalStatusInfo {
                goal_info: GoalInfo {
                    goal_id: *id,
                    stamp: e.stamp,
                },
                status: e.status,
            })
            .collect();
        list.sort_by_key(|s| (s.goal_info.stamp.sec, s.goal_info.stamp.nanosec));
        StatusMessage { status_list: list }
    }

    /// Marks the status list changed; the status task publishes a fresh snapshot, off the
    /// path of goals and results, and in order.
    fn status_changed(&self) {
        self.status_dirty.notify_one();
    }

    async fn publish_status(&self) {
        let msg = self.status_list();
        if let Err(e) = self.status.async_publish(&msg).await {
            warn!(action = %self.name, "could not publish status: {e}");
        }
    }

    async fn finish(&self, id: GoalId, status: GoalStatus, result: A::Result) {
        let waiters = {
            let mut goals = self.goals.lock().expect("goal table lock");
            let Some(e) = goals.get_mut(&id) else { return };
            e.status = status;
            e.result = Some(result.clone());
            e.finished_at = Some(Instant::now());
            std::mem::take(&mut e.waiters)
        };
        let resp = GetResultResponse::<A> {
            status: status as i8,
            result,
        };
        for w in waiters {
            if let Err(e) = w.reply(&resp).await {
                warn!(action = %self.name, goal = %id, "could not deliver a result: {e}");
            }
        }
        self.status_changed();
    }

    fn purge_expired(&self) {
        let keep = self.opts.result_retention;
        let mut goals = self.goals.lock().expect("goal table lock");
        goals.retain(|_, e| e.finished_at.is_none_or(|t| t.elapsed() < keep));
    }
}

impl<A: ZAction> GoalRequest<A>
where
    A::Result: Default,
{
    /// The goal's id.
    pub fn id(&self) -> GoalId {
        self.id
    }

    /// What the goal asks for.
    pub fn goal(&self) -> &A::Goal {
        &self.goal
    }

    /// Accepts the goal; it is executing from now on.
    pub async fn accept(mut self) -> (A::Goal, GoalHandle<A>) {
        let cancel = CancellationToken::new();
        self.inner.goals.lock().expect("goal table lock").insert(
            self.id,
            Entry {
                stamp: now_stamp(),
                status: GoalStatus::Executing,
                result: None,
                finished_at: None,
                cancel: cancel.clone(),
                waiters: Vec::new(),
            },
        );
        self.inner.accepted.notify_waiters();
        if let Some(tx) = self.decide.take() {
            let _ = tx.send(Ok(()));
        }
        self.inner.status_changed();
        let handle = GoalHandle {
            id: self.id,
            inner: self.inner.clone(),
            cancel,
            finished: false,
        };
        (self.goal.clone(), handle)
    }

    /// Rejects the goal: `code` is stable and machine-readable (`unknown_domain`), `reason`
    /// a sentence for a person. Both reach the client when the server publishes rejections.
    pub fn reject(mut self, code: &str, reason: &str) {
        debug!(action = %self.inner.name, goal = %self.id, "goal rejected ({code}): {reason}");
        if let Some(tx) = self.decide.take() {
            let _ = tx.send(Err(Refusal::new(code, reason)));
        }
    }
}

impl<A: ZAction> GoalHandle<A>
where
    A::Result: Default,
{
    /// The goal's id.
    pub fn id(&self) -> GoalId {
        self.id
    }

    /// Whether a client asked to cancel this goal.
    pub fn is_cancel_requested(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when a client asks to cancel this goal.
    pub fn cancel_requested(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Publishes feedback for this goal.
    pub async fn feedback(&self, feedback: A::Feedback) -> Result<(), ControlError> {
        let msg = FeedbackMessage::<A> {
            goal_id: self.id,
            feedback,
        };
        self.inner
            .feedback
            .async_publish(&msg)
            .await
            .map_err(|source| ControlError::Call {
                what: format!("{} feedback", self.inner.name),
                source,
            })
    }

    /// Ends the goal as succeeded.
    pub async fn succeed(self, result: A::Result) {
        self.end(GoalStatus::Succeeded, result).await
    }

    /// Ends the goal as aborted.
    pub async fn abort(self, result: A::Result) {
        self.end(GoalStatus::Aborted, result).await
    }

    /// Ends the goal as canceled (after a cancel request).
    pub async fn canceled(self, result: A::Result) {
        self.end(GoalStatus::Canceled, result).await
    }

    async fn end(mut self, status: GoalStatus, result: A::Result) {
        self.finished = true;
        self.inner.finish(self.id, status, result).await;
    }
}

impl<A: ZAction> Drop for GoalHandle<A>
where
    A::Result: Default,
{
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let (inner, id) = (self.inner.clone(), self.id);
        warn!(action = %inner.name, goal = %id, "goal dropped unfinished; aborting it");
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                inner
                    .finish(id, GoalStatus::Aborted, A::Result::default())
                    .await
            });
        }
    }
}
