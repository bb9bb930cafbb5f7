//! The durable-jobs gateway (`/iron/jobs/gateway`): sends a flow's expert requests as AolTask
//! goals and signals the answers back into the jobs.
//! Own arguments: `--action <name>` (default `/iron/engine/task`), `--goal-wait <seconds>`
//! (default 600), `--autostart`.

use std::process::ExitCode;
use std::time::Duration;

use iron::jobs::node::GatewayNode;
use iron::spine::control::lifecycle::HostOptions;

const USAGE: &str =
    "usage: jobs_gateway [--action <name>] [--goal-wait <seconds>] [--autostart] [--ros-args ...]";

fn main() -> ExitCode {
    let (own, ros) = match iron::cli::node::args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut node = GatewayNode {
        action: "/iron/engine/task".into(),
        goal_wait: Duration::from_secs(600),
    };
    let mut autostart = false;
    let mut it = own.into_iter().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--autostart" => autostart = true,
            "--action" => match it.next() {
                Some(a) => node.action = a,
                None => {
                    eprintln!("--action needs a name\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--goal-wait" => match it.next().and_then(|s| s.parse::<f64>().ok()) {
                Some(s) if s > 0.0 => node.goal_wait = Duration::from_secs_f64(s),
                _ => {
                    eprintln!("--goal-wait needs a number of seconds\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let opts = HostOptions {
        autostart,
        ..HostOptions::default()
    };
    iron::cli::node::main(node, ros, "gateway", "/iron/jobs", opts)
}
