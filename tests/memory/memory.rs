//! emit(), the projector, recall and replay — the same tests on both backends.

use crate::for_both_backends;
use crate::support;

use std::path::Path;
use std::time::Duration;

use iron::core::durable::{AppendRequest, EventLog};
use iron::core::envelope::Envelope;
use iron::core::event_kind::EventKind;
use iron::core::ids::EventId;
use iron::memory::emit::{EmitError, Emitter, emit};
use iron::memory::projector::{self, ProjectorDeps, ProjectorError, ProjectorExit};
use iron::memory::recall::{Recall, RecallFilter, open_read_only};
use iron::protocol::payload::{ChatTurn, ProjectorGap, SequenceProblem};
use serde_json::json;
use support::eventually;
use support::harness::Harness;
use tokio_util::sync::CancellationToken;

fn fact(ns: &[&str], text: &str) -> Envelope {
    Envelope::new(
        "acme",
        ns.iter().copied(),
        "analyst-1",
        EventKind::FactLearned,
        json!({ "text": text }),
    )
}

/// Waits until the projection at `db` has projected `seq` of MEM.
async fn projected(db: &Path, seq: u64) {
    eventually(
        &format!("projection to reach seq {seq}"),
        Duration::from_secs(30),
        || async move {
            let recall = Recall::open(db).ok()?;
            (recall.projected_seq("MEM").ok()? >= seq).then_some(())
        },
    )
    .await
}

fn start<L: EventLog>(
    deps: ProjectorDeps<L>,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<ProjectorExit, ProjectorError>>,
) {
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(projector::run(deps, shutdown.clone()));
    (shutdown, task)
}

async fn emit_returns_after_the_ack_and_a_retry_is_a_duplicate<H: Harness>(mut h: H) {
    let log = h.open().await;
    let event = fact(&["facts", "newsroom"], "the river is rising");
    let first = emit(&log, &event).await.unwrap();
    assert!(!first.duplicate);
    let stored = log.read("MEM", "mem.>", first.seq, 1).await.unwrap();
    assert_eq!(stored[0].subject, "mem.acme.facts.newsroom");
    assert_eq!(stored[0].msg_id.as_deref(), Some(event.event_id.as_str()));
    let back: Envelope = serde_json::from_slice(&stored[0].payload).unwrap();
    assert_eq!(back, event);
    let again = emit(&log, &event).await.unwrap();
    assert!(
        again.duplicate,
        "a retry with the same id is acknowledged as a duplicate"
    );
    assert_eq!(again.seq, first.seq);
    assert_eq!(log.last_sequence("MEM").await.unwrap(), first.seq);
}

