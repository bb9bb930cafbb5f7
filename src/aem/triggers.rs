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

/// Reports what is wrong with one trigger, at the line of the key it concerns.
struct Reporter<'a> {
    doc: &'a Document,
    name: &'a str,
    field: String,
    line: Option<usize>,
}

impl Reporter<'_> {
    fn bad(&self, key: &str, why: String, expected: &str, sink: &mut Sink) {
        sink.push(
            &self.doc.path,
            self.doc
                .line_at(&["triggers", self.name, key])
                .or(self.line),
            if key.is_empty() {
                self.field.clone()
            } else {
                format!("{}.{key}", self.field)
            },
            AemError::MalformedTrigger(why),
            Some(expected.to_string()),
        );
    }
}

/// The expert, flow name and flow digest a trigger starts, as the parts of it that check out.
type Target<'e> = (&'e ExpertEntry, String, String);

fn validate_trigger(
    name: &str,
    raw: &RawTrigger,
    experts: &BTreeMap<String, &ExpertEntry>,
    sources: &BTreeMap<String, SourceEntry>,
    doc: &Document,
    sink: &mut Sink,
) -> Option<TriggerEntry> {
    let report = Reporter {
        doc,
        name,
        field: format!("triggers.{name}"),
        line: doc.line_at(&["triggers", name]),
    };
    let before = sink.items.len();
    if !valid_name(name) {
        sink.push(
            &doc.path,
            report.line,
            &report.field,
            AemError::InvalidName {
                what: "trigger",
                value: name.to_string(),
            },
            Some(name_rule()),
        );
    }
    let target = flow_target(raw, experts, &report, sink);
    let input = input_of(raw, &report, sink);
    let on = trigger_on(raw, sources, target.as_ref(), &report, sink)?;
    if raw.settle_secs.is_some() && !matches!(on, TriggerOn::Sources { .. }) {
        report.bad(
            "settle_secs",
            "`settle_secs` applies to source triggers only".into(),
            "remove it, or trigger on `sources`",
            sink,
        );
    }
    let (expert, flow, flow_sha256) = target?;
    (sink.items.len() == before).then(|| TriggerEntry {
        role: expert.role.clone(),
        flow,
        flow_sha256,
        on,
        input,
    })
}

/// The flow: `<role>/<flow>` of an expert of this mesh, whose folder has the file.
fn flow_target<'e>(
    raw: &RawTrigger,
    experts: &BTreeMap<String, &'e ExpertEntry>,
    report: &Reporter<'_>,
    sink: &mut Sink,
) -> Option<Target<'e>> {
    let flow_ref = raw.flow.as_deref().unwrap_or("").trim();
    let Some((role, flow)) = flow_ref
        .split_once('/')
        .filter(|(role, flow)| !role.is_empty() && !flow.is_empty())
    else {
        report.bad(
            "flow",
            format!("`{flow_ref}` does not name a flow"),
            "`<role>/<flow>`, e.g. monitor/monitor for skills/monitor/flows/monitor.py",
            sink,
        );
        return None;
    };
    let Some(expert) = experts.get(role) else {
        report.bad(
            "flow",
            format!("no expert `{role}` in this mesh"),
            &format!(
                "a role of this mesh ({})",
                experts.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            sink,
        );
        return None;
    };
    let file = format!("flows/{flow}.py");
    match expert.flows.iter().find(|f| f.path == file) {
        Some(record) => Some((*expert, flow.to_string(), record.sha256.clone())),
        None => {
            report.bad(
                "flow",
                format!("expert `{role}` has no {file}"),
                &format!("a flow file of skills/{role}/flows/ ({})", flows_of(expert)),
                sink,
            );
            None
        }
    }
}

/// `input:`, a mapping given to the flow with what fired it (empty without one).
fn input_of(raw: &RawTrigger, report: &Reporter<'_>, sink: &mut Sink) -> serde_json::Value {
    match &raw.input {
        None => serde_json::json!({}),
        Some(v @ serde_json::Value::Object(_)) => v.clone(),
        Some(_) => {
            report.bad(
                "input",
                "`input` is not a mapping".into(),
                "a mapping of keys to values, given to the flow with what fired it",
                sink,
            );
            serde_json::json!({})
        }
    }
}

/// What fires the trigger: exactly one of `sources`, `schedule` or `webhook`.
fn trigger_on(
    raw: &RawTrigger,
    sources: &BTreeMap<String, SourceEntry>,
    target: Option<&Target<'_>>,
    report: &Reporter<'_>,
    sink: &mut Sink,
) -> Option<TriggerOn> {
    let kinds = [
        raw.sources.is_some(),
        raw.schedule.is_some(),
        raw.webhook.is_some(),
    ];
    Some(match kinds {
        [true, false, false] => sources_on(raw, sources, target, report, sink),
        [false, true, false] => {
            let cron = raw.schedule.clone().unwrap_or_default();
            if let Err(e) = parse_cron(&cron) {
                report.bad(
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
                report.bad(
                    "webhook",
                    format!("token `{token}` is not a reference to a secret"),
                    "`token: ${VAR}`: the bearer token callers must send, from the environment (no default)",
                    sink,
                );
            }
            TriggerOn::Webhook { token }
        }
        _ => {
            report.bad(
                "",
                "give exactly one of `sources`, `schedule` or `webhook`".into(),
                "sources: [..] | schedule: \"<cron>\" | webhook: {token: ${VAR}}",
                sink,
            );
            return None;
        }
    })
}

/// A source trigger: sources of this mesh, granted to the flow's expert, and how long to let
/// their new items settle.
fn sources_on(
    raw: &RawTrigger,
    sources: &BTreeMap<String, SourceEntry>,
    target: Option<&Target<'_>>,
    report: &Reporter<'_>,
    sink: &mut Sink,
) -> TriggerOn {
    let list = raw.sources.clone().unwrap_or_default();
    if list.is_empty() {
        report.bad(
            "sources",
            "`sources` is empty".into(),
            "the perception sources whose new items start the flow",
            sink,
        );
    }
    for s in &list {
        if !sources.contains_key(s) {
            report.bad(
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
            report.bad(
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
        report.bad(
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
