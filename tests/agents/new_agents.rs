//! `iron new mesh` and `iron new expert` as a person uses them in a fresh project: the folders
//! compile at once, the sample flow's own test passes with plain Python, and under `iron up`
//! the new expert answers a task on the offline backend and its sample flow runs to the end
//! through a runner of the new mesh, both read back with `iron task show`; the task replays
//! against its record, and a changed skill is named as where the replay diverges; forks of it
//! (another instruction, another SKILL.md) run as tasks of their own, shown as branches.

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::{eventually, project::Project};

const T: Duration = Duration::from_secs(90);

const LAUNCH: &str = "nodes:
  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}
  - {name: gateway, namespace: /iron/jobs, executable: jobs_gateway, autostart: true}
  - {name: runner, namespace: /iron/jobs/desk, executable: jobs_runner, args: [--mesh, desk], autostart: true}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_mesh_and_expert_compile_answer_and_run_their_flow() {
    let p = Project::offline();
    let made = p.iron_ok_inside(&["new", "mesh", "desk"]);
    assert!(
        made.contains("aem/desk/skills/assistant/flows/answer.py"),
        "{made}"
    );
    assert!(
        made.contains("jobs_runner"),
        "it says how its flows are run:\n{made}"
    );
    p.iron_ok_inside(&["new", "expert", "desk/fact_checker"]);
    let check = p.iron_ok_inside(&["catalog", "check"]);
    assert!(check.contains("1 mesh(es), 2 expert(s)"), "{check}");
    // The fields are explained where they are written.
    let skill = std::fs::read_to_string(p.path("aem/desk/skills/fact_checker/SKILL.md")).unwrap();
    for field in ["name:", "memory:", "  - kind:"] {
        let line = skill.lines().find(|l| l.starts_with(field)).unwrap();
        assert!(line.contains(" # "), "{line}");
    }
    // A second time, or a bad name, is refused and changes nothing.
    let again = p.iron_inside(&["new", "expert", "desk/fact_checker"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let bad = p.iron_inside(&["new", "mesh", "Desk Two"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a valid mesh name"));

    let test = std::process::Command::new(support::test_python())
        .arg(p.path("aem/desk/skills/fact_checker/tests/test_answer.py"))
        .output()
        .unwrap();
    assert!(test.status.success(), "the sample flow's test: {test:?}");
    assert!(
        String::from_utf8_lossy(&test.stderr).contains("Ran 2 tests"),
        "{test:?}"
    );

    let up = p.up_inside(LAUNCH, &[]);
    up.wait_for("/iron/jobs/desk/runner: active", T);
    up.wait_for("/iron/jobs/gateway: active", T);
    let sent = p.iron_ok_inside(&[
        "task",
        "send",
        "--domain",
        "desk/fact_checker",
        "--wait",
        "60",
        "what is on the desk today?",
    ]);
    let result: Value = serde_json::from_str(sent.lines().last().unwrap()).unwrap();
    assert_eq!(result["goal_status"], "succeeded", "{sent}");
    assert!(
        !result["text"].as_str().unwrap().trim().is_empty(),
        "{sent}"
    );

    // The task replays against its record; once the skill's instructions change, the replay
    // names the first model call and the words that changed, and exits 1.
    let list = p.iron_ok_inside(&["task", "list"]);
    let id = list.split_whitespace().next().unwrap().to_string();
    let same = p.iron_ok_inside(&["task", "replay", &id]);
    assert!(
        same.contains("matches the record: 1 model call(s)"),
        "{same}"
    );
    let skill = p.path("aem/desk/skills/fact_checker/SKILL.md");
    let text = std::fs::read_to_string(&skill).unwrap();
    std::fs::write(&skill, format!("{text}\nCheck every figure twice.\n")).unwrap();
    let changed = p.iron_inside(&["task", "replay", &id]);
    assert_eq!(changed.status.code(), Some(1), "{changed:?}");
    let report = String::from_utf8_lossy(&changed.stdout);
    assert!(
        report.contains("DIVERGES at model call 1: the system prompt"),
        "{report}"
    );
    assert!(
        report.contains("now:") && report.contains("Check every figure twice."),
        "{report}"
    );
    std::fs::write(&skill, text).unwrap();

    // Forks: the same task with another instruction, and with another SKILL.md given as a
    // file (the folders are left as they are). Each is a task of its own that names where it
    // came from; `iron task show` shows the three branches, and each fork replays.
    let forked = |args: &[&str]| {
        let mut all = vec!["task", "fork", id.as_str(), "--at", "1", "--wait", "60"];
        all.extend_from_slice(args);
        let out = p.iron_ok_inside(&all);
        let result: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(result["goal_status"], "succeeded", "{out}");
    };
    forked(&["--instruction", "what is missing from the desk?"]);
    let other = p.write(
        "terse.md",
        "---\nname: fact_checker\nidentity: A terse clerk.\ndescription: Checks facts.\n---\n\nAnswer in one word.\n",
    );
    forked(&["--skill", other.to_str().unwrap()]);
    let show = p.iron_ok_inside(&["task", "show", &id]);
    assert_eq!(
        show.matches("another branch, forked at model call 1:")
            .count(),
        2,
        "{show}"
    );
    assert_eq!(
        show.matches(&format!("forked from {id} at model call 1"))
            .count(),
        2,
        "{show}"
    );
    assert!(
        show.contains("asked: \"what is missing from the desk?\""),
        "{show}"
    );
    let json: Value =
        serde_json::from_str(&p.iron_ok_inside(&["task", "show", &id, "--json"])).unwrap();
    let forks = json["forks"].as_array().unwrap();
    let prompt = |t: &Value| {
        let call = t["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["kind"] == "model_called")
            .unwrap();
        call["payload"]["prompt"]["new"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        prompt(&forks[1]).contains("Answer in one word."),
        "the other skill's prompt"
    );
    assert!(!prompt(&json).contains("Answer in one word."));
    for fork in forks {
        let fork_id = fork["task_id"].as_str().unwrap();
        let replay = p.iron_ok_inside(&["task", "replay", fork_id]);
        assert!(replay.contains("matches the record"), "{replay}");
    }
    // A step the task never made, a model this deployment does not have, a SKILL.md that
    // does not compile: refused with why.
    let model = p.iron_inside(&[
        "task", "fork", &id, "--at", "1", "--model", "strong", "--wait", "60",
    ]);
    assert!(!model.status.success());
    assert!(
        String::from_utf8_lossy(&model.stdout).contains("cannot fork: no models are configured"),
        "{model:?}"
    );
    let late = p.iron_inside(&["task", "fork", &id, "--at", "5"]);
    assert!(
        String::from_utf8_lossy(&late.stderr).contains("--at takes 1 to 1"),
        "{late:?}"
    );
    let broken = p.write("broken.md", "---\nname: fact_checker\n");
    let refused = p.iron_inside(&[
        "task",
        "fork",
        &id,
        "--at",
        "1",
        "--skill",
        broken.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains(&format!("{}:1", broken.display())), "{why}");

    let job = p.iron_ok_inside(&[
        "jobs",
        "start",
        "desk/fact_checker/answer",
        "--input",
        r#"{"question": "what is on the desk today?"}"#,
    ]);
    let job = job.trim().to_string();
    let diary = eventually("the sample flow done", T, || async {
        let show = p.iron_ok_inside(&["jobs", "show", &job]);
        show.contains(": done").then_some(show)
    })
    .await;
    assert!(
        diary.contains("\"answer\""),
        "the flow returned the answer:\n{diary}"
    );
    // The task the flow asked for is on the log as a step of the job.
    let list = p.iron_ok_inside(&["task", "list", "--domain", "desk"]);
    assert_eq!(
        list.lines().count(),
        5,
        "the sent task, its two forks, the refused one and the flow's:\n{list}"
    );
    let id = list
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let show = p.iron_ok_inside(&["task", "show", id]);
    assert!(show.contains(&format!("of job {job}")), "{show}");
}
