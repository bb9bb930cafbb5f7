//! Integration tests of durable jobs: journal, replay, faults, the gateway, Python flows, triggers: one test binary, one module per file.

#[path = "../support/mod.rs"]
mod support;
#[path = "../support/jobs.rs"]
mod world;

mod jobs_core;
mod jobs_faults;
mod jobs_gateway;
mod jobs_python;
mod triggers;
