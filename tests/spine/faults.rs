//! Faults and bad input on a real nats-server: SIGKILL while publishing, a changed stream
//! configuration, a server without fsync, foreign publishers, oversized payloads.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use iron::core::config::{Backend, Config};
use iron::core::durable::{ConsumerSpec, EventLog, LogConsumer, StartAt};
use iron::core::envelope::Envelope;
use iron::core::event_kind::EventKind;
use iron::memory::emit::{EmitError, EmitPolicy, Emitter};
use iron::memory::projector::{self, ProjectorDeps};
use iron::memory::recall::Recall;
use iron::spine::durable::bootstrap::{self, BootstrapError, BootstrapOptions};
use iron::spine::durable::{
    AnyLog, Embedded, EmbeddedOptions, JetStream, JetStreamOptions, StreamSpec,
};
use serde_json::json;
use support::eventually;
use support::nats::NatsServer;
use tokio_util::sync::CancellationToken;

async fn connect(server: &NatsServer, timeout: Duration) -> JetStream {
    JetStream::connect(
        &server.url(),
        JetStreamOptions {
            timeout,
            name: Some("faults".into()),
            ..JetStreamOptions::default()
        },
    )
    .await
    .unwrap()
}

fn opts(server: &NatsServer) -> BootstrapOptions {
    BootstrapOptions {
        monitor: Some(server.monitor()),
        quiet: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_while_publishing_loses_no_acked_event_and_duplicates_none() {
    let mut server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(1)).await;
    bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap();
    let emitter = Emitter::new(js.clone()).with_policy(EmitPolicy {
        attempts: 100,
        backoff: Duration::from_millis(100),
    });
    let total = 300;
    let events: Vec<Envelope> = (0..total)
        .map(|i| {
            Envelope::new(
                "acme",
                ["facts", "crash"],
                "writer",
                EventKind::FactLearned,
                json!({ "i": i }),
            )
        })
        .collect();
    let (acked_tx, mut acked_rx) = tokio::sync::mpsc::unbounded_channel();
    let writer = {
        let events = events.clone();
        tokio::spawn(async move {
            for event in &events {
                // Each emit keeps its id across its own retries; it returns only after an ack.
                let emitted = emitter.emit(event).await.expect("emit eventually succeeds");
                acked_tx.send(emitted.event_id).unwrap();
            }
        })
    };
    // Kill the server once a third of the events are acknowledged, mid-stream.
    let mut acked = Vec::new();
    while acked.len() < total / 3 {
        acked.push(acked_rx.recv().await.unwrap());
    }
    server.kill9();
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.restart();
    tokio::time::timeout(Duration::from_secs(120), writer)
        .await
        .unwrap()
        .unwrap();
    while let Ok(id) = acked_rx.try_recv() {
        acked.push(id);
    }
    assert_eq!(acked.len(), total);

    let js = connect(&server, Duration::from_secs(5)).await;
    let stored = js.read("MEM", "mem.>", 1, 10 * total).await.unwrap();
    let mut copies: HashMap<String, usize> = HashMap::new();
    for message in &stored {
        let envelope: Envelope = serde_json::from_slice(&message.payload).unwrap();
        assert_eq!(message.msg_id.as_deref(), Some(envelope.event_id.as_str()));
        *copies.entry(envelope.event_id.to_string()).or_default() += 1;
    }
    for id in &acked {
        assert_eq!(
            copies.get(id.as_str()),
            Some(&1),
            "acked event {id} must be stored exactly once"
        );
    }
    assert_eq!(
        stored.len(),
        total,
        "nothing but the emitted events, each once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_creates_then_verifies_and_checks_fsync() {
    let server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(5)).await;
    let first = bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap();
    assert_eq!(first.created, vec!["MEM", "JOBS", "LOGS"]);
    assert_eq!(
        first.sync_always,
        Some(true),
        "the shipped config fsyncs before acking"
    );
    assert!(
        first.server_version.starts_with("2.15"),
        "{}",
        first.server_version
    );
    let second = bootstrap::bootstrap(&js, &StreamSpec::all(), &BootstrapOptions::default())
        .await
        .unwrap();
    assert_eq!(second.verified, vec!["MEM", "JOBS", "LOGS"]);
    assert!(second.created.is_empty());
    assert_eq!(second.sync_always, None, "no monitoring address, no check");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_reports_a_server_that_does_not_fsync() {
    let server =
        NatsServer::start_with_config_text("jetstream {\n  store_dir: $IRON_NATS_STORE_DIR\n}\n");
    let js = connect(&server, Duration::from_secs(5)).await;
    let report = bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap();
    assert_eq!(report.sync_always, Some(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_stream_with_one_field_changed_refuses_start() {
    let server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(5)).await;
    let mut changed = StreamSpec::mem().server_config();
    changed["duplicate_window"] = json!(60_000_000_000u64);
    js.create_stream_raw("MEM", &changed).await.unwrap();
    let err = bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap_err();
    match &err {
        BootstrapError::StreamMismatch { stream, diffs } => {
            assert_eq!(stream, "MEM");
            assert_eq!(diffs.len(), 1, "{diffs:?}");
            assert_eq!(diffs[0].field, "duplicate_window");
            assert_eq!(diffs[0].declared, json!(120_000_000_000u64));
            assert_eq!(diffs[0].found, json!(60_000_000_000u64));
        }
        other => panic!("expected a mismatch, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("field `duplicate_window`: declared 120 s, found 60 s"),
        "durations in seconds: {text}"
    );
    // The live stream was not touched.
    assert_eq!(
        js.stream_config("MEM").await.unwrap().unwrap()["duplicate_window"],
        json!(60_000_000_000u64)
    );

    let mut no_deny = StreamSpec::jobs().server_config();
    no_deny["deny_purge"] = json!(false);
    let server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(5)).await;
    js.create_stream_raw("JOBS", &no_deny).await.unwrap();
    let err = bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("deny_purge"), "{err}");
}

#[tokio::test]
async fn the_embedded_log_refuses_a_changed_stream_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    Embedded::open(&path, &StreamSpec::all(), EmbeddedOptions::default())
        .await
        .unwrap();
    let mut changed = StreamSpec::mem();
    changed.duplicate_window = Duration::from_secs(60);
    let err = Embedded::open(&path, &[changed], EmbeddedOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, BootstrapError::StreamMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("duplicate_window"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_publishers_and_oversized_payloads() {
    let server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(5)).await;
    bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap();
    // A foreign publisher: plain NATS publish, no message id, not JSON.
    js.client()
        .publish("mem.foreign.sensor", "temperature=21C".into())
        .await
        .unwrap();
    js.client().flush().await.unwrap();
    let log = js.clone();
    eventually(
        "the foreign message to be stored",
        Duration::from_secs(10),
        || {
            let log = log.clone();
            async move { (log.last_sequence("MEM").await.unwrap() == 1).then_some(()) }
        },
    )
    .await;
    // Over the server's max_payload (1 MiB in config/nats-server.conf): a clear error.
    let huge = Envelope::new(
        "acme",
        ["facts"],
        "w",
        EventKind::FactLearned,
        json!({"blob": "x".repeat(js.max_message_size())}),
    );
    let err = Emitter::new(js.clone()).emit(&huge).await.unwrap_err();
    assert!(matches!(err, EmitError::TooLarge { .. }), "{err}");
    Emitter::new(js.clone())
        .emit(&Envelope::new(
            "acme",
            ["facts"],
            "w",
            EventKind::FactLearned,
            json!({"text": "after the foreign one"}),
        ))
        .await
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("projection.db");
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(projector::run(
        ProjectorDeps::new(js.clone(), &db),
        shutdown.clone(),
    ));
    eventually(
        "the projector to pass the foreign message",
        Duration::from_secs(30),
        || {
            let db = db.clone();
            async move { (Recall::open(&db).ok()?.projected_seq("MEM").ok()? >= 2).then_some(()) }
        },
    )
    .await;
    let recall = Recall::open(&db).unwrap();
    assert_eq!(recall.count().unwrap(), 1);
    let skipped = recall.skipped().unwrap();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].1, "mem.foreign.sensor");
    shutdown.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_tail_follows_new_events() {
    let server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(5)).await;
    bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap();
    let emitter = Emitter::new(js.clone());
    emitter
        .emit(&Envelope::new(
            "acme",
            ["facts"],
            "w",
            EventKind::FactLearned,
            json!({"text": "before"}),
        ))
        .await
        .unwrap();
    // Follow from the next sequence so the test does not race the subscription.
    let tail = {
        let js = js.clone();
        tokio::spawn(async move {
            let mut out = Vec::new();
            let printed = iron::memory::cli::log_tail(
                &js,
                "MEM",
                "mem.>",
                StartAt::Sequence(2),
                Some(2),
                &mut out,
                CancellationToken::new(),
            )
            .await
            .unwrap();
            (printed, String::from_utf8(out).unwrap())
        })
    };
    emitter
        .emit(&Envelope::new(
            "acme",
            ["facts", "live"],
            "w",
            EventKind::Decision,
            json!({"text": "after"}),
        ))
        .await
        .unwrap();
    js.client()
        .publish("mem.foreign.x", "raw bytes".into())
        .await
        .unwrap();
    let (printed, out) = tokio::time::timeout(Duration::from_secs(30), tail)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(printed, 2);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("2 decision acme:facts/live w "),
        "{out}"
    );
    assert!(lines[0].ends_with(r#"{"text":"after"}"#), "{out}");
    assert_eq!(lines[1], "3 ? mem.foreign.x 9 bytes");
}

/// A server that answers nothing for longer than two heartbeats (frozen with SIGSTOP, as a
/// stalled host would be) costs a consumer empty waits, not its life: it pulls again and
/// gets what is published after. (It ended the projector during a `bench log` run.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_outlives_missed_heartbeats() {
    let server = NatsServer::start();
    let js = JetStream::connect(
        &server.url(),
        JetStreamOptions {
            timeout: Duration::from_secs(10),
            name: Some("faults".into()),
            idle_heartbeat: Duration::from_millis(300),
            ..JetStreamOptions::default()
        },
    )
    .await
    .unwrap();
    bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap();
    let mut consumer = js
        .consumer(ConsumerSpec {
            stream: "MEM".into(),
            durable: Some("heartbeats".into()),
            filter_subject: "mem.>".into(),
            start: StartAt::First,
            ack_wait: Duration::from_secs(30),
        })
        .await
        .unwrap();
    assert!(
        consumer
            .next(Duration::from_millis(100))
            .await
            .unwrap()
            .is_none()
    );
    server.pause();
    // Long enough for the client to see two heartbeats missing (0.6 s) and more.
    let frozen = tokio::time::Instant::now();
    while frozen.elapsed() < Duration::from_millis(1500) {
        match consumer.next(Duration::from_millis(200)).await {
            Ok(None) => {}
            Ok(Some((delivery, _))) => panic!("delivered while frozen: {:?}", delivery.message),
            Err(e) => panic!("while the server is frozen: {e}"),
        }
    }
    server.resume();
    let emitted = Emitter::new(js.clone())
        .emit(&Envelope::new(
            "acme",
            ["facts"],
            "w",
            EventKind::FactLearned,
            json!({"text": "after the freeze"}),
        ))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let delivered = loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing delivered after the freeze"
        );
        match consumer.next(Duration::from_millis(500)).await {
            Ok(Some((delivery, _ack))) => break delivery,
            Ok(None) => continue,
            Err(e) => panic!("after the freeze: {e}"),
        }
    };
    assert_eq!(delivered.message.seq, emitted.seq);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_prints_every_figure() {
    let server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(5)).await;
    let dir = tempfile::tempdir().unwrap();
    let options = iron::bench::log::BenchOptions {
        events: 30,
        burst: 200,
        payload_bytes: 100,
        scratch_dir: dir.path().to_path_buf(),
    };
    let mut out = Vec::new();
    iron::bench::log::log(&js, &options, &mut out)
        .await
        .unwrap();
    let out = String::from_utf8(out).unwrap();
    for name in [
        "raw_publish_throughput",
        "raw_publish_p50",
        "raw_publish_p99",
        "emit_throughput",
        "emit_p50",
        "emit_p99",
        "emit_vs_raw_throughput_ratio",
        "emit_vs_raw_p50_ratio",
        "embedded_emit_throughput",
        "sqlite_insert_throughput",
        "embedded_vs_sqlite_throughput_ratio",
        "embedded_vs_sqlite_p50_ratio",
        "sqlite_insert_off_runtime_throughput",
        "embedded_vs_sqlite_off_runtime_throughput_ratio",
        "embedded_vs_sqlite_off_runtime_p50_ratio",
        "embedded_emit_8_writers_throughput",
        "embedded_8_writers_vs_one_ratio",
        "projector_throughput",
        "sqlite_same_rows_batched_throughput",
        "sqlite_plain_batched_insert_throughput",
        "projector_vs_same_rows_ratio",
        "projector_vs_plain_batched_ratio",
        "projector_burst",
        "projector_burst_written_in",
        "projector_lag_after_burst",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("bench log.{name} ")))
            .unwrap_or_else(|| panic!("no line for {name} in:\n{out}"));
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 4, "{line}");
        assert!(fields[2].parse::<f64>().unwrap() > 0.0, "{line}");
    }
    assert!(
        js.stream_config(iron::bench::log::BENCH_STREAM)
            .await
            .unwrap()
            .is_none(),
        "bench cleans up its stream"
    );
}

