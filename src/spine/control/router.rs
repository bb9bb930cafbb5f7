//! `iron router`: a Zenoh router configured as `rmw_zenohd` configures it, so stock ROS 2
//! nodes (rmw_zenoh_cpp) and Iron's nodes discover each other through it.

use tokio_util::sync::CancellationToken;

use super::{ControlError, session::DEFAULT_ROUTER};

/// Where the router listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterConfig {
    /// Zenoh endpoints to listen on, e.g. `tcp/127.0.0.1:7447`.
    pub listen: Vec<String>,
    /// Other routers to link with (on other hosts), e.g. `tcp/10.0.0.2:7447`: nodes on
    /// either side then see each other as on one control plane. Retried until they answer.
    pub connect: Vec<String>,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            listen: vec![DEFAULT_ROUTER.to_string()],
            connect: Vec::new(),
        }
    }
}

/// A running router; dropping it closes the session.
pub struct Router {
    session: zenoh::Session,
    listen: Vec<String>,
}

impl Router {
    /// Opens the router session. Fails (rather than falling back) when an endpoint is taken.
    pub async fn start(config: RouterConfig) -> Result<Self, ControlError> {
        let endpoints = serde_json::to_string(&config.listen)
            .map_err(|e| ControlError::Config(format!("listen endpoints: {e}")))?;
        let mut zconfig = hiroz::config::RouterConfigBuilder::new()
            .build_config()
            .map_err(|source| ControlError::Session {
                router: config.listen.join(","),
                source,
            })?;
        zconfig
            .insert_json5("listen/endpoints", &endpoints)
            .map_err(|e| ControlError::Config(format!("listen endpoints {endpoints}: {e}")))?;
        // A router that cannot bind must say so instead of running deaf.
        zconfig
            .insert_json5("listen/exit_on_failure", "true")
            .map_err(|e| ControlError::Config(format!("listen/exit_on_failure: {e}")))?;
        if !config.connect.is_empty() {
            let peers = serde_json::to_string(&config.connect)
                .map_err(|e| ControlError::Config(format!("connect endpoints: {e}")))?;
            zconfig
                .insert_json5("connect/endpoints", &peers)
                .map_err(|e| ControlError::Config(format!("connect endpoints {peers}: {e}")))?;
        }
        zconfig
            .insert_json5("scouting/multicast/enabled", "false")
            .map_err(|e| ControlError::Config(format!("scouting: {e}")))?;
        let session = zenoh::open(zconfig)
            .await
            .map_err(|source| ControlError::Session {
                router: config.listen.join(","),
                source,
            })?;
        Ok(Self {
            session,
            listen: config.listen,
        })
    }

    /// The endpoints the router listens on.
    pub fn listen(&self) -> &[String] {
        &self.listen
    }

    /// The router's Zenoh id.
    pub fn zid(&self) -> String {
        self.session.zid().to_string()
    }

    /// Serves until `shutdown` fires, then closes the session.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), ControlError> {
        shutdown.cancelled().await;
        self.session
            .close()
            .await
            .map_err(|source| ControlError::Session {
                router: self.listen.join(","),
                source,
            })
    }
}
