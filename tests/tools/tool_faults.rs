//! Faults of real server processes: a server that hangs, crashes, writes malformed output,
//! or cannot start gives a tool error the model can read; the caller keeps going, and the
//! next call gets a fresh server. Also: the child's environment is clean.

use crate::support_tools as support;

use iron::tools::{CallContext, ToolError};
use serde_json::{Value, json};
use std::time::Duration;

fn ctx() -> CallContext {
    CallContext::task("task-faults")
}

async fn echo_ok(m: &iron::tools::ToolManager, text: &str) {
    let out = m
        .call("faulty__echo", json!({"text": text}), &ctx())
        .await
        .expect("echo after a fault");
    assert!(!out.is_error);
    assert_eq!(out.text(), text);
}

#[tokio::test]
async fn hung_call_times_out_and_the_next_call_works() {
    let p = support::tool_lab();
    let m = p.manager_with(
        "operator",
        p.setup().with_call_timeout(Duration::from_secs(2)),
    );
    echo_ok(&m, "before").await;
    let pid = m.server_pid("faulty").await.unwrap();
    let err = m.call("faulty__hang", json!({}), &ctx()).await.unwrap_err();
    assert!(
        matches!(err, ToolError::Timeout { ref tool, secs: 2, .. } if tool == "hang"),
        "{err}"
    );
    assert!(err.retryable());
    assert!(
        err.to_string().contains("did not answer within 2 s"),
        "{err}"
    );
    // The hung server was stopped; the next call starts another.
    assert_eq!(m.server_pid("faulty").await, None);
    echo_ok(&m, "after").await;
    assert_ne!(m.server_pid("faulty").await.unwrap(), pid);
    m.shutdown().await;
}

#[tokio::test]
async fn crash_mid_call_is_an_error_and_the_server_restarts() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    let first = m
        .call("faulty__get_pid", json!({}), &ctx())
        .await
        .unwrap()
        .text();
    let err = m
        .call("faulty__crash", json!({}), &ctx())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::Crashed { ref tool, .. } if tool == "crash"),
        "{err}"
    );
    assert!(
        err.to_string().contains("restarted on the next call"),
        "{err}"
    );
    let second = m
        .call("faulty__get_pid", json!({}), &ctx())
        .await
        .unwrap()
        .text();
    assert_ne!(first, second, "a crashed server must be started again");
    echo_ok(&m, "still here").await;
}

#[tokio::test]
async fn malformed_output_is_an_error_and_the_server_restarts() {
    let p = support::tool_lab();
    // A long timeout: the malformed line, not the clock, must end the call.
    let m = p.manager_with(
        "operator",
        p.setup().with_call_timeout(Duration::from_secs(120)),
    );
    let first = m
        .call("faulty__get_pid", json!({}), &ctx())
        .await
        .unwrap()
        .text();
    let err = m
        .call("faulty__garble", json!({}), &ctx())
        .await
        .unwrap_err();
    match &err {
        ToolError::Malformed { line, tool, .. } => {
            assert_eq!(tool, "garble");
            assert!(line.contains("<<not json>>"), "{line}");
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
    let second = m
        .call("faulty__get_pid", json!({}), &ctx())
        .await
        .unwrap()
        .text();
    assert_ne!(first, second);
}

#[tokio::test]
async fn server_that_cannot_start_is_an_error_every_time() {
    let p = support::tool_lab();
    let mut catalog = p.catalog.clone();
    // Point the server at a program that does not exist (catalog and manifest alike).
    let bad = |descriptor: &mut iron::aem::ServerDescriptor| {
        if let iron::aem::ServerDescriptor::Local { command, .. } = descriptor {
            *command = "/nonexistent/mcp-server".into();
        }
    };
    let server = catalog
        .meshes
        .get_mut("lab")
        .unwrap()
        .servers
        .get_mut("faulty")
        .unwrap();
    bad(&mut server.descriptor);
    server.descriptor_hash = iron::aem::descriptor_hash(&server.descriptor);
    let manifest = catalog.tool_manifest();
    let m = iron::tools::ToolManager::new(&catalog, &manifest, "lab/operator", p.setup()).unwrap();
    for _ in 0..2 {
        let err = m
            .call("faulty__echo", json!({"text": "x"}), &ctx())
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::StartFailed { ref server, .. } if server == "faulty"),
            "{err}"
        );
        assert!(err.to_string().contains("/nonexistent/mcp-server"), "{err}");
    }
    // The other servers of the expert are unaffected.
    let out = m
        .call(
            "fs__write_file",
            json!({"path": p.work().join("ok.txt"), "content": "fine"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
}

#[tokio::test]
async fn server_that_exits_at_start_reports_its_stderr() {
    let p = support::tool_lab();
    let mut catalog = p.catalog.clone();
    let server = catalog
        .meshes
        .get_mut("lab")
        .unwrap()
        .servers
        .get_mut("faulty")
        .unwrap();
    if let iron::aem::ServerDescriptor::Local { args, .. } = &mut server.descriptor {
        args.push("--exit-at-start".into());
    }
    server.descriptor_hash = iron::aem::descriptor_hash(&server.descriptor);
    let manifest = catalog.tool_manifest();
    let m = iron::tools::ToolManager::new(&catalog, &manifest, "lab/operator", p.setup()).unwrap();
    let err = m
        .call("faulty__echo", json!({"text": "x"}), &ctx())
        .await
        .unwrap_err();
    let ToolError::StartFailed { stderr, .. } = &err else {
        panic!("expected StartFailed, got {err:?}");
    };
    assert!(
        stderr.iter().any(|l| l.contains("asked to exit at start")),
        "{stderr:?}"
    );
}

#[tokio::test]
async fn missing_environment_variable_is_a_start_error_naming_it() {
    let p = support::tool_lab();
    let mut env = p.env();
    env.remove("LAB_TZ");
    let mut setup = p.setup();
    setup.env = env;
    let m = p.manager_with("writer", setup);
    let err = m
        .call("time__get_current_time", json!({"timezone": "UTC"}), &ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::StartFailed { .. }), "{err}");
    assert!(err.to_string().contains("LAB_TZ"), "{err}");
}

#[tokio::test]
async fn the_child_environment_holds_only_what_is_declared() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    let out = m
        .call("faulty__get_environment", json!({}), &ctx())
        .await
        .unwrap();
    let env: Value = serde_json::from_str(&out.text()).unwrap();
    let keys: Vec<&str> = env
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["LAB_MARKER", "PATH"], "{env}");
    assert_eq!(env["LAB_MARKER"], "declared");
    assert!(!out.text().contains("do-not-leak"));
}

