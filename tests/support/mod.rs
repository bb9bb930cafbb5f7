//! Test support: real processes (our binaries, and later nats-server) on free ports, with
//! their output captured and matched, killed on drop.

#![allow(dead_code)]

pub mod cognition;
pub mod harness;
pub mod nats;
pub mod project;

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    process::{Child, Command, Output, Stdio},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

/// Copies the directory tree `from` to `to`.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A free TCP port on loopback (bound, then released) for a server a test starts later.
///
/// It is drawn at random below Linux's ephemeral range (32768 and up), never from it: every
/// Zenoh peer listens on a port the kernel picks from that range, and a port chosen there
/// could be taken by one of the many peers of the tests running alongside before the test's
/// own server binds it (a browser then reached a Zenoh peer instead of the console). A port
/// is never handed out twice by one test binary.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let random = RandomState::new();
    for attempt in 0u32..1_000 {
        let port = (FIRST + (random.hash_one(attempt) as u32) % SPAN) as u16;
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!(
        "no free port on 127.0.0.1 between {FIRST} and {}",
        FIRST + SPAN
    )
}

/// Path of one of this package's binaries.
pub fn bin(name: &str) -> String {
    match name {
        "iron" => env!("CARGO_BIN_EXE_iron").to_string(),
        "demo_node" => env!("CARGO_BIN_EXE_demo_node").to_string(),
        "projector_node" => env!("CARGO_BIN_EXE_projector_node").to_string(),
        "memory_worker" => env!("CARGO_BIN_EXE_memory_worker").to_string(),
        "inbox_node" => env!("CARGO_BIN_EXE_inbox_node").to_string(),
        "engine_node" => env!("CARGO_BIN_EXE_engine_node").to_string(),
        "expert_node" => env!("CARGO_BIN_EXE_expert_node").to_string(),
        "delivery_node" => env!("CARGO_BIN_EXE_delivery_node").to_string(),
        "source_node" => env!("CARGO_BIN_EXE_source_node").to_string(),
        "model_node" => env!("CARGO_BIN_EXE_model_node").to_string(),
        other => panic!("unknown binary {other}"),
    }
}

/// A child process whose stdout and stderr lines are collected.
pub struct Proc {
    pub name: String,
    child: Option<Child>,
    lines: Arc<Mutex<Vec<String>>>,
    /// Output streams not yet read to their end.
    open: Arc<std::sync::atomic::AtomicUsize>,
}

impl Proc {
    /// Starts `program args…` with `envs`, capturing its output.
    pub fn spawn(name: &str, program: &str, args: &[&str], envs: &[(&str, &str)]) -> Proc {
        Proc::spawn_in(None, name, program, args, envs)
    }

