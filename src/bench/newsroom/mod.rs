//! `iron bench newsroom`: the newsroom's pipeline end to end, offline, on generated feeds.
//!
//! It writes `--feeds` RSS feeds holding `--items` items about generated events (each event
//! reported, in different words, by one to three feeds of different owners; half the feeds
//! are official bodies, the other half outlets of shared owners), runs the shipped launch list
//! through `iron up` with a private router and state directory, and measures from the log:
//!
//! - **throughput**: items from the sources' first refresh to the published bulletin, per
//!   second;
//! - **judgment**: the same items embedded with the local model (when it is present, as the
//!   newsroom's judge uses it), grouped, cross-checked and worded, timed in this process, per
//!   item and as a share of the end-to-end time;
//! - **the flow's tasks**: the same judgment as the flow's two steps run it ([`tasks`]);
//! - **cost**: the CPU time of `iron up` and every process below it (reaped expert processes
//!   included) from its start to the first bulletin, per item, and their peak memory;
//! - **log**: the events the run wrote to the log (MEM and JOBS), written again with the same
//!   sizes to a fresh embedded log in this process, as a share of the end-to-end time;
//! - **latency**: `--new` single new items added one after another, each timed from the
//!   moment its feed file is written to its bulletin in the outbox (p50, max).
//!
//! Run it from the repository root (it uses `launch/bringup.yaml` and `aem/`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::process::Child;

mod tasks;

use super::BenchError;
use super::stats::{BenchEnv, TreeUsage, beside_iron, ms, pct, tree_usage};
use crate::core::{
    durable::{AppendRequest, EventLog},
    envelope::Envelope,
    event_kind::EventKind,
};
use crate::jobs::{
    JobState,
    journal::{Diaries, state_of},
};
use crate::llm::local::{self, LocalEmbedder};
use crate::llm::offline::{bulletin, claims, meanings_of};
use crate::spine::durable::{
    AnyLog,
    streams::{JOBS, MEM},
};

/// What an event can be about.
const OBJECTS: &[&str] = &[
    "bridge", "tunnel", "school", "clinic", "station", "market", "pier", "library", "depot",
    "stadium", "hospital", "museum",
];
const PLACES: &[&str] = &[
    "Quay Street",
    "Harbour Road",
    "Mill Lane",
    "Pilot Dock",
    "Castle Hill",
    "Fen Row",
    "Lantern Square",
    "Rope Walk",
    "Salt Marsh",
    "Tanner Gate",
    "Bell Yard",
    "Kiln Close",
    "Orchard Rise",
    "Ferry Steps",
    "Copper Lane",
    "Beacon Hill",
    "Weir Street",
    "Anchor Way",
    "Slate Row",
    "Gull Point",
];
/// Put before a place once every object, place and happening has been used, so that a large
/// run's events stay distinct events ("North Quay Street" is not "Quay Street"). No place
/// begins with one: "North North Dock" would read as a slip for "North Dock", not as another
/// place.
const DISTRICTS: &[&str] = &[
    "", "North ", "South ", "East ", "West ", "Old ", "New ", "Upper ",
];
/// Ways to say what happened: (subject-first headline, event-first headline).
const HAPPENINGS: &[(&str, &str)] = &[
    ("closed for inspection", "Inspection shuts"),
    ("evacuated after gas leak", "Gas leak forces evacuation of"),
    ("flooded after storm", "Storm floods"),
    ("damaged by fire", "Fire damages"),
    ("loses power overnight", "Power cut hits"),
];
/// Events unlike the generated ones and unlike each other, one per new item, naming no place
/// the generator uses (a new item about one of its places may join a generated claim, and then
/// no new bulletin comes).
const NEW_EVENTS: &[&str] = &[
    "Sinkhole opens on Unmapped Road",
    "Whale stranded on Selkie Sands beach",
    "Lightning strikes church spire in Thornbury",
    "Escaped flamingos seen near the botanical gardens",
    "Water taxi runs aground off the marina",
    "Landslide blocks coastal railway line",
    "Cyclists stage protest against toll scheme",
    "Rare orchid found in abandoned quarry",
    "Ice rink roof collapses under snow",
    "Fishing fleet stays in port as gale nears",
];

