//! The feeds source behind `iron msp feeds`: reads a list of RSS 2.0 / Atom feeds (local files
//! or http(s) URLs) and composes their newest items, across all feeds, into the lines an expert
//! reads at wake and the structured records triggers and flows work on. A feed that cannot be
//! read is reported in the state, never dropped silently.
//!
//! A feed list has one feed per line: the address, then optional `key=value` words. The one key
//! is `owner=<token>`: feeds with the same owner are one source when claims are cross-checked
//! (two outlets of one media group are not independent); a feed without an owner is its own.
//!
//! The items are read with `quick-xml` here rather than with `feed-rs` (checked against 3.0):
//! its RSS 2.0 reader drops an item's `<source>`, which is how aggregators name the outlet that
//! first published an item (the very thing the cross-check counts), and it would add `regex`,
//! `mediatype`, `uuid` and a second `quick-xml` to the build for the six fields used below.
//! Dates are chrono's (see `date`).

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use quick_xml::{Reader, events::Event};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{MspError, date};

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

/// Where a feed is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedAddress {
    /// A file on disk.
    File(PathBuf),
    /// An `http://` or `https://` URL.
    Url(String),
}

impl std::fmt::Display for FeedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FeedAddress::File(p) => write!(f, "{}", p.display()),
            FeedAddress::Url(u) => f.write_str(u),
        }
    }
}

/// One line of a feed list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedSpec {
    /// Where it is read from.
    pub address: FeedAddress,
    /// The address as written in the list (the feed's name in records and errors).
    pub name: String,
    /// Its owner, if the line names one.
    pub owner: Option<String>,
}

impl FeedSpec {
    /// The independence token of its items: the owner, else the feed itself.
    pub fn owner_token(&self) -> String {
        self.owner.clone().unwrap_or_else(|| self.name.clone())
    }
}

