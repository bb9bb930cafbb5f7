//! `iron bench cognition`: what the cognition layer costs before any model is called.
//!
//! * **Inbox ingestion.** `messages` InboxMessages published on `/iron/raw_inbox` from this
//!   process, as fast as they go, to an inbox process with no engine (the state it must
//!   survive). A message counts when the inbox acknowledges it: its `queued a message` line,
//!   written after the message is committed to the durable queue (SQLite). Latency is
//!   publish → that line (same machine, same realtime clock, microseconds); the rate is
//!   messages over first publish → last acknowledgement (`inbox_burst_*`: latency of the
//!   burst, backlog included). Then up to 1,000 messages one at a time, each waiting for its
//!   acknowledgement (`inbox_queued_p50/p99`: latency without a backlog). Zero model calls by
//!   construction.
//! * **Expert cold start** against a bare lifecycle node: a new process, reachable,
//!   `configure`, `activate`, and a goal accepted on its `task` action — once for an expert
//!   process (`expert_node`, catalog entry, scripted model, tool manager, log) and once for
//!   the demo node, interleaved so machine noise hits both alike.
//! * **Idle expert memory**: VmRSS of an expert process that has answered one goal and waits.
//!
//! It starts what it needs itself (a router in this process; the inbox, experts and demo
//! nodes as processes beside `iron`) in a temporary state directory with a generated mesh
//! and a scripted model.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use hiroz::Builder;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use super::{
    CliError,
    bench_stats::{PrivateRouter, beside_iron, ms, pct},
};
use crate::{
    interfaces::{AolTask, AolTaskGoal, InboxMessage},
    spine::control::{
        ControlConfig, ControlError, ControlPlane, ROUTER_ENV,
        action::{ActionClient, now_stamp},
        lifecycle::LifecycleClient,
    },
};

const MESH: &str = "---\nname: bench\nstatus: active\ndescription: Generated mesh for the cognition benchmark.\ndefaults:\n  model: scripted\n  clearance: read\n---\n\nA generated mesh.\n";
const SKILL: &str = "---\nname: idle\nidentity: The benchmark's expert.\ndescription: Answers once, at once.\n---\n\nAnswer.\n";

fn io(what: &str) -> impl FnOnce(std::io::Error) -> CliError {
    let what = what.to_string();
    move |source| CliError::Io { what, source }
}

/// The state directory: config with a scripted model, a one-expert mesh compiled into it.
fn write_state(dir: &Path) -> Result<PathBuf, CliError> {
    let mesh = dir.join("aem/bench");
    std::fs::create_dir_all(mesh.join("skills/idle")).map_err(io("creating the mesh"))?;
    std::fs::write(mesh.join("AEM.md"), MESH).map_err(io("writing AEM.md"))?;
    std::fs::write(mesh.join("skills/idle/SKILL.md"), SKILL).map_err(io("writing SKILL.md"))?;
    std::fs::write(
        dir.join("script.yaml"),
        "turns:\n  - text: \"done\"\n  - text: \"done\"\n",
    )
    .map_err(io("writing the script"))?;
    let config = dir.join("iron.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {d}\nmodels:\n  backends:\n    offline:\n      kind: scripted\n      script: {d}/script.yaml\n  logical:\n    scripted: [offline]\n",
            d = dir.display()
        ),
    )
    .map_err(io("writing the config"))?;
    let catalog = crate::aem::compile(&dir.join("aem"))?;
    crate::aem::write_catalog(&catalog, dir).map_err(io("writing the catalog"))?;
    Ok(config)
}

/// What a bench with nodes runs on: a scratch state directory with the generated mesh, a
/// private router, and a node of the bench's own on it.
pub(super) struct Stage {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub router: PrivateRouter,
    pub endpoint: String,
    pub control: ControlPlane,
    pub node: hiroz::node::ZNode,
}

impl Stage {
    /// Sets it all up, the router reachable within `timeout`.
    pub async fn start(timeout: Duration) -> Result<Stage, CliError> {
        let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
        let config = write_state(dir.path())?;
        let router = PrivateRouter::start().await?;
        let endpoint = router.endpoint.clone();
        let control = ControlPlane::connect(ControlConfig {
            router: endpoint.clone(),
            ..ControlConfig::from_env()?
        })
        .await?;
        let node = control.node("iron_bench", "/")?;
        control.wait_for_router(&node, timeout).await?;
        Ok(Stage {
            dir,
            config,
            router,
            endpoint,
            control,
            node,
        })
    }
}

