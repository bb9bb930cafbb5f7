//! The launch list (`launch/bringup.yaml`) and `iron up`, which starts it without ROS 2:
//! router first, then each node process, configured and activated through its lifecycle
//! services, supervised (a crashed node is restarted with backoff), and on stop deactivated
//! and shut down in reverse order. `launch/bringup.launch.py` reads the same list.

pub mod nats;
mod plan;
mod running;
mod supervisor;

pub use plan::{NodeSpec, Plan, RouterSpec};
pub use running::{RUNNING_FILE, Running, RunningGuard};
pub use supervisor::{Launch, up};

use std::path::PathBuf;

/// Errors of the launcher.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot read the launch list {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_norway::Error,
    },
    #[error("{path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
    #[error("cannot start {executable}: {source}")]
    Spawn {
        executable: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("node {node}: {problem}")]
    Node { node: String, problem: String },
    #[error(transparent)]
    Control(#[from] crate::spine::control::ControlError),
}
