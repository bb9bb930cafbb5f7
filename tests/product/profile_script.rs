//! `scripts/flamegraph.py`, the flame-graph half of `scripts/profile.sh`, on `perf script`
//! output recorded here (a smoke `iron bench catalog`): both kinds of graph are drawn, the
//! folded stacks add up, and the off-CPU graph keeps only the profiled command's process tree
//! (perf records every process on the machine).

use std::path::Path;
use std::process::Command;

fn flamegraph(kind: &str, input: &str, extra: &[&str]) -> (tempfile::TempDir, String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("graph.svg");
    let out = Command::new("python3")
        .arg(root.join("scripts/flamegraph.py"))
        .args([
            kind,
            root.join(input).to_str().unwrap(),
            svg.to_str().unwrap(),
        ])
        .args(extra)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{out:?}");
    let drawn = std::fs::read_to_string(&svg).unwrap();
    let folded = std::fs::read_to_string(dir.path().join("graph.folded")).unwrap();
    (dir, drawn, folded)
}

fn total(folded: &str) -> f64 {
    folded
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[test]
fn on_cpu_samples_become_a_flame_graph_of_every_sample() {
    let (_dir, svg, folded) = flamegraph("on-cpu", "tests/fixtures/profile/on-cpu.txt", &[]);
    let samples = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile/on-cpu.txt"),
    )
    .unwrap()
    .lines()
    .filter(|l| l.contains("cpu-clock"))
    .count();
    assert!(samples > 0);
    assert_eq!(total(&folded), samples as f64, "{folded}");
    assert!(
        svg.starts_with("<svg") && svg.contains("(8 samples)"),
        "{svg}"
    );
    assert!(folded.lines().all(|l| l.starts_with("iron;")), "{folded}");
}

#[test]
fn off_cpu_time_is_charged_to_the_profiled_tree_only() {
    let input = "tests/fixtures/profile/off-cpu.txt";
    let (_dir, svg, folded) = flamegraph("off-cpu", input, &["--root", "14250"]);
    assert!(total(&folded) > 0.0, "{folded}");
    assert!(svg.contains("ms off CPU"), "{svg}");
    // perf itself, the compiler and the idle threads ran beside it: none is charged.
    for line in folded.lines() {
        let comm = line.split(';').next().unwrap();
        assert!(matches!(comm, "iron" | "perf-exec"), "{line}");
    }
    // Without a root every process counts, so more is charged.
    let (_dir, _, everything) = flamegraph("off-cpu", input, &[]);
    assert!(total(&everything) > total(&folded));
}
