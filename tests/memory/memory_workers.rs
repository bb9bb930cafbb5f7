//! Memory that learns, through real processes on both log backends: the newsroom's published
//! bulletin becomes facts (extractor) in the publisher's declared scope; another role whose
//! `mesh` scope reaches them is given them at wake (`memory_injected`, `iron recall --as`);
//! a correction supersedes the fact it corrects (consolidator) so recall returns the current
//! belief, and `--history` the one it replaced. And `kill -9` of every worker in the middle of
//! a backlog loses and duplicates nothing. What the publisher learned does not leave with its
//! exported folder.

use crate::support;
use crate::support_llm;

use std::collections::BTreeSet;
use std::time::Duration;

use iron::core::envelope::Envelope;
use iron::core::event_kind::EventKind;
use iron::memory::documents::{Saving, save};
use iron::memory::emit;
use iron::memory::text::MediaType;
use iron::protocol::Payload;
use iron::protocol::payload::{
    FactLearned, FactSuperseded, LessonLearned, MemoryInjected, ReplyDelivered, TaskJudged,
};
use serde_json::{Map, Value, json};
use support::{eventually, project::Project, read, read_one};
use support_llm::{FakeServer, Recorded, Reply, openai_text, openai_tools};

const BOUND: Duration = Duration::from_secs(90);

/// What a `fact_learned` event says.
fn statement(fact: &Envelope) -> String {
    read_one::<FactLearned>(fact)
        .statement
        .unwrap_or_else(|| panic!("a statement: {fact:?}"))
}

/// Whether a `memory_injected` event recalled an event of `kind`.
fn recalled(injected: &Envelope, kind: &str) -> bool {
    read_one::<MemoryInjected>(injected)
        .items
        .iter()
        .any(|i| i.kind == kind)
}

/// The facts in the log, by namespace prefix.
async fn facts(p: &Project, kind: &str, prefix: &str) -> Vec<Envelope> {
    p.events(kind)
        .await
        .into_iter()
        .filter(|e| e.namespace_path().starts_with(prefix))
        .collect()
}

