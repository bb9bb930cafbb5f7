//! Declared budgets are enforced by the expert process and reported in the task's result: a
//! mesh's `defaults.budget` bounds tokens, an expert's own `budget` in capabilities.md narrows
//! its model calls, and either ending says which bound was spent and what the task used, in
//! the expert's result and, per step, in the engine's.

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::project::Project;

const T: Duration = Duration::from_secs(60);

/// Every call asks for a tool and reports 600 tokens, so a task only ends on a bound.
const SCRIPT: &str = r#"turns:
  - tool_calls: [{name: lookup, arguments: {q: "one"}}]
    usage: {input_tokens: 500, output_tokens: 100}
  - tool_calls: [{name: lookup, arguments: {q: "two"}}]
    usage: {input_tokens: 500, output_tokens: 100}
  - text: "never reached"
"#;

fn lab(p: &Project) {
    p.write(
        "aem/lab/AEM.md",
        "---\nname: lab\nstatus: active\ndescription: Experts on a budget.\ndefaults:\n  model: standard\n  clearance: read\n  budget:\n    max_tokens: 1000\n---\n\nA mesh for budget tests.\n",
    );
    for (role, caps) in [
        ("spender", ""),
        (
            "counter",
            "budget:\n  max_iterations: 2\n  max_tokens: 100000\n",
        ),
    ] {
        p.write(
            &format!("aem/lab/skills/{role}/SKILL.md"),
            &format!("---\nname: {role}\nidentity: The {role}.\ndescription: Spends a budget.\n---\n\nLook things up until told otherwise.\n"),
        );
        p.write(
            &format!("aem/lab/skills/{role}/capabilities.md"),
            &format!("---\nclearance: read\n{caps}---\n"),
        );
    }
}

/// Sends a task (`iron task send` with `target`) and returns the result it printed.
fn send(p: &Project, target: &[&str]) -> Value {
    let mut args = vec!["task", "send"];
    args.extend_from_slice(target);
    args.push("look it up");
    let out = p.iron(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "a task out of budget fails: {stdout}"
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no result line ({e}): {stdout}"))
}

#[test]
fn declared_budgets_end_tasks_and_the_result_says_what_was_spent() {
    let p = Project::scripted(SCRIPT);
    lab(&p);
    let aem = p.path("aem").display().to_string();
    let mut up = p.up(
        "nodes:\n  - {name: engine, namespace: /iron, executable: engine_node}\n  - {name: spender, namespace: /iron/experts/lab, executable: expert_node, args: [--expert, lab/spender]}\n  - {name: counter, namespace: /iron/experts/lab, executable: expert_node, args: [--expert, lab/counter]}\n",
        &["--aem", &aem],
    );
    up.wait_for("up: 3 node(s) running", T);
    up.wait_for("/iron/experts/lab/counter: active", T);
    up.wait_for("/iron/experts/lab/spender: active", T);

    // The mesh's token bound: 600 + 600 passes 1000.
    let r = send(&p, &["--action", "/iron/experts/lab/spender/task"]);
    assert_eq!(r["status"], "budget_exceeded", "{r:#}");
    assert!(
        r["text"]
            .as_str()
            .unwrap()
            .contains("the budget of 1000 tokens is spent (1200 used)"),
        "{r:#}"
    );
    let spent = &r["result"]["spent"];
    assert_eq!(
        (
            &spent["model_calls"],
            &spent["input_tokens"],
            &spent["output_tokens"]
        ),
        (&Value::from(2), &Value::from(1000), &Value::from(200)),
        "{r:#}"
    );
    assert!(spent["secs"].as_f64().unwrap() >= 0.0);
    let budget = &r["result"]["budget"];
    assert_eq!(budget["max_tokens"], 1000);
    assert_eq!(budget["max_iterations"], 24, "the default model-call bound");
    assert_eq!(budget["task_secs"], 600, "the default wall time");

    // The expert's own bound on model calls, over the mesh's.
    let r = send(&p, &["--action", "/iron/experts/lab/counter/task"]);
    assert_eq!(r["status"], "max_iterations", "{r:#}");
    assert!(
        r["text"].as_str().unwrap().contains("2 model calls"),
        "{r:#}"
    );
    assert_eq!(r["result"]["spent"]["model_calls"], 2, "{r:#}");
    assert_eq!(r["result"]["budget"]["max_iterations"], 2);
    assert_eq!(r["result"]["budget"]["max_tokens"], 100_000);

    // Through the engine: a process spawned for the task, and the engine's result keeps what
    // each step spent.
    let r = send(&p, &["--domain", "lab/spender"]);
    assert_eq!(r["status"], "budget_exceeded", "{r:#}");
    let step = &r["result"]["steps"][0];
    assert_eq!(step["domain"], "lab/spender", "{r:#}");
    assert_eq!(step["spent"]["model_calls"], 2, "{r:#}");
    assert_eq!(step["budget"]["max_tokens"], 1000, "{r:#}");

    up.signal(libc::SIGINT);
    assert!(up.wait_exit(T).expect("up exits").success());
}
