//! Python flows through the real runner: the shipped helper gives the same ctx calls and
//! exits; an early approval is kept; editing a flow file under a job in flight parks it, and
//! resume after restoring or cancel both work; a flow that raises, prints garbage on stdout or
//! exits mid-step parks with the error while the runner goes on.

use crate::support;
use crate::world;

use std::path::{Path, PathBuf};

use iron::jobs::event::JobEvent;
use iron::jobs::journal::read_diary;
use iron::jobs::{JobState, Stored, state_of};
use iron::spine::durable::AnyLog;
use serde_json::json;
use support::project::Project;
use world::T;

const GOOD: &str = r#"
from iron_flow import Parked

def record(path, name):
    with open(path, "a") as f:
        f.write(name + "\n")
    print("recorded", name)          # goes to stderr: stdout is the protocol
    return name

def post(path):
    with open(path + ".world", "a") as f:
        f.write("posted\n")

def posted(path):
    try:
        with open(path + ".world") as f:
            return "posted" in f.read().split()
    except FileNotFoundError:
        return None

def run(ctx, input):
    a = ctx.step("a", record, input["record"], "a")
    go = ctx.wait_signal("go")
    answer = ctx.wait_approval("publish", "publish it?")
    if not answer["approved"]:
        raise Parked("not approved")
    b = ctx.step("b", record, input["record"], "b")
    seen = ctx.effect("post", post, posted, input["record"])
    return {"a": a, "go": go, "note": answer["note"], "b": b, "seen": seen}
"#;

const RAISES: &str = r#"
def one():
    return 1

def run(ctx, input):
    ctx.step("one", one)
    raise ValueError("boom in the flow")
"#;

const GARBAGE: &str = r#"
import os

def run(ctx, input):
    os.write(1, b"hello, this is not json\n")
    return 1
"#;

const DIES: &str = r#"
import os

def die():
    os._exit(3)

def run(ctx, input):
    ctx.step("die", die)
    return 1
"#;

