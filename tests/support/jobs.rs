//! Durable-jobs processes on a [`Project`] with a router and a real nats-server
//! ([`jobs_project`]): the runner and the clock binaries, started the way the launch list
//! would.

#![allow(dead_code)]

use std::time::Duration;

use crate::support::Proc;
use crate::support::project::Project;

/// Long enough for a successor to take a lease a killed runner left (30 s TTL).
pub const LEASE_WAIT: Duration = Duration::from_secs(90);
pub const T: Duration = Duration::from_secs(30);

/// A project whose nodes join a router it runs and keep their jobs on JetStream.
pub fn jobs_project() -> Project {
    Project::offline().with_router().with_nats()
}

/// A runner for mesh `test` with the test flows and extra own arguments.
pub fn runner(p: &Project, tag: &str, extra: &[&str]) -> Proc {
    let mut args = vec!["--mesh", "test", "--autostart", "--test-flows", "original"];
    args.extend_from_slice(extra);
    args.extend([
        "--ros-args",
        "-r",
        "__node:=runner",
        "-r",
        "__ns:=/iron/jobs/test",
    ]);
    p.spawn(tag, env!("CARGO_BIN_EXE_jobs_runner"), &args)
}

/// The clock, active at once.
pub fn clock(p: &Project) -> Proc {
    p.spawn(
        "clock",
        env!("CARGO_BIN_EXE_jobs_clock"),
        &[
            "--autostart",
            "--ros-args",
            "-r",
            "__node:=clock",
            "-r",
            "__ns:=/iron/jobs",
        ],
    )
}
