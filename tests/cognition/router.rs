//! Routing over the shipped meshes: the offline router and the model-backed router.

use crate::support_llm as support;

use std::path::Path;
use std::sync::Arc;

use iron::aem::{Catalog, MeshStatus};
use iron::llm::router::{Known, ModelRouter, OfflineRouter, RouteError, RouteMethod, Router};
use iron::llm::{ChatModel, Script, ScriptedBackend};
use support::RecordingModel;

fn catalog() -> Catalog {
    iron::aem::compile(&Path::new(env!("CARGO_MANIFEST_DIR")).join("aem"))
        .unwrap_or_else(|e| panic!("the shipped meshes compile: {e:?}"))
}

fn parked_experts(catalog: &Catalog) -> Vec<String> {
    catalog
        .experts
        .values()
        .filter(|e| {
            catalog
                .mesh(&e.mesh)
                .is_some_and(|m| m.status == MeshStatus::Parked)
        })
        .map(|e| e.id.clone())
        .collect()
}

fn scripted_router(
    catalog: &Catalog,
    reply: &str,
) -> (ModelRouter, Arc<RecordingModel<ScriptedBackend>>) {
    let yaml = serde_json::json!({"turns": [{"text": reply}]}).to_string();
    let model = Arc::new(RecordingModel::new(ScriptedBackend::new(
        "router",
        "inline",
        Script::parse(&yaml, "inline").unwrap(),
    )));
    let router = ModelRouter::new(model.clone(), catalog, OfflineRouter::new(catalog));
    (router, model)
}

#[tokio::test]
async fn the_offline_router_sends_cross_checking_to_the_newsroom_analyst() {
    let catalog = catalog();
    let router = OfflineRouter::new(&catalog);
    let instruction = "Cross-check the claim that the harbour reopened against independent official and news sources";
    let ranked = router.rank(instruction);
    assert_eq!(ranked[0].0, "newsroom/analyst", "{ranked:?}");
    assert!(ranked[0].1 > ranked[1].1, "a clear winner: {ranked:?}");
    assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1), "best first");

    let decision = router.route(instruction).await.unwrap();
    assert_eq!(decision.assignments.len(), 1);
    assert_eq!(decision.assignments[0].domain, "newsroom/analyst");
    assert_eq!(decision.assignments[0].instruction, instruction);
    assert!(matches!(decision.method, RouteMethod::Offline { ref scores } if scores.len() == 1));
}

#[tokio::test]
async fn a_question_about_what_a_source_has_seen_goes_to_the_experts_granted_it() {
    let catalog = catalog();
    let router = OfflineRouter::new(&catalog);
    let question = "has the Leith ferry timetable resumed?";
    // No declaration holds any of these words (an example in a SKILL.md about a closed
    // bridge would make "bridge closed" a question of words, not of perception): on words
    // alone the general assistant wins.
    assert_eq!(router.rank(question)[0].0, "core/assistant");
    // Once the engine has found the question's words in a newsroom source, the experts
    // granted that source are the ones to ask.
    let known = Known {
        text: String::new(),
        perceived: vec!["newsroom/official_feeds".into()],
    };
    let decision = router.route_in(question, &known).await.unwrap();
    let chosen = &decision.assignments[0].domain;
    let granted = &catalog.expert(chosen).unwrap().sources;
    assert!(
        granted.contains(&"official_feeds".to_string()),
        "{chosen} is not granted the source: {granted:?}"
    );
    // A source nobody is granted changes nothing.
    let stray = Known {
        text: String::new(),
        perceived: vec!["newsroom/nowhere".into()],
    };
    let decision = router.route_in(question, &stray).await.unwrap();
    assert_eq!(decision.assignments[0].domain, "core/assistant");
}

#[tokio::test]
async fn parked_meshes_are_never_chosen_even_for_their_own_words() {
    let catalog = catalog();
    let parked = parked_experts(&catalog);
    assert!(
        !parked.is_empty(),
        "the shipped tree has parked meshes (erp, sim)"
    );
    let router = OfflineRouter::new(&catalog);
    for instruction in [
        "Post a journal entry and reconcile the account balances in the ledger",
        "Report stock levels and flag items below their reorder point",
        "Design simulator scenarios and compare outcomes across variants",
    ] {
        let ranked = router.rank(instruction);
        assert!(
            ranked.iter().all(|(id, _)| !parked.contains(id)),
            "{ranked:?}"
        );
        if let Ok(d) = router.route(instruction).await {
            assert!(d.assignments.iter().all(|a| !parked.contains(&a.domain)));
        }
    }
    let spawnable: Vec<&str> = router.experts().collect();
    assert_eq!(spawnable.len(), catalog.spawnable().count());
    assert!(router.clone().with_fallback("erp/bookkeeper").is_err());
}

