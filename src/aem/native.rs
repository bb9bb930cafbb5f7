//! The native tool servers Iron ships: each is the node `/iron/tools/<server>`, and the
//! binary describes its tools (description and input schema), so the manifest carries them
//! without a probe and the model and gate 2 read the same schema the bridge answers to. A
//! native server not listed here, or a tool its bridge does not offer, is refused at compile
//! time: nothing would answer the call.

/// One tool of a native server.
#[derive(Debug, Clone, Copy)]
pub struct NativeTool {
    /// Server name (the node is `/iron/tools/<server>`).
    pub server: &'static str,
    /// Tool name.
    pub tool: &'static str,
    /// What it does, for the model.
    pub description: &'static str,
    /// JSON schema of its arguments (JSON text). `"x-iron-path": false` marks an argument
    /// gate 2 must not take for a path.
    pub input_schema: &'static str,
}

/// Every native tool Iron ships.
pub const NATIVE_TOOLS: &[NativeTool] = &[
    NativeTool {
        server: "delivery",
        tool: "send_message",
        description: "Sends text to a destination: the terminal, or a webhook URL the deployment allows.",
        input_schema: r#"{"type": "object", "properties": {
            "dest": {"type": "string", "x-iron-path": false, "description": "`terminal`, a chat handle, or an allowed http(s) URL"},
            "text": {"type": "string", "description": "What to send"},
            "delivery_id": {"type": "string", "x-iron-path": false, "description": "The sender's id for this delivery; a second send with the same id sends nothing"},
            "bulletin": {"type": "object", "x-iron-path": false, "description": "A bulletin recorded with the send"}
        }, "required": ["text"]}"#,
    },
    NativeTool {
        server: "memory",
        tool: "save_document",
        description: "Saves a document to memory so that you and the experts who share the scope can recall its passages later: a file in your workspace (`path`) or a web page or PDF at a URL the deployment allows (`url`). Plain text, HTML and PDF.",
        input_schema: r#"{"type": "object", "properties": {
            "path": {"type": "string", "format": "path", "description": "A file inside your workspace"},
            "url": {"type": "string", "x-iron-path": false, "description": "An http(s) URL (instead of `path`)"},
            "scope": {"type": "string", "x-iron-path": false, "description": "The memory namespace to save it in, under one your memory may write (default: your own)"},
            "title": {"type": "string", "description": "A title for it (default: the path or URL)"},
            "media_type": {"type": "string", "enum": ["text", "html", "pdf"], "x-iron-path": false, "description": "Its kind, when it cannot be told from its content"}
        }, "additionalProperties": false}"#,
    },
    NativeTool {
        server: "sandbox",
        tool: "run_confined",
        description: "Runs a program in your scratch copy of the repository, confined by bubblewrap: it can change nothing outside the scratch (and not its aem/, config/ or .git), has no network unless the workspace allows it, and is stopped at its time limit. Returns how it ended, its exit code and its output. Served by the expert process itself, which alone knows its scratch.",
        input_schema: r#"{"type": "object", "properties": {
            "command": {"type": "string", "x-iron-path": false, "description": "The program, e.g. `cargo` or `sh`"},
            "args": {"type": "array", "items": {"type": "string"}, "x-iron-path": false, "description": "Its arguments"},
            "cwd": {"type": "string", "format": "path", "description": "A directory inside the scratch (default: its root)"},
            "timeout_secs": {"type": "integer", "minimum": 1, "maximum": 600, "x-iron-path": false, "description": "Time limit (default 60)"}
        }, "required": ["command"], "additionalProperties": false}"#,
    },
];

/// The tools the native server `name` offers, if Iron ships it.
pub fn native_tools(name: &str) -> Option<Vec<&'static str>> {
    let tools: Vec<&str> = NATIVE_TOOLS
        .iter()
        .filter(|t| t.server == name)
        .map(|t| t.tool)
        .collect();
    (!tools.is_empty()).then_some(tools)
}

/// The native servers Iron ships, sorted.
pub fn native_servers() -> Vec<&'static str> {
    let mut servers: Vec<&str> = NATIVE_TOOLS.iter().map(|t| t.server).collect();
    servers.sort_unstable();
    servers.dedup();
    servers
}

/// The input schema of native tool `server/tool` (`Value::Null` when Iron ships none).
pub fn native_schema(server: &str, tool: &str) -> serde_json::Value {
    NATIVE_TOOLS
        .iter()
        .find(|t| t.server == server && t.tool == tool)
        .map(|t| serde_json::from_str(t.input_schema).expect("a native tool's schema is JSON"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aem::manifest::native_probe;

    #[test]
    fn every_schema_is_an_object_schema() {
        for t in NATIVE_TOOLS {
            let probe = native_probe(t.server, "h").unwrap();
            let schema = &probe.tools[t.tool].input_schema;
            assert_eq!(schema["type"], "object", "{}/{}", t.server, t.tool);
            assert!(schema["properties"].is_object(), "{}/{}", t.server, t.tool);
        }
        assert_eq!(native_servers(), ["delivery", "memory", "sandbox"]);
        assert!(native_tools("nothing").is_none());
    }
}
