//! The feeds source behind `iron msp feeds`: reads a list of RSS 2.0 / Atom feeds (local files
//! or http(s) URLs) and composes their newest items, across all feeds, into the lines an expert
//! reads at wake and the structured records triggers and flows work on. Every feed's health is
//! kept across refreshes (read, cut at the size limit, or failing with why) and printed with
//! each state; a feed that cannot be read is named with its list and line, never dropped
//! silently, and a source whose every feed fails says it has nothing to show.
//!
//! - [`list`]: the feed list (one feed per line, `owner=<token>`), checked at start.
//! - [`fetch`]: reading one feed within a time and size limit, and why it failed.
//! - [`parse`]: RSS / Atom into items, titles and summaries as bounded text.
//!
//! The items are read with `quick-xml` here rather than with `feed-rs` (checked against 3.0):
//! its RSS 2.0 reader drops an item's `<source>`, which is how aggregators name the outlet that
//! first published an item (the very thing the cross-check counts), and it would add `regex`,
//! `mediatype`, `uuid` and a second `quick-xml` to the build for the six fields used below.
//! Dates are chrono's (see `date`).

pub mod fetch;
pub mod list;
pub mod parse;

use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub use fetch::{DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, FeedError, Fetched, Limits};
pub use list::{FeedAddress, FeedSpec, list_of_command, read_list};
pub use parse::parse;

use super::{
    MspError, date,
    health::{self, Book, FeedHealth, Read},
};

/// One item of a feed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FeedItem {
    /// The feed's own id for it (RSS `guid`, Atom `id`), if it gives one.
    pub guid: String,
    /// Headline.
    pub title: String,
    /// Its summary or description as plain text (may be empty).
    pub summary: String,
    /// Where it is published.
    pub link: String,
    /// When (Unix seconds), if the feed says.
    pub published: Option<i64>,
    /// Who says it: the item's author or source, else the feed's title.
    pub origin: String,
    /// The feed it came from (its address as listed).
    pub feed: String,
    /// Its feed's owner: the `owner=` of the list line, else the feed's address.
    pub owner: String,
}

impl FeedItem {
    /// A stable id: the same item of the same feed has the same id on every read.
    pub fn id(&self) -> String {
        let key = [&self.guid, &self.link, &self.title]
            .into_iter()
            .find(|k| !k.is_empty())
            .cloned()
            .unwrap_or_default();
        let digest = Sha256::digest(format!("{}\n{key}", self.feed).as_bytes());
        format!("i-{}", &hex::encode(digest)[..16])
    }

    /// The item as a record: what a trigger hands to a flow.
    pub fn record(&self) -> Value {
        json!({
            "id": self.id(),
            "title": self.title,
            "summary": self.summary,
            "url": self.link,
            "published": self.published.map(date::rfc3339),
            "outlet": self.origin,
            "owner": self.owner,
            "feed": self.feed,
        })
    }
}

/// What one refresh of a feed set produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// Newest items first, at most the limit; undated ones last, in list and feed order.
    pub items: Vec<FeedItem>,
    /// Every feed's health, in list order.
    pub health: Vec<FeedHealth>,
}

impl Snapshot {
    /// Merges each feed's items (or error) into the newest `limit` items overall; each item
    /// is stamped with its feed and owner, and each feed's read is recorded in `book` at
    /// `now_ms`. The sort is stable: items of one date, and undated items, keep the order of
    /// the list and of their feed.
    pub fn merge(
        results: Vec<(FeedSpec, Result<Fetched, FeedError>)>,
        limit: usize,
        book: &mut Book,
        now_ms: i64,
    ) -> Self {
        let mut snap = Snapshot::default();
        let names: Vec<&str> = results.iter().map(|(s, _)| s.name.as_str()).collect();
        book.keep_only(&names);
        for (spec, result) in &results {
            let read = match result {
                Ok(Fetched {
                    items,
                    cut_at: Some(max),
                }) => Read::Cut(
                    items.len(),
                    format!("too large: read up to its first {max} bytes (FEEDS_MAX_BYTES)"),
                ),
                Ok(f) => Read::Whole(f.items.len()),
                Err(e) => Read::Failed(e.to_string()),
            };
            snap.health
                .push(book.record(&spec.name, &spec.at(), read, now_ms));
        }
        for (spec, result) in results {
            if let Ok(fetched) = result {
                let owner = spec.owner_token();
                snap.items.extend(fetched.items.into_iter().map(|mut item| {
                    item.feed = spec.name.clone();
                    item.owner = owner.clone();
                    item
                }));
            }
        }
        snap.items.sort_by_key(|i| std::cmp::Reverse(i.published));
        snap.items.truncate(limit);
        snap
    }

    /// Every feed listed fails.
    pub fn failing(&self) -> bool {
        health::all_failing(&self.health)
    }

