//! `native` and `remote` servers go through the [`RemoteTools`] seam (the ROS
//! `iron/srv/ToolCall` bridge lives above this layer); this implementation of the seam
//! records what it is asked and answers from a table.

use crate::support_tools as support;

use iron::tools::remote::{RemoteError, RemoteFuture};
use iron::tools::{
    CallContext, DenialReason, RemoteCaller, RemoteServer, RemoteTools, ToolError, ToolEventKind,
};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// (service, native, tool, arguments, caller, task)
type Seen = (String, bool, String, Value, String, String);

#[derive(Default)]
struct TableBridge {
    seen: Mutex<Vec<Seen>>,
}

impl RemoteTools for TableBridge {
    fn call<'a>(
        &'a self,
        server: &'a RemoteServer,
        tool: &'a str,
        arguments: &'a Value,
        caller: &'a RemoteCaller,
    ) -> RemoteFuture<'a> {
        Box::pin(async move {
            self.seen.lock().unwrap().push((
                server.service.clone(),
                server.native,
                tool.to_string(),
                arguments.clone(),
                caller.caller.clone(),
                caller.task_id.clone(),
            ));
            match tool {
                "get_account_balance" => Ok(json!({"balance": 42})),
                "send_message" => Ok(json!({"sent": true})),
                "delete_entry" => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(Value::Null)
                }
                _ => Err(RemoteError::Refused {
                    message: format!("no tool {tool}"),
                }),
            }
        })
    }
}

fn ctx() -> CallContext {
    CallContext::task("task-remote")
}

#[tokio::test]
async fn native_and_remote_calls_reach_their_services() {
    let p = support::tool_lab();
    let bridge = Arc::new(TableBridge::default());
    let m = p.manager_with(
        "operator",
        p.setup()
            .with_remote(bridge.clone())
            .with_call_timeout(Duration::from_secs(1)),
    );
    let out = m
        .call(
            "ledger__get_account_balance",
            json!({"account": "A1"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert_eq!(out.result, json!({"balance": 42}));
    let out = m
        .call("delivery__send_message", json!({"text": "hi"}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result, json!({"sent": true}));
    let seen = bridge.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (
                "/iron/tools/ledger".into(),
                false,
                "get_account_balance".into(),
                json!({"account": "A1"}),
                "lab/operator".into(),
                "task-remote".into()
            ),
            (
                "/iron/tools/delivery".into(),
                true,
                "send_message".into(),
                json!({"text": "hi"}),
                "lab/operator".into(),
                "task-remote".into()
            ),
        ]
    );
    // A bridge that never answers is bounded by the tool timeout.
    let err = m
        .call("ledger__delete_entry", json!({"id": 1}), &ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Timeout { .. }), "{err}");
    let results = p.events.of_kind(ToolEventKind::ToolResult);
    assert_eq!(results.len(), 3);
}

#[tokio::test]
async fn remote_tools_pass_gate_one_first() {
    let p = support::tool_lab();
    let bridge = Arc::new(TableBridge::default());
    let mut catalog = p.catalog.clone();
    catalog.experts.get_mut("lab/operator").unwrap().clearance =
        iron::core::effect::Clearance::ReadWrite;
    let m = iron::tools::ToolManager::new(
        &catalog,
        &p.manifest,
        "lab/operator",
        p.setup().with_remote(bridge.clone()),
    )
    .unwrap();
    let err = m
        .call("ledger__delete_entry", json!({"id": 1}), &ctx())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.denial().unwrap().reason,
            DenialReason::AboveClearance { .. }
        ),
        "{err}"
    );
    assert!(
        bridge.seen.lock().unwrap().is_empty(),
        "a refused call must not reach the bridge"
    );
}

#[tokio::test]
async fn without_a_bridge_remote_calls_fail_cleanly() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    let err = m
        .call("ledger__get_account_balance", json!({}), &ctx())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::NoBridge { ref service, .. } if service == "/iron/tools/ledger"),
        "{err}"
    );
}

#[tokio::test]
async fn unknown_names_and_unoffered_tools() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    let err = m.call("made_up_tool", json!({}), &ctx()).await.unwrap_err();
    assert_eq!(err.denial().unwrap().reason, DenialReason::NotGranted);
    // Declared in AEM.md and granted, but the live server does not offer it.
    let err = m
        .call("faulty__list_nothing", json!({}), &ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::NotOffered { .. }), "{err}");
    assert!(err.to_string().contains("echo"), "{err}");
}

#[tokio::test]
async fn model_tools_use_valid_names_that_map_back() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    let tools = m.model_tools();
    assert_eq!(tools.len(), p.catalog.experts["lab/operator"].tools.len());
    for t in &tools {
        assert!(iron::tools::names::valid_model_name(&t.name), "{}", t.name);
        assert_eq!(m.names().resolve(&t.name), Some(&t.tool));
    }
    assert!(tools.iter().any(|t| t.name == "faulty__echo"));
}

#[tokio::test]
async fn shutdown_stops_servers_and_refuses_later_calls() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    m.call("faulty__echo", json!({"text": "x"}), &ctx())
        .await
        .unwrap();
    assert!(m.server_pid("faulty").await.is_some());
    m.shutdown().await;
    assert_eq!(m.server_pid("faulty").await, None);
    let err = m
        .call("faulty__echo", json!({"text": "x"}), &ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::ShutDown), "{err}");
}
