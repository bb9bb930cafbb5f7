//! Reading and writing the JOBS stream: a job's diary (fenced appends by the runner, plain
//! appends by people and the clock), the wake queue, and the state a diary folds to.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use crate::core::durable::{AppendRequest, DurableError, EventLog, KeyValue};
use crate::core::envelope::now_ms;
use crate::core::ids::EventId;
use crate::spine::durable::lease::{LEASE_BUCKET, LeaseValue};
use crate::spine::durable::streams::JOBS;

use super::JobError;
use super::event::{
    Entry, JobEvent, Stored, diaries_filter, diary_subject, event_id, job_of_subject, wake_subject,
};

/// Messages read per round trip.
const PAGE: usize = 2000;

/// Reads every stored message matching `filter` on JOBS, in log order.
async fn read_all<L: EventLog>(log: &L, filter: &str) -> Result<Vec<Stored>, JobError> {
    read_from(log, filter, 1).await
}

/// Reads the messages matching `filter` from `from_seq` on.
async fn read_from<L: EventLog>(
    log: &L,
    filter: &str,
    from_seq: u64,
) -> Result<Vec<Stored>, JobError> {
    let mut out = Vec::new();
    let mut from = from_seq.max(1);
    loop {
        let page = log.read(JOBS, filter, from, PAGE).await?;
        let n = page.len();
        for message in page {
            from = message.seq + 1;
            let entry: Entry =
                serde_json::from_slice(&message.payload).map_err(|source| JobError::Corrupt {
                    subject: message.subject.clone(),
                    seq: message.seq,
                    source,
                })?;
            out.push(Stored {
                seq: message.seq,
                entry,
            });
        }
        if n < PAGE {
            return Ok(out);
        }
    }
}

/// A job's diary, in order.
pub async fn read_diary<L: EventLog>(
    log: &L,
    mesh: &str,
    job: &str,
) -> Result<Vec<Stored>, JobError> {
    read_all(log, &diary_subject(mesh, job)).await
}

/// Every diary entry of `mesh` (`*` for all), grouped by `(mesh, job)`.
pub async fn read_all_diaries<L: EventLog>(
    log: &L,
    mesh: &str,
) -> Result<BTreeMap<(String, String), Vec<Stored>>, JobError> {
    let mut diaries = Diaries::of(mesh);
    diaries.refresh(log).await?;
    Ok(diaries.jobs)
}

/// Every diary of `mesh` (`*` for all), kept up to date: each [`Diaries::refresh`] reads only
/// what was appended since the one before, so a reader that looks again and again (the
/// console) does not read the whole stream each time.
#[derive(Debug)]
pub struct Diaries {
    filter: String,
    /// The next sequence to read.
    next: u64,
    jobs: BTreeMap<(String, String), Vec<Stored>>,
}

impl Diaries {
    /// None read yet.
    pub fn of(mesh: &str) -> Diaries {
        Diaries {
            filter: diaries_filter(mesh),
            next: 1,
            jobs: BTreeMap::new(),
        }
    }

    /// Reads the entries appended since the last call; every diary, grouped by `(mesh, job)`.
    pub async fn refresh<L: EventLog>(
        &mut self,
        log: &L,
    ) -> Result<&BTreeMap<(String, String), Vec<Stored>>, JobError> {
        loop {
            let page = log.read(JOBS, &self.filter, self.next, PAGE).await?;
            let n = page.len();
            for message in page {
                let Some((m, j)) = job_of_subject(&message.subject) else {
                    self.next = message.seq + 1;
                    continue;
                };
                let entry: Entry = serde_json::from_slice(&message.payload).map_err(|source| {
                    JobError::Corrupt {
                        subject: message.subject.clone(),
                        seq: message.seq,
                        source,
                    }
                })?;
                self.jobs
                    .entry((m.to_string(), j.to_string()))
                    .or_default()
                    .push(Stored {
                        seq: message.seq,
                        entry,
                    });
                self.next = message.seq + 1;
            }
            if n < PAGE {
                return Ok(&self.jobs);
            }
        }
    }
}

/// Where a job stands, folded from its diary.
#[derive(Debug, Clone, PartialEq)]
pub enum JobState {
    /// No `job_started` yet.
    Unknown,
    /// Started, resumed, or woken: a runner should run it.
    Runnable,
    /// Waiting for `on`; nothing runs.
    Waiting { on: String },
    /// Needs a person.
    Parked { reason: String },
    /// Will never run again.
    Cancelled,
    /// The flow returned.
    Done { output: Value },
}

