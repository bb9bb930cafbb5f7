//! Reading RSS 2.0 (`<item>`) and Atom (`<entry>`) text into items, with `quick-xml`.
//!
//! Titles and summaries are text: HTML in them (escaped, in CDATA, or Atom's inline XHTML) is
//! turned into its readable text by the memory layer's [`html_text`], so the content of a
//! `<script>` or `<style>` never reaches a summary; Atom's `type="text"` is taken as written.
//! Every field is cut to a bound, so one huge item cannot make the source's records too large
//! for the log. A document that ends inside an element (cut short) is an error, not a feed
//! with fewer items.

use quick_xml::{
    Reader,
    events::{BytesStart, Event},
};

use super::{FeedError, FeedItem, date};
use crate::memory::text::html_text;

/// Longest summary kept, in characters.
pub const SUMMARY_CHARS: usize = 400;
/// Longest headline kept.
pub const TITLE_CHARS: usize = 300;
/// Longest link or feed id kept.
pub const URL_CHARS: usize = 1000;
/// Longest outlet or feed name kept.
pub const NAME_CHARS: usize = 200;
/// Bytes of markup gathered for one summary at most (it is cut to [`SUMMARY_CHARS`] anyway).
const SUMMARY_SOURCE_BYTES: usize = 64 * 1024;

/// Which element's text is being read.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Link,
    Date,
    Origin,
    Guid,
}

/// What a piece of markup fills.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    FeedTitle,
    Title,
    Summary,
}

/// A title or summary being gathered as HTML, however the feed wrote it.
struct Markup {
    target: Target,
    /// Atom `type="text"`: what it holds is text, not markup.
    literal: bool,
    /// Elements open inside it (Atom XHTML).
    depth: usize,
    html: String,
}

impl Markup {
    fn start(e: &BytesStart<'_>, target: Target) -> Markup {
        let literal = e
            .attributes()
            .flatten()
            .any(|a| a.key.local_name().as_ref() == b"type" && a.value.as_ref() == b"text");
        Markup {
            target,
            literal,
            depth: 0,
            html: String::new(),
        }
    }

    fn push(&mut self, s: &str) {
        if self.html.len() < SUMMARY_SOURCE_BYTES {
            self.html.push_str(s);
        }
    }

    /// Text as the feed gives it: markup (escaped or in CDATA) unless it is Atom text or sits
    /// inside XHTML, where it is text to be kept as such.
    fn text(&mut self, text: &str) {
        if self.literal || self.depth > 0 {
            self.push(&escape(text));
        } else {
            self.push(text);
        }
        self.push(" ");
    }

    fn finish(self) -> String {
        let max = match self.target {
            Target::FeedTitle => NAME_CHARS,
            Target::Title => TITLE_CHARS,
            Target::Summary => SUMMARY_CHARS,
        };
        text_of(&self.html, max)
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The readable text of `html` on one line, cut to `max` characters (with `…` when cut). A `<`
/// that starts no tag (`a < b`) is kept as text.
pub fn text_of(html: &str, max: usize) -> String {
    let mut source = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        source.push_str(&rest[..lt]);
        let next = rest[lt + 1..].chars().next();
        if next.is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?')) {
            source.push('<');
        } else {
            source.push_str("&lt;");
        }
        rest = &rest[lt + 1..];
    }
    source.push_str(rest);
    let text = html_text(&source);
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > max {
        let mut cut: String = joined.chars().take(max).collect();
        cut.push('…');
        cut
    } else {
        joined
    }
}

/// Parses RSS 2.0 or Atom text: the feed's title and its items. A document that is not XML,
/// ends inside an element, or is not a feed is an error.
pub fn parse(xml: &str) -> Result<(String, Vec<FeedItem>), FeedError> {
    let (title, items, end) = parse_prefix(xml);
    end.map(|()| (title, items))
}

/// Parses as much of `xml` as can be read: the feed's title, the items read whole, and how the
/// document ended (an error when it stopped early, which a document cut at a size limit does).
pub fn parse_prefix(xml: &str) -> (String, Vec<FeedItem>, Result<(), FeedError>) {
    let mut p = Parser::default();
    let end = p.run(xml);
    for item in &mut p.items {
        if item.origin.is_empty() {
            item.origin = p.feed_title.clone();
        }
    }
    (p.feed_title, p.items, end)
}

#[derive(Default)]
struct Parser {
    feed_title: String,
    items: Vec<FeedItem>,
    /// The item being read and its date as written.
    current: Option<(FeedItem, Option<String>)>,
    field: Option<Field>,
    /// A title or summary being gathered.
    markup: Option<Markup>,
    /// Names of the open elements (to say where a cut-short document stopped).
    open: Vec<String>,
    root_seen: bool,
}

