//! The benchmark runs end to end and prints its lines (figures are not judged).

use crate::support_tools as support;

use std::sync::Arc;

use iron::bench::tools::{EventSink, ToolsBench, tools};
use iron::tools::{MemoryEvents, ToolEvents};
use serde_json::json;

#[tokio::test]
async fn bench_prints_its_lines() {
    let events = [
        Arc::new(MemoryEvents::default()),
        Arc::new(MemoryEvents::default()),
    ];
    let sink = |name: &str, events: &Arc<MemoryEvents>| EventSink {
        name: name.into(),
        events: events.clone() as Arc<dyn ToolEvents>,
    };
    let bench = ToolsBench {
        command: support::test_server().display().to_string(),
        args: vec![],
        tool: "echo".into(),
        arguments: json!({"text": "x"}),
        calls: 5,
        env: std::env::vars().filter(|(k, _)| k == "PATH").collect(),
        sinks: vec![sink("first", &events[0]), sink("second", &events[1])],
    };
    let mut out = Vec::new();
    let lines = tools(&bench, &mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tools.ratio_first_p50",
            "tools.ratio_second_p50",
            "tools.calls",
            "tools.direct_p50",
            "tools.managed_first_p50",
            "tools.overhead_first_p50",
            "tools.managed_second_p50",
            "tools.overhead_second_p50",
        ]
    );
    // Each managed series made every call through its own port: a call and a result per
    // call, and the warm-up's.
    for e in &events {
        assert_eq!(e.events().len(), 2 * (5 + 1));
    }
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 4, "{line}");
        assert_eq!(parts[0], "bench");
        assert!(parts[2].parse::<f64>().is_ok(), "{line}");
    }
    assert!(lines.iter().all(|l| l.value.is_finite()));
}
