//! The inbox node (`/iron/inbox`): zero model calls; queues every message durably and hands it
//! to the engine in order. Own argument: `--merge-window-ms N` (merge a session's rapid
//! messages into one turn).

use std::{process::ExitCode, time::Duration};

use iron::{cognition::inbox::InboxNode, spine::control::lifecycle::HostOptions};

fn main() -> ExitCode {
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut node = InboxNode::default();
    let mut it = own.into_iter().skip(1);
    while let Some(arg) = it.next() {
        match (arg.as_str(), it.next().and_then(|v| v.parse::<u64>().ok())) {
            ("--merge-window-ms", Some(ms)) => {
                node.options.merge_window = Duration::from_millis(ms)
            }
            _ => {
                eprintln!("usage: inbox_node [--merge-window-ms N] [--ros-args ...]");
                return ExitCode::from(2);
            }
        }
    }
    iron::cli::node::main(node, ros, "inbox", "/iron", HostOptions::default())
}
