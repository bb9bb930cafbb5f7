//! A background memory worker node (`/iron/memory/<worker>`): derives facts from the MEM
//! stream (extractor), keeps one current belief per subject (consolidator), a vector per
//! current fact (semantic), the entities facts name (graph) or lessons from a role's repeated
//! failures (reviewer).

use std::process::ExitCode;

use clap::Parser;
use iron::{
    cli::node::Start,
    memory::node::{Worker, WorkerNode},
};

/// Derives memory from the MEM stream in the background; may run behind, never blocks capture.
#[derive(Debug, Parser)]
#[command(name = "memory_worker")]
struct Args {
    /// Which worker: extractor (facts from published bulletins, structured tool results and,
    /// with a model configured, finished tasks' answers), consolidator (one current belief per
    /// subject; marks the rest superseded), semantic (a vector per current fact), graph (who
    /// and what the facts name) or reviewer (a lesson for a role from tasks that failed for
    /// the same reason).
    #[arg(long)]
    worker: Worker,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let node = WorkerNode::new(a.worker)
            .with_reader(iron::llm::facts::from_config)
            .with_embedder(iron::llm::embeddings::from_config);
        Ok(Start::new(node, a.worker.name(), "/iron/memory"))
    })
}
