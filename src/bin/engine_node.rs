//! The engine node (`/iron/engine`): the action server `/iron/engine/task`.
//! Own arguments: `--expert-executable PATH` (default: `expert_node` beside this binary),
//! `--expert-arg ARG` (repeatable), `--task-timeout-secs N` (instead of each expert's
//! `timeouts.task_secs`), `--slot-wait-secs N` (how long a
//! delegation beyond the concurrency limit waits for a slot before it fails).

use std::{path::PathBuf, process::ExitCode, time::Duration};

use iron::{cognition::engine::EngineNode, spine::control::lifecycle::HostOptions};

fn main() -> ExitCode {
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut node = EngineNode::default();
    let mut it = own.into_iter().skip(1);
    while let Some(arg) = it.next() {
        match (arg.as_str(), it.next()) {
            ("--expert-executable", Some(p)) => {
                node.options.expert_executable = Some(PathBuf::from(p))
            }
            ("--expert-arg", Some(a)) => node.options.expert_args.push(a),
            ("--task-timeout-secs", Some(n)) if n.parse::<u64>().is_ok() => {
                node.options.task_timeout = Some(Duration::from_secs(n.parse().unwrap_or(600)));
            }
            ("--slot-wait-secs", Some(n))
                if n.parse::<f64>().is_ok_and(|s| s.is_finite() && s >= 0.0) =>
            {
                node.options.slot_wait = Duration::from_secs_f64(n.parse().unwrap_or(30.0));
            }
            _ => {
                eprintln!(
                    "usage: engine_node [--expert-executable PATH] [--expert-arg ARG]... [--task-timeout-secs N] [--slot-wait-secs N] [--ros-args ...]"
                );
                return ExitCode::from(2);
            }
        }
    }
    iron::cli::node::main(node, ros, "engine", "/iron", HostOptions::default())
}
