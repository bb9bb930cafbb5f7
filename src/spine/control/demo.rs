//! A small managed node with an `AolTask` action server: the reference for how an Iron node is
//! written, and what the spine's tests, `iron task send` and `iron bench control` exercise
//! until the engine exists.
//!
//! A goal's `context_json` may set `{"steps": N, "step_ms": M}` (default 3 × 100 ms); it
//! gets one feedback per step and succeeds with `<echo_prefix><instruction>` (`echo: ` unless
//! the node's `echo_prefix` option or parameter says otherwise). An empty instruction
//! with no steps answers at once (the round-trip benchmark's empty goal). A cancel request
//! ends the goal as canceled at the next step.

use crate::spine::control::lifecycle::RunError;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::{sync::Mutex, task::JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::{
    action::{ActionOptions, ActionServer, GoalRequest},
    lifecycle::{CallbackError, ManagedNode, NodeContext, State},
};
use crate::interfaces::{AolTask, AolTaskFeedback, AolTaskResult};
use crate::protocol::{TaskContext, TaskOutcome};

/// Which callbacks should refuse (`Failure`) or break (`Error`), and how many runs end in an
/// error: for exercising the lifecycle and its supervision.
#[derive(Debug, Clone)]
pub struct DemoNode {
    /// Transition names (configure, activate, deactivate, cleanup, shutdown) that fail.
    pub fail_on: Vec<String>,
    /// Transition names that error.
    pub error_on: Vec<String>,
    /// How many of the next runs end in an error as soon as they start (as a node's run does
    /// when what it depends on goes away), taking the node through error processing.
    pub failing_runs: Arc<AtomicUsize>,
    /// What a result's text starts with (`echo: ` by default).
    pub echo_prefix: String,
}

/// What the demo node builds at configure.
pub struct DemoDeps {
    server: ActionServer<AolTask>,
    goals: Mutex<tokio::sync::mpsc::Receiver<GoalRequest<AolTask>>>,
    _echo: zenoh::query::Queryable<()>,
}

/// The raw Zenoh key the demo node answers with an echo (the baseline of `iron bench control`).
pub fn echo_key(node_fqn: &str) -> String {
    format!("iron/bench{node_fqn}/echo")
}

impl DemoNode {
    fn outcome(&self, callback: &str) -> Result<(), CallbackError> {
        info!("callback {callback}");
        if self.error_on.iter().any(|c| c == callback) {
            return Err(CallbackError::broken(format!("{callback} told to error")));
        }
        if self.fail_on.iter().any(|c| c == callback) {
            return Err(CallbackError::refused(format!("{callback} told to fail")));
        }
        Ok(())
    }
}

impl ManagedNode for DemoNode {
    type Deps = DemoDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<DemoDeps, CallbackError> {
        self.outcome("configure")?;
        let name = format!("{}/task", ctx.fqn());
        let (server, goals) =
            ActionServer::<AolTask>::new(&ctx.node, &name, ActionOptions::default())
                .map_err(CallbackError::broken_by)?;
        // Like the engine it stands in for: every refusal goes out with its code.
        server
            .publish_rejections(&ctx.node, |goal| goal.task_id.clone())
            .map_err(CallbackError::broken_by)?;
        let echo = ctx
            .node
            .session()
            .declare_queryable(echo_key(&ctx.fqn()))
            .callback(|query| {
                use zenoh::Wait;
                let payload = query.payload().cloned().unwrap_or_default();
                if let Err(e) = query.reply(query.key_expr().clone(), payload).wait() {
                    tracing::warn!("echo reply failed: {e}");
                }
            })
            .await
            .map_err(|e| CallbackError::broken(format!("declaring the echo queryable: {e}")))?;
        Ok(DemoDeps {
            server,
            goals: Mutex::new(goals),
            _echo: echo,
        })
    }

    async fn activate(&self, _deps: &Arc<DemoDeps>) -> Result<(), CallbackError> {
        self.outcome("activate")
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<DemoDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let failing = self
            .failing_runs
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if let Ok(left) = failing {
            return Err(RunError::new(
                "running",
                format!("told to fail ({left} more run(s) will)"),
            ));
        }
        deps.server.set_accepting(true);
        let mut goals = deps.goals.lock().await;
        let mut running = JoinSet::new();
        loop {
            tokio::select! {
                goal = goals.recv() => {
                    let Some(goal) = goal else { break };
                    running.spawn(execute(goal, self.echo_prefix.clone()));
                }
                _ = shutdown.cancelled() => break,
                Some(_) = running.join_next(), if !running.is_empty() => {}
            }
        }
        // Stop taking goals; let the running ones finish.
        deps.server.set_accepting(false);
        while running.join_next().await.is_some() {}
        Ok(())
    }

    async fn deactivate(&self, _deps: &Arc<DemoDeps>) -> Result<(), CallbackError> {
        self.outcome("deactivate")
    }

    async fn cleanup(&self, _deps: Arc<DemoDeps>) -> Result<(), CallbackError> {
        self.outcome("cleanup")
    }

    async fn shutdown(&self, _deps: Option<Arc<DemoDeps>>) -> Result<(), CallbackError> {
        self.outcome("shutdown")
    }

    async fn on_error(&self, failed_in: State) -> Result<(), CallbackError> {
        info!("callback on_error (from {failed_in})");
        Ok(())
    }
}

async fn execute(request: GoalRequest<AolTask>, echo_prefix: String) {
    let (goal, handle) = request.accept().await;
    info!(task = %goal.task_id, "goal accepted: {:?}", goal.instruction);
    // Like an expert: a malformed context is refused with its reason, never read as empty.
    let ctx = match TaskContext::parse(&goal.context_json) {
        Ok(ctx) => ctx,
        Err(e) => {
            let result = AolTaskResult {
                status: TaskOutcome::Rejected.to_string(),
                text: e.to_string(),
                result_json: "{}".into(),
            };
            handle.abort(result).await;
            return;
        }
    };
    // The demo's own fields, which the protocol carries unread (`extra`).
    let number = |key: &str| ctx.extra.get(key).and_then(serde_json::Value::as_u64);
    let steps = match number("steps") {
        Some(n) => n,
        None if goal.instruction.is_empty() => 0,
        None => 3,
    };
    let step = Duration::from_millis(number("step_ms").unwrap_or(100));
    for i in 0..steps {
        let fb = AolTaskFeedback {
            stage: "working".into(),
            message: format!("step {} of {steps}", i + 1),
            progress: (i + 1) as f32 / steps as f32,
        };
        let _ = handle.feedback(fb).await;
        tokio::select! {
            _ = tokio::time::sleep(step) => {}
            _ = handle.cancel_requested() => {
                let result = AolTaskResult {
                    status: TaskOutcome::Canceled.to_string(),
                    text: format!("canceled after {i} of {steps} steps"),
                    result_json: "{}".into(),
                };
                handle.canceled(result).await;
                return;
            }
        }
    }
    let result = AolTaskResult {
        status: TaskOutcome::Succeeded.to_string(),
        text: format!("{echo_prefix}{}", goal.instruction),
        result_json: serde_json::json!({ "task_id": goal.task_id, "steps": steps }).to_string(),
    };
    handle.succeed(result).await;
}
