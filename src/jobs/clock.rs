//! The clock (`/iron/jobs/clock`): follows every diary, keeps the timers that are set and not
//! yet due, and when one is due writes `timer_due` (id computed from timer and tick) to the
//! job's diary and wakes the job. It checks the wall clock, so a timer never fires early; it
//! rebuilds its timers from the log at start, so a restart loses none. It also keeps the
//! schedule triggers: each tick starts its flow ([`super::triggers::schedule`]).

use std::collections::BTreeMap;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::core::durable::EventLog;
use crate::core::envelope::now_ms;
use crate::spine::durable::streams::JOBS;

use super::JobError;
use super::event::{Entry, JobEvent, diaries_filter, job_of_subject, timer_due_id};
use super::journal::{append_unfenced, wake};
use super::triggers::schedule::Schedules;

/// Who the clock writes as.
const BY: &str = "clock";

/// A timer the clock keeps: `(mesh, job, timer)` → due time.
type Timers = BTreeMap<(String, String, String), u64>;

/// Runs the clock until `shutdown`. `poll` bounds how late a timer set moments ago is seen.
/// `schedules` are the schedule triggers it starts jobs for.
pub async fn run<L: EventLog>(
    log: L,
    poll: Duration,
    mut schedules: Schedules,
    shutdown: CancellationToken,
) -> Result<(), JobError> {
    let mut timers = Timers::new();
    let mut from = 1;
    let filter = diaries_filter("*");
    info!("clock following every job diary");
    loop {
        // Read what was written since the last look.
        loop {
            let page = match log.read(JOBS, &filter, from, 1000).await {
                Ok(p) => p,
                Err(e) => {
                    warn!("clock: reading the diaries: {e}; retrying");
                    break;
                }
            };
            let n = page.len();
            for message in page {
                from = message.seq + 1;
                let Some((mesh, job)) = job_of_subject(&message.subject) else {
                    continue;
                };
                let Ok(entry) = serde_json::from_slice::<Entry>(&message.payload) else {
                    warn!(
                        seq = message.seq,
                        "clock: skipping a message that is not a job entry"
                    );
                    continue;
                };
                let key = |t: &str| (mesh.to_string(), job.to_string(), t.to_string());
                match entry.event {
                    JobEvent::TimerSet { timer, due_ms } => {
                        timers.insert(key(&timer), due_ms);
                    }
                    JobEvent::TimerDue { timer, .. } => {
                        timers.remove(&key(&timer));
                    }
                    JobEvent::Done { .. } | JobEvent::Cancelled { .. } => {
                        timers.retain(|(m, j, _), _| !(m == mesh && j == job));
                    }
                    _ => {}
                }
            }
            if n < 1000 {
                break;
            }
        }
        let now = now_ms();
        let due: Vec<_> = timers
            .iter()
            .filter(|(_, due)| **due <= now)
            .map(|(k, due)| (k.clone(), *due))
            .collect();
        for ((mesh, job, timer), tick) in due {
            let id = timer_due_id(&job, &timer, tick);
            let written = append_unfenced(
                &log,
                &mesh,
                &job,
                id.clone(),
                BY,
                JobEvent::TimerDue {
                    timer: timer.clone(),
                    tick,
                },
            )
            .await;
            match written.and(Ok(())) {
                Ok(()) => match wake(&log, &mesh, &job, id.as_str()).await {
                    Ok(()) => {
                        info!(
                            job,
                            timer,
                            late_ms = now_ms().saturating_sub(tick),
                            "timer due"
                        );
                        timers.remove(&(mesh, job, timer));
                    }
                    Err(e) => warn!(job, timer, "clock: waking the job: {e}; retrying"),
                },
                Err(e) => warn!(job, timer, "clock: writing timer_due: {e}; retrying"),
            }
        }
        let now_secs = (now_ms() / 1000) as i64;
        schedules.fire_due(&log, now_secs).await;
        let tick_in = schedules
            .next_in(now_secs)
            .map(|s| Duration::from_secs(s.max(1)))
            .unwrap_or(poll);
        let next_due = timers
            .values()
            .min()
            .map(|due| Duration::from_millis(due.saturating_sub(now_ms())))
            .unwrap_or(poll)
            .min(tick_in);
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            // At least a few milliseconds, so a write that keeps failing is not a busy loop.
            _ = tokio::time::sleep(next_due.min(poll).max(Duration::from_millis(20))) => {}
        }
    }
}
