//! The trigger node (`/iron/jobs/triggers`): starts flows when perception sources show new
//! items and when their webhooks are called (`triggers:` in AEM.md; schedules are the clock's).

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use iron::jobs::triggers::node::TriggerNode;
use iron::spine::control::lifecycle::HostOptions;

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
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let args = Args::parse_from(own);
    let opts = HostOptions {
        autostart: args.autostart,
        ..HostOptions::default()
    };
    let node = TriggerNode {
        listen: args.listen,
    };
    iron::cli::node::main(node, ros, "triggers", "/iron/jobs", opts)
}
