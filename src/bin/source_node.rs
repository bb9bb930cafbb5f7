//! A perception source node, `/iron/msp/<mesh>/<source>`: runs the command the mesh's AEM.md
//! declares for the source and serves its newest state to experts that hold the grant.

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, msp::source::SourceNode};

/// Runs one perception source of the catalog and serves its newest state.
#[derive(Debug, Parser)]
#[command(name = "source_node")]
struct Args {
    /// The source, as <mesh>/<source>.
    #[arg(long, value_name = "MESH/SOURCE")]
    source: String,
}

fn main() -> ExitCode {
    iron::cli::node::start(|a: Args| {
        let (mesh, name) = iron::msp::split_name(&a.source).map_err(|e| e.to_string())?;
        let (ns, name) = (format!("/iron/msp/{mesh}"), name.to_string());
        Ok(Start::new(SourceNode { source: a.source }, name, ns))
    })
}
