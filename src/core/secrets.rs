//! Secrets cut out of everything that is recorded or shown: known values in every form a
//! program is likely to print them, and well-known key shapes whoever holds them.
//!
//! **Known values.** Each secret the runtime holds (a model key, a server's `${VAR}`, a key
//! in a variable named like one) is looked for as written and in its base64 (standard and
//! URL-safe, with and without padding), hex (both cases) and percent-encoded forms, and
//! replaced by `[redacted: NAME]` (`[redacted: NAME (base64)]` for an encoded form). Values
//! shorter than [`MIN_SECRET_CHARS`] are not secrets: replacing `UTC` or `1` everywhere would
//! mangle ordinary text. A secret inside a larger encoded blob (the base64 of `user:key`) is
//! not found: only the secret's own encodings are.
//!
//! **Shapes.** Whatever the runtime knows, text that has the shape of a key is cut:
//! private-key blocks (`-----BEGIN … PRIVATE KEY-----` to its `END` line) and tokens with
//! a well-known prefix ([`SHAPES`]: `sk-…`, `ghp_…`, `github_pat_…`, `AKIA…`, `xoxb-…`,
//! `glpat-…`), each only at the start of a word and long enough to be one.
//!
//! Every cut is returned as a [`Redaction`] (what was cut and in which form, never the
//! value), so the caller can record that it happened.

use serde::Serialize;
use serde_json::Value;

/// Shortest value treated as a secret.
pub const MIN_SECRET_CHARS: usize = 8;

/// Words that make an environment variable's name a secret's (split at `_`):
/// `OPENAI_API_KEY`, `GITHUB_TOKEN`, `NATS_PASSWORD`, `AWS_SECRET_ACCESS_KEY`.
pub const SECRET_WORDS: &[&str] = &[
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTH",
    "PAT",
];

/// Token shapes cut wherever they appear: a prefix, the characters that may follow it and
/// how many at least, and what to call it.
pub const SHAPES: &[Shape] = &[
    Shape::new("sk-", 20, "an API key (sk-)"),
    Shape::new("ghp_", 30, "a GitHub token"),
    Shape::new("gho_", 30, "a GitHub token"),
    Shape::new("ghu_", 30, "a GitHub token"),
    Shape::new("ghs_", 30, "a GitHub token"),
    Shape::new("ghr_", 30, "a GitHub token"),
    Shape::new("github_pat_", 22, "a GitHub token"),
    Shape::new("AKIA", 16, "an AWS access key"),
    Shape::new("xoxb-", 10, "a Slack token"),
    Shape::new("xoxp-", 10, "a Slack token"),
    Shape::new("xoxa-", 10, "a Slack token"),
    Shape::new("glpat-", 20, "a GitLab token"),
];

/// A token shape (see [`SHAPES`]).
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    prefix: &'static str,
    min_after: usize,
    what: &'static str,
}

impl Shape {
    const fn new(prefix: &'static str, min_after: usize, what: &'static str) -> Self {
        Self {
            prefix,
            min_after,
            what,
        }
    }
}

/// One cut: whose secret (a variable's name, or a shape) and in which form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redaction {
    /// The variable the secret came from, or what the shape is.
    pub secret: String,
    /// `plain`, `base64`, `base64url`, `hex`, `percent`, or `shape`.
    pub form: &'static str,
}

/// One form of one secret.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Form {
    name: String,
    form: &'static str,
    value: String,
}

/// The secrets to cut, in every form, longest first (so a secret holding another is cut
/// whole).
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    forms: Vec<Form>,
}

impl Secrets {
    /// No known values (shapes are still cut).
    pub fn new() -> Self {
        Self::default()
    }

    /// The values of the variables in `vars` whose names say they hold a secret (see
    /// [`SECRET_WORDS`]).
    pub fn from_environment(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut secrets = Secrets::new();
        for (name, value) in vars {
            if is_secret_name(&name) {
                secrets.add(&name, &value);
            }
        }
        secrets
    }

    /// Adds `value`, named `name`, in all its forms; a value shorter than
    /// [`MIN_SECRET_CHARS`] is ignored.
    pub fn add(&mut self, name: &str, value: &str) {
        if value.chars().count() < MIN_SECRET_CHARS {
            return;
        }
        let bytes = value.as_bytes();
        let forms = [
            ("plain", value.to_string()),
            ("base64", base64(bytes, STANDARD, true)),
            ("base64", base64(bytes, STANDARD, false)),
            ("base64url", base64(bytes, URL_SAFE, false)),
            ("hex", hex::encode(bytes)),
            ("hex", hex::encode_upper(bytes)),
            ("percent", percent(value)),
        ];
        for (form, encoded) in forms {
            let known = Form {
                name: name.to_string(),
                form,
                value: encoded,
            };
            if !self.forms.iter().any(|f| f.value == known.value) {
                self.forms.push(known);
            }
        }
        self.forms.sort_by(|a, b| {
            b.value
                .len()
                .cmp(&a.value.len())
                .then_with(|| a.name.cmp(&b.name))
        });
    }

