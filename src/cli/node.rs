//! The `main` of every node process: parse launch_ros's `--ros-args`, connect to the router,
//! and serve the node until it is shut down or the process is told to stop.

use std::{process::ExitCode, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use super::{CliError, init_tracing, stop_on_signals};
use crate::spine::control::{
    ControlConfig, ControlPlane,
    lifecycle::{HostOptions, ManagedNode, qualified, serve},
    ros_args::RosArgs,
};
use crate::view::otlp::Otlp;

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

/// What a node binary serves: the node, its default name and namespace (`--ros-args -r
/// __node:=… -r __ns:=…` override them) and its host options.
pub struct Start<N> {
    pub node: N,
    pub name: String,
    pub namespace: String,
    pub options: HostOptions,
}

impl<N> Start<N> {
    /// `node` named `name` in `namespace`, with the default host options.
    pub fn new(node: N, name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            node,
            name: name.into(),
            namespace: namespace.into(),
            options: HostOptions::default(),
        }
    }

    /// Configures and activates itself at start when `yes`.
    pub fn autostart(mut self, yes: bool) -> Self {
        self.options.autostart = yes;
        self
    }
}

/// The whole `main` of a node binary: the node's own flags are parsed as `A` (clap: an unknown
/// or malformed flag prints the usage and exits 2; `--help` prints it and exits 0), ROS
/// parameters become such flags (see [`args`]), `build` makes the node from them (an `Err` is
/// printed and exits 2), and the node is served until it is shut down (see [`main`]).
pub fn start<A, N>(
    build: impl FnOnce(A) -> Result<Start<N>, Box<dyn std::error::Error>>,
) -> ExitCode
where
    A: clap::Parser,
    N: ManagedNode,
{
    let (own, ros) = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let command = A::command().after_help(
        "ROS 2 arguments follow --ros-args: -r __node:=NAME, -r __ns:=/NAMESPACE, \
         -p name:=value and --params-file FILE (each parameter becomes the flag of its name), \
         --log-level LEVEL.",
    );
    let parsed = match command
        .try_get_matches_from(own)
        .and_then(|m| A::from_arg_matches(&m))
    {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match build(parsed) {
        Ok(s) => main(s.node, ros, &s.name, &s.namespace, s.options),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// A flag's number of seconds that is not one.
#[derive(Debug, thiserror::Error)]
#[error("{text:?} is not a number of seconds {range}")]
pub struct SecondsError {
    text: String,
    range: &'static str,
}

/// Value parser of a flag in seconds, 0 or more (fractions allowed).
pub fn seconds(text: &str) -> Result<Duration, SecondsError> {
    parse_seconds(text, "(0 or more)", |v| v >= 0.0)
}

/// Value parser of a flag in seconds, above 0 (fractions allowed).
pub fn positive_seconds(text: &str) -> Result<Duration, SecondsError> {
    parse_seconds(text, "above 0", |v| v > 0.0)
}

fn parse_seconds(
    text: &str,
    range: &'static str,
    ok: impl Fn(f64) -> bool,
) -> Result<Duration, SecondsError> {
    text.parse::<f64>()
        .ok()
        .filter(|v| ok(*v))
        .and_then(|v| Duration::try_from_secs_f64(v).ok())
        .ok_or_else(|| SecondsError {
            text: text.to_string(),
            range,
        })
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
        let zn = control.managed_node(&name, &ns, &ros_args.parameters()?)?;
        let otlp = Otlp::from_env(&qualified(&ns, &name));
        let mut opts = opts;
        opts.tracer = otlp.tracer();
        if let Err(e) = control.wait_for_router(&zn, Duration::from_secs(5)).await {
            tracing::warn!("{e}; serving anyway, peers will reach this node once a router is up");
        }
        let shutdown = CancellationToken::new();
        stop_on_signals(shutdown.clone());
        let served = serve(Arc::new(node), control, zn, ros_args, opts, shutdown).await;
        // An expert ends with its task: what it traced goes out before the process does.
        otlp.flush(Duration::from_secs(3)).await;
        served?;
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
