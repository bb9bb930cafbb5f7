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
