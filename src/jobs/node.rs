//! The runner and the clock as managed nodes: `configure` opens the configured durable plane,
//! `run` is [`runner::run`] / [`clock::run`] until deactivated.

use crate::spine::control::lifecycle::RunError;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::info;

use super::python::PythonFlows;
use super::run::Flows;
use super::runner::{self, RunnerDeps, RunnerExit};
use super::triggers::Trigger;
use super::triggers::schedule::{Scheduled, Schedules};
use super::{Registry, clock};
use crate::{
    core::{config::Config, identity::Authority},
    spine::{
        control::lifecycle::{CallbackError, ManagedNode, NodeContext},
        durable::AnyLog,
    },
};

/// The configuration and the durable plane it names.
async fn open() -> Result<(Config, AnyLog), CallbackError> {
    let config = Config::load().map_err(CallbackError::refused_by)?;
    let log = AnyLog::open(&config)
        .await
        .map_err(CallbackError::refused_by)?;
    Ok((config, log))
}

/// `/iron/jobs/<mesh>/runner`.
pub struct RunnerNode {
    /// The mesh.
    pub mesh: String,
    /// Rust flows compiled into this binary.
    pub registry: Registry,
    /// Where Python flows live (`aem/`), and the interpreter.
    pub python: Option<(PathBuf, PathBuf)>,
    /// Test seam, see [`RunnerDeps::hold_before_ack`].
    pub hold_before_ack: Option<PathBuf>,
    /// Called with an exit code when the runner stops on its own (75: the lease is lost; 70:
    /// the durable plane failed): the binary exits so the supervisor starts a fresh runner.
    pub exit: fn(i32),
}

impl ManagedNode for RunnerNode {
    type Deps = RunnerDeps;

    async fn configure(&self, _ctx: &NodeContext) -> Result<RunnerDeps, CallbackError> {
        let (config, log) = open().await?;
        let registry = self.registry.clone();
        let python = match &self.python {
            Some((aem, python)) => Some(
                PythonFlows::new(aem, python)
                    .map_err(CallbackError::refused_by)?
                    .with_state_dir(&config.state_dir),
            ),
            None => None,
        };
        let authority = Authority::new(&config.state_dir, &config.operators);
        let flows = Flows { registry, python };
        let mut deps = RunnerDeps::new(log, flows, &self.mesh, authority);
        deps.hold_before_ack = self.hold_before_ack.clone();
        Ok(deps)
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<RunnerDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        match runner::run((*deps).clone(), shutdown).await {
            Ok(RunnerExit::Stopped) => Ok(()),
            Ok(RunnerExit::LeaseLost) => {
                (self.exit)(75);
                Err(RunError::new("running jobs", "the runner lost its lease"))
            }
            Err(e) => {
                tracing::error!("runner stopped: {e}");
                (self.exit)(70);
                Err(RunError::new("running jobs", e))
            }
        }
    }
}

/// `/iron/jobs/clock`.
#[derive(Debug, Default)]
pub struct ClockNode;

/// What the clock's `configure` prepared.
pub struct ClockDeps {
    log: AnyLog,
    /// Every trigger of the catalog (the clock keeps the schedule ones).
    triggers: Vec<Trigger>,
    tenant: String,
}

impl ManagedNode for ClockNode {
    type Deps = ClockDeps;

    /// Opens the log and reads the catalog's triggers (a missing catalog means none).
    async fn configure(&self, _ctx: &NodeContext) -> Result<ClockDeps, CallbackError> {
        let (config, log) = open().await?;
        let triggers = match crate::aem::read_state_catalog(&config) {
            Ok(catalog) => Trigger::all(&catalog),
            Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(CallbackError::refused_by(e)),
        };
        Ok(ClockDeps {
            log,
            triggers,
            tenant: config.tenant,
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<ClockDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let now = (crate::core::envelope::now_ms() / 1000) as i64;
        let schedules = Schedules {
            triggers: Scheduled::all(&deps.triggers, now),
            tenant: deps.tenant.clone(),
        };
        info!(
            "clock running; {} schedule trigger(s)",
            schedules.triggers.len()
        );
        clock::run(
            deps.log.clone(),
            Duration::from_millis(200),
            schedules,
            shutdown,
        )
        .await
        .map_err(|e| RunError::new("keeping time", e))
    }
}

/// `/iron/jobs/gateway`.
#[derive(Debug)]
pub struct GatewayNode {
    /// The action that runs experts (`/iron/engine/task`).
    pub action: String,
    /// How long an expert may take.
    pub goal_wait: Duration,
}

impl ManagedNode for GatewayNode {
    type Deps = super::gateway::GatewayDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<Self::Deps, CallbackError> {
        let (_, log) = open().await?;
        let client = crate::spine::control::action::ActionClient::new(&ctx.node, &self.action)
            .map_err(CallbackError::refused_by)?;
        Ok(super::gateway::GatewayDeps {
            log,
            client: Arc::new(client),
            send_timeout: Duration::from_secs(10),
            goal_wait: self.goal_wait,
            poll: Duration::from_millis(200),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<Self::Deps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        super::gateway::run((*deps).clone(), shutdown)
            .await
            .map_err(|e| RunError::new("asking experts", e))
    }
}
