//! Wire compatibility with an rmw_zenoh client no one on Iron wrote: the PyPI package
//! zenoh-ros2-sdk drives a demo node process through every lifecycle transition, an AolTask
//! goal with feedback, cancels, malformed input and shutdown (tests/interop/run_interop.sh),
//! and recomputes the golden type hashes.

use crate::support;

use std::{path::Path, process::Command};

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("start the interop script");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "interop failed ({}):\n{text}",
        out.status
    );
    text
}

#[test]
fn golden_type_hashes_are_current() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = run(Command::new(support::test_python())
        .arg(format!("{root}/tests/interop/golden_hashes.py"))
        .arg("--check"));
    assert!(text.contains("matches the known ROS hash"), "{text}");
}

#[test]
fn an_independent_rmw_zenoh_client_drives_a_node() {
    let root = env!("CARGO_MANIFEST_DIR");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_iron")).parent().unwrap();
    // The demo node is built alongside iron for every integration test.
    assert!(Path::new(env!("CARGO_BIN_EXE_demo_node")).is_file());
    let text = run(Command::new("bash")
        .arg(format!("{root}/tests/interop/run_interop.sh"))
        .env("IRON_BIN", bin_dir)
        .env("INTEROP_PYTHON", support::test_python()));
    for step in [
        "PASS configure",
        "PASS activate",
        "PASS action_goal",
        "PASS action_cancel",
        "PASS malformed",
        "PASS shutdown",
        "PASS node_exits",
        "PASS transition_events",
    ] {
        assert!(text.contains(step), "missing {step:?}:\n{text}");
    }
    assert!(text.contains("0 step(s) failed"), "{text}");
}
