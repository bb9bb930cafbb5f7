//! The durable-jobs runner of one mesh (`/iron/jobs/<mesh>/runner`).

use std::{path::PathBuf, process::ExitCode};

use clap::Parser;
use iron::{
    cli::node::Start,
    jobs::{Registry, node::RunnerNode},
    workspace::flow,
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
    #[cfg(feature = "test-support")]
    #[arg(long, value_name = "VARIANT", value_parser = ["original", "edited"])]
    test_flows: Option<String>,
    /// Tests: hold every acknowledgement until this file exists.
    #[cfg(feature = "test-support")]
    #[arg(long, value_name = "FILE")]
    hold_before_ack: Option<PathBuf>,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let ns = format!("/iron/jobs/{}", a.mesh);
        let mut registry = Registry::new();
        // Built in for every mesh: the review of what an expert changed in its scratch.
        registry.register(&format!("*/*/{}", flow::REVIEW_FLOW), flow::ReviewFlow);
        let hold_before_ack = test_seams(&a, &mut registry);
        let node = RunnerNode {
            mesh: a.mesh,
            registry,
            python: Some((a.aem, a.python)),
            hold_before_ack,
            // Dying is the safe answer to a lost lease (another runner may be running the
            // jobs) and to a failed durable plane; the supervisor starts a fresh runner.
            exit: |code| std::process::exit(code),
        };
        Ok(Start::new(node, "runner", ns).autostart(a.autostart))
    })
}

/// The test seams asked for: the built-in test flows registered, and the file acknowledgements
/// wait for. Only in a build with the `test-support` feature (the tests' build).
#[cfg(feature = "test-support")]
fn test_seams(a: &Args, registry: &mut Registry) -> Option<PathBuf> {
    use iron::jobs::testflows::{self, Variant};
    if let Some(v) = &a.test_flows {
        let variant = if v == "edited" {
            Variant::Edited
        } else {
            Variant::Original
        };
        testflows::register(registry, variant);
    }
    a.hold_before_ack.clone()
}

#[cfg(not(feature = "test-support"))]
fn test_seams(_: &Args, _: &mut Registry) -> Option<PathBuf> {
    None
}
