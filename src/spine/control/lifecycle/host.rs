//! The lifecycle host: serves `~/change_state`, `~/get_state`, `~/get_available_states`,
//! `~/get_available_transitions`, `~/get_transition_graph` and publishes `~/transition_event`
//! for one [`ManagedNode`], running its callbacks on tokio.
//!
//! A node is written once: `configure` builds what it needs, `run(deps, shutdown)` does the
//! work while active, and the host maps lifecycle transitions onto those. Callbacks that fail,
//! panic or overrun their timeout give the outcome rclcpp_lifecycle documents for a failing or
//! erroring callback; nothing waits forever.

use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use hiroz::{Builder, node::ZNode};
use hiroz_msgs::lifecycle_msgs::{self as wire, srv};
use tokio::{sync::mpsc, task::JoinHandle};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{
    machine::{self, Edge, Outcome, State, Transition},
    msgs,
    rosout::Rosout,
};
use crate::core::trace::Tracer;
use crate::spine::control::{
    ControlError, ControlPlane,
    ros_args::RosArgs,
    serve::{answer, spawn_server},
};

/// The error under a [`CallbackError`].
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a transition callback did not succeed: what, and the error underneath when there is
/// one, so `/rosout` and `iron lifecycle set` show the whole chain ([`CallbackError::reason`]).
#[derive(Debug, thiserror::Error)]
pub enum CallbackError {
    /// The transition is refused; the node returns to the state it started from.
    #[error("refused: {what}")]
    Failure {
        /// What was refused and why, in a line.
        what: String,
        /// The error underneath.
        #[source]
        cause: Option<Cause>,
    },
    /// Something broke; the node goes through error processing.
    #[error("error: {what}")]
    Error {
        /// What broke, in a line.
        what: String,
        /// The error underneath.
        #[source]
        cause: Option<Cause>,
    },
}

impl CallbackError {
    /// The transition is refused for `why`.
    pub fn refused(why: impl std::fmt::Display) -> Self {
        Self::Failure {
            what: why.to_string(),
            cause: None,
        }
    }

    /// The transition is refused because of `error` (kept as the cause).
    pub fn refused_by(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Failure {
            what: error.to_string(),
            cause: Some(Box::new(error)),
        }
    }

    /// The transition is refused while `doing`, because of `error`.
    pub fn refused_while(
        doing: impl std::fmt::Display,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Failure {
            what: format!("{doing}: {error}"),
            cause: Some(Box::new(error)),
        }
    }

    /// Something broke: `why`.
    pub fn broken(why: impl std::fmt::Display) -> Self {
        Self::Error {
            what: why.to_string(),
            cause: None,
        }
    }

    /// Something broke: `error` (kept as the cause).
    pub fn broken_by(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Error {
            what: error.to_string(),
            cause: Some(Box::new(error)),
        }
    }

    /// Whether the node goes through error processing (not a plain refusal).
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error { .. })
    }

    /// What happened and every cause under it, each once, on one line.
    pub fn reason(&self) -> String {
        let (Self::Failure { what, cause } | Self::Error { what, cause }) = self;
        let cause = cause.as_deref().map(|c| c as &dyn std::error::Error);
        crate::core::text::with_causes(what.clone(), cause)
    }
}

/// Why a node's `run` stopped working: what it was doing, and the error underneath.
#[derive(Debug, thiserror::Error)]
#[error("{doing}: {source}")]
pub struct RunError {
    doing: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl RunError {
    /// `source` stopped the node while `doing`.
    pub fn new(
        doing: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self {
            doing: doing.into(),
            source: source.into(),
        }
    }
}

/// What a node's callbacks get: the control plane, the node's own ROS node for declaring
/// endpoints, and the arguments it was started with.
#[derive(Clone)]
pub struct NodeContext {
    pub control: ControlPlane,
    pub node: Arc<ZNode>,
    pub ros_args: RosArgs,
    /// Where the node's spans go.
    pub tracer: Tracer,
    requests: mpsc::Sender<Command>,
}

impl NodeContext {
    /// The node's fully qualified name, e.g. `/iron/engine`.
    pub fn fqn(&self) -> String {
        qualified(self.node.namespace(), self.node.name())
    }