/// A node process with the bench's environment; stderr piped when `capture`.
pub(super) fn spawn(
    exe: &Path,
    args: &[&str],
    ns: &str,
    name: &str,
    endpoint: &str,
    config: &Path,
    capture: bool,
) -> Result<Child, CliError> {
    node_command(exe, args, ns, name, endpoint, config, capture)
        .spawn()
        .map_err(io(&format!("starting {}", exe.display())))
}

/// The command [`spawn`] runs, to add to before it does.
pub(super) fn node_command(
    exe: &Path,
    args: &[&str],
    ns: &str,
    name: &str,
    endpoint: &str,
    config: &Path,
    capture: bool,
) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .args([
            "--ros-args",
            "-r",
            &format!("__node:={name}"),
            "-r",
            &format!("__ns:={ns}"),
        ])
        .env(ROUTER_ENV, endpoint)
        .env("IRON_CONFIG", config)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true);
    if capture {
        cmd.env("RUST_LOG", "info,zenoh=error,hiroz=error")
            .stderr(Stdio::piped());
    } else {
        cmd.env("RUST_LOG", "warn,zenoh=error,hiroz=error")
            .stderr(Stdio::null());
    }
    cmd
}

/// Microseconds since the epoch of a tracing line's RFC 3339 UTC timestamp
/// (`2026-12-01T04:04:38.060409Z …`).
fn line_time_us(line: &str) -> Option<i64> {
    let ts = line.split_whitespace().next()?.strip_suffix('Z')?;
    let (date, time) = ts.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let secs: f64 = t.next()?.parse().ok()?;
    // Days from civil (Howard Hinnant).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + min * 60) * 1_000_000 + (secs * 1e6).round() as i64)
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as i64
}

/// Drives a managed node to active within `timeout`.
pub(super) async fn activate(
    node: &hiroz::node::ZNode,
    fqn: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    let life = LifecycleClient::new(node, fqn, timeout)?;
    life.get_state().await?;
    for step in ["configure", "activate"] {
        if !life.set(step).await? {
            return Err(CliError::Failed(format!("{fqn} refused {step}")));
        }
    }
    Ok(())
}

