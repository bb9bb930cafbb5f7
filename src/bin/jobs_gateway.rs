//! The durable-jobs gateway (`/iron/jobs/gateway`): sends a flow's expert requests as AolTask
//! goals and signals the answers back into the jobs.

use std::{process::ExitCode, time::Duration};

use clap::Parser;
use iron::{
    cli::node::{self, Start},
    jobs::node::GatewayNode,
};

/// Sends flows' expert requests as AolTask goals and signals the answers back.
#[derive(Debug, Parser)]
#[command(name = "jobs_gateway")]
struct Args {
    /// The action the requests go to.
    #[arg(long, default_value = "/iron/engine/task")]
    action: String,
    /// How long one request may take, in seconds.
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = node::positive_seconds)]
    goal_wait: Duration,
    /// Configure and activate without being told.
    #[arg(long)]
    autostart: bool,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let node = GatewayNode {
            action: a.action,
            goal_wait: a.goal_wait,
        };
        Ok(Start::new(node, "gateway", "/iron/jobs").autostart(a.autostart))
    })
}