    /// Asks the host to take a transition (e.g. an idle expert asks for `shutdown`).
    /// Returns whether it succeeded.
    pub async fn request_transition(&self, label: &str) -> bool {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let cmd = Command {
            id: 0,
            label: label.to_string(),
            reply: Some(reply),
        };
        if self.requests.send(cmd).await.is_err() {
            return false;
        }
        rx.await.unwrap_or(false)
    }
}

/// A process that is a ROS 2 managed node.
pub trait ManagedNode: Send + Sync + 'static {
    /// What `configure` builds and `run` uses (connections, config, servers).
    type Deps: Send + Sync + 'static;

    /// `configure`: load configuration and connect.
    fn configure(
        &self,
        ctx: &NodeContext,
    ) -> impl Future<Output = Result<Self::Deps, CallbackError>> + Send;

    /// `activate`: checks before work is taken. The default accepts.
    fn activate(
        &self,
        _deps: &Arc<Self::Deps>,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send {
        async { Ok(()) }
    }

    /// The work, while active. It must stop taking new work when `shutdown` fires and return
    /// once running work has finished. Returning early means the node stopped working: `Ok`
    /// deactivates it, `Err` sends it through error processing.
    fn run(
        self: Arc<Self>,
        deps: Arc<Self::Deps>,
        shutdown: CancellationToken,
    ) -> impl Future<Output = Result<(), RunError>> + Send;

    /// `deactivate`, after `run` has returned. The default accepts.
    fn deactivate(
        &self,
        _deps: &Arc<Self::Deps>,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send {
        async { Ok(()) }
    }

    /// `cleanup`: release what `configure` built. The default drops it.
    fn cleanup(
        &self,
        _deps: Arc<Self::Deps>,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send {
        async { Ok(()) }
    }

    /// `shutdown`, from any primary state. The default drops what was built.
    fn shutdown(
        &self,
        _deps: Option<Arc<Self::Deps>>,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send {
        async { Ok(()) }
    }

    /// Error processing after a callback errored in `failed_in`. `Ok` resets the node to
    /// unconfigured (the default); `Err` finalizes it.
    fn on_error(
        &self,
        _failed_in: State,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send {
        async { Ok(()) }
    }
}

/// Limits of the host.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// A transition callback running longer than this counts as an error.
    pub callback_timeout: Duration,
    /// How long `deactivate`/`shutdown` wait for `run` to finish its running work.
    pub drain_timeout: Duration,
    /// Take `configure` and `activate` at start, without waiting to be told.
    pub autostart: bool,
    /// Where the node's spans go (nowhere by default).
    pub tracer: Tracer,
}

impl Default for HostOptions {
    fn default() -> Self {
        Self {
            callback_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(30),
            autostart: false,
            tracer: Tracer::default(),
        }
    }
}

struct Command {
    id: u8,
    label: String,
    reply: Option<tokio::sync::oneshot::Sender<bool>>,
}

type EventPub = hiroz::pubsub::ZPub<
    crate::interfaces::lifecycle::TransitionEvent,
    <crate::interfaces::lifecycle::TransitionEvent as hiroz::msg::ZMessage>::Serdes,
>;

struct Host<N: ManagedNode> {
    node: Arc<N>,
    ctx: NodeContext,
    opts: HostOptions,
    state: Arc<Mutex<State>>,
    events: EventPub,
    /// Where a failed transition's reason goes (change_state carries only success).
    rosout: Rosout,
    deps: Option<Arc<N::Deps>>,
    running: Option<Running>,
}

struct Running {
    stop: CancellationToken,
    task: JoinHandle<Result<(), RunError>>,
}

/// Serves `node` as a managed node named by `node_handle` until it is finalized (by a
/// `shutdown` transition) or `shutdown` fires (then it is deactivated and shut down in order).
pub async fn serve<N: ManagedNode>(
    node: Arc<N>,
    control: ControlPlane,
    node_handle: ZNode,
    ros_args: RosArgs,
    opts: HostOptions,
    shutdown: CancellationToken,
) -> Result<(), ControlError> {
    let node_handle = Arc::new(node_handle);
    let fqn = qualified(node_handle.namespace(), node_handle.name());
    let state = Arc::new(Mutex::new(State::Unconfigured));
    let (tx, mut rx) = mpsc::channel::<Command>(16);
    let stop_services = CancellationToken::new();
    let _stop_guard = stop_services.clone().drop_guard();

    // change_state replies still being sent; the process waits for them before it exits, or
    // the caller of the final `shutdown` would never hear back.
    let replies = tokio_util::task::TaskTracker::new();
    spawn_services(
        &node_handle,
        &fqn,
        state.clone(),
        tx.clone(),
        stop_services.clone(),
        replies.clone(),
    )?;
    let events = node_handle
        .create_pub::<crate::interfaces::lifecycle::TransitionEvent>("~/transition_event")
        .build()
        .map_err(|source| ControlError::Declare {
            what: format!("{fqn}/transition_event"),
            source,
        })?;

    let rosout = Rosout::new(&node_handle, &fqn)?;

    let ctx = NodeContext {
        control,
        node: node_handle,
        ros_args,
        tracer: opts.tracer.clone(),
        requests: tx,
    };
    let mut host = Host {
        node,
        ctx,
        opts,
        state,
        events,
        rosout,
        deps: None,
        running: None,
    };
    info!(node = %fqn, "managed node up, state unconfigured");

    if host.opts.autostart {
        for label in ["configure", "activate"] {
            if !host.request(0, label).await {
                warn!(node = %fqn, "autostart: {label} did not succeed");
                break;
            }
        }
    }

    loop {
        if host.current() == State::Finalized {
            break;
        }
        tokio::select! {
            cmd = rx.recv() => {
                let Some(cmd) = cmd else { break };
                let ok = host.request(cmd.id, &cmd.label).await;
                if let Some(reply) = cmd.reply {
                    let _ = reply.send(ok);
                }
            }
            ended = wait_running(&mut host.running) => {
                host.running = None;
                host.run_ended(ended).await;
            }
            _ = shutdown.cancelled() => {
                info!(node = %fqn, "stop requested: deactivating and shutting down");
                if host.current() == State::Active {
                    host.request(0, "deactivate").await;
                }
                if host.current() != State::Finalized {
                    host.request(0, "shutdown").await;
                }
                break;
            }
        }
    }
    replies.close();
    if tokio::time::timeout(Duration::from_secs(2), replies.wait())
        .await
        .is_err()
    {
        warn!(node = %fqn, "a change_state reply was still unsent after 2 s");
    }
    info!(node = %fqn, state = %host.current(), "managed node exits");
    Ok(())
}

async fn wait_running(running: &mut Option<Running>) -> Result<(), RunError> {
    match running {
        Some(r) => match (&mut r.task).await {
            Ok(result) => result,
            Err(join) => Err(RunError::new("running", join)),
        },
        None => std::future::pending().await,
    }
}

impl<N: ManagedNode> Host<N> {
    fn current(&self) -> State {
        *self.state.lock().expect("state lock")
    }

    /// Moves along `edge` and announces it on `transition_event`.
    async fn enter(&self, edge: Edge) {
        *self.state.lock().expect("state lock") = edge.goal;
        if let Err(e) = self.events.async_publish(&msgs::event(edge)).await {
            warn!("could not publish transition_event: {e}");
        }
    }

    /// Runs a requested transition to its end; true when its callback succeeded.
    async fn request(&mut self, id: u8, label: &str) -> bool {
        let edge = match machine::resolve_request(self.current(), id, label) {
            Ok(edge) => edge,
            Err(refused) => {
                warn!(node = %self.ctx.fqn(), "transition refused: {refused}");
                self.rosout
                    .error(label, &format!("transition refused: {refused}"))
                    .await;
                return false;
            }
        };
        info!(node = %self.ctx.fqn(), "transition {} ({} -> {})", edge.transition.label(), edge.start, edge.goal);
        self.enter(edge).await;
        let outcome = self.callback(edge.transition).await;
        self.complete(edge.start, outcome).await;
        outcome == Outcome::Success
    }

    /// Leaves the transition state with `outcome`, through error processing if needed.
    async fn complete(&mut self, started_in: State, outcome: Outcome) {
        let Some(done) = machine::completion(self.current(), outcome) else {
            return;
        };
        self.enter(done).await;
        if done.goal == State::ErrorProcessing {
            self.stop_running().await;
            let node = self.node.clone();
            let outcome = self
                .guarded("on_error", async move { node.on_error(started_in).await })
                .await;
            if outcome == Outcome::Success {
                self.deps = None;
            }
            if let Some(end) = machine::completion(State::ErrorProcessing, outcome) {
                self.enter(end).await;
            }
        }
    }

    /// `run` returned while the node was active.
    async fn run_ended(&mut self, ended: Result<(), RunError>) {
        if self.current() != State::Active {
            return;
        }
        let Some(edge) = Transition::Deactivate.edge_from(State::Active) else {
            return;
        };
        self.enter(edge).await;
        let outcome = match ended {
            Ok(()) => {
                info!(node = %self.ctx.fqn(), "run finished; deactivating");
                self.deactivate_callback().await
            }
            Err(e) => {
                warn!(node = %self.ctx.fqn(), "run failed: {e}; error processing");
                self.rosout.error("run", &format!("run failed: {e}")).await;
                Outcome::Error
            }
        };
        self.complete(State::Active, outcome).await;
    }

    async fn callback(&mut self, t: Transition) -> Outcome {
        match t {
            Transition::Configure => {
                let node = self.node.clone();
                let ctx = self.ctx.clone();
                let (outcome, deps) = self
                    .guarded_value("configure", async move { node.configure(&ctx).await })
                    .await;
                self.deps = deps.map(Arc::new);
                outcome
            }
            Transition::Activate => {
                let Some(deps) = self.deps.clone() else {
                    return Outcome::Error;
                };
                let node = self.node.clone();
                let d = deps.clone();
                let outcome = self
                    .guarded("activate", async move { node.activate(&d).await })
                    .await;
                if outcome == Outcome::Success {
                    let stop = CancellationToken::new();
                    let task = tokio::spawn(self.node.clone().run(deps, stop.clone()));
                    self.running = Some(Running { stop, task });
                }
                outcome
            }
            Transition::Deactivate => {
                if !self.stop_running().await {
                    return Outcome::Error;
                }
                self.deactivate_callback().await
            }
            Transition::Cleanup => {
                let Some(deps) = self.deps.take() else {
                    return Outcome::Success;
                };
                let node = self.node.clone();
                self.guarded("cleanup", async move { node.cleanup(deps).await })
                    .await
            }
            Transition::UnconfiguredShutdown
            | Transition::InactiveShutdown
            | Transition::ActiveShutdown => {
                let drained = self.stop_running().await;
                let deps = self.deps.take();
                let node = self.node.clone();
                let outcome = self
                    .guarded("shutdown", async move { node.shutdown(deps).await })
                    .await;
                if drained { outcome } else { Outcome::Error }
            }
            _ => Outcome::Error,
        }
    }

    async fn deactivate_callback(&mut self) -> Outcome {
        let Some(deps) = self.deps.clone() else {
            return Outcome::Success;
        };
        let node = self.node.clone();
        self.guarded("deactivate", async move { node.deactivate(&deps).await })
            .await
    }

    /// Stops `run` and waits for running work; false when it had to be aborted.
    async fn stop_running(&mut self) -> bool {
        let Some(mut running) = self.running.take() else {
            return true;
        };
        running.stop.cancel();
        match tokio::time::timeout(self.opts.drain_timeout, &mut running.task).await {
            Ok(Ok(Ok(()))) => true,
            Ok(Ok(Err(e))) => {
                warn!(node = %self.ctx.fqn(), "run ended with an error while stopping: {e}");
                true
            }
            Ok(Err(join)) => {
                warn!(node = %self.ctx.fqn(), "run panicked while stopping: {join}");
                true
            }
            Err(_) => {
                warn!(node = %self.ctx.fqn(), "running work did not finish within {:?}; aborted", self.opts.drain_timeout);
                running.task.abort();
                false
            }
        }
    }

    async fn guarded<F>(&self, name: &str, fut: F) -> Outcome
    where
        F: Future<Output = Result<(), CallbackError>> + Send + 'static,
    {
        self.guarded_value(name, fut).await.0
    }

    /// Runs a callback in its own task with a timeout, so a panic or a hang becomes an error.
    async fn guarded_value<T, F>(&self, name: &str, fut: F) -> (Outcome, Option<T>)
    where
        T: Send + 'static,
        F: Future<Output = Result<T, CallbackError>> + Send + 'static,
    {
        let task = tokio::spawn(fut);
        let abort = task.abort_handle();
        let result = match tokio::time::timeout(self.opts.callback_timeout, task).await {
            Ok(Ok(r)) => r,
            Ok(Err(join)) => Err(CallbackError::broken(format!("{name} panicked: {join}"))),
            Err(_) => {
                abort.abort();
                Err(CallbackError::broken(format!(
                    "{name} did not return within {:?}",
                    self.opts.callback_timeout
                )))
            }
        };
        match result {
            Ok(v) => (Outcome::Success, Some(v)),
            Err(e) => {
                let (word, outcome) = if e.is_error() {
                    ("errored", Outcome::Error)
                } else {
                    ("failed", Outcome::Failure)
                };
                let why = e.reason();
                warn!(node = %self.ctx.fqn(), "{name} {word}: {why}");
                self.rosout
                    .error(name, &format!("{name} {word}: {why}"))
                    .await;
                (outcome, None)
            }
        }
    }
}

/// The full name of node `name` in `namespace` (`/iron` + `engine` → `/iron/engine`).
pub fn qualified(namespace: &str, name: &str) -> String {
    if namespace.is_empty() || namespace == "/" {
        format!("/{name}")
    } else {
        format!("{}/{name}", namespace.trim_end_matches('/'))
    }
}

/// Declares the five lifecycle services and serves each from its own task.
fn spawn_services(
    node: &ZNode,
    fqn: &str,
    state: Arc<Mutex<State>>,
    commands: mpsc::Sender<Command>,
    stop: CancellationToken,
    replies: tokio_util::task::TaskTracker,
) -> Result<(), ControlError> {
    let declare_err = |name: &str| {
        let what = format!("{fqn}/{name}");
        move |source| ControlError::Declare { what, source }
    };
    let change = node
        .create_service::<srv::ChangeState>("~/change_state")
        .build()
        .map_err(declare_err("change_state"))?;
    let get_state = node
        .create_service::<srv::GetState>("~/get_state")
        .build()
        .map_err(declare_err("get_state"))?;
    let states = node
        .create_service::<srv::GetAvailableStates>("~/get_available_states")
        .build()
        .map_err(declare_err("get_available_states"))?;
    let transitions = node
        .create_service::<srv::GetAvailableTransitions>("~/get_available_transitions")
        .build()
        .map_err(declare_err("get_available_transitions"))?;
    let graph = node
        .create_service::<srv::GetAvailableTransitions>("~/get_transition_graph")
        .build()
        .map_err(declare_err("get_transition_graph"))?;

    let what = format!("{fqn}/change_state");
    let s = state.clone();
    spawn_server(change, what.clone(), stop.clone(), move |req| {
        let (s, commands, what) = (s.clone(), commands.clone(), what.clone());
        let replies = replies.clone();
        async move {
            // Answered from its own task: a transition may take a while, and get_state must
            // keep answering meanwhile (it reports the transition state).
            replies.spawn(async move {
                let busy = !s.lock().expect("state lock").is_primary();
                let success = if busy {
                    warn!(service = %what, "refused: a transition is in progress");
                    false
                } else {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    let transition = &req.message().transition;
                    let cmd = Command {
                        id: transition.id,
                        label: transition.label.clone(),
                        reply: Some(tx),
                    };
                    commands.send(cmd).await.is_ok() && rx.await.unwrap_or(false)
                };
                answer(req, &wire::ChangeStateResponse { success }, &what).await;
            });
        }
    });

    let what = format!("{fqn}/get_state");
    let s = state.clone();
    spawn_server(get_state, what.clone(), stop.clone(), move |req| {
        let current = *s.lock().expect("state lock");
        let what = what.clone();
        async move {
            let resp = wire::GetStateResponse {
                current_state: msgs::state(current),
            };
            answer(req, &resp, &what).await;
        }
    });

    let what = format!("{fqn}/get_available_states");
    spawn_server(states, what.clone(), stop.clone(), move |req| {
        let what = what.clone();
        async move {
            let resp = wire::GetAvailableStatesResponse {
                available_states: State::ALL.into_iter().map(msgs::state).collect(),
            };
            answer(req, &resp, &what).await;
        }
    });

    let what = format!("{fqn}/get_available_transitions");
    spawn_server(transitions, what.clone(), stop.clone(), move |req| {
        let current = *state.lock().expect("state lock");
        let what = what.clone();
        async move {
            let resp = wire::GetAvailableTransitionsResponse {
                available_transitions: machine::available_from(current)
                    .map(msgs::description)
                    .collect(),
            };
            answer(req, &resp, &what).await;
        }
    });

    let what = format!("{fqn}/get_transition_graph");
    spawn_server(graph, what.clone(), stop, move |req| {
        let what = what.clone();
        async move {
            let resp = wire::GetAvailableTransitionsResponse {
                available_transitions: machine::GRAPH.into_iter().map(msgs::description).collect(),
            };
            answer(req, &resp, &what).await;
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::CallbackError;

    /// An error whose text leaves its cause out, as many wrapping errors do.
    #[derive(Debug, thiserror::Error)]
    #[error("opening the log")]
    struct Opening(#[source] std::io::Error);

    #[test]
    fn a_refusal_carries_its_cause_to_the_reason_once() {
        let denied = || std::io::Error::new(std::io::ErrorKind::PermissionDenied, "log.db: denied");
        let e = CallbackError::refused_by(Opening(denied()));
        assert!(!e.is_error());
        assert_eq!(e.reason(), "opening the log: log.db: denied");
        assert!(std::error::Error::source(&e).is_some(), "the cause is kept");
        let e = CallbackError::refused_while("configure", Opening(denied()));
        assert_eq!(e.reason(), "configure: opening the log: log.db: denied");
        // A cause already in the text is not repeated.
        let e = CallbackError::refused_while("reading", denied());
        assert_eq!(e.reason(), "reading: log.db: denied");
        let e = CallbackError::broken("it stopped");
        assert!(e.is_error());
        assert_eq!(
            (e.reason(), e.to_string()),
            ("it stopped".into(), "error: it stopped".into())
        );
    }
}
