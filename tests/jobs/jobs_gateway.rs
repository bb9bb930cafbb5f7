//! The gateway through real processes: a flow asks for an expert's judgment, the job waits as
//! rows, the gateway sends the request as an AolTask goal to the engine, which spawns the
//! expert (`test/judge`, on a scripted model) for it, and signals the answer back; the runner
//! finishes the job with it.

use crate::support;
use crate::world;

use iron::jobs::journal::read_diary;
use iron::jobs::{JobEvent, JobState, state_of};
use serde_json::json;
use support::{bin, project::Project};
use world::T;

/// What the judge's scripted model says.
const ANSWER: &str = "Closed since Monday, per the port authority.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_gets_an_experts_answer_through_the_gateway() {
    let w = Project::scripted(&format!("turns:\n  - text: {ANSWER:?}\n"))
        .with_router()
        .with_nats();
    w.write(
        "aem/test/AEM.md",
        "---\nname: test\nstatus: active\ndescription: The jobs tests' mesh.\ndefaults:\n  model: standard\n  clearance: read\n---\n\nA mesh whose flows ask its judge.\n",
    );
    for (role, does) in [("judge", "Judges claims."), ("ops", "Runs the flows.")] {
        w.write(
            &format!("aem/test/skills/{role}/SKILL.md"),
            &format!(
                "---\nname: {role}\nidentity: The {role}.\ndescription: {does}\n---\n\n{does}\n"
            ),
        );
    }
    w.write(
        "aem/test/skills/ops/flows/verdict.py",
        "def run(ctx, input):\n    return ctx.ask_expert('verdict', 'test/judge', input['question'])\n",
    );
    w.build_catalog();
    let engine = w.start_active(&bin("engine_node"), "/iron/engine", &[]);
    let aem = w.path("aem").display().to_string();
    let python = std::env::var("IRON_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let runner = world::runner(&w, "runner", &["--aem", &aem, "--python", &python]);
    runner.wait_for("runner consuming the wake queue", T);
    let gateway = w.spawn(
        "gateway",
        env!("CARGO_BIN_EXE_jobs_gateway"),
        &[
            "--autostart",
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
            "test/ops/verdict",
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
        output["goal_status"],
        json!("succeeded"),
        "{output:#}\n{}",
        engine.output().join("\n")
    );
    assert_eq!(output["text"], json!(ANSWER), "{output:#}");
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

    // Each request ran as a task of the engine, on an expert process spawned for it.
    let routed = w.events("routing_decided").await;
    assert_eq!(routed.len(), 1, "{routed:#?}");
    let routed: iron::protocol::payload::RoutingDecided = routed[0].payload().unwrap();
    assert_eq!(routed.domain, "test/judge");
}
