//! Validating the delivery channels and perception (MSP) sources of AEM.md.

use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::model::{DeliveryChannel, ServerEntry, SourceEntry, Startup};
use super::raw::{RawDelivery, RawSource};
use super::rules::{name_rule, resolve_tool_ref};
use super::servers::check_env;
use super::valid_name;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) fn validate_delivery(
    name: &str,
    raw: &RawDelivery,
    servers: &BTreeMap<String, ServerEntry>,
    broken: &BTreeSet<String>,
    doc: &Document,
    sink: &mut Sink,
) -> Option<DeliveryChannel> {
    let field = format!("delivery.{name}");
    let line = doc.line_at(&["delivery", name]);
    let expected = Some(
        "either `builtin: terminal`, or `server`, `tool` and `args` using `{text}` (and `{dest}`, `{source}`, `{delivery_id}`, or an argument that is exactly `{data}`)"
            .to_string(),
    );
    let bad = |msg: String, sink: &mut Sink| {
        sink.push(
            &doc.path,
            line,
            &field,
            AemError::MalformedDelivery(msg),
            expected.clone(),
        );
    };
    if !valid_name(name) {
        sink.push(
            &doc.path,
            line,
            &field,
            AemError::InvalidName {
                what: "delivery channel",
                value: name.to_string(),
            },
            Some(name_rule()),
        );
        return None;
    }
    if let Some(b) = &raw.builtin {
        if raw.server.is_some() || raw.tool.is_some() || raw.args.is_some() {
            bad(
                "`builtin` cannot be combined with `server`, `tool` or `args`".to_string(),
                sink,
            );
            return None;
        }
        if b != "terminal" {
            bad(format!("unknown builtin `{b}`"), sink);
            return None;
        }
        return Some(DeliveryChannel::Terminal);
    }
    let (Some(server), Some(tool), Some(args)) = (&raw.server, &raw.tool, &raw.args) else {
        bad(
            "`server`, `tool` and `args` are all required".to_string(),
            sink,
        );
        return None;
    };
    let mut ok = true;
    let mut has_text = false;
    for (key, template) in args {
        if template == "{data}" {
            continue;
        }
        for placeholder in placeholders(template) {
            match placeholder {
                Some("text") => has_text = true,
                Some("dest" | "source" | "delivery_id") => {}
                Some("data") => {
                    ok = false;
                    bad(
                        format!(
                            "argument `{key}` uses `{{data}}` inside text; `{{data}}` must be the whole value"
                        ),
                        sink,
                    );
                }
                Some(other) => {
                    ok = false;
                    bad(
                        format!("argument `{key}` uses unknown placeholder `{{{other}}}`"),
                        sink,
                    );
                }
                None => {
                    ok = false;
                    bad(format!("argument `{key}` has an unclosed `{{`"), sink);
                }
            }
        }
    }
    if !has_text {
        ok = false;
        bad("no argument carries `{text}`".to_string(), sink);
    }
    let reference = format!("{server}/{tool}");
    let r = resolve_tool_ref(
        servers,
        broken,
        &reference,
        doc,
        &format!("{field}.tool"),
        sink,
    )?;
    let declared = &servers[&r.server].tools[&r.tool];
    ok.then(|| DeliveryChannel::Tool {
        server: r.server,
        tool: r.tool,
        args: args.clone(),
        effect: declared.effect,
    })
}

/// The `{name}` placeholders of a template; `None` for an unclosed brace.
fn placeholders(template: &str) -> Vec<Option<&str>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        match rest[open..].find('}') {
            Some(close) => {
                out.push(Some(&rest[open + 1..open + close]));
                rest = &rest[open + close + 1..];
            }
            None => {
                out.push(None);
                break;
            }
        }
    }
    out
}

pub(crate) fn validate_source(
    name: &str,
    raw: &RawSource,
    doc: &Document,
    sink: &mut Sink,
) -> Option<SourceEntry> {
    let field = format!("msp.sources.{name}");
    let line = doc.line_at(&["msp", "sources", name]);
    let before = sink.items.len();
    if !valid_name(name) {
        sink.push(
            &doc.path,
            line,
            &field,
            AemError::InvalidName {
                what: "source",
                value: name.to_string(),
            },
            Some(name_rule()),
        );
    }
    let startup = match raw.startup.as_deref() {
        Some("on_demand") => Startup::OnDemand,
        Some("always") => Startup::Always,
        other => {
            let error = match other {
                None => AemError::Empty,
                Some(s) => AemError::UnknownStartup(s.to_string()),
            };
            sink.push(
                &doc.path,
                doc.line_at(&["msp", "sources", name, "startup"]).or(line),
                format!("{field}.startup"),
                error,
                Some("`on_demand` or `always`".to_string()),
            );
            Startup::OnDemand
        }
    };
    if raw.command.is_empty() || raw.command.iter().any(|a| a.trim().is_empty()) {
        sink.push(
            &doc.path,
            doc.line_at(&["msp", "sources", name, "command"]).or(line),
            format!("{field}.command"),
            AemError::Empty,
            Some("the program and its arguments as a list".to_string()),
        );
    }
    let env = raw.env.clone().unwrap_or_default();
    check_env(&env, &format!("{field}.env"), doc, sink);
    if raw.working_memory.is_some() {
        // Declared but not honoured would be silent: refuse it until a working-memory engine
        // exists.
        sink.push(
            &doc.path,
            doc.line_at(&["msp", "sources", name, "working_memory"])
                .or(line),
            format!("{field}.working_memory"),
            AemError::NotImplemented("working memory (live relations over a source)".into()),
            Some("remove `working_memory`: no working-memory engine is built into Iron yet".into()),
        );
    }
    (sink.items.len() == before).then(|| SourceEntry {
        description: raw.description.trim().to_string(),
        startup,
        command: raw.command.clone(),
        env,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_placeholders() {
        assert_eq!(
            placeholders("to {dest}: {text}"),
            [Some("dest"), Some("text")]
        );
        assert_eq!(placeholders("{oops"), [None]);
    }
}
