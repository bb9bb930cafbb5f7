//! An expert process (`/iron/experts/<mesh>/<role>_<id>`), spawned by the engine for one task.
//! Own argument: `--expert <mesh>/<role>`.

use std::process::ExitCode;

use iron::{cognition::expert::ExpertNode, spine::control::lifecycle::HostOptions};

fn main() -> ExitCode {
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut expert = None;
    let mut it = own.into_iter().skip(1);
    while let Some(arg) = it.next() {
        match (arg.as_str(), it.next()) {
            ("--expert", Some(e)) if e.contains('/') => expert = Some(e),
            _ => {
                eprintln!("usage: expert_node --expert <mesh>/<role> [--ros-args ...]");
                return ExitCode::from(2);
            }
        }
    }
    let Some(expert) = expert else {
        eprintln!("usage: expert_node --expert <mesh>/<role> [--ros-args ...]");
        return ExitCode::from(2);
    };
    let default_name = expert.replace(['/', '-'], "_");
    iron::cli::node::main(
        ExpertNode { expert },
        ros,
        &default_name,
        "/iron/experts",
        HostOptions::default(),
    )
}
