//! Validating the tool-server registry of AEM.md: transports, descriptors, declared
//! tools and their annotations, and environment references.

use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::memory::one_of;
use super::model::{DeclaredTool, ServerDescriptor, ServerEntry};
use super::native::{native_servers, native_tools};
use super::raw::RawServer;
use super::rules::{effect_words, name_rule};
use super::{sha256_hex, valid_name, valid_tool_name};
use crate::core::effect::{Effect, classify_tool_name, raise_by_annotation};
use std::collections::BTreeMap;

/// `${VAR}` or `${VAR:-default}`, nothing else.
pub(crate) fn is_env_reference(value: &str) -> bool {
    let Some(inner) = value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) else {
        return false;
    };
    let (var, default) = match inner.split_once(":-") {
        Some((v, d)) => (v, Some(d)),
        None => (inner, None),
    };
    let mut chars = var.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && default.is_none_or(|d| !d.contains(['{', '}', '$']))
}

pub(crate) fn check_env(
    env: &BTreeMap<String, String>,
    field: &str,
    doc: &Document,
    sink: &mut Sink,
) -> bool {
    let mut ok = true;
    for (key, value) in env {
        if !is_env_reference(value) {
            ok = false;
            sink.push(
                &doc.path,
                doc.line_at(&field.split('.').chain([key.as_str()]).collect::<Vec<_>>()),
                format!("{field}.{key}"),
                AemError::InlineEnvValue(key.clone()),
                Some("`${VAR}` or `${VAR:-default}`".to_string()),
            );
        }
    }
    ok
}

pub(crate) fn validate_server(
    name: &str,
    raw: &RawServer,
    doc: &Document,
    sink: &mut Sink,
) -> Option<ServerEntry> {
    let line = doc.line_at(&["servers", name]);
    let before = sink.items.len();
    if !valid_name(name) {
        sink.push(
            &doc.path,
            line,
            format!("servers.{name}"),
            AemError::InvalidName {
                what: "server",
                value: name.to_string(),
            },
            Some(name_rule()),
        );
    }
    let descriptor = descriptor_of(name, raw, doc, sink);
    let tools = declared_tools(name, raw, descriptor.as_ref(), doc, sink);
    let descriptor = descriptor?;
    if sink.items.len() > before {
        return None;
    }
    let descriptor_hash = descriptor_hash(&descriptor);
    Some(ServerEntry {
        description: raw.description.trim().to_string(),
        descriptor,
        descriptor_hash,
        tools,
    })
}

/// Reports a malformed field `key` of server `name`.
fn malformed(name: &str, key: &str, what: String, doc: &Document, sink: &mut Sink) {
    sink.push(
        &doc.path,
        doc.line_at(&["servers", name, key])
            .or(doc.line_at(&["servers", name])),
        format!("servers.{name}.{key}"),
        AemError::MalformedServer(what),
        Some("local: command (+ args, env); native: no fields; remote: service".to_string()),
    );
}

/// How server `name` is reached, by its `transport` and the fields that go with it.
fn descriptor_of(
    name: &str,
    raw: &RawServer,
    doc: &Document,
    sink: &mut Sink,
) -> Option<ServerDescriptor> {
    let field = format!("servers.{name}");
    let line = doc.line_at(&["servers", name]);
    let bad = |what: String, key: &str, sink: &mut Sink| malformed(name, key, what, doc, sink);
    match raw.transport.as_deref() {
        None => {
            bad("`transport` is missing".to_string(), "transport", sink);
            None
        }
        Some("local") => Some(local_descriptor(name, raw, doc, sink)),
        Some("native") => {
            for (present, key) in [
                (raw.command.is_some(), "command"),
                (raw.args.is_some(), "args"),
                (raw.env.is_some(), "env"),
                (raw.service.is_some(), "service"),
            ] {
                if present {
                    bad(
                        format!(
                            "`{key}` does not apply to a native server (it is the node /iron/tools/{name})"
                        ),
                        key,
                        sink,
                    );
                }
            }
            if native_tools(name).is_none() {
                let shipped = native_servers();
                sink.push(
                    &doc.path,
                    doc.line_at(&["servers", name, "transport"]).or(line),
                    format!("{field}.transport"),
                    AemError::NotImplemented(format!(
                        "native server `{name}` (Iron ships no node /iron/tools/{name})"
                    )),
                    Some(format!(
                        "a native server Iron ships ({}), or `transport: remote` with the `service` of a node you run",
                        one_of(&shipped)
                    )),
                );
            }
            Some(ServerDescriptor::Native)
        }
        Some("remote") => {
            for (present, key) in [
                (raw.command.is_some(), "command"),
                (raw.args.is_some(), "args"),
                (raw.env.is_some(), "env"),
            ] {
                if present {
                    bad(
                        format!("`{key}` does not apply to a remote server"),
                        key,
                        sink,
                    );
                }
            }
            let service = raw.service.clone().unwrap_or_default();
            if !is_service_name(&service) {
                bad(
                    "a remote server needs `service`, a ROS service name such as `/iron/tools/search`".to_string(),
                    "service",
                    sink,
                );
            }
            Some(ServerDescriptor::Remote { service })
        }
        Some(other) => {
            sink.push(
                &doc.path,
                doc.line_at(&["servers", name, "transport"]).or(line),
                format!("{field}.transport"),
                AemError::UnknownTransport(other.to_string()),
                Some(one_of(&["local", "native", "remote"])),
            );
            None
        }
    }
}

