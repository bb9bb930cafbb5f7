//! A resident expert: started by the launch list but left unconfigured, brought up by a
//! person with lifecycle transitions, serving tasks sent straight to it, and refusing them
//! once deactivated — the same node a ROS 2 user drives with `ros2 lifecycle set`.

use crate::support;

use std::time::Duration;

use support::project::Project;

const T: Duration = Duration::from_secs(60);

#[test]
fn a_resident_expert_waits_unconfigured_and_serves_once_a_person_activates_it() {
    let p = Project::scripted(
        "turns:\n  - expect: \"bridge\"\n    text: \"Closed, per two sources.\"\n",
    );
    let mut up = p.up(
        "nodes:\n  - name: analyst\n    namespace: /iron/experts/newsroom\n    executable: expert_node\n    args: [--expert, newsroom/analyst]\n    autostart: false\n",
        &[],
    );
    up.wait_for("up: 1 node(s) running", T);
    let (iron, ok) = (
        |args: &[&str]| p.iron(args),
        |args: &[&str]| p.iron_ok(args),
    );

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
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("nothing serves it"), "{said}");

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