impl JobState {
    /// One word for listings.
    pub fn word(&self) -> &'static str {
        match self {
            JobState::Unknown => "unknown",
            JobState::Runnable => "runnable",
            JobState::Waiting { .. } => "waiting",
            JobState::Parked { .. } => "parked",
            JobState::Cancelled => "cancelled",
            JobState::Done { .. } => "done",
        }
    }

    /// True when a runner has nothing to do for it, ever or until a person acts.
    pub fn is_settled(&self) -> bool {
        matches!(
            self,
            JobState::Parked { .. } | JobState::Cancelled | JobState::Done { .. }
        )
    }
}

/// Folds a diary into the job's state.
pub fn state_of(diary: &[Stored]) -> JobState {
    let mut state = JobState::Unknown;
    for stored in diary {
        state = match (&state, &stored.entry.event) {
            (JobState::Cancelled, _) | (JobState::Done { .. }, _) => continue,
            (_, JobEvent::Cancelled { .. }) => JobState::Cancelled,
            (_, JobEvent::Done { output }) => JobState::Done {
                output: output.clone(),
            },
            (_, JobEvent::Parked { reason }) => JobState::Parked {
                reason: reason.clone(),
            },
            (JobState::Parked { .. }, JobEvent::Resumed { .. }) => JobState::Runnable,
            (JobState::Parked { .. }, _) => continue,
            (_, JobEvent::JobStarted { .. }) => JobState::Runnable,
            (_, JobEvent::Waiting { on }) => JobState::Waiting { on: on.clone() },
            // Anything a waiting flow may be waiting for makes it runnable again.
            (
                JobState::Waiting { .. },
                JobEvent::TimerDue { .. }
                | JobEvent::ApprovalGiven { .. }
                | JobEvent::Signal { .. },
            ) => JobState::Runnable,
            (JobState::Unknown, _) => continue,
            (_, _) => continue,
        };
    }
    state
}

/// The `job_started` event of a diary.
pub fn started_of(diary: &[Stored]) -> Option<(String, String, String, Value, Option<String>)> {
    diary.iter().find_map(|s| match &s.entry.event {
        JobEvent::JobStarted {
            mesh,
            role,
            flow,
            input,
            flow_hash,
        } => Some((
            mesh.clone(),
            role.clone(),
            flow.clone(),
            input.clone(),
            flow_hash.clone(),
        )),
        _ => None,
    })
}

/// Appends `event` to a diary without fencing (people, the clock), and retries once on an
/// ambiguous failure with the same id. Returns the sequence (of the original for a duplicate).
pub async fn append_unfenced<L: EventLog>(
    log: &L,
    mesh: &str,
    job: &str,
    id: EventId,
    by: &str,
    event: JobEvent,
) -> Result<u64, JobError> {
    let entry = Entry {
        id: id.clone(),
        ts: now_ms(),
        job: job.to_string(),
        by: by.to_string(),
        event,
    };
    let request = AppendRequest {
        subject: diary_subject(mesh, job),
        msg_id: id.to_string(),
        payload: serde_json::to_vec(&entry).map_err(JobError::Encode)?,
        expected_last_subject_seq: None,
    };
    let ack = match log.append(request.clone()).await {
        Err(e) if e.is_retryable() => log.append(request).await?,
        other => other?,
    };
    Ok(ack.seq)
}

/// Puts a wake for `job` on the mesh's wake queue; `cause` names what woke it, so the same
/// cause wakes once.
pub async fn wake<L: EventLog>(
    log: &L,
    mesh: &str,
    job: &str,
    cause: &str,
) -> Result<(), JobError> {
    let id = event_id(job, &["wake", cause]);
    let request = AppendRequest {
        subject: wake_subject(mesh, job),
        msg_id: id.to_string(),
        payload: serde_json::to_vec(&serde_json::json!({"job": job, "cause": cause}))
            .map_err(JobError::Encode)?,
        expected_last_subject_seq: None,
    };
    match log.append(request.clone()).await {
        Err(e) if e.is_retryable() => log.append(request).await?,
        other => other?,
    };
    Ok(())
}