    /// [`Proc::spawn`] with `cwd` as the working directory (the test's own when `None`).
    pub fn spawn_in(
        cwd: Option<&std::path::Path>,
        name: &str,
        program: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Proc {
        let mut cmd = Command::new(program);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(2));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let (lines, open) = (lines.clone(), open.clone());
            let tag = name.to_string();
            thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if std::env::var_os("IRON_TEST_ECHO").is_some() {
                        eprintln!("[{tag}] {line}");
                    }
                    lines.lock().unwrap().push(line);
                }
                open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        Proc {
            name: name.to_string(),
            child: Some(child),
            lines,
            open,
        }
    }

    /// Every line so far.
    pub fn output(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits until a line contains `needle`; panics with the output after `timeout`, or as
    /// soon as the process has closed its output without one.
    pub fn wait_for(&self, needle: &str, timeout: Duration) {
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            let closed = self.open.load(std::sync::atomic::Ordering::SeqCst) == 0;
            if self.output().iter().any(|l| l.contains(needle)) {
                return;
            }
            if closed {
                panic!(
                    "{}: ended its output with no line containing {needle:?}; output:\n{}",
                    self.name,
                    self.output().join("\n")
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "{}: no line containing {needle:?} within {timeout:?}; output:\n{}",
            self.name,
            self.output().join("\n")
        );
    }

    /// Lines containing `needle`, in order.
    pub fn matching(&self, needle: &str) -> Vec<String> {
        self.output()
            .into_iter()
            .filter(|l| l.contains(needle))
            .collect()
    }

    /// Waits for the process to exit by itself; `None` if it is still running after `timeout`.
    /// Once it has exited, what it wrote last is in [`output`](Self::output) too (its streams
    /// are read to their end, for at most two more seconds: a child of its own may hold them).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        while Instant::now() < until {
            if let Ok(Some(status)) = child.try_wait() {
                let drained = Instant::now() + Duration::from_secs(2);
                while self.open.load(std::sync::atomic::Ordering::SeqCst) > 0
                    && Instant::now() < drained
                {
                    thread::sleep(Duration::from_millis(10));
                }
                return Some(status);
            }
            thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// Sends `signal` (e.g. libc::SIGINT).
    pub fn signal(&self, signal: i32) {
        if let Some(c) = &self.child {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(c.id() as i32, signal) };
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A router on a free port, and the endpoint to reach it.
pub struct Plane {
    pub endpoint: String,
    pub router: Proc,
}

impl Plane {
    pub fn start() -> Plane {
        Plane::start_at(&format!("tcp/127.0.0.1:{}", free_port()))
    }

    /// A router listening at `endpoint`.
    pub fn start_at(endpoint: &str) -> Plane {
        let endpoint = endpoint.to_string();
        let router = Proc::spawn(
            "router",
            &bin("iron"),
            &["router", "--listen", &endpoint],
            &[],
        );
        router.wait_for("listening on", Duration::from_secs(20));
        Plane { endpoint, router }
    }

    /// Starts the demo node `/iron/<name>` with extra own arguments.
    pub fn demo(&self, name: &str, extra: &[&str]) -> Proc {
        let mut args: Vec<&str> = extra.to_vec();
        let node = format!("__node:={name}");
        args.extend(["--ros-args", "-r", &node, "-r", "__ns:=/iron"]);
        let p = Proc::spawn(
            name,
            &bin("demo_node"),
            &args,
            &[("IRON_ROUTER", &self.endpoint)],
        );
        p.wait_for("managed node up", Duration::from_secs(20));
        p
    }

    /// Runs `iron <args>` against this plane.
    pub fn iron(&self, args: &[&str]) -> Output {
        run_iron(args, [("IRON_ROUTER", &self.endpoint)])
    }

    /// Runs `iron <args>`, asserting success; returns stdout.
    pub fn iron_ok(&self, args: &[&str]) -> String {
        run_iron_ok(args, [("IRON_ROUTER", &self.endpoint)])
    }
}

/// The body of a `models:` block (indented under it) in which one scripted backend playing
/// `script` is the `fast`, `standard` and `strong` model.
pub fn scripted_models(script: &std::path::Path) -> String {
    format!(
        "  backends:\n    offline:\n      kind: scripted\n      script: {}\n  logical:\n    fast: [offline]\n    standard: [offline]\n    strong: [offline]\n",
        script.display()
    )
}

/// Writes `dir/script.yaml` (`script`) and `dir/iron.yaml`: `dir` as the state directory,
/// the `extra` lines, and every model played by that script. Returns the configuration's path.
pub fn scripted_config(dir: &std::path::Path, script: &str, extra: &str) -> std::path::PathBuf {
    let script_path = dir.join("script.yaml");
    std::fs::write(&script_path, script).unwrap();
    let config = dir.join("iron.yaml");
    std::fs::write(
        &config,
        format!(
            "state_dir: {}\n{extra}models:\n{}",
            dir.display(),
            scripted_models(&script_path)
        ),
    )
    .unwrap();
    config
}

/// Compiles `aem` into `catalog.json` and `tool_manifest.json` in `dir`.
pub fn build_catalog_from(aem: &std::path::Path, dir: &std::path::Path) {
    run_iron_ok::<&str, &str>(
        &[
            "catalog",
            "build",
            "--aem",
            &aem.display().to_string(),
            "--out",
            &dir.display().to_string(),
        ],
        [],
    );
}

/// Compiles the shipped `aem/` into `catalog.json` and `tool_manifest.json` in `dir`, as
/// `iron up` does, for tests that start nodes themselves.
pub fn build_catalog(dir: &std::path::Path) {
    run_iron_ok::<&str, &str>(
        &["catalog", "build", "--out", &dir.display().to_string()],
        [],
    );
}

/// Runs `iron <args>` with `envs` (and no colour).
pub fn run_iron<K, V>(args: &[&str], envs: impl IntoIterator<Item = (K, V)>) -> Output
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    run_iron_in(None, args, envs)
}

/// [`run_iron`] with `cwd` as the working directory (the test's own when `None`).
pub fn run_iron_in<K, V>(
    cwd: Option<&std::path::Path>,
    args: &[&str],
    envs: impl IntoIterator<Item = (K, V)>,
) -> Output
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new(bin("iron"));
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    cmd.args(args)
        .envs(envs)
        .env("NO_COLOR", "1")
        .output()
        .expect("run iron")
}

/// Runs `iron <args>` with `envs`, failing the test unless it succeeds without logging an
/// error; returns its stdout.
pub fn run_iron_ok<K, V>(args: &[&str], envs: impl IntoIterator<Item = (K, V)>) -> String
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    run_iron_ok_in(None, args, envs)
}

