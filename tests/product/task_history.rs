//! `iron task list`, `iron task show`, `iron task replay` and `iron task fork` on the tasks the
//! README's first command makes: the newsroom's monitor, analyst, editor and publisher, each read back from
//! the log as a timeline (text for a person, JSON for tools) and replayed against its record
//! while `iron up` runs; the analyst's task forked from its start, and the newsroom's job
//! forked at the editor's step with the earlier results reused (`iron jobs fork`); and the
//! desk, `iron desk list` and the console's Desk in a real browser, showing the bulletin with
//! why each claim has its status and its evidence by owner. Then the editor's hold: with the
//! trigger's `review: editor`, each bulletin waits on the Desk until an operator releases it
//! (from the page, or with `iron desk release --wording`) or drops it (`iron desk drop`).

use crate::support;

use std::time::Duration;

use iron::protocol::payload::RoutingDecided;
use serde_json::Value;
use support::{eventually, project::Project};

const T: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_show_tells_what_each_newsroom_task_did() {
    let p = Project::offline().sample_feeds();
    let mut up = p.up(&Project::shipped_launch_list(), &[]);
    eventually("the four experts judged", T, || async {
        (p.events("task_judged").await.len() >= 4 && !p.outbox().is_empty()).then_some(())
    })
    .await;

    let list = p.iron_ok(&["task", "list"]);
    let id_of = |role: &str| -> String {
        let line = list
            .lines()
            .find(|l| l.contains(&format!(" newsroom/{role} ")))
            .unwrap_or_else(|| panic!("no {role} task in:\n{list}"));
        assert!(line.contains(" succeeded "), "{line}");
        line.split_whitespace().next().unwrap().to_string()
    };
    let only_analyst = p.iron_ok(&["task", "list", "--domain", "newsroom/analyst"]);
    assert_eq!(only_analyst.lines().count(), 1, "{only_analyst}");

    for role in ["monitor", "analyst", "editor", "publisher"] {
        let id = id_of(role);
        // Any unique prefix names the task.
        let text = p.iron_ok(&["task", "show", &id[..10]]);
        assert!(
            text.starts_with(&format!("task {id}  newsroom/{role}  succeeded")),
            "{text}"
        );
        assert!(
            text.contains("step ") && text.contains(" of job t-"),
            "{text}"
        );
        for label in ["routed", "woke", "model", "finished", "ran", "judged"] {
            assert!(
                text.lines()
                    .any(|l| l.split_whitespace().nth(3) == Some(label)),
                "no {label} step for the {role}:\n{text}"
            );
        }
        let json: Value = serde_json::from_str(&p.iron_ok(&["task", "show", &id, "--json"]))
            .unwrap_or_else(|e| panic!("--json is JSON: {e}"));
        assert_eq!(json["task_id"], id.as_str());
        assert_eq!(json["domain"], format!("newsroom/{role}"));
        let steps = json["steps"].as_array().unwrap();
        let kinds: Vec<&str> = steps.iter().map(|s| s["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds.first(), Some(&"routing_decided"), "{kinds:?}");
        assert_eq!(kinds.last(), Some(&"task_judged"), "{kinds:?}");
        let ts: Vec<u64> = steps.iter().map(|s| s["ts"].as_u64().unwrap()).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "in order: {ts:?}");
        // Each model call says how much it was asked.
        let call = steps.iter().find(|s| s["kind"] == "model_called").unwrap();
        assert!(
            call["payload"]["prompt"]["messages"].as_u64().unwrap() >= 2,
            "{call:#}"
        );
        assert!(
            call["payload"]["prompt"]["chars"].as_u64().unwrap() > 100,
            "{call:#}"
        );
        assert!(
            json["spend"]["model_calls"].as_u64().unwrap() >= 1,
            "{json:#}"
        );
        // Replayed now against its record, nothing changed: it matches.
        let replay = p.iron_ok(&["task", "replay", &id[..10]]);
        assert!(replay.contains("matches the record"), "{replay}");
        match role {
            "monitor" => assert!(
                text.contains("perceived") && text.contains("news_wires ("),
                "the monitor read its sources:\n{text}"
            ),
            "publisher" => assert!(
                text.contains("delivered") && text.contains("to bulletins: \"[b-"),
                "the publisher's delivery:\n{text}"
            ),
            _ => {}
        }
    }

    // A fork of the analyst's task runs from its recorded start as a task of its own (no
    // job's: it performs no structured task, and signals no job), and the analyst's task
    // shows it as another branch.
    let analyst = id_of("analyst");
    let forked = p.iron_ok(&["task", "fork", &analyst, "--at", "1", "--wait", "60"]);
    let result: Value = serde_json::from_str(forked.lines().last().unwrap()).unwrap();
    assert_eq!(result["goal_status"], "succeeded", "{forked}");
    let show = p.iron_ok(&["task", "show", &analyst]);
    assert!(
        show.contains("another branch, forked at model call 1:"),
        "{show}"
    );
    assert!(show.contains("to newsroom/analyst (a fork)"), "{show}");

    // The job forked at the editor's step: the grouping and the cross-check are reused from
    // its journal (no monitor or analyst is asked again), the editor is asked live, and the
    // publish, already in the outbox, is observed there and not sent twice.
    let jobs = p.iron_ok(&["jobs", "list"]);
    let job = jobs.split_whitespace().next().unwrap().to_string();
    let fork = p.iron_ok(&["jobs", "fork", &job, "--at", "write#0"]);
    let fork = fork.trim().to_string();
    let diary = eventually("the forked job done", T, || async {
        let show = p.iron_ok(&["jobs", "show", &fork]);
        show.contains(": done").then_some(show)
    })
    .await;
    assert!(diary.contains(&format!("[fork/{job}]")), "{diary}");
    let asked: Vec<String> = support::read::<RoutingDecided>(&p.events("routing_decided").await)
        .into_iter()
        .filter(|r| r.job.as_deref() == Some(fork.as_str()))
        .map(|r| r.domain)
        .collect();
    assert!(
        !asked.iter().any(|d| d == "newsroom/monitor"),
        "the grouping was reused: {asked:?}"
    );
    assert!(asked.iter().any(|d| d == "newsroom/editor"), "{asked:?}");
    assert_eq!(p.outbox().len(), 1, "never published twice");
    let nowhere = p.iron(&["jobs", "fork", &job, "--at", "no-such-step"]);
    let why = String::from_utf8_lossy(&nowhere.stderr);
    assert!(
        why.contains("its steps, in order: group#0, cross_check#0"),
        "{why}"
    );

    // The desk: the bulletin on the command line, and in the console's Desk in a real
    // browser, with why each claim has its status and its evidence drawn by owner.
    let desk = p.iron_ok(&["desk", "list"]);
    assert!(
        desk.starts_with("b-") && desk.contains(" on bulletins"),
        "{desk}"
    );
    for want in [
        "confirmed     Harbour bridge closed",
        "3 independent owners: coastal-media, harbour-authority, portside-media",
        "disputed by harbour-authority; supported by 1 independent owner: coastal-media",
        "one source: coastal-media (2 outlets)",
    ] {
        assert!(desk.contains(want), "no {want:?} in:\n{desk}");
    }
    let only = p.iron_ok(&["desk", "list", "--status", "contradicted"]);
    assert_eq!(
        only.lines().count(),
        3,
        "the bulletin, its one claim and why:\n{only}"
    );
    // The console's Desk in headless Chromium.
    p.browse("desk.mjs", &[]);

    // A person's mistakes are refused with what to do.
    let unknown = p.iron(&["task", "show", "no-such-task"]);
    assert!(!unknown.status.success());
    let why = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        why.contains("no task \"no-such-task\"") && why.contains("iron task list"),
        "{why}"
    );
    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("iron up stops on SIGINT");
}

