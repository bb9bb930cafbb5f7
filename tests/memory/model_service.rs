//! The model service over real ROS 2 (router + the model_node process + a caller in this
//! process): the vectors it answers are the local model's own, an oversized request is refused
//! and the node keeps serving, a node without the model says why, and a caller whose launch has
//! no model node is told so once, fast, instead of waiting on every call.
//!
//! The weights are the real ones (`scripts/test.sh` pulls them); a missing model fails these
//! tests with the command that fetches it.

use crate::support;

use std::time::{Duration, Instant};

use iron::{
    llm::local::{self, LocalEmbedder, ServiceEmbedder, service},
    memory::semantic::Embedder,
    spine::control::{ControlConfig, ControlPlane},
};
use support::{bin, project::Project};

const T: Duration = Duration::from_secs(30);

/// A caller's node on `p`'s router, with the connection that keeps it open.
async fn caller(p: &Project, name: &str) -> (ControlPlane, hiroz::node::ZNode) {
    let control = ControlPlane::connect(ControlConfig {
        router: p.router().to_string(),
        domain_id: 0,
    })
    .await
    .unwrap();
    let node = control.node(name, "/").unwrap();
    control.wait_for_router(&node, T).await.unwrap();
    (control, node)
}

fn models_dir() -> std::path::PathBuf {
    let dir = local::models_dir_from_env(None).expect("a models directory");
    assert!(
        local::looks_pulled(&dir, &local::MINILM_L6_V2),
        "the local model is needed here: run `cargo run --bin iron -- models pull` (scripts/test.sh does)"
    );
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_answers_the_local_models_vectors_and_refuses_oversized_requests() {
    let dir = models_dir();
    let p = Project::offline()
        .env(local::MODELS_DIR_VAR, dir.to_str().unwrap())
        .with_router();
    let node = p.start_active(&bin("model_node"), "/iron/models", &[]);
    node.wait_for("serving local/all-MiniLM-L6-v2", T);
    let (_control, node) = caller(&p, "embed_test").await;
    let embedder = ServiceEmbedder::new(&node, T).unwrap();

    let texts: Vec<String> = [
        "Ferry services suspended after storm damage to the pier",
        "Central bank raises interest rates by half a point",
    ]
    .map(String::from)
    .to_vec();
    let served = embedder
        .embed(&texts)
        .await
        .expect("vectors from the service");
    let here = LocalEmbedder::load(&dir).unwrap();
    let local = Embedder::embed(&here, &texts).await.unwrap();
    assert_eq!(embedder.name(), here.name());
    assert_eq!(served.len(), 2);
    for (a, b) in served.iter().zip(&local) {
        assert_eq!(a.len(), local::DIMS);
        let cos: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        assert!(
            cos > 0.9999,
            "the service's vector is not the model's: {cos}"
        );
    }

    // Texts embedded before are answered from the node's memory, mixed with new ones in the
    // order asked: each the same vector as before, the new one the model's own.
    let again: Vec<String> = vec![
        texts[1].clone(),
        "Council approves new library for the old market hall".into(),
        texts[0].clone(),
    ];
    let mixed = embedder.embed(&again).await.expect("vectors again");
    assert_eq!(mixed[0], served[1]);
    assert_eq!(mixed[2], served[0]);
    let fresh = Embedder::embed(&here, &again[1..2]).await.unwrap();
    let cos: f32 = mixed[1].iter().zip(&fresh[0]).map(|(x, y)| x * y).sum();
    assert!(cos > 0.9999, "the new text's vector is not its own: {cos}");

    // More texts than one request carries: the client splits them, order kept.
    let many: Vec<String> = (0..service::MAX_TEXTS + 3)
        .map(|i| format!("report number {i} on the harbour"))
        .collect();
    let vectors = embedder.embed(&many).await.expect("a split request");
    assert_eq!(vectors.len(), many.len());
    let last = Embedder::embed(&here, &many[many.len() - 1..])
        .await
        .unwrap();
    let cos: f32 = vectors[many.len() - 1]
        .iter()
        .zip(&last[0])
        .map(|(x, y)| x * y)
        .sum();
    assert!(cos > 0.9999, "{cos}");

    // A raw oversized request is refused by the node, which goes on serving; a huge text is
    // read only up to its limit.
    let client = {
        use hiroz::Builder;
        node.create_client::<iron::interfaces::Embed>(service::SERVICE)
            .build()
            .unwrap()
    };
    let request = iron::interfaces::EmbedRequest {
        texts: vec!["x".into(); service::MAX_TEXTS + 1],
    };
    let refused = client.call_with_timeout(&request, T).await.unwrap();
    assert!(!refused.ok);
    assert!(refused.error.contains("at most 256"), "{}", refused.error);
    let huge = vec!["flood ".repeat(200_000)];
    assert_eq!(embedder.embed(&huge).await.unwrap().len(), 1);
    assert_eq!(embedder.embed(&texts[..1]).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_model_the_node_says_why_and_without_the_node_a_caller_is_told_once() {
    let empty = tempfile::tempdir().unwrap();
    let p = Project::offline()
        .env(local::MODELS_DIR_VAR, empty.path().to_str().unwrap())
        .with_router();
    let node = p.start_active(&bin("model_node"), "/iron/models", &[]);
    node.wait_for("no local model", T);
    let texts = vec!["Bridge closed".to_string()];
    let (_control, node) = caller(&p, "embed_test").await;
    let embedder = ServiceEmbedder::new(&node, T).unwrap();
    let e = embedder.embed(&texts).await.unwrap_err().to_string();
    assert!(e.contains("models pull"), "{e}");

    // Another router, no model node: the first call gives up once the graph shows no server
    // (within half a second), the next at once.
    let lone = Project::offline().with_router();
    let (_lone_control, lone_node) = caller(&lone, "lonely").await;
    let embedder = ServiceEmbedder::new(&lone_node, T).unwrap();
    let first = Instant::now();
    let e = embedder.embed(&texts).await.unwrap_err().to_string();
    assert!(e.contains("not reachable"), "{e}");
    assert!(
        first.elapsed() < T,
        "the discovery window bounds the first call"
    );
    let again = Instant::now();
    assert!(embedder.embed(&texts).await.is_err());
    // Not a timing measure: a second call that looked again would wait on the graph.
    assert!(
        again.elapsed() < Duration::from_millis(1500),
        "the second call waited {:?}",
        again.elapsed()
    );
}
