//! The `main` of every node process: parse launch_ros's `--ros-args`, connect to the router,
//! and serve the node until it is shut down or the process is told to stop.

use std::{process::ExitCode, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use super::{CliError, init_tracing, stop_on_signals};
use crate::spine::control::{
    ControlConfig, ControlPlane,
    lifecycle::{HostOptions, ManagedNode, serve},
    ros_args::RosArgs,
};

/// Splits the process arguments: the node's own, and the ROS ones. ROS parameters (`-p`,
/// `--params-file`) are appended to the node's own arguments as options (see
/// [`RosArgs::param_options`]), so the node honours them or refuses them like any option.
pub fn args() -> Result<(Vec<String>, RosArgs), CliError> {
    let (mut own, ros) = RosArgs::split(std::env::args())?;
    let options = ros.param_options()?;
    if !options.is_empty() {
        eprintln!("ROS parameters taken as options: {}", options.join(" "));
        own.extend(options);
    }
    Ok((own, ros))
}

/// Runs `node` as the process's one managed node, named `default_name` in `default_ns` unless
/// `--ros-args -r __node:=… -r __ns:=…` says otherwise.
pub fn main<N: ManagedNode>(
    node: N,
    ros_args: RosArgs,
    default_name: &str,
    default_ns: &str,
    opts: HostOptions,
) -> ExitCode {
    init_tracing(ros_args.log_level.as_deref());
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async move {
        let name = ros_args
            .node_name
            .clone()
            .unwrap_or_else(|| default_name.to_string());
        let ns = ros_args
            .namespace
            .clone()
            .unwrap_or_else(|| default_ns.to_string());
        let control = ControlPlane::connect(ControlConfig::from_env()?).await?;
        let zn = control.node(&name, &ns)?;
        if let Err(e) = control.wait_for_router(&zn, Duration::from_secs(5)).await {
            tracing::warn!("{e}; serving anyway, peers will reach this node once a router is up");
        }
        let shutdown = CancellationToken::new();
        stop_on_signals(shutdown.clone());
        serve(Arc::new(node), control, zn, ros_args, opts, shutdown).await?;
        Ok::<_, CliError>(())
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
