//! The model node (`/iron/models`): holds the local sentence model once and embeds texts for
//! every other process over `iron/srv/Embed` at `/iron/models/embed`.

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, llm::local::ModelNode};

/// Serves the local sentence model (all-MiniLM-L6-v2, from `iron models pull`) to the experts
/// and the engine, so that one copy of its weights serves them all. Without the model it
/// answers each request with why, and they read words alone.
#[derive(Debug, Parser)]
#[command(name = "model_node")]
struct Args {}

fn main() -> ExitCode {
    iron::cli::node::start(|_: Args| Ok(Start::new(ModelNode, "models", "/iron")))
}