/// [`run_iron_ok`] with `cwd` as the working directory.
pub fn run_iron_ok_in<K, V>(
    cwd: Option<&std::path::Path>,
    args: &[&str],
    envs: impl IntoIterator<Item = (K, V)>,
) -> String
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let out = run_iron_in(cwd, args, envs);
    assert!(
        out.status.success(),
        "iron {args:?} failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_error_lines(args, &out.stderr);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A command that succeeded logs no error of its own, and not the `session closed` errors
/// Zenoh used to log on every CLI exit. (Zenoh's other errors about peers that vanish
/// mid-exchange, which tests that kill nodes provoke, are Zenoh's to report.)
pub fn assert_no_error_lines(args: &[&str], stderr: &[u8]) {
    let stderr = String::from_utf8_lossy(stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            l.contains(" ERROR ") && (l.contains(" ERROR iron") || l.contains("session closed"))
        })
        .collect();
    assert!(
        errors.is_empty(),
        "iron {args:?} succeeded but logged errors:\n{}",
        errors.join("\n")
    );
}

/// `event`'s payload read as `T`: an event of another kind, or whose payload does not have
/// `T`'s shape, fails the test, naming the event and what was wrong.
pub fn read_one<T: iron::protocol::Payload>(event: &iron::core::envelope::Envelope) -> T {
    event.payload().unwrap_or_else(|why| panic!("{why}"))
}

/// `events` read as their kind's payload (as [`read_one`]), in order.
pub fn read<T: iron::protocol::Payload>(events: &[iron::core::envelope::Envelope]) -> Vec<T> {
    events.iter().map(read_one).collect()
}

/// Every event on the MEM stream of `log`, oldest first (messages that are not envelopes are
/// passed over).
pub async fn mem_events(
    log: &impl iron::core::durable::EventLog,
) -> Vec<iron::core::envelope::Envelope> {
    let mut out = Vec::new();
    let mut from = 1;
    loop {
        let page = log.read("MEM", "mem.>", from, 10_000).await.unwrap();
        let Some(last) = page.last() else { break };
        from = last.seq + 1;
        out.extend(
            page.iter()
                .filter_map(|m| serde_json::from_slice(&m.payload).ok()),
        );
    }
    out
}

/// The events of `kind` on the MEM stream of `log`, oldest first.
pub async fn mem_events_of(
    log: &impl iron::core::durable::EventLog,
    kind: &str,
) -> Vec<iron::core::envelope::Envelope> {
    let mut all = mem_events(log).await;
    all.retain(|e| e.kind.as_str() == kind);
    all
}

