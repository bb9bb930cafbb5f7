//! Events serialise with snake_case kinds and carry the gate and reason of a refusal.

use iron::core::effect::{Clearance, Effect};
use iron::tools::{DenialReason, Gate, GateDenial, ToolEvent, ToolEventKind, ToolOutcome};
use serde_json::json;

#[test]
fn kinds_and_denials_serialise() {
    for (kind, word) in [
        (ToolEventKind::ToolCall, "tool_call"),
        (ToolEventKind::ToolResult, "tool_result"),
        (ToolEventKind::GateDenied, "gate_denied"),
    ] {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(word));
        assert_eq!(kind.as_str(), word);
        // The same word as the kernel's kind on the durable log.
        assert_eq!(iron::core::event_kind::EventKind::from(kind).as_str(), word);
    }
    let denial = GateDenial {
        gate: Gate::Clearance,
        tool: "fs/write_file".into(),
        reason: DenialReason::AboveClearance {
            effect: Effect::Write,
            clearance: Clearance::Read,
        },
    };
    let event = ToolEvent {
        kind: ToolEventKind::GateDenied,
        actor: "lab/reader".into(),
        task: "t1".into(),
        tool: "fs/write_file".into(),
        arguments: json!({"path": "x"}),
        outcome: ToolOutcome::Denied {
            gate: Gate::Clearance,
            gate_number: 1,
            message: denial.to_string(),
            denial,
        },
        cause: Some("turn-1".into()),
    };
    let v = serde_json::to_value(&event).unwrap();
    assert_eq!(v["kind"], "gate_denied");
    assert_eq!(v["outcome"]["status"], "denied");
    assert_eq!(v["outcome"]["gate"], "clearance");
    assert_eq!(v["outcome"]["denial"]["reason"], "above_clearance");
    assert_eq!(v["outcome"]["denial"]["clearance"], "read");
    assert!(
        v["outcome"]["message"]
            .as_str()
            .unwrap()
            .contains("needs clearance `read-write`")
    );
}