/// Who a runner is: the lease it works under. Every diary write it makes is checked against
/// it when the log refuses the write.
#[derive(Debug, Clone)]
pub struct Fence {
    /// The lease key.
    pub key: String,
    /// The holder name in the lease.
    pub holder: String,
    /// The epoch of the lease.
    pub epoch: u64,
    /// Cancelled when the lease holder task could not renew.
    pub lost: tokio_util::sync::CancellationToken,
}

impl Fence {
    /// What a runner signs its entries with.
    pub fn by(&self) -> String {
        format!("{}@{}", self.holder, self.epoch)
    }

    /// True only when the lease key still names this holder and epoch.
    pub async fn still_ours<K: KeyValue>(&self, kv: &K) -> Result<bool, DurableError> {
        if self.lost.is_cancelled() {
            return Ok(false);
        }
        let Some(entry) = kv.kv_get(LEASE_BUCKET, &self.key).await? else {
            return Ok(false);
        };
        Ok(serde_json::from_slice::<LeaseValue>(&entry.value)
            .map(|v| v.holder == self.holder && v.epoch == self.epoch)
            .unwrap_or(false))
    }
}

/// The runner's writer for one job's diary. Every append names the sequence of the last
/// entry it has seen; when someone else wrote in between, it proves the lease is still its
/// own before reading what was written and trying again, so a runner that lost its lease
/// cannot write.
///
/// That alone would let a runner that was paused past its lease write again when nobody
/// else had written in between. So a runner first *claims* the job ([`DiaryWriter::claim`]:
/// a `claimed` entry carrying its lease epoch, written under the same fence); a writer that
/// sees a claim of a later epoch refuses to write, and its next append fails the sequence
/// check and the lease check.
pub struct DiaryWriter<L> {
    log: L,
    mesh: String,
    job: String,
    last_seq: u64,
    ids: HashSet<EventId>,
    fence: Fence,
    /// The latest epoch that has claimed the job.
    claimed: Option<u64>,
}

/// The latest lease epoch that claimed a job, in the diary entries given.
fn latest_claim<'a>(entries: impl IntoIterator<Item = &'a Stored>) -> Option<u64> {
    entries
        .into_iter()
        .filter_map(|s| match s.entry.event {
            JobEvent::Claimed { epoch } => Some(epoch),
            _ => None,
        })
        .max()
}

/// What an append saw.
#[derive(Debug, Default)]
pub struct Appended {
    /// Entries others wrote since the writer's last look (signals, approvals, a cancel).
    pub foreign: Vec<Stored>,
}

/// Attempts before a write that keeps meeting foreign writes gives up.
const FENCE_ATTEMPTS: usize = 20;

impl<L: EventLog + KeyValue> DiaryWriter<L> {
    /// The log it writes to.
    pub fn log(&self) -> &L {
        &self.log
    }

    /// A writer continuing after `diary`.
    pub fn new(log: L, mesh: &str, job: &str, diary: &[Stored], fence: Fence) -> Self {
        Self {
            log,
            mesh: mesh.to_string(),
            job: job.to_string(),
            last_seq: diary.last().map(|s| s.seq).unwrap_or(0),
            ids: diary.iter().map(|s| s.entry.id.clone()).collect(),
            fence,
            claimed: latest_claim(diary),
        }
    }

    /// Takes the job for this writer's lease epoch (once per epoch): refused when a later
    /// epoch has claimed it, or when the lease is not this writer's. True when it wrote the
    /// claim now (the diary may then hold entries the caller has not read).
    pub async fn claim(&mut self) -> Result<bool, JobError> {
        if self.claimed == Some(self.fence.epoch) {
            return Ok(false);
        }
        let epoch = self.fence.epoch;
        let id = event_id(&self.job, &["claimed", &epoch.to_string()]);
        self.append(id, JobEvent::Claimed { epoch }).await?;
        self.claimed = Some(epoch);
        Ok(true)
    }

    fn lease_lost(&self) -> JobError {
        JobError::LeaseLost {
            key: self.fence.key.clone(),
        }
    }

    /// True when an entry with this id is already in the diary.
    pub fn has(&self, id: &EventId) -> bool {
        self.ids.contains(id)
    }

    /// Fails when the lease is known lost, or a later epoch has claimed the job (checked
    /// before every side effect).
    pub fn ensure_live(&self) -> Result<(), JobError> {
        if self.fence.lost.is_cancelled() || self.claimed.is_some_and(|c| c > self.fence.epoch) {
            return Err(self.lease_lost());
        }
        Ok(())
    }