/// A launch list of two nodes that open the durable plane.
const TWO_NODES: &str = "nodes:\n  - {name: clock, namespace: /iron/jobs, executable: jobs_clock, autostart: true}\n  - {name: projector, namespace: /iron/memory, executable: projector_node, autostart: true}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iron_up_refuses_a_plane_that_refuses_and_warns_of_no_fsync_once() {
    // A drifted stream: iron up exits with the refusal, durations in seconds, no node started.
    let server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(5)).await;
    let mut changed = StreamSpec::mem().server_config();
    changed["duplicate_window"] = json!(60_000_000_000u64);
    js.create_stream_raw("MEM", &changed).await.unwrap();
    let p = support::project::Project::offline().env("IRON_NATS_MONITOR", &server.monitor());
    let mut up = p.up(
        TWO_NODES,
        &["--aem", "no-such-dir", "--nats", &server.url()],
    );
    let status = up
        .wait_exit(Duration::from_secs(60))
        .expect("iron up exits when the plane refuses");
    assert!(!status.success());
    let out = up.output().join("\n");
    assert!(
        out.contains("the durable plane refused to start: stream MEM differs")
            && out.contains("field `duplicate_window`: declared 120 s, found 60 s"),
        "{out}"
    );
    assert!(!out.contains("started"), "no node was started:\n{out}");

    // A server that does not fsync: said once, by iron up, not once per node.
    let lax =
        NatsServer::start_with_config_text("jetstream {\n  store_dir: $IRON_NATS_STORE_DIR\n}\n");
    let p = support::project::Project::offline().env("IRON_NATS_MONITOR", &lax.monitor());
    let up = p.up(TWO_NODES, &["--aem", "no-such-dir", "--nats", &lax.url()]);
    up.wait_for("/iron/memory/projector: active", Duration::from_secs(60));
    up.wait_for("/iron/jobs/clock: active", Duration::from_secs(60));
    let warnings = up.matching("does not fsync before acknowledging");
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_count_is_declared_and_verified_like_any_field() {
    let server = NatsServer::start();
    let js = connect(&server, Duration::from_secs(5)).await;
    bootstrap::bootstrap(&js, &StreamSpec::all(), &opts(&server))
        .await
        .unwrap();
    // The streams hold one copy; a deployment now declaring three is refused, the field named.
    let err = bootstrap::bootstrap(&js, &StreamSpec::all_replicated(3), &opts(&server))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("field `num_replicas`: declared 3, found 1"),
        "{text}"
    );
    // Through the configuration: out of range, or more than one copy on the embedded log.
    let dir = tempfile::tempdir().unwrap();
    for (backend, replicas, why) in [
        (Backend::Jetstream, 0, "1 to 5 copies"),
        (Backend::Jetstream, 6, "1 to 5 copies"),
        (Backend::Embedded, 3, "the embedded log keeps one copy"),
    ] {
        let mut config = Config {
            state_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        config.durable.backend = backend;
        config.durable.nats_url = server.url();
        config.durable.replicas = replicas;
        match AnyLog::open(&config).await {
            Err(e) => assert!(e.to_string().contains(why), "{replicas}: {e}"),
            Ok(_) => panic!("{replicas} replicas on {backend:?} opened"),
        }
    }
}
