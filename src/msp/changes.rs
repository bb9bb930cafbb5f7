//! What a source records when its items change. Each state line may carry structured records
//! (JSON objects with a string `id`); when the set of ids differs from the one last recorded,
//! the source writes `source_changed` events to the log: the ids it shows now and the full
//! records of the ones it had not shown before. Triggers start flows from these events, and
//! everything a flow later cites can be traced back to them.
//!
//! A change with many new records is split over several events so that each stays far below
//! the log's message size limit; every part carries the whole list of current ids. Event ids
//! are computed from the source and the ids, so a source that restarts and shows the same
//! items again writes nothing new.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::core::ids::EventId;

/// New records per event (a feed record is well under 2 KB, so a part stays under ~200 KB).
pub const RECORDS_PER_EVENT: usize = 100;

/// A change of a source's items.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Ids shown now, in the source's order.
    pub current: Vec<String>,
    /// Records whose ids were not shown before.
    pub new: Vec<Value>,
}

/// The change from `previous` (ids last recorded; `None` when nothing was recorded yet) to
/// `records`, or `None` when the ids are the same.
pub fn change(previous: Option<&BTreeSet<String>>, records: &[Value]) -> Option<Change> {
    let current: Vec<String> = records
        .iter()
        .filter_map(|r| record_id(r).map(str::to_string))
        .collect();
    let now: BTreeSet<&str> = current.iter().map(String::as_str).collect();
    if let Some(before) = previous
        && before.len() == now.len()
        && before.iter().all(|id| now.contains(id.as_str()))
    {
        return None;
    }
    let mut seen = BTreeSet::new();
    let new = records
        .iter()
        .filter(|r| {
            record_id(r).is_some_and(|id| {
                previous.is_none_or(|p| !p.contains(id)) && seen.insert(id.to_string())
            })
        })
        .cloned()
        .collect();
    Some(Change { current, new })
}

/// The payloads (with their computed ids) that record `change` of `mesh`/`source`.
pub fn payloads(mesh: &str, source: &str, change: &Change) -> Vec<(EventId, Value)> {
    let mut sorted: Vec<&str> = change.current.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    let shown = EventId::computed(&sorted).to_string();
    let chunks: Vec<&[Value]> = if change.new.is_empty() {
        vec![&[]]
    } else {
        change.new.chunks(RECORDS_PER_EVENT).collect()
    };
    let parts = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, new)| {
            let id = EventId::computed(&["source_changed", mesh, source, &shown, &i.to_string()]);
            let payload = json!({
                "mesh": mesh,
                "source": source,
                "current": change.current,
                "new": new,
                "part": i + 1,
                "parts": parts,
            });
            (id, payload)
        })
        .collect()
}

/// The id of a record, if it has a usable one.
pub fn record_id(record: &serde_json::Value) -> Option<&str> {
    record
        .get("id")
        .and_then(|v| v.as_str())
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str) -> Value {
        json!({"id": id, "title": format!("item {id}")})
    }

    #[test]
    fn only_a_different_set_of_ids_is_a_change() {
        let first = change(None, &[rec("a"), rec("b")]).unwrap();
        assert_eq!(first.current, ["a", "b"]);
        assert_eq!(first.new.len(), 2, "everything is new the first time");
        let before: BTreeSet<String> = ["a".into(), "b".into()].into();
        assert_eq!(change(Some(&before), &[rec("b"), rec("a")]), None);
        let more = change(Some(&before), &[rec("c"), rec("a"), rec("b")]).unwrap();
        assert_eq!(more.new, vec![rec("c")]);
        let fewer = change(Some(&before), &[rec("a")]).unwrap();
        assert!(fewer.new.is_empty() && fewer.current == ["a"]);
        let dup = change(None, &[rec("a"), rec("a"), json!({"title": "no id"})]).unwrap();
        assert_eq!((dup.current.len(), dup.new.len()), (2, 1));
    }

    #[test]
    fn large_changes_are_split_and_ids_are_computed() {
        let records: Vec<Value> = (0..250).map(|i| rec(&format!("i{i:03}"))).collect();
        let c = change(None, &records).unwrap();
        let parts = payloads("news", "wires", &c);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].1["new"].as_array().unwrap().len(), 50);
        assert!(
            parts
                .iter()
                .all(|(_, p)| p["current"].as_array().unwrap().len() == 250)
        );
        let again = payloads("news", "wires", &c);
        assert_eq!(parts[0].0, again[0].0, "the same change has the same ids");
        assert_ne!(parts[0].0, parts[1].0);
        let other = payloads("news", "official", &c);
        assert_ne!(parts[0].0, other[0].0);
    }
}
