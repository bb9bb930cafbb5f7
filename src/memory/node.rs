//! The projector as a managed node (`/iron/memory/projector`): `configure` opens the configured
//! log and creates `projection.db`, `run` projects the log into it until deactivated. It is the
//! only writer of that database.

use crate::spine::control::lifecycle::RunError;
use std::{path::PathBuf, sync::Arc};

use tokio_util::sync::CancellationToken;
use tracing::info;

use super::projector::{self, ProjectorDeps, ProjectorExit};
use crate::{
    core::config::Config,
    spine::{
        control::lifecycle::{CallbackError, ManagedNode, NodeContext},
        durable::AnyLog,
    },
};

/// The projector node.
#[derive(Debug, Default)]
pub struct ProjectorNode;

/// What `configure` opened.
pub struct ProjectorRuntime {
    log: AnyLog,
    db: PathBuf,
}

impl ManagedNode for ProjectorNode {
    type Deps = ProjectorRuntime;

    async fn configure(&self, _ctx: &NodeContext) -> Result<ProjectorRuntime, CallbackError> {
        let config = Config::load().map_err(|e| CallbackError::Failure(e.to_string()))?;
        let log = AnyLog::open(&config)
            .await
            .map_err(|e| CallbackError::Failure(e.to_string()))?;
        let db = config.state_path(&config.memory.projection);
        // Created here, not in `run`, so that a reader started once the node is active
        // (`iron recall` right after `iron up` says so) finds the database and its tables.
        let path = db.clone();
        tokio::task::spawn_blocking(move || projector::open_writer(&path).map(drop))
            .await
            .map_err(|e| CallbackError::Failure(e.to_string()))?
            .map_err(|e| CallbackError::Failure(e.to_string()))?;
        info!("projecting the MEM stream into {}", db.display());
        Ok(ProjectorRuntime { log, db })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<ProjectorRuntime>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let run = projector::run(
            ProjectorDeps::new(deps.log.clone(), deps.db.clone()),
            shutdown,
        );
        match run.await {
            Ok(ProjectorExit::Stopped { last_seq }) => {
                info!("projector stopped at sequence {last_seq}");
                Ok(())
            }
            Err(e) => Err(RunError::new("projecting", e)),
        }
    }
}
