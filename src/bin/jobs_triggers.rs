//! The trigger node (`/iron/jobs/triggers`): starts flows when perception sources show new
//! items and when their webhooks are called (`triggers:` in AEM.md; schedules are the clock's).

use std::{net::SocketAddr, process::ExitCode};

use clap::Parser;
use iron::{cli::node::Start, jobs::triggers::node::TriggerNode};

/// Starts flows from source changes and webhook calls.
#[derive(Debug, Parser)]
#[command(name = "jobs_triggers")]
struct Args {
    /// Configure and activate without being told.
    #[arg(long)]
    autostart: bool,
    /// Address of the webhook endpoint (default: $IRON_WEBHOOK_LISTEN, else 127.0.0.1:7480);
    /// bound only when some trigger declares a webhook.
    #[arg(long)]
    listen: Option<SocketAddr>,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let node = TriggerNode { listen: a.listen };
        Ok(Start::new(node, "triggers", "/iron/jobs").autostart(a.autostart))
    })
}
