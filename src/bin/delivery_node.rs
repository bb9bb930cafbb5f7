//! The delivery bridge node (`/iron/tools/delivery`): the native tool server that sends
//! finished replies to the terminal or to allowed webhooks and records each send.

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, tools::delivery::DeliveryNode};

/// Sends replies to the terminal or to allowed webhooks (IRON_DELIVERY_WEBHOOKS) and records
/// each send in the outbox.
#[derive(Debug, Parser)]
#[command(name = "delivery_node")]
struct Args {}

fn main() -> ExitCode {
    iron::cli::node::start(|_: Args| Ok(Start::new(DeliveryNode, "delivery", "/iron/tools")))
}
