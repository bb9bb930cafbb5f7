//! Perception tells the truth about its inputs, through `iron up` with real processes, real
//! files and a real HTTP server: the newsroom reads its sample feeds plus an Atom feed over
//! HTTP, a truncated XML file, a path with a typo, a 5 MB feed of 2,500 items, a URL that
//! answers 404 and one that never answers. Each failure is named with its feed, list, line and
//! reason in `iron up`'s output — once per change, however many refreshes — and in
//! `iron msp read` and the console's API; the bulletin is built from the feeds that work. A
//! feed list line that is not a feed stops the source at start with its file and line, and a
//! source whose every feed fails tells its readers and `/rosout`.

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::{extract::Path, http::StatusCode, response::IntoResponse};
use iron::{
    interfaces::rosout::Log,
    spine::control::{ControlConfig, ControlPlane, lifecycle::rosout},
};
use serde_json::Value;
use support::{eventually, project::Project};

const T: Duration = Duration::from_secs(90);

const ATOM: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Lighthouse Wire</title>
  <entry>
    <title>North Point lighthouse keeper retires after forty years</title>
    <link rel="alternate" href="https://lighthouse-wire.example/keeper"/>
    <id>urn:lighthouse-wire:1</id>
    <updated>2026-11-30T09:10:00Z</updated>
    <summary type="html">&lt;p&gt;The keeper leaves in &lt;b&gt;January&lt;/b&gt;.&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;</summary>
  </entry>
</feed>"#;

/// A feed cut off in the middle of its second item, as a failed download leaves it.
const TRUNCATED: &str = r#"<?xml version="1.0"?>
<rss version="2.0"><channel><title>Crane Watch</title>
<item><title>Harbour crane collapses onto quay</title><link>https://crane.example/1</link>
<pubDate>Mon, 30 Nov 2026 09:30:00 +0000</pubDate></item>
<item><title>Crane operator speaks</title><link>https://crane.exa"#;

/// About 5 MB: 2,500 items of about 2 KB, all from 2020 (older than every sample item).
fn big_feed() -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\"?>\n<rss version=\"2.0\"><channel><title>Archive</title>\n",
    );
    let words = "archived notice text ".repeat(95);
    for i in 0..2_500 {
        xml.push_str(&format!(
            "<item><title>Archive notice {i}</title><link>https://archive.example/{i}</link>\
             <pubDate>Wed, 01 Jan 2020 00:00:00 +0000</pubDate><description>{words}</description></item>\n"
        ));
    }
    xml.push_str("</channel></rss>\n");
    xml
}

/// Requests each path got.
type Hits = Arc<Mutex<BTreeMap<String, usize>>>;

