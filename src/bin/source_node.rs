//! A perception source node, `/iron/msp/<mesh>/<source>`: runs the command the mesh's AEM.md
//! declares for the source and serves its newest state to experts that hold the grant.
//!
//! Usage: `source_node --source <mesh>/<source> [--ros-args …]`.

use std::process::ExitCode;

use iron::{msp::source::SourceNode, spine::control::lifecycle::HostOptions};

fn main() -> ExitCode {
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let source = match own.iter().position(|a| a == "--source") {
        Some(i) => own.get(i + 1).cloned(),
        None => None,
    };
    let Some(source) = source else {
        eprintln!("usage: source_node --source <mesh>/<source> [--ros-args …]");
        return ExitCode::from(2);
    };
    let (mesh, name) = match iron::msp::split_name(&source) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let ns = format!("/iron/msp/{mesh}");
    let name = name.to_string();
    iron::cli::node::main(
        SourceNode {
            source: source.clone(),
        },
        ros,
        &name,
        &ns,
        HostOptions::default(),
    )
}
