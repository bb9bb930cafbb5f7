//! Python flows (`aem/<mesh>/skills/<role>/flows/<flow>.py`): the runner starts the shipped
//! helper (`python/iron_flow.py`, embedded in the binary) as a child process per run and
//! answers its calls over line-delimited JSON on stdio. The journal, replay and fingerprints
//! stay here, so a Python flow gets exactly the Rust semantics. A child that raises, prints
//! something that is not the protocol, or exits mid-step parks the job; the runner goes on.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use super::ctx::{Callee, Ctx, Exit, StepError};

/// The helper module, shipped inside the binary.
const HELPER: &str = include_str!("../../python/iron_flow.py");

/// Where Python flows are and how to run them.
#[derive(Clone)]
pub struct PythonFlows {
    aem: PathBuf,
    python: PathBuf,
    helper: Arc<tempfile::TempDir>,
    /// Longest wait for one answer from the child (a step's own run included).
    pub timeout: Duration,
    /// Extra environment of every flow process.
    env: Vec<(String, String)>,
}

/// Why Python flows cannot be offered.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the Python flow helper to a temporary directory: {0}")]
pub struct PythonSetupError(#[from] std::io::Error);

impl PythonFlows {
    /// Flows under `aem`, run with the interpreter `python`.
    pub fn new(aem: &Path, python: &Path) -> Result<Self, PythonSetupError> {
        let dir = tempfile::Builder::new().prefix("iron-flow-").tempdir()?;
        std::fs::write(dir.path().join("iron_flow.py"), HELPER)?;
        Ok(Self {
            aem: aem.to_path_buf(),
            python: python.to_path_buf(),
            helper: Arc::new(dir),
            timeout: Duration::from_secs(600),
            env: Vec::new(),
        })
    }

    /// Gives every flow process the state directory as `IRON_STATE_DIR` (absolute), where the
    /// runtime's records a flow may observe live (e.g. the delivery outbox).
    pub fn with_state_dir(mut self, state_dir: &Path) -> Self {
        let dir = std::path::absolute(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
        self.env
            .push(("IRON_STATE_DIR".into(), dir.display().to_string()));
        self
    }

    /// The file of `<mesh>/<role>/<flow>`.
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        let mut parts = name.split('/');
        let (mesh, role, flow) = (parts.next()?, parts.next()?, parts.next()?);
        Some(
            self.aem
                .join(mesh)
                .join("skills")
                .join(role)
                .join("flows")
                .join(format!("{flow}.py")),
        )
    }

    /// True when the flow file exists.
    pub fn has(&self, name: &str) -> bool {
        self.path(name).is_some_and(|p| p.is_file())
    }

    /// Runs the flow in a child process against `ctx`.
    pub async fn run(
        &self,
        ctx: &mut Ctx,
        mesh: &str,
        role: &str,
        flow: &str,
        input: Value,
    ) -> Result<Value, Exit> {
        let name = format!("{mesh}/{role}/{flow}");
        let path = self.path(&name).ok_or_else(|| Exit::Parked {
            reason: format!("{name}: not a flow name"),
        })?;
        let mut child = Command::new(&self.python)
            .arg("-u")
            .arg(self.helper.path().join("iron_flow.py"))
            .arg(&path)
            .env("PYTHONPATH", self.helper.path())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Exit::Parked {
                reason: format!(
                    "{name}: cannot start {}: {e}; install Python 3 or set the runner's --python",
                    self.python.display()
                ),
            })?;
        let stderr = child.stderr.take().map(|s| {
            tokio::spawn(async move {
                let mut tail: Vec<String> = Vec::new();
                let mut lines = BufReader::new(s).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(target: "iron::jobs::python", "{line}");
                    tail.push(line);
                    if tail.len() > 20 {
                        tail.remove(0);
                    }
                }
                tail.join("\n")
            })
        });
        let io = Arc::new(Mutex::new(Pipe {
            stdin: child.stdin.take().expect("piped stdin"),
            stdout: BufReader::new(child.stdout.take().expect("piped stdout")).lines(),
            timeout: self.timeout,
        }));
        let result = converse(ctx, &io, input).await;
        let result = match result {
            Err(Exit::Parked { reason })
                if reason.contains("exited") || reason.contains("closed") =>
            {
                let _ = child.wait().await;
                let tail = match stderr {
                    Some(task) => task.await.unwrap_or_default(),
                    None => String::new(),
                };
                Err(Exit::Parked {
                    reason: format!("{name}: {reason}; stderr:\n{tail}"),
                })
            }
            other => other,
        };
        stop(&mut child, &io).await;
        result.map_err(|e| match e {
            Exit::Parked { reason } if !reason.starts_with(&name) => Exit::Parked {
                reason: format!("{name}: {reason}"),
            },
            other => other,
        })
    }
}

struct Pipe {
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    timeout: Duration,
}

fn broken(what: impl std::fmt::Display) -> Exit {
    Exit::Parked {
        reason: what.to_string(),
    }
}

