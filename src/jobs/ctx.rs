//! The context a flow runs with. Replay happens here: every call gets a key (its name and how
//! many times the name was used before in this run); a key with a journaled result returns it
//! without running anything, the first key without one runs and is journaled.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use crate::core::durable::DurableError;
use crate::core::envelope::now_ms;
use crate::core::ids::EventId;
use crate::spine::durable::AnyLog;

use super::JobError;
use super::event::{JobEvent, Stored, event_id, fingerprint, step_key};
use super::journal::{Appended, DiaryWriter};

/// How a flow stops without returning.
#[derive(Debug)]
pub enum Exit {
    /// Waiting for a timer, an approval or a signal; the job is only rows now.
    Waiting {
        /// `timer:<key>`, `approval:<key>` or `signal:<key>`.
        on: String,
    },
    /// Needs a person: resume (after fixing the cause) or cancel.
    Parked {
        /// What is wrong and what to do.
        reason: String,
    },
    /// Someone cancelled the job while it ran.
    Cancelled,
    /// The runner cannot go on (lease lost, log unavailable): stop, touch nothing.
    Fatal(JobError),
}

impl From<JobError> for Exit {
    fn from(e: JobError) -> Self {
        Exit::Fatal(e)
    }
}

/// A step's own failure. The job parks with it; `resume` runs the step again.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct StepError(pub String);

impl StepError {
    /// A step error from anything printable.
    pub fn new(message: impl std::fmt::Display) -> Self {
        Self(message.to_string())
    }
}

fn effect_failed(key: &str, what: &str, e: StepError) -> Exit {
    Exit::Parked {
        reason: format!("effect {key}: {what} failed: {e}"),
    }
}

/// A person's answer to [`Ctx::wait_approval`].
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// Yes or no.
    pub approved: bool,
    /// What they said.
    pub note: Option<String>,
}

/// What replay knows, folded from the diary.
#[derive(Default)]
struct Known {
    steps: HashMap<String, (Option<String>, Value)>,
    intents: HashMap<String, Option<String>>,
    confirmed: HashMap<String, Value>,
    timers_set: HashSet<String>,
    timers_due: HashSet<String>,
    approvals: HashMap<String, Vec<Approval>>,
    signals: HashMap<String, Vec<Value>>,
    cancelled: bool,
}

impl Known {
    fn absorb(&mut self, event: &JobEvent) {
        match event {
            JobEvent::StepDone {
                step,
                fingerprint,
                result,
            } => {
                self.steps
                    .insert(step.clone(), (fingerprint.clone(), result.clone()));
            }
            JobEvent::EffectIntent { step, fingerprint } => {
                self.intents.insert(step.clone(), fingerprint.clone());
            }
            JobEvent::EffectConfirmed { step, observation } => {
                self.confirmed.insert(step.clone(), observation.clone());
            }
            JobEvent::TimerSet { timer, .. } => {
                self.timers_set.insert(timer.clone());
            }
            JobEvent::TimerDue { timer, .. } => {
                self.timers_due.insert(timer.clone());
            }
            JobEvent::ApprovalGiven {
                name,
                approved,
                note,
                ..
            } => self
                .approvals
                .entry(name.clone())
                .or_default()
                .push(Approval {
                    approved: *approved,
                    note: note.clone(),
                }),
            JobEvent::Signal { name, payload } => self
                .signals
                .entry(name.clone())
                .or_default()
                .push(payload.clone()),
            JobEvent::Cancelled { .. } => self.cancelled = true,
            _ => {}
        }
    }
}

/// The callee id of a Rust step that gives none (see [`Ctx::step`]).
pub const RUST_STEP: &str = "rust";

/// What a step calls, for its fingerprint: a stable id, and optionally the id a journal
/// written by an older Iron may hold for the same call (accepted when it matches, never
/// written again), so an upgrade does not park the jobs in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Callee<'a> {
    /// The stable id.
    pub id: &'a str,
    /// The id an older journal used.
    pub legacy: Option<&'a str>,
}

