//! The durable-plane contract: the same tests against JetStream (a real nats-server) and the
//! embedded SQLite log.

use crate::for_both_backends;
use crate::support;

use std::time::Duration;

use iron::core::durable::{
    AppendRequest, ConsumerSpec, DurableError, EventLog, KeyValue, KvSpec, LogConsumer,
    ObjectStore, StartAt,
};
use iron::spine::durable::{AnyLog, spill};
use support::eventually;
use support::harness::Harness;

fn req(subject: &str, id: &str, payload: &str) -> AppendRequest {
    AppendRequest {
        subject: subject.into(),
        msg_id: id.into(),
        payload: payload.as_bytes().to_vec(),
        expected_last_subject_seq: None,
    }
}

async fn ordering<H: Harness>(mut h: H) {
    let log = h.open().await;
    let before = iron::core::envelope::now_ms();
    for i in 1..=20u64 {
        let subject = if i % 2 == 0 {
            "mem.t.even"
        } else {
            "mem.t.odd"
        };
        let ack = log
            .append(req(subject, &format!("id-{i}"), &format!("p{i}")))
            .await
            .unwrap();
        assert_eq!(ack.seq, i, "sequences are assigned in append order");
        assert_eq!(ack.stream, "MEM");
        assert!(!ack.duplicate);
    }
    assert_eq!(log.last_sequence("MEM").await.unwrap(), 20);
    let all = log.read("MEM", "mem.>", 1, 100).await.unwrap();
    let seqs: Vec<u64> = all.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
    assert_eq!(all[4].payload, b"p5");
    assert_eq!(all[4].msg_id.as_deref(), Some("id-5"));
    // Each message says when it was stored (the server's clock is this machine's).
    let after = iron::core::envelope::now_ms();
    for m in &all {
        assert!(
            (before.saturating_sub(1000)..=after + 1000).contains(&m.stored_ms),
            "stored at {} outside [{before}, {after}]",
            m.stored_ms
        );
    }
    let even = log.read("MEM", "mem.t.even", 1, 100).await.unwrap();
    assert_eq!(
        even.iter().map(|m| m.seq).collect::<Vec<_>>(),
        (2..=20).step_by(2).collect::<Vec<_>>()
    );
    let tail = log.read("MEM", "mem.>", 18, 2).await.unwrap();
    assert_eq!(tail.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![18, 19]);
    assert_eq!(log.read("JOBS", "jobs.>", 1, 10).await.unwrap(), vec![]);
}

async fn acked_writes_survive_a_crash<H: Harness>(mut h: H) {
    let log = h.open().await;
    for i in 1..=10 {
        log.append(req(
            "jobs.core.evt.j1",
            &format!("j-{i}"),
            &format!("step {i}"),
        ))
        .await
        .unwrap();
    }
    drop(log);
    let log = h.restart().await;
    let stored = log.read("JOBS", "jobs.>", 1, 100).await.unwrap();
    assert_eq!(stored.len(), 10);
    for (i, m) in stored.iter().enumerate() {
        assert_eq!(m.payload, format!("step {}", i + 1).into_bytes());
    }
}

async fn a_repeated_id_inside_the_window_is_stored_once<H: Harness>(mut h: H) {
    let log = h.open().await;
    let first = log.append(req("mem.t.a", "same", "one")).await.unwrap();
    let again = log.append(req("mem.t.a", "same", "two")).await.unwrap();
    assert!(again.duplicate);
    assert_eq!(
        again.seq, first.seq,
        "a duplicate acknowledges the original"
    );
    let other = log.append(req("mem.t.a", "other", "three")).await.unwrap();
    assert_eq!(other.seq, first.seq + 1);
    let stored = log.read("MEM", "mem.>", 1, 10).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].payload, b"one");
    // Each stream has its own window: the same id in JOBS is a new message.
    assert!(
        !log.append(req("jobs.m.evt.j", "same", "x"))
            .await
            .unwrap()
            .duplicate
    );
}