pub(super) async fn stop(
    node: &hiroz::node::ZNode,
    fqn: &str,
    mut child: Child,
    timeout: Duration,
) {
    if let Ok(life) = LifecycleClient::new(node, fqn, timeout) {
        let _ = life.set("shutdown").await;
    }
    if tokio::time::timeout(timeout, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}

/// `iron bench cognition`.
pub(super) async fn cognition(
    messages: usize,
    starts: usize,
    timeout: Duration,
) -> Result<(), CliError> {
    super::bench_stats::print_machine("cognition");
    let Stage {
        dir: _dir,
        control: _control,
        config,
        router,
        endpoint,
        node,
    } = Stage::start(timeout).await?;

    let result = async {
        inbox(&node, &endpoint, &config, messages, timeout).await?;
        cold_start(&node, &endpoint, &config, starts, timeout).await
    }
    .await;
    router.stop().await;
    result
}

async fn inbox(
    node: &hiroz::node::ZNode,
    endpoint: &str,
    config: &Path,
    messages: usize,
    timeout: Duration,
) -> Result<(), CliError> {
    let exe = beside_iron("inbox_node")?;
    let mut child = spawn(&exe, &[], "/iron", "inbox", endpoint, config, true)?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| CliError::Failed("inbox stderr not captured".into()))?;
    // "queued a message from bench:<user>" → when the inbox wrote it.
    let (tx, mut acks) = tokio::sync::mpsc::unbounded_channel::<(String, i64)>();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(user) = line
                .split("queued a message from bench:")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                && let Some(at) = line_time_us(&line)
            {
                let _ = tx.send((user.to_string(), at));
            }
        }
    });
    activate(node, "/iron/inbox", timeout * 3).await?;
    let publisher = node
        .create_pub::<InboxMessage>("/iron/raw_inbox")
        .build()
        .map_err(|source| ControlError::Declare {
            what: "publisher on /iron/raw_inbox".into(),
            source,
        })?;
    if !publisher.wait_for_subscription(1, timeout).await {
        return Err(CliError::Failed(
            "the inbox does not subscribe /iron/raw_inbox".into(),
        ));
    }
    let publish = |user: String| {
        let now = now_stamp();
        let msg = InboxMessage {
            source: "bench".into(),
            user_id: user,
            destination: String::new(),
            text: "how is the harbour today?".into(),
            attachments_json: "[]".into(),
            received: hiroz_msgs::builtin_interfaces::Time {
                sec: now.sec,
                nanosec: now.nanosec,
            },
        };
        let publisher = &publisher;
        async move {
            publisher
                .async_publish(&msg)
                .await
                .map_err(|source| ControlError::Call {
                    what: "publish on /iron/raw_inbox".into(),
                    source,
                })
        }
    };
    // Warm up: connections, the store's first pages, allocations.
    let warm = messages.clamp(1, 200);
    for i in 0..warm {
        publish(format!("w{i}")).await?;
    }
    collect(&mut acks, warm, timeout * 6).await?;

    let mut sent = Vec::with_capacity(messages);
    for i in 0..messages {
        sent.push(now_us());
        publish(format!("u{i}")).await?;
    }
    let acked = collect(&mut acks, messages, timeout * 6).await?;
    let mut latencies = Vec::with_capacity(messages);
    let mut last = 0;
    for (i, at_sent) in sent.iter().enumerate() {
        let at = *acked
            .get(&format!("u{i}"))
            .ok_or_else(|| CliError::Failed(format!("message u{i} was not acknowledged")))?;
        last = last.max(at);
        latencies.push(Duration::from_micros((at - at_sent).max(0) as u64));
    }
    latencies.sort();
    let span = Duration::from_micros((last - sent[0]).max(1) as u64);

    // Latency without a backlog: one message at a time, each waiting for its acknowledgement.
    let paced = messages.min(1000);
    let mut alone = Vec::with_capacity(paced);
    for i in 0..paced {
        let at_sent = now_us();
        publish(format!("p{i}")).await?;
        let got = collect(&mut acks, 1, timeout).await?;
        let at = got
            .get(&format!("p{i}"))
            .ok_or_else(|| CliError::Failed(format!("message p{i} was not acknowledged")))?;
        alone.push(Duration::from_micros((at - at_sent).max(0) as u64));
    }
    alone.sort();

    println!("bench cognition.inbox_messages {messages} count");
    println!(
        "bench cognition.inbox_queued_per_s {:.0} msg/s",
        messages as f64 / span.as_secs_f64()
    );
    println!(
        "bench cognition.inbox_burst_p50 {:.2} ms",
        ms(pct(&latencies, 50.0))
    );
    println!(
        "bench cognition.inbox_burst_p99 {:.2} ms",
        ms(pct(&latencies, 99.0))
    );
    println!("bench cognition.inbox_paced_messages {paced} count");
    println!(
        "bench cognition.inbox_queued_p50 {:.2} ms",
        ms(pct(&alone, 50.0))
    );
    println!(
        "bench cognition.inbox_queued_p99 {:.2} ms",
        ms(pct(&alone, 99.0))
    );
    stop(node, "/iron/inbox", child, timeout).await;
    reader.abort();
    Ok(())
}

/// Waits (at most `limit`) for `want` acknowledgements: user → when.
async fn collect(
    acks: &mut tokio::sync::mpsc::UnboundedReceiver<(String, i64)>,
    want: usize,
    limit: Duration,
) -> Result<HashMap<String, i64>, CliError> {
    let mut got = HashMap::with_capacity(want);
    let until = Instant::now() + limit;
    while got.len() < want {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, acks.recv()).await {
            Ok(Some((user, at))) => {
                got.insert(user, at);
            }
            _ => {
                return Err(CliError::Failed(format!(
                    "the inbox acknowledged {} of {want} messages within {limit:?}",
                    got.len()
                )));
            }
        }
    }
    Ok(got)
}

/// Where the bench runs: its client node, the router, the config the nodes read.
struct Site<'a> {
    node: &'a hiroz::node::ZNode,
    endpoint: &'a str,
    config: &'a Path,
    timeout: Duration,
}

/// A node started by [`start_once`], with the goal it accepted.
struct Started {
    took: Duration,
    child: Child,
    actions: ActionClient<AolTask>,
    goal: hiroz::action::GoalId,
}