    /// Adds every secret of `other`.
    pub fn extend(&mut self, other: &Secrets) {
        for f in &other.forms {
            if f.form == "plain" {
                self.add(&f.name, &f.value);
            }
        }
    }

    /// Whether any value is known (shapes are cut either way).
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// `text` with every known form and every shape cut, and what was cut.
    pub fn text(&self, text: &str) -> (String, Vec<Redaction>) {
        let mut cuts = Vec::new();
        let mut out = text.to_string();
        for f in &self.forms {
            if out.contains(f.value.as_str()) {
                let label = match f.form {
                    "plain" => format!("[redacted: {}]", f.name),
                    form => format!("[redacted: {} ({form})]", f.name),
                };
                out = out.replace(f.value.as_str(), &label);
                cuts.push(Redaction {
                    secret: f.name.clone(),
                    form: f.form,
                });
            }
        }
        let out = cut_private_keys(&out, &mut cuts);
        let out = cut_shapes(&out, &mut cuts);
        (out, cuts)
    }

    /// Whether `value` may hold something to cut: a cheap check before [`Secrets::value`],
    /// which may still find nothing.
    pub fn may_hold(&self, value: &Value) -> bool {
        let text = |s: &str| {
            self.forms.iter().any(|f| s.contains(f.value.as_str()))
                || s.contains("PRIVATE KEY-----")
                || SHAPES.iter().any(|shape| s.contains(shape.prefix))
        };
        match value {
            Value::String(s) => text(s),
            Value::Array(items) => items.iter().any(|v| self.may_hold(v)),
            Value::Object(map) => map.iter().any(|(k, v)| text(k) || self.may_hold(v)),
            _ => false,
        }
    }

    /// `value` with every string in it (object keys included) cut as [`Secrets::text`]
    /// does, and what was cut.
    pub fn value(&self, value: Value) -> (Value, Vec<Redaction>) {
        let mut cuts = Vec::new();
        let value = self.walk(value, &mut cuts);
        (value, cuts)
    }

    fn walk(&self, value: Value, cuts: &mut Vec<Redaction>) -> Value {
        let mut text = |s: String| {
            let (out, mut found) = self.text(&s);
            cuts.append(&mut found);
            out
        };
        match value {
            Value::String(s) => Value::String(text(s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.walk(v, cuts)).collect())
            }
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    let (k, mut found) = self.text(&k);
                    cuts.append(&mut found);
                    out.insert(k, self.walk(v, cuts));
                }
                Value::Object(out)
            }
            other => other,
        }
    }
}

/// Whether an environment variable named `name` holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    name.to_ascii_uppercase()
        .split(['_', '-'])
        .any(|w| SECRET_WORDS.contains(&w))
}

