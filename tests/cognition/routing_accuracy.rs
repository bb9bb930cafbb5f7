//! Offline routing on a labelled set of instructions across the shipped meshes
//! (`tests/fixtures/routing/labelled.json`, written from the SKILL.md files by someone who did
//! not read the router): the offline router must pick the labelled expert for at least 90 % of
//! them. `iron bench routing` prints the same figure and the misses.

use iron::llm::router::{OfflineRouter, accuracy};

#[test]
fn the_offline_router_picks_the_labelled_expert_for_nine_in_ten_instructions() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let catalog = iron::aem::compile(&root.join("aem")).expect("the shipped meshes compile");
    let router = OfflineRouter::new(&catalog)
        .with_fallback("core/assistant")
        .unwrap();
    let set = std::fs::read_to_string(root.join("tests/fixtures/routing/labelled.json")).unwrap();
    let report = accuracy(&router, &set).expect("the labelled set reads");
    assert!(report.cases >= 60, "{} cases", report.cases);
    for miss in &report.misses {
        eprintln!("miss: {miss}");
    }
    assert!(
        report.accuracy() >= 0.90,
        "offline routing accuracy {:.1} % ({} of {}) is under 90 %",
        report.accuracy() * 100.0,
        report.cases - report.misses.len(),
        report.cases
    );
}
