//! `iron bench cognition` runs end to end with small counts and prints every line with a
//! number. Timings are not judged (shared machines are noisy), but the figures must be
//! consistent: the counts asked for, percentiles in order, memory measured.

mod support;

use support::bin;

#[test]
fn bench_cognition_prints_every_line() {
    let out = std::process::Command::new(bin("iron"))
        .args([
            "bench",
            "cognition",
            "--messages",
            "50",
            "--starts",
            "2",
            "--timeout",
            "20",
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names = Vec::new();
    let mut value_of = std::collections::BTreeMap::new();
    let mut lines = stdout.lines();
    assert!(
        lines
            .next()
            .is_some_and(|l| l.starts_with("# bench cognition: ")),
        "the machine and build come first: {stdout}"
    );
    for line in lines {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 4, "{line}");
        assert_eq!(parts[0], "bench", "{line}");
        let value: f64 = parts[2]
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line}"));
        assert!(value.is_finite() && value >= 0.0, "{line}");
        names.push(parts[1].to_string());
        value_of.insert(parts[1].trim_start_matches("cognition.").to_string(), value);
    }
    assert_eq!(
        names,
        [
            "cognition.inbox_messages",
            "cognition.inbox_queued_per_s",
            "cognition.inbox_burst_p50",
            "cognition.inbox_burst_p99",
            "cognition.inbox_paced_messages",
            "cognition.inbox_queued_p50",
            "cognition.inbox_queued_p99",
            "cognition.cold_starts",
            "cognition.expert_cold_start_p50",
            "cognition.expert_cold_start_p99",
            "cognition.bare_node_start_p50",
            "cognition.bare_node_start_p99",
            "cognition.cold_start_ratio_p50",
            "cognition.cold_start_ratio_p99",
            "cognition.idle_expert_rss",
            "cognition.bare_node_rss",
        ]
    );
    let v = |name: &str| value_of[name];
    assert_eq!(v("inbox_messages"), 50.0, "every message sent was counted");
    assert_eq!(v("cold_starts"), 2.0, "every start asked for was measured");
    assert!(v("inbox_paced_messages") >= 1.0 && v("inbox_paced_messages") <= 50.0);
    for series in [
        "inbox_burst",
        "inbox_queued",
        "expert_cold_start",
        "bare_node_start",
    ] {
        let (p50, p99) = (v(&format!("{series}_p50")), v(&format!("{series}_p99")));
        assert!(p50 > 0.0 && p50 <= p99, "{series}: p50 {p50}, p99 {p99}");
    }
    for q in ["p50", "p99"] {
        let ratio = v(&format!("expert_cold_start_{q}")) / v(&format!("bare_node_start_{q}"));
        let printed = v(&format!("cold_start_ratio_{q}"));
        assert!(
            (printed - ratio).abs() <= 0.05 * ratio + 0.01,
            "ratio {q}: printed {printed}, from the starts {ratio}"
        );
    }
    assert!(v("inbox_queued_per_s") > 0.0);
    assert!(v("idle_expert_rss") > 0.0 && v("bare_node_rss") > 0.0);
}
