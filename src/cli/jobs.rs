//! `iron jobs …`: start durable jobs and act on them (approve, signal, resume, cancel), list
//! them, and show a job's diary as a timeline. Each command writes to the durable plane of
//! config/iron.yaml (or IRON_DURABLE / IRON_NATS_URL); a running runner does the work.

use clap::Subcommand;
use serde_json::Value;

use super::CliError;
use super::operators::signed;
use crate::core::config::Config;
use crate::core::identity::{Authority, action};
use crate::jobs::{JobEvent, JobState, ops};
use crate::spine::durable::AnyLog;

/// Durable jobs: flows that survive restarts.
#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Start a job of the flow <mesh>/<role>/<flow> (a Rust flow in the runner, or
    /// aem/<mesh>/skills/<role>/flows/<flow>.py) and print its id. The mesh's runner
    /// (`jobs_runner --mesh <mesh>`) runs it.
    Start {
        /// The flow, e.g. newsroom/analyst/watch_feed.
        flow: String,
        /// The flow's input, as JSON.
        #[arg(long, default_value = "{}")]
        input: String,
        /// Where Python flows are (only used to record the flow file's hash).
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
    },
    /// Start a new job of a job's flow and input that reuses the original's recorded results
    /// before STEP (step results, effects done, experts' answers, timers) and runs live from
    /// STEP on, with the flow as it is now. A person's approvals are not carried over: the
    /// fork asks again. Prints the new job's id.
    Fork {
        /// The job to fork.
        job: String,
        /// The step to run again and everything after it (a name `iron jobs show` prints,
        /// e.g. cross_check#0).
        #[arg(long)]
        at: String,
        /// Where Python flows are (for the flow file's hash).
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
    },
    /// List jobs with their state (runnable, waiting, parked, cancelled, done).
    List {
        /// Only this mesh.
        #[arg(long, default_value = "*")]
        mesh: String,
    },
    /// Print a job's diary as a timeline: every step result, wait, answer and decision, in
    /// order, with who wrote it.
    Show {
        /// The job id (from `start` or `list`).
        job: String,
    },
    /// Answer a job's approval request. An answer given before the flow asks is kept and
    /// used when it does.
    Approve {
        /// The job id.
        job: String,
        /// The approval's name (as the flow calls `ctx.wait_approval(name, …)`).
        name: String,
        /// Answer no instead of yes.
        #[arg(long)]
        reject: bool,
        /// A note the flow receives with the answer.
        #[arg(long)]
        note: Option<String>,
        /// Who decides, signing with their key (default: IRON_OPERATOR, else the only key
        /// on this machine; see `iron operator add`).
        #[arg(long)]
        operator: Option<String>,
    },
    /// Send a named signal to a job (the flow receives it from `ctx.wait_signal(name)`; a
    /// signal sent early is kept).
    Signal {
        /// The job id.
        job: String,
        /// The signal's name.
        name: String,
        /// Its payload, as JSON.
        #[arg(long, default_value = "null")]
        payload: String,
    },
    /// Resume a parked job: the runner replays it from the top (after you fixed what the
    /// park reason says, e.g. restored an edited flow).
    Resume {
        /// The job id.
        job: String,
        /// Why, for the diary.
        #[arg(long)]
        note: Option<String>,
        /// Who decides, signing with their key (default: IRON_OPERATOR, else the only key
        /// on this machine; see `iron operator add`).
        #[arg(long)]
        operator: Option<String>,
    },
    /// Cancel a job: it never runs again.
    Cancel {
        /// The job id.
        job: String,
        /// Why, for the diary.
        #[arg(long)]
        reason: Option<String>,
        /// Who decides, signing with their key (default: IRON_OPERATOR, else the only key
        /// on this machine; see `iron operator add`).
        #[arg(long)]
        operator: Option<String>,
    },
}

fn json_arg(what: &str, text: &str) -> Result<Value, CliError> {
    serde_json::from_str(text).map_err(|e| CliError::Failed(format!("{what} is not JSON: {e}")))
}

