//! The memory projector node (`/iron/memory/projector`), the single writer of projection.db.

use std::process::ExitCode;

use iron::{memory::node::ProjectorNode, spine::control::lifecycle::HostOptions};

fn main() -> ExitCode {
    let (_own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    iron::cli::node::main(
        ProjectorNode,
        ros,
        "projector",
        "/iron/memory",
        HostOptions::default(),
    )
}
