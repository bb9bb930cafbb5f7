//! Schedule triggers, kept by the clock: each tick of a trigger's cron expression (UTC) starts
//! its flow as the job computed from the tick, never before the tick. A tick missed while the
//! clock was down is started when it comes back, if it is at most [`MISFIRE_GRACE`] old; older
//! ones are skipped (a daily digest should not run three times after a long outage).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::Trigger;
use crate::aem::TriggerOn;
use crate::aem::triggers::parse_cron;

/// How old a missed tick may be and still be started.
pub const MISFIRE_GRACE: Duration = Duration::from_secs(600);

/// The schedule triggers a clock keeps, and the tenant it records their firing under.
#[derive(Debug, Clone, Default)]
pub struct Schedules {
    /// The triggers.
    pub triggers: Vec<Scheduled>,
    /// Tenant of the `trigger_fired` events.
    pub tenant: String,
}

impl Schedules {
    /// Starts the jobs of every tick due at `now_secs`. A tick whose job could not be written
    /// is kept and tried again at the next call.
    pub async fn fire_due<L: crate::core::durable::EventLog>(&mut self, log: &L, now_secs: i64) {
        for s in &mut self.triggers {
            let before = s.next;
            let Some(tick) = s.due(now_secs) else {
                continue;
            };
            let (what, fired) = Scheduled::fired(tick);
            if let Err(e) = s
                .trigger
                .fire(log, &self.tenant, &what, fired, "scheduled tick")
                .await
            {
                tracing::warn!(trigger = %s.trigger.label(), tick, "could not start the job: {e}; retrying");
                s.next = before;
            }
        }
    }

    /// Seconds until the next tick of any trigger (`None`: no ticks ahead).
    pub fn next_in(&self, now_secs: i64) -> Option<u64> {
        self.triggers
            .iter()
            .filter_map(Scheduled::next)
            .min()
            .map(|t| t.saturating_sub(now_secs).max(0) as u64)
    }
}

/// One schedule trigger and its next tick.
#[derive(Debug, Clone)]
pub struct Scheduled {
    /// The trigger.
    pub trigger: Trigger,
    cron: croner::Cron,
    /// The next tick not started yet (Unix seconds).
    next: Option<i64>,
}

impl Scheduled {
    /// The schedule triggers among `triggers`, each positioned at `now_secs`: its next tick is
    /// the latest one at most [`MISFIRE_GRACE`] ago, or else the first one after now.
    pub fn all(triggers: &[Trigger], now_secs: i64) -> Vec<Scheduled> {
        triggers
            .iter()
            .filter_map(|t| {
                let TriggerOn::Schedule { cron } = &t.entry.on else {
                    return None;
                };
                // The catalog compiler refused expressions that do not parse.
                let cron = parse_cron(cron).ok()?;
                let mut s = Scheduled {
                    trigger: t.clone(),
                    cron,
                    next: None,
                };
                let grace = MISFIRE_GRACE.as_secs() as i64;
                s.next = s
                    .after(now_secs - grace - 1)
                    .map(|first| s.latest(first, now_secs));
                Some(s)
            })
            .collect()
    }

    /// The first tick strictly after `secs`.
    fn after(&self, secs: i64) -> Option<i64> {
        let at: DateTime<Utc> = DateTime::from_timestamp(secs, 0)?;
        self.cron
            .find_next_occurrence(&at, false)
            .ok()
            .map(|t| t.timestamp())
    }

    /// The last tick at or before `now_secs`, counting from `tick` (which is returned when it
    /// is after `now_secs` or the last one).
    fn latest(&self, tick: i64, now_secs: i64) -> i64 {
        let mut latest = tick;
        while let Some(t) = self.after(latest).filter(|t| *t <= now_secs) {
            latest = t;
        }
        latest
    }

    /// The tick due at `now_secs` (at most one: the latest due; earlier ones in the same gap
    /// are skipped), advancing past it.
    pub fn due(&mut self, now_secs: i64) -> Option<i64> {
        let tick = self.next.filter(|t| *t <= now_secs)?;
        let latest = self.latest(tick, now_secs);
        self.next = self.after(latest);
        Some(latest)
    }

    /// When the next tick is (Unix seconds), if the expression has one.
    pub fn next(&self) -> Option<i64> {
        self.next
    }

    /// What the job for `tick` is computed from, and the flow's input.
    pub fn fired(tick: i64) -> (String, serde_json::Value) {
        let when = DateTime::from_timestamp(tick, 0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        (format!("tick:{tick}"), json!({"tick": when}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aem::TriggerEntry;

    fn every(cron: &str) -> Vec<Trigger> {
        vec![Trigger {
            mesh: "m".into(),
            name: "t".into(),
            entry: TriggerEntry {
                role: "r".into(),
                flow: "f".into(),
                flow_sha256: String::new(),
                on: TriggerOn::Schedule { cron: cron.into() },
                input: json!({}),
            },
        }]
    }

    #[test]
    fn ticks_are_never_early_and_each_fires_once() {
        // Every minute, at second 0; now is 10 s past a minute, 20 min after any grace.
        let now = 1_796_047_510; // 2026-11-30T14:05:10Z
        let mut s = Scheduled::all(&every("* * * * *"), now).remove(0);
        assert_eq!(
            s.next(),
            Some(now - 10),
            "the tick 10 s ago is within the grace"
        );
        assert_eq!(s.due(now), Some(now - 10));
        assert_eq!(s.due(now), None, "once");
        assert_eq!(s.due(now + 49), None, "not early");
        assert_eq!(s.due(now + 50), Some(now + 50));
    }

    #[test]
    fn old_misses_are_skipped_and_gaps_fire_the_latest_tick_once() {
        let now = 1_796_047_500; // 14:05:00
        // Hourly at :00; the last tick (14:00) is 5 min ago: within the grace.
        let s = Scheduled::all(&every("0 * * * *"), now).remove(0);
        assert_eq!(s.next(), Some(now - 300));
        // Daily at 07:00: seven hours ago, beyond the grace: the next is tomorrow.
        let s = Scheduled::all(&every("0 7 * * *"), now).remove(0);
        assert_eq!(s.next(), Some(1_796_108_400)); // 2026-12-01T07:00:00Z
        // Every 5 s, and the clock was away for a minute: one start, for the latest tick.
        let mut s = Scheduled::all(&every("*/5 * * * * *"), now).remove(0);
        assert_eq!(s.due(now), Some(now));
        assert_eq!(s.due(now + 60), Some(now + 60));
        assert_eq!(s.next(), Some(now + 65));
        let (what, input) = Scheduled::fired(now);
        assert_eq!(what, format!("tick:{now}"));
        assert_eq!(input["tick"], "2026-11-30T14:05:00Z");
    }
}