fn flows_dir(w: &Project) -> PathBuf {
    let dir = w.path("aem/test/skills/ops/flows");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn runner(w: &Project) -> support::Proc {
    let aem = w.path("aem").display().to_string();
    let python = std::env::var("IRON_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let r = world::runner(w, "runner", &["--aem", &aem, "--python", &python]);
    r.wait_for("runner consuming the wake queue", T);
    r
}

fn start(w: &Project, flow: &str, input: serde_json::Value) -> String {
    let aem = w.path("aem").display().to_string();
    w.iron_ok(&[
        "jobs",
        "start",
        &format!("test/ops/{flow}"),
        "--input",
        &input.to_string(),
        "--aem",
        &aem,
    ])
    .trim()
    .to_string()
}

async fn until(log: &AnyLog, job: &str, what: &str, pick: fn(&JobState) -> bool) -> Vec<Stored> {
    support::eventually(what, T, || async {
        let diary = read_diary(log, "test", job).await.ok()?;
        pick(&state_of(&diary)).then_some(diary)
    })
    .await
}

fn parked(s: &JobState) -> bool {
    matches!(s, JobState::Parked { .. })
}
fn done(s: &JobState) -> bool {
    matches!(s, JobState::Done { .. })
}
fn waiting_go(s: &JobState) -> bool {
    matches!(s, JobState::Waiting { on } if on == "signal:go#0")
}

fn reason(diary: &[Stored]) -> String {
    match state_of(diary) {
        JobState::Parked { reason } => reason,
        other => panic!("not parked: {other:?}"),
    }
}

fn calls(path: &Path, name: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == name)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_flows_replay_wait_park_and_never_take_the_runner_down() {
    let w = world::jobs_project();
    w.operator("ana");
    let dir = flows_dir(&w);
    std::fs::write(dir.join("good.py"), GOOD).unwrap();
    std::fs::write(dir.join("raises.py"), RAISES).unwrap();
    std::fs::write(dir.join("garbage.py"), GARBAGE).unwrap();
    std::fs::write(dir.join("dies.py"), DIES).unwrap();
    let mut runner = runner(&w);
    let log = w.log().await;

    // The approval arrives before the flow asks for it; the signal after the flow waits.
    let record = w.path("calls");
    let job = start(&w, "good", json!({"record": record}));
    until(&log, &job, "the job waiting on go", waiting_go).await;
    // An approval written to the diary by anything but an operator (here unsigned, straight
    // to the log) is not taken: `iron jobs show` marks it, and the flow never sees its note.
    iron::jobs::journal::append_unfenced(
        &log,
        "test",
        &job,
        iron::jobs::event::event_id(&job, &["approval_given", "publish", "forged"]),
        "operator/ana",
        JobEvent::ApprovalGiven {
            name: "publish".into(),
            approved: true,
            note: Some("forged".into()),
            statement: None,
        },
    )
    .await
    .unwrap();
    let shown = w.iron_ok(&["jobs", "show", &job]);
    assert!(
        shown.contains("NOT TAKEN: not signed by an operator"),
        "{shown}"
    );
    w.iron_ok(&["jobs", "approve", &job, "publish", "--note", "early"]);
    w.iron_ok(&["jobs", "signal", &job, "go", "--payload", "7"]);
    let diary = until(&log, &job, "the job done", done).await;
    let JobState::Done { output } = state_of(&diary) else {
        unreachable!()
    };
    assert_eq!(
        output,
        json!({"a": "a", "go": 7, "note": "early", "b": "b", "seen": true})
    );
    assert_eq!(
        (calls(&record, "a"), calls(&record, "b")),
        (1, 1),
        "replayed, not rerun"
    );
    assert!(
        diary
            .iter()
            .any(|s| matches!(s.entry.event, JobEvent::EffectConfirmed { .. }))
    );

    // An edit while a job waits parks it; restoring the file and resuming finishes it.
    let record2 = w.path("calls2");
    let job = start(&w, "good", json!({"record": record2}));
    until(&log, &job, "the second job waiting", waiting_go).await;
    let edited = GOOD.replace(
        "ctx.step(\"a\", record, input[\"record\"], \"a\")",
        "ctx.step(\"a\", record, input[\"record\"], \"A\")",
    );
    assert_ne!(edited, GOOD);
    std::fs::write(dir.join("good.py"), &edited).unwrap();
    w.iron_ok(&["jobs", "approve", &job, "publish"]);
    w.iron_ok(&["jobs", "signal", &job, "go"]);
    let diary = until(&log, &job, "the edited job parked", parked).await;
    assert!(reason(&diary).contains("step a#0"), "{}", reason(&diary));
    std::fs::write(dir.join("good.py"), GOOD).unwrap();
    w.iron_ok(&["jobs", "resume", &job, "--note", "restored the flow"]);
    until(&log, &job, "the restored job done", done).await;
    assert_eq!(calls(&record2, "a"), 1);

    // …and the other way out of a park: cancel.
    let job = start(&w, "good", json!({"record": w.path("calls3")}));
    until(&log, &job, "the third job waiting", waiting_go).await;
    std::fs::write(dir.join("good.py"), &edited).unwrap();
    w.iron_ok(&["jobs", "signal", &job, "go"]);
    until(&log, &job, "the third job parked", parked).await;
    w.iron_ok(&["jobs", "cancel", &job, "--reason", "not worth it"]);
    until(&log, &job, "the third job cancelled", |s| {
        matches!(s, JobState::Cancelled)
    })
    .await;
    std::fs::write(dir.join("good.py"), GOOD).unwrap();

    // Same step, same arguments, but the body of what it calls was edited: that parks too.
    let job = start(&w, "good", json!({"record": w.path("calls4")}));
    until(&log, &job, "the fourth job waiting", waiting_go).await;
    let body_edited = GOOD.replace("f.write(name + \"\\n\")", "f.write(name + \"!\\n\")");
    assert_ne!(body_edited, GOOD);
    std::fs::write(dir.join("good.py"), &body_edited).unwrap();
    w.iron_ok(&["jobs", "signal", &job, "go"]);
    let diary = until(&log, &job, "the body-edited job parked", parked).await;
    assert!(reason(&diary).contains("step a#0"), "{}", reason(&diary));
    w.iron_ok(&["jobs", "cancel", &job]);
    std::fs::write(dir.join("good.py"), GOOD).unwrap();

    // Broken flows park with the error; the runner survives each.
    let job = start(&w, "raises", json!({}));
    let diary = until(&log, &job, "raises parked", parked).await;
    assert!(
        reason(&diary).contains("boom in the flow"),
        "{}",
        reason(&diary)
    );
    let job = start(&w, "garbage", json!({}));
    let diary = until(&log, &job, "garbage parked", parked).await;
    assert!(
        reason(&diary).contains("not the step protocol"),
        "{}",
        reason(&diary)
    );
    let job = start(&w, "dies", json!({}));
    let diary = until(&log, &job, "dies parked", parked).await;
    assert!(
        reason(&diary).contains("exited mid-run"),
        "{}",
        reason(&diary)
    );
    let record4 = w.path("calls4");
    let job = start(&w, "good", json!({"record": record4}));
    w.iron_ok(&["jobs", "signal", &job, "go"]);
    w.iron_ok(&["jobs", "approve", &job, "publish"]);
    until(&log, &job, "a good job after the broken ones", done).await;
    assert!(
        runner
            .wait_exit(std::time::Duration::from_millis(200))
            .is_none(),
        "the runner is still running"
    );
    let listed = w.iron_ok(&["jobs", "list"]);
    assert!(
        listed.contains("parked") && listed.contains("cancelled"),
        "{listed}"
    );
}
