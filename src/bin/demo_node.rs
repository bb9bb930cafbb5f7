//! The demo managed node with an AolTask server (see `iron::spine::control::demo`).

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, spine::control::demo::DemoNode};

/// The reference managed node: an AolTask server at <node>/task that echoes its goals.
#[derive(Debug, Parser)]
#[command(name = "demo_node")]
struct Args {
    /// Make this lifecycle callback fail (configure, activate, …); repeatable.
    #[arg(long, value_name = "TRANSITION")]
    fail_on: Vec<String>,
    /// Make this lifecycle callback error; repeatable.
    #[arg(long, value_name = "TRANSITION")]
    error_on: Vec<String>,
    /// End the first N runs (each activation's) in an error at once.
    #[arg(long, value_name = "N", default_value_t = 0)]
    fail_runs: usize,
    /// What a result's text starts with (a ROS parameter `echo_prefix` sets it too).
    #[arg(long, default_value = "echo: ")]
    echo_prefix: String,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let node = DemoNode {
            fail_on: a.fail_on,
            error_on: a.error_on,
            echo_prefix: a.echo_prefix,
            failing_runs: std::sync::Arc::new(a.fail_runs.into()),
        };
        Ok(Start::new(node, "demo", "/iron"))
    })
}
