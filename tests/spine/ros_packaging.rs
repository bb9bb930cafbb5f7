//! What a ROS 2 user needs of the package, checked with the parts of the ROS 2 tool chain these
//! machines can install (Debian's python3-rosidl, python3-ament-index): every interface file
//! parses with rosidl's own parser, and the launch file, imported against stand-ins for
//! `launch`/`launch_ros` (which cannot be installed here), starts the router, waits until it
//! accepts sessions, and only then starts exactly the processes of `launch/bringup.yaml`.
//! The colcon build of the package is checked by `tests/ros/colcon_check.sh`.

use std::path::Path;
use std::process::{Command, Output};

use iron::launch::Plan;
use serde_json::{Value, json};

/// Debian's python, where the ROS 2 tool chain's Debian packages install their modules.
const ROS_PYTHON: &str = "/usr/bin/python3";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn ros_python(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let probe = Command::new(ROS_PYTHON)
        .args([
            "-c",
            "import rosidl_adapter, rosidl_parser, ament_index_python, yaml",
        ])
        .output();
    assert!(
        probe.as_ref().is_ok_and(|o| o.status.success()),
        "{ROS_PYTHON} lacks the ROS 2 tool chain ({probe:?}); install it: apt-get install \
         python3-rosidl python3-ament-index python3-yaml (scripts/test.sh does)"
    );
    let mut cmd = Command::new(ROS_PYTHON);
    cmd.args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run python")
}

#[test]
fn every_interface_parses_with_rosidl() {
    let script = repo().join("tests/ros/check_interfaces.py");
    let out = ros_python(&[script.to_str().unwrap()], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = ["msg", "srv", "action"]
        .iter()
        .flat_map(|d| std::fs::read_dir(repo().join(d)).unwrap())
        .count();
    assert!(
        text.contains(&format!("{files} file(s) checked, 0 failed")),
        "{text}"
    );
    assert!(
        text.contains("ok action/AolTask.action: action AolTask"),
        "{text}"
    );

    // The check fails on what rosidl rejects.
    let bad = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bad.path().join("msg")).unwrap();
    std::fs::write(bad.path().join("msg/Bad.msg"), "int99 count\n").unwrap();
    let out = ros_python(
        &[script.to_str().unwrap(), bad.path().to_str().unwrap()],
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains("FAIL msg/Bad.msg"),
        "{text}"
    );
}

/// The plan the launch file describes (see tests/ros/launch_plan.py).
fn launch_plan(args: &[&str], list: Option<&Path>) -> Value {
    let script = repo().join("tests/ros/launch_plan.py");
    let mut all = vec![script.to_str().unwrap()];
    all.extend_from_slice(args);
    let list = list.map(|l| l.display().to_string());
    let envs: Vec<(&str, &str)> = list
        .iter()
        .map(|l| ("IRON_LAUNCH_LIST", l.as_str()))
        .collect();
    let out = ros_python(&all, &envs);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// What each node of `plan` must be started as.
fn expected_nodes(plan: &Plan, router: &str) -> Vec<Value> {
    plan.nodes
        .iter()
        .map(|n| {
            let params: serde_json::Map<String, Value> = n
                .params
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap()))
                .collect();
            json!({"node": {
                "package": "iron", "prefix": format!("iron ship --node {} --", n.fqn()),
                "executable": n.executable, "name": n.name,
                "namespace": n.namespace, "arguments": n.args, "parameters": [params],
                "env": {"IRON_ROUTER": router}, "respawn": n.respawn, "autostart": n.autostart,
            }})
        })
        .collect()
}

/// The words of a step's command after the executable.
fn command(step: &Value) -> Vec<String> {
    step["cmd"].as_array().unwrap()[1..]
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

fn check_plan(got: &Value, plan: &Plan, router: &str) {
    let steps = got["steps"].as_array().unwrap();
    // The router first, then the wait for it, and the nodes only once the wait succeeded.
    assert_eq!(steps[0]["process"], "iron_router", "{got:#}");
    assert_eq!(
        command(&steps[0]),
        ["router", "--listen", router],
        "{got:#}"
    );
    assert_eq!(steps[1]["process"], "iron_wait_router");
    assert_eq!(
        command(&steps[1])[..3],
        ["wait-router", "--router", router],
        "{got:#}"
    );
    assert_eq!(
        steps[2],
        json!({"after_exit_of": "iron_wait_router", "exit_code": 0})
    );
    assert_eq!(steps[3..], expected_nodes(plan, router)[..], "{got:#}");
    let failure = got["on_wait_failure"].to_string();
    assert!(failure.contains("never accepted a session"), "{got:#}");
}

#[test]
fn the_launch_file_starts_the_router_waits_for_it_then_the_listed_nodes() {
    let shipped = Plan::load(&repo().join("launch/bringup.yaml")).unwrap();
    // Defaults: the list's own router endpoint.
    check_plan(&launch_plan(&[], None), &shipped, &shipped.router.listen);
    // IRON_ROUTER in the environment and `router:=` on the command line: the router listens
    // where the nodes connect, whichever sets it.
    let env = "tcp/127.0.0.1:7611";
    check_plan(&launch_plan(&["--env-router", env], None), &shipped, env);
    let arg = "tcp/0.0.0.0:7612";
    check_plan(
        &launch_plan(&["--env-router", env, "--router", arg], None),
        &shipped,
        arg,
    );
    // A router that never answers starts no node.
    let failed = launch_plan(&["--wait-exit", "1"], None);
    assert!(
        !failed["steps"].to_string().contains("\"node\""),
        "{failed:#}"
    );

    // Arguments, parameters, namespaces and autostart reach the launch description as listed.
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.yaml");
    std::fs::write(
        &list,
        "router:\n  listen: tcp/127.0.0.1:7613\nnodes:\n  - name: runner\n    namespace: /iron/jobs/dev\n    executable: jobs_runner\n    args: [--mesh, dev]\n    params: {python: /usr/bin/python3, aem: aem}\n    autostart: false\n    respawn: false\n  - name: engine\n    executable: engine_node\n",
    )
    .unwrap();
    let custom = Plan::load(&list).unwrap();
    check_plan(
        &launch_plan(&[], Some(&list)),
        &custom,
        "tcp/127.0.0.1:7613",
    );
}
