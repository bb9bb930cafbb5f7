//! Paste-in server configuration: the `mcpServers` JSON of Claude Desktop, Cursor and
//! Claude Code, and VS Code's `servers` (top level, or under `mcp` in settings), turned
//! into `local` server entries for the `servers:` block of an AEM.md.
//!
//! Rules:
//! * only stdio servers are imported; HTTP/SSE entries (`url`, `type: http|sse`) and
//!   disabled ones are listed as skipped, with the reason;
//! * unknown keys are ignored; comments and trailing commas (VS Code's JSONC) are allowed;
//! * an `env` value that is exactly a reference (`${VAR}`, `${VAR:-default}`, VS Code's
//!   `${env:VAR}` and `${input:id}`) stays a reference; an inline value — a secret, as
//!   often as not — is **never** written: it becomes `${KEY}` (its own variable name) and a
//!   note says to export it;
//! * an argument that looks like a secret is replaced by a reference the same way
//!   (`--token=…` keeps its flag);
//! * names become valid server names (lower case, `[a-z][a-z0-9_-]*`), and a note records
//!   the rename.
//!
//! The AEM format wants the tool list too: [`discover_tools`] starts an imported server
//! once and lists its tools; otherwise the rendered entry says where to fill them in.

use super::client::{LaunchSpec, McpClient};
use super::env::{EnvMap, as_reference};
use super::error::ToolError;
use crate::aem::ServerDescriptor;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;
use thiserror::Error;

/// One imported server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedServer {
    /// Server name for AEM.md.
    pub name: String,
    /// Its key in the pasted file.
    pub source_name: String,
    /// Program.
    pub command: String,
    /// Arguments (references kept for the process starter).
    pub args: Vec<String>,
    /// Environment: references only.
    pub env: BTreeMap<String, String>,
    /// Tools, when known (see [`discover_tools`]).
    pub tools: Vec<String>,
    /// What a person should know or do (renames, secrets to export, ignored fields).
    pub notes: Vec<String>,
}

impl ImportedServer {
    /// The server as an AEM descriptor.
    pub fn descriptor(&self) -> ServerDescriptor {
        ServerDescriptor::Local {
            command: self.command.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
        }
    }
}

/// The result of an import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    /// The servers imported, in the order of their names.
    pub servers: Vec<ImportedServer>,
    /// `(name, reason)` of entries not imported.
    pub skipped: Vec<(String, Skipped)>,
}

/// The pasted text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ImportError {
    /// Not JSON (after removing comments and trailing commas).
    #[error("not valid JSON: {0}")]
    Json(String),
    /// JSON, but no `mcpServers`, `servers` or `mcp.servers` object.
    #[error(
        "no `mcpServers` or `servers` object found (expected the Claude Desktop / Cursor / Claude Code `mcpServers` shape or VS Code's `servers`)"
    )]
    NoServers,
}

/// Reads a pasted configuration.
pub fn import(json_text: &str) -> Result<Imported, ImportError> {
    // Comments and trailing commas become spaces, so serde_json's line:column still point
    // into the pasted text.
    let mut text = json_text.to_string();
    json_strip_comments::strip(&mut text).map_err(|e| ImportError::Json(e.to_string()))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| ImportError::Json(e.to_string()))?;
    let servers = value
        .get("mcpServers")
        .or_else(|| value.get("servers"))
        .or_else(|| value.get("mcp").and_then(|m| m.get("servers")))
        .and_then(Value::as_object)
        .ok_or(ImportError::NoServers)?;
    let mut out = Imported::default();
    let mut taken = BTreeSet::new();
    for (source_name, entry) in servers {
        match import_one(source_name, entry, &mut taken) {
            Ok(s) => out.servers.push(s),
            Err(reason) => out.skipped.push((source_name.clone(), reason)),
        }
    }
    out.servers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Why a pasted server entry was not imported.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Skipped {
    /// The entry is not a JSON object.
    #[error("the entry is not an object")]
    NotAnObject,
    /// An HTTP/SSE server (or another non-stdio type).
    #[error(
        "a `{0}` server reached by URL is not a local (stdio) server; reach it through a remote bridge instead"
    )]
    NotLocal(String),
    /// Disabled in the pasted configuration.
    #[error("disabled in the pasted configuration")]
    Disabled,
    /// No command to run.
    #[error("no `command`")]
    NoCommand,
}

fn import_one(
    source_name: &str,
    entry: &Value,
    taken: &mut BTreeSet<String>,
) -> Result<ImportedServer, Skipped> {
    let obj = entry.as_object().ok_or(Skipped::NotAnObject)?;
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("stdio");
    if obj.contains_key("url") || !matches!(kind, "stdio" | "local") {
        return Err(Skipped::NotLocal(kind.to_string()));
    }
    if obj.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Err(Skipped::Disabled);
    }
    let command = obj
        .get("command")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .ok_or(Skipped::NoCommand)?
        .to_string();
    let mut notes = Vec::new();
    let name = server_name(source_name, taken);
    if name != source_name {
        notes.push(format!("renamed from `{source_name}` (server names are lower case: a letter, then letters, digits, `_` or `-`)"));
    }
    let mut args = Vec::new();
    for (i, a) in obj
        .get("args")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let text = match a {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        args.push(import_arg(&name, i, &text, &mut notes));
    }
    let mut env = BTreeMap::new();
    for (key, value) in obj
        .get("env")
        .and_then(Value::as_object)
        .unwrap_or(&Map::new())
    {
        let text = value
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| value.to_string());
        env.insert(key.clone(), import_env(key, &text, &mut notes));
    }
    if obj.contains_key("envFile") {
        notes.push(
            "`envFile` is not read; declare each variable it holds in `env` as `${VAR}`".into(),
        );
    }
    if obj.contains_key("cwd") {
        notes.push(
            "`cwd` is not kept: local servers start in the expert's working directory".into(),
        );
    }
    Ok(ImportedServer {
        name,
        source_name: source_name.to_string(),
        command,
        args,
        env,
        tools: Vec::new(),
        notes,
    })
}