/// The shipped `aem/` copied into the project with the newsroom's trigger input given
/// `review`, for `iron up --aem`.
fn newsroom_with_review(p: &Project, review: &str) -> String {
    let aem = p.path("aem");
    support::copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("aem"),
        &aem,
    );
    let mesh = aem.join("newsroom/AEM.md");
    let text = std::fs::read_to_string(&mesh).unwrap();
    let anchor = "      channel: bulletins\n      dest: terminal\n";
    assert!(text.contains(anchor), "the newsroom's trigger input moved");
    let text = text.replace(anchor, &format!("{anchor}      review: {review}\n"));
    std::fs::write(&mesh, text).unwrap();
    aem.display().to_string()
}

/// Adds an item to the sample feed `feed` (an RSS file under `feeds/samples/`).
fn add_item(p: &Project, feed: &str, title: &str, guid: &str) {
    let path = p.path(&format!("feeds/samples/{feed}"));
    let xml = std::fs::read_to_string(&path).unwrap().replace(
        "  </channel>",
        &format!(
            "    <item>\n      <title>{title}</title>\n      <link>https://{guid}.example/</link>\n      <guid>{guid}</guid>\n      <pubDate>Mon, 30 Nov 2026 11:00:00 +0000</pubDate>\n    </item>\n  </channel>"
        ),
    );
    std::fs::write(&path, xml).unwrap();
}

