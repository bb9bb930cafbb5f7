//! The console (`/iron/console`): `/metrics` and the views of the running system over HTTP,
//! on 127.0.0.1 by default, behind the deployment's console token.

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, view::console::ConsoleNode};

/// Serves the console over HTTP (every request needs the console token).
#[derive(Debug, Parser)]
#[command(name = "console_node")]
struct Args {
    /// host:port to listen on (default: IRON_CONSOLE_LISTEN, else 127.0.0.1:7480).
    #[arg(long)]
    listen: Option<String>,
    /// Configure and activate without being told.
    #[arg(long)]
    autostart: bool,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let node = ConsoleNode { listen: a.listen };
        Ok(Start::new(node, "console", "/iron").autostart(a.autostart))
    })
}
