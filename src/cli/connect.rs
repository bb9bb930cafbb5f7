//! The connection every command that talks to the running system opens: a Zenoh session on
//! the router and a client node, once the router answers.

use std::time::Duration;

use super::CliError;
use crate::spine::control::{ControlConfig, ControlPlane};

/// Opens a session and a client node, and waits for the router.
pub(super) async fn connect(
    router: &str,
    timeout: Duration,
) -> Result<(ControlPlane, hiroz::node::ZNode), CliError> {
    let config = ControlConfig {
        router: router.to_string(),
        ..ControlConfig::from_env()?
    };
    let control = ControlPlane::connect(config).await?;
    let node = control.node(&format!("iron_cli_{}", std::process::id()), "/")?;
    control.wait_for_router(&node, timeout).await?;
    Ok((control, node))
}