async fn delete_and_purge_are_refused<H: Harness>(mut h: H) {
    let log = h.open().await;
    log.append(req("mem.t.a", "keep", "kept")).await.unwrap();
    for stream in ["MEM", "JOBS"] {
        let err = log.delete_message(stream, 1).await.unwrap_err();
        assert!(
            matches!(err, DurableError::Denied { op: "delete", .. }),
            "{err}"
        );
        let err = log.purge_stream(stream).await.unwrap_err();
        assert!(
            matches!(err, DurableError::Denied { op: "purge", .. }),
            "{err}"
        );
    }
    assert_eq!(
        log.read("MEM", "mem.>", 1, 10).await.unwrap()[0].payload,
        b"kept"
    );
}

async fn fencing_by_last_subject_sequence<H: Harness>(mut h: H) {
    let log = h.open().await;
    let mut first = req("jobs.core.evt.j9", "f1", "a");
    first.expected_last_subject_seq = Some(0);
    let a = log.append(first).await.unwrap();
    let mut stale = req("jobs.core.evt.j9", "f2", "b");
    stale.expected_last_subject_seq = Some(0);
    let err = log.append(stale).await.unwrap_err();
    assert!(
        matches!(err, DurableError::WrongLastSequence { .. }),
        "{err}"
    );
    let mut fresh = req("jobs.core.evt.j9", "f3", "c");
    fresh.expected_last_subject_seq = Some(a.seq);
    assert_eq!(log.append(fresh).await.unwrap().seq, a.seq + 1);
}