/// Runs one `iron jobs` command.
pub async fn run(command: JobsCommand) -> Result<(), CliError> {
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    let people = Authority::new(&config.state_dir, &config.operators);
    match command {
        JobsCommand::Start { flow, input, aem } => {
            let input = json_arg("--input", &input)?;
            check_flow(&config, &flow)?;
            let hash = flow_hash(&aem, &flow);
            let (_, job) = ops::start(&log, &flow, input, hash).await?;
            println!("{job}");
        }
        JobsCommand::Fork { job, at, aem } => {
            let forked = ops::fork(&log, &job, &at, |flow| flow_hash(&aem, flow)).await?;
            eprintln!(
                "forked {job} at {at}: {} recorded result(s) reused; the mesh's runner runs the rest",
                forked.reused
            );
            println!("{}", forked.job);
        }
        JobsCommand::List { mesh } => {
            for s in ops::list(&log, &mesh).await? {
                let detail = match &s.state {
                    JobState::Waiting { on } => format!(" on {on}"),
                    JobState::Parked { reason } => {
                        format!(" ({})", reason.lines().next().unwrap_or(""))
                    }
                    _ => String::new(),
                };
                println!(
                    "{}  {}/{}  {}{}  [{} entries]",
                    s.job,
                    s.mesh,
                    s.flow,
                    s.state.word(),
                    detail,
                    s.entries
                );
            }
        }
        JobsCommand::Show { job } => {
            let (mesh, diary) = ops::find(&log, &job).await?;
            // The state the runner sees: a person's event it does not take is shown, marked.
            let registry = people.registry();
            let refusals: Vec<Option<String>> = diary
                .iter()
                .map(|s| crate::jobs::people::refusal(&job, &s.entry.event, &people, &registry))
                .collect();
            let taken: Vec<_> = diary
                .iter()
                .zip(&refusals)
                .filter(|(_, refused)| refused.is_none())
                .map(|(s, _)| s.clone())
                .collect();
            let state = crate::jobs::state_of(&taken);
            println!("job {job} in mesh {mesh}: {}", state.word());
            let t0 = diary.first().map(|s| s.entry.ts).unwrap_or(0);
            for (s, refused) in diary.iter().zip(&refusals) {
                let refused = refused
                    .as_ref()
                    .map(|why| format!("  NOT TAKEN: {why}"))
                    .unwrap_or_default();
                println!(
                    "{:>6}  +{:>8.3}s  {:<16}  {}  [{}]{refused}",
                    s.seq,
                    (s.entry.ts.saturating_sub(t0)) as f64 / 1000.0,
                    s.entry.event.kind(),
                    describe(&s.entry.event),
                    s.entry.by
                );
            }
        }
        JobsCommand::Approve {
            job,
            name,
            reject,
            note,
            operator,
        } => {
            let name = name.split('#').next().unwrap_or(&name).to_string();
            let decision = crate::core::identity::decision(!reject);
            let subject = format!("{job}/{name}");
            let statement = signed(operator, action::JOB_APPROVE, &subject, decision)?;
            ops::approve(&log, &job, &name, !reject, note, statement, &people).await?;
            println!("{job}: {} {name}", decision);
        }
        JobsCommand::Signal { job, name, payload } => {
            ops::signal(&log, &job, &name, json_arg("--payload", &payload)?).await?;
            println!("{job}: signal {name} sent");
        }
        JobsCommand::Resume {
            job,
            note,
            operator,
        } => {
            let statement = signed(operator, action::JOB_RESUME, &job, "resume")?;
            ops::resume(&log, &job, note, statement, &people).await?;
            println!("{job}: resumed");
        }
        JobsCommand::Cancel {
            job,
            reason,
            operator,
        } => {
            let statement = signed(operator, action::JOB_CANCEL, &job, "cancel")?;
            ops::cancel(&log, &job, reason, statement, &people).await?;
            println!("{job}: cancelled");
        }
    }
    Ok(())
}

