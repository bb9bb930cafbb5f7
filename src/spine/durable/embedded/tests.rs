//! Properties of the embedded log's SQL that no behaviour test can see in reasonable time.

use super::*;

fn append(subject: &str, id: &str) -> AppendRequest {
    AppendRequest {
        subject: subject.into(),
        msg_id: id.into(),
        payload: b"x".to_vec(),
        expected_last_subject_seq: None,
    }
}

/// (sequence, duplicate) of an append.
async fn ack(log: &Embedded, id: &str) -> (u64, bool) {
    let ack = log.append(append("mem.t.a", id)).await.unwrap();
    (ack.seq, ack.duplicate)
}

#[tokio::test]
async fn writers_on_two_connections_share_sequences_and_the_duplicate_window() {
    // Each process of `iron up` has its own connection and its own writer's memory of the
    // tail; each must see what the other appended before it writes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let streams = [StreamSpec::mem()];
    let open = || Embedded::open(&path, &streams, EmbeddedOptions::default());
    let (a, b) = (open().await.unwrap(), open().await.unwrap());
    assert_eq!(ack(&a, "x").await, (1, false));
    assert_eq!(ack(&b, "y").await, (2, false));
    assert_eq!(ack(&a, "y").await, (2, true), "a sees b's id");
    assert_eq!(ack(&b, "x").await, (1, true), "b sees a's id");
    assert_eq!(ack(&a, "z").await, (3, false));
    assert_eq!(ack(&b, "w").await, (4, false));
    assert_eq!(ack(&a, "w").await, (4, true));
    // A reopened log reads its window back from the file.
    drop((a, b));
    let again = open().await.unwrap();
    assert_eq!(ack(&again, "z").await, (3, true));
    assert_eq!(ack(&again, "v").await, (5, false));
}

#[tokio::test]
async fn fencing_is_checked_with_the_subject_index_of_a_fenced_stream_and_refused_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let log = Embedded::open(&path, &StreamSpec::all(), EmbeddedOptions::default())
        .await
        .unwrap();
    let (create, query) = fence_index(crate::spine::durable::streams::JOBS);
    let conn = Connection::open(&path).unwrap();
    let plan: Vec<String> = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {query}"))
        .unwrap()
        .query_map(["jobs.m.evt.j"], |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let plan = plan.join("; ");
    assert!(
        plan.contains("messages_fence_JOBS (subject=?)"),
        "the fencing check must search its index, the plan was: {plan} (index: {create})"
    );
    let mut fenced = append("mem.t.a", "f");
    fenced.expected_last_subject_seq = Some(0);
    let refused = log.append(fenced).await.unwrap_err();
    assert!(
        matches!(&refused, DurableError::NotFenced { stream, .. } if stream == "MEM"),
        "{refused}"
    );
    assert_eq!(
        log.last_sequence("MEM").await.unwrap(),
        0,
        "nothing written"
    );
}

#[tokio::test]
async fn an_id_older_than_the_window_is_a_new_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let mut spec = StreamSpec::mem();
    spec.duplicate_window = Duration::from_millis(200);
    let open = || {
        Embedded::open(
            &path,
            std::slice::from_ref(&spec),
            EmbeddedOptions::default(),
        )
    };
    let log = open().await.unwrap();
    assert_eq!(ack(&log, "x").await, (1, false));
    assert_eq!(ack(&log, "old").await, (2, false));
    assert_eq!(ack(&log, "x").await, (1, true));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ack(&log, "x").await, (3, false), "the window moved past it");
    assert_eq!(
        ack(&log, "x").await,
        (3, true),
        "the new one is in the window"
    );
    // Read back from the file: "old" is out of the window, the second "x" still in it.
    drop(log);
    let log = open().await.unwrap();
    assert_eq!(ack(&log, "x").await, (3, true));
    assert_eq!(ack(&log, "old").await, (4, false));
}

#[test]
fn processes_opening_a_fresh_log_at_once_all_succeed() {
    // `iron up`'s nodes and a CLI can open a log nobody has created yet at the same moment;
    // each must either create a stream or find the one just created, never fail.
    for _ in 0..100 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.db");
        let start = std::sync::Arc::new(std::sync::Barrier::new(6));
        let openers: Vec<_> = (0..6)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    Embedded::open_blocking(path, StreamSpec::all(), EmbeddedOptions::default())
                        .map(|_| ())
                })
            })
            .collect();
        for opener in openers {
            opener.join().unwrap().unwrap();
        }
    }
}

