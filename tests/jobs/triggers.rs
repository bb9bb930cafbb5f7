//! Schedule and webhook triggers through `iron up` with real processes (the clock, the trigger
//! node, a runner and a Python flow that returns its input). A schedule starts one job per
//! tick, never two, across a restart; a webhook starts a job only with the right token, and a
//! retried call (same Idempotency-Key) starts nothing new. Source triggers are the newsroom's
//! (`tests/product/newsroom.rs`). Bad trigger declarations are in `tests/agents/aem_bad_corpus.rs`.

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use iron::core::durable::EventLog;
use iron::jobs::{Entry, JobEvent};
use serde_json::{Value, json};
use support::{eventually, free_port, project::Project};

const MESH: &str = r#"---
name: clockwork
status: active
description: A test mesh whose one flow records what started it.
defaults:
  model: standard
triggers:
  every_two_seconds:
    flow: keeper/record
    schedule: "*/2 * * * * *"
    input: {kind: tick}
  inbound:
    flow: keeper/record
    webhook:
      token: ${CLOCKWORK_HOOK_TOKEN}
    input: {kind: hook}
---

Test mesh.
"#;

const SKILL: &str = "---\nname: keeper\nidentity: Keeps records.\ndescription: Records what started each job.\n---\n\nKeeps records.\n";

const FLOW: &str = "def run(ctx, input):\n    return {\"got\": input}\n";

const TOKEN: &str = "s3cret-hook-token";

fn launch_list(aem: &str) -> String {
    format!(
        r#"nodes:
  - {{name: clock, namespace: /iron/jobs, executable: jobs_clock, autostart: true, respawn: true}}
  - {{name: triggers, namespace: /iron/jobs, executable: jobs_triggers, autostart: true, respawn: true}}
  - name: runner
    namespace: /iron/jobs/clockwork
    executable: jobs_runner
    args: ["--mesh", "clockwork", "--aem", "{aem}"]
    autostart: true
    respawn: true
"#
    )
}

/// Every job the trigger `name` started, with the output of those that are done.
async fn started(p: &Project, name: &str) -> Vec<(String, Value, Option<Value>)> {
    let entries: Vec<Entry> = p
        .log()
        .await
        .read("JOBS", "jobs.clockwork.evt.>", 1, 100_000)
        .await
        .unwrap()
        .iter()
        .filter_map(|m| serde_json::from_slice(&m.payload).ok())
        .collect();
    let by = format!("trigger/clockwork/{name}");
    entries
        .iter()
        .filter_map(|e| match &e.event {
            JobEvent::JobStarted { input, .. } if e.by == by => {
                let output = entries.iter().find_map(|d| match &d.event {
                    JobEvent::Done { output } if d.job == e.job => Some(output.clone()),
                    _ => None,
                });
                Some((e.job.clone(), input.clone(), output))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_and_webhooks_start_each_job_once() {
    let port = free_port();
    let p = Project::offline()
        .env("CLOCKWORK_HOOK_TOKEN", TOKEN)
        .env("IRON_WEBHOOK_LISTEN", &format!("127.0.0.1:{port}"));
    p.write("aem/clockwork/AEM.md", MESH);
    p.write("aem/clockwork/skills/keeper/SKILL.md", SKILL);
    p.write("aem/clockwork/skills/keeper/flows/record.py", FLOW);
    let aem = p.path("aem").display().to_string();
    let mut up = p.up(&launch_list(&aem), &["--aem", &aem]);
    up.wait_for("/iron/jobs/triggers: active", Duration::from_secs(30));

    // Webhooks: only with the token, only JSON, and one job per idempotency key.
    let url = format!("http://127.0.0.1:{port}/hooks/clockwork/inbound");
    // A connection per request: the server closes the one it refused an oversized body on.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let post = |auth: Option<&str>, key: Option<&str>, body: String, url: String| {
        let mut r = http.post(url).body(body);
        if let Some(a) = auth {
            r = r.header("authorization", format!("Bearer {a}"));
        }
        if let Some(k) = key {
            r = r.header("idempotency-key", k);
        }
        r.send()
    };
    let body = json!({"story": "tip about the harbour"}).to_string();
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        status(post(None, None, body.clone(), url.clone()).await.unwrap()),
        401
    );
    assert_eq!(
        status(
            post(Some("wrong"), None, body.clone(), url.clone())
                .await
                .unwrap()
        ),
        401
    );
    let other = format!("http://127.0.0.1:{port}/hooks/clockwork/nope");
    assert_eq!(
        status(post(Some(TOKEN), None, body.clone(), other).await.unwrap()),
        404
    );
    assert_eq!(
        status(
            post(Some(TOKEN), None, "{not json".into(), url.clone())
                .await
                .unwrap()
        ),
        400
    );
    let huge = format!("\"{}\"", "x".repeat(2 * 1024 * 1024));
    assert_eq!(
        status(post(Some(TOKEN), None, huge, url.clone()).await.unwrap()),
        413
    );
    let first: Value = post(Some(TOKEN), Some("tip-1"), body.clone(), url.clone())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(first["started"], true, "{first}");
    let again: Value = post(Some(TOKEN), Some("tip-1"), body.clone(), url.clone())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        again["started"], false,
        "a retried call starts nothing: {again}"
    );
    assert_eq!(again["job"], first["job"]);
    let hooked = eventually(
        "the webhook's job done",
        Duration::from_secs(60),
        || async {
            let jobs = started(&p, "inbound").await;
            jobs.iter().all(|(_, _, out)| out.is_some()).then_some(jobs)
        },
    )
    .await;
    assert_eq!(hooked.len(), 1, "{hooked:?}");
    let output = hooked[0].2.as_ref().unwrap();
    assert_eq!(output["got"]["webhook"]["story"], "tip about the harbour");
    assert_eq!(output["got"]["kind"], "hook");
    assert_eq!(output["got"]["trigger"], "inbound");

    // Schedule: one job per tick, done by the flow.
    let before_restart = eventually(
        "three scheduled jobs done",
        Duration::from_secs(60),
        || async {
            let jobs = started(&p, "every_two_seconds").await;
            (jobs.iter().filter(|(_, _, o)| o.is_some()).count() >= 3).then_some(jobs)
        },
    )
    .await;
    for (_, input, _) in &before_restart {
        assert_eq!(input["kind"], "tick");
        assert!(input["tick"].as_str().unwrap().ends_with('Z'), "{input}");
    }

    // A restart within the misfire grace starts the latest missed tick once; no tick twice.
    up.signal(libc::SIGINT);
    up.wait_exit(Duration::from_secs(60))
        .expect("iron up stops");
    let up = p.up(&launch_list(&aem), &["--aem", &aem]);
    up.wait_for("/iron/jobs/clock: active", Duration::from_secs(30));
    let n = before_restart.len();
    let after = eventually(
        "more ticks after the restart",
        Duration::from_secs(60),
        || async {
            let jobs = started(&p, "every_two_seconds").await;
            (jobs.len() >= n + 2).then_some(jobs)
        },
    )
    .await;
    let ticks: BTreeSet<&str> = after
        .iter()
        .map(|(_, input, _)| input["tick"].as_str().unwrap())
        .collect();
    assert_eq!(
        ticks.len(),
        after.len(),
        "each tick started one job: {after:?}"
    );
    let jobs: BTreeSet<&str> = after.iter().map(|(j, _, _)| j.as_str()).collect();
    assert_eq!(jobs.len(), after.len());
}