/// Reads a feed list: one feed per line, `#` starts a comment; relative paths are relative to
/// the list's own directory. A line may end with `owner=<token>` (letters, digits, `-`, `_`,
/// `.`); any other word after the address is an error naming the line.
pub fn read_list(path: &Path) -> Result<Vec<FeedSpec>, MspError> {
    let text = std::fs::read_to_string(path).map_err(|source| MspError::Io {
        what: format!("feed list {}", path.display()),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut specs = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        let Some(address) = words.next() else {
            continue;
        };
        let bad = |why: String| MspError::FeedList {
            path: path.display().to_string(),
            line: n + 1,
            why,
        };
        let mut owner = None;
        for word in words {
            match word.split_once('=') {
                Some(("owner", token)) if valid_owner(token) => owner = Some(token.to_string()),
                Some(("owner", token)) => {
                    return Err(bad(format!(
                        "owner {token:?} is not a token; use letters, digits, '-', '_' or '.'"
                    )));
                }
                _ => {
                    return Err(bad(format!(
                        "{word:?} is not understood; after the address only owner=<token> may follow"
                    )));
                }
            }
        }
        let address = if address.starts_with("http://") || address.starts_with("https://") {
            FeedAddress::Url(address.to_string())
        } else {
            FeedAddress::File(base.join(address))
        };
        specs.push(FeedSpec {
            name: address.to_string(),
            address,
            owner,
        });
    }
    Ok(specs)
}

fn valid_owner(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 64
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Which element's text is being read.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Title,
    Link,
    Date,
    Origin,
    Guid,
    Summary,
}

/// Why a feed could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// The file could not be read.
    #[error("{0}")]
    Read(#[from] std::io::Error),
    /// The URL did not answer.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The URL answered with an error status.
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    /// Not XML.
    #[error("not well-formed XML at byte {at}: {source}")]
    NotXml {
        /// Where.
        at: u64,
        /// The parser's reason.
        #[source]
        source: quick_xml::Error,
    },
    /// Text with a broken escape.
    #[error("{0}")]
    Text(#[from] quick_xml::Error),
    /// XML, but not RSS or Atom.
    #[error("not an RSS or Atom feed (root element <{0}>)")]
    NotAFeed(String),
    /// No element at all.
    #[error("empty document")]
    Empty,
}

/// Parses RSS 2.0 (`<item>`) or Atom (`<entry>`) text: the feed's title and its items.
pub fn parse(xml: &str) -> Result<(String, Vec<FeedItem>), FeedError> {
    let mut reader = Reader::from_str(xml);
    reader.config_mut().trim_text(true);
    let mut feed_title = String::new();
    let mut items = Vec::new();
    let mut current: Option<(FeedItem, Option<String>)> = None;
    let mut field: Option<Field> = None;
    let mut saw_root = false;
    loop {
        let event = reader.read_event().map_err(|source| FeedError::NotXml {
            at: reader.error_position(),
            source,
        })?;
        match event {
            Event::Start(e) | Event::Empty(e) => {
                let name = e.local_name();
                let name = name.as_ref();
                if !saw_root {
                    if !matches!(name, b"rss" | b"feed" | b"RDF") {
                        return Err(FeedError::NotAFeed(
                            String::from_utf8_lossy(name).into_owned(),
                        ));
                    }
                    saw_root = true;
                }
                if matches!(name, b"item" | b"entry") {
                    current = Some((FeedItem::default(), None));
                    continue;
                }
                if let Some((item, _)) = current.as_mut() {
                    field = match name {
                        b"title" => Some(Field::Title),
                        b"link" => {
                            // Atom: <link href="…" rel="alternate"/>; RSS: <link>…</link>.
                            let mut href = None;
                            let mut rel_ok = true;
                            for a in e.attributes().flatten() {
                                let value = a.unescape_value().unwrap_or_default().to_string();
                                match a.key.local_name().as_ref() {
                                    b"href" => href = Some(value),
                                    b"rel" => rel_ok = value == "alternate",
                                    _ => {}
                                }
                            }
                            if let (Some(h), true) = (href, rel_ok) {
                                if item.link.is_empty() {
                                    item.link = h;
                                }
                                None
                            } else {
                                Some(Field::Link)
                            }
                        }
                        b"pubDate" | b"published" | b"updated" | b"date" => Some(Field::Date),
                        b"author" | b"creator" | b"source" | b"name" => Some(Field::Origin),
                        b"guid" | b"id" => Some(Field::Guid),
                        b"description" | b"summary" | b"content" | b"encoded" => {
                            Some(Field::Summary)
                        }
                        _ => None,
                    };
                } else if name == b"title" && feed_title.is_empty() {
                    field = Some(Field::Title);
                } else {
                    field = None;
                }
            }
            Event::Text(t) => {
                let text = t.unescape()?.trim().to_string();
                take_text(&mut current, &mut feed_title, field, text);
            }
            Event::CData(c) => {
                let text = String::from_utf8_lossy(&c.into_inner()).trim().to_string();
                take_text(&mut current, &mut feed_title, field, text);
            }
            Event::End(e) => {
                let name = e.local_name();
                if matches!(name.as_ref(), b"item" | b"entry")
                    && let Some((mut item, date)) = current.take()
                {
                    item.published = date.as_deref().and_then(date::parse_any);
                    if !item.title.is_empty() || !item.link.is_empty() {
                        items.push(item);
                    }
                }
                field = None;
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_root {
        return Err(FeedError::Empty);
    }
    for item in &mut items {
        if item.origin.is_empty() {
            item.origin = feed_title.clone();
        }
    }
    Ok((feed_title, items))
}

fn take_text(
    current: &mut Option<(FeedItem, Option<String>)>,
    feed_title: &mut String,
    field: Option<Field>,
    text: String,
) {
    if text.is_empty() {
        return;
    }
    // Every field is cut to a bound: one item a feed makes huge must not make the source's
    // records too large for the log (and so stop it recording anything).
    let cut = |max: usize| text.chars().take(max).collect::<String>();
    match (current.as_mut(), field) {
        (Some((item, _)), Some(Field::Title)) if item.title.is_empty() => {
            item.title = plain_text(&text, TITLE_CHARS)
        }
        (Some((item, _)), Some(Field::Link)) if item.link.is_empty() => item.link = cut(URL_CHARS),
        (Some((_, date)), Some(Field::Date)) if date.is_none() => *date = Some(cut(64)),
        (Some((item, _)), Some(Field::Origin)) if item.origin.is_empty() => {
            item.origin = plain_text(&text, NAME_CHARS)
        }
        (Some((item, _)), Some(Field::Guid)) if item.guid.is_empty() => item.guid = cut(URL_CHARS),
        (Some((item, _)), Some(Field::Summary)) if item.summary.is_empty() => {
            item.summary = plain_text(&text, SUMMARY_CHARS)
        }
        (None, Some(Field::Title)) if feed_title.is_empty() => {
            *feed_title = plain_text(&text, NAME_CHARS)
        }
        _ => {}
    }
}

/// Longest summary kept, in characters.
const SUMMARY_CHARS: usize = 400;
/// Longest headline kept.
const TITLE_CHARS: usize = 300;
/// Longest link or feed id kept.
const URL_CHARS: usize = 1000;
/// Longest outlet or feed name kept.
const NAME_CHARS: usize = 200;

/// `html` with tags removed, whitespace collapsed, cut to `max` characters.
fn plain_text(html: &str, max: usize) -> String {
    let mut out = String::with_capacity(html.len().min(max * 4));
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.chars().count() > max {
        let mut cut: String = joined.chars().take(max).collect();
        cut.push('…');
        cut
    } else {
        joined
    }
}

/// What one refresh of a feed set produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// Newest items first (undated last), at most the limit.
    pub items: Vec<FeedItem>,
    /// Feeds that could not be read, with why.
    pub errors: Vec<String>,
    /// How many feeds were read.
    pub feeds: usize,
}

impl Snapshot {
    /// Merges each feed's items (or error) into the newest `limit` items overall; each item
    /// is stamped with its feed and owner.
    pub fn merge(results: Vec<(FeedSpec, Result<Vec<FeedItem>, FeedError>)>, limit: usize) -> Self {
        let mut snap = Snapshot::default();
        for (spec, result) in results {
            match result {
                Ok(items) => {
                    snap.feeds += 1;
                    let owner = spec.owner_token();
                    snap.items.extend(items.into_iter().map(|mut item| {
                        item.feed = spec.name.clone();
                        item.owner = owner.clone();
                        item
                    }));
                }
                Err(e) => snap.errors.push(format!("{}: {e}", spec.name)),
            }
        }
        snap.items
            .sort_by(|a, b| b.published.cmp(&a.published).then(a.title.cmp(&b.title)));
        snap.items.truncate(limit);
        snap
    }

    /// The items as records (see [`FeedItem::record`]), newest first.
    pub fn records(&self) -> Vec<Value> {
        self.items.iter().map(FeedItem::record).collect()
    }

    /// The lines a model reads: one per item, then one per unreadable feed.
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
        for e in &self.errors {
            out.push_str(&format!("! could not read {e}\n"));
        }
        out
    }
}

/// Reads one feed (a file, or a URL within `timeout`).
pub async fn fetch(
    address: &FeedAddress,
    http: &reqwest::Client,
    timeout: Duration,
) -> Result<Vec<FeedItem>, FeedError> {
    let text = match address {
        FeedAddress::File(p) => tokio::fs::read_to_string(p).await?,
        FeedAddress::Url(u) => {
            let response = http.get(u).timeout(timeout).send().await?;
            if !response.status().is_success() {
                return Err(FeedError::Status(response.status()));
            }
            response.text().await?
        }
    };
    parse(&text).map(|(_, items)| items)
}

/// Reads every feed of the list at `list` and merges them.
pub async fn refresh(
    list: &Path,
    limit: usize,
    http: &reqwest::Client,
) -> Result<Snapshot, MspError> {
    let specs = read_list(list)?;
    let mut results = Vec::with_capacity(specs.len());
    for spec in specs {
        let r = fetch(&spec.address, http, Duration::from_secs(10)).await;
        results.push((spec, r));
    }
    Ok(Snapshot::merge(results, limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSS: &str = r#"<?xml version="1.0"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
<title>Ministry of Transport</title>
<item><title>A1 bridge closed for inspection</title><link>https://gov.example/a1</link>
<guid>min-a1</guid><description><![CDATA[<p>The <b>A1</b> bridge is   closed.</p>]]></description>
<pubDate>Mon, 30 Nov 2026 14:05:00 +0000</pubDate></item>
<item><title><![CDATA[Ferry timetable & fares]]></title><link>https://gov.example/ferry</link>
<dc:creator>Port Authority</dc:creator><pubDate>Sun, 29 Nov 2026 09:00:00 +0000</pubDate></item>
</channel></rss>"#;

    const ATOM: &str = r#"<?xml version="1.0"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Wire</title>
<entry><title>Bridge reopens, says council</title>
<link rel="alternate" href="https://wire.example/1"/><updated>2026-11-30T15:00:00Z</updated>
<author><name>City Desk</name></author></entry>
</feed>"#;

    #[test]
    fn reads_rss_and_atom() {
        let (title, items) = parse(RSS).unwrap();
        assert_eq!(title, "Ministry of Transport");
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].title, "A1 bridge closed for inspection");
        assert_eq!(items[0].origin, "Ministry of Transport");
        assert_eq!(items[0].guid, "min-a1");
        assert_eq!(items[0].summary, "The A1 bridge is closed.");
        assert_eq!(items[1].summary, "");
        let long = format!(
            "<rss><channel><item><title>{}</title><link>https://x/{}</link></item></channel></rss>",
            "w ".repeat(10_000),
            "p".repeat(10_000)
        );
        let (_, huge) = parse(&long).unwrap();
        assert!(huge[0].title.chars().count() <= TITLE_CHARS + 1);
        assert!(huge[0].link.len() <= URL_CHARS);
        assert_eq!(items[1].title, "Ferry timetable & fares");
        assert_eq!(items[1].origin, "Port Authority");
        let (_, atom) = parse(ATOM).unwrap();
        assert_eq!(atom[0].link, "https://wire.example/1");
        assert_eq!(atom[0].origin, "City Desk");
        assert!(atom[0].published.is_some());
    }

    #[test]
    fn refuses_what_is_not_a_feed() {
        assert!(matches!(
            parse("<html><body/></html>"),
            Err(FeedError::NotAFeed(root)) if root == "html"
        ));
        assert!(matches!(parse(""), Err(FeedError::Empty)));
    }

    #[test]
    fn merges_newest_first_and_reports_unreadable_feeds() {
        let (_, rss) = parse(RSS).unwrap();
        let (_, atom) = parse(ATOM).unwrap();
        let url = |u: &str, owner: Option<&str>| FeedSpec {
            address: FeedAddress::Url(u.into()),
            name: u.into(),
            owner: owner.map(str::to_string),
        };
        let snap = Snapshot::merge(
            vec![
                (url("https://a", None), Ok(rss)),
                (
                    url("https://b", None),
                    Err(FeedError::Status(reqwest::StatusCode::SERVICE_UNAVAILABLE)),
                ),
                (url("https://c", Some("wires-inc")), Ok(atom)),
            ],
            2,
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
        assert_eq!(snap.feeds, 2);
        let text = snap.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].contains("2026-11-30 15:00 UTC · City Desk · Bridge reopens")
                && lines[0].contains("[owner: wires-inc]"),
            "{text}"
        );
        assert!(lines[1].contains("A1 bridge closed"), "{text}");
        assert_eq!(
            lines[2],
            "! could not read https://b: HTTP 503 Service Unavailable"
        );
    }

    #[test]
    fn list_paths_are_relative_to_the_list() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("feeds.txt");
        std::fs::write(
            &list,
            "# official\nmin.xml\n\nhttps://x.example/rss owner=x-media # remote\n",
        )
        .unwrap();
        let specs = read_list(&list).unwrap();
        let addresses: Vec<&FeedAddress> = specs.iter().map(|s| &s.address).collect();
        assert_eq!(
            addresses,
            vec![
                &FeedAddress::File(dir.path().join("min.xml")),
                &FeedAddress::Url("https://x.example/rss".into())
            ]
        );
        assert_eq!(
            specs[0].owner_token(),
            dir.path().join("min.xml").display().to_string()
        );
        assert_eq!(specs[1].owner.as_deref(), Some("x-media"));
        std::fs::write(&list, "a.xml\nb.xml owner=bad/token\n").unwrap();
        let err = read_list(&list).unwrap_err().to_string();
        assert!(
            err.contains(":2: owner \"bad/token\" is not a token"),
            "{err}"
        );
        std::fs::write(&list, "a.xml onwer=x\n").unwrap();
        let err = read_list(&list).unwrap_err().to_string();
        assert!(err.contains(":1: \"onwer=x\" is not understood"), "{err}");
    }
}