/// Refuses a flow no runner would ever run: a mesh, role or flow file the state directory's
/// catalog does not have, or a parked mesh. Without a catalog (a bare state directory, Rust
/// flows only) there is nothing to check against, and the command says so.
fn check_flow(config: &Config, flow: &str) -> Result<(), CliError> {
    let catalog = match crate::aem::read_state_catalog(config) {
        Ok(c) => c,
        Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "no catalog in {}; not checking {flow}",
                config.state_dir.display()
            );
            return Ok(());
        }
        Err(e) => return Err(CliError::Failed(e.to_string())),
    };
    let refuse = |why: String| Err(CliError::Failed(format!("{flow}: {why}")));
    let mut parts = flow.split('/');
    let (Some(mesh), Some(role), Some(name), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return refuse("name the flow as <mesh>/<role>/<flow>".into());
    };
    let Some(m) = catalog.mesh(mesh) else {
        let known: Vec<&str> = catalog.meshes.keys().map(String::as_str).collect();
        return refuse(format!(
            "no mesh {mesh:?} in the catalog ({}), so no runner would ever run it",
            known.join(", ")
        ));
    };
    if m.status != crate::aem::MeshStatus::Active {
        return refuse(format!("mesh {mesh} is parked; its flows do not run"));
    }
    let Some(expert) = catalog.expert(&format!("{mesh}/{role}")) else {
        return refuse(format!("mesh {mesh} has no role {role:?}"));
    };
    let file = format!("flows/{name}.py");
    if !expert.flows.iter().any(|f| f.path == file) {
        let have: Vec<&str> = expert.flows.iter().map(|f| f.path.as_str()).collect();
        return refuse(format!(
            "{mesh}/{role} has no {file} (it has: {})",
            if have.is_empty() {
                "none".into()
            } else {
                have.join(", ")
            }
        ));
    }
    Ok(())
}

fn flow_hash(aem: &std::path::Path, flow: &str) -> Option<String> {
    use sha2::{Digest, Sha256};
    let mut parts = flow.split('/');
    let (mesh, role, name) = (parts.next()?, parts.next()?, parts.next()?);
    let path = aem
        .join(mesh)
        .join("skills")
        .join(role)
        .join("flows")
        .join(format!("{name}.py"));
    let bytes = std::fs::read(path).ok()?;
    Some(hex::encode(Sha256::digest(bytes)))
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 100 {
        format!("{}…", text.chars().take(100).collect::<String>())
    } else {
        text
    }
}

fn describe(event: &JobEvent) -> String {
    match event {
        JobEvent::JobStarted {
            role, flow, input, ..
        } => format!("{role}/{flow} input={}", short(input)),
        JobEvent::StepDone { step, result, .. } => format!("{step} -> {}", short(result)),
        JobEvent::EffectIntent { step, .. } => format!("{step}: about to act"),
        JobEvent::EffectConfirmed { step, observation } => {
            format!("{step}: observed {}", short(observation))
        }
        JobEvent::TimerSet { timer, due_ms } => format!("{timer} due at {due_ms} ms"),
        JobEvent::TimerDue { timer, tick } => format!("{timer} (tick {tick})"),
        JobEvent::ApprovalRequested { name, prompt } => format!("{name}: {prompt}"),
        JobEvent::ApprovalGiven {
            name,
            approved,
            note,
            ..
        } => format!(
            "{name}: {}{}",
            if *approved { "yes" } else { "no" },
            note.as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ),
        JobEvent::Signal { name, payload } => format!("{name} {}", short(payload)),
        JobEvent::ExpertRequested {
            request,
            domain,
            instruction,
            ..
        } => format!("{request}: asked {domain}: {instruction}"),
        JobEvent::Waiting { on } => format!("on {on}"),
        JobEvent::Parked { reason } => reason.clone(),
        JobEvent::Resumed { note, .. } | JobEvent::Cancelled { reason: note, .. } => {
            note.clone().unwrap_or_default()
        }
        JobEvent::Done { output } => short(output),
        JobEvent::Claimed { epoch } => format!("by the runner of lease epoch {epoch}"),
    }
}