    /// The items as records (see [`FeedItem::record`]), newest first.
    pub fn records(&self) -> Vec<Value> {
        self.items.iter().map(FeedItem::record).collect()
    }

    /// One line per feed that is not read whole (what a person must hear about), or, when
    /// every feed fails, that first. Empty when all is well.
    pub fn problems(&self) -> String {
        let mut lines: Vec<String> = self
            .health
            .iter()
            .filter(|h| h.status != health::Status::Ok)
            .map(FeedHealth::line)
            .collect();
        if self.failing() {
            lines.insert(
                0,
                format!(
                    "every feed fails ({} listed); nothing can be shown:",
                    self.health.len()
                ),
            );
        }
        lines.join("\n")
    }

    /// The lines a model reads: one per item, then how each feed is doing.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for item in &self.items {
            let when = item
                .published
                .map(date::utc_minute)
                .unwrap_or_else(|| "undated".into());
            out.push_str(&format!("- {when} · {} · {}", item.origin, item.title));
            if !item.owner.is_empty() && item.owner != item.feed {
                out.push_str(&format!(" [owner: {}]", item.owner));
            }
            if !item.link.is_empty() {
                out.push_str(&format!(" <{}>", item.link));
            }
            out.push('\n');
        }
        if self.items.is_empty() {
            out.push_str("(no items)\n");
        }
        let count = |s: health::Status| self.health.iter().filter(|h| h.status == s).count();
        out.push_str(&format!(
            "Feeds: {} listed; {} read, {} truncated, {} failing.\n",
            self.health.len(),
            count(health::Status::Ok),
            count(health::Status::Truncated),
            count(health::Status::Failing)
        ));
        for h in &self.health {
            out.push_str(&format!("- {}\n", h.line()));
        }
        out
    }

    /// The state line of the source protocol (see [`crate::msp`]).
    pub fn state_line(&self) -> Value {
        json!({
            "text": self.text(),
            "items": self.items.len(),
            "error": self.problems(),
            "records": self.records(),
            "health": self.health,
            "failing": self.failing(),
        })
    }
}

/// Feeds read at the same time.
const FETCHES_AT_ONCE: usize = 8;

/// A feed list read over and over: the feeds program's state between refreshes.
pub struct Feeds {
    list: PathBuf,
    max_items: usize,
    limits: Limits,
    http: reqwest::Client,
    book: Book,
}

impl Feeds {
    /// Reads the list at `list` (an error, with file and line, when a line is not a feed).
    pub fn open(list: &Path, max_items: usize, limits: Limits) -> Result<Self, MspError> {
        read_list(list)?;
        Ok(Feeds {
            list: list.to_path_buf(),
            max_items,
            limits,
            http: reqwest::Client::new(),
            book: Book::default(),
        })
    }

