//! `iron eval` on the shipped labelled sets, run from the repository root as a user would: each
//! set is read and scored with the real local model (scripts/test.sh pulls it), a malformed set
//! is refused with its line, and the figures say what the product relies on: memory recall on
//! the model finds by meaning what words alone miss.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn iron(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iron"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("iron runs")
}

/// The JSON lines `iron args…` prints, failing unless it succeeds.
fn json_lines(args: &[&str]) -> Vec<Value> {
    let out = iron(args);
    assert!(
        out.status.success(),
        "iron {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn memory_recall_is_scored_per_retriever_and_the_model_finds_paraphrases() {
    let rows = json_lines(&["eval", "memory", "--json"]);
    // Words, hashing and the local model, each on the tuning and the held-out half.
    assert_eq!(rows.len(), 6, "{rows:?}");
    let row = |retriever: &str, set: &str| {
        rows.iter()
            .find(|r| r["retriever"] == retriever && r["queries"] == set)
            .unwrap_or_else(|| panic!("no row for {retriever} on {set}: {rows:?}"))
    };
    let heldout = "eval/memory/heldout.jsonl";
    let words = row("words", heldout);
    let model = row("local/all-MiniLM-L6-v2", heldout);
    row("hashing-256-v1", heldout);
    assert_eq!(model["overall"]["queries"], 65);
    let paraphrase = |r: &Value| r["by_kind"]["paraphrase"]["recall_at_5"].as_f64().unwrap();
    assert!(
        paraphrase(model) > paraphrase(words),
        "the model should find by meaning what words miss: {model} vs {words}"
    );
}

#[test]
fn routing_is_scored_on_both_halves_by_rules_and_with_the_model() {
    for extra in [&[][..], &["--lexical"][..]] {
        let args: Vec<&str> = ["eval", "routing", "--json"]
            .iter()
            .chain(extra)
            .copied()
            .collect();
        let rows = json_lines(&args);
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!(r["overall"]["cases"], 110, "{r}");
            let right = r["overall"]["right"].as_u64().unwrap();
            assert_eq!(
                r["misses"].as_array().unwrap().len() as u64,
                110 - right,
                "every miss is listed"
            );
        }
        let reader = if extra.is_empty() {
            "local/all-MiniLM-L6-v2"
        } else {
            "rules"
        };
        assert!(rows.iter().all(|r| r["router"] == reader), "{rows:?}");
    }
}

#[test]
fn a_malformed_set_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"id\": \"r1\", \"expert\": \"dev/tester\", \"kind\": \"direct\", \"instruction\": \"Run the tests\"}\n{\"id\": \"r2\", \"expert\": \"dev/tester\"}\n",
    )
    .unwrap();
    let out = iron(&["eval", "routing", "--lexical", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl") && err.contains("line 2"), "{err}");

    // A query whose answer lies outside its scope is refused, not scored.
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        "{\"id\": \"q1\", \"scope\": \"facts/ops\", \"kind\": \"lexical\", \"query\": \"flights\", \"relevant\": [\"f001\"]}\n",
    )
    .unwrap();
    let out = iron(&["eval", "memory", queries.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("q1") && err.contains("f001"), "{err}");

    // A set that is not there names itself.
    let out = iron(&["eval", "memory", "--facts", "no/such/facts.jsonl"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/facts.jsonl"));
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("eval/memory/README.md")
            .is_file()
    );
}
