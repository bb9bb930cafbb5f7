//! Log shipping (`crate::view::ship`): what processes print reaches the log plane without ever
//! holding them up. A command printing 100,000 lines at full speed under `iron ship` while
//! the NATS server is down finishes printing (its terminal copy complete) before the plane
//! returns; afterwards the lines shipped plus the lines reported dropped are exactly what it
//! printed, in order, none twice. And `iron up` ships each node's output as that node's, read
//! back with `iron logs`.

use crate::support;

use std::time::Duration;

use iron::core::durable::EventLog;
use iron::spine::durable::streams::LOGS;
use iron::view::ship::{Batch, subject_of};
use support::project::Project;

const T: Duration = Duration::from_secs(120);
const LINES: u64 = 100_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_printer_is_never_held_up_by_a_stopped_plane_and_every_line_is_accounted_for() {
    let mut p = Project::offline().with_nats();
    p.nats().kill9();
    let seq = format!("seq 1 {LINES}");
    let mut printer = p.spawn(
        "ship",
        &support::bin("iron"),
        &[
            "ship",
            "--node",
            "/test/printer",
            "--flush-secs",
            "300",
            "--",
            "sh",
            "-c",
            &seq,
        ],
    );
    // Every line reached the terminal while the plane was down: printing never waited for it.
    let printed = || {
        printer
            .output()
            .iter()
            .filter(|l| l.parse::<u64>().is_ok())
            .count() as u64
    };
    support::wait_until(
        T,
        || printed() == LINES,
        || format!("{} of {LINES} printed", printed()),
    );
    assert!(
        printer.wait_exit(Duration::from_millis(10)).is_none(),
        "iron ship waits for the plane to ship what it holds"
    );
    p.nats().restart();
    let status = printer
        .wait_exit(T)
        .expect("iron ship ends once it has shipped");
    assert!(status.success(), "{status:?}: {:?}", printer.output());

    let log = p.log().await;
    let mut shipped: Vec<u64> = Vec::new();
    let mut dropped = 0;
    let mut from = 1;
    loop {
        let page = log
            .read(LOGS, &subject_of("/test/printer"), from, 1_000)
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        from = last.seq + 1;
        for m in page {
            let batch: Batch = serde_json::from_slice(&m.payload).unwrap();
            assert_eq!(batch.node, "/test/printer");
            dropped += batch.dropped;
            shipped.extend(batch.lines.iter().map(|l| l.l.parse::<u64>().unwrap()));
        }
    }
    assert!(dropped > 0, "the queue is smaller than what was printed");
    assert_eq!(
        shipped.len() as u64 + dropped,
        LINES,
        "shipped + dropped = printed"
    );
    assert!(
        shipped.windows(2).all(|w| w[0] < w[1]),
        "shipped lines are in order, none twice"
    );
    // `iron logs` says where lines were dropped.
    let read = p.iron_ok(&["logs", "/test/printer", "--last", "0"]);
    assert!(
        read.contains("line(s) dropped here"),
        "{}",
        &read[..read.len().min(2000)]
    );
    assert_eq!(
        read.lines().filter(|l| l.parse::<u64>().is_ok()).count(),
        shipped.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iron_up_ships_each_node_output_as_that_node() {
    let p = Project::offline();
    let up = p.up(
        "nodes:\n  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}\n",
        &[],
    );
    up.wait_for("/iron/engine: active", T);
    // The node's own lines still reach the terminal of `iron up`.
    up.wait_for("managed node up", T);
    let read = support::eventually("the engine's output on the plane", T, || async {
        let out = p.iron(&["logs", "/iron/engine"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && text.contains("managed node up")).then_some(text)
    })
    .await;
    assert!(
        !read.contains("[/iron/engine]"),
        "one node: no prefix\n{read}"
    );
    let all = p.iron_ok(&["logs"]);
    assert!(all.contains("[/iron/engine] "), "{all}");
    let none = p.iron_ok(&["logs", "/iron/nobody"]);
    assert!(none.trim().is_empty(), "{none}");
}