async fn emit_rejects_bad_envelopes_before_writing<H: Harness>(mut h: H) {
    let log = h.open().await;
    for bad in ["", "a.b", "fa*cts", "x>", "two words"] {
        let err = emit(&log, &fact(&["facts", bad], "x")).await.unwrap_err();
        assert!(matches!(err, EmitError::Envelope(_)), "{err}");
        assert!(err.to_string().contains("namespace[1]"), "{err}");
    }
    let mut unknown = fact(&["facts"], "x");
    unknown.kind = EventKind::Unknown("made_up".into());
    assert!(
        emit(&log, &unknown)
            .await
            .unwrap_err()
            .to_string()
            .contains("made_up")
    );
    let huge = fact(&["facts"], &"x".repeat(log.max_message_size()));
    let err = emit(&log, &huge).await.unwrap_err();
    assert!(matches!(err, EmitError::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains("object store"), "{err}");
    assert_eq!(
        log.last_sequence("MEM").await.unwrap(),
        0,
        "nothing was written"
    );
}

async fn job_events_get_computed_ids_so_a_rerun_writes_once<H: Harness>(mut h: H) {
    let log = h.open().await;
    let emitter = Emitter::new(log.clone());
    let step = |attempt: u32| {
        Envelope::new(
            "acme",
            ["jobs", "newsroom"],
            "runner",
            EventKind::StepDone,
            json!({"attempt": attempt}),
        )
        .with_id(EventId::computed(&["newsroom", "job-7", "fetch"]))
    };
    let a = emitter.emit(&step(1)).await.unwrap();
    let b = emitter.emit(&step(2)).await.unwrap();
    assert!(b.duplicate);
    assert_eq!(a.seq, b.seq);
}

async fn no_secret_reaches_the_log_in_any_form_and_each_cut_is_recorded<H: Harness>(mut h: H) {
    let log = h.open().await;
    let mut secrets = iron::core::secrets::Secrets::new();
    secrets.add("NEWS_API", "n3ws-api-0042-secret");
    let emitter = Emitter::new(log.clone()).with_secrets(&secrets);
    let b64 = "bjN3cy1hcGktMDA0Mi1zZWNyZXQ="; // base64 of the secret
    let event = Envelope::new(
        "acme",
        ["sessions", "s1"],
        "engine",
        EventKind::ChatTurn,
        json!({
            "text": format!("key n3ws-api-0042-secret, as base64 {b64}, as hex {}",
                hex::encode("n3ws-api-0042-secret")),
            "shipped": "ghp_0123456789abcdefghijklmnopqrstuvwxyz leaked by a server",
            "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
        }),
    );
    let written = emitter.emit(&event).await.unwrap();
    let stored = log.read("MEM", "mem.>", written.seq, 1).await.unwrap();
    let text = String::from_utf8_lossy(&stored[0].payload).to_string();
    for leaked in [
        "n3ws-api-0042-secret",
        b64,
        "6e3377732d",
        "ghp_0123",
        "MIIB",
    ] {
        assert!(!text.contains(leaked), "{leaked} reached the log: {text}");
    }
    let stored: Envelope = serde_json::from_slice(&stored[0].payload).unwrap();
    // What the emitter cut, which it adds to any payload: the turn's `rest`.
    let turn: ChatTurn = support::read_one(&stored);
    let cuts = turn.rest["redacted"].as_array().unwrap();
    let forms: Vec<&str> = cuts.iter().filter_map(|c| c["form"].as_str()).collect();
    assert!(
        forms.contains(&"plain") && forms.contains(&"base64") && forms.contains(&"hex"),
        "{cuts:?}"
    );
    assert_eq!(
        forms.iter().filter(|f| **f == "shape").count(),
        2,
        "{cuts:?}"
    );
    // An event with nothing to cut is written as it is.
    let clean = fact(&["facts", "newsroom"], "the river is rising");
    let written = emitter.emit(&clean).await.unwrap();
    let stored = log.read("MEM", "mem.>", written.seq, 1).await.unwrap();
    let stored: Envelope = serde_json::from_slice(&stored[0].payload).unwrap();
    assert_eq!(stored.payload, clean.payload);
}

async fn projector_writes_each_event_once_and_recall_finds_it<H: Harness>(mut h: H) {
    let log = h.open().await;
    let db = h.dir().join("projection.db");
    let river = fact(
        &["facts", "newsroom", "analyst"],
        "the river Arno is rising near Florence",
    );
    let emitter = Emitter::new(log.clone());
    emitter.emit(&river).await.unwrap();
    emitter
        .emit(&fact(
            &["facts", "newsroom"],
            "flood warning issued for Pisa",
        ))
        .await
        .unwrap();
    emitter
        .emit(&fact(&["facts", "erp"], "invoice 42 flood insurance"))
        .await
        .unwrap();
    let decision = Envelope::new(
        "acme",
        ["facts", "newsroom"],
        "editor",
        EventKind::Decision,
        json!({"text": "publish the flood bulletin"}),
    )
    .with_cause(river.event_id.clone());
    emitter.emit(&decision).await.unwrap();
    // The same event delivered twice: republished under another message id (as after the
    // duplicate window), so the log holds it twice.
    log.append(AppendRequest {
        subject: "mem.acme.facts.newsroom.analyst".into(),
        msg_id: "republished".into(),
        payload: serde_json::to_vec(&river).unwrap(),
        expected_last_subject_seq: None,
    })
    .await
    .unwrap();
    let (shutdown, task) = start(ProjectorDeps::new(log.clone(), &db));
    projected(&db, 5).await;
    let recall = Recall::open(&db).unwrap();
    assert_eq!(
        recall.count().unwrap(),
        4,
        "five deliveries, four distinct events"
    );

    let flood = recall.recall("flood", &RecallFilter::default()).unwrap();
    assert_eq!(flood.len(), 3);
    let scoped = recall
        .recall(
            "flood",
            &RecallFilter {
                prefix: Some("facts/newsroom".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(scoped.len(), 2, "prefix facts/newsroom excludes facts/erp");
    let decisions = recall
        .recall(
            "flood",
            &RecallFilter {
                kind: Some("decision".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].event_id, decision.event_id.to_string());
    assert!(
        recall
            .recall("Florence river", &RecallFilter::default())
            .unwrap()[0]
            .payload
            .contains("Arno")
    );
    assert!(
        recall
            .recall("\"unbalanced", &RecallFilter::default())
            .unwrap()
            .is_empty()
    );

    let history = recall.replay("facts/newsroom").unwrap();
    let seqs: Vec<u64> = history.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        vec![1, 2, 4],
        "replay is in log order and includes sub-namespaces"
    );
    assert_eq!(history[0].namespace, "facts/newsroom/analyst");
    assert_eq!(
        recall.replay("facts/news").unwrap().len(),
        0,
        "a prefix is whole tokens"
    );
    assert_eq!(recall.replay("").unwrap().len(), 4);

    shutdown.cancel();
    assert_eq!(
        task.await.unwrap().unwrap(),
        ProjectorExit::Stopped { last_seq: 5 }
    );
}

async fn readers_cannot_write_the_projection<H: Harness>(mut h: H) {
    let log = h.open().await;
    let db = h.dir().join("projection.db");
    emit(&log, &fact(&["facts"], "x")).await.unwrap();
    let (shutdown, task) = start(ProjectorDeps::new(log.clone(), &db));
    projected(&db, 1).await;
    let reader = open_read_only(&db).unwrap();
    let err = reader.execute("DELETE FROM events", []).unwrap_err();
    assert!(
        err.to_string().contains("readonly")
            || err.to_string().contains("read-only")
            || err.to_string().contains("read only"),
        "{err}"
    );
    assert_eq!(Recall::open(&db).unwrap().count().unwrap(), 1);
    shutdown.cancel();
    task.await.unwrap().unwrap();
}

async fn projector_killed_between_commit_and_ack_writes_one_row<H: Harness>(mut h: H) {
    let log = h.open().await;
    let db = h.dir().join("projection.db");
    for i in 0..3 {
        emit(&log, &fact(&["facts"], &format!("event {i}")))
            .await
            .unwrap();
    }
    let mut deps = ProjectorDeps::new(log.clone(), &db);
    deps.ack_wait = Duration::from_secs(1);
    deps.max_batch = 1;
    deps.halt_after_commit = Some(2);
    let (_shutdown, task) = start(deps.clone());
    let err = task.await.unwrap().unwrap_err();
    assert!(matches!(err, ProjectorError::Halted { seq: 2 }), "{err}");
    assert_eq!(Recall::open(&db).unwrap().projected_seq("MEM").unwrap(), 2);

    deps.halt_after_commit = None;
    let (shutdown, task) = start(deps);
    projected(&db, 3).await;
    // Leave time for the unacknowledged delivery of seq 2 to come back (ack_wait is 1 s).
    emit(&log, &fact(&["facts"], "after restart"))
        .await
        .unwrap();
    projected(&db, 4).await;
    let recall = Recall::open(&db).unwrap();
    assert_eq!(recall.count().unwrap(), 4);
    assert_eq!(
        recall
            .replay("facts")
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    shutdown.cancel();
    task.await
        .unwrap()
        .expect("no gap, no error after the redelivery");
}

async fn projector_skips_foreign_payloads_and_keeps_going<H: Harness>(mut h: H) {
    let log = h.open().await;
    let db = h.dir().join("projection.db");
    log.append(AppendRequest {
        subject: "mem.foreign.sensor".into(),
        msg_id: "foreign-1".into(),
        payload: b"\x00\x01 not json {".to_vec(),
        expected_last_subject_seq: None,
    })
    .await
    .unwrap();
    log.append(AppendRequest {
        subject: "mem.foreign.other".into(),
        msg_id: "foreign-2".into(),
        payload: br#"{"some":"json","but":"no envelope"}"#.to_vec(),
        expected_last_subject_seq: None,
    })
    .await
    .unwrap();
    emit(&log, &fact(&["facts"], "still projected"))
        .await
        .unwrap();
    let (shutdown, task) = start(ProjectorDeps::new(log.clone(), &db));
    projected(&db, 3).await;
    let recall = Recall::open(&db).unwrap();
    assert_eq!(recall.count().unwrap(), 1);
    let skipped = recall.skipped().unwrap();
    assert_eq!(skipped.len(), 2);
    assert_eq!(skipped[0].0, 1);
    assert!(skipped[0].2.contains("not JSON"), "{:?}", skipped[0]);
    assert!(
        skipped[1].2.contains("not an Iron envelope"),
        "{:?}",
        skipped[1]
    );
    shutdown.cancel();
    task.await.unwrap().unwrap();
}

async fn projector_stops_on_a_real_gap_and_records_it<H: Harness>(mut h: H) {
    let log = h.open().await;
    let db = h.dir().join("projection.db");
    emit(&log, &fact(&["facts", "a"], "one")).await.unwrap();
    emit(&log, &fact(&["facts", "b"], "two")).await.unwrap();
    emit(&log, &fact(&["facts", "a"], "three")).await.unwrap();
    // A filter that does not cover the stream: seq 2 never reaches this projector.
    let mut deps = ProjectorDeps::new(log.clone(), &db);
    deps.filter_subject = "mem.acme.facts.a".into();
    deps.consumer = "narrow".into();
    let (_shutdown, task) = start(deps);
    let err = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            err,
            ProjectorError::Gap {
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("expected sequence 2, got 3"),
        "{err}"
    );
    assert_eq!(
        Recall::open(&db).unwrap().count().unwrap(),
        1,
        "stopped at the gap"
    );
    let all = log.read("MEM", "mem.>", 1, 10).await.unwrap();
    let gap: Envelope = serde_json::from_slice(&all.last().unwrap().payload).unwrap();
    assert_eq!(gap.kind, EventKind::ProjectorGap);
    let gap: ProjectorGap = support::read_one(&gap);
    assert!(
        matches!(gap.problem, SequenceProblem::Gap { expected: 2, .. }),
        "{gap:?}"
    );
}

async fn projector_stops_when_the_log_goes_backwards<H: Harness>(mut h: H) {
    let log = h.open().await;
    let db = h.dir().join("projection.db");
    emit(&log, &fact(&["facts"], "one")).await.unwrap();
    let (shutdown, task) = start(ProjectorDeps::new(log.clone(), &db));
    projected(&db, 1).await;
    shutdown.cancel();
    task.await.unwrap().unwrap();
    // Another, younger log under the same projection: its seq 1 is a different message.
    let mut other = support::harness::EmbeddedHarness::new();
    let other_log = other.open().await;
    emit(&other_log, &fact(&["facts"], "different"))
        .await
        .unwrap();
    let (_shutdown, task) = start(ProjectorDeps::new(other_log, &db));
    let err = task.await.unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            ProjectorError::Backwards {
                found: 1,
                last: 1,
                ..
            }
        ),
        "{err}"
    );
}

for_both_backends!(
    emit_returns_after_the_ack_and_a_retry_is_a_duplicate,
    emit_rejects_bad_envelopes_before_writing,
    job_events_get_computed_ids_so_a_rerun_writes_once,
    no_secret_reaches_the_log_in_any_form_and_each_cut_is_recorded,
    projector_writes_each_event_once_and_recall_finds_it,
    readers_cannot_write_the_projection,
    projector_killed_between_commit_and_ack_writes_one_row,
    projector_skips_foreign_payloads_and_keeps_going,
    projector_stops_on_a_real_gap_and_records_it,
    projector_stops_when_the_log_goes_backwards,
);
