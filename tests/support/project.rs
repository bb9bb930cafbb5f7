//! The one fixture for multi-process tests: a project on disk driven the way a person runs
//! Iron. It owns a state directory with an `iron.yaml` (experts on a scripted model, an
//! OpenAI-compatible fake, or the offline backend), a router endpoint on a free port, the
//! environment every process shares, and optionally a running router (for nodes started one
//! by one) and a real nats-server (the durable plane on JetStream). Processes are started
//! through it (`up`, `spawn`), `iron` runs against it, and its log is read back by kind.
//! Everything it started stops when it is dropped.

use std::process::Output;

use iron::{
    core::{config::Config, envelope::Envelope},
    spine::durable::AnyLog,
};

use super::nats::NatsServer;
use super::{Plane, Proc, bin, free_port};

/// A state directory, the environment every process of the test shares, and what the
/// project runs itself (a router, a nats-server).
pub struct Project {
    pub dir: tempfile::TempDir,
    /// The operators' private keys (`IRON_OPERATOR_KEYS`), outside the state directory as a
    /// person's are outside the deployment.
    keys: tempfile::TempDir,
    envs: Vec<(String, String)>,
    plane: Option<Plane>,
    nats: Option<NatsServer>,
}

impl Project {
    /// A project whose `fast`, `standard` and `strong` models all play `script` (a scripted
    /// backend's YAML).
    pub fn scripted(script: &str) -> Project {
        Project::scripted_with(script, "")
    }

    /// [`Project::scripted`] with `extra` lines in `iron.yaml` (e.g. `operators: [desk]`).
    pub fn scripted_with(script: &str, extra: &str) -> Project {
        let p = Project::configured("");
        super::scripted_config(p.dir.path(), script, extra);
        p
    }

    /// [`Project::scripted`] in a directory outside `/tmp` (under the build's temporary
    /// directory): what a sandbox, which has a `/tmp` of its own, can see of a project is
    /// tested where a real project lies.
    pub fn scripted_outside_tmp(script: &str) -> Project {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let p = Project::configured_in(dir, "");
        super::scripted_config(p.dir.path(), script, "");
        p
    }

    /// A project with no `models:` block: experts run on the offline backend.
    pub fn offline() -> Project {
        Project::configured("")
    }

    /// A project whose `fast`, `standard` and `strong` models are one OpenAI-compatible
    /// server at `base_url` (a fake one in tests).
    pub fn openai(base_url: &str) -> Project {
        Project::configured(&format!(
            "models:\n  backends:\n    fake:\n      kind: openai\n      base_url: {base_url}/v1\n      model: fake-gpt\n  logical:\n    fast: [fake]\n    standard: [fake]\n    strong: [fake]\n  retry: {{max_attempts: 1}}\n"
        ))
    }

    /// A state directory whose `iron.yaml` is `state_dir` followed by `extra` (e.g. a
    /// `models:` block of its own).
    pub fn configured(extra: &str) -> Project {
        Project::configured_in(tempfile::tempdir().unwrap(), extra)
    }

    /// [`Project::configured`] in `dir`.
    fn configured_in(dir: tempfile::TempDir, extra: &str) -> Project {
        let keys = tempfile::tempdir().unwrap();
        let config = dir.path().join("iron.yaml");
        let p = Project {
            envs: vec![
                (
                    "IRON_ROUTER".into(),
                    format!("tcp/127.0.0.1:{}", free_port()),
                ),
                ("IRON_CONFIG".into(), config.display().to_string()),
                (
                    "IRON_OPERATOR_KEYS".into(),
                    keys.path().display().to_string(),
                ),
                // Tests run side by side: each project's console on a port of its own.
                (
                    "IRON_CONSOLE_LISTEN".into(),
                    format!("127.0.0.1:{}", free_port()),
                ),
            ],
            dir,
            keys,
            plane: None,
            nats: None,
        };
        p.set_config(extra);
        p
    }

    /// Rewrites `iron.yaml`: `state_dir` followed by `extra` (for a `models:` block that names
    /// files in the project, written once the project exists).
    pub fn set_config(&self, extra: &str) {
        self.write(
            "iron.yaml",
            &format!("state_dir: {}\n{extra}", self.dir.path().display()),
        );
    }

