//! What the catalog records beyond the meshes' shape: flow and test files with their
//! hashes, the generated benchmark mesh, and the direction of `use` between layers.

use iron::aem;
use std::fs;
use std::path::Path;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn tiny_mesh(root: &Path) {
    write(
        &root.join("m/AEM.md"),
        "---\nname: m\nstatus: active\ndefaults:\n  model: standard\n---\n",
    );
    write(
        &root.join("m/skills/a/SKILL.md"),
        "---\nname: a\nidentity: Expert a.\ndescription: Does a.\n---\n\nDo a.\n",
    );
}

#[test]
fn flows_and_tests_are_recorded_with_content_hashes() {
    let dir = tempfile::tempdir().unwrap();
    tiny_mesh(dir.path());
    let skill = dir.path().join("m/skills/a");
    write(&skill.join("flows/watch.rs"), "fn run() {}\n");
    write(&skill.join("flows/steps/verify.rs"), "fn verify() {}\n");
    write(&skill.join("tests/watch_test.rs"), "#[test] fn t() {}\n");
    let c = aem::compile(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let a = c.expert("m/a").unwrap();
    let flows: Vec<&str> = a.flows.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(flows, ["flows/steps/verify.rs", "flows/watch.rs"]);
    assert_eq!(a.tests.len(), 1);
    assert_eq!(a.tests[0].path, "tests/watch_test.rs");
    // sha256("fn run() {}\n")
    let before = a.flows[1].sha256.clone();
    assert_eq!(before.len(), 64);
    write(&skill.join("flows/watch.rs"), "fn run() { changed() }\n");
    let c2 = aem::compile(dir.path()).unwrap();
    assert_ne!(c2.expert("m/a").unwrap().flows[1].sha256, before);
    assert_ne!(
        c2.expert("m/a").unwrap().hashes.skill,
        String::new(),
        "SKILL.md hash is recorded"
    );
}

#[test]
fn no_declaration_means_no_memory_tools_or_peers() {
    let dir = tempfile::tempdir().unwrap();
    tiny_mesh(dir.path());
    write(
        &dir.path().join("m/skills/b/SKILL.md"),
        "---\nname: b\nidentity: Expert b.\ndescription: Does b.\n---\n\nDo b.\n",
    );
    let c = aem::compile(dir.path()).unwrap();
    let a = c.expert("m/a").unwrap();
    assert!(a.memory.is_empty());
    assert!(a.tools.is_empty());
    assert!(a.sources.is_empty());
    // No `delegation` block: nobody to delegate to.
    assert!(c.peers("m/a").is_empty());
    assert_eq!(a.clearance, aem::DEFAULT_CLEARANCE);
    assert_eq!(a.idle_secs, aem::DEFAULT_IDLE_SECS);
}

#[test]
fn generated_bench_mesh_compiles() {
    let dir = tempfile::tempdir().unwrap();
    let root = iron::bench::catalog::generate_mesh(dir.path(), 60).unwrap();
    let c = aem::compile(&root).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.experts.len(), 60);
    let first = c.expert("bench/expert-00000").unwrap();
    assert_eq!(c.peers("bench/expert-00000").len(), 59);
    // Stored by reference: the catalog grows with the experts, not with their square.
    assert_eq!(
        serde_json::to_value(&first.peers).unwrap(),
        serde_json::json!({"mesh": true})
    );
    let twice = tempfile::tempdir().unwrap();
    let root = iron::bench::catalog::generate_mesh(twice.path(), 120).unwrap();
    let bigger = aem::compile(&root).unwrap_or_else(|e| panic!("{e}"));
    let growth = bigger.to_json().len() as f64 / c.to_json().len() as f64;
    assert!(
        growth < 2.2,
        "twice the experts made the catalog {growth:.2} times as large"
    );
    assert!(first.tools.contains_key("files/write_file"));
    assert!(
        !c.expert("bench/expert-00001")
            .unwrap()
            .tools
            .contains_key("files/write_file")
    );
}