/// A local server's descriptor: its command (required), arguments (no inline secret) and
/// environment (references, checked), each fault said to `sink`.
fn local_descriptor(
    name: &str,
    raw: &RawServer,
    doc: &Document,
    sink: &mut Sink,
) -> ServerDescriptor {
    let field = format!("servers.{name}");
    let bad = |what: String, key: &str, sink: &mut Sink| malformed(name, key, what, doc, sink);
    if raw.service.is_some() {
        bad(
            "`service` is for remote servers".to_string(),
            "service",
            sink,
        );
    }
    let command = raw.command.as_deref().map(str::trim).unwrap_or("");
    if command.is_empty() {
        bad(
            "a local server needs `command`".to_string(),
            "command",
            sink,
        );
    }
    let args = raw.args.clone().unwrap_or_default();
    for a in &args {
        if super::portable_secret(a) {
            bad(
                "an argument looks like an inline secret; pass it through `env` as a reference"
                    .to_string(),
                "args",
                sink,
            );
        }
    }
    let env = raw.env.clone().unwrap_or_default();
    check_env(&env, &format!("{field}.env"), doc, sink);
    ServerDescriptor::Local {
        command: command.to_string(),
        args,
        env,
    }
}

/// Whether `service` is an absolute ROS service name (`/iron/tools/search`): slash-separated
/// tokens of letters, digits and `_`.
fn is_service_name(service: &str) -> bool {
    service.starts_with('/')
        && service.len() > 1
        && service[1..]
            .split('/')
            .all(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The tools server `name` declares, each with the effect its name and annotation give.
fn declared_tools(
    name: &str,
    raw: &RawServer,
    descriptor: Option<&ServerDescriptor>,
    doc: &Document,
    sink: &mut Sink,
) -> BTreeMap<String, DeclaredTool> {
    let field = format!("servers.{name}");
    let line = doc.line_at(&["servers", name]);
    let mut tools = BTreeMap::new();
    if raw.tools.is_empty() {
        malformed(
            name,
            "tools",
            "a server must declare the tools it offers".to_string(),
            doc,
            sink,
        );
    }
    for (i, t) in raw.tools.iter().enumerate() {
        let tname = t.name();
        let tfield = format!("{field}.tools[{i}]");
        let tline = doc.line_of_value(tname).or(line);
        if !valid_tool_name(tname) {
            sink.push(
                &doc.path,
                tline,
                &tfield,
                AemError::InvalidName {
                    what: "tool",
                    value: tname.to_string(),
                },
                Some("letters, digits, `_`, `-` or `.` (no `/`), at most 128".to_string()),
            );
            continue;
        }
        let annotation = match t.annotation() {
            None => None,
            Some(w) => match Effect::from_word(w) {
                Some(e) => Some(e),
                None => {
                    sink.push(
                        &doc.path,
                        doc.line_of_value(w).or(tline),
                        format!("{tfield}.annotation"),
                        AemError::UnknownEffect(w.to_string()),
                        Some(one_of(&effect_words())),
                    );
                    None
                }
            },
        };
        if let (Some(ServerDescriptor::Native), Some(offered)) = (descriptor, native_tools(name))
            && !offered.contains(&tname)
        {
            sink.push(
                &doc.path,
                tline,
                &tfield,
                AemError::NotImplemented(format!("tool `{tname}` of the native server `{name}`")),
                Some(one_of(&offered)),
            );
        }
        let c = classify_tool_name(tname);
        let declared = DeclaredTool {
            derived_effect: c.effect,
            verb: c.verb.map(str::to_string),
            annotation,
            effect: raise_by_annotation(c.effect, annotation),
        };
        if tools.insert(tname.to_string(), declared).is_some() {
            sink.push(
                &doc.path,
                tline,
                &tfield,
                AemError::DuplicateTool(tname.to_string()),
                Some("each tool once".to_string()),
            );
        }
    }
    tools
}

/// SHA-256 (hex) of the descriptor's canonical JSON: compact, object keys sorted at every
/// level, whatever features `serde_json` was built with.
pub fn descriptor_hash(descriptor: &ServerDescriptor) -> String {
    let value = serde_json::to_value(descriptor).unwrap_or(serde_json::Value::Null);
    let mut out = String::new();
    canonical_json(&value, &mut out);
    sha256_hex(out.as_bytes())
}

/// Writes `value` as compact JSON with object keys in byte order.
pub(crate) fn canonical_json(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                canonical_json(&map[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_references() {
        assert!(is_env_reference("${HOME}"));
        assert!(is_env_reference("${ROOT:-.}"));
        assert!(is_env_reference("${A_1:-}"));
        assert!(!is_env_reference("abc"));
        assert!(!is_env_reference("${lower}"));
        assert!(!is_env_reference("x${HOME}"));
        assert!(!is_env_reference("${A:-${B}}"));
    }

    #[test]
    fn descriptor_hash_is_of_sorted_compact_json() {
        let d = ServerDescriptor::Local {
            command: "uvx".into(),
            args: vec!["mcp-server-time".into()],
            env: BTreeMap::new(),
        };
        let mut out = String::new();
        canonical_json(&serde_json::to_value(&d).unwrap(), &mut out);
        assert_eq!(
            out,
            r#"{"args":["mcp-server-time"],"command":"uvx","env":{},"transport":"local"}"#
        );
        assert_eq!(descriptor_hash(&d), sha256_hex(out.as_bytes()));
    }
}
