//! The text of a saved document, and its passages: plain text and Markdown as they are, HTML
//! without its markup (scripts, styles and comments dropped, entities decoded, block elements
//! as paragraph breaks), PDF page by page. A passage is a run of paragraphs of about
//! [`PASSAGE_CHARS`] characters; it keeps where it starts (page, and character offset in that
//! page's text), so recall can say where in the document it found something.

/// About how long a passage is (characters); a paragraph longer than twice this is cut at a
/// sentence or word boundary.
pub const PASSAGE_CHARS: usize = 800;

/// What kind of document it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaType {
    /// Plain text or Markdown.
    Text,
    /// HTML.
    Html,
    /// PDF.
    Pdf,
}

impl MediaType {
    /// Its MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            MediaType::Text => "text/plain",
            MediaType::Html => "text/html",
            MediaType::Pdf => "application/pdf",
        }
    }

    /// From the word a person or a model gives: `text`, `html` or `pdf`.
    pub fn from_word(word: &str) -> Option<Self> {
        match word {
            "text" => Some(MediaType::Text),
            "html" => Some(MediaType::Html),
            "pdf" => Some(MediaType::Pdf),
            _ => None,
        }
    }

    /// From a MIME type (parameters ignored), `None` when it is none of these.
    pub fn from_mime(mime: &str) -> Option<Self> {
        let essence = mime.split(';').next().unwrap_or("").trim().to_lowercase();
        match essence.as_str() {
            "text/plain" | "text/markdown" => Some(MediaType::Text),
            "text/html" | "application/xhtml+xml" => Some(MediaType::Html),
            "application/pdf" => Some(MediaType::Pdf),
            _ => None,
        }
    }

    /// Guessed from the bytes (a PDF header, an HTML opening) and then the name's extension;
    /// `None` when neither says and the bytes are not UTF-8 text.
    pub fn sniff(name: &str, bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"%PDF-") {
            return Some(MediaType::Pdf);
        }
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_lowercase();
        let head = head.trim_start();
        if head.starts_with("<!doctype html") || head.starts_with("<html") {
            return Some(MediaType::Html);
        }
        let name = name.to_lowercase();
        let path = name.split(['?', '#']).next().unwrap_or("");
        match path.rsplit('.').next() {
            Some("html" | "htm" | "xhtml") => Some(MediaType::Html),
            Some("pdf") => Some(MediaType::Pdf),
            _ if std::str::from_utf8(bytes).is_ok() => Some(MediaType::Text),
            _ => None,
        }
    }
}

/// Why a document's text could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// Text that is not UTF-8.
    #[error("the document is not UTF-8 text")]
    NotUtf8,
    /// A PDF the reader cannot read.
    #[error("the PDF cannot be read: {0}")]
    Pdf(String),
}

/// A document's text, page by page (one page for anything but a PDF).
pub fn pages(kind: MediaType, bytes: &[u8]) -> Result<Vec<String>, TextError> {
    match kind {
        MediaType::Text => Ok(vec![
            std::str::from_utf8(bytes)
                .map_err(|_| TextError::NotUtf8)?
                .to_string(),
        ]),
        MediaType::Html => Ok(vec![html_text(&String::from_utf8_lossy(bytes))]),
        MediaType::Pdf => pdf_extract::extract_text_from_mem_by_pages(bytes)
            .map_err(|e| TextError::Pdf(e.to_string())),
    }
}

/// One passage of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Its place among the document's passages, from 0.
    pub ordinal: usize,
    /// The page it is on, from 1.
    pub page: usize,
    /// Where it starts in that page's text (characters).
    pub offset: usize,
    /// Its text, whitespace collapsed.
    pub text: String,
}

/// `pages` cut into passages.
pub fn passages(pages: &[String]) -> Vec<Passage> {
    let mut out = Vec::new();
    for (page, text) in pages.iter().enumerate() {
        let mut current = String::new();
        let mut start = 0;
        let flush = |current: &mut String, start: usize, out: &mut Vec<Passage>| {
            if !current.is_empty() {
                out.push(Passage {
                    ordinal: out.len(),
                    page: page + 1,
                    offset: start,
                    text: std::mem::take(current),
                });
            }
        };
        for (at, paragraph) in paragraphs(text) {
            for (piece_at, piece) in cut(&paragraph) {
                if !current.is_empty()
                    && current.chars().count() + piece.chars().count() > PASSAGE_CHARS
                {
                    flush(&mut current, start, &mut out);
                }
                if current.is_empty() {
                    start = at + piece_at;
                } else {
                    current.push(' ');
                }
                current.push_str(&piece);
            }
        }
        flush(&mut current, start, &mut out);
    }
    out
}

