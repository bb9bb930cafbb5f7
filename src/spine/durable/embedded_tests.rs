//! Properties of the embedded log's SQL that no behaviour test can see in reasonable time.

use super::*;

#[test]
fn the_duplicate_check_uses_its_index_not_a_scan_of_the_stream() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    let plan: Vec<String> = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {LAST_WITH_MSG_ID}"))
        .unwrap()
        .query_map(params!["S", "id"], |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let plan = plan.join("; ");
    assert!(
        plan.contains("messages_msg_id (stream=? AND msg_id=?)"),
        "the duplicate check must search its index, the plan was: {plan}"
    );
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
async fn a_batch_sees_its_own_rows_for_duplicates_and_fencing() {
    let dir = tempfile::tempdir().unwrap();
    let log = Embedded::open(
        dir.path().join("log.db"),
        &[StreamSpec::mem()],
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