/// Cuts `-----BEGIN … PRIVATE KEY-----` blocks (to their `END` line, or to the end).
fn cut_private_keys(text: &str, cuts: &mut Vec<Redaction>) -> String {
    const BEGIN: &str = "-----BEGIN ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(BEGIN) {
        let header_end = rest[at + BEGIN.len()..]
            .find("-----")
            .map(|e| at + BEGIN.len() + e);
        let is_private = header_end.is_some_and(|e| rest[at..e].ends_with("PRIVATE KEY"));
        let Some(header_end) = header_end.filter(|_| is_private) else {
            out.push_str(&rest[..at + BEGIN.len()]);
            rest = &rest[at + BEGIN.len()..];
            continue;
        };
        out.push_str(&rest[..at]);
        out.push_str("[redacted: a private key]");
        cuts.push(Redaction {
            secret: "a private key".into(),
            form: "shape",
        });
        let after = &rest[header_end + 5..];
        rest = match after.find("-----END ") {
            Some(end) => {
                let tail = &after[end + 9..];
                match tail.find("-----") {
                    Some(close) => &tail[close + 5..],
                    None => "",
                }
            }
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// Cuts tokens of the [`SHAPES`].
fn cut_shapes(text: &str, cuts: &mut Vec<Redaction>) -> String {
    let token_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < text.len() {
        let at_word_start = i == 0 || !token_char(text[..i].chars().next_back().unwrap_or(' '));
        let found = at_word_start
            .then(|| {
                SHAPES.iter().find_map(|s| {
                    let after = text[i..].strip_prefix(s.prefix)?;
                    let len = after.find(|c: char| !token_char(c)).unwrap_or(after.len());
                    (len >= s.min_after).then_some((s, s.prefix.len() + len))
                })
            })
            .flatten();
        match found {
            Some((shape, len)) => {
                out.push_str(&format!("[redacted: {}]", shape.what));
                cuts.push(Redaction {
                    secret: shape.what.to_string(),
                    form: "shape",
                });
                i += len;
            }
            None => {
                let ch_len = utf8_len(bytes[i]);
                out.push_str(&text[i..i + ch_len]);
                i += ch_len;
            }
        }
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        b if b < 0x80 => 1,
        b if b >= 0xF0 => 4,
        b if b >= 0xE0 => 3,
        _ => 2,
    }
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
        if pad {
            for _ in chunk.len()..3 {
                out.push('=');
            }
        }
    }
    out
}

/// `value` with every byte outside the unreserved set of RFC 3986 percent-encoded.
fn percent(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> Secrets {
        let mut s = Secrets::new();
        s.add("OPENAI_API_KEY", "k3y+/value=with:odd?bytes");
        s.add("TZ", "UTC");
        s
    }

    #[test]
    fn base64_matches_the_standard_encoding() {
        assert_eq!(base64(b"", STANDARD, true), "");
        assert_eq!(base64(b"f", STANDARD, true), "Zg==");
        assert_eq!(base64(b"fo", STANDARD, true), "Zm8=");
        assert_eq!(base64(b"foo", STANDARD, true), "Zm9v");
        assert_eq!(base64(b"foob", STANDARD, false), "Zm9vYg");
        assert_eq!(base64(&[0xfb, 0xff], URL_SAFE, false), "-_8");
    }

    #[test]
    fn a_known_secret_is_cut_in_every_form() {
        let s = key();
        let secret = "k3y+/value=with:odd?bytes";
        for (shown, form) in [
            (secret.to_string(), "plain"),
            (base64(secret.as_bytes(), STANDARD, true), "base64"),
            (base64(secret.as_bytes(), URL_SAFE, false), "base64url"),
            (hex::encode(secret), "hex"),
            (hex::encode_upper(secret), "hex"),
            (percent(secret), "percent"),
        ] {
            let (out, cuts) = s.text(&format!("got {shown} back"));
            assert!(!out.contains(&shown), "{form}: {out}");
            assert!(out.contains("[redacted: OPENAI_API_KEY"), "{form}: {out}");
            // A URL-safe encoding with no `-` or `_` in it is the standard one unpadded.
            let same = cuts[0].form == form || (form == "base64url" && cuts[0].form == "base64");
            assert!(same, "{form}: {cuts:?}");
        }
        let (out, cuts) = s.text("in UTC");
        assert_eq!((out.as_str(), cuts.len()), ("in UTC", 0));
    }

    #[test]
    fn key_shapes_are_cut_and_ordinary_words_are_not() {
        let s = Secrets::new();
        let text = "use sk-proj-abcdefghijklmnopqrstuvwx and ghp_0123456789abcdefghijklmnopqrstuvwxyz \
                    and AKIAIOSFODNN7EXAMPLE, not task-force-report or desk-lamp or AKIA";
        let (out, cuts) = s.text(text);
        assert_eq!(cuts.len(), 3, "{out}");
        assert!(
            out.contains("not task-force-report or desk-lamp or AKIA"),
            "{out}"
        );
        assert!(!out.contains("sk-proj") && !out.contains("ghp_0") && !out.contains("AKIAIOS"));
        let pem = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH \
                   PRIVATE KEY-----\nafter -----BEGIN CERTIFICATE----- stays";
        let (out, cuts) = s.text(pem);
        assert_eq!(
            out,
            "before\n[redacted: a private key]\nafter -----BEGIN CERTIFICATE----- stays"
        );
        assert_eq!(cuts.len(), 1);
    }

    #[test]
    fn values_and_keys_of_json_are_cut_and_counted() {
        let (out, cuts) = key().value(json!({
            "k3y+/value=with:odd?bytes": ["x", {"deep": "a k3y+/value=with:odd?bytes"}],
            "n": 1
        }));
        let text = out.to_string();
        assert!(!text.contains("k3y+"), "{text}");
        assert_eq!(cuts.len(), 2);
    }

    #[test]
    fn secret_names_are_read_by_word() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "NATS_PASSWORD",
            "aws_secret_access_key",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "KEYBOARD",
            "PATH",
            "HOME",
            "TZ",
            "XAUTHORITY",
            "MONKEY_BUSINESS",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
