//! The demo managed node with an AolTask server (see `iron::spine::control::demo`).
//! Own arguments: `--fail-on <transition>` and `--error-on <transition>`, repeatable.

use std::process::ExitCode;

use iron::spine::control::{demo::DemoNode, lifecycle::HostOptions};

fn main() -> ExitCode {
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut node = DemoNode::default();
    let mut it = own.into_iter().skip(1);
    while let Some(arg) = it.next() {
        match (arg.as_str(), it.next()) {
            ("--fail-on", Some(t)) => node.fail_on.push(t),
            ("--error-on", Some(t)) => node.error_on.push(t),
            // Started as a stand-in expert by the engine's delegation (tests).
            ("--expert", Some(_)) => {}
            _ => {
                eprintln!("usage: demo_node [--fail-on T]... [--error-on T]... [--ros-args ...]");
                return ExitCode::from(2);
            }
        }
    }
    iron::cli::node::main(node, ros, "demo", "/iron", HostOptions::default())
}
