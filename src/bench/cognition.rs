//! `iron bench cognition`: what the cognition layer costs before any model is called.
//!
//! * **Inbox ingestion.** InboxMessages published on `/iron/raw_inbox` from this process to
//!   an inbox process with no engine (the state it must survive). A message counts when the
//!   inbox acknowledges it: its `queued a message` line, written after the message is
//!   committed to the durable queue (SQLite). Latency is publish → that line (same machine,
//!   same realtime clock, microseconds); throughput is messages over first publish → last
//!   acknowledgement. Three series, each with both figures: `inbox_burst_*` (`messages` as
//!   fast as they go, the backlog in the latency), `inbox_rate_*` (`messages` offered on a
//!   schedule at `--rate`, never waiting: the series the inbox goal is judged on) and
//!   `inbox_paced_*` (up to 1,000 one at a time, each waiting for its acknowledgement).
//!   Nothing may be lost: each series says how many of its messages were never acknowledged
//!   (`_lost`), and once the inbox has stopped the queue's own file is counted against every
//!   message offered (`inbox_offered`, `inbox_queued`); any loss fails the bench, after its
//!   figures. Zero model calls by construction.
//! * **Expert cold start** against a bare lifecycle node: a new process, reachable,
//!   `configure`, `activate`, and a goal accepted on its `task` action — for the generated
//!   expert (no tools, sources or memory), for the newsroom's analyst with its real
//!   declaration, and for the demo node, interleaved so machine noise hits all alike.
//! * **Idle memory**: VmRSS of each kind once it has answered its one goal and waits.
//!
//! It starts what it needs itself (a router in this process; the inbox, experts and demo
//! nodes as processes beside `iron`) in a temporary state directory with a generated mesh
//! and a scripted model, with the newsroom mesh copied from `aem/newsroom` (run it from the
//! repository).

use crate::protocol::TaskOutcome;
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
    BenchError,
    stats::{BenchEnv, Figures, PrivateRouter, beside_iron, ms, pct},
};
use crate::{
    interfaces::{AolTask, AolTaskGoal, InboxMessage},
    spine::control::{
        ControlError, ControlPlane,
        action::{ActionClient, now_stamp},
        lifecycle::LifecycleClient,
    },
};

const MESH: &str = "---\nname: bench\nstatus: active\ndescription: Generated mesh for the cognition benchmark.\ndefaults:\n  model: scripted\n  clearance: read\n---\n\nA generated mesh.\n";
const SKILL: &str = "---\nname: idle\nidentity: The benchmark's expert.\ndescription: Answers once, at once.\n---\n\nAnswer.\n";

fn io(what: &str) -> impl FnOnce(std::io::Error) -> BenchError {
    let what = what.to_string();
    move |source| BenchError::Io { what, source }
}

