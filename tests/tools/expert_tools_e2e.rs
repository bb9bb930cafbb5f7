//! An expert process calls a `remote` tool over ROS: the engine spawns `erp/bookkeeper`
//! (its mesh switched to active in a copy of the shipped folders), the scripted model asks
//! for a granted ledger tool and for one the expert does not hold; the ledger bridge (served
//! from this test process on `/iron/tools/ledger`) sees only the granted call, and the answer
//! built from its result comes back as the task's result.

use crate::support;

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use iron::{
    spine::control::{ControlConfig, ControlPlane},
    tools::{Bridge, RemoteCaller, ros::BridgeFuture, serve_bridge},
};
use serde_json::{Value, json};
use support::{bin, copy_dir, project::Project};
use tokio_util::sync::CancellationToken;

const T: Duration = Duration::from_secs(60);

/// The ledger: one balance, and a record of every call it answered.
#[derive(Default)]
struct Ledger {
    calls: Mutex<Vec<(String, Value, String)>>,
}

impl Bridge for Ledger {
    fn tools(&self) -> Vec<String> {
        ["get_account_balance", "post_journal_entry"]
            .map(String::from)
            .to_vec()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        caller: &'a RemoteCaller,
    ) -> BridgeFuture<'a> {
        self.calls.lock().unwrap().push((
            tool.to_string(),
            arguments.clone(),
            caller.caller.clone(),
        ));
        Box::pin(async move {
            match tool {
                "get_account_balance" => {
                    Ok(json!({"account": arguments["account"], "balance": 4200}))
                }
                _ => Ok(json!({"posted": true})),
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expert_calls_a_granted_remote_tool_and_no_other() {
    let p = Project::scripted(
        r#"turns:
  - expect: "account 1000"
    tool_calls:
      - name: ledger__post_journal_entry
        arguments: {account: "1000", amount: -4200}
      - name: ledger__get_account_balance
        arguments: {account: "1000"}
  - expect: "4200"
    text: "Account 1000 stands at 4200, read from the ledger just now."
"#,
    )
    .with_router();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("aem"),
        &p.path("aem"),
    );
    let erp = p.path("aem/erp/AEM.md");
    let text = std::fs::read_to_string(&erp).unwrap();
    assert!(
        text.contains("status: parked"),
        "the shipped erp mesh changed"
    );
    std::fs::write(&erp, text.replace("status: parked", "status: active")).unwrap();
    p.build_catalog();
    let engine = p.start_active(&bin("engine_node"), "/iron/engine", &[]);

    let control = ControlPlane::connect(ControlConfig {
        router: p.router().to_string(),
        domain_id: 0,
    })
    .await
    .unwrap();
    let node = control.node("ledger", "/iron/tools").unwrap();
    control.wait_for_router(&node, T).await.unwrap();
    let ledger = Arc::new(Ledger::default());
    let stop = CancellationToken::new();
    let key = iron::tools::CallerKey::open(p.dir.path()).unwrap();
    serve_bridge(
        &node,
        "/iron/tools/ledger",
        ledger.clone(),
        key,
        stop.clone(),
    )
    .unwrap();

    let sent = tokio::process::Command::new(bin("iron"))
        .args([
            "task",
            "send",
            "--domain",
            "erp/bookkeeper",
            "--timeout",
            "60",
            "what is the balance of account 1000?",
        ])
        .envs(p.envs())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&sent.stdout);
    assert!(
        sent.status.success(),
        "{stdout}\n{}\nengine:\n{}",
        String::from_utf8_lossy(&sent.stderr),
        engine.output().join("\n")
    );
    assert!(
        stdout.contains("Account 1000 stands at 4200"),
        "the answer built from the tool result: {stdout}"
    );
    let calls = ledger.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        [(
            "get_account_balance".to_string(),
            json!({"account": "1000"}),
            "erp/bookkeeper".to_string()
        )],
        "only the granted tool reached the ledger, once, named by the caller"
    );
    stop.cancel();
}
