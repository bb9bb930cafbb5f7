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
