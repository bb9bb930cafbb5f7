//! How each input of a source is doing: read, read in part, or failing, with why, since when,
//! and the last success and failure. The feeds program keeps a [`Book`] across refreshes and
//! prints every feed's [`FeedHealth`] with each state line (`"health"`); the source node
//! compares each report with the one before ([`changes`]) and tells a person once per change,
//! not once per refresh.

use std::collections::BTreeMap;

use super::date;

pub use crate::protocol::payload::{FeedHealth, Status};

impl FeedHealth {
    /// One line for a person or a model: `failing · <feed> (<list>:<line>): <reason> (since …)`.
    pub fn line(&self) -> String {
        let since = date::utc_minute(self.since_ms.div_euclid(1000));
        match self.status {
            Status::Ok => format!("ok · {} ({}): {} item(s)", self.feed, self.at, self.items),
            Status::Truncated => format!(
                "truncated · {} ({}): {}; {} item(s) read (since {since})",
                self.feed, self.at, self.reason, self.items
            ),
            Status::Failing => {
                let last = self
                    .last_ok_ms
                    .map(|t| format!("last read {}", date::utc_minute(t.div_euclid(1000))))
                    .unwrap_or_else(|| "never read".into());
                format!(
                    "failing · {} ({}): {} (since {since}; {last})",
                    self.feed, self.at, self.reason
                )
            }
        }
    }
}

/// How one read of an input went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// Read whole, with this many items.
    Whole(usize),
    /// Read up to a limit (why), with this many items.
    Cut(usize, String),
    /// Not read (why).
    Failed(String),
}

/// Every input's health across refreshes.
#[derive(Debug, Default)]
pub struct Book {
    by_feed: BTreeMap<String, FeedHealth>,
}

impl Book {
    /// Records how `feed` (listed at `at`) was read at `now_ms`, and returns its health.
    pub fn record(&mut self, feed: &str, at: &str, read: Read, now_ms: i64) -> FeedHealth {
        let (status, reason, items) = match read {
            Read::Whole(n) => (Status::Ok, String::new(), n),
            Read::Cut(n, why) => (Status::Truncated, why, n),
            Read::Failed(why) => (Status::Failing, why, 0),
        };
        let h = self
            .by_feed
            .entry(feed.to_string())
            .or_insert_with(|| FeedHealth {
                feed: feed.to_string(),
                at: at.to_string(),
                status,
                reason: reason.clone(),
                items,
                since_ms: now_ms,
                last_ok_ms: None,
                last_failure_ms: None,
                last_failure: String::new(),
            });
        if h.status != status || h.reason != reason {
            h.since_ms = now_ms;
        }
        h.at = at.to_string();
        h.status = status;
        h.items = items;
        if status == Status::Failing {
            h.last_failure_ms = Some(now_ms);
            h.last_failure = reason.clone();
        } else {
            h.last_ok_ms = Some(now_ms);
        }
        h.reason = reason;
        h.clone()
    }

    /// Forgets the inputs not in `feeds` (taken out of the list).
    pub fn keep_only(&mut self, feeds: &[&str]) {
        self.by_feed.retain(|f, _| feeds.contains(&f.as_str()));
    }
}

/// What changed for a person to be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Not read any more, or failing for another reason than before.
    Failing(FeedHealth),
    /// Read in part, where it was read whole or not at all before (or cut for another reason).
    Truncated(FeedHealth),
    /// Read whole again after failing or being cut.
    Recovered(FeedHealth),
}

/// The changes from `before` to `now`: an input seen for the first time counts as having been
/// read whole before, so one that works from the start says nothing.
pub fn changes(before: &[FeedHealth], now: &[FeedHealth]) -> Vec<Change> {
    now.iter()
        .filter_map(|h| {
            let was = before.iter().find(|b| b.feed == h.feed);
            let same = was.is_some_and(|b| b.status == h.status && b.reason == h.reason);
            let was_ok = was.is_none_or(|b| b.status == Status::Ok);
            match h.status {
                _ if same => None,
                Status::Ok if was_ok => None,
                Status::Ok => Some(Change::Recovered(h.clone())),
                Status::Truncated => Some(Change::Truncated(h.clone())),
                Status::Failing => Some(Change::Failing(h.clone())),
            }
        })
        .collect()
}

/// Every input listed fails: the source has nothing to show.
pub fn all_failing(health: &[FeedHealth]) -> bool {
    !health.is_empty() && health.iter().all(|h| h.status == Status::Failing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_told_once_and_a_steady_state_never() {
        let mut book = Book::default();
        let refresh = |book: &mut Book, a: Read, b: Read, t: i64| {
            vec![
                book.record("a.xml", "l.txt:1", a, t),
                book.record("b.xml", "l.txt:2", b, t),
            ]
        };
        let first = refresh(
            &mut book,
            Read::Whole(3),
            Read::Failed("not found".into()),
            1_000,
        );
        let told = changes(&[], &first);
        assert_eq!(told, vec![Change::Failing(first[1].clone())]);
        assert_eq!(
            first[1].line(),
            "failing · b.xml (l.txt:2): not found (since 1970-01-01 00:00 UTC; never read)"
        );
        let second = refresh(
            &mut book,
            Read::Whole(4),
            Read::Failed("not found".into()),
            61_000,
        );
        assert!(
            changes(&first, &second).is_empty(),
            "the same failure again"
        );
        assert_eq!(second[1].since_ms, 1_000);
        assert_eq!(second[1].last_failure_ms, Some(61_000));
        let third = refresh(
            &mut book,
            Read::Cut(9, "too large".into()),
            Read::Whole(2),
            121_000,
        );
        assert_eq!(
            changes(&second, &third),
            vec![
                Change::Truncated(third[0].clone()),
                Change::Recovered(third[1].clone())
            ]
        );
        assert_eq!(third[1].last_failure, "not found");
        assert_eq!(third[1].last_ok_ms, Some(121_000));
        assert!(!all_failing(&third));
        let fourth = refresh(
            &mut book,
            Read::Failed("HTTP 500".into()),
            Read::Failed("HTTP 502".into()),
            181_000,
        );
        assert!(all_failing(&fourth));
        assert_eq!(changes(&third, &fourth).len(), 2);
        assert_eq!(fourth[0].last_ok_ms, Some(121_000));
    }
}
