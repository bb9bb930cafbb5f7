//! The native tool bridge over real ROS 2 (router + the delivery_node process + a caller in
//! this process): `iron/srv/ToolCall` answered, every refusal an error reply, the webhook
//! allow-list enforced against a real HTTP listener, each send recorded in the outbox, and
//! the node still serving after every bad request.

use crate::support;

use std::{sync::Arc, time::Duration};

use iron::{
    spine::control::{ControlConfig, ControlPlane},
    tools::{CallerKey, RemoteCaller, RosTools, delivery, remote::RemoteError},
};
use serde_json::{Value, json};
use support::{bin, project::Project};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
    sync::mpsc,
};

const T: Duration = Duration::from_secs(20);

/// A one-route HTTP server: answers every POST with `status` and passes each body on.
async fn webhook(status: u16) -> (String, mpsc::UnboundedReceiver<Value>) {
    webhook_with(status, "").await
}

/// [`webhook`] whose answers carry `headers` (each ending in `\r\n`).
async fn webhook_with(status: u16, headers: &str) -> (String, mpsc::UnboundedReceiver<Value>) {
    let headers = headers.to_string();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let (tx, headers) = (tx.clone(), headers.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    let Some(head_end) = text.find("\r\n\r\n") else {
                        continue;
                    };
                    let length = text[..head_end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if buf.len() < head_end + 4 + length {
                        continue;
                    }
                    let body = &buf[head_end + 4..head_end + 4 + length];
                    let _ = tx.send(serde_json::from_slice(body).unwrap_or(Value::Null));
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\n{headers}content-length: 0\r\nconnection: close\r\n\r\n"
                    );
                    let _ = sock.write_all(reply.as_bytes()).await;
                    return;
                }
            });
        }
    });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delivery_bridge_answers_toolcall_and_refuses_what_it_may_not_do() {
    let (ok_url, mut ok_bodies) = webhook(200).await;
    let (failing_url, _) = webhook(500).await;
    // Not allowed: a listener that must never hear anything, and one an allowed hook
    // redirects to.
    let (victim_url, mut victim_bodies) = webhook(200).await;
    let (redirecting_url, _) = webhook_with(307, &format!("location: {victim_url}\r\n")).await;
    // Allowed: the first listener's whole origin, and two listeners' /hook paths. Not
    // allowed: anything else on this host.
    let ok_origin = ok_url.trim_end_matches("/hook").to_string();
    let allowed = format!("{ok_origin},{failing_url},{redirecting_url}");

    let p = Project::offline()
        .env(delivery::WEBHOOKS_ENV, &allowed)
        .with_router();
    let node = p.start_active(&bin("delivery_node"), "/iron/tools/delivery", &[]);

    let control = ControlPlane::connect(ControlConfig {
        router: p.router().to_string(),
        domain_id: 0,
    })
    .await
    .unwrap();
    let caller_node = control.node("bridge_test", "/").unwrap();
    control.wait_for_router(&caller_node, T).await.unwrap();
    let key = CallerKey::open(p.dir.path()).unwrap();
    let tools = RosTools::new(Arc::new(caller_node), T, key.clone());
    let caller = RemoteCaller {
        caller: "newsroom/publisher".into(),
        task_id: "task-1".into(),
    };
    let call = |tool: &'static str, args: Value| {
        let (tools, caller) = (&tools, &caller);
        async move {
            tools
                .call_service(delivery::SERVICE, tool, &args, caller)
                .await
        }
    };

    // The terminal: printed by the node, recorded in the outbox.
    let out = call(
        "send_message",
        json!({"dest": "terminal", "text": "Bridge closed, two sources."}),
    )
    .await
    .expect("terminal delivery");
    assert_eq!(out["delivered"], true);
    assert_eq!(out["channel"], "terminal");
    node.wait_for("[delivery -> terminal] Bridge closed, two sources.", T);

    // An allowed webhook gets the text, with who asked.
    let out = call(
        "send_message",
        json!({"dest": ok_url, "text": "Bulletin 1"}),
    )
    .await
    .expect("webhook delivery");
    assert_eq!(out["channel"], "webhook");
    let body = tokio::time::timeout(T, ok_bodies.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["text"], "Bulletin 1");
    assert_eq!(body["caller"], "newsroom/publisher");
    assert_eq!(body["task_id"], "task-1");

    // `http://<allowed host:port>@<victim host:port>/hook` posts to the victim.
    let borrowed = format!("{ok_origin}@{}", victim_url.trim_start_matches("http://"));
    // Refusals, each an error reply in words.
    let refused = [
        (
            "send_message",
            json!({"dest": "http://127.0.0.1:9/elsewhere", "text": "x"}),
            "not an allowed webhook",
        ),
        (
            "send_message",
            json!({"dest": failing_url, "text": "x"}),
            "500",
        ),
        // An allowed address as user information, to post elsewhere.
        (
            "send_message",
            json!({"dest": borrowed, "text": "x"}),
            "user information",
        ),
        // An allowed hook that redirects: not followed.
        (
            "send_message",
            json!({"dest": redirecting_url, "text": "x"}),
            "a redirect, which is not followed",
        ),
        // A text prefix of an allowed address is not the address.
        (
            "send_message",
            json!({"dest": format!("{failing_url}s"), "text": "x"}),
            "not an allowed webhook",
        ),
        ("send_message", json!({"dest": "terminal"}), "needs `text`"),
        (
            "send_message",
            json!({"dest": 7, "text": "x"}),
            "`dest` must be a string",
        ),
        (
            "delete_everything",
            json!({}),
            "no tool \"delete_everything\"",
        ),
        (
            "send_message",
            json!(["not", "an", "object"]),
            "JSON object",
        ),
    ];
    for (tool, args, why) in refused {
        let err = call(tool, args.clone())
            .await
            .expect_err(&format!("{tool} {args} must be refused"))
            .to_string();
        assert!(
            err.contains(why),
            "{tool} {args}: {err:?} should say {why:?}"
        );
    }

    assert!(
        victim_bodies.try_recv().is_err(),
        "nothing reached a listener that is not allowed"
    );

    // Still serving; the outbox holds exactly the two sends, in order.
    call("send_message", json!({"text": "after the refusals"}))
        .await
        .expect("still serving");
    let outbox = std::fs::read_to_string(p.path("outbox.jsonl")).unwrap();
    let records: Vec<Value> = outbox
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let texts: Vec<&str> = records
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "Bridge closed, two sources.",
            "Bulletin 1",
            "after the refusals"
        ]
    );
    assert_eq!(records[1]["dest"], ok_url);
    assert!(records.iter().all(|r| r["ts_ms"].as_u64().unwrap() > 0));

    // Someone on the graph without this deployment's caller key cannot send as the
    // publisher: refused before anything is done, and nothing reaches the outbox.
    let sent = || {
        std::fs::read_to_string(p.path("outbox.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    let before = sent();
    let stranger = tempfile::tempdir().unwrap();
    let forged = RosTools::new(
        Arc::new(control.node("bridge_forger", "/").unwrap()),
        T,
        CallerKey::open(stranger.path()).unwrap(),
    )
    .call_service(
        delivery::SERVICE,
        "send_message",
        &json!({"text": "FORGED", "dest": "terminal"}),
        &caller,
    )
    .await
    .expect_err("a forged caller is refused")
    .to_string();
    assert!(
        forged.contains("caller \"newsroom/publisher\" is not proven"),
        "{forged}"
    );
    assert_eq!(sent(), before);

    // An inactive bridge does not serve: the call fails in words, within its bound.
    p.iron_ok(&["lifecycle", "set", "/iron/tools/delivery", "deactivate"]);
    let err = RosTools::new(
        Arc::new(control.node("bridge_test_2", "/").unwrap()),
        Duration::from_secs(5),
        key,
    )
    .call_service(
        delivery::SERVICE,
        "send_message",
        &json!({"text": "x"}),
        &caller,
    )
    .await
    .expect_err("an inactive bridge answers nothing");
    assert!(
        matches!(
            err,
            RemoteError::Unreachable { .. } | RemoteError::TimedOut { .. }
        ),
        "{err}"
    );
}
