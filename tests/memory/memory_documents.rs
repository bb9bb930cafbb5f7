//! Documents saved to memory, through real processes on both log backends: `iron memory save`
//! puts a text file, an HTML page fetched over HTTP and a two-page PDF in the object store and
//! `document_saved` on the log; the documents worker indexes their passages; `iron recall
//! --documents` finds a passage with its document, page and position, within a scope, and
//! never the content of a page's scripts; an expert whose scope reaches a document is given its
//! passages at wake. Bad input is refused with why, and saves nothing.

use crate::support;
use crate::support_llm;

use std::time::Duration;

use iron::core::durable::ObjectStore;
use iron::memory::documents::BUCKET;
use iron::memory::text::sample_pdf;
use iron::protocol::payload::DocumentSaved;
use support::{eventually, project::Project, read};
use support_llm::{FakeServer, Reply};

const BOUND: Duration = Duration::from_secs(90);

const LIST: &str = "nodes:
  - {name: projector, namespace: /iron/memory, executable: projector_node, autostart: true}
  - {name: documents, namespace: /iron/memory, executable: memory_worker, args: [--worker, documents], autostart: true}
";

const PAGE: &str = "<!DOCTYPE html><html><head><title>Port notice</title>\
<script>var hidden = 'quartermaster';</script></head><body><h1>Notice</h1>\
<p>The swing bridge on Quay Street is closed &amp; guarded until Friday.</p></body></html>";

