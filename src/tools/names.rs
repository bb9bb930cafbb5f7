//! Tool names as a model sees them: `^[a-zA-Z0-9_-]{1,64}$`, namespaced `server__tool`,
//! and mapped back to `(server, tool)` on call.
//!
//! A name that is already valid and unique is used as is. A name that had to be cleaned
//! (a `.` or another character outside the set), was too long, or collides with another
//! gets a suffix `_` + 8 hex digits of SHA-256 of `server/tool`: it depends only on the
//! tool itself, so it is the same on every build whatever else the expert holds.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Longest name a model accepts.
pub const MAX_NAME_LEN: usize = 64;
const SUFFIX_HEX: usize = 8;

/// A tool as the catalog names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolRef {
    /// Server name.
    pub server: String,
    /// Tool name as the server spells it.
    pub tool: String,
}

impl ToolRef {
    /// A reference from its parts.
    pub fn new(server: impl Into<String>, tool: impl Into<String>) -> Self {
        ToolRef {
            server: server.into(),
            tool: tool.into(),
        }
    }

    /// `server/tool`, the catalog's key.
    pub fn key(&self) -> String {
        format!("{}/{}", self.server, self.tool)
    }
}

/// Whether `name` is acceptable to a model.
pub fn valid_model_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The two-way map between exposed names and tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolNames {
    by_name: BTreeMap<String, ToolRef>,
    by_tool: BTreeMap<ToolRef, String>,
}

fn hash_suffix(tool: &ToolRef, hex_len: usize) -> String {
    let digest = hex::encode(Sha256::digest(tool.key().as_bytes()));
    format!("_{}", &digest[..hex_len])
}

fn cleaned(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn with_suffix(base: &str, suffix: &str) -> String {
    let keep = MAX_NAME_LEN - suffix.len();
    let mut cut = base.len().min(keep);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &base[..cut])
}

impl ToolNames {
    /// Builds the names for a set of tools (order does not matter).
    pub fn build<I: IntoIterator<Item = ToolRef>>(tools: I) -> ToolNames {
        let tools: BTreeSet<ToolRef> = tools.into_iter().collect();
        let raw: BTreeMap<&ToolRef, String> = tools
            .iter()
            .map(|t| (t, format!("{}__{}", t.server, t.tool)))
            .collect();
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for r in raw.values() {
            *counts.entry(cleaned(r)).or_default() += 1;
        }
        let mut hex_len = SUFFIX_HEX;
        loop {
            let mut names = ToolNames::default();
            for (tool, r) in &raw {
                let clean = cleaned(r);
                let plain = *r == clean && clean.len() <= MAX_NAME_LEN && counts[&clean] == 1;
                let name = if plain {
                    clean
                } else {
                    with_suffix(&clean, &hash_suffix(tool, hex_len))
                };
                names.by_name.insert(name.clone(), (*tool).clone());
                names.by_tool.insert((*tool).clone(), name);
            }
            // Two different tools with the same hash prefix (or a plain name equal to a
            // suffixed one): lengthen the suffix and try again.
            if names.by_name.len() == tools.len() || hex_len >= 32 {
                return names;
            }
            hex_len += 4;
        }
    }

    /// The tool an exposed name stands for.
    pub fn resolve(&self, name: &str) -> Option<&ToolRef> {
        self.by_name.get(name)
    }

    /// The exposed name of a tool.
    pub fn exposed(&self, tool: &ToolRef) -> Option<&str> {
        self.by_tool.get(tool).map(String::as_str)
    }

    /// Every `(exposed name, tool)`, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ToolRef)> {
        self.by_name.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}