/// One start: process → reachable → configured → active → goal accepted.
async fn start_once(
    site: &Site<'_>,
    exe: &Path,
    args: &[&str],
    ns: &str,
    name: &str,
) -> Result<Started, CliError> {
    let fqn = format!("{ns}/{name}");
    let started = Instant::now();
    let child = spawn(exe, args, ns, name, site.endpoint, site.config, false)?;
    activate(site.node, &fqn, site.timeout * 3).await?;
    let actions = ActionClient::<AolTask>::new(site.node, &format!("{fqn}/task"))?;
    let goal = AolTaskGoal {
        task_id: uuid::Uuid::now_v7().to_string(),
        instruction: "say done".into(),
        context_json: "{}".into(),
        ..Default::default()
    };
    let sent = actions.send(goal, site.timeout * 3).await?;
    Ok(Started {
        took: started.elapsed(),
        child,
        actions,
        goal: sent.id,
    })
}

fn rss_kb(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

async fn cold_start(
    node: &hiroz::node::ZNode,
    endpoint: &str,
    config: &Path,
    starts: usize,
    timeout: Duration,
) -> Result<(), CliError> {
    let expert = beside_iron("expert_node")?;
    let demo = beside_iron("demo_node")?;
    let mut experts = Vec::with_capacity(starts);
    let mut demos = Vec::with_capacity(starts);
    let mut expert_rss = Vec::new();
    let mut demo_rss = Vec::new();
    let site = Site {
        node,
        endpoint,
        config,
        timeout,
    };
    // One warm-up start of each (page cache, the router's tables), then the measured ones.
    for i in 0..=starts {
        let name = format!("idle_{i}");
        let s = start_once(
            &site,
            &expert,
            &["--expert", "bench/idle"],
            "/iron/experts/bench",
            &name,
        )
        .await?;
        let outcome = s.actions.result(s.goal, timeout * 3).await?;
        if outcome.result.status != "succeeded" {
            return Err(CliError::Failed(format!(
                "the expert's goal ended {}: {}",
                outcome.result.status, outcome.result.text
            )));
        }
        if i > 0 {
            experts.push(s.took);
            // Idle: its one goal answered, waiting for the next.
            tokio::time::sleep(Duration::from_millis(200)).await;
            if let Some(kb) = s.child.id().and_then(rss_kb) {
                expert_rss.push(kb);
            }
        }
        stop(
            node,
            &format!("/iron/experts/bench/{name}"),
            s.child,
            timeout,
        )
        .await;

        let name = format!("bare_{i}");
        let s = start_once(&site, &demo, &[], "/iron", &name).await?;
        s.actions.result(s.goal, timeout * 3).await?;
        if i > 0 {
            demos.push(s.took);
            tokio::time::sleep(Duration::from_millis(200)).await;
            if let Some(kb) = s.child.id().and_then(rss_kb) {
                demo_rss.push(kb);
            }
        }
        stop(node, &format!("/iron/{name}"), s.child, timeout).await;
    }
    experts.sort();
    demos.sort();
    let (e50, e99, d50, d99) = (
        pct(&experts, 50.0),
        pct(&experts, 99.0),
        pct(&demos, 50.0),
        pct(&demos, 99.0),
    );
    let median_mb = |v: &mut Vec<u64>| {
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or(0) as f64 / 1024.0
    };
    println!("bench cognition.cold_starts {starts} count");
    println!("bench cognition.expert_cold_start_p50 {:.1} ms", ms(e50));
    println!("bench cognition.expert_cold_start_p99 {:.1} ms", ms(e99));
    println!("bench cognition.bare_node_start_p50 {:.1} ms", ms(d50));
    println!("bench cognition.bare_node_start_p99 {:.1} ms", ms(d99));
    println!(
        "bench cognition.cold_start_ratio_p50 {:.2} x",
        ms(e50) / ms(d50)
    );
    println!(
        "bench cognition.cold_start_ratio_p99 {:.2} x",
        ms(e99) / ms(d99)
    );
    println!(
        "bench cognition.idle_expert_rss {:.1} MB",
        median_mb(&mut expert_rss)
    );
    println!(
        "bench cognition.bare_node_rss {:.1} MB",
        median_mb(&mut demo_rss)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::line_time_us;

    #[test]
    fn tracing_timestamps_parse_to_epoch_microseconds() {
        assert_eq!(
            line_time_us("1970-01-01T00:00:01.000002Z  INFO x"),
            Some(1_000_002)
        );
        // 2026-12-01 is day 20788 since the epoch.
        assert_eq!(
            line_time_us("2026-12-01T04:04:38.060409Z  INFO queued"),
            Some((20_788 * 86_400 + 4 * 3600 + 4 * 60 + 38) * 1_000_000 + 60_409)
        );
        assert_eq!(line_time_us("not a line"), None);
    }
}
