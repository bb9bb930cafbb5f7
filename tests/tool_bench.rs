//! The benchmark runs end to end and prints its lines (figures are not judged).

#[path = "support_tools/mod.rs"]
mod support;

use iron::tools::bench::{ToolsBench, tools};
use serde_json::json;

#[tokio::test]
async fn bench_prints_its_lines() {
    let bench = ToolsBench {
        command: support::test_server().display().to_string(),
        args: vec![],
        tool: "echo".into(),
        arguments: json!({"text": "x"}),
        calls: 5,
        env: std::env::vars().filter(|(k, _)| k == "PATH").collect(),
    };
    let mut out = Vec::new();
    let lines = tools(&bench, &mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tools.calls",
            "tools.direct_p50",
            "tools.managed_p50",
            "tools.overhead_p50",
            "tools.ratio_p50"
        ]
    );
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 4, "{line}");
        assert_eq!(parts[0], "bench");
        assert!(parts[2].parse::<f64>().is_ok(), "{line}");
    }
    assert!(lines.iter().all(|l| l.value.is_finite()));
}