/// How many claims resting on different events the bench lists before it fails.
const MIXED_SHOWN: usize = 20;

/// Feed owners: official feeds own themselves; outlets come in pairs under one owner.
const FEEDS_PER_OWNER: usize = 2;

fn io(what: &str) -> impl FnOnce(std::io::Error) -> BenchError {
    let what = what.to_string();
    move |source| BenchError::Io { what, source }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One generated item.
struct Item {
    feed: usize,
    guid: String,
    title: String,
    minute: usize,
}

/// `items` items about generated events across `feeds` feeds.
fn generate(feeds: usize, items: usize) -> Vec<Item> {
    let mut out = Vec::with_capacity(items);
    let mut event = 0usize;
    while out.len() < items {
        let object = OBJECTS[event % OBJECTS.len()];
        let place = PLACES[(event / OBJECTS.len()) % PLACES.len()];
        let combos = OBJECTS.len() * PLACES.len();
        let (done, doing) = HAPPENINGS[(event / combos) % HAPPENINGS.len()];
        let district = DISTRICTS[(event / (combos * HAPPENINGS.len())) % DISTRICTS.len()];
        let place = format!("{district}{place}");
        // One to three reports of each event, from feeds far apart (different owners).
        let reports = 1 + event % 3;
        for r in 0..reports.min(items - out.len()) {
            let feed = (event * 7 + r * (feeds / 3).max(1)) % feeds;
            let title = if r % 2 == 0 {
                format!("{place} {object} {done}")
            } else {
                format!("{doing} {object} on {place}")
            };
            out.push(Item {
                feed,
                guid: format!("gen-{event}-{r}"),
                title,
                minute: out.len(),
            });
        }
        event += 1;
    }
    out
}

fn rss(title: &str, items: &[&Item]) -> String {
    let mut xml = format!(
        "<?xml version=\"1.0\"?>\n<!-- Generated by iron bench newsroom; invented. -->\n<rss version=\"2.0\"><channel><title>{title}</title>\n"
    );
    for i in items {
        let secs = 1_796_000_000 + i.minute as i64 * 60;
        let date = chrono::DateTime::from_timestamp(secs, 0)
            .map(|t| t.to_rfc2822())
            .unwrap_or_default();
        xml.push_str(&format!(
            "<item><title>{}</title><link>https://gen.example/{}</link><guid>{}</guid><pubDate>{date}</pubDate></item>\n",
            i.title, i.guid, i.guid
        ));
    }
    xml.push_str("</channel></rss>\n");
    xml
}

/// Writes the feeds and the two feed lists; returns the lists.
fn write_feeds(dir: &Path, feeds: usize, items: &[Item]) -> Result<(PathBuf, PathBuf), BenchError> {
    std::fs::create_dir_all(dir).map_err(io("creating the feeds folder"))?;
    let (mut official, mut wires) = (String::new(), String::new());
    for f in 0..feeds {
        let mine: Vec<&Item> = items.iter().filter(|i| i.feed == f).collect();
        let name = format!("feed-{f:02}.xml");
        std::fs::write(dir.join(&name), rss(&format!("Generated feed {f}"), &mine))
            .map_err(io("writing a feed"))?;
        let list = if f.is_multiple_of(2) {
            &mut official
        } else {
            &mut wires
        };
        list.push_str(&format!("{name} owner={}\n", owner(f)));
    }
    let (o, w) = (dir.join("official.txt"), dir.join("wires.txt"));
    std::fs::write(&o, official).map_err(io("writing a feed list"))?;
    std::fs::write(&w, wires).map_err(io("writing a feed list"))?;
    Ok((o, w))
}

/// The owner of feed `f`: even feeds are official bodies (each its own owner), odd ones are
/// outlets, [`FEEDS_PER_OWNER`] to an owner.
fn owner(f: usize) -> String {
    if f.is_multiple_of(2) {
        format!("official-{f}")
    } else {
        format!("media-{}", f / (2 * FEEDS_PER_OWNER))
    }
}

/// The generated events (`gen-<event>-<report>`) of report ids.
fn events_of(ids: &[String]) -> BTreeSet<&str> {
    ids.iter()
        .map(|id| id.rsplit_once('-').map_or(id.as_str(), |(event, _)| event))
        .collect()
}

/// The reports the offline judgment sees for `items` (as the feeds program would give them).
fn reports(items: &[Item]) -> Vec<claims::Report> {
    items
        .iter()
        .map(|i| claims::Report {
            id: i.guid.clone(),
            title: i.title.clone(),
            summary: String::new(),
            url: format!("https://gen.example/{}", i.guid),
            published: Some(crate::msp::date::rfc3339(
                1_796_000_000 + i.minute as i64 * 60,
            )),
            outlet: format!("Generated feed {}", i.feed),
            owner: owner(i.feed),
            source: String::new(),
        })
        .collect()
}

/// Runs the benchmark.
/// `first_within` bounds the wait for the first bulletin.
///
/// Long because it is the bench's script: its series run in order in one run, and the lines it
/// prints follow that order; split, the order would be spread over functions.
pub async fn run(
    feeds: usize,
    items: usize,
    new: usize,
    first_within: Duration,
) -> Result<(), BenchError> {
    super::stats::print_machine("newsroom");
    // Distinct events the generator can make, one to three reports each (two on average).
    let most = 2 * OBJECTS.len() * PLACES.len() * HAPPENINGS.len() * DISTRICTS.len();
    if feeds < 2 || items < feeds || items > most || new > NEW_EVENTS.len() {
        return Err(BenchError::Failed(format!(
            "give at least 2 feeds, from one item per feed to {most} items, and at most {} new \
             items",
            NEW_EVENTS.len()
        )));
    }
    for needed in ["launch/bringup.yaml", "aem/newsroom/AEM.md"] {
        if !Path::new(needed).is_file() {
            return Err(BenchError::Failed(format!(
                "{needed} is not here; run iron bench newsroom from the repository root"
            )));
        }
    }
    let dir = tempfile::Builder::new()
        .prefix("iron-bench-newsroom-")
        .tempdir()
        .map_err(io("creating a state directory"))?;
    let generated = generate(feeds, items);
    let (official, wires) = write_feeds(&dir.path().join("feeds"), feeds, &generated)?;

    // The judgment on the same items, in this process, with the model the newsroom's judge
    // loads from the same directory when it is there.
    let models = local::models_dir_from_env(None).map_err(|e| BenchError::Failed(e.to_string()))?;
    let model = LocalEmbedder::load(&models)
        .inspect_err(|e| println!("# no local model ({e}): the judge reads words alone"))
        .ok();
    let judged_at = Instant::now();
    let r = reports(&generated);
    let meanings = match &model {
        Some(model) => Some(meanings_of(model, &r).map_err(fail)?),
        None => None,
    };
    let embedding = judged_at.elapsed();
    let (verdicts, phases) = claims::newsroom_timed(&r, meanings.as_ref());
    let lines: Vec<bulletin::Line> = verdicts
        .iter()
        .map(|v| bulletin::Line {
            claim: v.claim.clone(),
            text: v.text.clone(),
            status: v.status,
            sources: Vec::new(),
            corrects: None,
            previous_status: None,
            uncited_denials: 0,
        })
        .collect();
    let wording = bulletin::write(&lines);
    let judgment = judged_at.elapsed();
    println!(
        "bench newsroom.judgment {:.1} us/item ({:.0} ms for {items} items, judge {}: {:.0} ms embedding, {:.0} ms grouping, checking and wording)",
        judgment.as_secs_f64() * 1e6 / items as f64,
        ms(judgment),
        model.as_ref().map_or("words", |m| m.name()),
        ms(embedding),
        ms(judgment.saturating_sub(embedding)),
    );
    println!(
        "# of which {:.0} ms reading reports, {:.0} ms comparing pairs, {:.0} ms grouping, {:.0} ms cross-checking",
        ms(phases.reading),
        ms(phases.comparing),
        ms(phases.grouping),
        ms(phases.checking),
    );
    let tasks = tasks::run(&r, meanings.as_ref()).await?;
    println!(
        "bench newsroom.judgment_tasks group_claims {:.0} ms, cross_check {:.0} ms, cross_check of one claim {:.0} ms (the flow's tasks through the offline backend, each reading the whole window, vectors remembered)",
        ms(tasks.grouping),
        ms(tasks.checking),
        ms(tasks.checking_one),
    );
    let confirmed = verdicts
        .iter()
        .filter(|v| v.status == claims::Status::Confirmed);
    // The generator knows each item's event: a confirmation resting on two is false.
    let mixed: Vec<&claims::Verdict> = confirmed
        .clone()
        .filter(|v| events_of(&v.supporting).len() > 1)
        .collect();
    // Nor does the generator write a denial: every contradiction is a look-alike of another
    // event read as a rival account (safe, as it withholds a confirmation, but noisy).
    let contradicted = verdicts
        .iter()
        .filter(|v| v.status == claims::Status::Contradicted);
    let most_denials = contradicted.clone().map(|v| v.denying.len()).max();
    println!(
        "bench newsroom.generated {} items {} feeds {} claims {} confirmed, {} of them on different events; {} contradicted by other events (at most {} denials on one claim) ({} chars of bulletin)",
        generated.len(),
        feeds,
        verdicts.len(),
        confirmed.count(),
        mixed.len(),
        contradicted.clone().count(),
        most_denials.unwrap_or(0),
        wording.text.len()
    );
    let title = |id: &String| r.iter().find(|x| &x.id == id).map(|x| x.title.as_str());
    if let Some((v, d)) = contradicted
        .clone()
        .find_map(|v| v.denying.first().map(|d| (v, d)))
    {
        println!(
            "# e.g. {:?} contradicted by {:?}",
            v.text,
            title(d).unwrap_or(d)
        );
    }
    // Every mixed claim with its headlines (the first few), so a failure shows the confusion.
    for v in mixed.iter().take(MIXED_SHOWN) {
        let titles: Vec<&str> = v
            .supporting
            .iter()
            .map(|id| title(id).unwrap_or(id))
            .collect();
        println!("# mixed: {}", titles.join(" | "));
    }
    if let Some(v) = mixed.first() {
        return Err(BenchError::Failed(format!(
            "{} confirmed claims rest on different events, e.g. {:?} on {}",
            mixed.len(),
            v.text,
            v.supporting.join(", ")
        )));
    }

    let config = dir.path().join("iron.yaml");
    std::fs::write(&config, format!("state_dir: {}\n", dir.path().display()))
        .map_err(io("writing the config"))?;
    let port = crate::launch::nats::free_port().map_err(io("finding a free port"))?;
    let router = format!("tcp/127.0.0.1:{port}");
    let started = now_ms();
    let mut up = Up {
        log: dir.path().join("up.log"),
        child: None,
    };
    up.child = Some(spawn_up(
        &up.log, &config, &router, &official, &wires, items, &models,
    )?);
    let log = AnyLog::open(&crate::core::config::Config {
        state_dir: dir.path().to_path_buf(),
        ..Default::default()
    })
    .await?;
    let outbox = dir.path().join("outbox.jsonl");
    let result = measure(
        &log,
        &outbox,
        &mut up,
        started,
        items,
        judgment,
        &dir.path().join("feeds"),
        new,
        &generated,
        first_within,
    )
    .await;
    if let Some(mut child) = up.child.take() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    result
}

/// The `iron up` the bench runs, and the file its output goes to.
struct Up {
    log: PathBuf,
    child: Option<Child>,
}

impl Up {
    /// How it ended, if it has.
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// The last lines of its output (a node that refused to configure says why there).
    fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let last = &lines[lines.len().saturating_sub(12)..];
        if last.is_empty() {
            "(it printed nothing)".into()
        } else {
            last.join("\n  ")
        }
    }
}