#[tokio::test]
async fn a_secret_a_server_is_given_never_leaves_in_what_it_prints() {
    // The server's declared `${LAB_MARKER}` comes from the environment: a secret. A tool that
    // prints its environment shows where it would be, not the value, to the model and the log.
    let p = support::tool_lab();
    let mut setup = p.setup();
    setup
        .env
        .insert("LAB_MARKER".into(), "s3cret-marker-0042".into());
    let m = p.manager_with("operator", setup);
    let out = m
        .call("faulty__get_environment", json!({}), &ctx())
        .await
        .unwrap();
    assert!(
        !out.result.to_string().contains("s3cret-marker-0042"),
        "{}",
        out.result
    );
    assert!(
        out.text().contains("[redacted: LAB_MARKER]"),
        "{}",
        out.text()
    );
    let recorded = format!("{:?}", p.events.events());
    assert!(recorded.contains("get_environment"));
    assert!(!recorded.contains("s3cret-marker-0042"), "{recorded}");
    assert_eq!(
        m.redactor().text("key s3cret-marker-0042 sent"),
        "key [redacted: LAB_MARKER] sent"
    );
    // Encoded, or shaped like a well-known key, it is cut too, from the result and the log.
    for (echoed, form) in [
        ("czNjcmV0LW1hcmtlci0wMDQy", "base64"),
        ("7333637265742d6d61726b65722d30303432", "hex"),
        ("sk-live-abcdefghijklmnopqrstuvwx", "shape"),
    ] {
        let out = m
            .call(
                "faulty__echo",
                json!({"text": format!("here: {echoed}")}),
                &ctx(),
            )
            .await
            .unwrap();
        assert!(!out.text().contains(echoed), "{form}: {}", out.text());
        assert!(out.text().contains("[redacted: "), "{form}: {}", out.text());
    }
    let recorded = format!("{:?}", p.events.events());
    assert!(
        !recorded.contains("czNjcmV0")
            && !recorded.contains("73336372")
            && !recorded.contains("sk-live"),
        "{recorded}"
    );
}

#[tokio::test]
async fn dropping_the_manager_kills_its_servers() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    echo_ok(&m, "x").await;
    let pid = m.server_pid("faulty").await.unwrap() as i32;
    drop(m);
    // The group was sent SIGKILL synchronously; wait for the reaper, bounded.
    let mut gone = false;
    for _ in 0..100 {
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
        if !alive || zombie {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "server {pid} outlived its manager");
}