    /// Starts a router at the project's endpoint, for nodes started one by one with
    /// [`Project::spawn`] (`iron up` starts its own instead).
    pub fn with_router(mut self) -> Self {
        self.plane = Some(Plane::start_at(self.router()));
        self
    }

    /// The router [`Project::with_router`] started.
    pub fn plane(&self) -> &Plane {
        self.plane.as_ref().expect("started with_router()")
    }

    /// Starts a real nats-server and makes JetStream every process's durable plane.
    pub fn with_nats(mut self) -> Self {
        let server = NatsServer::start();
        self = self
            .env("IRON_DURABLE", "jetstream")
            .env("IRON_NATS_URL", &server.url())
            .env("IRON_NATS_MONITOR", &server.monitor());
        self.nats = Some(server);
        self
    }

    /// The nats-server [`Project::with_nats`] started (to restart it, say).
    pub fn nats(&mut self) -> &mut NatsServer {
        self.nats.as_mut().expect("started with_nats()")
    }

    /// Copies the newsroom's sample feeds (`config/feeds/`) into the project, points the
    /// newsroom's sources at the copies and makes them refresh every second, so a test can
    /// add items.
    pub fn sample_feeds(self) -> Self {
        let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/feeds");
        let to = self.path("feeds");
        super::copy_dir(&from, &to);
        let official = to.join("official.txt").display().to_string();
        let wires = to.join("wires.txt").display().to_string();
        self.env("NEWSROOM_OFFICIAL_FEEDS", &official)
            .env("NEWSROOM_WIRE_FEEDS", &wires)
            .env("FEEDS_INTERVAL", "1")
    }