impl<'a> From<&'a str> for Callee<'a> {
    fn from(id: &'a str) -> Self {
        Callee { id, legacy: None }
    }
}

impl Callee<'_> {
    /// Whether a recorded fingerprint is this call's.
    fn matches(&self, recorded: &str, name: &str, args: &Value) -> bool {
        recorded == fingerprint(name, self.id, args)
            || self
                .legacy
                .is_some_and(|legacy| recorded == fingerprint(name, legacy, args))
    }
}

/// The flow's handle on its job.
pub struct Ctx {
    job: String,
    writer: DiaryWriter<AnyLog>,
    known: Known,
    used: HashMap<String, u32>,
    steps_run: u64,
}

impl Ctx {
    /// A context replaying `diary` and writing through `writer`.
    pub fn new(job: &str, diary: &[Stored], writer: DiaryWriter<AnyLog>) -> Self {
        let mut known = Known::default();
        for stored in diary {
            known.absorb(&stored.entry.event);
        }
        Self {
            job: job.to_string(),
            writer,
            known,
            used: HashMap::new(),
            steps_run: 0,
        }
    }

    /// The job id.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The durable plane the job's diary is on, for a flow's own steps to read and write
    /// other streams (a review flow reads the review events on MEM).
    pub fn log(&self) -> &AnyLog {
        self.writer.log()
    }

    /// Steps (and effects) this run executed rather than replayed.
    pub fn steps_run(&self) -> u64 {
        self.steps_run
    }

    fn next(&mut self, space: &str, name: &str) -> (String, u32) {
        let n = self.used.entry(format!("{space}:{name}")).or_insert(0);
        let occurrence = *n;
        *n += 1;
        (step_key(name, occurrence), occurrence)
    }

    /// Writes one event; others' writes seen on the way are folded in. An event the log
    /// cannot hold parks the job: writing it again would fail the same way, forever.
    pub(crate) async fn record(&mut self, id: EventId, event: JobEvent) -> Result<(), Exit> {
        let Appended { foreign } = match self.writer.append(id, event.clone()).await {
            Err(JobError::Log(e @ DurableError::TooLarge { .. })) => {
                return Err(Exit::Parked {
                    reason: format!(
                        "the job's {} could not be written: {e}. One run of this flow carries \
                         more than the log holds (send it less per run); then resume, or cancel",
                        event.kind()
                    ),
                });
            }
            appended => appended?,
        };
        for stored in &foreign {
            self.known.absorb(&stored.entry.event);
        }
        self.known.absorb(&event);
        if self.known.cancelled {
            return Err(Exit::Cancelled);
        }
        Ok(())
    }

    /// True when an entry with this id is in the diary.
    pub(crate) fn has(&self, id: &EventId) -> bool {
        self.writer.has(id)
    }

    fn mismatch(key: &str, recorded: &str, now: &str) -> Exit {
        Exit::Parked {
            reason: format!(
                "step {key}: the call differs from the journaled one (fingerprint {recorded} in the journal, {now} now: name, function or arguments changed); restore the flow's code and resume, or cancel"
            ),
        }
    }

    /// Runs `f(args)` once for this job and journals its result; on replay returns the
    /// journaled result. The fingerprint covers `name` and `args`: a Rust function has no
    /// identity that survives a compiler upgrade, so when a step's body changes what it
    /// means, give it a new id with [`Ctx::step_as`] (`"fetch@2"`) and a replay parks.
    pub async fn step<F, Fut>(&mut self, name: &str, f: F, args: Value) -> Result<Value, Exit>
    where
        F: FnOnce(Value) -> Fut,
        Fut: Future<Output = Result<Value, StepError>>,
    {
        let callee = Callee {
            id: RUST_STEP,
            legacy: Some(std::any::type_name::<F>()),
        };
        self.step_as(name, callee, args, f).await
    }