/// The state directory: config with a scripted model, a one-expert mesh compiled into it.
fn write_state(dir: &Path) -> Result<PathBuf, BenchError> {
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
            "state_dir: {d}\nmodels:\n  backends:\n    offline:\n      kind: scripted\n      script: {d}/script.yaml\n  logical:\n    scripted: [offline]\n    fast: [offline]\n    standard: [offline]\n    strong: [offline]\n",
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
    pub async fn start(timeout: Duration) -> Result<Stage, BenchError> {
        let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
        let config = write_state(dir.path())?;
        let router = PrivateRouter::start().await?;
        let endpoint = router.endpoint.clone();
        let (control, node) = ControlPlane::client(&endpoint, timeout).await?;
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
) -> Result<Child, BenchError> {
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
    let mut cmd = BenchEnv::new()
        .router(endpoint)
        .config(config)
        .set("NO_COLOR", "1")
        .command(exe);
    cmd.args(args)
        .args([
            "--ros-args",
            "-r",
            &format!("__node:={name}"),
            "-r",
            &format!("__ns:={ns}"),
        ])
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

/// Drives a managed node to active within `timeout`; a refusal says the node's reason.
pub(super) async fn activate(
    node: &hiroz::node::ZNode,
    fqn: &str,
    timeout: Duration,
) -> Result<(), BenchError> {
    Ok(LifecycleClient::watching(node, fqn, timeout)?
        .activate()
        .await?)
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
pub async fn run(
    messages: usize,
    rate: f64,
    starts: usize,
    timeout: Duration,
) -> Result<(), BenchError> {
    super::stats::print_machine("cognition");
    let Stage {
        dir,
        control: _control,
        config,
        router,
        endpoint,
        node,
    } = Stage::start(timeout).await?;

    // The newsroom's analyst beside the generated mesh, for a cold start with a real
    // declaration.
    let newsroom = Path::new("aem/newsroom");
    if !newsroom.join("AEM.md").is_file() {
        return Err(BenchError::Failed(
            "aem/newsroom is not here: run `iron bench cognition` from the repository".into(),
        ));
    }
    copy_files(newsroom, &dir.path().join("aem/newsroom")).map_err(io("copying aem/newsroom"))?;
    let catalog = crate::aem::compile(&dir.path().join("aem"))?;
    crate::aem::write_catalog(&catalog, dir.path()).map_err(io("writing the catalog"))?;

    let mut figs = Figures::default();
    let site = Site {
        node: &node,
        endpoint: &endpoint,
        config: &config,
        timeout,
    };
    let result = async {
        inbox(&site, messages, rate, &mut figs).await?;
        cold_start(&site, starts, &mut figs).await
    }
    .await;
    router.stop().await;
    figs.print();
    result
}

///
/// Long because it is the bench's script: its series run in order in one run, and the lines it
/// prints follow that order; split, the order would be spread over functions.
async fn inbox(
    site: &Site<'_>,
    messages: usize,
    rate: f64,
    figs: &mut Figures,
) -> Result<(), BenchError> {
    let Site {
        node,
        endpoint,
        config,
        timeout,
    } = *site;
    let exe = beside_iron("inbox_node")?;
    let mut child = spawn(&exe, &[], "/iron", "inbox", endpoint, config, true)?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| BenchError::Failed("inbox stderr not captured".into()))?;
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
        return Err(BenchError::Failed(
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
    let warmed = collect(&mut acks, warm, timeout * 6).await;
    if warmed.len() < warm {
        return Err(BenchError::Failed(format!(
            "the inbox acknowledged {} of {warm} warm-up messages within {:?}",
            warmed.len(),
            timeout * 6
        )));
    }

    // Burst: as fast as they go (the latency includes the backlog behind each message).
    let mut sent = Vec::with_capacity(messages);
    for i in 0..messages {
        sent.push(now_us());
        publish(format!("u{i}")).await?;
    }
    let acked = collect(&mut acks, messages, timeout * 6).await;
    let burst = Series::of("u", &sent, &acked);

    // At the goal's rate: published on schedule, never waiting for an acknowledgement (open
    // loop). The inbox goal is judged on this series: its throughput and its p99 together.
    let mut sent = Vec::with_capacity(messages);
    let began = Instant::now();
    for i in 0..messages {
        let due = began + Duration::from_secs_f64(i as f64 / rate);
        if Instant::now() < due {
            tokio::time::sleep_until(due.into()).await;
        }
        sent.push(now_us());
        publish(format!("r{i}")).await?;
    }
    let offered = messages as f64 / began.elapsed().as_secs_f64().max(1e-6);
    let acked = collect(&mut acks, messages, timeout * 6).await;
    let at_rate = Series::of("r", &sent, &acked);

    // Paced: one message at a time, each waiting for its acknowledgement (no backlog).
    let paced = messages.min(1000);
    let mut sent = Vec::with_capacity(paced);
    let mut acked = HashMap::with_capacity(paced);
    for i in 0..paced {
        sent.push(now_us());
        publish(format!("p{i}")).await?;
        acked.extend(collect(&mut acks, 1, timeout).await);
    }
    let alone = Series::of("p", &sent, &acked);

    figs.add("cognition.inbox_messages", messages.to_string(), "count");
    figs.add(
        "cognition.inbox_rate_offered",
        format!("{offered:.0}"),
        "msg/s",
    );
    at_rate.add_to(figs, "inbox_rate");
    burst.add_to(figs, "inbox_burst");
    figs.add("cognition.inbox_paced_messages", paced.to_string(), "count");
    alone.add_to(figs, "inbox_paced");
    stop(node, "/iron/inbox", child, timeout).await;
    reader.abort();

    // What the queue holds, read from its file once the inbox is gone: every message offered
    // must be there (none is handed over: there is no engine). The bench's config puts the
    // state directory beside it.
    let offered = warm + 2 * messages + paced;
    let store = config
        .parent()
        .unwrap_or(Path::new("."))
        .join(crate::cognition::inbox::store::STORE_FILE);
    let queued: u64 = crate::cognition::inbox::store::depth_at(&store)
        .map_err(|e| BenchError::Failed(format!("counting the inbox's queue: {e}")))?
        .iter()
        .map(|(_, n)| n)
        .sum();
    figs.add("cognition.inbox_offered", offered.to_string(), "count");
    figs.add("cognition.inbox_queued", queued.to_string(), "count");
    let unacked = burst.lost + at_rate.lost + alone.lost;
    if unacked > 0 || queued != offered as u64 {
        return Err(BenchError::Failed(format!(
            "messages lost: {unacked} never acknowledged; {queued} of {offered} in the queue"
        )));
    }
    Ok(())
}

/// Copies the regular files under `from` to `to`, folders included (nothing else).
fn copy_files(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for item in std::fs::read_dir(from)? {
        let item = item?;
        let kind = item.file_type()?;
        let (src, dst) = (item.path(), to.join(item.file_name()));
        if kind.is_dir() {
            copy_files(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// One inbox series: each acknowledged message's latency (publish → acknowledged), the
/// throughput over first publish → last acknowledgement, and the messages never acknowledged.
struct Series {
    latencies: Vec<Duration>,
    per_s: f64,
    lost: usize,
}

impl Series {
    /// From the publish times of `<prefix><i>` and the acknowledgements.
    fn of(prefix: &str, sent: &[i64], acked: &HashMap<String, i64>) -> Self {
        let mut latencies = Vec::with_capacity(sent.len());
        let mut last = 0;
        for (i, at_sent) in sent.iter().enumerate() {
            let Some(&at) = acked.get(&format!("{prefix}{i}")) else {
                continue;
            };
            last = last.max(at);
            latencies.push(Duration::from_micros((at - at_sent).max(0) as u64));
        }
        latencies.sort();
        let span = (last - sent.first().copied().unwrap_or(last)).max(1) as f64 / 1e6;
        Self {
            per_s: latencies.len() as f64 / span,
            lost: sent.len() - latencies.len(),
            latencies,
        }
    }

    /// `cognition.<name>_per_s`, `_p50`, `_p99` and `_lost`.
    fn add_to(&self, figs: &mut Figures, name: &str) {
        figs.add(
            format!("cognition.{name}_per_s"),
            format!("{:.0}", self.per_s),
            "msg/s",
        );
        for q in [50.0, 99.0] {
            figs.add(
                format!("cognition.{name}_p{q}"),
                format!("{:.2}", ms(pct(&self.latencies, q))),
                "ms",
            );
        }
        figs.add(
            format!("cognition.{name}_lost"),
            self.lost.to_string(),
            "count",
        );
    }
}

/// Waits (at most `limit`) for `want` acknowledgements: user → when. Fewer when the limit
/// passed first (the others count as lost).
async fn collect(
    acks: &mut tokio::sync::mpsc::UnboundedReceiver<(String, i64)>,
    want: usize,
    limit: Duration,
) -> HashMap<String, i64> {
    let mut got = HashMap::with_capacity(want);
    let until = Instant::now() + limit;
    while got.len() < want {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, acks.recv()).await {
            Ok(Some((user, at))) => {
                got.insert(user, at);
            }
            _ => break,
        }
    }
    got
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
) -> Result<Started, BenchError> {
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

/// One kind of node whose cold start is measured.
struct Kind<'a> {
    /// The figures' word (`expert`, `analyst`, `bare_node`).
    name: &'a str,
    exe: PathBuf,
    args: Vec<&'a str>,
    ns: &'a str,
    starts: Vec<Duration>,
    rss_kb: Vec<u64>,
}

impl Kind<'_> {
    /// Starts one, waits for its goal's end and (when `measured`) records the start and the
    /// idle memory, then shuts it down.
    async fn start(&mut self, site: &Site<'_>, i: usize, measured: bool) -> Result<(), BenchError> {
        let name = format!("{}_{i}", self.name);
        let s = start_once(site, &self.exe, &self.args, self.ns, &name).await?;
        let outcome = s.actions.result(s.goal, site.timeout * 3).await?;
        if outcome.result.status != TaskOutcome::Succeeded.as_str() {
            return Err(BenchError::Failed(format!(
                "the goal of {} ended {}: {}",
                self.name, outcome.result.status, outcome.result.text
            )));
        }
        if measured {
            self.starts.push(s.took);
            // Idle: its one goal answered, waiting for the next.
            tokio::time::sleep(Duration::from_millis(200)).await;
            if let Some(kb) = s.child.id().and_then(rss_kb) {
                self.rss_kb.push(kb);
            }
        }
        stop(
            site.node,
            &format!("{}/{name}", self.ns),
            s.child,
            site.timeout,
        )
        .await;
        Ok(())
    }

    fn p(&self, q: f64) -> Duration {
        let mut v = self.starts.clone();
        v.sort();
        pct(&v, q)
    }

    fn median_rss_mb(&self) -> f64 {
        let mut v = self.rss_kb.clone();
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or(0) as f64 / 1024.0
    }
}

/// Cold starts of three kinds, interleaved so machine noise hits all alike: the generated
/// expert (no tools, sources or memory), the newsroom's analyst with its real declaration
/// (four memory mounts, two sources, two MCP servers, its peers; started on demand, so
/// not at start), and the demo node (a bare lifecycle node).
async fn cold_start(site: &Site<'_>, starts: usize, figs: &mut Figures) -> Result<(), BenchError> {
    let expert = beside_iron("expert_node")?;
    let kind = |name, exe: &PathBuf, args, ns| Kind {
        name,
        exe: exe.clone(),
        args,
        ns,
        starts: Vec::with_capacity(starts),
        rss_kb: Vec::with_capacity(starts),
    };
    let mut kinds = [
        kind(
            "expert",
            &expert,
            vec!["--expert", "bench/idle"],
            "/iron/experts/bench",
        ),
        kind(
            "analyst",
            &expert,
            vec!["--expert", "newsroom/analyst"],
            "/iron/experts/newsroom",
        ),
        kind("bare_node", &beside_iron("demo_node")?, vec![], "/iron"),
    ];
    // One warm-up start of each (page cache, the router's tables), then the measured ones.
    for i in 0..=starts {
        for k in &mut kinds {
            k.start(site, i, i > 0).await?;
        }
    }
    let [expert, analyst, bare] = &kinds;
    figs.add("cognition.cold_starts", starts.to_string(), "count");
    for k in [expert, analyst, bare] {
        for q in [50.0, 99.0] {
            figs.add(
                format!("cognition.{}_cold_start_p{q}", k.name),
                format!("{:.1}", ms(k.p(q))),
                "ms",
            );
        }
    }
    for k in [expert, analyst] {
        for q in [50.0, 99.0] {
            figs.add(
                format!("cognition.{}_cold_start_ratio_p{q}", k.name),
                format!("{:.2}", ms(k.p(q)) / ms(bare.p(q))),
                "x",
            );
        }
    }
    for k in [expert, analyst, bare] {
        figs.add(
            format!("cognition.{}_idle_rss", k.name),
            format!("{:.1}", k.median_rss_mb()),
            "MB",
        );
    }
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
