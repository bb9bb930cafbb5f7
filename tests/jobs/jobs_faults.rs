//! Durable jobs under faults, with real processes: the runner binary killed with SIGKILL at
//! each point of a step, two runners with one paused past its lease, a timer across a restart
//! of runner, clock and nats-server. Side effects are recorded in a file by the test flows
//! (`jobs_runner --test-flows`).

use crate::support;
use crate::world;

use std::path::Path;
use std::time::Duration;

use iron::jobs::event::JobEvent;
use iron::jobs::journal::read_diary;
use iron::jobs::{Stored, ops};
use iron::spine::durable::AnyLog;
use serde_json::json;
use support::Proc;
use world::{LEASE_WAIT, T};

fn kill9(p: &mut Proc) {
    p.signal(libc::SIGKILL);
    p.wait_exit(T).expect("killed runner exits");
}

fn touch(path: &Path) {
    std::fs::write(path, b"go").unwrap();
}

fn calls(path: &Path, step: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == step)
        .count()
}

fn results(diary: &[Stored], step: &str) -> usize {
    diary
        .iter()
        .filter(|s| matches!(&s.entry.event, JobEvent::StepDone { step: k, .. } if k == step))
        .count()
}

async fn until_done(log: &AnyLog, job: &str, limit: Duration) -> Vec<Stored> {
    support::eventually("the job to finish", limit, || async {
        let diary = read_diary(log, "test", job).await.ok()?;
        diary
            .iter()
            .any(|s| matches!(s.entry.event, JobEvent::Done { .. }))
            .then_some(diary)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_before_after_a_side_effect_and_before_the_ack_leaves_one_result_per_step() {
    let w = world::jobs_project();
    let record = w.path("calls");
    let (before_s2, after_s3, ack) = (w.path("g-s2"), w.path("g-s3"), w.path("g-ack"));
    let mut r1 = world::runner(&w, "runner-1", &[]);
    r1.wait_for("runner consuming the wake queue", T);
    let input = json!({
        "record": record,
        "n": 3,
        "gates": {"s2": {"before": before_s2}, "s3": {"after": after_s3}},
    });
    let job = w
        .iron_ok(&[
            "jobs",
            "start",
            "test/ops/steps",
            "--input",
            &input.to_string(),
        ])
        .trim()
        .to_string();
    // 1. Killed before s2's side effect (s1 journaled, its wake not acknowledged).
    r1.wait_for("waiting at gate before s2", T);
    kill9(&mut r1);
    touch(&before_s2);
    // 2. Killed after s3's side effect, before its result was journaled.
    let mut r2 = world::runner(&w, "runner-2", &[]);
    r2.wait_for("waiting at gate after s3", LEASE_WAIT);
    kill9(&mut r2);
    touch(&after_s3);
    // 3. Killed after the final append, before the wake was acknowledged.
    let ack_arg = ack.display().to_string();
    let mut r3 = world::runner(&w, "runner-3", &["--hold-before-ack", &ack_arg]);
    r3.wait_for("holding before the ack", LEASE_WAIT);
    kill9(&mut r3);
    touch(&ack);
    let log = w.log().await;
    let before_last = read_diary(&log, "test", &job).await.unwrap();
    // 4. A last runner finds everything journaled and runs nothing.
    let r4 = world::runner(&w, "runner-4", &[]);
    r4.wait_for("job run ended", LEASE_WAIT);
    let diary = until_done(&log, &job, T).await;
    assert_eq!(
        diary.len(),
        before_last.len(),
        "the last runner wrote nothing"
    );
    for step in ["s1#0", "s2#0", "s3#0"] {
        assert_eq!(
            results(&diary, step),
            1,
            "{step}: exactly one journaled result"
        );
    }
    assert_eq!(
        diary
            .iter()
            .filter(|s| matches!(s.entry.event, JobEvent::Done { .. }))
            .count(),
        1
    );
    // Side effects: s1 ran once across four runners; s2 once (killed before its effect);
    // s3 twice (its first result was never journaled), and never after it was.
    assert_eq!(calls(&record, "s1"), 1);
    assert_eq!(calls(&record, "s2"), 1);
    assert_eq!(calls(&record, "s3"), 2);
    let shown = w.iron_ok(&["jobs", "show", &job]);
    assert!(
        shown.contains(": done") && shown.contains("s3#0"),
        "{shown}"
    );
}

/// A is paused (SIGSTOP) past its lease between a step's side effect and its result. B takes
/// the lease and the job, and is held before it writes anything but its claim. A resumes
/// with a result to write, and nobody has written since A last looked except B's claim:
/// A's write is refused and it exits; B finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_paused_past_its_lease_cannot_write_and_exits() {
    let w = world::jobs_project();
    let record = w.path("calls");
    let (before, after) = (w.path("before-s1"), w.path("after-s1"));
    touch(&before);
    let mut a = world::runner(&w, "runner-a", &[]);
    a.wait_for("runner consuming the wake queue", T);
    let b = world::runner(&w, "runner-b", &[]);
    b.wait_for("standing by", T);
    let input =
        json!({"record": record, "n": 2, "gates": {"s1": {"before": before, "after": after}}});
    let job = w
        .iron_ok(&[
            "jobs",
            "start",
            "test/ops/steps",
            "--input",
            &input.to_string(),
        ])
        .trim()
        .to_string();
    a.wait_for("waiting at gate after s1", T);
    std::fs::remove_file(&before).unwrap();
    a.signal(libc::SIGSTOP);
    // B takes over once A's lease expires, claims the job, and stops before s1.
    b.wait_for("runner holds the lease", LEASE_WAIT);
    b.wait_for("waiting at gate before s1", T);
    let log = w.log().await;
    let claimed = read_diary(&log, "test", &job).await.unwrap();
    // A wakes up with a step result it cannot write.
    touch(&after);
    a.signal(libc::SIGCONT);
    let status = a
        .wait_exit(T)
        .expect("the paused runner exits once resumed");
    assert_eq!(
        status.code(),
        Some(75),
        "output:\n{}",
        a.output().join("\n")
    );
    assert!(!a.matching("lost its lease").is_empty() || !a.matching("no longer").is_empty());
    assert_eq!(
        read_diary(&log, "test", &job).await.unwrap(),
        claimed,
        "nothing was written after A resumed"
    );
    // B goes on and finishes.
    touch(&before);
    let after = until_done(&log, &job, T).await;
    for step in ["s1#0", "s2#0"] {
        assert_eq!(results(&after, step), 1, "{step}: one result");
    }
    let epochs: Vec<(&str, &str)> = after
        .iter()
        .filter(|s| s.entry.by.starts_with("runner/"))
        .map(|s| (s.entry.by.as_str(), s.entry.event.kind()))
        .collect();
    let b_by = epochs.last().unwrap().0;
    // A's only entry is its own claim, before B's; everything else is B's.
    assert_eq!(epochs[0].1, "claimed", "{epochs:?}");
    assert_ne!(epochs[0].0, b_by, "{epochs:?}");
    assert!(epochs[1..].iter().all(|(by, _)| *by == b_by), "{epochs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_second_timer_survives_a_restart_of_runner_clock_and_nats() {
    let mut w = world::jobs_project();
    let record = w.path("calls");
    let mut runner = world::runner(&w, "runner-1", &[]);
    runner.wait_for("runner consuming the wake queue", T);
    let mut clock = world::clock(&w);
    clock.wait_for("clock following every job diary", T);
    let input = json!({"record": record, "seconds": 2});
    let job = w
        .iron_ok(&[
            "jobs",
            "start",
            "test/ops/timer",
            "--input",
            &input.to_string(),
        ])
        .trim()
        .to_string();
    runner.wait_for("job waiting", T);
    kill9(&mut runner);
    kill9(&mut clock);
    w.nats().restart();
    let _clock = world::clock(&w);
    let _runner = world::runner(&w, "runner-2", &[]);
    let log = w.log().await;
    let diary = until_done(&log, &job, LEASE_WAIT).await;
    let due_ms = diary
        .iter()
        .find_map(|s| match s.entry.event {
            JobEvent::TimerSet { due_ms, .. } => Some(due_ms),
            _ => None,
        })
        .unwrap();
    let fired = diary
        .iter()
        .find(|s| matches!(s.entry.event, JobEvent::TimerDue { .. }))
        .expect("timer_due in the diary");
    assert!(fired.entry.ts >= due_ms, "fired early");
    assert_eq!(calls(&record, "a"), 1);
    assert_eq!(calls(&record, "b"), 1);
    let listed = w.iron_ok(&["jobs", "list", "--mesh", "test"]);
    assert!(listed.contains(&job) && listed.contains("done"), "{listed}");
    // The job is found by id alone, in its mesh, with the whole diary.
    let (mesh, found) = ops::find(&log, &job).await.unwrap();
    assert_eq!(mesh, "test");
    assert_eq!(found.len(), diary.len());
}

#[test]
fn a_misspelt_test_flow_variant_stops_the_runner() {
    // Once, any value but `edited` silently meant `original`.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jobs_runner"))
        .args(["--mesh", "test", "--test-flows", "edtied"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("invalid value 'edtied'")
            && said.contains("[possible values: original, edited]"),
        "{said}"
    );
}
