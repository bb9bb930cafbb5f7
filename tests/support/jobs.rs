//! A running Iron for durable-jobs tests: a router, a real nats-server, a state directory,
//! and helpers to start the runner and the clock binaries and to run `iron jobs …`.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use iron::spine::durable::AnyLog;

use crate::support::nats::NatsServer;
use crate::support::{Plane, Proc};

/// Long enough for a successor to take a lease a killed runner left (30 s TTL).
pub const LEASE_WAIT: Duration = Duration::from_secs(90);
pub const T: Duration = Duration::from_secs(30);

pub struct World {
    pub plane: Plane,
    pub nats: NatsServer,
    pub state: tempfile::TempDir,
}

impl World {
    pub fn new() -> Self {
        Self {
            plane: Plane::start(),
            nats: NatsServer::start(),
            state: tempfile::tempdir().unwrap(),
        }
    }

    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("IRON_ROUTER", self.plane.endpoint.clone()),
            ("IRON_DURABLE", "jetstream".into()),
            ("IRON_NATS_URL", self.nats.url()),
            ("IRON_NATS_MONITOR", self.nats.monitor()),
            ("IRON_STATE_DIR", self.state.path().display().to_string()),
        ]
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.state.path().join(name)
    }

    pub fn spawn(&self, tag: &str, exe: &str, args: &[&str]) -> Proc {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Proc::spawn(tag, exe, args, &env)
    }

    /// A runner for mesh `test` with the test flows and extra own arguments.
    pub fn runner(&self, tag: &str, extra: &[&str]) -> Proc {
        let mut args = vec!["--mesh", "test", "--autostart", "--test-flows", "original"];
        args.extend_from_slice(extra);
        args.extend([
            "--ros-args",
            "-r",
            "__node:=runner",
            "-r",
            "__ns:=/iron/jobs/test",
        ]);
        self.spawn(tag, env!("CARGO_BIN_EXE_jobs_runner"), &args)
    }

    pub fn clock(&self) -> Proc {
        self.spawn(
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

    /// `iron <args>` against this world; stdout.
    pub fn iron(&self, args: &[&str]) -> String {
        crate::support::run_iron_ok(args, self.env())
    }

    pub async fn log(&self) -> AnyLog {
        let js = crate::support::harness::connect(&self.nats).await;
        AnyLog::JetStream(Box::new(js))
    }
}