impl Parser {
    fn run(&mut self, xml: &str) -> Result<(), FeedError> {
        let mut reader = Reader::from_str(xml);
        reader.config_mut().trim_text(true);
        loop {
            let event = reader.read_event().map_err(|e| FeedError::NotXml {
                at: reader.error_position(),
                why: e.to_string(),
            })?;
            match event {
                Event::Start(e) => {
                    self.start(&e, false)?;
                    self.open
                        .push(String::from_utf8_lossy(e.local_name().as_ref()).into_owned());
                }
                Event::Empty(e) => self.start(&e, true)?,
                Event::Text(t) => {
                    // An entity XML does not define (`&nbsp;`) is left for the HTML reading.
                    let text = match t.unescape() {
                        Ok(s) => s.into_owned(),
                        Err(_) => String::from_utf8_lossy(&t).into_owned(),
                    };
                    self.text(text.trim());
                }
                Event::CData(c) => {
                    let text = String::from_utf8_lossy(&c.into_inner()).into_owned();
                    self.text(text.trim());
                }
                Event::End(e) => {
                    self.open.pop();
                    self.end(e.local_name().as_ref());
                }
                Event::Eof => break,
                _ => {}
            }
        }
        if let Some(open) = self.open.last() {
            return Err(FeedError::Unfinished(open.clone()));
        }
        if !self.root_seen {
            return Err(FeedError::Empty);
        }
        Ok(())
    }

    fn start(&mut self, e: &BytesStart<'_>, empty: bool) -> Result<(), FeedError> {
        let name = e.local_name();
        let name = name.as_ref();
        if !self.root_seen {
            if !matches!(name, b"rss" | b"feed" | b"RDF") {
                return Err(FeedError::NotAFeed(
                    String::from_utf8_lossy(name).into_owned(),
                ));
            }
            self.root_seen = true;
        }
        if let Some(m) = self.markup.as_mut() {
            // Atom XHTML inside a title or summary: its elements, without their attributes.
            let tag = String::from_utf8_lossy(name).into_owned();
            if empty {
                m.push(&format!("<{tag}/>"));
            } else {
                m.depth += 1;
                m.push(&format!("<{tag}>"));
            }
            return Ok(());
        }
        if matches!(name, b"item" | b"entry") {
            if !empty {
                self.current = Some((FeedItem::default(), None));
            }
            self.field = None;
            return Ok(());
        }
        let in_item = self.current.is_some();
        self.field = None;
        match name {
            b"title" if !empty && in_item => self.markup = Some(Markup::start(e, Target::Title)),
            b"title" if !empty && self.feed_title.is_empty() => {
                self.markup = Some(Markup::start(e, Target::FeedTitle))
            }
            b"description" | b"summary" | b"content" | b"encoded" if !empty && in_item => {
                self.markup = Some(Markup::start(e, Target::Summary))
            }
            b"link" if in_item => self.field = self.link(e),
            b"pubDate" | b"published" | b"updated" | b"date" if in_item => {
                self.field = Some(Field::Date)
            }
            b"author" | b"creator" | b"source" | b"name" if in_item => {
                self.field = Some(Field::Origin)
            }
            b"guid" | b"id" if in_item => self.field = Some(Field::Guid),
            _ => {}
        }
        Ok(())
    }

    /// Atom: `<link href="…" rel="alternate"/>` sets the link; RSS: `<link>…</link>` is read.
    fn link(&mut self, e: &BytesStart<'_>) -> Option<Field> {
        let (item, _) = self.current.as_mut()?;
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
        match (href, rel_ok) {
            (Some(h), true) => {
                if item.link.is_empty() {
                    item.link = h.chars().take(URL_CHARS).collect();
                }
                None
            }
            _ => Some(Field::Link),
        }
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(m) = self.markup.as_mut() {
            m.text(text);
            return;
        }
        let cut = |max: usize| text.chars().take(max).collect::<String>();
        match (self.current.as_mut(), self.field) {
            (Some((item, _)), Some(Field::Link)) if item.link.is_empty() => {
                item.link = cut(URL_CHARS)
            }
            (Some((_, date)), Some(Field::Date)) if date.is_none() => *date = Some(cut(64)),
            (Some((item, _)), Some(Field::Origin)) if item.origin.is_empty() => {
                item.origin = text_of(text, NAME_CHARS)
            }
            (Some((item, _)), Some(Field::Guid)) if item.guid.is_empty() => {
                item.guid = cut(URL_CHARS)
            }
            _ => {}
        }
    }