/// A feed server on a free port: `/atom.xml` answers the Atom feed, `/gone.xml` 404, and
/// `/slow.xml` never in time. Returns its base URL and the requests it counts.
async fn feed_server() -> (String, Hits) {
    let hits: Hits = Arc::default();
    let counted = hits.clone();
    let app = axum::Router::new().route(
        "/{name}",
        axum::routing::get(move |Path(name): Path<String>| {
            let counted = counted.clone();
            async move {
                *counted.lock().unwrap().entry(name.clone()).or_default() += 1;
                match name.as_str() {
                    "atom.xml" => (StatusCode::OK, ATOM).into_response(),
                    "slow.xml" => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        (StatusCode::OK, ATOM).into_response()
                    }
                    _ => StatusCode::NOT_FOUND.into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, hits)
}

fn hits_of(hits: &Hits, name: &str) -> usize {
    hits.lock().unwrap().get(name).copied().unwrap_or(0)
}

/// Items of the sample feed `name` (config/feeds/samples).
fn sample_items(name: &str) -> usize {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config/feeds/samples")
        .join(name);
    let xml = std::fs::read_to_string(path).unwrap();
    iron::msp::feeds::parse(&xml).unwrap().1.len()
}

/// The bulletins in the outbox, in order.
fn bulletins(p: &Project) -> Vec<Value> {
    p.outbox()
        .into_iter()
        .filter_map(|r| r.get("bulletin").cloned())
        .collect()
}

/// Every source URL the bulletin cites.
fn cited(bulletin: &Value) -> Vec<String> {
    bulletin["claims"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["sources"].as_array().unwrap().iter())
        .map(|s| s["url"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_feed_that_fails_is_named_with_why_once_and_the_bulletin_uses_the_rest() {
    let (base, hits) = feed_server().await;
    // The newest items overall are the sample wires' and the Atom feed's: the 2020 archive
    // is read (in part) but none of its items is new enough to be shown.
    let shown = sample_items("wires.xml")
        + sample_items("bay-herald.xml")
        + sample_items("portside.xml")
        + 1;
    let p = Project::offline()
        .sample_feeds()
        .env("FEEDS_TIMEOUT", "1")
        .env("FEEDS_MAX_ITEMS", &shown.to_string());
    let big = big_feed();
    assert!(big.len() > 5_000_000, "{}", big.len());
    p.write("feeds/samples/archive.xml", &big);
    p.write("feeds/samples/crane.xml", TRUNCATED);
    let wires = p.path("feeds/wires.txt");
    let mut list = std::fs::read_to_string(&wires).unwrap();
    let first = list.lines().count() + 1;
    list.push_str(&format!(
        "{base}/atom.xml owner=lighthouse-wire\nsamples/crane.xml owner=crane-watch\nsamples/prtside.xml owner=portside-media\nsamples/archive.xml\n{base}/gone.xml\n{base}/slow.xml\n"
    ));
    std::fs::write(&wires, list).unwrap();
    let at = |n: usize| format!("{}:{}", wires.display(), first + n);
    let feed = |name: &str| p.path("feeds/samples").join(name).display().to_string();
    let warnings = [
        (
            feed("crane.xml"),
            at(1),
            "fails: not XML: the document ends inside <link> (cut short?)".to_string(),
        ),
        (
            feed("prtside.xml"),
            at(2),
            format!("fails: not found: no file {}", feed("prtside.xml")),
        ),
        (
            feed("archive.xml"),
            at(3),
            "is truncated: too large: read up to its first 2097152 bytes (FEEDS_MAX_BYTES)"
                .to_string(),
        ),
        (
            format!("{base}/gone.xml"),
            at(4),
            "fails: HTTP 404 Not Found".to_string(),
        ),
        (
            format!("{base}/slow.xml"),
            at(5),
            "fails: timed out after 1s".to_string(),
        ),
    ];
    let said = |name: &str, at: &str, what: &str| {
        format!("newsroom/news_wires: feed {name} ({at}) {what}")
    };

    let mut up = p.up(&Project::shipped_launch_list(), &[]);
    for (name, at, what) in &warnings {
        up.wait_for(&said(name, at, what), T);
    }

    // The bulletin is built from the feeds that work: the samples and the Atom feed over HTTP,
    // nothing of the truncated file (its first item was whole) or of the archive. (The
    // official feeds may be published first, alone: the wires' first refresh waits for the
    // feed that never answers.)
    const KEEPER: &str = "https://lighthouse-wire.example/keeper";
    eventually("a bulletin citing the Atom feed", T, || async {
        bulletins(&p)
            .iter()
            .any(|b| cited(b).iter().any(|u| u == KEEPER))
            .then_some(())
    })
    .await;
    let all = bulletins(&p);
    let urls: Vec<String> = all.iter().flat_map(cited).collect();
    assert!(
        urls.iter().any(|u| u.starts_with("https://wire.example/")),
        "{all:#?}"
    );
    assert!(
        !urls
            .iter()
            .any(|u| u.contains("crane.example") || u.contains("archive.example")),
        "{all:#?}"
    );
    let bridge = all
        .iter()
        .rev()
        .flat_map(|b| b["claims"].as_array().unwrap().iter())
        .find(|c| c["text"].as_str().unwrap().contains("bridge"))
        .expect("a bridge claim");
    assert_eq!(bridge["status"], "confirmed", "{all:#?}");

    // What a person asks shows every feed's health with its reason.
    let read = p.iron(&["msp", "read", "newsroom/news_wires"]);
    let text = String::from_utf8_lossy(&read.stdout).to_string();
    assert!(read.status.success(), "{text}");
    assert!(
        text.contains("Feeds: 9 listed; 4 read, 1 truncated, 4 failing."),
        "{text}"
    );
    assert!(
        text.contains(&format!("ok · {base}/atom.xml ({}): 1 item(s)", at(0))),
        "{text}"
    );
    for (name, at, what) in &warnings {
        let reason = what
            .trim_start_matches("fails: ")
            .trim_start_matches("is truncated: ");
        assert!(text.contains(&format!("{name} ({at}): {reason}")), "{text}");
    }
    assert!(
        text.contains("North Point lighthouse keeper retires after forty years"),
        "{text}"
    );

    // So does the console's API (the Sources tab).
    let (listen, token) = (p.console_listen(), p.console_token());
    let http = reqwest::Client::new();
    let source = eventually("the wires' health in the console", T, || async {
        let state: Value = http
            .get(format!("http://{listen}/api/state"))
            .bearer_auth(&token)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        state["sources"]
            .as_array()?
            .iter()
            .find(|s| {
                s["name"] == "news_wires" && s["feeds"].as_array().is_some_and(|f| f.len() == 9)
            })
            .cloned()
    })
    .await;
    assert_eq!(source["failing"], false);
    let feeds = source["feeds"].as_array().unwrap();
    let status_of = |name: &str| {
        feeds
            .iter()
            .find(|f| f["feed"] == name)
            .map(|f| {
                (
                    f["status"].as_str().unwrap().to_string(),
                    f["reason"].clone(),
                )
            })
            .unwrap_or_else(|| panic!("{name} in {source:#}"))
    };
    assert_eq!(status_of(&format!("{base}/gone.xml")).0, "failing");
    assert_eq!(
        status_of(&format!("{base}/gone.xml")).1,
        "HTTP 404 Not Found"
    );
    assert_eq!(status_of(&feed("archive.xml")).0, "truncated");
    assert_eq!(status_of(&format!("{base}/atom.xml")).0, "ok");

    // Once per change: after more refreshes, each failure was told once. The typo fixed, the
    // feed's recovery is told once too, and its failure is not told again.
    let seen = hits_of(&hits, "gone.xml");
    eventually("three more refreshes", T, || async {
        (hits_of(&hits, "gone.xml") >= seen + 3).then_some(())
    })
    .await;
    for (name, at, what) in &warnings {
        let told = up.matching(&said(name, at, what));
        assert_eq!(told.len(), 1, "{told:#?}");
    }
    std::fs::copy(feed("portside.xml"), feed("prtside.xml")).unwrap();
    let recovered = said(&feed("prtside.xml"), &at(2), "recovered: 2 item(s) read");
    up.wait_for(&recovered, T);
    let seen = hits_of(&hits, "gone.xml");
    eventually("two more refreshes", T, || async {
        (hits_of(&hits, "gone.xml") >= seen + 2).then_some(())
    })
    .await;
    assert_eq!(up.matching(&recovered).len(), 1);
    let (name, at2, what) = &warnings[1];
    assert_eq!(up.matching(&said(name, at2, what)).len(), 1);
    assert_eq!(
        up.matching(&said(&warnings[3].0, &warnings[3].1, &warnings[3].2))
            .len(),
        1
    );

    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("iron up stops on SIGINT");
}

const SOURCE_ONLY: &str = "nodes:
  - name: official_feeds
    namespace: /iron/msp/newsroom
    executable: source_node
    args: [--source, newsroom/official_feeds]
    autostart: true
    respawn: true
";

const FEED: &str = r#"<?xml version="1.0"?>
<rss version="2.0"><channel><title>Harbour Authority</title>
<item><title>Swing bridge reopens</title><link>https://harbour.example/1</link>
<pubDate>Tue, 01 Dec 2026 05:00:00 +0000</pubDate></item>
</channel></rss>"#;

/// The /rosout records of `node`'s logger, as they arrive.
struct RosoutWatch {
    records: Arc<Mutex<Vec<Log>>>,
    _sub: Box<dyn std::any::Any + Send>,
    _control: ControlPlane,
}

impl RosoutWatch {
    async fn start(router: &str, logger: &str) -> Self {
        let control = ControlPlane::connect(ControlConfig {
            router: router.to_string(),
            domain_id: 0,
        })
        .await
        .unwrap();
        let node = control.node("rosout_watch", "/").unwrap();
        control.wait_for_router(&node, T).await.unwrap();
        let records: Arc<Mutex<Vec<Log>>> = Arc::default();
        let (sink, logger) = (records.clone(), logger.to_string());
        let sub = node
            .create_sub::<Log>(rosout::TOPIC)
            .with_qos(rosout::qos())
            .build_with_callback(move |r: Log| {
                if r.name == logger {
                    sink.lock().unwrap().push(r);
                }
            })
            .unwrap();
        RosoutWatch {
            records,
            _sub: Box::new((sub, node)),
            _control: control,
        }
    }

    async fn wait(&self, level: u8, words: &[&str]) -> String {
        eventually(&format!("a /rosout record with {words:?}"), T, || async {
            self.records
                .lock()
                .unwrap()
                .iter()
                .find(|r| r.level == level && words.iter().all(|w| r.msg.contains(w)))
                .map(|r| r.msg.clone())
        })
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_list_stops_the_source_at_start_and_a_source_whose_every_feed_fails_says_so() {
    let p = Project::offline().env("FEEDS_INTERVAL", "1");
    let list = p.write(
        "official.txt",
        "# the harbour's feeds\nharbour.xml onwer=harbour-authority\n",
    );
    let p = p.env("NEWSROOM_OFFICIAL_FEEDS", &list.display().to_string());
    let mut up = p.up(SOURCE_ONLY, &[]);
    up.wait_for(
        &format!(
            "{}:2: \"onwer=harbour-authority\" is not understood; after the address only owner=<token> may follow; the node stays unconfigured",
            list.display()
        ),
        T,
    );
    let read = p.iron(&["msp", "read", "newsroom/official_feeds"]);
    assert!(
        !read.status.success(),
        "a source that did not start serves nothing"
    );

    // Fixed, but every feed fails: a path with a typo and a port nobody listens on.
    let rosout = RosoutWatch::start(p.router(), "iron.msp.newsroom.official_feeds").await;
    let closed = support::free_port();
    std::fs::write(
        &list,
        format!("harbor.xml owner=harbour-authority\nhttp://127.0.0.1:{closed}/feed.xml\n"),
    )
    .unwrap();
    let typo = p.path("harbor.xml").display().to_string();
    let said = rosout
        .wait(
            Log::ERROR,
            &["every input of source newsroom/official_feeds fails"],
        )
        .await;
    assert!(
        said.contains(&format!("{typo} ({}:1): not found", list.display())),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "http://127.0.0.1:{closed}/feed.xml ({}:2): no answer",
            list.display()
        )),
        "{said}"
    );
    up.wait_for(
        &format!(
            "newsroom/official_feeds: feed {typo} ({}:1) fails: not found",
            list.display()
        ),
        T,
    );
    let read = eventually("the source read as failing", T, || async {
        let out = p.iron(&["msp", "read", "newsroom/official_feeds"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.contains("Unavailable").then_some(out)
    })
    .await;
    assert!(!read.status.success(), "nothing to show is not success");
    let text = String::from_utf8_lossy(&read.stdout);
    assert!(
        text.contains("Unavailable: every feed fails (2 listed); nothing can be shown:")
            && text.contains(&format!(
                "failing · {typo} ({}:1): not found",
                list.display()
            ))
            && text.contains("do not assume it is quiet"),
        "{text}"
    );

    // One feed reads again: the node says so, and the source shows its item.
    std::fs::write(&typo, FEED).unwrap();
    rosout
        .wait(
            Log::INFO,
            &["source newsroom/official_feeds reads again: 1 of 2 input(s)"],
        )
        .await;
    up.wait_for(
        &format!(
            "newsroom/official_feeds: feed {typo} ({}:1) recovered: 1 item(s) read",
            list.display()
        ),
        T,
    );
    let text = p.iron_ok(&["msp", "read", "newsroom/official_feeds"]);
    assert!(text.contains("Swing bridge reopens"), "{text}");
    assert!(
        text.contains("Feeds: 2 listed; 1 read, 0 truncated, 1 failing."),
        "{text}"
    );
    assert_eq!(
        up.matching("every input of source newsroom/official_feeds fails")
            .len(),
        1,
        "said once"
    );

    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("iron up stops on SIGINT");
}
