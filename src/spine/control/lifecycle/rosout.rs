//! Why a transition failed. `change_state` answers only `success`, as in ROS 2, so a managed
//! node also logs the reason on `/rosout` as an `rcl_interfaces/msg/Log` record, where every
//! ROS 2 node's log goes (`ros2 topic echo /rosout` shows it). A [`LifecycleClient`] watching
//! /rosout returns the reason with the failure. A node may log there itself too
//! ([`Rosout::log`]): what an operator watching the graph should see while it runs.
//!
//! [`LifecycleClient`]: super::LifecycleClient

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use hiroz::{
    Builder,
    node::ZNode,
    pubsub::{ZPub, ZSub},
    qos::{QosDurability, QosHistory, QosProfile, QosReliability},
};
use hiroz_msgs::ros::builtin_interfaces::Time;
use tokio::sync::Notify;
use tracing::warn;

use crate::{interfaces::rosout::Log, spine::control::ControlError};

/// The topic every ROS 2 node logs to.
pub const TOPIC: &str = "/rosout";

/// Records a late subscriber still receives from each publisher.
const DEPTH: usize = 100;

/// The QoS of /rosout as ROS 2 declares it: reliable and transient local, so a client whose
/// subscription is still propagating when the record goes out gets it from the cache.
pub fn qos() -> QosProfile {
    QosProfile {
        reliability: QosReliability::Reliable,
        durability: QosDurability::TransientLocal,
        history: QosHistory::KeepLast(std::num::NonZeroUsize::new(DEPTH).expect("DEPTH > 0")),
        ..QosProfile::default()
    }
}

/// The logger name ROS 2 gives a node: its fully qualified name without the leading slash,
/// dots for slashes (`/iron/engine` → `iron.engine`).
pub fn logger_name(fqn: &str) -> String {
    fqn.trim_start_matches('/').replace('/', ".")
}

fn now() -> Time {
    let t = crate::spine::control::action::now_stamp();
    Time {
        sec: t.sec,
        nanosec: t.nanosec,
    }
}

fn nanos(t: &Time) -> i128 {
    i128::from(t.sec) * 1_000_000_000 + i128::from(t.nanosec)
}

type LogPub = ZPub<Log, <Log as hiroz::msg::ZMessage>::Serdes>;
type LogSub = ZSub<Log, (), <Log as hiroz::msg::ZMessage>::Serdes>;

/// A node's records on /rosout.
pub struct Rosout {
    publisher: LogPub,
    name: String,
}

impl Rosout {
    /// A publisher on /rosout for the node `fqn`.
    pub fn new(node: &ZNode, fqn: &str) -> Result<Self, ControlError> {
        let publisher = node
            .create_pub::<Log>(TOPIC)
            .with_qos(qos())
            .build()
            .map_err(|source| ControlError::Declare {
                what: format!("publisher on {TOPIC}"),
                source,
            })?;
        Ok(Self {
            publisher,
            name: logger_name(fqn),
        })
    }

    /// Logs `msg` at ERROR, from `function` (the transition); a failure to publish is only
    /// logged locally.
    pub(super) async fn error(&self, function: &str, msg: &str) {
        self.log(Log::ERROR, function, msg).await
    }

    /// Logs `msg` at `level` (`Log::INFO`, `Log::WARN`, `Log::ERROR`…), from `function`; a
    /// failure to publish is only logged locally.
    pub async fn log(&self, level: u8, function: &str, msg: &str) {
        let record = Log {
            stamp: now(),
            level,
            name: self.name.clone(),
            msg: msg.to_string(),
            file: file!().to_string(),
            function: function.to_string(),
            line: line!(),
        };
        if let Err(e) = self.publisher.async_publish(&record).await {
            warn!("could not publish on {TOPIC}: {e}");
        }
    }
}

/// The error records one node publishes on /rosout, as they arrive.
pub(super) struct Watch {
    errors: Arc<Mutex<Vec<Log>>>,
    arrived: Arc<Notify>,
    _sub: LogSub,
}

impl Watch {
    /// Watches /rosout for records of the node `fqn` at ERROR or above.
    pub(super) fn new(node: &ZNode, fqn: &str) -> Result<Self, ControlError> {
        let name = logger_name(fqn);
        let errors = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let (e, a) = (errors.clone(), arrived.clone());
        let sub = node
            .create_sub::<Log>(TOPIC)
            .with_qos(qos())
            .build_with_callback(move |record: Log| {
                if record.name == name && record.level >= Log::ERROR {
                    e.lock().expect("rosout lock").push(record);
                    a.notify_waiters();
                }
            })
            .map_err(|source| ControlError::Declare {
                what: format!("subscription to {TOPIC}"),
                source,
            })?;
        Ok(Self {
            errors,
            arrived,
            _sub: sub,
        })
    }

    /// Now, as a /rosout stamp would say it.
    pub(super) fn mark() -> Time {
        now()
    }

    /// The messages of the node's error records stamped at or after `since`, waiting up to
    /// `wait` for the first one.
    pub(super) async fn errors_since(&self, since: &Time, wait: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let found: Vec<String> = self
                .errors
                .lock()
                .expect("rosout lock")
                .iter()
                .filter(|r| nanos(&r.stamp) >= nanos(since))
                .map(|r| r.msg.clone())
                .collect();
            if !found.is_empty() {
                return found;
            }
            tokio::select! {
                _ = arrived => {}
                _ = tokio::time::sleep_until(deadline) => return Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logger_name_is_the_node_name_with_dots() {
        assert_eq!(logger_name("/iron/engine"), "iron.engine");
        assert_eq!(logger_name("/talker"), "talker");
    }
}
