//! Validating the `triggers:` of AEM.md: what starts a mesh's flows without a person. Each
//! trigger names a flow of one of the mesh's experts (`<role>/<flow>`, a file under
//! `skills/<role>/flows/`) and exactly one of `sources` (new items on perception sources the
//! expert is granted), `schedule` (a cron expression) or `webhook` (an authenticated POST).
//! Anything the runtime could not honour is an error here, never a silent no-op.

use std::collections::BTreeMap;

use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::model::{ExpertEntry, SourceEntry, TriggerEntry, TriggerOn};
use super::raw::RawTrigger;
use super::rules::name_rule;
use super::valid_name;

/// Quiet time of a source trigger when AEM.md gives none, in seconds.
pub const DEFAULT_SETTLE_SECS: u64 = 2;
/// Longest quiet time a source trigger may wait, in seconds.
pub const MAX_SETTLE_SECS: u64 = 3_600;

/// The cron parser every reader of a schedule uses: UTC, five fields or six with seconds.
pub fn parse_cron(expression: &str) -> Result<croner::Cron, croner::errors::CronError> {
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Optional)
        .year(croner::parser::Year::Disallowed)
        .build()
        .parse(expression)
}

/// The mesh's triggers, checked against its experts (by role) and sources.
pub(crate) fn validate_triggers(
    raw: &BTreeMap<String, RawTrigger>,
    experts: &BTreeMap<String, &ExpertEntry>,
    sources: &BTreeMap<String, SourceEntry>,
    doc: &Document,
    sink: &mut Sink,
) -> BTreeMap<String, TriggerEntry> {
    raw.iter()
        .filter_map(|(name, t)| {
            validate_trigger(name, t, experts, sources, doc, sink).map(|e| (name.clone(), e))
        })
        .collect()
}