async fn unknown_subjects_and_oversized_messages_are_refused<H: Harness>(mut h: H) {
    let log = h.open().await;
    let err = log
        .append(req("nowhere.at.all", "x", "p"))
        .await
        .unwrap_err();
    assert!(matches!(err, DurableError::NoStream { .. }), "{err}");
    let big = "x".repeat(log.max_message_size() + 1);
    let err = log.append(req("mem.t.big", "big", &big)).await.unwrap_err();
    assert!(matches!(err, DurableError::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains("object store"), "{err}");
    assert_eq!(log.last_sequence("MEM").await.unwrap(), 0);
}

async fn kv_compare_and_set<H: Harness>(mut h: H) {
    let log = h.open().await;
    log.kv_open(&KvSpec {
        bucket: "leases".into(),
        ttl: None,
    })
    .await
    .unwrap();
    let lease = br#"{"holder":"runner-a","epoch":1}"#.to_vec();
    let r1 = log
        .kv_create("leases", "newsroom", lease.clone())
        .await
        .unwrap();
    let err = log
        .kv_create("leases", "newsroom", b"b".to_vec())
        .await
        .unwrap_err();
    assert!(matches!(err, DurableError::KeyExists { .. }), "{err}");
    let got = log.kv_get("leases", "newsroom").await.unwrap().unwrap();
    assert_eq!((got.value, got.revision), (lease, r1));
    let r2 = log
        .kv_update("leases", "newsroom", b"renewed".to_vec(), r1)
        .await
        .unwrap();
    assert!(r2 > r1);
    let err = log
        .kv_update("leases", "newsroom", b"late".to_vec(), r1)
        .await
        .unwrap_err();
    assert!(
        matches!(err, DurableError::WrongRevision { expected, .. } if expected == r1),
        "{err}"
    );
    let err = log.kv_delete("leases", "newsroom", r1).await.unwrap_err();
    assert!(matches!(err, DurableError::WrongRevision { .. }), "{err}");
    log.kv_delete("leases", "newsroom", r2).await.unwrap();
    assert_eq!(log.kv_get("leases", "newsroom").await.unwrap(), None);
    let r3 = log
        .kv_create("leases", "newsroom", b"next".to_vec())
        .await
        .unwrap();
    assert!(r3 > r2);
    let err = log.kv_get("missing_bucket", "k").await.unwrap_err();
    assert!(matches!(err, DurableError::NotFound { .. }), "{err}");
    let err = log
        .kv_open(&KvSpec {
            bucket: "leases".into(),
            ttl: Some(Duration::from_secs(30)),
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("TTL"), "{err}");
}

async fn kv_entries_expire_after_the_bucket_ttl<H: Harness>(mut h: H) {
    let log = h.open().await;
    let spec = KvSpec {
        bucket: "scratch".into(),
        ttl: Some(Duration::from_secs(1)),
    };
    log.kv_open(&spec).await.unwrap();
    let rev = log
        .kv_create("scratch", "note", b"soon gone".to_vec())
        .await
        .unwrap();
    assert_eq!(
        log.kv_get("scratch", "note")
            .await
            .unwrap()
            .unwrap()
            .revision,
        rev
    );
    let l = log.clone();
    eventually(
        "the scratchpad entry to expire",
        Duration::from_secs(20),
        || {
            let l = l.clone();
            async move {
                l.kv_get("scratch", "note")
                    .await
                    .unwrap()
                    .is_none()
                    .then_some(())
            }
        },
    )
    .await;
    log.kv_create("scratch", "note", b"again".to_vec())
        .await
        .unwrap();
}

/// Appends five messages, consumes and acknowledges the first three, restarts the storage
/// (cleanly or by crash), appends a sixth and returns what the reopened consumer delivers.
async fn consume_across_restart<H: Harness>(h: &mut H, crash: bool) -> Vec<u64> {
    let log = h.open().await;
    for i in 1..=5 {
        log.append(req("mem.t.c", &format!("c{i}"), &format!("{i}")))
            .await
            .unwrap();
    }
    let spec = ConsumerSpec {
        stream: "MEM".into(),
        durable: Some("resumer".into()),
        filter_subject: "mem.>".into(),
        start: StartAt::First,
        ack_wait: Duration::from_secs(1),
    };
    let mut consumer = log.consumer(spec.clone()).await.unwrap();
    let mut acks = Vec::new();
    for expected in 1..=3 {
        let (delivery, ack) = consumer
            .next(Duration::from_secs(10))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(delivery.message.seq, expected);
        acks.push(ack);
    }
    consumer.ack(acks).await.unwrap();
    drop(consumer);
    drop(log);
    let log = if crash {
        h.restart().await
    } else {
        h.restart_clean().await
    };
    log.append(req("mem.t.c", "c6", "6")).await.unwrap();
    let mut consumer = log.consumer(spec).await.unwrap();
    // Everything delivered until the consumer has been quiet for a while (past its ack_wait,
    // so redeliveries have had their chance), each acknowledged.
    let mut seen: Vec<u64> = Vec::new();
    while let Some((delivery, ack)) = consumer.next(QUIET).await.unwrap() {
        seen.push(delivery.message.seq);
        consumer.ack(vec![ack]).await.unwrap();
    }
    seen
}

/// How long a consumer must deliver nothing before a test takes it as drained.
const QUIET: Duration = Duration::from_secs(3);

async fn a_durable_consumer_resumes_after_a_clean_restart<H: Harness>(mut h: H) {
    let mut seen = consume_across_restart(&mut h, false).await;
    // Deliveries that were in flight at the restart come back after ack_wait, possibly after
    // newer messages; nothing acknowledged comes back and nothing is delivered twice here.
    seen.sort();
    assert_eq!(
        seen,
        vec![4, 5, 6],
        "resumes after the last acknowledged message"
    );
}

/// After a crash a consumer never loses an unacknowledged message. It may deliver
/// acknowledged ones again, and redeliveries may come after newer messages (JetStream persists
/// consumer state lazily), which is why every consumer must be idempotent and the projector
/// checks sequence jumps against the log.
async fn a_durable_consumer_loses_nothing_in_a_crash<H: Harness>(mut h: H) {
    let seen = consume_across_restart(&mut h, true).await;
    assert!(
        (4..=6).all(|seq| seen.contains(&seq)),
        "an unacknowledged or new message was lost: {seen:?}"
    );
}

async fn documents_round_trip_through_the_object_store<H: Harness>(mut h: H) {
    let log = h.open().await;
    log.object_open("documents").await.unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    log.object_put("documents", "report.pdf", data.clone())
        .await
        .unwrap();
    assert_eq!(
        log.object_get("documents", "report.pdf").await.unwrap(),
        Some(data)
    );
    log.object_put("documents", "report.pdf", b"v2".to_vec())
        .await
        .unwrap();
    assert_eq!(
        log.object_get("documents", "report.pdf").await.unwrap(),
        Some(b"v2".to_vec())
    );
    assert_eq!(log.object_get("documents", "missing").await.unwrap(), None);
}

/// Through `AnyLog` (what every node holds), an event over one message of the backend is
/// stored in the object store and named by a short line in the log; reads and consumers get it
/// back whole, and its id still deduplicates.
async fn an_event_larger_than_a_message_is_spilled_and_read_back_whole<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let raw = h.open().await;
    let log: AnyLog = raw.clone().into();
    let big: String = (0..3_000_000u32)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let first = log.append(req("mem.t.big", "big", &big)).await.unwrap();
    assert!(!first.duplicate);
    let again = log.append(req("mem.t.big", "big", &big)).await.unwrap();
    assert!(again.duplicate && again.seq == first.seq, "{again:?}");
    log.append(req("mem.t.small", "small", "s")).await.unwrap();

    let stored = raw.read("MEM", "mem.>", 1, 10).await.unwrap();
    let line = String::from_utf8(stored[0].payload.clone()).unwrap();
    assert!(
        line.starts_with("iron-spilled:v1 sha256=") && line.ends_with(" bytes=3000000"),
        "{line}"
    );
    assert_eq!(stored[1].payload, b"s");

    let read = log.read("MEM", "mem.>", 1, 10).await.unwrap();
    assert_eq!(read.len(), 2);
    assert!(read[0].payload == big.as_bytes(), "read back whole");
    assert_eq!(read[0].msg_id.as_deref(), Some("big"));
    let mut consumer = log
        .consumer(ConsumerSpec {
            stream: "MEM".into(),
            durable: None,
            filter_subject: "mem.>".into(),
            start: StartAt::First,
            ack_wait: Duration::from_secs(30),
        })
        .await
        .unwrap();
    let (delivery, _) = consumer
        .next(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("a delivery");
    assert!(
        delivery.message.payload == big.as_bytes(),
        "delivered whole"
    );

    // A small event that happens to read like such a line is spilled too, and comes back as
    // it was written, not as what it names.
    let lookalike = format!("iron-spilled:v1 sha256={} bytes=3", "0".repeat(64));
    log.append(req("mem.t.small", "lookalike", &lookalike))
        .await
        .unwrap();
    let read = log.read("MEM", "mem.>", 3, 10).await.unwrap();
    assert!(read[0].payload == lookalike.as_bytes(), "read as written");

    let over = "x".repeat(spill::MAX_EVENT_BYTES + 1);
    let err = log
        .append(req("mem.t.big", "over", &over))
        .await
        .unwrap_err();
    assert!(matches!(err, DurableError::TooLarge { .. }), "{err}");
    assert_eq!(log.last_sequence("MEM").await.unwrap(), 3);
}

/// A line that names an object the store does not hold (or holds altered) is an error, never
/// the line handed on as if it were the event.
async fn a_spilled_line_whose_object_is_missing_or_altered_is_refused<H: Harness>(mut h: H)
where
    H::Log: Into<AnyLog>,
{
    let raw = h.open().await;
    let log: AnyLog = raw.clone().into();
    let digest = "0".repeat(64);
    raw.append(req(
        "mem.t.forged",
        "forged",
        &format!("iron-spilled:v1 sha256={digest} bytes=5"),
    ))
    .await
    .unwrap();
    let err = log.read("MEM", "mem.>", 1, 10).await.unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    log.object_open(spill::BUCKET).await.unwrap();
    log.object_put(spill::BUCKET, &digest, b"hello".to_vec())
        .await
        .unwrap();
    let err = log.read("MEM", "mem.>", 1, 10).await.unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
}

for_both_backends!(
    an_event_larger_than_a_message_is_spilled_and_read_back_whole,
    a_spilled_line_whose_object_is_missing_or_altered_is_refused,
    ordering,
    acked_writes_survive_a_crash,
    a_repeated_id_inside_the_window_is_stored_once,
    delete_and_purge_are_refused,
    fencing_by_last_subject_sequence,
    unknown_subjects_and_oversized_messages_are_refused,
    kv_compare_and_set,
    kv_entries_expire_after_the_bucket_ttl,
    a_durable_consumer_resumes_after_a_clean_restart,
    a_durable_consumer_loses_nothing_in_a_crash,
    documents_round_trip_through_the_object_store,
);
