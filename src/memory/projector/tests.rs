use super::*;
use crate::memory::recall::{Recall, RecallFilter};
use serde_json::json;

fn stored(seq: u64, namespace: &[&str], text: &str) -> StoredMessage {
    let e = Envelope::new(
        "t",
        namespace.iter().copied(),
        "a",
        EventKind::FactLearned,
        json!({"statement": text}),
    );
    StoredMessage {
        seq,
        subject: "mem.t".into(),
        msg_id: Some(e.event_id.to_string()),
        payload: serde_json::to_vec(&e).unwrap(),
        stored_ms: 0,
    }
}

fn scoped(db: &Path, query: &str, prefix: &str) -> Vec<String> {
    let filter = RecallFilter {
        prefix: Some(prefix.into()),
        ..RecallFilter::default()
    };
    let mut found: Vec<String> = Recall::open(db)
        .unwrap()
        .recall_any(query, &filter)
        .unwrap()
        .into_iter()
        .map(|r| r.namespace)
        .collect();
    found.sort();
    found
}

#[test]
fn a_scope_matches_its_namespace_and_below_and_nothing_that_merely_contains_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut conn = open_writer(&db).unwrap();
    let batch = [
        stored(1, &["facts", "m1", "r2"], "harbour bridge"),
        stored(2, &["facts", "m1", "r22"], "harbour bridge"),
        stored(3, &["x", "facts", "m1", "r2"], "harbour bridge"),
        stored(4, &["facts", "m1", "r2", "sub"], "harbour quay"),
        stored(5, &["facts", "m1"], "the word facts itself"),
    ];
    apply_batch(&mut conn, "MEM", &batch).unwrap();
    assert_eq!(
        scoped(&db, "harbour", "facts/m1/r2"),
        ["facts/m1/r2", "facts/m1/r2/sub"]
    );
    // A query word that is also a namespace token matches bodies only.
    assert_eq!(scoped(&db, "facts", "facts"), ["facts/m1"]);
    assert!(scoped(&db, "   ", "facts").is_empty());
    // A prefix is data, never query syntax.
    assert!(scoped(&db, "harbour", "facts/\"m1 OR x").is_empty());
    assert!(scoped(&db, "harbour", "facts/m1/r2\" OR \"").is_empty());
}

#[test]
fn a_projection_made_before_namespaces_were_indexed_is_reindexed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut conn = open_writer(&db).unwrap();
    apply_batch(
        &mut conn,
        "MEM",
        &[stored(1, &["facts", "n"], "river rising")],
    )
    .unwrap();
    // The first layout: no namespace column.
    conn.execute_batch(
        "DROP TABLE events_fts;
         CREATE VIRTUAL TABLE events_fts USING fts5(event_id UNINDEXED, body);
         PRAGMA user_version = 0;",
    )
    .unwrap();
    drop(conn);
    drop(open_writer(&db).unwrap());
    assert_eq!(scoped(&db, "river", "facts/n"), ["facts/n"]);
}

#[test]
fn when_the_best_matches_are_filtered_out_the_search_still_finds_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut conn = open_writer(&db).unwrap();
    // Twenty facts that match best, all superseded, and one plain current one.
    let mut batch: Vec<StoredMessage> = (1..=20)
        .map(|i| stored(i, &["facts", "a"], "harbour harbour harbour harbour"))
        .collect();
    let gone: Vec<String> = batch
        .iter()
        .map(|m| {
            serde_json::from_slice::<Envelope>(&m.payload)
                .unwrap()
                .event_id
                .to_string()
        })
        .collect();
    batch.push(stored(
        21,
        &["facts", "a"],
        "harbour and a great many other words here",
    ));
    for (i, fact) in gone.iter().enumerate() {
        let e = Envelope::new(
            "t",
            ["facts", "a"],
            "memory/consolidator",
            EventKind::FactSuperseded,
            json!({"fact": fact, "by": "x", "reason": "replaced"}),
        );
        batch.push(StoredMessage {
            seq: 22 + i as u64,
            subject: "mem.t".into(),
            msg_id: Some(e.event_id.to_string()),
            payload: serde_json::to_vec(&e).unwrap(),
            stored_ms: 0,
        });
    }
    apply_batch(&mut conn, "MEM", &batch).unwrap();
    let recall = Recall::open(&db).unwrap();
    let filter = RecallFilter {
        prefix: Some("facts/a".into()),
        limit: 2,
        ..RecallFilter::default()
    };
    let found = recall.recall("harbour", &filter).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].payload.contains("many other words"));
    let all = RecallFilter {
        history: true,
        limit: 50,
        ..filter
    };
    assert_eq!(recall.recall("harbour", &all).unwrap().len(), 21);
}

#[test]
fn an_instruction_is_indexed_by_its_prose_not_its_tasks_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut conn = open_writer(&db).unwrap();
    let instruction = format!(
        "Cross-check these claims.\n\n{}\n{{\"reports\": [\"harbour bridge closed\"]}}\n```",
        crate::protocol::TASK_FENCE
    );
    apply_batch(
        &mut conn,
        "MEM",
        &[stored(1, &["tasks", "t1"], &instruction)],
    )
    .unwrap();
    assert_eq!(scoped(&db, "claims", "tasks"), ["tasks/t1"]);
    assert!(scoped(&db, "harbour", "tasks").is_empty());
}
