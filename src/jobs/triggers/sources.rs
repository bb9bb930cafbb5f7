//! Source triggers: fold the `source_changed` events of the watched sources into what each
//! source shows now and which item ids were ever seen, and decide when to fire.
//!
//! New ids wait in a pending group until no watched source changed for the trigger's settle
//! time; then the group fires once, with the current items of every watched source. The
//! settle test uses the events' own timestamps while the log is read back at start, and the
//! wall clock only for the group still open at the end, so rebuilding from the log after a
//! restart forms the same groups, and so computes the same job ids, as the live run did.

use crate::protocol::payload::SourceChanged;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

/// One `source_changed` event, as the watch needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// When it was written (ms since the Unix epoch).
    pub ts_ms: u64,
    /// The source.
    pub source: String,
    /// Ids it shows now.
    pub current: Vec<String>,
    /// Records it had not shown before (by the source's own reckoning).
    pub new: Vec<Value>,
}

impl Change {
    /// The change a `source_changed` event written at `ts_ms` records.
    pub fn of(ts_ms: u64, changed: SourceChanged) -> Change {
        Change {
            ts_ms,
            source: changed.source,
            current: changed.current,
            new: changed.new,
        }
    }
}

/// A group of new items ready to start a job.
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    /// The new ids, `<source>:<id>`, sorted: what the job id is computed from.
    pub new: Vec<String>,
    /// The flow's input: `new` and `items` (every current item of the watched sources, each
    /// with its `source`).
    pub fired: Value,
}

/// The state of one source trigger.
#[derive(Debug, Clone)]
pub struct Watch {
    sources: BTreeSet<String>,
    settle_ms: u64,
    /// Per source: the records it shows now, by id.
    shown: BTreeMap<String, BTreeMap<String, Value>>,
    /// Per source: the order it shows them in.
    order: BTreeMap<String, Vec<String>>,
    /// Every `<source>:<id>` ever seen.
    seen: BTreeSet<String>,
    /// New ids not fired yet.
    pending: BTreeSet<String>,
    /// Timestamp of the last change that added to `pending`.
    last_ms: u64,
}

impl Watch {
    /// Watches `sources`, firing after `settle_secs` of quiet.
    pub fn new(sources: &[String], settle_secs: u64) -> Self {
        Self {
            sources: sources.iter().cloned().collect(),
            settle_ms: settle_secs * 1000,
            shown: BTreeMap::new(),
            order: BTreeMap::new(),
            seen: BTreeSet::new(),
            pending: BTreeSet::new(),
            last_ms: 0,
        }
    }

    /// True when `source` is one of the watched ones.
    pub fn watches(&self, source: &str) -> bool {
        self.sources.contains(source)
    }

    /// Folds one change in. A pending group that was already settled when the change was
    /// written fires first (returned), so it is never merged with later items.
    pub fn apply(&mut self, change: Change) -> Option<Firing> {
        if !self.watches(&change.source) {
            return None;
        }
        let fired = self.due(change.ts_ms);
        let shown = self.shown.entry(change.source.clone()).or_default();
        for record in change.new {
            if let Some(id) = record.get("id").and_then(Value::as_str) {
                shown.insert(id.to_string(), record.clone());
            }
        }
        let current: BTreeSet<&String> = change.current.iter().collect();
        shown.retain(|id, _| current.contains(id));
        let mut added = false;
        for id in &change.current {
            let key = format!("{}:{id}", change.source);
            if shown.contains_key(id) && self.seen.insert(key.clone()) {
                self.pending.insert(key);
                added = true;
            }
        }
        self.order.insert(change.source, change.current);
        if added {
            self.last_ms = change.ts_ms;
        }
        fired
    }