async fn documents_are_saved_and_found(p: Project) {
    p.build_shipped_catalog();
    let _up = p.up(LIST, &[]);
    let page = PAGE.to_string();
    let site = FakeServer::respond(move |_| Reply::Raw(200, page.clone())).await;
    let notice = p.write(
        "notice.txt",
        "Ferries run hourly.\n\nThe ferry terminal reopened on Monday.",
    );
    let report = p.path("report.pdf");
    std::fs::write(
        &report,
        sample_pdf(&[
            "Harbour report, first page.",
            "The drawbridge stays up for repairs.",
        ]),
    )
    .unwrap();
    let other = p.write("core.txt", "A drawbridge in another mesh.");
    let save = |source: &str, scope: &str| {
        p.iron_ok(&[
            "memory",
            "save",
            source,
            "--scope",
            scope,
            "--timeout",
            "30",
        ])
    };
    let url = format!("{}/notice.html", site.url());
    for (source, scope) in [
        (notice.to_str().unwrap(), "facts/newsroom"),
        (url.as_str(), "facts/newsroom"),
        (report.to_str().unwrap(), "facts/newsroom/editor"),
        (other.to_str().unwrap(), "facts/core"),
    ] {
        let said = save(source, scope);
        assert!(said.contains(&format!("-> {scope}")), "{said}");
    }
    let saved: Vec<DocumentSaved> = read(&p.events("document_saved").await);
    assert_eq!(saved.len(), 4, "{saved:#?}");
    let pdf = saved
        .iter()
        .find(|d| d.media_type == "application/pdf")
        .unwrap();
    assert_eq!(pdf.pages, 2);
    // The bytes are in the object store, under their digest.
    let log = p.log().await;
    log.object_open(BUCKET).await.unwrap();
    let stored = log
        .object_get(BUCKET, &pdf.digest)
        .await
        .unwrap()
        .expect("the PDF is in the object store");
    assert_eq!(stored, std::fs::read(&report).unwrap());
    let html = saved
        .iter()
        .find(|d| d.media_type == "text/html")
        .expect("the page, told HTML by its content (served as JSON)");
    assert_eq!(html.name, url);

    // A passage, with its document, page and position; the scope holds.
    let found = eventually("the PDF's passages", BOUND, || async {
        let out = p.iron_ok(&[
            "recall",
            "--documents",
            "drawbridge",
            "--scope",
            "facts/newsroom",
        ]);
        (!out.is_empty()).then_some(out)
    })
    .await;
    let lines: Vec<&str> = found.lines().collect();
    assert_eq!(lines.len(), 1, "{found}");
    // Page 2, the document's second passage, near the start of the page's text.
    let place = format!("{} p.2 #1 @", report.display());
    assert!(lines[0].starts_with(&place), "{found}");
    let offset: usize = lines[0][place.len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(offset < 5, "{found}");
    assert!(lines[0].contains(" [facts/newsroom/editor] "), "{found}");
    assert!(lines[0].contains("stays up for repairs"), "{found}");
    let core = p.iron_ok(&[
        "recall",
        "--documents",
        "drawbridge",
        "--scope",
        "facts/core",
    ]);
    assert!(
        core.contains("another mesh") && core.lines().count() == 1,
        "{core}"
    );
    // The page's text, without its script; the title is part of it.
    let bridge = eventually("the page's passages", BOUND, || async {
        let out = p.iron_ok(&["recall", "--documents", "swing bridge closed"]);
        (!out.is_empty()).then_some(out)
    })
    .await;
    assert!(bridge.contains("Port notice"), "{bridge}");
    assert!(bridge.contains("closed & guarded"), "{bridge}");
    let hidden = p.iron_ok(&["recall", "--documents", "quartermaster"]);
    assert!(
        hidden.is_empty(),
        "a script's text is not a document's: {hidden}"
    );
    // An expert whose scope reaches a document is given its passages at wake; another mesh's
    // expert is given its own mesh's only.
    let asked = "is the drawbridge still up?";
    let woken = eventually(
        "the projection, which a wake reads first",
        BOUND,
        || async {
            let out = p.iron_ok(&["recall", "--as", "newsroom/analyst", asked]);
            (!out.is_empty()).then_some(out)
        },
    )
    .await;
    assert!(woken.contains("From saved documents:"), "{woken}");
    assert!(woken.contains("(p. 2): The drawbridge stays up"), "{woken}");
    assert!(!woken.contains("another mesh"), "{woken}");
    let core = p.iron_ok(&["recall", "--as", "core/assistant", asked]);
    assert!(
        core.contains("another mesh") && !core.contains("repairs"),
        "{core}"
    );
    let status = eventually("every document indexed", BOUND, || async {
        let out = p.iron_ok(&["memory", "status"]);
        out.lines()
            .any(|l| l.starts_with("documents") && l.contains("documents 4 "))
            .then_some(out)
    })
    .await;
    assert!(!status.contains("last error"), "{status}");

    // Bad input: each refused with why, and nothing saved.
    let missing = p.iron(&["memory", "save", "nowhere.txt", "--scope", "facts/newsroom"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("reading nowhere.txt"));
    let outside = p.iron(&[
        "memory",
        "save",
        notice.to_str().unwrap(),
        "--scope",
        "sessions/x",
    ]);
    assert!(!outside.status.success());
    assert!(String::from_utf8_lossy(&outside.stderr).contains("is not under facts/"));
    let binary = p.path("blob.bin");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    let unknown = p.iron(&[
        "memory",
        "save",
        binary.to_str().unwrap(),
        "--scope",
        "facts/newsroom",
    ]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("--type"));
    let fake_pdf = p.write("fake.pdf", "%PDF-1.4 but nothing else");
    let broken = p.iron(&[
        "memory",
        "save",
        fake_pdf.to_str().unwrap(),
        "--scope",
        "facts/newsroom",
    ]);
    assert!(!broken.status.success());
    assert!(String::from_utf8_lossy(&broken.stderr).contains("the PDF cannot be read"));
    assert_eq!(p.events("document_saved").await.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_are_saved_and_found_on_the_embedded_log() {
    documents_are_saved_and_found(Project::offline()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_are_saved_and_found_on_jetstream() {
    documents_are_saved_and_found(Project::offline().with_nats()).await;
}

/// An expert saves documents itself: the newsroom editor, granted `memory/save_document`, asks
/// (scripted) to save a file of its archive, a page at an allowed URL, a page at a URL the
/// deployment does not allow and a governance file. Exactly the first two are saved, in its
/// own memory, as itself; the disallowed URL is never fetched; gate 2 stops the governance
/// file before the bridge; and the saved notice is then found by recall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expert_saves_documents_within_its_grants() {
    let site = FakeServer::respond(|_| Reply::Raw(200, PAGE.to_string())).await;
    let allowed = format!("{}/allowed/notice.html", site.url());
    let private = format!("{}/private/notice.html", site.url());
    let script = format!(
        r#"turns:
  - expect: "harbour notice"
    tool_calls:
      - name: memory__save_document
        arguments: {{path: "workspace/newsroom/notice.txt", title: "Harbour notice"}}
      - name: memory__save_document
        arguments: {{url: "{allowed}"}}
      - name: memory__save_document
        arguments: {{url: "{private}"}}
      - name: memory__save_document
        arguments: {{path: "config/iron.yaml"}}
  - expect: "gate 2"
    text: "Saved the harbour notice and the port page."
"#
    );
    let p =
        Project::scripted(&script).env("IRON_DOCUMENT_URLS", &format!("{}/allowed", site.url()));
    p.build_shipped_catalog();
    p.write(
        "workspace/newsroom/notice.txt",
        "The ferry terminal reopened on Monday after the storm.",
    );
    p.write("config/iron.yaml", "tenant: acme\n");
    let up = p.up_inside(
        "nodes:
  - {name: memory, namespace: /iron/tools, executable: memory_tools, autostart: true}
  - {name: projector, namespace: /iron/memory, executable: projector_node, autostart: true}
  - {name: documents, namespace: /iron/memory, executable: memory_worker, args: [--worker, documents], autostart: true}
  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}
",
        &[],
    );
    for node in ["/iron/tools/memory", "/iron/engine"] {
        up.wait_for(&format!("{node}: active"), BOUND);
    }
    let said = p.iron_ok(&[
        "task",
        "send",
        "--domain",
        "newsroom/editor",
        "--timeout",
        "90",
        "save the harbour notice and the port page",
    ]);
    assert!(said.contains("Saved the harbour notice"), "{said}");

    let saved = p.events("document_saved").await;
    assert_eq!(saved.len(), 2, "{saved:#?}");
    for e in &saved {
        assert_eq!(e.actor, "newsroom/editor");
        assert_eq!(e.namespace_path(), "facts/newsroom/editor");
    }
    let documents: Vec<DocumentSaved> = read(&saved);
    assert_eq!(documents[0].title, "Harbour notice");
    assert_eq!(documents[1].name, allowed);
    let fetched: Vec<String> = site.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        fetched,
        ["/allowed/notice.html"],
        "the other URL is never fetched"
    );
    let results = p.events("tool_result").await;
    assert!(
        results
            .iter()
            .any(|r| r.payload.to_string().contains("IRON_DOCUMENT_URLS")),
        "{results:#?}"
    );
    let denied = p.events("gate_denied").await;
    assert_eq!(denied.len(), 1, "{denied:#?}");
    assert!(denied[0].payload.to_string().contains("config/iron.yaml"));

    let found = eventually("the notice's passage", BOUND, || async {
        let out = p.iron_ok(&["recall", "--documents", "ferry terminal"]);
        (!out.is_empty()).then_some(out)
    })
    .await;
    assert!(found.contains("[facts/newsroom/editor]"), "{found}");
    assert!(found.contains("reopened on Monday"), "{found}");
}