fn spawn_up(
    up_log: &Path,
    config: &Path,
    router: &str,
    official: &Path,
    wires: &Path,
    items: usize,
    models: &Path,
) -> Result<Child, BenchError> {
    let log = std::fs::File::create(up_log).map_err(io("creating iron up's log"))?;
    BenchEnv::new()
        .config(config)
        .router(router)
        .set("NEWSROOM_OFFICIAL_FEEDS", official)
        .set("NEWSROOM_WIRE_FEEDS", wires)
        .set("FEEDS_INTERVAL", "1")
        .set("FEEDS_MAX_ITEMS", (items + 100).to_string())
        .set("IRON_MODELS_DIR", models)
        .set("RUST_LOG", "warn,zenoh=error,hiroz=error")
        .set("NO_COLOR", "1")
        .command(beside_iron("iron")?)
        .args(["up", "--launch", "launch/bringup.yaml", "--aem", "aem"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .map_err(io("starting iron up"))
}

/// Waits (up to `limit`, while `iron up` runs and no job is parked) until the outbox has `n`
/// records; the `n`th. A failure quotes what `iron up` said last, or why the job parked.
async fn nth_record(
    path: &Path,
    n: usize,
    limit: Duration,
    up: &mut Up,
    log: &AnyLog,
) -> Result<Value, BenchError> {
    let until = Instant::now() + limit;
    let mut diaries = Diaries::of("*");
    let mut looked = Instant::now();
    // The outbox is read again only when it has grown: a first bulletin at 10,000 items is
    // half a megabyte, and parsing it every few milliseconds took a third of a core from the
    // system being measured.
    let mut size = None;
    loop {
        let now = std::fs::metadata(path).ok().map(|m| m.len());
        if now != size {
            size = now;
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let nth = text.lines().nth(n - 1);
            if let Some(r) = nth.and_then(|l| serde_json::from_str::<Value>(l).ok()) {
                return Ok(r);
            }
        }
        if looked.elapsed() >= Duration::from_secs(1) {
            looked = Instant::now();
            let jobs = diaries.refresh(log).await.map_err(fail)?;
            if let Some(((_, job), JobState::Parked { reason })) = jobs
                .iter()
                .map(|(k, d)| (k, state_of(d)))
                .find(|(_, s)| matches!(s, JobState::Parked { .. }))
            {
                return Err(BenchError::Failed(format!(
                    "no bulletin #{n}: the newsroom's job {job} parked: {reason}"
                )));
            }
        }
        if let Some(status) = up.exited() {
            return Err(BenchError::Failed(format!(
                "iron up ended ({status}) before bulletin #{n}; its last lines:\n  {}",
                up.tail()
            )));
        }
        if Instant::now() > until {
            return Err(BenchError::Failed(format!(
                "no bulletin #{n} within {}s; iron up's last lines:\n  {}",
                limit.as_secs(),
                up.tail()
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[allow(clippy::too_many_arguments)]
async fn measure(
    log: &AnyLog,
    outbox_path: &Path,
    up: &mut Up,
    started: u64,
    items: usize,
    judgment: Duration,
    feeds_dir: &Path,
    new: usize,
    generated: &[Item],
    first_within: Duration,
) -> Result<(), BenchError> {
    let first = nth_record(outbox_path, 1, first_within, up, log).await?;
    let cost = up.child.as_ref().and_then(Child::id).and_then(tree_usage);
    let published = first["ts_ms"].as_u64().unwrap_or(0);
    let mem = log.read(MEM, "mem.>", 1, 1_000_000).await.map_err(fail)?;
    let jobs = log.read(JOBS, "jobs.>", 1, 1_000_000).await.map_err(fail)?;
    let refreshed = mem
        .iter()
        .filter_map(|m| serde_json::from_slice::<Envelope>(&m.payload).ok())
        .filter(|e| e.kind == EventKind::SourceChanged)
        .map(|e| e.ts)
        .min()
        .unwrap_or(started);
    let span = Duration::from_millis(published.saturating_sub(refreshed));
    println!(
        "bench newsroom.first_bulletin {:.0} ms after iron up ({:.0} ms after the first refresh)",
        published.saturating_sub(started) as f64,
        ms(span)
    );
    println!(
        "bench newsroom.throughput {:.1} items/s ({items} items, first refresh to published bulletin)",
        items as f64 / span.as_secs_f64().max(1e-9)
    );
    println!(
        "bench newsroom.judgment_share {:.1} % of the end-to-end time (the judgment above)",
        100.0 * judgment.as_secs_f64() / span.as_secs_f64().max(1e-9)
    );
    match cost {
        Some(TreeUsage {
            processes,
            cpu,
            peak_rss_max_kib,
            peak_rss_sum_kib,
        }) => println!(
            "bench newsroom.cost {:.1} ms CPU/item ({:.1} s CPU from iron up's start to the first bulletin, {processes} processes alive); peak RSS {:.0} MiB in one process, {:.0} MiB summed",
            cpu.as_secs_f64() * 1e3 / items as f64,
            cpu.as_secs_f64(),
            peak_rss_max_kib as f64 / 1024.0,
            peak_rss_sum_kib as f64 / 1024.0
        ),
        None => println!("bench newsroom.cost unavailable (no /proc to read)"),
    }
    println!("bench newsroom.steps {}", steps(&jobs, Which::First));
    let sizes: Vec<usize> = mem.iter().chain(&jobs).map(|m| m.payload.len()).collect();
    let log_time = replay_writes(&sizes).await?;
    println!(
        "bench newsroom.log {} events ({} KiB) written; the same writes to a fresh embedded log take {:.0} ms ({:.1} % of the end-to-end time)",
        sizes.len(),
        sizes.iter().sum::<usize>() / 1024,
        ms(log_time),
        100.0 * log_time.as_secs_f64() / span.as_secs_f64().max(1e-9)
    );

    // New items, one at a time: from the feed file written to its bulletin. Each one runs the
    // flow again over every item the feeds hold, so it may take as long as the first bulletin.
    let each_within = (2 * span).max(Duration::from_secs(120));
    let mut latencies = Vec::with_capacity(new);
    let feed = generated.first().map_or(0, |i| i.feed);
    let path = feeds_dir.join(format!("feed-{feed:02}.xml"));
    for (k, title) in NEW_EVENTS.iter().take(new).enumerate() {
        let text = std::fs::read_to_string(&path).map_err(io("reading a feed"))?;
        let item = format!(
            "<item><title>{title}</title><link>https://gen.example/new-{k}</link><guid>new-{k}</guid></item>\n</channel>"
        );
        let (written, written_ms) = (Instant::now(), now_ms());
        std::fs::write(&path, text.replacen("</channel>", &item, 1))
            .map_err(io("adding an item"))?;
        nth_record(outbox_path, 2 + k, each_within, up, log).await?;
        latencies.push(written.elapsed());
        // Where this item's time went: to the sources' change, to its job, then the job's steps.
        let mem = log.read(MEM, "mem.>", 1, 1_000_000).await.map_err(fail)?;
        let jobs = log.read(JOBS, "jobs.>", 1, 1_000_000).await.map_err(fail)?;
        let seen = mem
            .iter()
            .filter_map(|m| serde_json::from_slice::<Envelope>(&m.payload).ok())
            .filter(|e| e.kind == EventKind::SourceChanged && e.ts >= written_ms)
            .map(|e| e.ts)
            .min();
        println!(
            "# new item {}: {:.0} ms, sources changed after {}; its job: {}",
            k + 1,
            ms(written.elapsed()),
            seen.map_or("(not seen)".into(), |t| format!("{} ms", t - written_ms)),
            steps(&jobs, Which::Last { after: written_ms })
        );
    }
    if !latencies.is_empty() {
        latencies.sort();
        println!(
            "bench newsroom.new_item_to_bulletin p50 {:.0} ms max {:.0} ms ({} items; feeds refresh every 1 s, the trigger settles 3 s)",
            ms(pct(&latencies, 50.0)),
            ms(*latencies.last().unwrap_or(&Duration::ZERO)),
            latencies.len()
        );
    }
    Ok(())
}

/// Which job [`steps`] reads.
enum Which {
    /// The first in the log.
    First,
    /// The last to start, when it started at or after `after` (ms since the epoch).
    Last { after: u64 },
}

/// Where a job's time went, from its diary: trigger to first request, then each expert
/// request to its answer (for the last job, first how long after `after` it started).
fn steps(jobs: &[crate::core::durable::StoredMessage], which: Which) -> String {
    use crate::jobs::{Entry, JobEvent};
    let entries: Vec<Entry> = jobs
        .iter()
        .filter(|m| m.subject.contains(".evt."))
        .filter_map(|m| serde_json::from_slice(&m.payload).ok())
        .collect();
    let job = match which {
        Which::First => entries.first(),
        Which::Last { after } => entries
            .iter()
            .rev()
            .find(|e| matches!(e.event, JobEvent::JobStarted { .. }) && e.ts >= after),
    };
    let Some(job) = job.map(|e| e.job.clone()) else {
        return "(no job)".into();
    };
    let mine: Vec<&Entry> = entries.iter().filter(|e| e.job == job).collect();
    let started = mine.first().map_or(0, |e| e.ts);
    let mut parts = Vec::new();
    if let Which::Last { after } = which {
        parts.push(format!(
            "started after {} ms",
            started.saturating_sub(after)
        ));
    }
    let mut last = started;
    for e in &mine {
        if let JobEvent::ExpertRequested { domain, signal, .. } = &e.event {
            parts.push(format!("wait {} ms", e.ts.saturating_sub(last)));
            if let Some(answer) = mine
                .iter()
                .find(|a| matches!(&a.event, JobEvent::Signal { name, .. } if name == signal))
            {
                let role = domain.rsplit('/').next().unwrap_or(domain);
                parts.push(format!("{role} {} ms", answer.ts.saturating_sub(e.ts)));
                last = answer.ts;
            }
        }
    }
    if let Some(done) = mine
        .iter()
        .find(|e| matches!(e.event, JobEvent::Done { .. }))
    {
        parts.push(format!("to done {} ms", done.ts.saturating_sub(last)));
    }
    parts.join(", ")
}

fn fail(e: impl std::fmt::Display) -> BenchError {
    BenchError::Failed(format!("reading the log: {e}"))
}

/// Appends messages of `sizes` one after another to a fresh embedded log; how long it took.
async fn replay_writes(sizes: &[usize]) -> Result<Duration, BenchError> {
    let dir = tempfile::tempdir().map_err(io("creating a scratch log"))?;
    let log = AnyLog::open(&crate::core::config::Config {
        state_dir: dir.path().to_path_buf(),
        ..Default::default()
    })
    .await?;
    let t = Instant::now();
    for (i, size) in sizes.iter().enumerate() {
        log.append(AppendRequest {
            subject: "mem.bench.replay".into(),
            msg_id: format!("replay-{i}"),
            payload: vec![b'x'; *size],
            expected_last_subject_seq: None,
        })
        .await
        .map_err(fail)?;
    }
    Ok(t.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_places_are_each_one_place() {
        for place in PLACES {
            let first = place.split(' ').next().unwrap_or_default();
            assert!(
                !DISTRICTS.iter().any(|d| d.trim() == first),
                "{place} begins with a district"
            );
        }
    }
}
