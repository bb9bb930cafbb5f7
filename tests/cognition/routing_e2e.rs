//! Routing with a model, across real processes: the engine asks the configured router model
//! (a fake OpenAI-compatible server over real HTTP) to split an instruction; it answers with
//! two assignments, and the engine runs them in order, each on its own spawned expert, and
//! returns both answers. A router answer naming an unknown expert falls back to offline
//! scoring instead of being trusted.

use crate::support;
use crate::support_llm;

use std::time::Duration;

use iron::protocol::payload::{RouteMethod, RoutingDecided};
use serde_json::json;
use support::{bin, project::Project};
use support_llm::{FakeServer, Reply, openai_text};

const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_model_splits_an_instruction_and_each_part_runs_in_order() {
    let router = FakeServer::start(vec![
        Reply::ok(openai_text(
            &json!({"routes": [
                {"domain": "newsroom/analyst", "instruction": "Check whether the harbour bridge is closed."},
                {"domain": "core/writer", "instruction": "Write two lines for the evening bulletin about it."},
            ]})
            .to_string(),
        )),
        // The second task: a domain the catalog does not have.
        Reply::ok(openai_text(
            &json!({"routes": [{"domain": "newsroom/astrologer", "instruction": "cross-check the bridge"}]})
                .to_string(),
        )),
    ])
    .await;
    let p = Project::offline().with_router();
    p.write("script.yaml", "turns:\n  - text: \"Done as asked.\"\n");
    p.set_config(&format!(
        "models:\n  backends:\n    offline:\n      kind: scripted\n      script: {}\n    small:\n      kind: openai\n      base_url: {}/v1\n      model: fake-small\n      timeout_secs: 10\n  logical:\n    router: [small]\n    fast: [offline]\n    standard: [offline]\n    strong: [offline]\n  router: router\n",
        p.path("script.yaml").display(),
        router.url()
    ));
    p.build_shipped_catalog();
    let engine = p.start_active(&bin("engine_node"), "/iron/engine", &[]);
    engine.wait_for("routing with model router", T);

    let send = |instruction: &str| p.iron(&["task", "send", "--wait", "60", instruction]);
    let out = send("is the harbour bridge closed? then write it up for the bulletin");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        engine.output().join("\n")
    );
    assert!(
        stdout.contains("[newsroom/analyst] Done as asked.")
            && stdout.contains("[core/writer] Done as asked."),
        "both parts answered: {stdout}"
    );
    let analyst = stdout.find("[newsroom/analyst]").unwrap();
    let writer = stdout.find("[core/writer]").unwrap();
    assert!(analyst < writer, "in the routed order: {stdout}");

    // The router model saw the instruction and the catalog's experts.
    let requests = router.requests();
    let asked = requests[0].body["messages"].to_string();
    assert!(
        asked.contains("newsroom/analyst") && asked.contains("harbour bridge"),
        "{asked}"
    );

    // An unusable answer: offline scoring decides, and says so.
    let out = send("cross-check that the harbour bridge is closed");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    drop(engine);
    let routed: Vec<RoutingDecided> = support::read(&p.events("routing_decided").await);
    assert_eq!(routed.len(), 3, "{routed:#?}");
    assert_eq!(routed[0].domain, "newsroom/analyst");
    assert_eq!(routed[0].part, 1);
    assert_eq!(routed[0].of, 2);
    assert_eq!(
        routed[0].by,
        RouteMethod::Model {
            model: "router".into()
        }
    );
    assert_eq!(routed[1].domain, "core/writer");
    assert_eq!(routed[1].part, 2);
    let RouteMethod::OfflineFallback { reason, .. } = &routed[2].by else {
        panic!("not an offline fallback: {:?}", routed[2]);
    };
    assert!(reason.contains("astrologer"), "{:?}", routed[2]);
    assert_eq!(routed[2].domain, "newsroom/analyst");
}
