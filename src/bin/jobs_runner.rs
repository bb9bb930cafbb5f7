//! The durable-jobs runner of one mesh (`/iron/jobs/<mesh>/runner`).
//! Own arguments: `--mesh <mesh>` (required), `--aem <dir>` (Python flows, default `aem`),
//! `--python <interpreter>` (default `python3`), and for tests `--test-flows [edited]` and
//! `--hold-before-ack <file>`.

use std::path::PathBuf;
use std::process::ExitCode;

use iron::jobs::{Registry, node::RunnerNode, testflows::Variant};
use iron::spine::control::lifecycle::HostOptions;

const USAGE: &str = "usage: jobs_runner --mesh <mesh> [--aem <dir>] [--python <exe>] [--autostart] [--test-flows original|edited] [--hold-before-ack <file>] [--ros-args ...]";

fn main() -> ExitCode {
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut mesh = None;
    let (mut aem, mut python) = (PathBuf::from("aem"), PathBuf::from("python3"));
    let mut test_flows = None;
    let mut hold_before_ack = None;
    let mut autostart = false;
    let mut it = own.into_iter().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--autostart" => autostart = true,
            "--mesh" | "--aem" | "--python" | "--test-flows" | "--hold-before-ack" => {
                let Some(value) = it.next() else {
                    eprintln!("{arg} needs a value\n{USAGE}");
                    return ExitCode::from(2);
                };
                match arg.as_str() {
                    "--mesh" => mesh = Some(value),
                    "--aem" => aem = PathBuf::from(value),
                    "--python" => python = PathBuf::from(value),
                    "--hold-before-ack" => hold_before_ack = Some(PathBuf::from(value)),
                    _ => {
                        test_flows = Some(match value.as_str() {
                            "original" => Variant::Original,
                            "edited" => Variant::Edited,
                            other => {
                                eprintln!(
                                    "--test-flows is original or edited, not {other:?}\n{USAGE}"
                                );
                                return ExitCode::from(2);
                            }
                        })
                    }
                }
            }
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(mesh) = mesh else {
        eprintln!("--mesh is required\n{USAGE}");
        return ExitCode::from(2);
    };
    let node = RunnerNode {
        mesh: mesh.clone(),
        registry: Registry::new(),
        python: Some((aem, python)),
        test_flows,
        hold_before_ack,
        // Dying is the safe answer to a lost lease (another runner may be running the jobs)
        // and to a failed durable plane; the supervisor starts a fresh runner.
        exit: |code| std::process::exit(code),
    };
    let ns = format!("/iron/jobs/{mesh}");
    let opts = HostOptions {
        autostart,
        ..HostOptions::default()
    };
    iron::cli::node::main(node, ros, "runner", &ns, opts)
}
