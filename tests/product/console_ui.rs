//! The console's page in a real browser (Debian's headless Chromium, driven by
//! playwright-core: `tests/ui/console.mjs`) against a running `iron up`: refused without the
//! token, loaded with it; a task sent through the inbox while the page is open asks a
//! question, which is answered from the page, and the task tree then shows its expert and
//! reply without a reload, and its timeline (question and answer included) under it; a parked job resumes from its button; the Sources tab shows a
//! source whose every feed fails, with the feed, where it is listed and why. A screenshot of
//! every view is written under the target directory (`console-ui/`).

use crate::support;

use std::time::Duration;

use iron::core::durable::EventLog;
use iron::core::{envelope::Envelope, event_kind::EventKind};
use iron::jobs::{JobState, ops};
use iron::protocol::payload::AnswerReceived;
use serde_json::json;
use support::project::Project;

const T: Duration = Duration::from_secs(120);

const LAUNCH: &str = "nodes:
  - {name: delivery, namespace: /iron/tools, executable: delivery_node, autostart: true}
  - {name: inbox, namespace: /iron, executable: inbox_node, autostart: true}
  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}
  - {name: console, namespace: /iron, executable: console_node, autostart: true}
  - {name: runner, namespace: /iron/jobs/test, executable: jobs_runner, args: [--mesh, test, --test-flows, original], autostart: true}
";

/// The state of `job` on the log.
async fn job_state(log: &impl EventLog, job: &str) -> JobState {
    let (_, diary) = ops::find(log, job).await.unwrap();
    iron::jobs::state_of(&diary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_answers_a_question_shows_the_task_and_resumes_a_parked_job() {
    let node = support::browser_driver();

    let p = Project::scripted_with(
        r#"turns:
  - expect: "bridge"
    tool_calls:
      - name: ask_operator
        arguments: {question: "Which bridge: the harbour bridge or the river bridge?"}
  - expect: "harbour bridge"
    text: "The harbour bridge is closed, per the port authority's notice."
"#,
        "operators: [desk]\n",
    );
    // The console acts as desk, signing with desk's key.
    p.operator("desk");
    let up = p.up(LAUNCH, &[]);
    for node in [
        "/iron/console",
        "/iron/inbox",
        "/iron/engine",
        "/iron/jobs/test/runner",
    ] {
        up.wait_for(&format!("{node}: active"), T);
    }
    let printed = up
        .matching("console: http://")
        .pop()
        .expect("iron up prints the console's address");
    let url = printed
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_string();
    let (base, token) = url.split_once("/?token=").unwrap();

    // A job whose only step fails (its record's directory is missing): it parks.
    let log = p.log().await;
    let missing = p.path("records");
    let (_, job) = ops::start(
        &log,
        "test/ops/steps",
        json!({"n": 1, "record": missing.join("steps").display().to_string()}),
        None,
    )
    .await
    .unwrap();
    support::eventually("the job parked", T, || async {
        matches!(job_state(&log, &job).await, JobState::Parked { .. }).then_some(())
    })
    .await;
    // What made it fail is mended; a person resumes it from the page.
    std::fs::create_dir_all(&missing).unwrap();
    // A source whose only feed fails, as its node records it.
    let health = Envelope::new(
        "default",
        ["perception", "newsroom", "news_wires"],
        "msp/newsroom/news_wires",
        EventKind::SourceHealth,
        json!({"mesh": "newsroom", "source": "news_wires", "failing": true,
               "feeds": [{"feed": "/srv/feeds/typo.xml", "at": "/srv/feeds/wires.txt:3",
                          "status": "failing", "reason": "not found: no file /srv/feeds/typo.xml",
                          "items": 0, "since_ms": 1}]}),
    );
    iron::memory::emit(&log, &health).await.unwrap();

    let shots = support::screenshots();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ui/console.mjs");
    let mut browser = p.spawn(
        "browser",
        &node,
        &[script, base, token, &job, &shots.display().to_string()],
    );
    browser.wait_for("READY", T);
    let mut ask = p.spawn(
        "ask",
        support::bin("iron").as_str(),
        &[
            "ask",
            "--user",
            "desk",
            "--wait",
            "100",
            "is the harbour bridge closed?",
        ],
    );
    let status = browser.wait_exit(Duration::from_secs(300));
    assert!(
        status.is_some_and(|s| s.success()),
        "the browser run failed ({status:?}):\n{}\n--- iron ask:\n{}",
        browser.output().join("\n"),
        ask.output().join("\n")
    );
    assert!(browser.output().iter().any(|l| l == "PASS"));

    // What the page did is what the log and the asker saw.
    let asked = ask.wait_exit(T);
    assert!(
        asked.is_some_and(|s| s.success()),
        "{}",
        ask.output().join("\n")
    );
    assert!(
        ask.output()
            .iter()
            .any(|l| l.contains("harbour bridge is closed")),
        "{:?}",
        ask.output()
    );
    let answers: Vec<AnswerReceived> = support::read(&p.events("answer_received").await);
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert_eq!(answers[0].operator_id, "desk", "{answers:#?}");
    assert!(matches!(job_state(&log, &job).await, JobState::Done { .. }));
    assert_eq!(
        std::fs::read_to_string(missing.join("steps")).unwrap(),
        "s1\n"
    );
    for view in [
        "tasks",
        "questions",
        "jobs",
        "sessions",
        "nodes",
        "sources",
        "hunks",
        "events",
    ] {
        let png = shots.join(format!("{view}.png"));
        let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(size > 1_000, "no screenshot of {view} at {}", png.display());
    }
}
