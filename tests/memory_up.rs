//! The projector as a node under `iron up`, on both backends: an event emitted by one process is
//! projected by the projector process and found by `iron recall` and `iron log replay`.

mod support;

use std::time::Duration;

use iron::{
    core::{
        config::{Backend, Config},
        envelope::Envelope,
        event_kind::EventKind,
    },
    memory::emit,
    spine::durable::AnyLog,
};
use support::{Proc, bin, free_port};

const T: Duration = Duration::from_secs(30);

fn iron(envs: &[(&str, String)], args: &[&str]) -> String {
    support::run_iron_ok(args, envs.iter().map(|(k, v)| (*k, v.as_str())))
}

async fn projected_through_up(nats: Option<&support::nats::NatsServer>) {
    let state = tempfile::tempdir().unwrap();
    let list = state.path().join("list.yaml");
    std::fs::write(
        &list,
        "nodes:\n  - name: projector\n    namespace: /iron/memory\n    executable: projector_node\n",
    )
    .unwrap();
    let router = format!("tcp/127.0.0.1:{}", free_port());
    let mut envs = vec![
        ("IRON_ROUTER", router.clone()),
        ("IRON_STATE_DIR", state.path().display().to_string()),
    ];
    let mut args = vec![
        "up".to_string(),
        "--launch".into(),
        list.display().to_string(),
    ];
    if let Some(n) = nats {
        args.push("--nats".into());
        args.push(n.url());
        envs.push(("IRON_NATS_MONITOR", n.monitor()));
    }
    let env_refs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut up = Proc::spawn("up", &bin("iron"), &arg_refs, &env_refs);
    up.wait_for("/iron/memory/projector: active", T);

    // Another process writes to the same log.
    let mut config = Config {
        state_dir: state.path().to_path_buf(),
        ..Config::default()
    };
    if let Some(n) = nats {
        config.durable.backend = Backend::Jetstream;
        config.durable.nats_url = n.url();
    }
    let log = AnyLog::open(&config).await.unwrap();
    let envelope = Envelope::new(
        "default",
        ["facts", "newsroom", "analyst"],
        "test",
        EventKind::FactLearned,
        serde_json::json!({"text": "the ministry confirmed the bridge closure"}),
    );
    emit(&log, &envelope).await.unwrap();

    let deadline = std::time::Instant::now() + T;
    loop {
        let found = iron(
            &envs,
            &["recall", "bridge closure", "--scope", "facts/newsroom"],
        );
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
    let replay = iron(&envs, &["log", "replay", "facts/newsroom/analyst"]);
    assert!(replay.contains("fact_learned"), "{replay}");
    let elsewhere = iron(&envs, &["recall", "bridge closure", "--scope", "facts/dev"]);
    assert!(
        !elsewhere.contains("fact_learned"),
        "scope must filter: {elsewhere}"
    );

    up.signal(libc::SIGINT);
    assert!(up.wait_exit(T).expect("up exits").success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projector_node_on_the_embedded_log() {
    projected_through_up(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projector_node_on_jetstream() {
    let server = support::nats::NatsServer::start();
    projected_through_up(Some(&server)).await;
}