    fn end(&mut self, name: &[u8]) {
        if let Some(m) = self.markup.as_mut() {
            if m.depth > 0 {
                m.depth -= 1;
                m.push(&format!("</{}>", String::from_utf8_lossy(name)));
                return;
            }
            let m = self.markup.take().expect("markup is open");
            let target = m.target;
            let text = m.finish();
            match (self.current.as_mut(), target) {
                (Some((item, _)), Target::Summary) if item.summary.is_empty() => {
                    item.summary = text
                }
                (Some((item, _)), Target::Title) if item.title.is_empty() => item.title = text,
                (None, Target::FeedTitle) if self.feed_title.is_empty() => self.feed_title = text,
                _ => {}
            }
            return;
        }
        if matches!(name, b"item" | b"entry")
            && let Some((mut item, date)) = self.current.take()
        {
            item.published = date.as_deref().and_then(date::parse_any);
            if !item.title.is_empty() || !item.link.is_empty() {
                self.items.push(item);
            }
        }
        self.field = None;
    }
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
        assert_eq!(items[1].title, "Ferry timetable & fares");
        assert_eq!(items[1].origin, "Port Authority");
        let (_, atom) = parse(ATOM).unwrap();
        assert_eq!(atom[0].link, "https://wire.example/1");
        assert_eq!(atom[0].origin, "City Desk");
        assert!(atom[0].published.is_some());
    }

    #[test]
    fn titles_and_summaries_are_bounded() {
        let long = format!(
            "<rss><channel><item><title>{}</title><link>https://x/{}</link><description>{}</description></item></channel></rss>",
            "w ".repeat(10_000),
            "p".repeat(10_000),
            "<p>s</p>".repeat(100_000),
        );
        let (_, huge) = parse(&long).unwrap();
        assert_eq!(huge[0].title.chars().count(), TITLE_CHARS + 1);
        assert!(huge[0].title.ends_with('…'));
        assert!(huge[0].summary.chars().count() <= SUMMARY_CHARS + 1);
        assert_eq!(huge[0].link.len(), URL_CHARS);
    }

    #[test]
    fn summaries_are_text_without_scripts_or_styles() {
        let atom = r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>W</title>
<entry><title type="html">&lt;b&gt;Quay&lt;/b&gt; flooded &amp; closed</title><id>1</id>
<summary type="html">&lt;p&gt;Basements &lt;i&gt;flooded&lt;/i&gt;.&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;style&gt;p{color:red}&lt;/style&gt; Pumps on&amp;nbsp;site.</summary></entry>
<entry><title>Two</title><id>2</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>Tide at <b>06:40</b> &lt;high&gt;</p><script>alert(2)</script></div></content></entry>
<entry><title type="text">a &lt;b&gt; c</title><id>3</id><summary type="text">x &lt;script&gt;y&lt;/script&gt;</summary></entry>
<entry><title>Profits &lt; forecast</title><id>4</id><summary>&lt;script&gt;alert(4)</summary></entry>
</feed>"#;
        let (_, items) = parse(atom).unwrap();
        assert_eq!(items[0].title, "Quay flooded & closed");
        assert_eq!(items[0].summary, "Basements flooded . Pumps on site.");
        assert_eq!(items[1].summary, "Tide at 06:40 <high>");
        assert_eq!(items[2].title, "a <b> c", "Atom text is text");
        assert_eq!(items[2].summary, "x <script>y</script>");
        assert_eq!(items[3].title, "Profits < forecast");
        assert_eq!(items[3].summary, "", "an unclosed script hides the rest");
        for item in &items {
            assert!(!item.summary.contains("alert"), "{item:?}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_feed_or_is_cut_short() {
        assert!(matches!(
            parse("<html><body/></html>"),
            Err(FeedError::NotAFeed(root)) if root == "html"
        ));
        assert!(matches!(parse(""), Err(FeedError::Empty)));
        assert!(matches!(parse("just words"), Err(FeedError::Empty)));
        let cut = &RSS[..RSS.find("<dc:creator>").unwrap()];
        let (title, items, end) = parse_prefix(cut);
        assert_eq!((title.as_str(), items.len()), ("Ministry of Transport", 1));
        assert_eq!(
            end.unwrap_err().to_string(),
            "not XML: the document ends inside <item> (cut short?)"
        );
        assert!(matches!(
            parse("<rss><channel><item><title>x</titel></item></channel></rss>"),
            Err(FeedError::NotXml { .. })
        ));
    }

    #[test]
    fn an_undefined_entity_does_not_sink_the_feed() {
        let (_, items) = parse(
            "<rss><channel><item><title>Caf&eacute; reopens</title><description>Open&nbsp;daily</description></item></channel></rss>",
        )
        .unwrap();
        assert_eq!(items[0].summary, "Open daily");
        assert_eq!(items[0].title, "Caf&eacute; reopens");
    }
}