    /// Reads every feed of the list (read again, so an edit takes effect) and merges them.
    /// A list that no longer reads is itself the one failing input.
    pub async fn refresh(&mut self, now_ms: impl Fn() -> i64) -> Snapshot {
        let specs = match read_list(&self.list) {
            Ok(specs) => specs,
            Err(e) => {
                let at = match &e {
                    MspError::FeedList { path, line, .. } => format!("{path}:{line}"),
                    _ => self.list.display().to_string(),
                };
                let name = self.list.display().to_string();
                self.book.keep_only(&[&name]);
                let h = self
                    .book
                    .record(&name, &at, Read::Failed(e.to_string()), now_ms());
                return Snapshot {
                    items: Vec::new(),
                    health: vec![h],
                };
            }
        };
        // Several at once, so that feeds that do not answer cost one timeout, not one each.
        let (http, limits) = (&self.http, self.limits);
        let results: Vec<_> = futures_util::stream::iter(specs)
            .map(|spec| async move {
                let r = fetch::fetch(&spec.address, http, limits).await;
                (spec, r)
            })
            .buffered(FETCHES_AT_ONCE)
            .collect()
            .await;
        Snapshot::merge(results, self.max_items, &mut self.book, now_ms())
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    const RSS: &str = r#"<rss><channel><title>Ministry of Transport</title>
<item><title>A1 bridge closed for inspection</title><link>https://gov.example/a1</link>
<pubDate>Mon, 30 Nov 2026 14:05:00 +0000</pubDate></item>
<item><title>Zebra crossing repainted</title><link>https://gov.example/z</link></item>
<item><title>Always open: the ferry office</title><link>https://gov.example/f</link></item>
</channel></rss>"#;

    const ATOM: &str = r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>Wire</title>
<entry><title>Bridge reopens, says council</title>
<link rel="alternate" href="https://wire.example/1"/><updated>2026-11-30T15:00:00Z</updated>
<author><name>City Desk</name></author></entry>
<entry><title>Another undated one</title><link href="https://wire.example/2"/></entry>
</feed>"#;

    fn url(u: &str, owner: Option<&str>, line: usize) -> FeedSpec {
        FeedSpec {
            address: FeedAddress::Url(u.into()),
            name: u.into(),
            owner: owner.map(str::to_string),
            list: PathBuf::from("wires.txt"),
            line,
        }
    }

    fn whole(xml: &str) -> Result<Fetched, FeedError> {
        Ok(Fetched {
            items: parse(xml).unwrap().1,
            cut_at: None,
        })
    }

    #[test]
    fn merges_newest_first_keeps_feed_order_when_undated_and_reports_every_feed() {
        let mut book = Book::default();
        let snap = Snapshot::merge(
            vec![
                (url("https://a", None, 1), whole(RSS)),
                (
                    url("https://b", None, 2),
                    Err(FeedError::Status(reqwest::StatusCode::SERVICE_UNAVAILABLE)),
                ),
                (url("https://c", Some("wires-inc"), 3), whole(ATOM)),
            ],
            10,
            &mut book,
            1_796_047_500_000,
        );
        let records = snap.records();
        assert_eq!(records[0]["owner"], "wires-inc");
        assert_eq!(records[0]["feed"], "https://c");
        assert_eq!(records[0]["published"], "2026-11-30T15:00:00Z");
        assert_eq!(
            records[1]["owner"], "https://a",
            "a feed without an owner is its own"
        );
        assert_ne!(records[0]["id"], records[1]["id"]);
        let titles: Vec<&str> = snap.items.iter().map(|i| i.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "Bridge reopens, says council",
                "A1 bridge closed for inspection",
                "Zebra crossing repainted",
                "Always open: the ferry office",
                "Another undated one"
            ],
            "undated items last, in list and feed order (not by title)"
        );
        let text = snap.text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("2026-11-30 15:00 UTC · City Desk · Bridge reopens")
                && lines[0].contains("[owner: wires-inc]"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("- undated · Ministry of Transport · Zebra"),
            "{text}"
        );
        assert_eq!(lines[5], "Feeds: 3 listed; 2 read, 0 truncated, 1 failing.");
        assert_eq!(lines[6], "- ok · https://a (wires.txt:1): 3 item(s)");
        assert_eq!(
            lines[7],
            "- failing · https://b (wires.txt:2): HTTP 503 Service Unavailable (since 2026-11-30 14:05 UTC; never read)"
        );
        assert_eq!(snap.problems(), lines[7].trim_start_matches("- "));
        let line = snap.state_line();
        assert_eq!(line["failing"], false);
        assert_eq!(line["health"][1]["status"], "failing");
        assert_eq!(line["health"][1]["at"], "wires.txt:2");
        assert_eq!(line["items"], 5);
    }

    #[test]
    fn a_cut_feed_is_read_and_said_to_be_cut_and_all_failing_says_so() {
        let mut book = Book::default();
        let cut = Fetched {
            items: parse(ATOM).unwrap().1,
            cut_at: Some(4096),
        };
        let snap = Snapshot::merge(vec![(url("https://c", None, 1), Ok(cut))], 10, &mut book, 0);
        assert_eq!(snap.items.len(), 2);
        assert_eq!(snap.health[0].status, health::Status::Truncated);
        assert!(
            snap.problems().contains(
                "too large: read up to its first 4096 bytes (FEEDS_MAX_BYTES); 2 item(s) read"
            ),
            "{}",
            snap.problems()
        );
        let snap = Snapshot::merge(
            vec![
                (url("https://c", None, 1), Err(FeedError::Empty)),
                (
                    url("https://d", None, 2),
                    Err(FeedError::NotAFeed("html".into())),
                ),
            ],
            10,
            &mut book,
            0,
        );
        assert!(snap.failing());
        let problems = snap.problems();
        assert!(
            problems.starts_with("every feed fails (2 listed)"),
            "{problems}"
        );
        assert_eq!(problems.lines().count(), 3);
        assert!(snap.text().contains("(no items)"));
    }

    #[tokio::test]
    async fn a_list_broken_while_running_is_the_failing_input() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.xml"), RSS).unwrap();
        let list = dir.path().join("l.txt");
        std::fs::write(&list, "a.xml\n").unwrap();
        let mut feeds = Feeds::open(&list, 10, Limits::default()).unwrap();
        let snap = feeds.refresh(|| 0).await;
        assert_eq!((snap.items.len(), snap.failing()), (3, false));
        std::fs::write(&list, "a.xml\nb.xml onwer=x\n").unwrap();
        let snap = feeds.refresh(|| 0).await;
        assert!(snap.failing());
        assert_eq!(snap.health[0].at, format!("{}:2", list.display()));
        assert!(snap.problems().contains("\"onwer=x\" is not understood"));
    }
}