/// A valid, unused server name for `source`.
fn server_name(source: &str, taken: &mut BTreeSet<String>) -> String {
    let mut base: String = source
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !base.starts_with(|c: char| c.is_ascii_lowercase()) {
        base = format!("server-{base}");
    }
    base.truncate(60);
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// `NAME` for a variable: upper case, other characters `_`.
fn var_name(raw: &str) -> String {
    let mut v: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if !v.starts_with(|c: char| c.is_ascii_uppercase() || c == '_') {
        v.insert(0, '_');
    }
    v
}

/// VS Code's `${env:VAR}`, `${input:id}`, `${workspaceFolder}` → plain references.
fn normalise_references(text: &str, notes: &mut Vec<String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let replaced = if let Some(v) = inner.strip_prefix("env:") {
            format!("${{{}}}", var_name(v))
        } else if let Some(id) = inner.strip_prefix("input:") {
            let v = var_name(id);
            notes.push(format!(
                "VS Code prompted for input `{id}`; export {v} instead"
            ));
            format!("${{{v}}}")
        } else if inner == "workspaceFolder" {
            notes.push("`${workspaceFolder}` became `${WORKSPACE_FOLDER:-.}` (the expert's working directory unless set)".into());
            "${WORKSPACE_FOLDER:-.}".to_string()
        } else {
            let (var, default) = match inner.split_once(":-") {
                Some((v, d)) => (v, Some(d)),
                None => (inner, None),
            };
            let v = var_name(var);
            if v != var {
                notes.push(format!("reference `${{{var}}}` now reads `{v}`"));
            }
            match default {
                Some(d) if crate::aem::portable_secret(d) => {
                    notes.push(format!("the default of `${{{var}}}` looked like a secret and was dropped; export {v}"));
                    format!("${{{v}}}")
                }
                Some(d) => format!("${{{v}:-{d}}}"),
                None => format!("${{{v}}}"),
            }
        };
        out.push_str(&replaced);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn import_env(key: &str, value: &str, notes: &mut Vec<String>) -> String {
    let normalised = normalise_references(value, notes);
    if as_reference(&normalised).is_some() {
        return normalised;
    }
    let var = var_name(key);
    notes.push(format!(
        "env.{key} had an inline value, which is not copied; it now reads ${{{var}}}: export {var} where the expert runs"
    ));
    format!("${{{var}}}")
}

fn import_arg(server: &str, index: usize, arg: &str, notes: &mut Vec<String>) -> String {
    let normalised = normalise_references(arg, notes);
    let value_part = normalised.split_once('=').map(|(_, v)| v).unwrap_or("");
    if !crate::aem::portable_secret(&normalised) && !crate::aem::portable_secret(value_part) {
        return normalised;
    }
    let var = var_name(&format!("{server}_arg_{index}"));
    notes.push(format!(
        "args[{index}] looked like a secret, which is not copied; it now reads ${{{var}}}: export {var}"
    ));
    match normalised.split_once('=') {
        Some((flag, _)) if flag.starts_with('-') => format!("{flag}=${{{var}}}"),
        _ => format!("${{{var}}}"),
    }
}

fn q(s: &str) -> String {
    // A JSON string is a valid YAML double-quoted scalar.
    Value::String(s.to_string()).to_string()
}

/// Renders the `servers:` block of an AEM.md for `servers`, notes as comments.
pub fn render_yaml(servers: &[ImportedServer]) -> String {
    let mut y = String::from("servers:\n");
    for s in servers {
        for note in &s.notes {
            let _ = writeln!(y, "  # {}: {note}", s.name);
        }
        let _ = writeln!(y, "  {}:", s.name);
        let _ = writeln!(y, "    transport: local");
        let _ = writeln!(
            y,
            "    description: {}",
            q(&format!("Imported from `{}`.", s.source_name))
        );
        let _ = writeln!(y, "    command: {}", q(&s.command));
        let args: Vec<String> = s.args.iter().map(|a| q(a)).collect();
        let _ = writeln!(y, "    args: [{}]", args.join(", "));
        if !s.env.is_empty() {
            let _ = writeln!(y, "    env:");
            for (k, v) in &s.env {
                let _ = writeln!(y, "      {}: {}", q(k), q(v));
            }
        }
        if s.tools.is_empty() {
            let _ = writeln!(
                y,
                "    tools: []  # fill in the tools it offers (`iron tools import --discover` lists them)"
            );
        } else {
            let tools: Vec<String> = s.tools.iter().map(|t| q(t)).collect();
            let _ = writeln!(y, "    tools: [{}]", tools.join(", "));
        }
    }
    y
}

/// Starts an imported server once and returns the names of its tools.
pub async fn discover_tools(
    server: &ImportedServer,
    env: &EnvMap,
    workdir: &Path,
    timeout: Duration,
) -> Result<Vec<String>, ToolError> {
    let spec = LaunchSpec::from_descriptor(&server.name, &server.descriptor(), env, workdir)
        .expect("an imported server is local")?;
    let client = McpClient::start(&spec, timeout, None).await?;
    let names = client.tools().iter().map(|t| t.name.clone()).collect();
    client.shutdown().await;
    Ok(names)
}