/// Follows `<action>/rejections` as a stock ROS 2 user would (`ros2 topic echo`): every
/// `GoalRejection` published there arrives on the receiver while the returned subscription
/// is held.
pub fn echo_rejections(
    node: &hiroz::node::ZNode,
    action: &str,
) -> (
    impl Sized,
    tokio::sync::mpsc::UnboundedReceiver<iron::interfaces::GoalRejection>,
) {
    use iron::{
        interfaces::GoalRejection,
        spine::control::action::{rejections_qos, rejections_topic},
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<GoalRejection>();
    let subscription = node
        .create_sub::<GoalRejection>(&rejections_topic(action))
        .with_qos(rejections_qos())
        .build_with_callback(move |r: GoalRejection| {
            let _ = tx.send(r);
        })
        .unwrap();
    (subscription, rx)
}

/// A hostile request: what it is, its payload, and whether it carries an rmw_zenoh request
/// attachment.
pub type RawCase = (&'static str, Vec<u8>, bool);

/// Sends each of `cases` to `service` as a raw query on `ke` and fails the test, naming the
/// service and the case, when a query does not end within `limit` (dropped with a log line,
/// or answered) or is answered more than once.
pub async fn survives_raw_queries(
    session: &zenoh::Session,
    service: &str,
    ke: &str,
    cases: Vec<RawCase>,
    limit: Duration,
) {
    for (what, payload, with_attachment) in cases {
        let what = format!("{service}: {what}");
        let answered = raw_query(session, ke, payload, with_attachment, limit, &what).await;
        assert!(answered <= 1, "{what}: {answered} replies");
    }
}

/// Sends `payload` as a raw query on `ke` (with an rmw_zenoh request attachment when
/// `with_attachment`) and returns how many replies came before the query ended; fails the
/// test, naming `what`, when it has not ended within `limit`.
async fn raw_query(
    session: &zenoh::Session,
    ke: &str,
    payload: Vec<u8>,
    with_attachment: bool,
    limit: Duration,
    what: &str,
) -> usize {
    let mut get = session
        .get(ke)
        .payload(payload)
        .timeout(Duration::from_secs(3));
    if with_attachment {
        get = get.attachment(zenoh::bytes::ZBytes::from(
            hiroz::attachment::Attachment::new(1, [7; 16]),
        ));
    }
    let replies = get.await.unwrap();
    tokio::time::timeout(limit, async {
        let mut n = 0;
        while replies.recv_async().await.is_ok() {
            n += 1;
        }
        n
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: the query hung"))
}

/// The blocking form of [`eventually`], for tests without a runtime: polls `done` until it
/// holds, failing the test with `report()` after `limit`.
pub fn wait_until(limit: Duration, done: impl Fn() -> bool, report: impl Fn() -> String) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "after {limit:?}: {}", report());
        thread::sleep(Duration::from_millis(50));
    }
}

/// Polls `check` until it returns `Some`, failing the test with `what` after `limit`.
/// Deadlines only bound waiting; they never decide whether behaviour is right.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "gave up waiting for {what} after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The test virtualenv's python (with zenoh-ros2-sdk, the independent rmw_zenoh client), as
/// scripts/test.sh installs it; a failure that says how to make it otherwise (never a skip).
pub fn test_python() -> String {
    match std::env::var("IRON_TEST_PYTHON") {
        Ok(p) if std::path::Path::new(&p).is_file() => p,
        _ => panic!(
            "IRON_TEST_PYTHON does not name the test virtualenv's python. Run the suite with \
             scripts/test.sh, or: python3 -m venv .venv-test && .venv-test/bin/pip install -r \
             tests/requirements.txt && IRON_TEST_PYTHON=$PWD/.venv-test/bin/python cargo test"
        ),
    }
}

/// The Node that drives headless Chromium (playwright-core) for the console's page tests,
/// after checking that Chromium and the driver are installed; a failure says how to install
/// them (never a skip).
pub fn browser_driver() -> String {
    let chromium = std::env::var("IRON_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "no Chromium at {chromium}: `apt-get install chromium` (scripts/test.sh does)"
    );
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/node_modules/playwright-core");
    assert!(
        std::path::Path::new(driver).exists(),
        "no playwright-core: `npm ci` in the repository (scripts/test.sh does)"
    );
    std::env::var("IRON_TEST_NODE").unwrap_or_else(|_| "node".into())
}

/// Where the page tests write their screenshots (`<target tmp>/console-ui/`), made.
pub fn screenshots() -> std::path::PathBuf {
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-ui");
    std::fs::create_dir_all(&shots).unwrap();
    shots
}

/// Runs git in `dir` as a test user; its output. Fails the test when git fails.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=test", "-c", "user.email=test@localhost"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}