/// The paragraphs of `text` (separated by blank lines), whitespace collapsed, each with the
/// character offset where it starts.
fn paragraphs(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut offset = 0;
    for block in text.split("\n\n") {
        let words: Vec<&str> = block.split_whitespace().collect();
        if !words.is_empty() {
            let lead = block.chars().take_while(|c| c.is_whitespace()).count();
            found.push((offset + lead, words.join(" ")));
        }
        offset += block.chars().count() + 2;
    }
    found
}

/// A paragraph in pieces of at most twice [`PASSAGE_CHARS`], cut after a sentence where one
/// ends late enough, else at a space; each piece with its offset in the paragraph.
fn cut(paragraph: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = paragraph.chars().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    while chars.len() - start > 2 * PASSAGE_CHARS {
        let window = &chars[start..start + 2 * PASSAGE_CHARS];
        let sentence = (PASSAGE_CHARS..window.len())
            .rev()
            .find(|&i| matches!(window[i - 1], '.' | '!' | '?') && window[i] == ' ');
        let end = sentence
            .or_else(|| {
                (PASSAGE_CHARS..window.len())
                    .rev()
                    .find(|&i| window[i] == ' ')
            })
            .unwrap_or(window.len());
        pieces.push((
            start,
            window[..end].iter().collect::<String>().trim().to_string(),
        ));
        start += end;
        while start < chars.len() && chars[start] == ' ' {
            start += 1;
        }
    }
    pieces.push((start, chars[start..].iter().collect()));
    pieces.retain(|(_, p)| !p.is_empty());
    pieces
}

/// Elements whose content is not text.
const HIDDEN: &[&str] = &["script", "style", "noscript", "template", "head"];
/// Elements that end a paragraph.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "blockquote",
    "pre",
    "title",
    "hr",
    "dd",
    "dt",
];

/// The readable text of an HTML document: markup removed, entities decoded, block elements as
/// paragraph breaks, the content of scripts, styles and the head left out (except its title).
pub fn html_text(html: &str) -> String {
    let mut out = String::new();
    let mut title = String::new();
    let mut rest = html;
    let mut hidden: Option<String> = None;
    let mut in_title = false;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        if in_title {
            title.push_str(text);
        } else if hidden.is_none() {
            out.push_str(text);
        }
        rest = &rest[lt..];
        if let Some(comment) = rest.strip_prefix("<!--") {
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
            continue;
        }
        let Some(gt) = rest.find('>') else {
            rest = "";
            break;
        };
        let tag = rest[1..gt].trim();
        rest = &rest[gt + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        if name == "title" {
            in_title = !closing;
            continue;
        }
        match &hidden {
            Some(h) if closing && *h == name => hidden = None,
            Some(_) => {}
            None if !closing && HIDDEN.contains(&name.as_str()) && !tag.ends_with('/') => {
                hidden = Some(name.clone());
            }
            None if BLOCKS.contains(&name.as_str()) => out.push_str("\n\n"),
            None => out.push(' '),
        }
    }
    if hidden.is_none() {
        out.push_str(rest);
    }
    let body = decode_entities(&out);
    let title = decode_entities(title.trim());
    if title.is_empty() {
        body
    } else {
        format!("{title}\n\n{body}")
    }
}

/// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&#39;`, `&nbsp;` and numeric references
/// decoded; anything else left as written.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest[..rest.len().min(12)].find(';');
        let decoded = end.and_then(|end| {
            let entity = &rest[1..end];
            let c = match entity {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some(' '),
                _ => entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, end))
        });
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A minimal PDF with one page per entry of `pages`, each a line of Helvetica text (for
/// tests: the same bytes a PDF writer would give for such a page). Text may not hold `(`, `)`
/// or `\\`.
#[cfg(any(test, feature = "test-support"))]
pub fn sample_pdf(pages: &[&str]) -> Vec<u8> {
    let n = pages.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_string(),
    ];
    for (i, text) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
             /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        let stream = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
        objects.push(format!(
            "<< /Length {} >>\nstream\n{stream}\nendstream",
            stream.len()
        ));
    }
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = pdf.len();
    let mut table = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
    for o in offsets {
        table.push_str(&format!("{o:010} 00000 n \n"));
    }
    table.push_str(&format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    ));
    pdf.extend_from_slice(table.as_bytes());
    pdf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pdf_is_read_page_by_page() {
        let pdf = sample_pdf(&["Harbour notice one.", "The drawbridge stays up."]);
        let kind = MediaType::sniff("notice", &pdf).unwrap();
        assert_eq!(kind, MediaType::Pdf);
        let text = pages(kind, &pdf).unwrap();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text[0].contains("Harbour notice one."), "{text:?}");
        assert!(text[1].contains("drawbridge stays up"), "{text:?}");
        let found = passages(&text);
        assert_eq!(found[1].page, 2);
        assert!(pages(kind, b"%PDF-1.4 not really").is_err());
    }

    #[test]
    fn html_loses_markup_scripts_and_styles_but_keeps_paragraphs_and_the_title() {
        let html = "<!DOCTYPE html><html><head><title>Port &amp; Harbour</title>\
            <style>p { color: red }</style><script>var secret = 'drawbridge';</script></head>\
            <body><!-- a comment --><h1>Notice</h1><p>The swing&nbsp;bridge is <b>closed</b>\
            &#8212; until Friday.</p><p>Ferries run &lt;hourly&gt;.</p></body></html>";
        let text = html_text(html);
        assert!(!text.contains("secret") && !text.contains("color") && !text.contains("comment"));
        let paragraphs: Vec<String> = paragraphs(&text).into_iter().map(|(_, p)| p).collect();
        assert_eq!(
            paragraphs,
            [
                "Port & Harbour",
                "Notice",
                "The swing bridge is closed \u{2014} until Friday.",
                "Ferries run <hourly>."
            ]
        );
    }

    #[test]
    fn kinds_are_told_by_content_then_by_name() {
        assert_eq!(MediaType::sniff("x.txt", b"%PDF-1.4"), Some(MediaType::Pdf));
        assert_eq!(
            MediaType::sniff("x", b"  <!doctype html><p>hi"),
            Some(MediaType::Html)
        );
        assert_eq!(
            MediaType::sniff("https://h/a.htm?x=1", b"<p>hi"),
            Some(MediaType::Html)
        );
        assert_eq!(MediaType::sniff("notes.md", b"# hi"), Some(MediaType::Text));
        assert_eq!(MediaType::sniff("blob.bin", &[0xff, 0xfe, 0x00]), None);
        assert_eq!(
            MediaType::from_mime("text/html; charset=utf-8"),
            Some(MediaType::Html)
        );
        assert_eq!(MediaType::from_mime("image/png"), None);
    }

    #[test]
    fn passages_keep_their_page_and_offset_and_stay_near_their_size() {
        let long = "A sentence of eight words goes right here. ".repeat(60);
        let pages = vec![
            format!("First paragraph.\n\n  Second paragraph.\n\n{long}"),
            "Page two says drawbridge.".to_string(),
        ];
        let found = passages(&pages);
        assert_eq!(found[0].page, 1);
        assert_eq!(found[0].offset, 0);
        assert!(
            found[0]
                .text
                .starts_with("First paragraph. Second paragraph.")
        );
        assert!(
            found
                .iter()
                .all(|p| p.text.chars().count() <= 2 * PASSAGE_CHARS)
        );
        let last = found.last().unwrap();
        assert_eq!((last.page, last.offset), (2, 0));
        assert_eq!(last.text, "Page two says drawbridge.");
        assert_eq!(last.ordinal, found.len() - 1);
        // Every passage's offset points at its own first words.
        let chars: Vec<char> = pages[0].chars().collect();
        for p in found.iter().filter(|p| p.page == 1) {
            let at: String = chars[p.offset..].iter().take(10).collect();
            assert!(p.text.starts_with(at.trim_start()), "{p:?} vs {at:?}");
        }
    }
}
