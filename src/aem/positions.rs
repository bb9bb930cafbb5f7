//! Where each key and scalar of a front matter is, as the YAML parser saw it (`marked-yaml`),
//! so that an error points at the line of the field it is about: a key is found by its path
//! (`servers.fs.args`), not by searching the text for `args:`, which finds the first of many.

use marked_yaml::Node;

/// One key of a mapping: its path from the top (sequence items by index), and its line.
#[derive(Debug, Clone)]
struct Key {
    path: Vec<String>,
    line: usize,
}

/// The keys and scalars of one YAML text, in document order, with file lines.
#[derive(Debug, Clone, Default)]
pub(crate) struct Positions {
    keys: Vec<Key>,
    /// Every scalar, keys included, with its line.
    scalars: Vec<(String, usize)>,
}

impl Positions {
    /// Indexes `yaml`, whose first line is line `first_line` of the file. YAML the position
    /// parser does not take (anchors, say) gives no positions: errors then carry no line.
    pub(crate) fn index(yaml: &str, first_line: usize) -> Positions {
        let mut out = Positions::default();
        if let Ok(node) = marked_yaml::parse_yaml(0, yaml) {
            out.walk(&node, &mut Vec::new(), first_line - 1);
        }
        out.keys.sort_by_key(|k| k.line);
        out.scalars.sort_by_key(|(_, line)| *line);
        out
    }

    fn walk(&mut self, node: &Node, path: &mut Vec<String>, offset: usize) {
        let line = |span: &marked_yaml::Span| span.start().map(|m| m.line() + offset);
        match node {
            Node::Scalar(s) => {
                if let Some(l) = line(s.span()) {
                    self.scalars.push((s.as_str().to_string(), l));
                }
            }
            Node::Mapping(map) => {
                for (key, value) in map.iter() {
                    path.push(key.as_str().to_string());
                    if let Some(l) = line(key.span()) {
                        self.keys.push(Key {
                            path: path.clone(),
                            line: l,
                        });
                        self.scalars.push((key.as_str().to_string(), l));
                    }
                    self.walk(value, path, offset);
                    path.pop();
                }
            }
            Node::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(i.to_string());
                    self.walk(item, path, offset);
                    path.pop();
                }
            }
        }
    }

    /// The line of the key at `path` (e.g. `["servers", "fs", "args"]`; items of a sequence by
    /// index, `["memory", "0", "kind"]`).
    pub(crate) fn key_at(&self, path: &[&str]) -> Option<usize> {
        self.keys
            .iter()
            .find(|k| k.path.iter().map(String::as_str).eq(path.iter().copied()))
            .map(|k| k.line)
    }

    /// The line of the first key named `key`, at any depth.
    pub(crate) fn key(&self, key: &str) -> Option<usize> {
        self.keys
            .iter()
            .find(|k| k.path.last().is_some_and(|last| last == key))
            .map(|k| k.line)
    }

    /// The line of the first key named `key` inside a mapping named `section` (at any depth),
    /// else the line of `section` itself.
    pub(crate) fn key_in(&self, section: &str, key: &str) -> Option<usize> {
        self.keys
            .iter()
            .find(|k| {
                k.path.last().is_some_and(|last| last == key)
                    && k.path[..k.path.len() - 1].iter().any(|p| p == section)
            })
            .map(|k| k.line)
            .or_else(|| self.key(section))
    }

    /// The line of the first scalar (key or value) that is exactly `value`.
    pub(crate) fn value(&self, value: &str) -> Option<usize> {
        if value.is_empty() {
            return None;
        }
        self.scalars
            .iter()
            .find(|(s, _)| s == value)
            .map(|(_, line)| *line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "name: m\nservers:\n  tools:\n    args: [a]\n  fs:\n    args: [\"x\", workspace/m]\n    tools: [read_text_file]\ntools: [fs/read_text_file]\nmemory:\n  - kind: episodic\n  - kind: semantic\n";

    #[test]
    fn keys_are_found_by_path_not_by_the_first_match_in_the_text() {
        let p = Positions::index(YAML, 2);
        assert_eq!(p.key_at(&["servers", "fs", "args"]), Some(7));
        assert_eq!(p.key_at(&["servers", "tools"]), Some(4));
        assert_eq!(
            p.key_at(&["tools"]),
            Some(9),
            "the top-level key, not a server's"
        );
        assert_eq!(p.key_at(&["memory", "1", "kind"]), Some(12));
        assert_eq!(p.key("kind"), Some(11));
        assert_eq!(p.key_in("fs", "args"), Some(7));
        assert_eq!(p.key_in("fs", "nope"), Some(6), "falls back to the section");
        assert_eq!(p.value("workspace/m"), Some(7));
        assert_eq!(p.value("fs/read_text_file"), Some(9));
        assert_eq!(p.value("workspace"), None, "whole scalars only");
    }

    #[test]
    fn yaml_it_cannot_read_has_no_positions() {
        let p = Positions::index("a: &x 1\nb: *x\n", 2);
        assert_eq!(p.key("a"), None);
    }
}