    /// The shipped launch list (`launch/bringup.yaml`), as text.
    pub fn shipped_launch_list() -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("launch/bringup.yaml"),
        )
        .unwrap()
    }

    /// Every finished record of the delivery bridge's outbox, in order (a line still being
    /// written, with no newline yet, is not one).
    pub fn outbox(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.path("outbox.jsonl")).unwrap_or_default();
        let finished = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
        finished
            .lines()
            .map(|l| serde_json::from_str(l).expect("an outbox line is JSON"))
            .collect()
    }

    /// Makes operator `name`'s key (in the project's key directory) and registers it with
    /// the project's deployment, as a person does with `iron operator add`.
    pub fn operator(&self, name: &str) {
        self.iron_ok(&["operator", "add", name]);
    }

    /// The directory of the operators' private keys.
    pub fn keys(&self) -> &std::path::Path {
        self.keys.path()
    }

    /// Adds `name=value` to the environment of every process.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.envs.push((name.into(), value.into()));
        self
    }

    /// The router endpoint every process of the project uses.
    pub fn router(&self) -> &str {
        self.envs
            .iter()
            .find(|(k, _)| k == "IRON_ROUTER")
            .map(|(_, v)| v.as_str())
            .expect("a project has a router")
    }

    /// A path in the state directory.
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `text` to `name` in the state directory.
    pub fn write(&self, name: &str, text: &str) -> std::path::PathBuf {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The environment every process of the project gets.
    pub fn envs(&self) -> Vec<(&str, &str)> {
        self.envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    /// Where the project's console listens (`host:port`).
    pub fn console_listen(&self) -> String {
        self.envs()
            .into_iter()
            .find(|(k, _)| *k == "IRON_CONSOLE_LISTEN")
            .map(|(_, v)| v.to_string())
            .expect("a project gives its console a port")
    }

    /// The console's token, as the running console wrote it.
    pub fn console_token(&self) -> String {
        let path = self.path("console.token");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .trim()
            .to_string()
    }

    /// Runs the page test `tests/ui/<script>` in headless Chromium against the project's
    /// running console (its arguments: the console's URL, its token, the screenshot directory,
    /// then `extra`), failing the test unless it prints PASS and exits 0.
    pub fn browse(&self, script: &str, extra: &[&str]) {
        let node = super::browser_driver();
        let url = format!("http://{}", self.console_listen());
        let (token, shots) = (self.console_token(), super::screenshots());
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/ui")
            .join(script);
        let shots = shots.display().to_string();
        let mut args = vec![script.to_str().unwrap(), &url, &token, &shots];
        args.extend_from_slice(extra);
        let mut browser = self.spawn("browser", &node, &args);
        let status = browser.wait_exit(std::time::Duration::from_secs(120));
        assert!(
            status.is_some_and(|s| s.success()) && browser.output().iter().any(|l| l == "PASS"),
            "{} in the browser ({status:?}):\n{}",
            script.display(),
            browser.output().join("\n")
        );
    }

    /// Starts `iron up` on the launch list `list` (YAML text) with `extra` arguments.
    pub fn up(&self, list: &str, extra: &[&str]) -> Proc {
        self.up_from(None, list, extra)
    }

    /// [`Project::up`] with the project directory as the working directory of every node, so
    /// paths a mesh names relative to its project (`workspace/…`) are the project's.
    pub fn up_inside(&self, list: &str, extra: &[&str]) -> Proc {
        self.up_from(Some(self.dir.path()), list, extra)
    }

    fn up_from(&self, cwd: Option<&std::path::Path>, list: &str, extra: &[&str]) -> Proc {
        let list = self.write("list.yaml", list).display().to_string();
        let mut args = vec!["up", "--launch", list.as_str()];
        args.extend_from_slice(extra);
        Proc::spawn_in(cwd, "up", &bin("iron"), &args, &self.envs())
    }

    /// Starts `exe args…` (tagged `tag` in its output) with the project's environment.
    pub fn spawn(&self, tag: &str, exe: &str, args: &[&str]) -> Proc {
        Proc::spawn(tag, exe, args, &self.envs())
    }

    /// [`Project::spawn`] with the project directory as the working directory.
    pub fn spawn_inside(&self, tag: &str, exe: &str, args: &[&str]) -> Proc {
        Proc::spawn_in(Some(self.dir.path()), tag, exe, args, &self.envs())
    }

    /// Starts the node binary `exe` (whose node is `fqn`) with `args`, waits until it is up,
    /// and configures and activates it.
    pub fn start_active(&self, exe: &str, fqn: &str, args: &[&str]) -> Proc {
        let tag = fqn.rsplit('/').next().unwrap_or(fqn);
        let node = self.spawn(tag, exe, args);
        node.wait_for("managed node up", std::time::Duration::from_secs(60));
        for step in ["configure", "activate"] {
            self.iron_ok(&["lifecycle", "set", fqn, step]);
        }
        node
    }

    /// Compiles the shipped `aem/` into the state directory (the catalog the nodes read).
    pub fn build_shipped_catalog(&self) {
        super::build_catalog(self.dir.path());
    }

    /// Compiles the project's `aem/` into its state directory.
    pub fn build_catalog(&self) {
        super::build_catalog_from(&self.path("aem"), self.dir.path());
    }

    /// Runs `iron args…` against the project.
    pub fn iron(&self, args: &[&str]) -> Output {
        super::run_iron(args, self.envs())
    }

    /// Runs `iron args…`, failing the test unless it succeeds; returns its stdout.
    pub fn iron_ok(&self, args: &[&str]) -> String {
        super::run_iron_ok(args, self.envs())
    }

    /// Runs `iron args…` in the project directory, as a person working in it would.
    pub fn iron_inside(&self, args: &[&str]) -> Output {
        super::run_iron_in(Some(self.dir.path()), args, self.envs())
    }

    /// [`Project::iron_inside`], failing the test unless it succeeds; returns its stdout.
    pub fn iron_ok_inside(&self, args: &[&str]) -> String {
        super::run_iron_ok_in(Some(self.dir.path()), args, self.envs())
    }

    /// The project's event log: JetStream with [`Project::with_nats`], else the embedded one.
    pub async fn log(&self) -> AnyLog {
        match &self.nats {
            Some(server) => AnyLog::JetStream(Box::new(super::harness::connect(server).await)),
            None => AnyLog::open(&Config {
                state_dir: self.dir.path().to_path_buf(),
                ..Config::default()
            })
            .await
            .unwrap(),
        }
    }

    /// Every event of `kind` on the log so far.
    pub async fn events(&self, kind: &str) -> Vec<Envelope> {
        super::mem_events_of(&self.log().await, kind).await
    }

    /// Every event on the log so far.
    pub async fn all_events(&self) -> Vec<Envelope> {
        super::mem_events(&self.log().await).await
    }
}
