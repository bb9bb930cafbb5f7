//! A resident expert: started by the launch list but left unconfigured, brought up by a
//! person with lifecycle transitions, serving tasks sent straight to it, and refusing them
//! once deactivated — the same node a ROS 2 user drives with `ros2 lifecycle set`.

mod support;

use std::time::Duration;

use support::{Proc, bin, free_port};

const T: Duration = Duration::from_secs(60);

#[test]
fn a_resident_expert_waits_unconfigured_and_serves_once_a_person_activates_it() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path();
    std::fs::write(
        dir.join("script.yaml"),
        "turns:\n  - expect: \"bridge\"\n    text: \"Closed, per two sources.\"\n",
    )
    .unwrap();
    let config = dir.join("iron.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {}\nmodels:\n  backends:\n    offline:\n      kind: scripted\n      script: {}\n  logical:\n    fast: [offline]\n    standard: [offline]\n    strong: [offline]\n",
            dir.display(),
            dir.join("script.yaml").display()
        ),
    )
    .unwrap();
    let list = dir.join("list.yaml");
    std::fs::write(
        &list,
        "nodes:\n  - name: analyst\n    namespace: /iron/experts/newsroom\n    executable: expert_node\n    args: [--expert, newsroom/analyst]\n    autostart: false\n",
    )
    .unwrap();
    let router = format!("tcp/127.0.0.1:{}", free_port());
    let config_s = config.display().to_string();
    let envs = [
        ("IRON_ROUTER", router.as_str()),
        ("IRON_CONFIG", config_s.as_str()),
    ];
    let iron = |args: &[&str]| {
        std::process::Command::new(bin("iron"))
            .args(args)
            .envs(envs)
            .output()
            .unwrap()
    };
    let ok = |args: &[&str]| {
        let out = iron(args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "iron {args:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let mut up = Proc::spawn(
        "up",
        &bin("iron"),
        &["up", "--launch", &list.display().to_string()],
        &envs,
    );
    up.wait_for("up: 1 node(s) running", T);

    let node = "/iron/experts/newsroom/analyst";
    let task = format!("{node}/task");
    assert!(ok(&["lifecycle", "get", node]).contains("unconfigured"));
    let refused = iron(&[
        "task",
        "send",
        "--action",
        &task,
        "--timeout",
        "3",
        "is the bridge closed?",
    ]);
    assert!(
        !refused.status.success(),
        "an unconfigured expert takes no task"
    );

    ok(&["lifecycle", "set", node, "configure"]);
    ok(&["lifecycle", "set", node, "activate"]);
    let answer = ok(&["task", "send", "--action", &task, "is the bridge closed?"]);
    assert!(answer.contains("Closed, per two sources."), "{answer}");

    ok(&["lifecycle", "set", node, "deactivate"]);
    assert!(ok(&["lifecycle", "get", node]).contains("inactive"));
    let refused = iron(&["task", "send", "--action", &task, "is the bridge closed?"]);
    assert!(
        !refused.status.success(),
        "an inactive expert takes no task"
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("rejected"), "{said}");

    up.signal(libc::SIGINT);
    assert!(up.wait_exit(T).expect("up exits").success());
}
