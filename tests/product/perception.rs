//! Perception and memory mounts at wake, across real processes (router, projector, a source
//! node running `iron msp feeds`, a resident expert): the expert's prompt holds the newest
//! items of the source it is granted, says plainly that a granted source is not running, and
//! holds the facts its memory declaration mounts — and not facts outside it. What was read is
//! on the log; a source that is deactivated leaves the phone book, and one that was killed is
//! reported unavailable, never silently empty. An `on_demand` source starts with the expert
//! that holds it and stops with it.

use crate::support;

use std::time::Duration;

use iron::{
    core::{envelope::Envelope, event_kind::EventKind},
    memory::{emit, recall::Recall},
    protocol::payload::{PerceptionRead, ReadOutcome},
};
use serde_json::json;
use support::{eventually, project::Project};

const T: Duration = Duration::from_secs(60);

const FEED: &str = r#"<?xml version="1.0"?>
<rss version="2.0"><channel><title>Lighthouse Board</title>
<item><title>Fog horn at North Point out of service</title>
<link>https://lighthouse.example/n1</link><pubDate>Tue, 01 Dec 2026 05:00:00 +0000</pubDate></item>
</channel></rss>"#;

// The analyst's model refuses to answer unless its system prompt holds what it should, and
// nothing it should not.
const ANALYST_SCRIPT: &str = r####"turns:
  - expect_system:
      - "Fog horn at North Point out of service"
      - "### official_feeds"
      - "### news_wires"
      - "Not running"
      - "The North Point fog horn was last serviced in October."
    absent_system:
      - "The dev mesh keeps its build cache warm."
    text: "Reported out of service by the Lighthouse Board; not yet corroborated."
"####;

const NEWSROOM_LIST: &str = "nodes:
  - name: projector
    namespace: /iron/memory
    executable: projector_node
  - name: official_feeds
    namespace: /iron/msp/newsroom
    executable: source_node
    args: [--source, newsroom/official_feeds]
    respawn: false
  - name: analyst
    namespace: /iron/experts/newsroom
    executable: expert_node
    args: [--expert, newsroom/analyst]
";

