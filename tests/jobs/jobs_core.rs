//! Durable jobs in one process, on both backends: journal with computed ids, replay without
//! re-running finished steps, fingerprints that park, fenced writes, waits that keep early
//! answers, the confirmation gate and the clock.

use crate::for_both_backends;
use crate::support;

use std::time::Duration;

use iron::core::identity::{self, Authority, OperatorKey, Statement, action};
use iron::jobs::event::{JobEvent, event_id, fingerprint};
use iron::jobs::journal::{DiaryWriter, Fence, append_unfenced, read_diary};
use iron::jobs::run::{Flows, run_job};
use iron::jobs::runner::lease_key;
use iron::jobs::testflows::{self, Variant};
use iron::jobs::{JobError, JobState, Registry, ops};
use iron::spine::durable::AnyLog;
use iron::spine::durable::lease::Lease;
use serde_json::{Value, json};
use support::harness::Harness;
use tokio_util::sync::CancellationToken;

/// Both harness backends as the runner's handle.
fn flows(variant: Variant) -> Flows {
    let mut registry = Registry::new();
    testflows::register(&mut registry, variant);
    Flows {
        registry,
        python: None,
    }
}

/// An operator, ana, registered with a deployment whose state is under `dir`, and whose
/// signed decisions that deployment takes.
struct People {
    ana: OperatorKey,
    authority: Authority,
}

impl People {
    fn in_dir(dir: &std::path::Path) -> Self {
        let ana = OperatorKey::create(&dir.join("keys"), "ana").unwrap();
        identity::Registry::register(&dir.join("state"), &ana).unwrap();
        Self {
            ana,
            authority: Authority::new(&dir.join("state"), &[]),
        }
    }

    fn sign(&self, action: &str, subject: &str, decision: &str) -> Statement {
        self.ana.sign(action, subject, decision)
    }
}

async fn fence(log: &AnyLog, holder: &str) -> Fence {
    let lease = Lease::acquire(log, &lease_key("test"), holder)
        .await
        .unwrap();
    Fence {
        key: lease_key("test"),
        holder: lease.holder().into(),
        epoch: lease.epoch(),
        lost: CancellationToken::new(),
    }
}

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

async fn kinds(log: &AnyLog, job: &str) -> Vec<String> {
    read_diary(log, "test", job)
        .await
        .unwrap()
        .iter()
        .map(|s| s.entry.event.kind().to_string())
        .collect()
}

async fn a_replay_returns_journaled_results_and_runs_nothing_twice<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let record = h.dir().join("calls");
    let fence = fence(&log, "r1").await;
    let people = People::in_dir(&h.dir());
    let f = flows(Variant::Original);
    let (_, job) = ops::start(
        &log,
        "test/ops/steps",
        json!({"record": record, "n": 3}),
        None,
    )
    .await
    .unwrap();
    let first = run_job(&log, &f, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert!(matches!(first.state, JobState::Done { .. }), "{first:?}");
    assert_eq!(first.steps_run, 3);
    assert_eq!(lines(&record), ["s1", "s2", "s3"]);
    // A rerun of a finished job does nothing; a forced replay of the flow returns the
    // journaled results without calling a side effect.
    let again = run_job(&log, &f, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert_eq!(again.steps_run, 0);
    assert_eq!(lines(&record), ["s1", "s2", "s3"]);
    assert_eq!(
        kinds(&log, &job).await,
        [
            "job_started",
            "claimed",
            "step_done",
            "step_done",
            "step_done",
            "done"
        ]
    );
    // The same logical event published twice is stored once.
    let id = event_id(&job, &["s1#0", "step_done"]);
    append_unfenced(
        &log,
        "test",
        &job,
        id,
        "someone",
        JobEvent::StepDone {
            step: "s1#0".into(),
            fingerprint: None,
            result: json!({"step": "s1"}),
        },
    )
    .await
    .unwrap();
    assert_eq!(kinds(&log, &job).await.len(), 6);
}

async fn a_journal_entry_from_an_older_run_is_replayed_not_rerun<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let record = h.dir().join("calls");
    let fence = fence(&log, "r1").await;
    let people = People::in_dir(&h.dir());
    let (_, job) = ops::start(
        &log,
        "test/ops/steps",
        json!({"record": record, "n": 2}),
        None,
    )
    .await
    .unwrap();
    // s1 was journaled by an older runner without a fingerprint: trusted.
    append_unfenced(
        &log,
        "test",
        &job,
        event_id(&job, &["s1#0", "step_done"]),
        "old",
        JobEvent::StepDone {
            step: "s1#0".into(),
            fingerprint: None,
            result: json!({"step": "old-s1"}),
        },
    )
    .await
    .unwrap();
    let report = run_job(
        &log,
        &flows(Variant::Original),
        &people.authority,
        &fence,
        "test",
        &job,
    )
    .await
    .unwrap();
    assert_eq!(report.steps_run, 1);
    assert_eq!(lines(&record), ["s2"]);
    let JobState::Done { output } = report.state else {
        panic!("{report:?}")
    };
    assert_eq!(output["steps"][0], json!({"step": "old-s1"}));
}

