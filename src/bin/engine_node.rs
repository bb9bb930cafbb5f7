//! The engine node (`/iron/engine`): the action server `/iron/engine/task`.

use std::{path::PathBuf, process::ExitCode, time::Duration};

use clap::Parser;
use iron::{
    cli::node::{self, Start},
    cognition::engine::EngineNode,
};

/// Routes each task, runs it in a disposable expert process, judges and delivers the answer.
#[derive(Debug, Parser)]
#[command(name = "engine_node")]
struct Args {
    /// The expert executable (default: expert_node beside this binary).
    #[arg(long, value_name = "PATH")]
    expert_executable: Option<PathBuf>,
    /// An extra argument for every expert process; repeatable.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    expert_arg: Vec<String>,
    /// Bound on every task instead of each expert's `timeouts.task_secs`.
    #[arg(long, value_name = "N")]
    task_timeout_secs: Option<u64>,
    /// How long a delegation beyond the concurrency limit waits for a slot before it fails.
    #[arg(long, value_name = "SECONDS", value_parser = node::seconds)]
    slot_wait_secs: Option<Duration>,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let mut node = EngineNode::default();
        node.options.expert_executable = a.expert_executable;
        node.options.expert_args = a.expert_arg;
        node.options.task_timeout = a.task_timeout_secs.map(Duration::from_secs);
        if let Some(s) = a.slot_wait_secs {
            node.options.slot_wait = s;
        }
        Ok(Start::new(node, "engine", "/iron"))
    })
}