async fn learns_from_the_newsroom(p: Project) {
    let up = p.up(&Project::shipped_launch_list(), &[]);
    // The first bulletin (4 claims) becomes 4 facts in the publisher's own scope.
    let learned = eventually("facts from the first bulletin", BOUND, || async {
        let f = facts(&p, "fact_learned", "facts/newsroom/publisher").await;
        (f.len() >= 4).then_some(f)
    })
    .await;
    assert_eq!(learned.len(), 4, "{learned:#?}");
    let delivered = p.events("reply_delivered").await;
    for f in &learned {
        assert_eq!(f.actor, "memory/extractor");
        let cause = f.cause.as_ref().expect("a derived fact names its cause");
        assert!(
            delivered.iter().any(|d| &d.event_id == cause),
            "{f:?} is caused by a delivery"
        );
    }
    let bridge = learned
        .iter()
        .find(|f| statement(f).contains("bridge"))
        .expect("a fact about the harbour bridge");
    assert_eq!(
        read_one::<FactLearned>(bridge).status.as_deref(),
        Some("confirmed")
    );

    // The analyst's `mesh` scope reaches the publisher's facts: `--as` shows its block.
    let block = eventually("the facts projected", BOUND, || async {
        let out = p.iron(&[
            "recall",
            "--as",
            "newsroom/analyst",
            "is the harbour bridge closed?",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.contains("facts/newsroom/publisher").then_some(text)
    })
    .await;
    assert!(block.starts_with("From your memory (facts/newsroom, facts/system):"));
    assert!(block.contains("Confirmed by"), "{block}");
    // Words the facts do not hold, but near them: full-text search finds nothing, the hybrid
    // recall of a wake (and of `--semantic`) finds the bridge through its vector.
    let near = "harbor bridges shut?";
    let exact = p.iron_ok(&["recall", near, "--scope", "facts/newsroom"]);
    assert!(exact.is_empty(), "{exact}");
    let hybrid = eventually("the bridge fact's vector", BOUND, || async {
        let out = p.iron_ok(&["recall", "--semantic", near, "--scope", "facts/newsroom"]);
        out.contains(bridge.event_id.as_str()).then_some(out)
    })
    .await;
    assert!(
        hybrid
            .lines()
            .next()
            .unwrap()
            .contains(bridge.event_id.as_str()),
        "{hybrid}"
    );
    let woken = p.iron_ok(&["recall", "--as", "newsroom/analyst", near]);
    assert!(woken.contains("Harbour bridge closed"), "{woken}");

    // Another mesh's expert, whose scopes are `facts/core` and `facts/system`, is given none.
    let none = p.iron(&[
        "recall",
        "--as",
        "core/assistant",
        "is the harbour bridge closed?",
    ]);
    assert!(none.status.success() && none.stdout.is_empty(), "{none:?}");
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("reach facts/core, facts/system"),
        "{none:?}"
    );

    // A task of another role is given them, and the log says which.
    let answer = p.iron_ok(&["ask", "is the harbour bridge closed?"]);
    assert!(!answer.trim().is_empty());
    let injected = eventually("memory_injected", BOUND, || async {
        p.events("memory_injected")
            .await
            .into_iter()
            .find(|e| recalled(e, "fact_learned"))
    })
    .await;
    assert_ne!(injected.actor, "newsroom/publisher");
    let ids: BTreeSet<&str> = learned.iter().map(|f| f.event_id.as_str()).collect();
    assert!(
        read_one::<MemoryInjected>(&injected)
            .items
            .iter()
            .any(|i| ids.contains(i.event_id.as_str())),
        "{injected:?}"
    );

    // A new item corroborates the Quay Street report: the correction's fact replaces the
    // single-source one.
    let portside = p.path("feeds/samples/portside.xml");
    let xml = std::fs::read_to_string(&portside).unwrap().replace(
        "  </channel>",
        "    <item>\n      <title>Water main burst floods Quay Street basements, council says</title>\n      <link>https://portside.example/2026/11/30/quay-street</link>\n      <guid>portside-2203</guid>\n      <pubDate>Mon, 30 Nov 2026 09:40:00 +0000</pubDate>\n    </item>\n  </channel>",
    );
    std::fs::write(&portside, xml).unwrap();
    let superseded = eventually("fact_superseded", BOUND, || async {
        p.events("fact_superseded").await.into_iter().next()
    })
    .await;
    let replacement: FactSuperseded = read_one(&superseded);
    assert_eq!(replacement.reason, "replaced");
    assert_eq!(superseded.actor, "memory/consolidator");
    let quay = learned
        .iter()
        .find(|f| statement(f).contains("Quay"))
        .unwrap();
    assert_eq!(replacement.fact, quay.event_id.as_str());
    assert_eq!(
        read_one::<FactLearned>(quay).status.as_deref(),
        Some("single_source")
    );
    let current = eventually("the superseded fact projected", BOUND, || async {
        let out = p.iron_ok(&["recall", "Quay", "--scope", "facts/newsroom"]);
        (!out.contains(quay.event_id.as_str())).then_some(out)
    })
    .await;
    assert_eq!(current.lines().count(), 1, "one current belief: {current}");
    assert!(current.contains("\"confirmed\""), "{current}");
    let history = p.iron_ok(&["recall", "Quay", "--scope", "facts/newsroom", "--history"]);
    assert_eq!(history.lines().count(), 2, "{history}");
    assert!(history.contains(quay.event_id.as_str()), "{history}");

    let status = p.iron_ok(&["memory", "status"]);
    for worker in [
        "projector",
        "extractor",
        "consolidator",
        "semantic",
        "graph",
        "reviewer",
    ] {
        assert!(
            status
                .lines()
                .any(|l| l.starts_with(worker) && l.contains(" at ")),
            "{status}"
        );
    }
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("semantic") && l.contains(" vectors ")),
        "{status}"
    );
    drop(up);
    learning_stays_when_the_folder_travels(&p, &learned);
}

