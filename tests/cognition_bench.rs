//! `iron bench cognition` runs end to end with small counts and prints every line with a
//! number (figures are not judged).

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
    for line in stdout.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 4, "{line}");
        assert_eq!(parts[0], "bench", "{line}");
        let value: f64 = parts[2]
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line}"));
        assert!(value.is_finite(), "{line}");
        names.push(parts[1].to_string());
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
}
