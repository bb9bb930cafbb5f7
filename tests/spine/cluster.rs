//! Beyond one machine, proved on one: a three-server JetStream cluster (streams kept in three
//! copies) and two linked Zenoh routers, with `iron up` split across them — the engine and its
//! experts on one router, the inbox, jobs and delivery on the other. A question crosses both
//! routers; the server leading the MEM stream (asked through the JetStream API) is killed with
//! SIGKILL while events are being written; another takes the lead, every event the log
//! acknowledged is still there afterwards, and the next question is answered.

use crate::support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iron::core::config::Config;
use iron::core::durable::{DurableError, EventLog};
use iron::core::envelope::Envelope;
use iron::core::event_kind::EventKind;
use iron::spine::durable::{AnyLog, JetStream, JetStreamOptions};
use support::nats::NatsServer;
use support::{Proc, bin, eventually, free_port, project::Project, wait_until};

const T: Duration = Duration::from_secs(90);

/// The server leading the MEM stream's RAFT group, asked through the JetStream API
/// (`$JS.API.STREAM.INFO.MEM`). When it is `spared`, the leader is asked to step down
/// (`$JS.API.STREAM.LEADER.STEPDOWN.MEM`) until another server leads.
async fn mem_leader(urls: &str, spared: Option<&str>) -> String {
    let servers: Vec<async_nats::ServerAddr> =
        urls.split(',').map(|u| u.parse().unwrap()).collect();
    let client = async_nats::connect(servers).await.unwrap();
    let js = async_nats::jetstream::new(client.clone());
    let deadline = std::time::Instant::now() + T;
    loop {
        let leader = match js.get_stream("MEM").await {
            Ok(mut stream) => stream
                .info()
                .await
                .ok()
                .and_then(|i| i.cluster.as_ref().and_then(|c| c.leader.clone())),
            Err(_) => None,
        };
        match leader {
            Some(l) if Some(l.as_str()) != spared => return l,
            Some(_) => {
                let stepdown = "$JS.API.STREAM.LEADER.STEPDOWN.MEM";
                let _ = client.request(stepdown, "".into()).await;
            }
            None => {}
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no leader of MEM other than {spared:?} within {T:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A router at `listen`, linked to the routers at `connect`.
fn router(tag: &str, listen: &str, connect: &[&str]) -> Proc {
    let mut args = vec!["router", "--listen", listen];
    for c in connect {
        args.extend(["--connect", c]);
    }
    let r = Proc::spawn(tag, &bin("iron"), &args, &[]);
    r.wait_for("listening on", Duration::from_secs(20));
    r
}

/// The project's environment with `IRON_ROUTER` set to `router`.
fn on_router<'a>(p: &'a Project, router: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut envs: Vec<(&str, &str)> = p
        .envs()
        .into_iter()
        .filter(|(k, _)| *k != "IRON_ROUTER")
        .collect();
    envs.push(("IRON_ROUTER", router));
    envs
}

/// `iron ask question` through the router at `router`, with the project's environment.
fn ask(p: &Project, router: &str, question: &str) -> String {
    let out = std::process::Command::new(bin("iron"))
        .args(["ask", "--wait", "60", question])
        .envs(on_router(p, router))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "iron ask {question:?} through {router} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The ids of the events this test wrote to MEM.
async fn notes(log: &JetStream) -> Result<BTreeSet<String>, DurableError> {
    let mut ids = BTreeSet::new();
    let mut from = 1;
    loop {
        let page = log.read("MEM", "mem.>", from, 10_000).await?;
        let Some(last) = page.last() else {
            return Ok(ids);
        };
        from = last.seq + 1;
        ids.extend(
            page.iter()
                .filter_map(|m| serde_json::from_slice::<Envelope>(&m.payload).ok())
                .filter(|e| e.actor == "cluster-test")
                .map(|e| e.event_id.to_string()),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_deployment_on_a_cluster_loses_nothing_acknowledged_when_a_server_dies() {
    let mut nats = NatsServer::cluster(3);
    wait_until(
        T,
        || nats.iter().all(|s| s.jetstream_current()),
        || {
            format!(
                "the cluster elected no JetStream leader:\n{}",
                nats.iter()
                    .map(|s| s.log())
                    .collect::<Vec<_>>()
                    .join("\n---\n")
            )
        },
    );
    let urls = nats.iter().map(|s| s.url()).collect::<Vec<_>>().join(",");
    let p = Project::offline()
        .env("IRON_DURABLE", "jetstream")
        .env("IRON_NATS_URL", &urls)
        .env("IRON_NATS_MONITOR", &nats[0].monitor())
        .env("IRON_DURABLE_REPLICAS", "3");

    // Two routers, the second linked to the first, as on two hosts.
    let (a, b) = (
        format!("tcp/127.0.0.1:{}", free_port()),
        format!("tcp/127.0.0.1:{}", free_port()),
    );
    let _router_a = router("router-a", &a, &[]);
    let _router_b = router("router-b", &b, &[&a]);

    // Host A: the engine (it spawns each expert beside itself). Host B: the inbox, the
    // delivery bridge and the jobs. Each `iron up` uses its own router and starts none.
    let node = |name: &str, ns: &str, exe: &str, args: &str| {
        format!(
            "  - name: {name}\n    namespace: {ns}\n    executable: {exe}\n    args: [{args}]\n    autostart: true\n    respawn: true\n"
        )
    };
    let list_a = format!("nodes:\n{}", node("engine", "/iron", "engine_node", ""));
    let list_b = format!(
        "nodes:\n{}{}{}{}",
        node("delivery", "/iron/tools", "delivery_node", ""),
        node("inbox", "/iron", "inbox_node", ""),
        node("clock", "/iron/jobs", "jobs_clock", ""),
        node(
            "runner",
            "/iron/jobs/newsroom",
            "jobs_runner",
            "--mesh, newsroom"
        ),
    );
    let up = |tag: &str, list: &str, router: &str| {
        let path = p.write(&format!("{tag}.yaml"), list).display().to_string();
        Proc::spawn(
            tag,
            &bin("iron"),
            &["up", "--no-router", "--launch", &path],
            &on_router(&p, router),
        )
    };
    let up_a = up("up-a", &list_a, &a);
    up_a.wait_for("node(s) running", T);
    let up_b = up("up-b", &list_b, &b);
    up_b.wait_for("node(s) running", T);
    // A question sent on host B is routed and answered by an expert on host A.
    let first = ask(&p, &b, "what is the status of the harbour?");
    assert!(!first.trim().is_empty());

    // Events written while one server dies: each one the log acknowledged is kept.
    let config = {
        let mut c = Config::default();
        c.apply_env(|k| {
            p.envs()
                .into_iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        })
        .unwrap();
        c.durable.checked = true;
        c
    };
    let log = AnyLog::open(&config).await.unwrap();
    // The streams were made with three copies, one on each server.
    let AnyLog::JetStream(js) = &log else {
        panic!("IRON_DURABLE=jetstream opened another backend")
    };
    for stream in ["MEM", "JOBS", "LOGS"] {
        let info = js
            .context()
            .get_stream(stream)
            .await
            .unwrap()
            .info()
            .await
            .unwrap()
            .clone();
        assert_eq!(info.config.num_replicas, 3, "{stream}");
        let cluster = info.cluster.expect("a clustered stream");
        assert_eq!(cluster.replicas.len() + 1, 3, "{stream}: {cluster:?}");
    }
    let acked = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (log, acked, refused, stop) = (log, acked.clone(), refused.clone(), stop.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let e = Envelope::new(
                    "default",
                    ["tests", "cluster"],
                    "cluster-test",
                    EventKind::ChatTurn,
                    serde_json::json!({"role": "user", "text": format!("note {i}")}),
                );
                match iron::memory::emit(&log, &e).await {
                    Ok(done) => acked.lock().unwrap().push(done.event_id.to_string()),
                    Err(err) => refused.lock().unwrap().push(err.to_string()),
                }
                i += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let acks = || acked.lock().unwrap().len();
    wait_until(
        T,
        || acks() >= 100,
        || "the writer got no acknowledgements".into(),
    );
    // The server leading MEM, where every event is written first (the first server, whose
    // monitor the plane was checked on, is spared so a later check still has it: its lead is
    // moved first).
    let leader = mem_leader(&urls, Some("iron-0")).await;
    let victim: usize = leader
        .strip_prefix("iron-")
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("the leader {leader:?} is none of the cluster's servers"));
    nats[victim].kill9();
    let at_kill = acks();
    // Writing goes on: the clients move to the servers left, the streams keep a quorum.
    wait_until(
        T,
        || acks() >= at_kill + 100,
        || {
            format!(
                "{} acknowledged since the kill; refusals: {:?}",
                acks() - at_kill,
                refused.lock().unwrap()
            )
        },
    );
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.unwrap();
    let acked: Vec<String> = acked.lock().unwrap().clone();
    let refused = refused.lock().unwrap().len();
    eprintln!(
        "{} events acknowledged, {refused} refused while server {victim} was killed",
        acked.len()
    );

    // Read back from the two that are left (only reading: no stream is checked or made).
    let survivors = nats
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != victim)
        .map(|(_, s)| s.url())
        .collect::<Vec<_>>()
        .join(",");
    let reader = JetStream::connect(&survivors, JetStreamOptions::default())
        .await
        .unwrap();
    // Another server took the lead of MEM.
    let successor = mem_leader(&survivors, Some(leader.as_str())).await;
    assert_ne!(successor, leader);
    // Right after the kill a read can time out or find no server to answer while the
    // cluster notices the peer is gone: such a failure must say it is worth retrying (the
    // CLI retries only those), and it is retried; any other failure ends the test.
    let kept: BTreeSet<String> = eventually("a read of MEM from the servers left", T, || async {
        match notes(&reader).await {
            Ok(ids) => Some(ids),
            Err(e) => {
                assert!(
                    e.is_retryable(),
                    "a read after the kill failed for good: {e}"
                );
                eprintln!("reading MEM: {e}; again");
                None
            }
        }
    })
    .await;
    let lost: Vec<&String> = acked.iter().filter(|id| !kept.contains(*id)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged events lost ({refused} writes refused): {lost:?}",
        lost.len(),
        acked.len(),
    );

    // Work continues on the two servers left, at the first attempt: the next question
    // crosses both routers too (the CLI's check of the streams waits out the election of a
    // new leader for those the dead server led).
    let second = ask(&p, &b, "what is the status of the harbour now?");
    assert!(!second.trim().is_empty());
    drop((up_a, up_b));
}