#[test]
fn the_database_itself_refuses_to_delete_or_rewrite_a_message() {
    // The API never deletes; this is the guard beneath it, for anything that opens the file.
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute(
        "INSERT INTO messages(stream, seq, subject, msg_id, payload, ts_ms)
         VALUES ('MEM', 1, 'mem.t.a', NULL, x'00', 0)",
        [],
    )
    .unwrap();
    for statement in [
        "DELETE FROM messages WHERE seq = 1",
        "UPDATE messages SET payload = x'01' WHERE seq = 1",
    ] {
        let err = conn.execute(statement, []).unwrap_err().to_string();
        assert!(err.contains("the log is append-only"), "{statement}: {err}");
    }
    let kept: i64 = conn
        .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kept, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_share_commits_and_each_is_durable_when_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let log = Embedded::open(&path, &[StreamSpec::mem()], EmbeddedOptions::default())
        .await
        .unwrap();
    // A second handle: its own connection, as another process would have.
    let other = Embedded::open(&path, &[StreamSpec::mem()], EmbeddedOptions::default())
        .await
        .unwrap();
    const WRITERS: usize = 8;
    const EACH: usize = 50;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (log, other) = (log.clone(), other.clone());
            tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..EACH {
                    let ack = log
                        .append(AppendRequest {
                            subject: format!("mem.t.w{w}"),
                            msg_id: format!("{w}-{i}"),
                            payload: vec![1; 64],
                            expected_last_subject_seq: None,
                        })
                        .await
                        .unwrap();
                    assert!(!ack.duplicate);
                    // Acknowledged means committed: another connection reads it.
                    let read = other.read("MEM", ">", ack.seq, 1).await.unwrap();
                    assert_eq!(read[0].msg_id.as_deref(), Some(format!("{w}-{i}").as_str()));
                    seqs.push(ack.seq);
                }
                seqs
            })
        })
        .collect();
    let mut all = Vec::new();
    for w in writers {
        all.extend(w.await.unwrap());
    }
    all.sort();
    assert_eq!(all, (1..=(WRITERS * EACH) as u64).collect::<Vec<_>>());
    let commits = log.inner.commits.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        commits < (WRITERS * EACH) as u64,
        "{commits} commits for {} appends: none were shared",
        WRITERS * EACH
    );
}

#[tokio::test]
async fn stages_are_timed_only_when_asked_and_account_for_every_append() {
    let dir = tempfile::tempdir().unwrap();
    let streams = [StreamSpec::mem()];
    let plain = Embedded::open(
        dir.path().join("a.db"),
        &streams,
        EmbeddedOptions::default(),
    )
    .await
    .unwrap();
    ack(&plain, "x").await;
    assert!(plain.take_stages().is_none(), "off by default");
    let timed = Embedded::open(
        dir.path().join("b.db"),
        &streams,
        EmbeddedOptions {
            time_stages: true,
            ..EmbeddedOptions::default()
        },
    )
    .await
    .unwrap();
    for id in ["a", "b", "c"] {
        ack(&timed, id).await;
    }
    let s = timed.take_stages().unwrap();
    assert_eq!((s.in_log.len(), s.queued.len()), (3, 3));
    assert_eq!(s.batch_sizes, [1, 1, 1], "one at a time: a batch each");
    assert_eq!((s.wake.len(), s.begin.len(), s.commit.len()), (3, 3, 3));
    for (stage, inside) in s.commit.iter().zip(&s.in_log) {
        assert!(stage <= inside, "a commit is inside its append's time");
    }
    assert!(timed.take_stages().unwrap().in_log.is_empty(), "taken");
}

#[tokio::test]
async fn a_batch_sees_its_own_rows_for_duplicates_and_fencing() {
    let dir = tempfile::tempdir().unwrap();
    let mut fenced = StreamSpec::mem();
    fenced.fenced = true;
    let log = Embedded::open(
        dir.path().join("log.db"),
        &[fenced],
        EmbeddedOptions::default(),
    )
    .await
    .unwrap();
    let request = |id: &str, expected: Option<u64>| AppendRequest {
        subject: "mem.t.a".into(),
        msg_id: id.into(),
        payload: b"x".to_vec(),
        expected_last_subject_seq: expected,
    };
    // Queued together, written by one batch.
    let (a, b, c, d) = tokio::join!(
        log.append(request("same", None)),
        log.append(request("same", None)),
        log.append(request("fenced", Some(0))),
        log.append(request("other", None)),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.seq, b.seq, "the second is the first's duplicate");
    assert!(a.duplicate != b.duplicate);
    // The fence expected an empty subject; the batch had written to it already (or not,
    // if it ran first): either way exactly the appends that passed were written.
    let written = log.last_sequence("MEM").await.unwrap();
    let passed = 1 + usize::from(c.is_ok()) + usize::from(d.is_ok());
    assert_eq!(written as usize, passed);
    if let Err(e) = c {
        assert!(matches!(e, DurableError::WrongLastSequence { .. }), "{e}");
    }
}
