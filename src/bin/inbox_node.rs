//! The inbox node (`/iron/inbox`): zero model calls; queues every message durably and hands it
//! to the engine in order.

use std::{process::ExitCode, time::Duration};

use clap::Parser;
use iron::{cli::node::Start, cognition::inbox::InboxNode};

/// Queues every inbound message durably and hands it to the engine in order.
#[derive(Debug, Parser)]
#[command(name = "inbox_node")]
struct Args {
    /// Merge a session's messages that arrive within this many milliseconds into one turn.
    #[arg(long, value_name = "MS")]
    merge_window_ms: Option<u64>,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let mut node = InboxNode::default();
        if let Some(ms) = a.merge_window_ms {
            node.options.merge_window = Duration::from_millis(ms);
        }
        Ok(Start::new(node, "inbox", "/iron"))
    })
}
