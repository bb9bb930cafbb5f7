//! The console node under `iron up`: every request needs the deployment's token (401
//! without it or with a wrong one), `/metrics` is Prometheus text format as the reference
//! parser (PyPI prometheus-client) reads it, and its counters move as a task runs; the event
//! log streams live over SSE, filtered by kind; a state-changing request from another origin
//! is refused, and the page's API shows the task and its timeline and takes a lifecycle
//! transition.

use crate::support;

use std::process::Command;
use std::time::Duration;

use iron::protocol::payload::OperatorRefused;
use support::project::Project;

const T: Duration = Duration::from_secs(90);

/// The samples of `text` as the reference parser reads them: `name{labels} value` lines.
fn parsed(text: &str) -> Vec<String> {
    let script = "import sys\nfrom prometheus_client.parser import text_string_to_metric_families as f\n\
                  for fam in f(sys.stdin.read()):\n  for s in fam.samples:\n    \
                  print(s.name, sorted(s.labels.items()), s.value)\n";
    let mut child = Command::new(support::test_python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused /metrics: {out:?}\n{text}"
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn value(samples: &[String], prefix: &str) -> f64 {
    samples
        .iter()
        .filter(|s| s.starts_with(prefix))
        .map(|s| s.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_needs_its_token_and_shows_metrics_and_live_events() {
    let p = Project::offline();
    let up = p.up(
        "nodes:\n  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}\n  - {name: console, namespace: /iron, executable: console_node, autostart: true}\n",
        &[],
    );
    up.wait_for("/iron/console: active", T);
    up.wait_for("/iron/engine: active", T);
    // `iron up` says no operator is registered; a person makes one while the console runs,
    // and the page acts as them from then on.
    up.wait_for("operators: none registered", T);
    p.operator("desk");
    let printed = up
        .matching("console: http://")
        .pop()
        .expect("iron up prints the console's address and token");
    let token = printed.rsplit("?token=").next().unwrap().trim().to_string();
    let stored = std::fs::read_to_string(p.path("console.token")).unwrap();
    assert_eq!(token, stored.trim());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(p.path("console.token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let base = format!("http://{}", p.console_listen());
    let http = reqwest::Client::new();
    for (what, request) in [
        ("no token", http.get(format!("{base}/metrics"))),
        (
            "a wrong token",
            http.get(format!("{base}/metrics"))
                .bearer_auth("x".repeat(64)),
        ),
        (
            "a wrong query token",
            http.get(format!("{base}/metrics?token=nope")),
        ),
        ("the index without a token", http.get(format!("{base}/"))),
        (
            "the event stream without a token",
            http.get(format!("{base}/api/events")),
        ),
    ] {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), 401, "{what}");
    }
    let scrape = || async {
        let r = http
            .get(format!("{base}/metrics"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let text = r.text().await.unwrap();
        parsed(&text)
    };
    let before = scrape().await;
    let tasks_before = value(&before, "iron_tasks_total");
    let index = http
        .get(format!("{base}/?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(index.status(), 200);

    // The live event log, from now, only two kinds.
    let mut live = http
        .get(format!(
            "{base}/api/events?kind=routing_decided,expert_finished"
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 200);
    assert!(
        live.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    p.iron_ok(&[
        "task",
        "send",
        "--domain",
        "core/assistant",
        "--timeout",
        "60",
        "say hello",
    ]);
    let after = support::eventually("the task in /metrics", T, || async {
        let s = scrape().await;
        (value(&s, "iron_tasks_total") > tasks_before).then_some(s)
    })
    .await;
    assert!(
        value(&after, "iron_routing_decisions_total") >= 1.0,
        "{after:#?}"
    );
    assert!(value(&after, "iron_model_calls_total") >= 1.0, "{after:#?}");
    assert!(
        value(&after, "iron_events_total") > value(&before, "iron_events_total"),
        "{after:#?}"
    );
    assert!(
        after.iter().any(|s| s.starts_with("iron_jobs ")),
        "{after:#?}"
    );
    assert!(
        value(&after, "iron_log_appends_total") >= value(&after, "iron_tasks_total"),
        "{after:#?}"
    );
    assert!(value(&after, "iron_log_append_seconds_total") >= 0.0);

    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + T;
    while !(seen.contains("event: routing_decided") && seen.contains("event: expert_finished")) {
        let chunk = tokio::time::timeout_at(deadline, live.chunk())
            .await
            .unwrap_or_else(|_| panic!("the live stream did not bring both kinds:\n{seen}"))
            .unwrap()
            .expect("the stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    for line in seen.lines().filter(|l| l.starts_with("event: ")) {
        assert!(
            line == "event: routing_decided" || line == "event: expert_finished",
            "filtered out: {line}\n{seen}"
        );
    }
    assert!(seen.contains("\"domain\":\"core/assistant\""), "{seen}");

    // A state-changing request must come from the page itself (or carry the token in its
    // header, as no browser does on its own): another site's page is refused even with the
    // token, before anything is done.
    let host = p.console_listen();
    let resume = format!("{base}/api/jobs/j-nope/resume");
    let cases = [
        (
            "another site's origin",
            http.post(format!("{resume}?token={token}"))
                .header("origin", "http://evil.example")
                .json(&serde_json::json!({})),
            403,
        ),
        (
            "a cross-site fetch",
            http.post(&resume)
                .bearer_auth(&token)
                .header("sec-fetch-site", "cross-site")
                .json(&serde_json::json!({})),
            403,
        ),
        (
            "a token in the address and no origin",
            http.post(format!("{resume}?token={token}"))
                .json(&serde_json::json!({})),
            403,
        ),
        (
            "the page's own origin (the job does not exist)",
            http.post(format!("{resume}?token={token}"))
                .header("origin", format!("http://{host}"))
                .json(&serde_json::json!({})),
            400,
        ),
        (
            "a script with the token in its header (the job does not exist)",
            http.post(&resume)
                .bearer_auth(&token)
                .json(&serde_json::json!({})),
            400,
        ),
        (
            "an unknown transition",
            http.post(format!("{base}/api/lifecycle"))
                .bearer_auth(&token)
                .json(&serde_json::json!({"node": "/iron/engine", "transition": "explode"})),
            400,
        ),
    ];
    for (what, request, status) in cases {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), status, "{what}: {}", r.text().await.unwrap());
    }
    // The page's API: the task is in the tree, the engine in the node list; a transition
    // taken from it is taken.
    let api_state = || async {
        http.get(format!("{base}/api/state"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json::<serde_json::Value>()
            .await
            .unwrap()
    };
    let state = api_state().await;
    let tasks = state["tasks"].as_array().unwrap();
    assert!(
        tasks
            .iter()
            .any(|t| t["domain"] == "core/assistant" && t["status"] == "succeeded"),
        "{state:#}"
    );
    // The task's timeline, as `iron task show --json` has it, by a prefix of its id; an
    // unknown task is a 404 with why, and the token is needed here too.
    let id = tasks
        .iter()
        .find(|t| t["domain"] == "core/assistant")
        .and_then(|t| t["id"].as_str())
        .unwrap();
    let timeline = |task: String| http.get(format!("{base}/api/timeline/{task}"));
    let r = timeline(id[..12].to_string())
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let t: serde_json::Value = r.json().await.unwrap();
    assert_eq!(t["task_id"], id);
    let kinds: Vec<&str> = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"routing_decided"), "{t:#}");
    for kind in ["model_called", "task_judged", "reply_delivered"] {
        assert!(kinds.contains(&kind), "no {kind}: {t:#}");
    }
    let r = timeline("no-such-task".into())
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().contains("no task"));
    assert_eq!(timeline(id.to_string()).send().await.unwrap().status(), 401);
    // The page and /metrics read on from where they were: a job started since is in both.
    let job = p.iron_ok(&["jobs", "start", "newsroom/monitor/monitor"]);
    let job = job.trim();
    let state = api_state().await;
    assert!(
        state["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["job"] == job && j["flow"] == "monitor/monitor"),
        "{job} not in {state:#}"
    );
    let running = |s: &[String]| value(s, "iron_jobs [('state', 'running')]");
    assert_eq!(running(&scrape().await), running(&after) + 1.0);
    let lifecycle = |transition: &str| {
        http.post(format!("{base}/api/lifecycle"))
            .bearer_auth(&token)
            .json(&serde_json::json!({"node": "/iron/engine", "transition": transition}))
            .send()
    };
    let r = lifecycle("deactivate").await.unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["state"], "inactive", "{body}");
    let nodes: serde_json::Value = http
        .get(format!("{base}/api/nodes"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        nodes
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["node"] == "/iron/engine" && n["state"] == "inactive"),
        "{nodes:#}"
    );
    assert_eq!(lifecycle("activate").await.unwrap().status(), 200);
    // Unregistered while the console runs, the page's operator is refused at once, with why.
    p.iron_ok(&["operator", "remove", "desk"]);
    let r = lifecycle("deactivate").await.unwrap();
    assert_eq!(r.status(), 403);
    let why = r.text().await.unwrap();
    assert!(why.contains("not registered"), "{why}");
    let refused: Vec<OperatorRefused> = support::read(&p.events("operator_refused").await);
    assert!(
        refused
            .iter()
            .any(|r| r.operator_id == "desk" && r.what.contains("/iron/engine")),
        "the refusal is recorded: {refused:#?}"
    );
}
