//! The engine reads memory before it routes, across real processes (router, projector, inbox,
//! engine, spawned experts; models behind a fake OpenAI-compatible server): the second message
//! of a session reaches its expert with the first turn and a recalled fact in the memory
//! block, and `routing_decided` records what was known, including the experts' record.

use crate::support;
use crate::support_llm;

use std::time::Duration;

use iron::{
    core::{envelope::Envelope, event_kind::EventKind},
    memory::{emit, recall::Recall},
    protocol::payload::{RoutingDecided, Score},
};
use serde_json::json;
use support::{eventually, project::Project};
use support_llm::{FakeServer, Reply, openai_text};

const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_turn_is_routed_and_answered_knowing_the_first() {
    let fake = FakeServer::start(vec![
        Reply::ok(openai_text("Yes: the harbour bridge is closed.")),
        Reply::ok(openai_text("Since Monday, per the port authority.")),
    ])
    .await;
    let p = Project::openai(&fake.url());
    p.build_shipped_catalog();

    // A fact already in memory, under facts/.
    let log = p.log().await;
    emit(
        &log,
        &Envelope::new(
            "default",
            ["facts", "newsroom"],
            "newsroom/analyst",
            EventKind::FactLearned,
            json!({"fact": "The harbour bridge closure was announced by the port authority on Monday."}),
        ),
    )
    .await
    .unwrap();

    let mut up = p.up(
        "nodes:\n  - name: projector\n    namespace: /iron/memory\n    executable: projector_node\n  - name: inbox\n    executable: inbox_node\n  - name: engine\n    executable: engine_node\n",
        &[],
    );
    up.wait_for("up: 3 node(s) running", T);
    let send = |text: &str| {
        p.iron_ok(&[
            "inbox", "send", "--source", "terminal", "--user", "ana", text,
        ]);
    };

    send("is the harbour bridge closed?");
    up.wait_for("Yes: the harbour bridge is closed.", T);
    // The projector has the first task's judgement before the second message goes in.
    let projection = p.path("projection.db");
    eventually("the first task in the projection", T, || async {
        let recall = Recall::open(&projection).ok()?;
        let card = recall.scorecard("default").ok()?;
        (!card.is_empty()).then_some(())
    })
    .await;
    send("since when exactly? check the harbour notice");
    up.wait_for("Since Monday, per the port authority.", T);
    up.signal(libc::SIGINT);
    assert!(up.wait_exit(T).expect("up exits").success());

    // The second expert's prompt holds the first turn and the fact, marked as data.
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let first = requests[0].body["messages"][0]["content"].to_string();
    assert!(
        !first.contains("Earlier in this conversation"),
        "nothing earlier for the first turn: {first}"
    );
    let second = requests[1].body["messages"][0]["content"].to_string();
    assert!(
        second.contains("Earlier in this conversation the user said")
            && second.contains("is the harbour bridge closed?"),
        "{second}"
    );
    assert!(
        second.contains("announced by the port authority on Monday"),
        "{second}"
    );
    assert!(
        second.contains("context_data"),
        "memory is wrapped as data: {second}"
    );

    // What the engine knew, on the log.
    let routed: Vec<RoutingDecided> =
        support::read(&support::mem_events_of(&log, "routing_decided").await);
    assert_eq!(routed.len(), 2);
    assert_eq!(routed[0].context.turns, 0);
    let known = &routed[1].context;
    assert_eq!(known.turns, 1, "{known:?}");
    assert_eq!(known.facts, 1, "{known:?}");
    let first = Score {
        domain: routed[0].domain.clone(),
        answered: 1,
        judged: 1,
    };
    assert_eq!(known.scorecard.first(), Some(&first), "{known:?}");
}