/// The first held bulletin `iron desk list --json` shows.
fn held(p: &Project) -> Option<Value> {
    let list: Value = serde_json::from_str(&p.iron_ok(&["desk", "list", "--json"])).unwrap();
    list["held"].as_array().and_then(|h| h.first().cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_releases_edits_or_drops_each_held_bulletin() {
    let p = Project::offline().sample_feeds();
    p.operator("ed");
    let aem = newsroom_with_review(&p, "editor");
    let mut up = p.up(&Project::shipped_launch_list(), &["--aem", &aem]);
    let first = eventually("the first bulletin held", T, || async { held(&p) }).await;
    let id = first["id"].as_str().unwrap().to_string();
    assert_eq!(first["claims"].as_array().unwrap().len(), 4, "{first:#}");
    assert_eq!(
        first["why"].as_array().unwrap().len(),
        4,
        "every claim is held: {first:#}"
    );
    let text = p.iron_ok(&["desk", "list"]);
    assert!(
        text.starts_with(&format!("{id}  HELD since "))
            && text.contains("  held: confirmed on 3 independent owners: "),
        "{text}"
    );
    assert!(p.outbox().is_empty(), "nothing goes out while held");
    let jobs = p.iron_ok(&["jobs", "list"]);
    assert!(jobs.contains("waiting on approval:release#0"), "{jobs}");

    // Released from the page (a missing or forged token refused first).
    p.browse("hold.mjs", &[&id]);
    let sent = eventually("the released bulletin sent", T, || async {
        p.outbox().into_iter().next()
    })
    .await;
    assert_eq!(sent["bulletin"]["id"], id.as_str());
    assert!(held(&p).is_none());

    // A correction, released with the editor's wording from the command line.
    add_item(
        &p,
        "portside.xml",
        "Water main burst floods Quay Street basements, council says",
        "portside-2203",
    );
    let second = eventually("the correction held", T, || async { held(&p) }).await;
    let second = second["id"].as_str().unwrap().to_string();
    assert_ne!(second, id);
    let mistaken = p.iron(&["desk", "release", "b-nope"]);
    let why = String::from_utf8_lossy(&mistaken.stderr);
    assert!(
        !mistaken.status.success() && why.contains(&format!("held now: {second}")),
        "{why}"
    );
    let done = p.iron_ok(&[
        "desk",
        "release",
        &second[..8],
        "--wording",
        "CORRECTION: Quay Street flooding now confirmed by two owners.",
    ]);
    assert!(
        done.starts_with(&format!("{second}: released (job ")),
        "{done}"
    );
    let edited = eventually("the edited bulletin sent", T, || async {
        p.outbox().into_iter().nth(1)
    })
    .await;
    assert_eq!(
        edited["text"],
        format!("[{second}] CORRECTION: Quay Street flooding now confirmed by two owners.")
    );
    assert_eq!(edited["bulletin"]["edited"], true);

    // A new story, dropped: nothing is sent, and the job ends saying so.
    add_item(
        &p,
        "portside.xml",
        "Council opens new library on Mill Lane",
        "portside-2301",
    );
    let third = eventually("the new story held", T, || async { held(&p) }).await;
    let third = third["id"].as_str().unwrap().to_string();
    let done = p.iron_ok(&["desk", "drop", &third, "--note", "not news"]);
    assert!(done.starts_with(&format!("{third}: dropped")), "{done}");
    let jobs = eventually("the dropping job done", T, || async {
        let jobs = p.iron_ok(&["jobs", "list"]);
        (!jobs.contains("waiting") && !jobs.contains("runnable")).then_some(jobs)
    })
    .await;
    assert!(!jobs.contains("parked"), "{jobs}");
    let list = p.iron_ok(&["desk", "list"]);
    assert!(!list.contains("HELD") && !list.contains(&third), "{list}");
    assert!(
        list.contains(&format!("{second}  ")) && list.contains("worded by an editor"),
        "{list}"
    );
    let again = p.iron(&["desk", "drop", &id]);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("none is held now"),
        "a released bulletin is no longer held: {again:?}"
    );
    assert_eq!(p.outbox().len(), 2, "{:#?}", p.outbox());
    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("iron up stops on SIGINT");
}