async fn an_edited_flow_parks_and_resumes_once_restored<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let fence = fence(&log, "r1").await;
    let people = People::in_dir(&h.dir());
    let (original, edited) = (flows(Variant::Original), flows(Variant::Edited));
    let (_, job) = ops::start(&log, "test/ops/edit", json!({"x": 1}), None)
        .await
        .unwrap();
    let r = run_job(&log, &original, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert_eq!(
        r.state,
        JobState::Waiting {
            on: "signal:go#0".into()
        }
    );
    ops::signal(&log, &job, "go", json!("now")).await.unwrap();
    // The code changed while the job waited: step a now calls another function.
    let r = run_job(&log, &edited, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    let JobState::Parked { reason } = &r.state else {
        panic!("{r:?}")
    };
    assert!(
        reason.contains("step a#0") && reason.contains("fingerprint"),
        "{reason}"
    );
    // Parked stays parked until a person acts.
    let r = run_job(&log, &original, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert!(matches!(r.state, JobState::Parked { .. }));
    // Not taken from anyone but an operator: a resume that is not signed, or signed for
    // another job, leaves it parked.
    append_unfenced(
        &log,
        "test",
        &job,
        event_id(&job, &["resumed", "forged"]),
        "cli",
        JobEvent::Resumed {
            note: None,
            statement: Some(people.sign(action::JOB_RESUME, "another-job", "resume")),
        },
    )
    .await
    .unwrap();
    let r = run_job(&log, &original, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert!(matches!(r.state, JobState::Parked { .. }), "{r:?}");
    let resume = people.sign(action::JOB_RESUME, &job, "resume");
    ops::resume(
        &log,
        &job,
        Some("restored".into()),
        resume,
        &people.authority,
    )
    .await
    .unwrap();
    let r = run_job(&log, &original, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    let JobState::Done { output } = r.state else {
        panic!("{r:?}")
    };
    assert_eq!(output["b"], json!({"b": "now"}));
    // The other way out: cancel.
    let (_, other) = ops::start(&log, "test/ops/edit", json!({"x": 2}), None)
        .await
        .unwrap();
    run_job(&log, &original, &people.authority, &fence, "test", &other)
        .await
        .unwrap();
    ops::signal(&log, &other, "go", json!(1)).await.unwrap();
    let r = run_job(&log, &edited, &people.authority, &fence, "test", &other)
        .await
        .unwrap();
    assert!(matches!(r.state, JobState::Parked { .. }));
    let cancel = people.sign(action::JOB_CANCEL, &other, "cancel");
    ops::cancel(&log, &other, None, cancel, &people.authority)
        .await
        .unwrap();
    let r = run_job(&log, &original, &people.authority, &fence, "test", &other)
        .await
        .unwrap();
    assert_eq!(r.state, JobState::Cancelled);
    let resume = people.sign(action::JOB_RESUME, &other, "resume");
    assert!(
        ops::resume(&log, &other, None, resume, &people.authority)
            .await
            .is_err()
    );
}

async fn an_approval_sent_before_the_wait_is_kept<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let fence = fence(&log, "r1").await;
    let people = People::in_dir(&h.dir());
    let (_, job) = ops::start(&log, "test/ops/approve", json!({"d": 1}), None)
        .await
        .unwrap();
    // Approvals the runner does not take, written first: unsigned, signed for another
    // approval, saying otherwise than they sign, signed by a key nobody registered. Were any
    // taken, the flow would see its note.
    let forged = [
        None,
        Some(people.sign(action::JOB_APPROVE, &format!("{job}/other"), "approved")),
        Some(people.sign(action::JOB_APPROVE, &format!("{job}/publish"), "rejected")),
        Some(
            OperatorKey::create(&h.dir().join("elsewhere"), "ana")
                .unwrap()
                .sign(action::JOB_APPROVE, &format!("{job}/publish"), "approved"),
        ),
    ];
    for (n, statement) in forged.into_iter().enumerate() {
        append_unfenced(
            &log,
            "test",
            &job,
            event_id(&job, &["approval_given", "forged", &n.to_string()]),
            "cli",
            JobEvent::ApprovalGiven {
                name: "publish".into(),
                approved: true,
                note: Some("forged".into()),
                statement,
            },
        )
        .await
        .unwrap();
    }
    let approval = people.sign(action::JOB_APPROVE, &format!("{job}/publish"), "approved");
    ops::approve(
        &log,
        &job,
        "publish",
        true,
        Some("early".into()),
        approval,
        &people.authority,
    )
    .await
    .unwrap();
    let r = run_job(
        &log,
        &flows(Variant::Original),
        &people.authority,
        &fence,
        "test",
        &job,
    )
    .await
    .unwrap();
    let JobState::Done { output } = r.state else {
        panic!("{r:?}")
    };
    assert_eq!(output["approved"], json!(true));
    assert_eq!(output["note"], json!("early"));
    assert!(!kinds(&log, &job).await.contains(&"waiting".to_string()));
}

async fn a_runner_without_the_lease_cannot_write<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let (_, job) = ops::start(&log, "test/ops/steps", json!({"n": 1}), None)
        .await
        .unwrap();
    let diary = read_diary(&log, "test", &job).await.unwrap();
    // The stale runner read the diary, then lost the lease to another that wrote.
    let stale = Fence {
        key: lease_key("test"),
        holder: "stale".into(),
        epoch: 1,
        lost: CancellationToken::new(),
    };
    let mut stale_writer = DiaryWriter::new(log.clone(), "test", &job, &diary, stale);
    let fresh = fence(&log, "fresh").await;
    let mut fresh_writer = DiaryWriter::new(log.clone(), "test", &job, &diary, fresh);
    let step = |by: &str| JobEvent::StepDone {
        step: "s1#0".into(),
        fingerprint: Some(fingerprint("s1", by, &Value::Null)),
        result: json!(by),
    };
    fresh_writer
        .append(event_id(&job, &["s1#0", "step_done"]), step("fresh"))
        .await
        .unwrap();
    let refused = stale_writer
        .append(event_id(&job, &["x#0", "step_done"]), step("stale"))
        .await;
    assert!(
        matches!(refused, Err(JobError::LeaseLost { .. })),
        "{refused:?}"
    );
    assert_eq!(kinds(&log, &job).await, ["job_started", "step_done"]);
}

/// A runner paused past its lease has not noticed yet; the runner that took over claimed the
/// job but has written nothing else. The paused one still cannot write, though the diary's
/// last sequence is the one it read.
async fn a_stale_epoch_cannot_write_once_a_later_one_claimed_the_job<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let (_, job) = ops::start(&log, "test/ops/steps", json!({"n": 1}), None)
        .await
        .unwrap();
    let diary = read_diary(&log, "test", &job).await.unwrap();
    let fresh = fence(&log, "fresh").await;
    let stale = Fence {
        holder: "stale".into(),
        epoch: fresh.epoch - 1,
        ..fresh.clone()
    };
    // Both read the same diary; the stale one took the job first, at its epoch.
    let mut stale_writer = DiaryWriter::new(log.clone(), "test", &job, &diary, stale);
    let mut fresh_writer = DiaryWriter::new(log.clone(), "test", &job, &diary, fresh);
    assert!(fresh_writer.claim().await.unwrap());
    assert!(!fresh_writer.claim().await.unwrap(), "one claim per epoch");
    let refused = stale_writer
        .append(
            event_id(&job, &["s1#0", "step_done"]),
            JobEvent::StepDone {
                step: "s1#0".into(),
                fingerprint: None,
                result: json!("stale"),
            },
        )
        .await;
    assert!(
        matches!(refused, Err(JobError::LeaseLost { .. })),
        "{refused:?}"
    );
    // Nor can it claim the job back, or act: a writer that has seen the later claim refuses
    // before any side effect.
    let diary = read_diary(&log, "test", &job).await.unwrap();
    let stale = Fence {
        holder: "stale".into(),
        epoch: fence_epoch(&diary) - 1,
        key: lease_key("test"),
        lost: CancellationToken::new(),
    };
    let mut late = DiaryWriter::new(log.clone(), "test", &job, &diary, stale);
    assert!(matches!(
        late.ensure_live(),
        Err(JobError::LeaseLost { .. })
    ));
    assert!(matches!(
        late.claim().await,
        Err(JobError::LeaseLost { .. })
    ));
    assert_eq!(kinds(&log, &job).await, ["job_started", "claimed"]);
}

fn fence_epoch(diary: &[iron::jobs::event::Stored]) -> u64 {
    diary
        .iter()
        .find_map(|s| match s.entry.event {
            JobEvent::Claimed { epoch } => Some(epoch),
            _ => None,
        })
        .expect("a claim")
}

async fn the_effect_gate_observes_before_acting_again<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let fence = fence(&log, "r1").await;
    let people = People::in_dir(&h.dir());
    let f = flows(Variant::Original);
    let (file, record) = (h.dir().join("world"), h.dir().join("acts"));
    let input = json!({"file": file, "record": record});
    let (_, job) = ops::start(&log, "test/ops/effect", input.clone(), None)
        .await
        .unwrap();
    let r = run_job(&log, &f, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert!(matches!(r.state, JobState::Done { .. }), "{r:?}");
    assert_eq!(
        kinds(&log, &job).await,
        [
            "job_started",
            "claimed",
            "effect_intent",
            "effect_confirmed",
            "done"
        ]
    );
    assert_eq!(lines(&record), ["act"]);
    // A crash between intent and confirmation: the world already shows the change, so the
    // replay confirms by observing and does not act again.
    let (_, crashed) = ops::start(&log, "test/ops/effect", input.clone(), None)
        .await
        .unwrap();
    let fp = fingerprint("post", "iron::jobs::testflows::post", &input);
    append_unfenced(
        &log,
        "test",
        &crashed,
        event_id(&crashed, &["post#0", "effect_intent"]),
        "crashed-runner",
        JobEvent::EffectIntent {
            step: "post#0".into(),
            fingerprint: Some(fp),
        },
    )
    .await
    .unwrap();
    let r = run_job(&log, &f, &people.authority, &fence, "test", &crashed)
        .await
        .unwrap();
    assert!(matches!(r.state, JobState::Done { .. }), "{r:?}");
    assert_eq!(
        lines(&record),
        ["act"],
        "no second act: the observation confirmed it"
    );
    assert_eq!(r.steps_run, 0);
}

async fn a_timer_fires_through_the_clock_never_early<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let fence = fence(&log, "r1").await;
    let people = People::in_dir(&h.dir());
    let f = flows(Variant::Original);
    let (_, job) = ops::start(&log, "test/ops/timer", json!({"seconds": 0.5}), None)
        .await
        .unwrap();
    let r = run_job(&log, &f, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert_eq!(
        r.state,
        JobState::Waiting {
            on: "timer:nap#0".into()
        }
    );
    let stop = CancellationToken::new();
    let clock = tokio::spawn(iron::jobs::clock::run(
        log.clone(),
        Duration::from_millis(50),
        Default::default(),
        stop.clone(),
    ));
    let due = support::eventually("timer_due", Duration::from_secs(20), || async {
        let diary = read_diary(&log, "test", &job).await.unwrap();
        let set = diary.iter().find_map(|s| match s.entry.event {
            JobEvent::TimerSet { due_ms, .. } => Some(due_ms),
            _ => None,
        })?;
        let fired = diary
            .iter()
            .find(|s| matches!(s.entry.event, JobEvent::TimerDue { .. }))?;
        Some((set, fired.entry.ts))
    })
    .await;
    assert!(
        due.1 >= due.0,
        "timer_due written at {} before due {}",
        due.1,
        due.0
    );
    stop.cancel();
    clock.await.unwrap().unwrap();
    let r = run_job(&log, &f, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert!(matches!(r.state, JobState::Done { .. }), "{r:?}");
}

async fn an_effect_by_an_expert_is_asked_once_and_confirmed_by_observation<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let fence = fence(&log, "r1").await;
    let people = People::in_dir(&h.dir());
    let f = flows(Variant::Original);
    let world = h.dir().join("world");
    let input = json!({"file": world});
    let waiting = JobState::Waiting {
        on: "effect:publish#0".into(),
    };
    let (_, job) = ops::start(&log, "test/ops/publish", input.clone(), None)
        .await
        .unwrap();
    let r = run_job(&log, &f, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert_eq!(r.state, waiting);
    // Woken again before the expert answered: nothing is asked twice.
    run_job(&log, &f, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert_eq!(
        kinds(&log, &job).await,
        [
            "job_started",
            "claimed",
            "effect_intent",
            "expert_requested",
            "waiting"
        ]
    );
    // The expert did it and says so: confirmed by a fresh observation.
    std::fs::write(&world, "posted\n").unwrap();
    let done = json!({"goal_status": "succeeded", "status": "succeeded", "text": "sent"});
    ops::signal(&log, &job, "effect:publish#0", done.clone())
        .await
        .unwrap();
    let r = run_job(&log, &f, &people.authority, &fence, "test", &job)
        .await
        .unwrap();
    assert!(matches!(r.state, JobState::Done { .. }), "{r:?}");
    let k = kinds(&log, &job).await;
    assert_eq!(k.iter().filter(|k| *k == "expert_requested").count(), 1);
    assert_eq!(k.iter().filter(|k| *k == "effect_confirmed").count(), 1);

    // An expert that crashed after acting: the change is seen before its answer, and confirmed.
    let (_, crashed) = ops::start(&log, "test/ops/publish", input.clone(), None)
        .await
        .unwrap();
    std::fs::remove_file(&world).unwrap();
    assert_eq!(
        run_job(&log, &f, &people.authority, &fence, "test", &crashed)
            .await
            .unwrap()
            .state,
        waiting
    );
    std::fs::write(&world, "posted\n").unwrap();
    let r = run_job(&log, &f, &people.authority, &fence, "test", &crashed)
        .await
        .unwrap();
    assert!(matches!(r.state, JobState::Done { .. }), "{r:?}");

    // An expert that did not do it parks the job with its reason; so does an answer of
    // success that the world does not show.
    std::fs::remove_file(&world).unwrap();
    for (answer, why) in [
        (
            json!({"goal_status": "aborted", "status": "failed", "text": "no channel"}),
            "did not do it (failed): no channel",
        ),
        (
            done,
            "answered that it acted, but a fresh observation does not show the change",
        ),
    ] {
        let (_, job) = ops::start(&log, "test/ops/publish", input.clone(), None)
            .await
            .unwrap();
        run_job(&log, &f, &people.authority, &fence, "test", &job)
            .await
            .unwrap();
        ops::signal(&log, &job, "effect:publish#0", answer)
            .await
            .unwrap();
        match run_job(&log, &f, &people.authority, &fence, "test", &job)
            .await
            .unwrap()
            .state
        {
            JobState::Parked { reason } => assert!(reason.contains(why), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}

async fn a_step_larger_than_a_message_is_kept_and_one_past_the_event_limit_parks<H: Harness>(
    mut h: H,
) where
    H::Log: Into<AnyLog>,
{
    let log: AnyLog = h.open().await.into();
    let fence = fence(&log, "r1").await;
    let people = People::in_dir(&h.dir());
    let f = flows(Variant::Original);
    // A result over one message of the log (1 MiB embedded, NATS's max_payload of 1 MB) is
    // spilled to the object store, and a replay reads it back whole.
    let (_, big) = ops::start(&log, "test/ops/bulky", json!({"bytes": 1_100_000}), None)
        .await
        .unwrap();
    for _ in 0..2 {
        let r = run_job(&log, &f, &people.authority, &fence, "test", &big)
            .await
            .unwrap();
        assert_eq!(
            r.state,
            JobState::Done {
                output: json!({"made": 1_100_000})
            }
        );
    }
    // One over what any event may carry can never be journaled, so retrying it would fail
    // forever: the job parks, once, and says why.
    let over = iron::spine::durable::spill::MAX_EVENT_BYTES + 1;
    let (_, job) = ops::start(&log, "test/ops/bulky", json!({ "bytes": over }), None)
        .await
        .unwrap();
    for _ in 0..2 {
        let r = run_job(&log, &f, &people.authority, &fence, "test", &job)
            .await
            .unwrap();
        let JobState::Parked { reason } = &r.state else {
            panic!("{r:?}")
        };
        assert!(
            reason.contains("step_done could not be written")
                && reason.contains("over the log's limit")
                && reason.contains("resume, or cancel"),
            "{reason}"
        );
    }
    let kinds = kinds(&log, &job).await;
    assert_eq!(
        kinds.iter().filter(|k| *k == "parked").count(),
        1,
        "parked once, then left alone: {kinds:?}"
    );
    assert!(!kinds.iter().any(|k| k == "step_done"), "{kinds:?}");
}

for_both_backends!(
    a_step_larger_than_a_message_is_kept_and_one_past_the_event_limit_parks,
    an_effect_by_an_expert_is_asked_once_and_confirmed_by_observation,
    a_replay_returns_journaled_results_and_runs_nothing_twice,
    a_journal_entry_from_an_older_run_is_replayed_not_rerun,
    an_edited_flow_parks_and_resumes_once_restored,
    an_approval_sent_before_the_wait_is_kept,
    a_runner_without_the_lease_cannot_write,
    a_stale_epoch_cannot_write_once_a_later_one_claimed_the_job,
    the_effect_gate_observes_before_acting_again,
    a_timer_fires_through_the_clock_never_early,
);