/// The pid `iron up` logged for the node whose name contains `node`.
fn pid_of(up: &support::Proc, node: &str) -> u32 {
    up.matching(&format!("{node}: started"))
        .iter()
        .find_map(|l| {
            let after = l.split("(pid Some(").nth(1)?;
            after.split(')').next()?.parse::<u32>().ok()
        })
        .unwrap_or_else(|| panic!("iron up names the pid of {node}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expert_wakes_with_its_granted_sources_and_mounted_memory_only() {
    let p = Project::scripted(ANALYST_SCRIPT);
    p.write("lighthouse.xml", FEED);
    let feeds = p.write("official.txt", "lighthouse.xml\n");
    let p = p.env("NEWSROOM_OFFICIAL_FEEDS", &feeds.display().to_string());

    // Two facts: one under the newsroom (the analyst mounts facts/newsroom), one under dev.
    let log = p.log().await;
    for (ns, fact) in [
        (
            ["facts", "newsroom"],
            "The North Point fog horn was last serviced in October.",
        ),
        (["facts", "dev"], "The dev mesh keeps its build cache warm."),
    ] {
        let e = Envelope::new(
            "default",
            ns,
            "test",
            EventKind::FactLearned,
            json!({"fact": fact}),
        );
        emit(&log, &e).await.unwrap();
    }

    let mut up = p.up(NEWSROOM_LIST, &[]);
    up.wait_for("up: 3 node(s) running", T);

    // The source serves what its command read, as a person can check.
    let shown = eventually("the source's first state", T, || async {
        let out = p.iron(&["msp", "read", "newsroom/official_feeds"]);
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
    let wires = p.iron(&["msp", "read", "newsroom/news_wires"]);
    assert!(
        !wires.status.success(),
        "a source nobody started is not running"
    );
    let said = String::from_utf8_lossy(&wires.stderr);
    assert!(said.contains("not running"), "{said}");

    // The facts are in the projection before the task.
    let projection = p.path("projection.db");
    eventually("both facts projected", T, || async {
        let n = Recall::open(&projection).ok()?.count().ok()?;
        (n >= 2).then_some(())
    })
    .await;

    let said = p.iron_ok(&[
        "task",
        "send",
        "--action",
        "/iron/experts/newsroom/analyst/task",
        "--wait",
        "60",
        "is the fog horn at North Point working?",
    ]);
    assert!(
        said.contains("Reported out of service by the Lighthouse Board"),
        "{said}"
    );

    // What the expert perceived is on the log: one source read, one not running.
    let perceived = p.events("perception_read").await;
    assert_eq!(perceived.len(), 1, "{perceived:#?}");
    let read: PerceptionRead = support::read_one(&perceived[0]);
    let sources = &read.sources;
    assert_eq!(sources[0].source, "news_wires");
    assert_eq!(sources[0].outcome, ReadOutcome::NotRunning);
    assert_eq!(sources[1].source, "official_feeds");
    assert!(
        matches!(sources[1].outcome, ReadOutcome::Read { items: 1, .. }),
        "{sources:?}"
    );
    assert_eq!(perceived[0].actor, "newsroom/analyst");

    // Deactivated, the source leaves the phone book at once.
    let node = "/iron/msp/newsroom/official_feeds";
    p.iron_ok(&["lifecycle", "set", node, "deactivate"]);
    let gone = p.iron(&["msp", "read", "newsroom/official_feeds"]);
    assert!(!gone.status.success());
    assert!(String::from_utf8_lossy(&gone.stderr).contains("not running"));

    // Killed while listed, it is reported unavailable (its listing outlives it until the TTL).
    p.iron_ok(&["lifecycle", "set", node, "activate"]);
    eventually("the source listed again", T, || async {
        p.iron(&["msp", "read", "newsroom/official_feeds"])
            .status
            .success()
            .then_some(())
    })
    .await;
    support::cognition::kill9(pid_of(&up, "official_feeds"));
    let dead = p.iron(&["msp", "read", "newsroom/official_feeds"]);
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
    let p = Project::scripted(
        "turns:\n  - expect_system: [\"Spring tide expected at 06:40\"]\n    text: \"Spring tide at 06:40, per the notices.\"\n",
    );
    p.write(
        "tides.xml",
        &FEED.replace(
            "Fog horn at North Point out of service",
            "Spring tide expected at 06:40",
        ),
    );
    let feeds = p.write("tides.txt", "tides.xml\n");
    let p = p.env("TIDES_FEEDS", &feeds.display().to_string());
    p.write("aem/watch/AEM.md", TIDES_MESH);
    p.write(
        "aem/watch/skills/watcher/SKILL.md",
        "---\nname: watcher\nidentity: The watcher of the tides.\ndescription: Says what the tide does.\n---\n\nReport the tide.\n",
    );
    p.write(
        "aem/watch/skills/watcher/capabilities.md",
        "---\nclearance: read\nsources:\n  add: [tides]\n---\n\nReads the tides.\n",
    );

    // `iron up --aem` compiles the mesh into the state directory's catalog.
    let aem = p.path("aem").display().to_string();
    let mut up = p.up(
        "nodes:\n  - name: watcher\n    namespace: /iron/experts/watch\n    executable: expert_node\n    args: [--expert, watch/watcher]\n    respawn: false\n",
        &["--aem", &aem],
    );
    up.wait_for("up: 1 node(s) running", T);

    // Configuring the expert started the source; it is a node of its own.
    let shown = p.iron(&["msp", "read", "watch/tides"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.status.success() && text.contains("Spring tide expected at 06:40"),
        "{text}\n{}",
        up.output().join("\n")
    );
    let nodes = p.iron_ok(&["node", "list"]);
    assert!(nodes.contains("/iron/msp/watch/tides_"), "{nodes}");

    let said = p.iron_ok(&[
        "task",
        "send",
        "--action",
        "/iron/experts/watch/watcher/task",
        "--wait",
        "60",
        "what does the tide do this morning?",
    ]);
    assert!(
        said.contains("Spring tide at 06:40, per the notices."),
        "{said}"
    );

    // Shutting the expert down stops its source, which leaves the phone book.
    p.iron_ok(&[
        "lifecycle",
        "set",
        "/iron/experts/watch/watcher",
        "shutdown",
    ]);
    eventually("the on-demand source gone", T, || async {
        let read = p.iron(&["msp", "read", "watch/tides"]);
        (!read.status.success() && String::from_utf8_lossy(&read.stderr).contains("not running"))
            .then_some(())
    })
    .await;

    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("up exits");
}
