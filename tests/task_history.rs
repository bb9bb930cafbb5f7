//! `iron task list`, `iron task show`, `iron task replay` and `iron task fork` on the tasks the
//! README's first command makes: the newsroom's monitor, analyst, editor and publisher, each read back from
//! the log as a timeline (text for a person, JSON for tools) and replayed against its record
//! while `iron up` runs; the analyst's task forked from its start, and the newsroom's job
//! forked at the editor's step with the earlier results reused (`iron jobs fork`); and the
//! desk, `iron desk list` and the console's Desk in a real browser, showing the bulletin with
//! why each claim has its status and its evidence by owner.

mod support;

use std::time::Duration;

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
    let asked: Vec<String> = p
        .events("routing_decided")
        .await
        .iter()
        .filter(|e| e.payload["job"] == fork.as_str())
        .map(|e| e.payload["domain"].as_str().unwrap_or("").to_string())
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
    browse_the_desk(&p);

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

/// The console's Desk in headless Chromium (`tests/ui/desk.mjs`).
fn browse_the_desk(p: &Project) {
    let node = support::browser_driver();
    let (listen, token) = (p.console_listen(), p.console_token());
    let shots = support::screenshots();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ui/desk.mjs");
    let mut browser = p.spawn(
        "browser",
        &node,
        &[
            script,
            &format!("http://{listen}"),
            &token,
            &shots.display().to_string(),
        ],
    );
    let status = browser.wait_exit(Duration::from_secs(120));
    assert!(
        status.is_some_and(|s| s.success()) && browser.output().iter().any(|l| l == "PASS"),
        "the Desk in the browser ({status:?}):\n{}",
        browser.output().join("\n")
    );
}
