//! A project on disk driven through `iron up` and the CLI, the way a person runs Iron: a state
//! directory with an `iron.yaml` whose experts run on a scripted model, a router endpoint,
//! extra environment, and helpers to bring a launch list up and call `iron` against it.

use std::process::Output;

use iron::{
    core::{config::Config, envelope::Envelope},
    spine::durable::AnyLog,
};

use super::{Proc, bin, free_port};

/// A state directory and the environment every process of the test shares.
pub struct Project {
    pub dir: tempfile::TempDir,
    envs: Vec<(String, String)>,
}

impl Project {
    /// A project whose `fast`, `standard` and `strong` models all play `script` (a scripted
    /// backend's YAML).
    pub fn scripted(script: &str) -> Project {
        let p = Project::configured("");
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

    /// A state directory whose `iron.yaml` is `state_dir` followed by `extra`.
    fn configured(extra: &str) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("iron.yaml");
        std::fs::write(
            &config,
            format!("state_dir: {}\n{extra}", dir.path().display()),
        )
        .unwrap();
        Project {
            envs: vec![
                (
                    "IRON_ROUTER".into(),
                    format!("tcp/127.0.0.1:{}", free_port()),
                ),
                ("IRON_CONFIG".into(), config.display().to_string()),
            ],
            dir,
        }
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

    /// Every record of the delivery bridge's outbox, in order.
    pub fn outbox(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.path("outbox.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("an outbox line is JSON"))
            .collect()
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

    fn env_pairs(&self) -> Vec<(&str, &str)> {
        self.envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
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
        Proc::spawn_in(cwd, "up", &bin("iron"), &args, &self.env_pairs())
    }

    /// Runs `iron args…` against the project.
    pub fn iron(&self, args: &[&str]) -> Output {
        super::run_iron(args, self.env_pairs())
    }

    /// Runs `iron args…`, failing the test unless it succeeds; returns its stdout.
    pub fn iron_ok(&self, args: &[&str]) -> String {
        super::run_iron_ok(args, self.env_pairs())
    }

    /// The project's event log.
    pub async fn log(&self) -> AnyLog {
        AnyLog::open(&Config {
            state_dir: self.dir.path().to_path_buf(),
            ..Config::default()
        })
        .await
        .unwrap()
    }

    /// Every event of `kind` on the log so far.
    pub async fn events(&self, kind: &str) -> Vec<Envelope> {
        super::mem_events_of(&self.log().await, kind).await
    }
}