impl Pipe {
    async fn send(&mut self, message: Value) -> Result<(), Exit> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| broken(format!("the flow process closed its input ({e})")))
    }

    async fn receive(&mut self) -> Result<Value, Exit> {
        let line = tokio::time::timeout(self.timeout, self.stdout.next_line())
            .await
            .map_err(|_| {
                broken(format!(
                    "the flow process said nothing for {:?}",
                    self.timeout
                ))
            })?
            .map_err(|e| broken(format!("reading the flow process: {e}")))?
            .ok_or_else(|| broken("the flow process exited mid-run (no answer on stdout)"))?;
        serde_json::from_str(&line).map_err(|e| {
            broken(format!(
                "the flow process wrote {line:?} on stdout, which is not the step protocol ({e}); flows must print to stderr"
            ))
        })
    }
}

/// Asks the child to run `call` and returns what it reported.
async fn call(io: &Arc<Mutex<Pipe>>, which: &str) -> Result<Value, StepError> {
    let said = |e: Exit| match e {
        Exit::Parked { reason } => StepError::new(reason),
        other => StepError::new(format!("{other:?}")),
    };
    let mut pipe = io.lock().await;
    pipe.send(json!({"call": which})).await.map_err(said)?;
    let reply = pipe.receive().await.map_err(said)?;
    match reply["op"].as_str() {
        Some("result") => Ok(reply["value"].clone()),
        Some("error") => Err(StepError::new(
            reply["error"].as_str().unwrap_or("the step raised"),
        )),
        _ => Err(StepError::new(format!(
            "expected a step result, got {reply}"
        ))),
    }
}

fn text(v: &Value, key: &str) -> Result<String, Exit> {
    v[key]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| broken(format!("message {v} lacks the text field {key:?}")))
}

async fn converse(ctx: &mut Ctx, io: &Arc<Mutex<Pipe>>, input: Value) -> Result<Value, Exit> {
    io.lock()
        .await
        .send(json!({"op": "start", "input": input}))
        .await?;
    loop {
        let message = io.lock().await.receive().await?;
        let args = message.get("args").cloned().unwrap_or(Value::Array(vec![]));
        let answer = match message["op"].as_str() {
            Some("step") => {
                let (name, function) = (text(&message, "name")?, text(&message, "fn")?);
                let legacy = message.get("legacy_fn").and_then(Value::as_str);
                let io = io.clone();
                ctx.step_as(
                    &name,
                    Callee {
                        id: &function,
                        legacy,
                    },
                    args,
                    |_| async move { call(&io, "run").await },
                )
                .await?
            }
            Some("effect") => {
                let (name, function) = (text(&message, "name")?, text(&message, "fn")?);
                let legacy = message.get("legacy_fn").and_then(Value::as_str);
                let (a, o) = (io.clone(), io.clone());
                ctx.effect_as(
                    &name,
                    Callee {
                        id: &function,
                        legacy,
                    },
                    args,
                    |_| async move { call(&a, "act").await },
                    move |_| {
                        let o = o.clone();
                        async move {
                            let seen = call(&o, "observe").await?;
                            Ok((!seen.is_null()).then_some(seen))
                        }
                    },
                )
                .await?
            }
            Some("effect_expert") => {
                let o = io.clone();
                ctx.effect_by_expert(
                    &text(&message, "name")?,
                    &text(&message, "domain")?,
                    &text(&message, "instruction")?,
                    move || {
                        let o = o.clone();
                        async move {
                            let seen = call(&o, "observe").await?;
                            Ok((!seen.is_null()).then_some(seen))
                        }
                    },
                )
                .await?
            }
            Some("sleep") => {
                let seconds = message["seconds"]
                    .as_f64()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| broken(format!("sleep needs seconds ≥ 0: {message}")))?;
                ctx.sleep(&text(&message, "name")?, Duration::from_secs_f64(seconds))
                    .await?;
                Value::Null
            }
            Some("wait_approval") => {
                let a = ctx
                    .wait_approval(&text(&message, "name")?, &text(&message, "prompt")?)
                    .await?;
                json!({"approved": a.approved, "note": a.note})
            }
            Some("wait_signal") => ctx.wait_signal(&text(&message, "name")?).await?,
            Some("ask_expert") => {
                ctx.ask_expert(
                    &text(&message, "name")?,
                    &text(&message, "domain")?,
                    &text(&message, "instruction")?,
                )
                .await?
            }
            Some("return") => return Ok(message["value"].clone()),
            Some("waiting") => {
                return Err(Exit::Waiting {
                    on: text(&message, "on")?,
                });
            }
            Some("parked") => {
                return Err(Exit::Parked {
                    reason: text(&message, "reason")?,
                });
            }
            Some("raised") => {
                return Err(broken(format!(
                    "the flow raised:\n{}",
                    message["error"].as_str().unwrap_or("?")
                )));
            }
            _ => {
                return Err(broken(format!(
                    "unexpected message from the flow: {message}"
                )));
            }
        };
        io.lock().await.send(json!({"value": answer})).await?;
    }
}

/// Ends the child: tells it to stop, then kills it if it lingers.
async fn stop(child: &mut Child, io: &Arc<Mutex<Pipe>>) {
    let _ = io.lock().await.send(json!({"stop": "run ended"})).await;
    if tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}
