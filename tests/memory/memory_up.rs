//! The projector as a node under `iron up`, on both backends: an event emitted by one process is
//! projected by the projector process and found by `iron recall` and `iron log replay`.

use crate::support;

use std::time::Duration;

use iron::{
    core::{envelope::Envelope, event_kind::EventKind},
    memory::emit,
};
use support::project::Project;

const T: Duration = Duration::from_secs(30);

async fn projected_through_up(p: Project) {
    let mut up = p.up(
        "nodes:\n  - name: projector\n    namespace: /iron/memory\n    executable: projector_node\n",
        &[],
    );
    up.wait_for("/iron/memory/projector: active", T);

    // Another process writes to the same log.
    let envelope = Envelope::new(
        "default",
        ["facts", "newsroom", "analyst"],
        "test",
        EventKind::FactLearned,
        serde_json::json!({"text": "the ministry confirmed the bridge closure"}),
    );
    emit(&p.log().await, &envelope).await.unwrap();

    let deadline = std::time::Instant::now() + T;
    loop {
        let found = p.iron_ok(&["recall", "bridge closure", "--scope", "facts/newsroom"]);
        if found.contains("fact_learned") {
            assert!(found.contains("bridge closure"), "{found}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never projected:\n{}",
            up.output().join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let replay = p.iron_ok(&["log", "replay", "facts/newsroom/analyst"]);
    assert!(replay.contains("fact_learned"), "{replay}");
    let elsewhere = p.iron_ok(&["recall", "bridge closure", "--scope", "facts/dev"]);
    assert!(
        !elsewhere.contains("fact_learned"),
        "scope must filter: {elsewhere}"
    );

    up.signal(libc::SIGINT);
    assert!(up.wait_exit(T).expect("up exits").success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projector_node_on_the_embedded_log() {
    projected_through_up(Project::offline()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projector_node_on_jetstream() {
    projected_through_up(Project::offline().with_nats()).await;
}
