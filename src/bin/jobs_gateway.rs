//! The durable-jobs gateway (`/iron/jobs/gateway`): sends a flow's expert requests as AolTask
//! goals and signals the answers back into the jobs; it also serves people's hunk decisions
//! over ROS (`/iron/workspace/decide_hunks`), the other duty that joins the two planes.

use std::{process::ExitCode, time::Duration};

use clap::Parser;
use iron::{
    cli::node::{self, Start},
    jobs::node::GatewayNode,
    spine::control::lifecycle::Both,
    workspace::ros::DecideService,
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
        let gateway = GatewayNode {
            action: a.action,
            goal_wait: a.goal_wait,
        };
        let node = Both::new(gateway, DecideService);
        Ok(Start::new(node, "gateway", "/iron/jobs").autostart(a.autostart))
    })
}