/// The publisher's folder, exported after it learned, holds its portable files and none of
/// what it learned; imported into another deployment, its expert knows nothing there.
fn learning_stays_when_the_folder_travels(p: &Project, learned: &[Envelope]) {
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("aem");
    let out = p.path("export");
    let said = p.iron_ok(&[
        "catalog",
        "export",
        "newsroom/publisher",
        "--aem",
        shipped.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(said.contains("memory stay here"), "{said}");
    let folder = out.join("publisher");
    let files: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, ["SKILL.md"], "no capabilities.md, no state");
    let skill = std::fs::read_to_string(folder.join("SKILL.md")).unwrap();
    assert_eq!(
        skill,
        std::fs::read_to_string(shipped.join("newsroom/skills/publisher/SKILL.md")).unwrap()
    );
    for fact in learned {
        let statement = statement(fact);
        assert!(
            !skill.contains(&statement),
            "{statement} left with SKILL.md"
        );
        assert!(!skill.contains(fact.event_id.as_str()));
    }

    // Another deployment: the newsroom without its publisher, which the import brings back.
    let other = Project::offline();
    let aem = other.path("aem");
    copy_tree(&shipped.join("newsroom"), &aem.join("newsroom"));
    std::fs::remove_dir_all(aem.join("newsroom/skills/publisher")).unwrap();
    let said = other.iron_ok(&[
        "catalog",
        "import",
        folder.to_str().unwrap(),
        "--mesh",
        "newsroom",
        "--aem",
        aem.to_str().unwrap(),
    ]);
    assert!(said.contains("mesh defaults"), "{said}");
    other.build_catalog();
    let asked = statement(&learned[0]);
    let knows = other.iron(&["recall", "--as", "newsroom/publisher", &asked]);
    assert!(
        knows.status.success() && knows.stdout.is_empty(),
        "{knows:?}"
    );
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newsroom_learns_on_the_embedded_log() {
    learns_from_the_newsroom(Project::offline().sample_feeds()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newsroom_learns_on_jetstream() {
    learns_from_the_newsroom(Project::offline().sample_feeds().with_nats()).await;
}

/// The processes `iron ask` needs, and the memory nodes.
const ASK_AND_LEARN: &str = "nodes:
  - {name: delivery, namespace: /iron/tools, executable: delivery_node, autostart: true}
  - {name: projector, namespace: /iron/memory, executable: projector_node, autostart: true}
  - {name: extractor, namespace: /iron/memory, executable: memory_worker, args: [--worker, extractor], autostart: true}
  - {name: consolidator, namespace: /iron/memory, executable: memory_worker, args: [--worker, consolidator], autostart: true}
  - {name: inbox, namespace: /iron, executable: inbox_node, autostart: true}
  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}
";

/// A model that answers questions in prose and, asked to extract facts, lists one.
fn answering_model(request: &Recorded) -> Reply {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let system = messages
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    if system.contains("You extract facts") {
        return Reply::ok(openai_text(
            r#"{"facts": [{"subject": "Harbour Bridge", "statement": "The harbour bridge is closed for inspection until Friday."}]}"#,
        ));
    }
    Reply::ok(openai_text(
        "Yes: the harbour bridge is closed for inspection until Friday.",
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_model_the_extractor_reads_facts_in_answers() {
    let fake = FakeServer::respond(answering_model).await;
    let p = Project::openai(&fake.url());
    let up = p.up(ASK_AND_LEARN, &[]);
    // A message put on the inbox before the inbox listens is heard by nobody.
    for node in ["/iron/inbox", "/iron/engine", "/iron/memory/extractor"] {
        up.wait_for(&format!("{node}: active"), BOUND);
    }
    let out = p.iron(&["ask", "--wait", "90", "is the harbour bridge closed?"]);
    assert!(out.status.success(), "{out:?}");
    let fact = eventually("a fact read in the answer", BOUND, || async {
        p.events("fact_learned").await.into_iter().next()
    })
    .await;
    let learned: FactLearned = read_one(&fact);
    assert_eq!(learned.method.as_deref(), Some("model"));
    assert_eq!(learned.subject.as_deref(), Some("harbour bridge"));
    assert_eq!(
        learned.statement.as_deref(),
        Some("The harbour bridge is closed for inspection until Friday.")
    );
    // The extractor's own field, which the protocol leaves to it.
    let expert = learned.rest["expert"].as_str().unwrap().to_string();
    assert!(
        fact.namespace_path()
            .starts_with(&format!("facts/{expert}")),
        "{fact:?}"
    );
    let judged = p.events("task_judged").await;
    assert!(
        judged
            .iter()
            .any(|j| Some(&j.event_id) == fact.cause.as_ref()),
        "caused by the judgement of the task"
    );
    // The model was given the question and the answer as data.
    let asked = fake
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("You extract facts"))
        .expect("the extractor asked the model");
    let user = asked.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("<question>\nis the harbour bridge closed?\n</question>"),
        "{user}"
    );
    assert!(
        user.contains("closed for inspection until Friday"),
        "{user}"
    );
}

/// A bulletin of `claims` claims, the `n`th delivery of `actor`; claim `i` has status
/// `status(i)`.
fn delivery(actor: &str, n: usize, claims: usize, status: &str) -> Envelope {
    let claims: Vec<Value> = (0..claims)
        .map(|i| {
            json!({"claim": format!("c{i}"), "text": format!("Claim number {i} happened."),
                   "status": status, "sources": [{"outlet": "Wire", "owner": "wire"}]})
        })
        .collect();
    bulletin(actor, n, claims)
}

/// The `n`th delivery of `actor`: a bulletin of `claims`.
fn bulletin(actor: &str, n: usize, claims: Vec<Value>) -> Envelope {
    let delivered = ReplyDelivered {
        task_id: format!("t-bulletin-{n}"),
        delivered: true,
        channel: None,
        text: format!("bulletin {n}"),
        reason: None,
        data: Some(json!({"id": format!("b-{n}"), "claims": claims})),
        rest: Map::new(),
    };
    Envelope::new(
        "default",
        ["sessions", "s"],
        actor,
        EventKind::ReplyDelivered,
        delivered.to_value(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_killed_mid_backlog_lose_and_duplicate_nothing_on_the_embedded_log() {
    killed_mid_backlog(backlog_project().with_router()).await;
}

/// A project for the crash test, whose semantic worker embeds with the built-in hashing
/// embedder: the test is of what a killed worker keeps, and 6,000 facts through the local model
/// (indexed, then rebuilt) would double its time for nothing it checks. The model's own path is
/// tested by the first test here and `tests/memory/model_service.rs`.
fn backlog_project() -> Project {
    let no_model = std::env::temp_dir().join("iron-test-no-models");
    std::fs::create_dir_all(&no_model).unwrap();
    Project::offline().env(iron::llm::local::MODELS_DIR_VAR, no_model.to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_killed_mid_backlog_lose_and_duplicate_nothing_on_jetstream() {
    killed_mid_backlog(backlog_project().with_router().with_nats()).await;
}

/// Every background worker: the three that write events, and the three that write only their
/// own tables.
const WORKERS: [&str; 6] = [
    "extractor",
    "consolidator",
    "reviewer",
    "semantic",
    "graph",
    "documents",
];

/// A role's task judged unanswered for `reason`.
fn judged(task: usize, reason: &str) -> Envelope {
    Envelope::new(
        "default",
        ["sessions", "s"],
        "cognition/engine",
        EventKind::TaskJudged,
        json!({"task_id": format!("t-{task}"), "domain": "core/assistant", "answered": false,
               "instruction": "Summarise the harbour report", "answer": "", "reason": reason}),
    )
}

/// What `iron memory status` says a worker holds in its own tables (vectors, entities,
/// documents and passages), without its cursor and counters.
fn holdings(status: &str, worker: &str) -> String {
    let line = status
        .lines()
        .find(|l| l.starts_with(worker))
        .unwrap_or_else(|| panic!("{worker} in {status}"));
    let after = line.split(" errors ").nth(1).unwrap_or("");
    after
        .split_once(' ')
        .map_or("", |(_, rest)| rest)
        .to_string()
}

async fn killed_mid_backlog(p: Project) {
    p.build_shipped_catalog();
    // A backlog: 1,000 deliveries of 3 claims each, the status of every claim alternating, so
    // each delivery after the first replaces the 3 beliefs of the one before; 40 reasons for
    // which two tasks of core/assistant each failed; 100 saved documents.
    const DELIVERIES: usize = 1_000;
    const CLAIMS: usize = 3;
    const REASONS: usize = 40;
    const DOCUMENTS: usize = 100;
    let log = p.log().await;
    for n in 0..DELIVERIES {
        let status = if n % 2 == 0 {
            "confirmed"
        } else {
            "contradicted"
        };
        emit(&log, &delivery("newsroom/publisher", n, CLAIMS, status))
            .await
            .unwrap();
        if n % 25 == 0 {
            // Reasons differ in words, not numbers (the reviewer folds numbers).
            let word: String = [b'a' + (n / 25 / 26) as u8, b'a' + (n / 25 % 26) as u8]
                .map(char::from)
                .iter()
                .collect();
            let reason = format!("error: the {word} archive refused the request");
            emit(&log, &judged(2 * n, &reason)).await.unwrap();
            emit(&log, &judged(2 * n + 1, &reason)).await.unwrap();
        }
        if n % 10 == 0 {
            let doc = Saving {
                name: format!("note-{n}.txt"),
                title: String::new(),
                kind: MediaType::Text,
                bytes: format!("Harbour note {n}: the quay was inspected.").into_bytes(),
            };
            save(&log, "default", "facts/newsroom", "operator/test", doc)
                .await
                .unwrap();
        }
    }
    let spawn = |worker: &str| {
        p.start_active(
            &support::bin("memory_worker"),
            &format!("/iron/memory/{worker}"),
            &["--worker", worker],
        )
    };
    // The extractor starts last: started first, it could work through the whole backlog while
    // the other five are brought up one by one (it did, once, on JetStream).
    let running: Vec<_> = WORKERS.iter().rev().map(|w| spawn(w)).collect();
    // Kill all of them as soon as the extractor has written part of its facts (the index and
    // graph follow those facts, so they are mid-stream too).
    let at_kill = eventually("some facts", BOUND, || async {
        let n = p.events("fact_learned").await.len();
        (n > 0).then_some(n)
    })
    .await;
    for worker in &running {
        worker.signal(libc::SIGKILL);
    }
    assert!(
        at_kill < DELIVERIES * CLAIMS,
        "the extractor finished before it was killed ({at_kill} facts); the test missed its window"
    );
    let mut running: Vec<_> = WORKERS.iter().map(|w| spawn(w)).collect();
    let expected_superseded = (DELIVERIES - 1) * CLAIMS;
    let events = eventually("every fact, supersession and lesson", BOUND, || async {
        let all = p.all_events().await;
        let count = |kind| all.iter().filter(|e| e.kind == kind).count();
        (count(EventKind::FactSuperseded) >= expected_superseded
            && count(EventKind::LessonLearned) >= REASONS)
            .then_some(all)
    })
    .await;
    // Let anything still in flight land, then count exactly.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = {
        let again = p.all_events().await;
        assert_eq!(
            again.len(),
            events.len(),
            "still writing after the last supersession"
        );
        again
    };
    let of =
        |kind: EventKind| -> Vec<&Envelope> { events.iter().filter(|e| e.kind == kind).collect() };
    let learned = of(EventKind::FactLearned);
    let superseded = of(EventKind::FactSuperseded);
    assert_eq!(learned.len(), DELIVERIES * CLAIMS, "every fact, once");
    assert_eq!(
        superseded.len(),
        expected_superseded,
        "every replacement, once"
    );
    assert_eq!(
        of(EventKind::LessonLearned).len(),
        REASONS,
        "every lesson, once"
    );
    let unique: BTreeSet<_> = events.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(unique.len(), events.len(), "no event id twice in the log");
    for s in &superseded {
        assert_eq!(read_one::<FactSuperseded>(s).reason, "replaced");
    }
    let caught_up = || async {
        let status = p.iron_ok(&["memory", "status"]);
        WORKERS
            .iter()
            .all(|w| {
                status
                    .lines()
                    .any(|l| l.starts_with(w) && l.contains("lag 0 "))
            })
            .then_some(status)
    };
    let status = eventually("every worker caught up", BOUND, caught_up).await;
    assert!(!status.contains("last error"), "{status}");

    // The workers that keep only their own tables hold what a worker that never died holds:
    // rebuilt from the log after their state is deleted, they end with the same.
    let survivors: Vec<(&str, String)> = ["semantic", "graph", "documents"]
        .into_iter()
        .map(|w| (w, holdings(&status, w)))
        .collect();
    assert!(
        survivors[0].1.contains("vectors ")
            && survivors[1].1.contains("entities ")
            && survivors[2]
                .1
                .starts_with(&format!("documents {DOCUMENTS} passages {DOCUMENTS}")),
        "{status}"
    );
    for (worker, _) in &survivors {
        let i = WORKERS.iter().position(|w| w == worker).unwrap();
        running[i].signal(libc::SIGKILL);
        running[i].wait_exit(BOUND);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(p.path(&format!("memory/{worker}.db{suffix}")));
        }
        running[i] = spawn(worker);
    }
    let rebuilt = eventually("the rebuilt workers caught up", BOUND, caught_up).await;
    for (worker, held) in &survivors {
        assert_eq!(&holdings(&rebuilt, worker), held, "{worker}: {rebuilt}");
    }
}

/// The processes `iron task send` needs, and the projector and the procedural reviewer.
const TASKS_AND_REVIEW: &str = "nodes:
  - {name: delivery, namespace: /iron/tools, executable: delivery_node, autostart: true}
  - {name: projector, namespace: /iron/memory, executable: projector_node, autostart: true}
  - {name: reviewer, namespace: /iron/memory, executable: memory_worker, args: [--worker, reviewer], autostart: true}
  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}
";

/// Why the role's tasks fail: its expert's model keeps asking for a tool until its budget of
/// model calls is spent.
const REASON: &str = "max_iterations: the budget of 24 model calls is spent";

/// A model that asks for a tool at every turn until the request holds a lesson, then answers.
fn failing_until_taught(request: &Recorded) -> Reply {
    if request.body.to_string().contains("Lessons for your role") {
        return Reply::ok(openai_text("Summarised, in three lines this time."));
    }
    Reply::ok(openai_tools(&[("call_1", "harbour_archive", json!({}))]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_failures_become_a_lesson_the_next_expert_is_shown() {
    let fake = FakeServer::respond(failing_until_taught).await;
    let p = Project::openai(&fake.url());
    let up = p.up(TASKS_AND_REVIEW, &[]);
    for node in ["/iron/engine", "/iron/memory/reviewer"] {
        up.wait_for(&format!("{node}: active"), BOUND);
    }
    let send = |n: u32| {
        p.iron(&[
            "task",
            "send",
            "--domain",
            "core/assistant",
            "--wait",
            "90",
            &format!("Summarise the harbour report number {n}"),
        ])
    };
    // Two tasks of core/assistant (which declares procedural memory) fail for one reason.
    for n in 1..=2 {
        let out = send(n);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.status.success() && said.contains("max_iterations"),
            "task {n} spent its budget: {out:?}"
        );
    }
    let judged = eventually("both judgements", BOUND, || async {
        let judged = p.events("task_judged").await;
        (judged.len() >= 2).then_some(judged)
    })
    .await;
    assert_eq!(judged.len(), 2, "{judged:#?}");
    for j in read::<TaskJudged>(&judged) {
        assert!(!j.answered, "{j:?}");
        assert!(
            j.reason.as_deref().unwrap().contains(REASON),
            "the judgement says why: {j:?}"
        );
    }
    let lesson = eventually("a lesson", BOUND, || async {
        p.events("lesson_learned").await.into_iter().next()
    })
    .await;
    assert_eq!(lesson.actor, "memory/reviewer");
    assert_eq!(lesson.namespace_path(), "facts/core/assistant");
    let learned: LessonLearned = read_one(&lesson);
    assert_eq!(learned.failures, 2);
    assert_eq!(lesson.cause.as_ref(), Some(&judged[1].event_id));
    assert!(learned.statement.contains(REASON), "{lesson:?}");
    // What the role's next expert would be given, whatever the task.
    let shown = eventually("the lesson projected", BOUND, || async {
        let out = p.iron_ok(&["recall", "--as", "core/assistant", "anything at all"]);
        out.contains("Lessons for your role").then_some(out)
    })
    .await;
    assert!(shown.contains(REASON), "{shown}");
    // Another role, which declares no procedural memory, is not shown it.
    let other = p.iron(&["recall", "--as", "core/writer", "anything at all"]);
    assert!(
        !String::from_utf8_lossy(&other.stdout).contains("Lessons"),
        "{other:?}"
    );
    // The next task of the role is given it, and so succeeds.
    let out = send(3);
    assert!(out.status.success(), "{out:?}");
    let injected = eventually("memory_injected", BOUND, || async {
        p.events("memory_injected")
            .await
            .into_iter()
            .find(|e| recalled(e, "lesson_learned"))
    })
    .await;
    assert_eq!(injected.actor, "core/assistant");
    let taught = fake
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("Lessons for your role"))
        .expect("the model was shown the lesson");
    assert!(taught.body.to_string().contains(REASON));
}

/// The processes that turn a delivered bulletin into facts with vectors and entities.
const LEARN_AND_EMBED: &str = "nodes:
  - {name: projector, namespace: /iron/memory, executable: projector_node, autostart: true}
  - {name: extractor, namespace: /iron/memory, executable: memory_worker, args: [--worker, extractor], autostart: true}
  - {name: semantic, namespace: /iron/memory, executable: memory_worker, args: [--worker, semantic], autostart: true}
  - {name: graph, namespace: /iron/memory, executable: memory_worker, args: [--worker, graph], autostart: true}
";

/// An embedding server that knows two meanings: closure (closed, shut, blocked) and flooding
/// (flooded, water, inundated). Texts of one meaning are near each other whatever their words.
fn embedding_server(request: &Recorded) -> Reply {
    if !request.path.ends_with("/embeddings") {
        return Reply::status(404, json!({"error": {"message": "not here"}}));
    }
    let meaning = |text: &str, words: &[&str]| {
        let text = text.to_lowercase();
        if words.iter().any(|w| text.contains(w)) {
            1.0
        } else {
            0.0
        }
    };
    let data: Vec<Value> = request.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let text = text.as_str().unwrap();
            json!({"index": i, "embedding": [
                meaning(text, &["closed", "shut", "blocked"]),
                meaning(text, &["flooded", "water", "inundated"]),
                0.1,
            ]})
        })
        .collect();
    Reply::ok(json!({"object": "list", "data": data, "model": request.body["model"]}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_embeddings_endpoint_finds_facts_by_meaning() {
    let fake = FakeServer::respond(embedding_server).await;
    let url = fake.url();
    let p = Project::configured(&format!(
        "models:\n  backends:\n    chat:\n      kind: openai\n      base_url: {url}/v1\n      model: fake-gpt\n    embed:\n      kind: openai\n      base_url: {url}/v1\n      model: fake-embed\n  logical:\n    fast: [chat]\n    standard: [chat]\n    strong: [chat]\n  retry: {{max_attempts: 1}}\n  embeddings: embed\n"
    ));
    p.build_shipped_catalog();
    let _up = p.up(LEARN_AND_EMBED, &[]);
    let log = p.log().await;
    let bulletin = bulletin(
        "newsroom/publisher",
        1,
        vec![
            json!({"claim": "c-bridge", "text": "The harbour bridge is closed.", "status": "confirmed",
                   "sources": [{"outlet": "Harbour Authority", "owner": "city"}]}),
            json!({"claim": "c-quay", "text": "Quay Street basements flooded.", "status": "single_source",
                   "sources": [{"outlet": "Portside", "owner": "portside"}]}),
        ],
    );
    emit(&log, &bulletin).await.unwrap();
    let status = eventually("both facts embedded by the server", BOUND, || async {
        let out = p.iron_ok(&["memory", "status"]);
        out.contains("vectors 2 (openai/fake-embed)").then_some(out)
    })
    .await;
    assert!(!status.contains("hashing"), "{status}");
    // The facts of one batch go to the server together.
    let embedded: usize = fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/embeddings")
        .map(|r| r.body["input"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(embedded >= 2, "every fact sent to be embedded: {embedded}");

    // No word of the question is in the fact; its meaning is.
    // (The projector may still be behind the semantic index: wait for the facts.)
    let question = "is the crossing shut?";
    let found = eventually("both facts projected", BOUND, || async {
        let out = p.iron(&[
            "recall",
            "--semantic",
            question,
            "--scope",
            "facts/newsroom",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && text.lines().count() == 2).then_some(text)
    })
    .await;
    let words = p.iron_ok(&["recall", question, "--scope", "facts/newsroom"]);
    assert!(words.is_empty(), "{words}");
    let first = found.lines().next().unwrap_or_default();
    assert!(first.contains("harbour bridge is closed"), "{found}");
    // A wake embeds the task with the same server.
    let woken = p.iron_ok(&["recall", "--as", "newsroom/analyst", question]);
    assert!(woken.contains("harbour bridge is closed"), "{woken}");

    // The knowledge graph: who said what, and where.
    // (Until the graph node has configured, there is no graph to ask: an error that says so.)
    let authority = eventually("the graph", BOUND, || async {
        let out = p.iron(&["recall", "--graph", "harbour authority"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    })
    .await;
    let lines: Vec<&str> = authority.lines().collect();
    assert_eq!(lines[0], "Harbour Authority", "{authority}");
    assert_eq!(lines.len(), 2, "one fact names it: {authority}");
    assert!(lines[1].starts_with("source "), "{authority}");
    assert!(lines[1].contains("harbour bridge is closed"), "{authority}");
    let quay = p.iron_ok(&[
        "recall",
        "--graph",
        "Quay Street",
        "--scope",
        "facts/newsroom",
    ]);
    assert!(
        quay.lines().nth(1).unwrap().starts_with("mentioned "),
        "{quay}"
    );
    assert!(
        quay.lines()
            .any(|l| l == "related Portside (1 fact(s), as source)"),
        "{quay}"
    );
    let elsewhere = p.iron_ok(&["recall", "--graph", "Quay Street", "--scope", "facts/core"]);
    assert!(elsewhere.is_empty(), "{elsewhere}");
    let status = p.iron_ok(&["memory", "status"]);
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("graph") && l.contains(" entities ")),
        "{status}"
    );
}