fn validate_trigger(
    name: &str,
    raw: &RawTrigger,
    experts: &BTreeMap<String, &ExpertEntry>,
    sources: &BTreeMap<String, SourceEntry>,
    doc: &Document,
    sink: &mut Sink,
) -> Option<TriggerEntry> {
    let field = format!("triggers.{name}");
    let line = doc.line_at(&["triggers", name]);
    let before = sink.items.len();
    let bad = |key: &str, why: String, expected: &str, sink: &mut Sink| {
        sink.push(
            &doc.path,
            doc.line_at(&["triggers", name, key]).or(line),
            if key.is_empty() {
                field.clone()
            } else {
                format!("{field}.{key}")
            },
            AemError::MalformedTrigger(why),
            Some(expected.to_string()),
        );
    };
    if !valid_name(name) {
        sink.push(
            &doc.path,
            line,
            &field,
            AemError::InvalidName {
                what: "trigger",
                value: name.to_string(),
            },
            Some(name_rule()),
        );
    }

    // The flow: `<role>/<flow>` of an expert of this mesh, whose folder has the file.
    let flow_ref = raw.flow.as_deref().unwrap_or("").trim();
    let mut target = None;
    match flow_ref.split_once('/') {
        Some((role, flow)) if !role.is_empty() && !flow.is_empty() => match experts.get(role) {
            None => bad(
                "flow",
                format!("no expert `{role}` in this mesh"),
                &format!(
                    "a role of this mesh ({})",
                    experts.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                sink,
            ),
            Some(expert) => {
                let file = format!("flows/{flow}.py");
                match expert.flows.iter().find(|f| f.path == file) {
                    Some(record) => target = Some((*expert, flow, record.sha256.clone())),
                    None => bad(
                        "flow",
                        format!("expert `{role}` has no {file}"),
                        &format!("a flow file of skills/{role}/flows/ ({})", flows_of(expert)),
                        sink,
                    ),
                }
            }
        },
        _ => bad(
            "flow",
            format!("`{flow_ref}` does not name a flow"),
            "`<role>/<flow>`, e.g. monitor/monitor for skills/monitor/flows/monitor.py",
            sink,
        ),
    }

    let input = match &raw.input {
        None => serde_json::json!({}),
        Some(v @ serde_json::Value::Object(_)) => v.clone(),
        Some(_) => {
            bad(
                "input",
                "`input` is not a mapping".into(),
                "a mapping of keys to values, given to the flow with what fired it",
                sink,
            );
            serde_json::json!({})
        }
    };

    let kinds = [
        raw.sources.is_some(),
        raw.schedule.is_some(),
        raw.webhook.is_some(),
    ];
    let on = match kinds {
        [true, false, false] => {
            let list = raw.sources.clone().unwrap_or_default();
            if list.is_empty() {
                bad(
                    "sources",
                    "`sources` is empty".into(),
                    "the perception sources whose new items start the flow",
                    sink,
                );
            }
            for s in &list {
                if !sources.contains_key(s) {
                    bad(
                        "sources",
                        format!("`{s}` is not a source of this mesh"),
                        &format!(
                            "a source registered under `msp.sources` ({})",
                            sources.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                        sink,
                    );
                } else if let Some((expert, _, _)) = target
                    && !expert.sources.contains(s)
                {
                    bad(
                        "sources",
                        format!(
                            "expert `{}` is not granted source `{s}`, so its flow may not be given its items",
                            expert.role
                        ),
                        &format!(
                            "grant it in skills/{}/capabilities.md (`sources: add: [{s}]`)",
                            expert.role
                        ),
                        sink,
                    );
                }
            }
            let settle_secs = raw.settle_secs.unwrap_or(DEFAULT_SETTLE_SECS);
            if settle_secs > MAX_SETTLE_SECS {
                bad(
                    "settle_secs",
                    format!("{settle_secs} seconds is too long"),
                    &format!("0 to {MAX_SETTLE_SECS} seconds"),
                    sink,
                );
            }
            let mut sources = list;
            sources.sort();
            sources.dedup();
            TriggerOn::Sources {
                sources,
                settle_secs,
            }
        }
        [false, true, false] => {
            let cron = raw.schedule.clone().unwrap_or_default();
            if let Err(e) = parse_cron(&cron) {
                bad(
                    "schedule",
                    format!("`{cron}` is not a cron expression: {e}"),
                    "five fields (minute hour day month weekday) or six with seconds first, in UTC, e.g. \"0 7 * * *\"",
                    sink,
                );
            }
            TriggerOn::Schedule { cron }
        }
        [false, false, true] => {
            let token = raw
                .webhook
                .as_ref()
                .and_then(|w| w.token.clone())
                .unwrap_or_default();
            if !is_plain_reference(&token) {
                bad(
                    "webhook",
                    format!("token `{token}` is not a reference to a secret"),
                    "`token: ${VAR}`: the bearer token callers must send, from the environment (no default)",
                    sink,
                );
            }
            TriggerOn::Webhook { token }
        }
        _ => {
            bad(
                "",
                "give exactly one of `sources`, `schedule` or `webhook`".into(),
                "sources: [..] | schedule: \"<cron>\" | webhook: {token: ${VAR}}",
                sink,
            );
            return None;
        }
    };
    if raw.settle_secs.is_some() && !matches!(on, TriggerOn::Sources { .. }) {
        bad(
            "settle_secs",
            "`settle_secs` applies to source triggers only".into(),
            "remove it, or trigger on `sources`",
            sink,
        );
    }
    let (expert, flow, flow_sha256) = target?;
    (sink.items.len() == before).then(|| TriggerEntry {
        role: expert.role.clone(),
        flow: flow.to_string(),
        flow_sha256,
        on,
        input,
    })
}

fn flows_of(expert: &ExpertEntry) -> String {
    let names: Vec<&str> = expert
        .flows
        .iter()
        .filter_map(|f| f.path.strip_prefix("flows/")?.strip_suffix(".py"))
        .collect();
    if names.is_empty() {
        "it has none".into()
    } else {
        names.join(", ")
    }
}

/// `${VAR}` with no default: a secret must come from the environment.
fn is_plain_reference(value: &str) -> bool {
    value
        .strip_prefix("${")
        .and_then(|v| v.strip_suffix('}'))
        .is_some_and(|var| {
            let mut chars = var.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
                && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_take_five_or_six_fields() {
        assert!(parse_cron("0 7 * * *").is_ok());
        assert!(parse_cron("*/5 * * * * *").is_ok());
        assert!(parse_cron("every day").is_err());
        assert!(parse_cron("61 * * * *").is_err());
    }

    #[test]
    fn tokens_come_from_the_environment_without_a_default() {
        assert!(is_plain_reference("${HOOK_TOKEN}"));
        assert!(!is_plain_reference("${HOOK_TOKEN:-x}"));
        assert!(!is_plain_reference("s3cret"));
        assert!(!is_plain_reference(""));
    }
}
