//! The rules every declaration file shares: how names are written, how a `server/tool`
//! reference resolves against a mesh's servers, and the words for effects and clearances.
//! The mesh, its servers, channels, skills and triggers all use them.

use std::collections::{BTreeMap, BTreeSet};

use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::model::ServerEntry;
use super::{valid_name, valid_tool_name};
use crate::core::effect::{Clearance, Effect};

/// A reference to one declared tool, `server/tool`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ToolRef {
    pub(crate) server: String,
    pub(crate) tool: String,
}

impl ToolRef {
    pub(crate) fn key(&self) -> String {
        format!("{}/{}", self.server, self.tool)
    }
}

/// Resolves `server/tool` against a registry. A reference to a server in `broken` (whose
/// own errors are already reported) is dropped without a second error.
pub(crate) fn resolve_tool_ref(
    servers: &BTreeMap<String, ServerEntry>,
    broken: &BTreeSet<String>,
    text: &str,
    doc: &Document,
    field: &str,
    sink: &mut Sink,
) -> Option<ToolRef> {
    let line = doc.line_of_value(text);
    let Some((server, tool)) = text
        .split_once('/')
        .filter(|(s, t)| valid_name(s) && valid_tool_name(t))
    else {
        sink.push(
            &doc.path,
            line,
            field,
            AemError::MalformedToolRef(text.to_string()),
            Some("`server/tool`, e.g. `fs/read_text_file`".to_string()),
        );
        return None;
    };
    if broken.contains(server) {
        return None;
    }
    let Some(entry) = servers.get(server) else {
        let known: Vec<&str> = servers.keys().map(String::as_str).collect();
        sink.push(
            &doc.path,
            line,
            field,
            AemError::UnknownServer(server.to_string()),
            Some(format!(
                "a server registered in AEM.md ({})",
                known.join(", ")
            )),
        );
        return None;
    };
    if !entry.tools.contains_key(tool) {
        let known: Vec<&str> = entry.tools.keys().map(String::as_str).collect();
        sink.push(
            &doc.path,
            line,
            field,
            AemError::UnknownTool {
                server: server.to_string(),
                tool: tool.to_string(),
            },
            Some(format!(
                "one of the tools it declares: {}",
                known.join(", ")
            )),
        );
        return None;
    }
    Some(ToolRef {
        server: server.to_string(),
        tool: tool.to_string(),
    })
}

pub(crate) fn clearance_words() -> Vec<&'static str> {
    Clearance::ALL.iter().map(|c| c.as_str()).collect()
}

pub(crate) fn effect_words() -> Vec<&'static str> {
    Effect::ALL.iter().map(|e| e.as_str()).collect()
}

pub(crate) fn name_rule() -> String {
    "a lower-case name: a letter, then letters, digits, `_` or `-` (at most 64)".to_string()
}