    /// Appends one event under the fence.
    pub async fn append(&mut self, id: EventId, event: JobEvent) -> Result<Appended, JobError> {
        let mut appended = Appended::default();
        if self.ids.contains(&id) {
            return Ok(appended);
        }
        self.ensure_live()?;
        let entry = Entry {
            id: id.clone(),
            ts: now_ms(),
            job: self.job.clone(),
            by: self.fence.by(),
            event,
        };
        let payload = serde_json::to_vec(&entry).map_err(JobError::Encode)?;
        for _ in 0..FENCE_ATTEMPTS {
            let request = AppendRequest {
                subject: diary_subject(&self.mesh, &self.job),
                msg_id: id.to_string(),
                payload: payload.clone(),
                expected_last_subject_seq: Some(self.last_seq),
            };
            match self.log.append(request).await {
                Ok(ack) if !ack.duplicate => {
                    self.last_seq = ack.seq;
                    self.ids.insert(id);
                    return Ok(appended);
                }
                // A duplicate (an earlier attempt landed) or a refusal: find out what is there.
                Ok(_) | Err(DurableError::WrongLastSequence { .. }) => {}
                Err(e) if e.is_retryable() => {}
                Err(e) => return Err(e.into()),
            }
            // Fail closed: a lease that cannot be read is not proven ours.
            if !self.fence.still_ours(&self.log).await.unwrap_or(false) {
                return Err(self.lease_lost());
            }
            let newer = read_from(
                &self.log,
                &diary_subject(&self.mesh, &self.job),
                self.last_seq + 1,
            )
            .await?;
            // A later epoch took the job meanwhile: whatever the lease bucket says, stop.
            self.claimed = self.claimed.max(latest_claim(&newer));
            if self.claimed.is_some_and(|c| c > self.fence.epoch) {
                return Err(self.lease_lost());
            }
            let mut mine = false;
            for stored in newer {
                self.last_seq = self.last_seq.max(stored.seq);
                self.ids.insert(stored.entry.id.clone());
                if stored.entry.id == id {
                    mine = true;
                } else {
                    appended.foreign.push(stored);
                }
            }
            if mine {
                return Ok(appended);
            }
        }
        Err(JobError::Contended {
            job: self.job.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diary(events: Vec<JobEvent>) -> Vec<Stored> {
        events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Stored {
                seq: i as u64 + 1,
                entry: Entry {
                    id: event_id("j", &[&i.to_string()]),
                    ts: 0,
                    job: "j".into(),
                    by: "t".into(),
                    event,
                },
            })
            .collect()
    }

    fn started() -> JobEvent {
        JobEvent::JobStarted {
            mesh: "m".into(),
            role: "r".into(),
            flow: "f".into(),
            input: json!({}),
            flow_hash: None,
        }
    }

    #[test]
    fn the_state_follows_the_diary() {
        assert_eq!(state_of(&[]), JobState::Unknown);
        let waiting = JobEvent::Waiting {
            on: "signal:go#0".into(),
        };
        let signal = JobEvent::Signal {
            name: "go".into(),
            payload: json!(1),
        };
        assert_eq!(
            state_of(&diary(vec![started(), waiting.clone()])),
            JobState::Waiting {
                on: "signal:go#0".into()
            }
        );
        assert_eq!(
            state_of(&diary(vec![started(), waiting.clone(), signal.clone()])),
            JobState::Runnable
        );
        let parked = JobEvent::Parked { reason: "x".into() };
        // A signal does not wake a parked job; only resume does.
        assert!(matches!(
            state_of(&diary(vec![started(), parked.clone(), signal])),
            JobState::Parked { .. }
        ));
        assert_eq!(
            state_of(&diary(vec![
                started(),
                parked,
                JobEvent::Resumed {
                    note: None,
                    statement: None
                }
            ])),
            JobState::Runnable
        );
        // Nothing after cancel or done changes the state.
        assert_eq!(
            state_of(&diary(vec![
                started(),
                JobEvent::Cancelled {
                    reason: None,
                    statement: None
                },
                JobEvent::Resumed {
                    note: None,
                    statement: None
                }
            ])),
            JobState::Cancelled
        );
    }
}
