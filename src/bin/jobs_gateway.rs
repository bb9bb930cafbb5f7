//! The durable-jobs gateway (`/iron/jobs/gateway`): sends a flow's expert requests as AolTask
//! goals and signals the answers back into the jobs.

use std::{process::ExitCode, time::Duration};

use clap::Parser;
use iron::{cli::node::Start, jobs::node::GatewayNode};

/// Sends flows' expert requests as AolTask goals and signals the answers back.
#[derive(Debug, Parser)]
#[command(name = "jobs_gateway")]
struct Args {
    /// The action the requests go to.
    #[arg(long, default_value = "/iron/engine/task")]
    action: String,
    /// How long one request may take, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0, value_parser = positive_secs)]
    goal_wait: f64,
    /// Configure and activate without being told.
    #[arg(long)]
    autostart: bool,
}

fn positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number of seconds above 0")),
    }
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let node = GatewayNode {
            action: a.action,
            goal_wait: Duration::from_secs_f64(a.goal_wait),
        };
        Ok(Start::new(node, "gateway", "/iron/jobs").autostart(a.autostart))
    })
}
