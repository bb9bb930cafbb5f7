//! The `iron` command line, and the `main` of node processes. Everything here is thin: it
//! parses, connects, calls the library, and prints.

mod ask;
mod bench;
mod catalog;
mod commands;
mod connect;
mod desk;
mod eval;
mod hunks;
mod inbox;
mod jobs;
mod lifecycle;
mod logs;
mod memory;
mod models;
mod msp;
mod new;
pub mod node;
mod operator;
mod operators;
mod recall;
mod sandbox;
mod task;
mod tools;

use std::time::Duration;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::spine::control::{ControlError, ros_args::RosArgsError};

pub use commands::run;

/// Errors the command line reports.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Control(#[from] ControlError),
    #[error(transparent)]
    RosArgs(#[from] RosArgsError),
    #[error(transparent)]
    Launch(#[from] crate::launch::LaunchError),
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    Catalog(#[from] crate::aem::CatalogErrors),
    #[error(transparent)]
    Transfer(#[from] crate::aem::transfer::TransferError),
    #[error(transparent)]
    Config(#[from] crate::core::config::ConfigError),
    #[error(transparent)]
    Open(#[from] crate::spine::durable::OpenError),
    #[error(transparent)]
    Memory(#[from] crate::memory::cli::CliError),
    #[error(transparent)]
    Bench(#[from] crate::bench::BenchError),
    #[error(transparent)]
    Jobs(#[from] crate::jobs::JobError),
    #[error(transparent)]
    Identity(#[from] crate::core::identity::IdentityError),
    #[error(transparent)]
    ModelPull(#[from] crate::llm::local::PullError),
    #[error(transparent)]
    ModelLoad(#[from] crate::llm::local::LoadError),
    #[error(transparent)]
    Timeline(#[from] crate::view::timeline::TimelineError),
    #[error(transparent)]
    Scaffold(#[from] crate::aem::scaffold::ScaffoldError),
    #[error(transparent)]
    Replay(#[from] crate::cognition::replay::ReplayError),
    #[error(transparent)]
    Desk(#[from] crate::view::desk::DeskError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The command ran what it was asked to and that ended with this exit code (`iron
    /// sandbox run`): the process exits with it, having already said why.
    #[error("exit code {0}")]
    Exit(u8),
}

/// Any error as a command's failure, said as it is.
fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::Failed(e.to_string())
}

/// Iron: an operating layer for teams of AI agents declared as files.
///
/// Every Iron process is a ROS 2 lifecycle node on Zenoh (rmw_zenoh wire protocol). These
/// commands drive them without a ROS 2 installation; with one, `ros2 lifecycle`,
/// `ros2 action` and `ros2 launch iron bringup.launch.py` work against the same system.
#[derive(Debug, Parser)]
#[command(name = "iron", version, propagate_version = true)]
pub struct Cli {
    /// Zenoh endpoint of the Iron router.
    #[arg(long, global = true, env = "IRON_ROUTER", default_value = crate::spine::control::DEFAULT_ROUTER)]
    pub router: String,

    /// How long to wait for any answer from another process, in seconds.
    #[arg(long, global = true, default_value_t = 5.0)]
    pub timeout: f64,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout.max(0.001))
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the Zenoh router every Iron and ROS 2 node connects to (like rmw_zenohd).
    Router {
        /// Endpoint(s) to listen on.
        #[arg(long = "listen", default_value = crate::spine::control::DEFAULT_ROUTER)]
        listen: Vec<String>,
        /// Another router to link with (repeatable), e.g. one on another host: the nodes of
        /// both form one control plane. Retried until it answers.
        #[arg(long = "connect", value_name = "ENDPOINT")]
        connect: Vec<String>,
    },
    /// Wait until the router at --router accepts a session, then exit 0; fail (exit 1) after
    /// --timeout. The launch file runs it between starting the router and the first node.
    WaitRouter,
    /// Start everything in the launch list, configure and activate it, and supervise it.
    ///
    /// Ctrl-C deactivates and shuts down every node in reverse order.
    Up {
        /// The launch list (the same file bringup.launch.py reads).
        #[arg(long, default_value = "launch/bringup.yaml")]
        launch: std::path::PathBuf,
        /// The agent folders, compiled into the state directory's catalog before anything
        /// starts (skipped when the folder does not exist).
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
        /// Do not start a router (one is already running at --router).
        #[arg(long)]
        no_router: bool,
        /// Use NATS JetStream for the durable plane: a server URL, or `auto` to start a local
        /// nats-server with config/nats-server.conf. Without it, config/iron.yaml decides
        /// (embedded SQLite by default).
        #[arg(long)]
        nats: Option<String>,
    },
    /// Read the event log.
    #[command(subcommand)]
    Log(LogCommand),
    /// Full-text search over the projected memory (what the projector has written). Facts
    /// replaced by newer ones (or repeating older ones) are left out unless --history.
    Recall(RecallArgs),
    /// The background memory workers.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Compile or check the agent folders (aem/) into catalog.json and tool_manifest.json.
    #[command(subcommand)]
    Catalog(CatalogCommand),
    /// The newsroom's bulletins, with their claims and evidence, from the log; the ones held
    /// for an editor, released or dropped.
    #[command(subcommand)]
    Desk(desk::DeskCommand),
    /// Start a new mesh or expert: folders that compile at once, each field commented.
    #[command(subcommand)]
    New(NewCommand),
    /// MCP tool servers.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Inspect the nodes on the control plane.
    #[command(subcommand)]
    Node(NodeCommand),
    /// Drive managed (lifecycle) nodes, like `ros2 lifecycle`.
    #[command(subcommand)]
    Lifecycle(LifecycleCommand),
    /// Send work to an agent.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// Put a message on the inbox, as a channel would.
    #[command(subcommand)]
    Inbox(InboxCommand),
    /// Ask a question as the terminal user and print the reply.
    ///
    /// The question goes through the inbox like any channel's message; the engine routes it
    /// and an expert answers (with no model configured, from what it can see and remember,
    /// quoted). Exits 1 with the reason when the question is refused, not answered, or the
    /// reply does not come within --wait.
    Ask {
        /// The question (several words are joined with spaces).
        #[arg(required = true)]
        question: Vec<String>,
        /// Who is asking.
        #[arg(long, env = "USER", default_value = "terminal")]
        user: String,
        /// Continue this conversation (its name is printed on stderr by every ask); a new one
        /// by default.
        #[arg(long)]
        session: Option<String>,
        /// Seconds to wait for the reply.
        #[arg(long, default_value_t = 180.0)]
        wait: f64,
    },
    /// Durable jobs: start a flow, list jobs, show a job's diary, approve, signal, resume,
    /// cancel.
    ///
    /// A job runs a flow (`run(ctx, input)`) under the mesh's runner. Every step result, wait
    /// and decision goes to the job's diary on the JOBS stream; after any restart the flow is
    /// replayed from the top and only unfinished steps run. A job that waits (timer, approval,
    /// signal, expert) is only rows until what it waits for arrives; a parked job (a step
    /// failed, or the flow's code changed under it) waits for `resume` or `cancel`.
    #[command(subcommand)]
    Jobs(jobs::JobsCommand),
    /// Review what experts changed in their scratches: list, show, approve or reject each
    /// hunk, then apply a task's approved hunks to the real tree (and run the mesh's verify
    /// command confined on the result).
    ///
    /// An expert whose mesh declares `workspace:` works in a scratch copy of the target tree;
    /// when its task ends, what it changed is proposed on the log one hunk at a time. Nothing
    /// reaches the real tree until a person approves it here; a hunk that no longer applies
    /// is named and nothing is applied; changes to governance (`aem/`, `config/`, `.git`) can
    /// only be rejected.
    #[command(subcommand)]
    Hunks(hunks::HunksCommand),
    /// Print what a node printed (its stdout and stderr, shipped to the log plane by `iron
    /// up` and by the launch file), or every node's with no NODE.
    Logs {
        /// The node, e.g. /iron/engine.
        node: Option<String>,
        /// Only the last N lines (0: all that the stream keeps).
        #[arg(long, default_value_t = 200)]
        last: usize,
        /// Keep printing new lines (Ctrl-C stops).
        #[arg(long, short)]
        follow: bool,
    },
    /// Run COMMAND with its stdout and stderr going to this terminal unchanged and, line by
    /// line, to the log plane as NODE's output (how the launch file runs every node).
    Ship {
        /// The node name the output is shipped under, e.g. /iron/engine.
        #[arg(long)]
        node: String,
        /// After the command exits, how long to keep trying to ship what is queued.
        #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = crate::cli::node::positive_seconds)]
        flush_secs: Duration,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Perception (MSP) sources: the feeds source program, and reading a running source.
    #[command(subcommand)]
    Msp(msp::MspCommand),
    /// Measure; prints lines `bench <name> <value> <unit>`.
    Bench(BenchArgs),
    /// Accuracy of judgment on labelled sets (see `iron eval newsroom --help`).
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Local models (the sentence embedder): fetch their weights once, checked against
    /// pinned digests, and see what is there (see `iron models pull --help`).
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Confined execution: run a command exactly as an expert of a mesh would run it, to see
    /// what it can reach (see `iron sandbox run --help`).
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
    /// Operators: the people whose signed actions (hunk decisions, answers, corrections, job
    /// decisions) the system takes. Each has a private key on their machine and a public key
    /// registered with the deployment (see `iron operator add --help`).
    #[command(subcommand)]
    Operator(operators::OperatorCommand),
}

/// What `iron recall` looks for, and where.
#[derive(Debug, clap::Args)]
pub struct RecallArgs {
    /// Words to look for (with --as: any of them, as an expert's wake does).
    pub query: String,
    /// Namespace prefix to search in, e.g. facts/newsroom.
    #[arg(long, conflicts_with = "as_expert")]
    pub scope: Option<String>,
    /// Also superseded facts, and the fact_superseded events that say by what and why.
    #[arg(long, conflicts_with = "as_expert")]
    pub history: bool,
    /// Hybrid recall: events holding any of the words, fused with the facts whose vectors
    /// (the semantic index: the local model, or the offline embedding) are nearest to the query.
    #[arg(long, conflicts_with = "as_expert")]
    pub semantic: bool,
    /// The query is a name (an organisation, place, person): the current facts that name
    /// it — as their source, their subject or in passing — and the names that come up with
    /// it (the knowledge graph worker's tables).
    #[arg(long, conflicts_with_all = ["as_expert", "semantic", "history"])]
    pub graph: bool,
    /// Search the passages of saved documents (`iron memory save`): each with its
    /// document, page and position.
    #[arg(long, conflicts_with_all = ["as_expert", "semantic", "history", "graph"])]
    pub documents: bool,
    /// Print exactly the memory block the expert <mesh>/<role> would be given for this
    /// instruction at wake (its declared mounts and scope, from the built catalog).
    #[arg(long = "as", value_name = "MESH/ROLE")]
    pub as_expert: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Where the projector and each worker are in the MEM stream: sequence handled, lag
    /// behind the log, events written, errors.
    Status,
    /// Save a file or a web page to memory: its bytes go to the object store and
    /// `document_saved` to the log; the documents worker indexes its text (plain, Markdown,
    /// HTML, PDF) by passage, and `iron recall --documents` finds them.
    Save {
        /// A file's path, or an http(s) URL.
        source: String,
        /// The namespace it is saved to, under facts/ (facts/newsroom reaches every newsroom
        /// role whose scope is mesh).
        #[arg(long)]
        scope: String,
        /// A title (default: the path or URL).
        #[arg(long, default_value = "")]
        title: String,
        /// Its kind when neither its content nor its name says: text, html or pdf.
        #[arg(long = "type", value_name = "KIND")]
        kind: Option<String>,
        /// Who saves it (the event's actor is `operator/<user>`).
        #[arg(long, env = "USER", default_value = "terminal")]
        user: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Print events as they are written to the MEM stream (Ctrl-C stops).
    Tail {
        /// Start from the first event instead of from now.
        #[arg(long)]
        from_start: bool,
        /// Stop after this many events.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Print the ordered history of one namespace prefix from the projection.
    Replay {
        /// Namespace prefix, e.g. facts/newsroom/analyst.
        prefix: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Turn a pasted `mcpServers` (Claude Desktop, Cursor, Claude Code) or VS Code `servers`
    /// JSON file into the `servers:` block of an AEM.md. Secrets stay `${VAR}` references.
    Import {
        /// The JSON file.
        file: std::path::PathBuf,
        /// Start each server once to list its tools into the block.
        #[arg(long)]
        discover: bool,
    },
    /// Install the packages of the tool servers that run confined.
    ///
    /// Installs the pinned package (`npx -y pkg@x.y.z`, `uvx pkg@x.y.z`) of every local server
    /// of a mesh that declares `workspace:`. Those servers run confined in the expert's
    /// scratch, with no network and no home directory, so they cannot fetch their package when
    /// they start: they run it from here, read-only. Run once (it needs npm, or python3 with
    /// venv, and the registries); packages already installed are kept.
    Install {
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
        /// The package store [default: $IRON_TOOLS_DIR, else $XDG_CACHE_HOME/iron/tools, else
        /// ~/.cache/iron/tools]; experts find it the same way.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum NewCommand {
    /// A new mesh: aem/NAME/AEM.md and its first expert, NAME/assistant (SKILL.md,
    /// capabilities.md, a sample flow and its test). It compiles as written, and answers
    /// `iron task send --domain NAME/assistant` on the offline backend.
    Mesh {
        /// The mesh's name (lower case: a letter, then letters, digits, `_` or `-`).
        name: String,
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
    },
    /// A new expert in an existing mesh: aem/MESH/skills/ROLE/ with SKILL.md, capabilities.md,
    /// a sample flow (flows/answer.py) and its test (tests/test_answer.py).
    Expert {
        /// `<mesh>/<role>`.
        expert: String,
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Validate every mesh and write catalog.json and tool_manifest.json. Every error is
    /// reported (file:line: field: what is wrong (what would be valid)) before it exits 1.
    Build {
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
        /// Where the compiled files go.
        #[arg(long, default_value = ".iron")]
        out: std::path::PathBuf,
        /// Start each declared local MCP server once and record its tools (schemas and
        /// annotations) in tool_manifest.json; without it, recorded probes are reused and
        /// stale ones are listed.
        #[arg(long)]
        probe: bool,
    },
    /// Validate only; writes nothing.
    Check {
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
    },
    /// Write an expert's portable folder (SKILL.md and the flows/ and tests/ files the
    /// catalog records) to `--out <dir>/<folder>`, for another deployment to import. Its
    /// capabilities.md (this deployment's grants) and everything it learned (memory lives in
    /// the state directory) stay here. The tree must compile.
    Export {
        /// The expert, `<mesh>/<role>`.
        expert: String,
        /// Where the folder goes (created if missing; an existing folder is never overwritten).
        #[arg(long)]
        out: std::path::PathBuf,
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
    },
    /// Copy an exported skill folder into `aem/<mesh>/skills/` and check that the tree
    /// compiles with it (otherwise nothing is kept). A folder holding anything but SKILL.md,
    /// flows/ and tests/ (a capabilities.md, data, links, hidden files) is refused. The
    /// imported expert gets the mesh defaults; write its capabilities.md to grant more.
    Import {
        /// The exported skill folder.
        folder: std::path::PathBuf,
        /// The mesh it joins (an existing `aem/<mesh>/` folder).
        #[arg(long)]
        mesh: String,
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// List every node on the control plane (ours and any ROS 2 node).
    List,
}

#[derive(Debug, Subcommand)]
pub enum LifecycleCommand {
    /// List managed nodes and their states. The listing is checked against the nodes that
    /// should be there (those of `--launch`, else those of the `iron up` running on this
    /// router); one missing or silent makes it partial: it is marked and the command fails.
    List {
        /// A launch list whose nodes must all be listed (default: the running `iron up`'s).
        #[arg(long)]
        launch: Option<std::path::PathBuf>,
    },
    /// Print a managed node's state.
    Get {
        /// Fully qualified node name, e.g. /iron/demo.
        node: String,
    },
    /// Request a transition: configure, activate, deactivate, cleanup or shutdown.
    Set {
        /// Fully qualified node name, e.g. /iron/demo.
        node: String,
        /// The transition's label.
        transition: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum InboxCommand {
    /// Publish one InboxMessage on /iron/raw_inbox.
    Send {
        /// Channel name, e.g. terminal.
        #[arg(long, default_value = "terminal")]
        source: String,
        /// Sender id within the channel.
        #[arg(long)]
        user: String,
        /// Where a reply goes ("" for the channel default).
        #[arg(long, default_value = "")]
        destination: String,
        /// The message; `-` reads it from stdin.
        text: String,
    },
    /// Send a session's next messages straight to one expert, without routing, until it is
    /// unstuck (as the engine does mid-conversation). Refused for an expert the built catalog
    /// does not have or whose mesh is parked; if the engine refuses it later (the catalog
    /// changed), the inbox unsticks the session and routes its message instead.
    Stick {
        /// The session id (a `chat_turn` event's `session_id`, e.g. from `iron log`).
        #[arg(long)]
        session: String,
        /// The expert, `<mesh>/<role>`.
        expert: String,
    },
    /// Let a stuck session's messages be routed again.
    Unstick {
        /// The session id.
        #[arg(long)]
        session: String,
    },
}

/// `iron bench [--smoke] <bench>`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Small counts (seconds each, the figures meaningless): shows that the bench runs end to
    /// end, as the test suite does. A count given explicitly still applies.
    #[arg(long, global = true)]
    pub smoke: bool,
    #[command(subcommand)]
    pub bench: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// AolTask round trip for an empty goal against a raw Zenoh query round trip between the
    /// same two processes (p50, p99, ratio). Starts its own router and demo node.
    Control {
        /// Round trips per measurement [default: 2000; 20 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        iterations: Option<usize>,
    },
    /// The log: raw async-nats publish-with-ack against emit() on JetStream, the embedded
    /// backend against raw SQLite inserts (one writer and eight), and the projector against
    /// raw batched inserts of the same rows, with its lag behind a burst.
    Log {
        /// Events per series [default: 5000; 50 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        events: Option<usize>,
        /// Events in the burst the projector's lag is measured after [default: 10000; 100
        /// with --smoke].
        #[arg(long, value_parser = at_least(1))]
        burst: Option<usize>,
        /// A running NATS server; by default a local one is started on free ports.
        #[arg(long)]
        nats: Option<String>,
    },
    /// What a managed tool call costs (the manager, both gates and its two durable events)
    /// against a direct MCP call to the same server (an echo tool served by `iron` itself),
    /// with the events in memory, on the embedded log and on JetStream.
    Tools {
        /// Calls per side [default: 500; 5 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        calls: Option<usize>,
        /// A running NATS server; by default a local one is started on free ports.
        #[arg(long)]
        nats: Option<String>,
    },
    /// Inbox ingestion with zero model calls (messages/s, p50, p99 from publish to durably
    /// queued), expert cold start (spawn → active → goal accepted) against a bare lifecycle
    /// node's, and the resident memory of an idle expert. Starts its own router and nodes.
    Cognition {
        /// Messages published to the inbox in each of the burst and the rate series
        /// [default: 50000; 50 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        messages: Option<usize>,
        /// Messages per second offered in the rate series (the inbox goal's rate, issue 33).
        #[arg(long, default_value_t = 50_000.0, value_parser = positive_rate)]
        rate: f64,
        /// Cold starts of each kind [default: 30; 1 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        starts: Option<usize>,
    },
    /// The workspace: making and removing a scratch of a repository of `--files` files (a git
    /// worktree and a plain copy), and a confined `true` under bubblewrap against a plain
    /// spawn of `true`, interleaved (p50, p99, ratio). Needs bubblewrap.
    Workspace {
        /// Files in the generated repository [default: 10000; 50 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        files: Option<usize>,
        /// Scratches made and removed per provider [default: 10; 2 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        scratches: Option<usize>,
        /// Runs of `true`, confined and plain each [default: 200; 10 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        runs: Option<usize>,
    },
    /// Memory at scale: full-text recall over a generated projection (build time, size, p50
    /// and p99), then each background worker's events/s against the projector's on one
    /// backlog of a scratch embedded log, and each one's lag after a burst.
    Memory {
        /// Events in the recall corpus [default: 1000000; 1000 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        corpus: Option<usize>,
        /// Events per burst on the log [default: 10000; 100 with --smoke].
        #[arg(long, value_parser = at_least(2))]
        burst: Option<usize>,
        /// Recall queries timed per kind [default: 500; 10 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        queries: Option<usize>,
        /// Keep the scratch databases here instead of a temporary directory.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// With --dir: keep the corpus's databases already there when they hold --corpus
        /// events, to time (or profile) recall again without rebuilding them.
        #[arg(long, requires = "dir")]
        reuse: bool,
        /// Only recall over the corpus, not the workers on the log.
        #[arg(long)]
        recall_only: bool,
    },
    /// Offline routing accuracy on a labelled set of instructions (`{"cases": [{"instruction",
    /// "expert"}]}`) against the catalog compiled from --aem; prints each miss. (It has no
    /// counts: --smoke runs it whole.)
    Routing {
        /// The labelled set.
        #[arg(long, default_value = "tests/fixtures/routing/labelled.json")]
        set: std::path::PathBuf,
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
    },
    /// The newsroom end to end, offline, on generated feeds: items/s from the sources' first
    /// refresh to the published bulletin, the judgment's time per item (with the local model
    /// when it is present, embedding timed apart), the CPU per item and peak memory of `iron
    /// up`'s processes, the log's share of the time, and the time from one new item to its
    /// bulletin (p50). Stops at once if the newsroom's job parks, with why. Runs the shipped
    /// launch list with its own router and state; run it from the repository root.
    Newsroom {
        /// Feeds to generate, half official, half outlets of shared owners [default: 20; 2
        /// with --smoke].
        #[arg(long)]
        feeds: Option<usize>,
        /// Items across them [default: 1000; 10 with --smoke].
        #[arg(long)]
        items: Option<usize>,
        /// New items (at most 10) added one at a time afterwards, each timed to its bulletin
        /// [default: 5; 1 with --smoke].
        #[arg(long)]
        new: Option<usize>,
    },
    /// Durable jobs: a journaled no-op step (p50/p99) against one raw JetStream publish-ack,
    /// the extra cost of a Python-flow step, and the time to resume a job with a 10,000-step
    /// journal.
    Jobs {
        /// Steps per latency series [default: 2000; 20 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        steps: Option<usize>,
        /// Steps in the journal of the resumed job [default: 10000; 20 with --smoke].
        #[arg(long)]
        resume_steps: Option<usize>,
        /// Python interpreter for the Python-flow series.
        #[arg(long, default_value = "python3")]
        python: std::path::PathBuf,
        /// A running NATS server; by default a local one is started on free ports.
        #[arg(long)]
        nats: Option<String>,
    },
    /// The view layer: events/s the console's live stream serves to one and to `--clients`
    /// clients at once, and the p50 of a task (engine and a new expert process) with tracing
    /// exported over OTLP against without (ratio). Starts its own router and nodes.
    Console {
        /// Events in the streamed log [default: 20000; 200 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        events: Option<usize>,
        /// Clients streaming at once in the second series [default: 20; 2 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        clients: Option<usize>,
        /// Tasks timed, half traced [default: 40; 2 with --smoke].
        #[arg(long, value_parser = at_least(2))]
        tasks: Option<usize>,
    },
    /// The local sentence embedder (all-MiniLM-L6-v2 on the CPU): its load time (files read,
    /// digests checked, model built), sentences/s at batch 32, and the process's resident
    /// memory once loaded (and its anonymous part: the weights copied into the model). Fails
    /// when the model is not pulled (`iron models pull`).
    Embed {
        /// Sentences embedded, in batches of 32 [default: 1024; 64 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        sentences: Option<usize>,
        /// The models directory [default: as `iron models pull` finds it].
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
    /// Build time of a generated mesh of 1,000 experts.
    Catalog {
        /// Experts in the generated mesh [default: 1000; 10 with --smoke].
        #[arg(long, value_parser = at_least(1))]
        experts: Option<usize>,
    },
    /// The MCP server `iron bench tools` measures against, on stdin and stdout: one tool,
    /// `echo`, that returns its `text`.
    #[command(hide = true)]
    EchoServer,
}

/// Like [`init_tracing`] for the `iron` command itself: a command that answers and exits
/// leaves out the NATS client's notes on its own connection ("connected successfully"), which
/// a service (`iron up`, `iron router`, `iron ship`) keeps in its log.
pub fn init_command_tracing(cli: &Cli) {
    let serves = matches!(
        cli.command,
        Command::Up { .. } | Command::Router { .. } | Command::Ship { .. }
    );
    init_tracing_with(None, if serves { "" } else { ",async_nats=warn" });
}

/// Logs to stderr; `RUST_LOG` or `--log-level` choose the level (info by default). The
/// chatter of Zenoh and hiroz is left out.
pub fn init_tracing(level: Option<&str>) {
    init_tracing_with(level, "");
}

fn init_tracing_with(level: Option<&str>, extra: &str) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    // Zenoh and hiroz narrate normal events (a query's late final, scouting) as warnings.
    // Zenoh's routing tables (`hat`) report the undeclaration of a subscriber, queryable or
    // token they never saw declared ("Unknown subscriber id=1": a node killed while this
    // session was joining), and its admin space a link event it could not publish because the
    // session had just closed; both as errors nobody can act on, so both are off.
    const QUIET: &str = "zenoh=error,zenoh_transport=error,hiroz=error,\
        zenoh::net::routing::hat=off,zenoh::api::admin=off";
    let filter = match level {
        Some(l) => EnvFilter::new(format!("{l},{QUIET}{extra}")),
        None => EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(format!("info,{QUIET}{extra}"))),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

/// Cancels `token` on SIGINT or SIGTERM.
pub fn stop_on_signals(token: CancellationToken) {
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("cannot watch SIGTERM: {e}");
                    let _ = tokio::signal::ctrl_c().await;
                    token.cancel();
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        token.cancel();
    });
}

/// The configuration as the nodes of a running `iron up` on its state directory see it: the
/// durable plane that `iron up` gave them (`--nats`) applies, except for a variable this
/// process's own environment sets. Every command that opens the log loads it this way, so it
/// reads what the nodes write.
fn load_config() -> Result<crate::core::config::Config, crate::core::config::ConfigError> {
    let mut config = crate::core::config::Config::load()?;
    if let Some(running) = crate::launch::Running::alive(&config.state_dir) {
        config.apply_env(|k| {
            let recorded = running.plane_env.iter().find(|(n, _)| n == k);
            recorded
                .filter(|_| std::env::var_os(k).is_none())
                .map(|(_, v)| v.clone())
        })?;
    }
    Ok(config)
}

/// A count of at least `min` (a benchmark series of none has no figures to print).
fn at_least(min: usize) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |text| {
        text.parse::<usize>()
            .ok()
            .filter(|n| *n >= min)
            .ok_or_else(|| format!("{text:?} is not a count of at least {min}"))
    }
}

/// A rate in messages per second: a finite number above 0.
fn positive_rate(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("{text:?} is not a rate above 0 (messages per second)"))
}