#[tokio::test]
async fn sequenced_work_splits_into_pairs_for_different_experts() {
    let catalog = catalog();
    let router = OfflineRouter::new(&catalog);
    let (assignments, scores) = router
        .split("Cross-check the claim about the harbour across independent sources, then write and revise a news bulletin from the verdict")
        .unwrap();
    let domains: Vec<&str> = assignments.iter().map(|a| a.domain.as_str()).collect();
    assert_eq!(
        domains,
        ["newsroom/analyst", "newsroom/editor"],
        "{assignments:?}"
    );
    assert_eq!(scores.len(), 2);
    assert!(assignments[1].instruction.starts_with("write and revise"));
}

#[tokio::test]
async fn nothing_to_match_needs_a_fallback_and_empty_is_refused() {
    let catalog = catalog();
    let router = OfflineRouter::new(&catalog);
    assert_eq!(
        router.split("   ").unwrap_err(),
        RouteError::EmptyInstruction
    );
    assert!(matches!(
        router.split("zxqv blorp").unwrap_err(),
        RouteError::NoMatch { .. }
    ));
    let with_fallback = router.with_fallback("core/assistant").unwrap();
    let (a, _) = with_fallback.split("zxqv blorp").unwrap();
    assert_eq!(a[0].domain, "core/assistant");
}

#[tokio::test]
async fn the_model_router_uses_valid_json_pairs() {
    let catalog = catalog();
    let reply = "```json\n{\"routes\": [{\"domain\": \"newsroom/analyst\", \"instruction\": \"Verify the harbour claim.\"}, {\"domain\": \"newsroom/editor\", \"instruction\": \"Write the bulletin.\"}]}\n```";
    let (router, model) = scripted_router(&catalog, reply);
    let d = router.route("verify then write").await.unwrap();
    assert!(matches!(d.method, RouteMethod::Model { ref model } if model == "router"));
    assert_eq!(d.assignments[1].domain, "newsroom/editor");
    assert_eq!(d.assignments[0].instruction, "Verify the harbour claim.");
    // The prompt lists spawnable experts only.
    let system = model.requests()[0].messages[0].text().unwrap().to_string();
    assert!(system.contains("newsroom/analyst:"));
    for parked in parked_experts(&catalog) {
        assert!(
            !system.contains(&parked),
            "{parked} offered to the router model"
        );
    }
}

#[tokio::test]
async fn the_model_router_falls_back_on_a_parked_or_unknown_domain_or_garbage() {
    let catalog = catalog();
    let instruction = "Cross-check the claim that the harbour reopened across independent sources";
    for (reply, why) in [
        (
            "{\"routes\": [{\"domain\": \"erp/bookkeeper\", \"instruction\": \"x\"}]}",
            "erp/bookkeeper",
        ),
        (
            "[{\"domain\": \"newsroom/ghost\", \"instruction\": \"x\"}]",
            "newsroom/ghost",
        ),
        ("I think the analyst should do it.", "no JSON"),
        (
            "{\"routes\": [{\"domain\": \"newsroom/analyst\", \"instruction\": \"  \"}]}",
            "no instruction",
        ),
    ] {
        let (router, _) = scripted_router(&catalog, reply);
        let d = router.route(instruction).await.unwrap();
        match &d.method {
            RouteMethod::OfflineFallback { reason, .. } => {
                assert!(reason.contains(why), "{reason}")
            }
            other => panic!("expected a fallback for {reply:?}, got {other:?}"),
        }
        assert_eq!(d.assignments[0].domain, "newsroom/analyst");
    }
    // A failing model falls back too (the script has one turn; the second call fails).
    let (router, model) = scripted_router(&catalog, "{\"routes\": []}");
    let _ = router.route(instruction).await.unwrap();
    let d = router.route(instruction).await.unwrap();
    assert!(
        matches!(&d.method, RouteMethod::OfflineFallback { reason, .. } if reason.contains("router model failed"))
    );
    assert_eq!(model.inner.name(), "router");
}

#[test]
fn the_models_configuration_must_cover_every_spawnable_experts_model() {
    let catalog = catalog();
    let partial = iron::llm::ModelsConfig::from_yaml(
        "backends:\n  demo: {kind: scripted, script: s.yaml}\nlogical:\n  standard: [demo]\n  strong: [demo]\n",
    )
    .unwrap();
    let err = partial.check_catalog(&catalog).unwrap_err().to_string();
    assert!(err.contains("newsroom/monitor uses \"fast\""), "{err}");
    assert!(
        !err.contains("erp/"),
        "parked experts are not checked: {err}"
    );
    let full = iron::llm::ModelsConfig::from_yaml(
        "backends:\n  demo: {kind: scripted, script: s.yaml}\nlogical:\n  fast: [demo]\n  standard: [demo]\n  strong: [demo]\n",
    )
    .unwrap();
    assert!(full.check_catalog(&catalog).is_ok());
}