    /// The pending group, if it has been quiet for the settle time at `now_ms`.
    pub fn due(&mut self, now_ms: u64) -> Option<Firing> {
        if self.pending.is_empty() || now_ms < self.last_ms.saturating_add(self.settle_ms) {
            return None;
        }
        let new: Vec<String> = std::mem::take(&mut self.pending).into_iter().collect();
        let mut items = Vec::new();
        for (source, ids) in &self.order {
            let Some(shown) = self.shown.get(source) else {
                continue;
            };
            for id in ids {
                if let Some(Value::Object(record)) = shown.get(id) {
                    let mut record = record.clone();
                    record.insert("source".into(), json!(source));
                    items.push(Value::Object(record));
                }
            }
        }
        Some(Firing {
            fired: json!({"new": new, "items": items}),
            new,
        })
    }

    /// When the pending group will be due (ms), if there is one.
    pub fn due_at(&self) -> Option<u64> {
        (!self.pending.is_empty()).then(|| self.last_ms.saturating_add(self.settle_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str) -> Value {
        json!({"id": id, "title": id})
    }

    fn change(ts: u64, source: &str, current: &[&str], new: &[&str]) -> Change {
        Change {
            ts_ms: ts,
            source: source.into(),
            current: current.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|id| rec(id)).collect(),
        }
    }

    fn watch() -> Watch {
        Watch::new(&["official".into(), "wires".into()], 2)
    }

    #[test]
    fn changes_within_the_settle_time_fire_once_together() {
        let mut w = watch();
        assert_eq!(
            w.apply(change(1_000, "official", &["a", "b"], &["a", "b"])),
            None
        );
        assert_eq!(w.apply(change(1_500, "wires", &["x"], &["x"])), None);
        assert_eq!(w.due(3_000), None, "not quiet for 2 s yet");
        assert_eq!(w.due_at(), Some(3_500));
        let f = w.due(3_500).unwrap();
        assert_eq!(f.new, ["official:a", "official:b", "wires:x"]);
        let items = f.fired["items"].as_array().unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[2]["source"], "wires");
        assert_eq!(w.due(10_000), None, "fired once");
    }

    #[test]
    fn seen_items_never_fire_again_and_settled_groups_stay_apart() {
        let mut w = watch();
        w.apply(change(0, "official", &["a"], &["a"]));
        // The first group was quiet long before the next change: it fires as that arrives.
        // The change is the source restarting and showing `a` again (new by its own
        // reckoning): that adds nothing.
        let first = w.apply(change(5_000, "official", &["a"], &["a"])).unwrap();
        assert_eq!(first.new, ["official:a"]);
        assert_eq!(w.due(100_000), None);
        // A later item fires on its own, with every current item as input.
        w.apply(change(200_000, "official", &["c", "a"], &["c"]));
        let f = w.due(202_000).unwrap();
        assert_eq!(f.new, ["official:c"]);
        assert_eq!(f.fired["items"].as_array().unwrap().len(), 2);
        // Unwatched sources are ignored; items that left the source are not in the input.
        assert_eq!(w.apply(change(300_000, "other", &["z"], &["z"])), None);
        w.apply(change(300_000, "official", &["d"], &["d"]));
        let f = w.due(400_000).unwrap();
        assert_eq!(f.fired["items"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn replay_forms_the_same_groups_as_the_live_run() {
        let events = vec![
            change(0, "official", &["a"], &["a"]),
            change(1_000, "wires", &["x"], &["x"]),
            change(60_000, "wires", &["y", "x"], &["y"]),
        ];
        // Live: each group fired once it was quiet.
        let mut live = watch();
        let mut fired_live = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if i == 2 {
                fired_live.extend(live.due(3_000));
            }
            fired_live.extend(live.apply(e.clone()));
        }
        fired_live.extend(live.due(70_000));
        // Rebuilt from the log at once, long after.
        let mut replay = watch();
        let mut fired_replay: Vec<Firing> =
            events.into_iter().filter_map(|e| replay.apply(e)).collect();
        fired_replay.extend(replay.due(1_000_000));
        let ids = |f: &[Firing]| f.iter().map(|x| x.new.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&fired_live), ids(&fired_replay));
        assert_eq!(ids(&fired_live).len(), 2);
    }
}
