//! The delivery bridge node (`/iron/tools/delivery`): the native tool server that sends
//! finished replies to the terminal or to allowed webhooks and records each send.

use std::process::ExitCode;

use iron::{spine::control::lifecycle::HostOptions, tools::delivery::DeliveryNode};

fn main() -> ExitCode {
    let (_own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    iron::cli::node::main(
        DeliveryNode,
        ros,
        "delivery",
        "/iron/tools",
        HostOptions::default(),
    )
}
