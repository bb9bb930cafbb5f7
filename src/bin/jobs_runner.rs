//! The durable-jobs runner of one mesh (`/iron/jobs/<mesh>/runner`).

use std::{path::PathBuf, process::ExitCode};

use clap::Parser;
use iron::{
    cli::node::Start,
    jobs::{Registry, node::RunnerNode, testflows::Variant},
};

/// Runs the durable jobs of one mesh: replays each flow against its diary.
#[derive(Debug, Parser)]
#[command(name = "jobs_runner")]
struct Args {
    /// The mesh whose jobs it runs.
    #[arg(long)]
    mesh: String,
    /// Where the Python flows are (the agent folders).
    #[arg(long, default_value = "aem")]
    aem: PathBuf,
    /// The Python interpreter for Python flows.
    #[arg(long, default_value = "python3")]
    python: PathBuf,
    /// Configure and activate without being told.
    #[arg(long)]
    autostart: bool,
    /// Tests: register the built-in test flows, as originally written or as edited.
    #[arg(long, value_name = "VARIANT", value_parser = ["original", "edited"])]
    test_flows: Option<String>,
    /// Tests: hold every acknowledgement until this file exists.
    #[arg(long, value_name = "FILE")]
    hold_before_ack: Option<PathBuf>,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let ns = format!("/iron/jobs/{}", a.mesh);
        let node = RunnerNode {
            mesh: a.mesh,
            registry: Registry::new(),
            python: Some((a.aem, a.python)),
            test_flows: a.test_flows.map(|v| {
                if v == "edited" {
                    Variant::Edited
                } else {
                    Variant::Original
                }
            }),
            hold_before_ack: a.hold_before_ack,
            // Dying is the safe answer to a lost lease (another runner may be running the
            // jobs) and to a failed durable plane; the supervisor starts a fresh runner.
            exit: |code| std::process::exit(code),
        };
        Ok(Start::new(node, "runner", ns).autostart(a.autostart))
    })
}
