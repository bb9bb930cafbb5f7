//! An expert process (`/iron/experts/<mesh>/<role>_<id>`), spawned by the engine for one task.

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, cognition::expert::ExpertNode};

/// One expert of the catalog as a managed node serving AolTask goals.
#[derive(Debug, Parser)]
#[command(name = "expert_node")]
struct Args {
    /// The expert, as <mesh>/<role>.
    #[arg(long, value_name = "MESH/ROLE")]
    expert: String,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        if !a.expert.contains('/') {
            return Err(format!("--expert {:?} is not <mesh>/<role>", a.expert).into());
        }
        let name = a.expert.replace(['/', '-'], "_");
        Ok(Start::new(
            ExpertNode { expert: a.expert },
            name,
            "/iron/experts",
        ))
    })
}
