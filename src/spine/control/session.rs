//! The control-plane handle: one Zenoh session (ROS 2 context) per process, configured the way
//! rmw_zenoh_cpp configures a node's session, pointed at the Iron router.

use std::{sync::Arc, time::Duration};

use hiroz::{Builder, context::ZContext};

use super::ControlError;

/// The router a process connects to when nothing says otherwise (same as rmw_zenoh's default).
pub const DEFAULT_ROUTER: &str = "tcp/127.0.0.1:7447";

/// The environment variable that names the router endpoint for every Iron process.
pub const ROUTER_ENV: &str = "IRON_ROUTER";

/// How a process reaches the control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlConfig {
    /// Zenoh endpoint of the router, e.g. `tcp/127.0.0.1:7447`.
    pub router: String,
    /// ROS domain id (`ROS_DOMAIN_ID`), 0 by default.
    pub domain_id: usize,
}

impl Default for ControlConfig {
    fn default() -> Self {
        Self {
            router: DEFAULT_ROUTER.to_string(),
            domain_id: 0,
        }
    }
}

impl ControlConfig {
    /// Defaults overridden by `IRON_ROUTER` and `ROS_DOMAIN_ID` when they are set.
    /// A `ROS_DOMAIN_ID` that is not a number is an error, as it is for rcl.
    pub fn from_env() -> Result<Self, ControlError> {
        let mut config = Self::default();
        if let Ok(router) = std::env::var(ROUTER_ENV)
            && !router.trim().is_empty()
        {
            config.router = router.trim().to_string();
        }
        if let Ok(domain) = std::env::var("ROS_DOMAIN_ID") {
            config.domain_id = domain.trim().parse().map_err(|_| {
                ControlError::Config(format!(
                    "ROS_DOMAIN_ID={domain:?} is not a non-negative integer"
                ))
            })?;
        }
        Ok(config)
    }
}

/// A cheap, clonable handle to this process's control-plane session.
#[derive(Clone)]
pub struct ControlPlane {
    ctx: Arc<ZContext>,
    config: ControlConfig,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("router", &self.config.router)
            .finish_non_exhaustive()
    }
}

impl ControlPlane {
    /// Opens the session. `ZENOH_SESSION_CONFIG_URI` (a Zenoh config file) and
    /// `ZENOH_CONFIG_OVERRIDE` are honoured as rmw_zenoh honours them.
    pub async fn connect(config: ControlConfig) -> Result<Self, ControlError> {
        let cfg = config.clone();
        let ctx = tokio::task::spawn_blocking(move || {
            let mut builder =
                hiroz::context::ZContextBuilder::default().with_domain_id(cfg.domain_id);
            if std::env::var("ZENOH_SESSION_CONFIG_URI").is_err() {
                let zconfig = hiroz::config::SessionConfigBuilder::new()
                    .with_router_endpoint(&cfg.router)
                    .build_config()
                    .map_err(|source| ControlError::Session {
                        router: cfg.router.clone(),
                        source,
                    })?;
                builder = builder.with_zenoh_config(zconfig);
            }
            builder.build().map_err(|source| ControlError::Session {
                router: cfg.router.clone(),
                source,
            })
        })
        .await
        .map_err(|e| ControlError::Config(format!("session task failed: {e}")))??;
        Ok(Self {
            ctx: Arc::new(ctx),
            config,
        })
    }

    /// Creates the node a process serves (a managed node) with the standard parameter
    /// services (`~/list_parameters`, `~/get_parameters`, …), its `parameters` (from
    /// `--params-file` and `-p`) declared read-only: a node takes them at start, so `ros2
    /// param get` shows what it runs with and `ros2 param set` is refused.
    pub fn managed_node(
        &self,
        name: &str,
        namespace: &str,
        parameters: &[(String, serde_norway::Value)],
    ) -> Result<hiroz::node::ZNode, ControlError> {
        use hiroz::parameter::ParameterDescriptor;
        let node = self
            .ctx
            .create_node(name)
            .with_namespace(namespace)
            .build()
            .map_err(|source| ControlError::Declare {
                what: format!("node {namespace}/{name}"),
                source,
            })?;
        for (param, value) in parameters {
            let value = super::ros_args::parameter_value(value);
            let descriptor = ParameterDescriptor {
                read_only: true,
                description: "taken at start (--params-file, -p)".into(),
                ..ParameterDescriptor::new(param.as_str(), value.parameter_type())
            };
            node.declare_parameter(param, value, descriptor)
                .map_err(|e| {
                    ControlError::Config(format!("declaring the parameter {param}: {e}"))
                })?;
        }
        Ok(node)
    }

    /// Creates a plain (unmanaged) node, e.g. for a CLI client.
    pub fn node(&self, name: &str, namespace: &str) -> Result<hiroz::node::ZNode, ControlError> {
        self.ctx
            .create_node(name)
            .with_namespace(namespace)
            .without_parameters()
            .build()
            .map_err(|source| ControlError::Declare {
                what: format!("node {namespace}/{name}"),
                source,
            })
    }

    /// The underlying context, for graph queries.
    pub fn context(&self) -> &ZContext {
        &self.ctx
    }

    /// The configuration this session was opened with.
    pub fn config(&self) -> &ControlConfig {
        &self.config
    }

    /// A session on `router` (the rest of the configuration from the environment) and a
    /// client node named for this process, once the router answers within `timeout`: the
    /// connection every `iron` command that talks to a running system opens.
    pub async fn client(
        router: &str,
        timeout: Duration,
    ) -> Result<(ControlPlane, hiroz::node::ZNode), ControlError> {
        let config = ControlConfig {
            router: router.to_string(),
            ..ControlConfig::from_env()?
        };
        let control = ControlPlane::connect(config).await?;
        let node = control.node(&format!("iron_cli_{}", std::process::id()), "/")?;
        control.wait_for_router(&node, timeout).await?;
        Ok((control, node))
    }

    /// Waits until `node`'s session is connected to a router, or fails after `timeout`.
    pub async fn wait_for_router(
        &self,
        node: &hiroz::node::ZNode,
        timeout: Duration,
    ) -> Result<(), ControlError> {
        use zenoh::Wait;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if node.session().info().routers_zid().wait().next().is_some() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ControlError::Timeout {
                    what: format!(
                        "connecting to the router at {} (is `iron router` running?)",
                        self.config.router
                    ),
                    after: timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
