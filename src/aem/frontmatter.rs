//! Splitting a markdown file into YAML front matter and prose, and parsing the YAML with
//! errors that point at the line in the original file.

use super::error::{AemError, Diagnostic};
use super::positions::Positions;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// A markdown file split at its `---` fences.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    /// Where it was read from.
    pub(crate) path: PathBuf,
    /// The YAML between the fences.
    pub(crate) yaml: String,
    /// 1-based line, in the file, of the first YAML line.
    pub(crate) yaml_first_line: usize,
    /// The prose after the closing fence, trimmed.
    pub(crate) body: String,
    /// 1-based line, in the file, of the first body line.
    pub(crate) body_first_line: usize,
    /// SHA-256 of the file's bytes, hex.
    pub(crate) sha256: String,
    /// The whole text, for scanners that report file lines.
    pub(crate) text: String,
    /// Where each key and scalar of the YAML is.
    positions: Positions,
}

fn is_fence(line: &str) -> bool {
    line.trim_end() == "---"
}

impl Document {
    /// Splits `text`; the file must open with a `---` line and close the block with another.
    pub(crate) fn split(path: &Path, text: &str) -> Result<Document, Box<Diagnostic>> {
        let sha256 = super::sha256_hex(text.as_bytes());
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let lines: Vec<&str> = text.lines().collect();
        let fail = |line: usize, msg: &str, expected: &str| {
            Box::new(Diagnostic {
                file: path.to_path_buf(),
                line: Some(line),
                field: String::new(),
                error: AemError::FrontMatter(msg.to_string()),
                expected: Some(expected.to_string()),
            })
        };
        if !lines.first().is_some_and(|l| is_fence(l)) {
            return Err(fail(
                1,
                "front matter is missing",
                "the file to start with a line `---`, then YAML, then a line `---`",
            ));
        }
        let Some(close) = lines.iter().skip(1).position(|l| is_fence(l)) else {
            return Err(fail(
                1,
                "front matter is not closed",
                "a second line `---` after the YAML",
            ));
        };
        let close = close + 1;
        let yaml = lines[1..close].join("\n");
        let body = lines[close + 1..].join("\n").trim().to_string();
        Ok(Document {
            path: path.to_path_buf(),
            positions: Positions::index(&yaml, 2),
            yaml,
            yaml_first_line: 2,
            body,
            body_first_line: close + 2,
            sha256,
            text: text.to_string(),
        })
    }

    /// Parses the YAML into `T`, mapping a parser error to the file's line.
    pub(crate) fn parse<T: DeserializeOwned>(&self) -> Result<T, Box<Diagnostic>> {
        let yaml = if self.yaml.trim().is_empty() {
            "{}"
        } else {
            self.yaml.as_str()
        };
        serde_norway::from_str(yaml).map_err(|e| {
            let line = e
                .location()
                .map(|l| l.line() + self.yaml_first_line - 1)
                .or(Some(1));
            let mut msg = e.to_string();
            if let Some(at) = msg.rfind(" at line ") {
                msg.truncate(at);
            }
            if msg.contains("untagged enum RawTool") {
                msg = format!(
                    "{}: a tool is a name, or `{{name, annotation}}`",
                    msg.split(": data did not match").next().unwrap_or("tools")
                );
            }
            Box::new(Diagnostic {
                file: self.path.clone(),
                line,
                field: String::new(),
                error: AemError::Yaml(msg),
                expected: None,
            })
        })
    }

    /// The file line of the key at `path` (`["servers", "fs", "args"]`; sequence items by
    /// index).
    pub(crate) fn line_at(&self, path: &[&str]) -> Option<usize> {
        self.positions.key_at(path)
    }

    /// The file line of the key `key` inside a mapping `section`, else of `section`.
    pub(crate) fn line_of_key_in(&self, section: &str, key: &str) -> Option<usize> {
        self.positions.key_in(section, key)
    }

    /// The file line of the first scalar (key or value) that is exactly `value`.
    pub(crate) fn line_of_value(&self, value: &str) -> Option<usize> {
        self.positions.value(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_locate() {
        let text = "---\nname: x\nmemory:\n  - kind: episodic\n---\n\nHello.\n";
        let d = Document::split(Path::new("f.md"), text).unwrap();
        assert_eq!(d.body, "Hello.");
        assert_eq!(d.line_at(&["memory", "0", "kind"]), Some(4));
        assert_eq!(d.line_of_value("episodic"), Some(4));
        assert_eq!(d.line_of_value("episod"), None);
    }

    #[test]
    fn missing_fence_is_reported_on_line_one() {
        let e = Document::split(Path::new("f.md"), "name: x\n").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.to_string().contains("front matter is missing"));
    }
}
