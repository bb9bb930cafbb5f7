//! Perception and memory mounts at wake, across real processes (router, projector, a source
//! node running `iron msp feeds`, a resident expert): the expert's prompt holds the newest
//! items of the source it is granted, says plainly that a granted source is not running, and
//! holds the facts its memory declaration mounts — and not facts outside it. What was read is
//! on the log; a source that is deactivated leaves the phone book, and one that was killed is
//! reported unavailable, never silently empty.

mod support;

use std::time::Duration;

use iron::{
    core::{config::Config, durable::EventLog, envelope::Envelope, event_kind::EventKind},
    memory::{emit, recall::Recall},
    spine::durable::AnyLog,
};
use serde_json::json;
use support::{Proc, bin, eventually, free_port};

const T: Duration = Duration::from_secs(60);

const FEED: &str = r#"<?xml version="1.0"?>
<rss version="2.0"><channel><title>Lighthouse Board</title>
<item><title>Fog horn at North Point out of service</title>
<link>https://lighthouse.example/n1</link><pubDate>Tue, 01 Dec 2026 05:00:00 +0000</pubDate></item>
</channel></rss>"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_expert_wakes_with_its_granted_sources_and_mounted_memory_only() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path();
    std::fs::write(dir.join("lighthouse.xml"), FEED).unwrap();
    std::fs::write(dir.join("official.txt"), "lighthouse.xml\n").unwrap();
    // The analyst's model refuses to answer unless its system prompt holds what it should,
    // and nothing it should not.
    std::fs::write(
        dir.join("script.yaml"),
        r####"turns:
  - expect_system:
      - "Fog horn at North Point out of service"
      - "### official_feeds"
      - "### news_wires"
      - "Not running"
      - "The North Point fog horn was last serviced in October."
    absent_system:
      - "The dev mesh keeps its build cache warm."
    text: "Reported out of service by the Lighthouse Board; not yet corroborated."
"####,
    )
    .unwrap();
    let config = dir.join("iron.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {d}\nmodels:\n  backends:\n    offline:\n      kind: scripted\n      script: {d}/script.yaml\n  logical:\n    fast: [offline]\n    standard: [offline]\n    strong: [offline]\n",
            d = dir.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(bin("iron"))
        .args(["catalog", "build", "--out", &dir.display().to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Two facts: one under the newsroom (the analyst mounts facts/newsroom), one under dev.
    let log = AnyLog::open(&Config {
        state_dir: dir.to_path_buf(),
        ..Config::default()
    })
    .await
    .unwrap();
    for (ns, fact) in [
        (
            ["facts", "newsroom"],
            "The North Point fog horn was last serviced in October.",
        ),
        (["facts", "dev"], "The dev mesh keeps its build cache warm."),
    ] {
        emit(
            &log,
            &Envelope::new(
                "default",
                ns,
                "test",
                EventKind::FactLearned,
                json!({"fact": fact}),
            ),
        )
        .await
        .unwrap();
    }

    let list = dir.join("list.yaml");
    std::fs::write(
        &list,
        "nodes:\n  - name: projector\n    namespace: /iron/memory\n    executable: projector_node\n  - name: official_feeds\n    namespace: /iron/msp/newsroom\n    executable: source_node\n    args: [--source, newsroom/official_feeds]\n    respawn: false\n  - name: analyst\n    namespace: /iron/experts/newsroom\n    executable: expert_node\n    args: [--expert, newsroom/analyst]\n",
    )
    .unwrap();
    let router = format!("tcp/127.0.0.1:{}", free_port());
    let config_s = config.display().to_string();
    let feeds = dir.join("official.txt").display().to_string();
    let envs = [
        ("IRON_ROUTER", router.as_str()),
        ("IRON_CONFIG", config_s.as_str()),
        ("NEWSROOM_OFFICIAL_FEEDS", feeds.as_str()),
    ];
    let iron = |args: &[&str]| {
        std::process::Command::new(bin("iron"))
            .args(args)
            .envs(envs)
            .output()
            .unwrap()
    };
    let mut up = Proc::spawn(
        "up",
        &bin("iron"),
        &["up", "--launch", &list.display().to_string()],
        &envs,
    );
    up.wait_for("up: 3 node(s) running", T);

    // The source serves what its command read, as a person can check.
    let shown = eventually("the source's first state", T, || async {
        let out = iron(&["msp", "read", "newsroom/official_feeds"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && text.contains("Fog horn")).then_some(text)
    })
    .await;
    assert!(
        shown.contains(
            "2026-12-01 05:00 UTC · Lighthouse Board · Fog horn at North Point out of service"
        ),
        "{shown}"
    );
    let wires = iron(&["msp", "read", "newsroom/news_wires"]);
    assert!(
        !wires.status.success(),
        "a source nobody started is not running"
    );
    assert!(
        String::from_utf8_lossy(&wires.stderr).contains("not running"),
        "{}",
        String::from_utf8_lossy(&wires.stderr)
    );

    // The facts are in the projection before the task.
    let projection = dir.join("projection.db");
    eventually("both facts projected", T, || async {
        let n = Recall::open(&projection).ok()?.count().ok()?;
        (n >= 2).then_some(())
    })
    .await;

    let answer = iron(&[
        "task",
        "send",
        "--action",
        "/iron/experts/newsroom/analyst/task",
        "--wait",
        "60",
        "is the fog horn at North Point working?",
    ]);
    let said = String::from_utf8_lossy(&answer.stdout);
    assert!(
        answer.status.success() && said.contains("Reported out of service by the Lighthouse Board"),
        "{said}\n{}",
        String::from_utf8_lossy(&answer.stderr)
    );

    // What the expert perceived is on the log: one source read, one not running.
    let perceived: Vec<Envelope> = log
        .read("MEM", "mem.>", 1, 10_000)
        .await
        .unwrap()
        .iter()
        .filter_map(|m| serde_json::from_slice::<Envelope>(&m.payload).ok())
        .filter(|e| e.kind == EventKind::PerceptionRead)
        .collect();
    assert_eq!(perceived.len(), 1, "{perceived:#?}");
    let sources = &perceived[0].payload["sources"];
    assert_eq!(sources[0]["source"], "news_wires");
    assert_eq!(sources[0]["status"], "not_running");
    assert_eq!(sources[1]["source"], "official_feeds");
    assert_eq!(sources[1]["status"], "read");
    assert_eq!(sources[1]["items"], 1);
    assert_eq!(perceived[0].actor, "newsroom/analyst");

    // Deactivated, the source leaves the phone book at once.
    let node = "/iron/msp/newsroom/official_feeds";
    let out = iron(&["lifecycle", "set", node, "deactivate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gone = iron(&["msp", "read", "newsroom/official_feeds"]);
    assert!(!gone.status.success());
    assert!(String::from_utf8_lossy(&gone.stderr).contains("not running"));

    // Killed while listed, it is reported unavailable (its listing outlives it until the TTL).
    let out = iron(&["lifecycle", "set", node, "activate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("the source listed again", T, || async {
        iron(&["msp", "read", "newsroom/official_feeds"])
            .status
            .success()
            .then_some(())
    })
    .await;
    let pid = up.matching("official_feeds: started").iter().find_map(|l| {
        let after = l.split("(pid Some(").nth(1)?;
        after.split(')').next()?.parse::<u32>().ok()
    });
    let pid = pid.expect("iron up names the source's pid");
    support::cognition::kill9(pid);
    let dead = iron(&["msp", "read", "newsroom/official_feeds"]);
    assert!(!dead.status.success(), "a dead source gives no state");
    let why = String::from_utf8_lossy(&dead.stderr).to_string();
    assert!(
        why.contains("not reachable") || why.contains("did not answer"),
        "{why}"
    );

    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("up exits");
}

const TIDES_MESH: &str = r#"---
name: watch
status: active
description: A test mesh with one on-demand source.
defaults:
  model: standard
  clearance: read
msp:
  sources:
    tides:
      description: Tide notices for the harbour.
      startup: on_demand
      command: ["iron", "msp", "feeds", "--set", "tides"]
      env:
        FEEDS: "${TIDES_FEEDS}"
---

Watches the tides.
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_on_demand_source_starts_with_the_expert_that_holds_it_and_stops_with_it() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path();
    std::fs::write(
        dir.join("tides.xml"),
        FEED.replace(
            "Fog horn at North Point out of service",
            "Spring tide expected at 06:40",
        ),
    )
    .unwrap();
    std::fs::write(dir.join("tides.txt"), "tides.xml\n").unwrap();
    let mesh = dir.join("aem/watch");
    let skill = mesh.join("skills/watcher");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(mesh.join("AEM.md"), TIDES_MESH).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: watcher\nidentity: The watcher of the tides.\ndescription: Says what the tide does.\n---\n\nReport the tide.\n",
    )
    .unwrap();
    std::fs::write(
        skill.join("capabilities.md"),
        "---\nclearance: read\nsources:\n  add: [tides]\n---\n\nReads the tides.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("script.yaml"),
        "turns:\n  - expect_system: [\"Spring tide expected at 06:40\"]\n    text: \"Spring tide at 06:40, per the notices.\"\n",
    )
    .unwrap();
    let config = dir.join("iron.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {d}\nmodels:\n  backends:\n    offline:\n      kind: scripted\n      script: {d}/script.yaml\n  logical:\n    fast: [offline]\n    standard: [offline]\n    strong: [offline]\n",
            d = dir.display()
        ),
    )
    .unwrap();
    // `iron up --aem` compiles the mesh into the state directory's catalog.
    let list = dir.join("list.yaml");
    std::fs::write(
        &list,
        "nodes:\n  - name: watcher\n    namespace: /iron/experts/watch\n    executable: expert_node\n    args: [--expert, watch/watcher]\n    respawn: false\n",
    )
    .unwrap();
    let router = format!("tcp/127.0.0.1:{}", free_port());
    let config_s = config.display().to_string();
    let feeds = dir.join("tides.txt").display().to_string();
    let envs = [
        ("IRON_ROUTER", router.as_str()),
        ("IRON_CONFIG", config_s.as_str()),
        ("TIDES_FEEDS", feeds.as_str()),
    ];
    let iron = |args: &[&str]| {
        std::process::Command::new(bin("iron"))
            .args(args)
            .envs(envs)
            .output()
            .unwrap()
    };
    let aem = dir.join("aem").display().to_string();
    let mut up = Proc::spawn(
        "up",
        &bin("iron"),
        &["up", "--launch", &list.display().to_string(), "--aem", &aem],
        &envs,
    );
    up.wait_for("up: 1 node(s) running", T);

    // Configuring the expert started the source; it is a node of its own.
    let shown = iron(&["msp", "read", "watch/tides"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.status.success() && text.contains("Spring tide expected at 06:40"),
        "{text}\n{}",
        up.output().join("\n")
    );
    let nodes = String::from_utf8_lossy(&iron(&["node", "list"]).stdout).to_string();
    assert!(nodes.contains("/iron/msp/watch/tides_"), "{nodes}");

    let answer = iron(&[
        "task",
        "send",
        "--action",
        "/iron/experts/watch/watcher/task",
        "--wait",
        "60",
        "what does the tide do this morning?",
    ]);
    let said = String::from_utf8_lossy(&answer.stdout);
    assert!(
        answer.status.success() && said.contains("Spring tide at 06:40, per the notices."),
        "{said}\n{}",
        String::from_utf8_lossy(&answer.stderr)
    );

    // Shutting the expert down stops its source, which leaves the phone book.
    let out = iron(&[
        "lifecycle",
        "set",
        "/iron/experts/watch/watcher",
        "shutdown",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("the on-demand source gone", T, || async {
        let read = iron(&["msp", "read", "watch/tides"]);
        (!read.status.success() && String::from_utf8_lossy(&read.stderr).contains("not running"))
            .then_some(())
    })
    .await;

    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("up exits");
}
