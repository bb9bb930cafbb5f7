//! The durable-jobs clock (`/iron/jobs/clock`): turns due timers into `timer_due` events.
//! Own argument: `--autostart` (configure and activate without being told).

use std::process::ExitCode;

use iron::jobs::node::ClockNode;
use iron::spine::control::lifecycle::HostOptions;

fn main() -> ExitCode {
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut autostart = false;
    for arg in own.iter().skip(1) {
        match arg.as_str() {
            "--autostart" => autostart = true,
            _ => {
                eprintln!("usage: jobs_clock [--autostart] [--ros-args ...]");
                return ExitCode::from(2);
            }
        }
    }
    let opts = HostOptions {
        autostart,
        ..HostOptions::default()
    };
    iron::cli::node::main(ClockNode, ros, "clock", "/iron/jobs", opts)
}
