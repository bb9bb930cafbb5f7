//! The durable-jobs clock (`/iron/jobs/clock`): turns due timers into `timer_due` events.

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, jobs::node::ClockNode};

/// Turns due timers of durable jobs into timer_due events.
#[derive(Debug, Parser)]
#[command(name = "jobs_clock")]
struct Args {
    /// Configure and activate without being told.
    #[arg(long)]
    autostart: bool,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        Ok(Start::new(ClockNode, "clock", "/iron/jobs").autostart(a.autostart))
    })
}