    /// [`Ctx::step`] with the callee's identity given: an explicit id (a Rust step's
    /// version), or what a flow in another language says it calls.
    pub async fn step_as<'c, F, Fut>(
        &mut self,
        name: &str,
        callee: impl Into<Callee<'c>>,
        args: Value,
        f: F,
    ) -> Result<Value, Exit>
    where
        F: FnOnce(Value) -> Fut,
        Fut: Future<Output = Result<Value, StepError>>,
    {
        let callee = callee.into();
        let (key, _) = self.next("step", name);
        let fp = fingerprint(name, callee.id, &args);
        if let Some((recorded, result)) = self.known.steps.get(&key) {
            if let Some(recorded) = recorded
                && !callee.matches(recorded, name, &args)
            {
                return Err(Self::mismatch(&key, recorded, &fp));
            }
            return Ok(result.clone());
        }
        self.writer.ensure_live()?;
        self.steps_run += 1;
        let result = f(args).await.map_err(|e| Exit::Parked {
            reason: format!("step {key} failed: {e}"),
        })?;
        let id = event_id(&self.job, &[&key, "step_done"]);
        self.record(
            id,
            JobEvent::StepDone {
                step: key,
                fingerprint: Some(fp),
                result: result.clone(),
            },
        )
        .await?;
        Ok(result)
    }

    /// An irreversible action behind a confirmation gate: journals `effect_intent`, acts,
    /// then journals `effect_confirmed` only when a fresh `observe` shows the change
    /// (`Some(observation)`). On replay after a crash between the two, it observes first and
    /// acts again only if the change is not there. Returns the observation.
    pub async fn effect<A, AF, O, OF>(
        &mut self,
        name: &str,
        args: Value,
        act: A,
        observe: O,
    ) -> Result<Value, Exit>
    where
        A: FnOnce(Value) -> AF,
        AF: Future<Output = Result<Value, StepError>>,
        O: FnMut(Value) -> OF,
        OF: Future<Output = Result<Option<Value>, StepError>>,
    {
        let callee = Callee {
            id: RUST_STEP,
            legacy: Some(std::any::type_name::<A>()),
        };
        self.effect_as(name, callee, args, act, observe).await
    }

    /// [`Ctx::effect`] with the callee's identity given (see [`Ctx::step_as`]).
    pub async fn effect_as<'c, A, AF, O, OF>(
        &mut self,
        name: &str,
        callee: impl Into<Callee<'c>>,
        args: Value,
        act: A,
        mut observe: O,
    ) -> Result<Value, Exit>
    where
        A: FnOnce(Value) -> AF,
        AF: Future<Output = Result<Value, StepError>>,
        O: FnMut(Value) -> OF,
        OF: Future<Output = Result<Option<Value>, StepError>>,
    {
        let callee = callee.into();
        let (key, _) = self.next("step", name);
        let mut look = || observe(args.clone());
        if let Some(observation) = self
            .effect_start(&key, name, callee, &args, &mut look)
            .await?
        {
            return Ok(observation);
        }
        self.writer.ensure_live()?;
        self.steps_run += 1;
        act(args.clone())
            .await
            .map_err(|e| effect_failed(&key, "act", e))?;
        self.effect_finish(&key, "acted", &mut look).await
    }

    /// An irreversible action an expert performs (a publisher sending a bulletin), behind the
    /// same confirmation gate as [`Ctx::effect`]: `effect_intent` is journaled, the gateway
    /// asks `domain` to do `instruction` (once; the job waits for the answer), and
    /// `effect_confirmed` is journaled only when a fresh `observe` shows the change. After a
    /// crash anywhere in between it observes first, so a change that happened is confirmed
    /// and never asked for again. An expert that answers without success parks the job.
    pub async fn effect_by_expert<O, OF>(
        &mut self,
        name: &str,
        domain: &str,
        instruction: &str,
        mut observe: O,
    ) -> Result<Value, Exit>
    where
        O: FnMut() -> OF,
        OF: Future<Output = Result<Option<Value>, StepError>>,
    {
        let (key, _) = self.next("step", name);
        let callee = format!("expert:{domain}");
        let instruction_value = Value::String(instruction.into());
        if let Some(observation) = self
            .effect_start(
                &key,
                name,
                callee.as_str().into(),
                &instruction_value,
                &mut observe,
            )
            .await?
        {
            return Ok(observation);
        }
        let signal = format!("effect:{key}");
        let Some(answer) = self.known.signals.get(&signal).and_then(|s| s.first()) else {
            let id = event_id(&self.job, &[&key, "effect_requested"]);
            if !self.has(&id) {
                self.steps_run += 1;
                self.record(
                    id,
                    JobEvent::ExpertRequested {
                        request: key.clone(),
                        domain: domain.to_string(),
                        instruction: instruction.to_string(),
                        signal: signal.clone(),
                    },
                )
                .await?;
            }
            return Err(Exit::Waiting { on: signal });
        };
        if answer.get("goal_status").and_then(Value::as_str) != Some("succeeded") {
            return Err(Exit::Parked {
                reason: format!(
                    "effect {key}: {domain} did not do it ({}): {}; check the world, then resume (it observes before asking again) or cancel",
                    answer
                        .get("status")
                        .and_then(Value::as_str)
                        .unwrap_or("no status"),
                    answer.get("text").and_then(Value::as_str).unwrap_or("")
                ),
            });
        }
        self.effect_finish(
            &key,
            &format!("{domain} answered that it acted"),
            &mut observe,
        )
        .await
    }

    /// The start of an effect: its journaled observation when it is confirmed; after a crash
    /// that left only the intent, a fresh observation, confirmed now, when it shows the change.
    /// Otherwise the intent is journaled (once) and `None` says: act.
    async fn effect_start<O, OF>(
        &mut self,
        key: &str,
        name: &str,
        callee: Callee<'_>,
        args: &Value,
        observe: &mut O,
    ) -> Result<Option<Value>, Exit>
    where
        O: FnMut() -> OF,
        OF: Future<Output = Result<Option<Value>, StepError>>,
    {
        if let Some(observation) = self.known.confirmed.get(key) {
            return Ok(Some(observation.clone()));
        }
        self.writer.ensure_live()?;
        let fp = fingerprint(name, callee.id, args);
        match self.known.intents.get(key).cloned() {
            Some(recorded) => {
                if let Some(recorded) = recorded
                    && !callee.matches(&recorded, name, args)
                {
                    return Err(Self::mismatch(key, &recorded, &fp));
                }
                // Look before acting again.
                let seen = observe()
                    .await
                    .map_err(|e| effect_failed(key, "observe", e))?;
                if let Some(observation) = &seen {
                    self.confirm(key, observation.clone()).await?;
                }
                Ok(seen)
            }
            None => {
                let id = event_id(&self.job, &[key, "effect_intent"]);
                self.record(
                    id,
                    JobEvent::EffectIntent {
                        step: key.to_string(),
                        fingerprint: Some(fp),
                    },
                )
                .await?;
                Ok(None)
            }
        }
    }

    /// After the act: confirmed when a fresh observation shows the change, else parked.
    async fn effect_finish<O, OF>(
        &mut self,
        key: &str,
        acted: &str,
        observe: &mut O,
    ) -> Result<Value, Exit>
    where
        O: FnMut() -> OF,
        OF: Future<Output = Result<Option<Value>, StepError>>,
    {
        match observe()
            .await
            .map_err(|e| effect_failed(key, "observe", e))?
        {
            Some(observation) => {
                self.confirm(key, observation.clone()).await?;
                Ok(observation)
            }
            None => Err(Exit::Parked {
                reason: format!(
                    "effect {key}: {acted}, but a fresh observation does not show the change; check the world, then resume (it observes again before acting) or cancel"
                ),
            }),
        }
    }

    async fn confirm(&mut self, key: &str, observation: Value) -> Result<(), Exit> {
        let id = event_id(&self.job, &[key, "effect_confirmed"]);
        self.record(
            id,
            JobEvent::EffectConfirmed {
                step: key.to_string(),
                observation,
            },
        )
        .await
    }

    /// A durable sleep: the first run journals a timer due `duration` from now and the job
    /// waits; it continues only after the clock journaled the timer as due.
    pub async fn sleep(&mut self, name: &str, duration: Duration) -> Result<(), Exit> {
        let (key, _) = self.next("timer", name);
        if self.known.timers_due.contains(&key) {
            return Ok(());
        }
        if !self.known.timers_set.contains(&key) {
            let due_ms = now_ms() + duration.as_millis() as u64;
            let id = event_id(&self.job, &[&key, "timer_set"]);
            self.record(
                id,
                JobEvent::TimerSet {
                    timer: key.clone(),
                    due_ms,
                },
            )
            .await?;
        }
        Err(Exit::Waiting {
            on: format!("timer:{key}"),
        })
    }

    /// Waits for a person's answer. An answer given before the flow got here counts.
    pub async fn wait_approval(&mut self, name: &str, prompt: &str) -> Result<Approval, Exit> {
        let (key, occurrence) = self.next("approval", name);
        if let Some(answer) = self
            .known
            .approvals
            .get(name)
            .and_then(|a| a.get(occurrence as usize))
        {
            return Ok(answer.clone());
        }
        let id = event_id(&self.job, &[&key, "approval_requested"]);
        self.record(
            id,
            JobEvent::ApprovalRequested {
                name: key.clone(),
                prompt: prompt.to_string(),
            },
        )
        .await?;
        Err(Exit::Waiting {
            on: format!("approval:{key}"),
        })
    }

    /// Waits for the signal `name` and returns its payload. A signal sent before the flow got
    /// here counts; the k-th wait on a name takes the k-th signal of that name.
    pub async fn wait_signal(&mut self, name: &str) -> Result<Value, Exit> {
        let (key, occurrence) = self.next("signal", name);
        if let Some(payload) = self
            .known
            .signals
            .get(name)
            .and_then(|s| s.get(occurrence as usize))
        {
            return Ok(payload.clone());
        }
        Err(Exit::Waiting {
            on: format!("signal:{key}"),
        })
    }

    /// Asks an expert for judgment: the gateway sends `instruction` to `domain`
    /// (`<mesh>/<role>`) as an AolTask and signals the answer back; the job waits meanwhile.
    /// Returns `{"status", "text", "result"}` of the task.
    pub async fn ask_expert(
        &mut self,
        name: &str,
        domain: &str,
        instruction: &str,
    ) -> Result<Value, Exit> {
        let (key, _) = self.next("expert", name);
        let signal = format!("expert:{key}");
        if let Some(answer) = self.known.signals.get(&signal).and_then(|s| s.first()) {
            return Ok(answer.clone());
        }
        let id = event_id(&self.job, &[&key, "expert_requested"]);
        self.record(
            id,
            JobEvent::ExpertRequested {
                request: key.clone(),
                domain: domain.to_string(),
                instruction: instruction.to_string(),
                signal,
            },
        )
        .await?;
        Err(Exit::Waiting {
            on: format!("expert:{key}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_callee_matches_its_own_fingerprint_or_the_legacy_one_it_names() {
        let args = json!({"a": 1});
        let old = fingerprint("fetch", "iron::flows::fetch", &args);
        let now = Callee {
            id: RUST_STEP,
            legacy: Some("iron::flows::fetch"),
        };
        assert!(now.matches(&fingerprint("fetch", RUST_STEP, &args), "fetch", &args));
        assert!(now.matches(&old, "fetch", &args));
        assert!(!now.matches(&old, "fetch", &json!({"a": 2})));
        assert!(!Callee::from(RUST_STEP).matches(&old, "fetch", &args));
        assert!(!Callee::from("fetch@2").matches(
            &fingerprint("fetch", RUST_STEP, &args),
            "fetch",
            &args
        ));
    }
}
