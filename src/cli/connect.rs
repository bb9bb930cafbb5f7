//! The connection every command that talks to the running system opens: a Zenoh session on
//! the router and a client node, once the router answers ([`ControlPlane::client`]).

use std::time::Duration;

use super::CliError;
use crate::spine::control::ControlPlane;

/// Opens a session and a client node, and waits for the router.
pub(super) async fn connect(
    router: &str,
    timeout: Duration,
) -> Result<(ControlPlane, hiroz::node::ZNode), CliError> {
    Ok(ControlPlane::client(router, timeout).await?)
}
