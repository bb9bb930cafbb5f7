//! The gateway through real processes: a flow asks for an expert's judgment, the job waits as
//! rows, the gateway sends the request as an AolTask goal over ROS (here to the demo node's
//! action server standing in for the engine) and signals the answer back; the runner finishes
//! the job with it.

mod support;
#[path = "support/jobs.rs"]
mod world;

use iron::jobs::journal::read_diary;
use iron::jobs::{JobEvent, JobState, state_of};
use serde_json::json;
use world::T;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_gets_an_experts_answer_through_the_gateway() {
    let w = world::jobs_project();
    let _expert = w.plane().demo("gw_expert", &[]);
    w.plane()
        .iron_ok(&["lifecycle", "set", "/iron/gw_expert", "configure"]);
    w.plane()
        .iron_ok(&["lifecycle", "set", "/iron/gw_expert", "activate"]);
    let flows = w.path("aem/test/skills/ops/flows");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::write(
        flows.join("pyjudge.py"),
        "def run(ctx, input):\n    return ctx.ask_expert('verdict', 'test/judge', input['question'])['text']\n",
    )
    .unwrap();
    let aem = w.path("aem").display().to_string();
    let python = std::env::var("IRON_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let runner = world::runner(&w, "runner", &["--aem", &aem, "--python", &python]);
    runner.wait_for("runner consuming the wake queue", T);
    let gateway = w.spawn(
        "gateway",
        env!("CARGO_BIN_EXE_jobs_gateway"),
        &[
            "--autostart",
            "--action",
            "/iron/gw_expert/task",
            "--ros-args",
            "-r",
            "__node:=gateway",
            "-r",
            "__ns:=/iron/jobs",
        ],
    );
    gateway.wait_for("gateway following every job diary", T);
    let input = json!({"question": "is the bridge closed?"});
    let job = w
        .iron_ok(&[
            "jobs",
            "start",
            "test/ops/judge",
            "--input",
            &input.to_string(),
        ])
        .trim()
        .to_string();
    let log = w.log().await;
    let diary = support::eventually("the judged job to finish", T, || async {
        let diary = read_diary(&log, "test", &job).await.ok()?;
        matches!(state_of(&diary), JobState::Done { .. }).then_some(diary)
    })
    .await;
    let JobState::Done { output } = state_of(&diary) else {
        unreachable!()
    };
    assert_eq!(
        output["answer"]["text"],
        json!("echo: is the bridge closed?")
    );
    assert_eq!(output["answer"]["goal_status"], json!("succeeded"));
    let mut kinds: Vec<&str> = diary.iter().map(|s| s.entry.event.kind()).collect();
    assert_eq!(kinds.first(), Some(&"job_started"));
    assert_eq!(kinds.last(), Some(&"done"));
    // The answer may land before or after the runner wrote that the job waits.
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "claimed",
            "done",
            "expert_requested",
            "job_started",
            "signal",
            "waiting"
        ],
        "the job waited as rows until the answer came"
    );
    let requests = diary
        .iter()
        .filter(|s| matches!(s.entry.event, JobEvent::ExpertRequested { .. }))
        .count();
    assert_eq!(requests, 1);

    // The same from a Python flow.
    let job = w
        .iron_ok(&[
            "jobs",
            "start",
            "test/ops/pyjudge",
            "--input",
            &input.to_string(),
        ])
        .trim()
        .to_string();
    let diary = support::eventually("the Python judged job to finish", T, || async {
        let diary = read_diary(&log, "test", &job).await.ok()?;
        matches!(state_of(&diary), JobState::Done { .. }).then_some(diary)
    })
    .await;
    assert_eq!(
        state_of(&diary),
        JobState::Done {
            output: json!("echo: is the bridge closed?")
        }
    );
}
