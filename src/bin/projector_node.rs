//! The memory projector node (`/iron/memory/projector`), the single writer of projection.db.

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, memory::node::ProjectorNode};

/// Projects the MEM stream into projection.db (its only writer).
#[derive(Debug, Parser)]
#[command(name = "projector_node")]
struct Args {}

fn main() -> ExitCode {
    iron::cli::node::start(|_: Args| Ok(Start::new(ProjectorNode, "projector", "/iron/memory")))
}
