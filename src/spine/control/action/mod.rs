//! ROS 2 actions served and called the way rcl_action does it, on top of hiroz's typed
//! services and topics. hiroz 0.2.1's own action server is not used: it advertises a wrong
//! CancelGoal hash, stalls goals while a `get_result` is pending, answers cancels with wrong
//! codes, keeps results 10 s, and panics on a request without an attachment.

mod cancel;
pub mod client;
pub mod server;

pub use cancel::{CancelCode, select_for_cancel};
pub use client::{ActionClient, GoalOutcome};
pub use hiroz::action::{GoalId, GoalStatus, ZAction};
pub use server::{ActionOptions, ActionServer, GoalHandle, GoalRequest};

use hiroz::{
    entity::{TypeHash, TypeInfo},
    qos::{QosDurability, QosHistory, QosProfile, QosReliability},
};

/// RIHS01 of `action_msgs/srv/CancelGoal` as rosidl computes it for Jazzy (hiroz-codegen
/// 0.2.1 computes another value). Pinned against an independent hasher in
/// `tests/spine/type_hashes.rs`.
pub const CANCEL_GOAL_HASH: &str =
    "RIHS01_573d8b0a534451d7bc2ac8c5ffde8ac14b8593b7001175d0cd6516dcbeb8689a";

/// The type info ROS 2 peers expect for `<action>/_action/cancel_goal`.
pub fn cancel_goal_type_info<A: ZAction>() -> TypeInfo {
    let mut info = A::cancel_goal_type_info();
    info.hash =
        TypeHash::from_rihs_string(CANCEL_GOAL_HASH).expect("constant is a valid RIHS01 string");
    info
}

/// Why a server refused a goal: a stable code a program can branch on and a sentence for a
/// person. Published as `iron/msg/GoalRejection` on [`rejections_topic`], because a ROS 2
/// goal response carries only `accepted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: String,
    pub reason: String,
}

impl Refusal {
    pub fn new(code: &str, reason: impl Into<String>) -> Self {
        Self {
            code: code.to_string(),
            reason: reason.into(),
        }
    }
}

/// Why the action server itself refused a goal, before any handler saw it. Each serialises
/// to the stable code the README documents (a handler's own codes, such as the engine's
/// `unknown_domain`, come from its own enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerRefusal {
    /// The server is not active (or no longer takes goals).
    Inactive,
    /// The goal id is all zeros.
    InvalidGoalId,
    /// The goal id is already known or being decided.
    DuplicateGoalId,
    /// Too many goals are waiting for a decision.
    Saturated,
    /// The handler did not decide in time, or dropped the goal.
    Undecided,
}

impl ServerRefusal {
    /// The stable code on the wire (`GoalRejection.code`).
    pub fn code(self) -> &'static str {
        match self {
            ServerRefusal::Inactive => "inactive",
            ServerRefusal::InvalidGoalId => "invalid_goal_id",
            ServerRefusal::DuplicateGoalId => "duplicate_goal_id",
            ServerRefusal::Saturated => "saturated",
            ServerRefusal::Undecided => "undecided",
        }
    }

    /// Whether a goal refused with `code` may be taken later unchanged: the server was not
    /// active, full or slow, which says nothing about the goal itself.
    pub fn is_transient(code: &str) -> bool {
        [Self::Inactive, Self::Saturated, Self::Undecided]
            .iter()
            .any(|r| r.code() == code)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// The topic on which a server that publishes its refusals does so: `<action>/rejections`,
/// e.g. `/iron/engine/task/rejections` (`ros2 topic echo` shows it).
pub fn rejections_topic(action: &str) -> String {
    format!("{}/rejections", action.trim_end_matches('/'))
}

/// How many recent refusals a late subscriber to [`rejections_topic`] still receives.
pub const REJECTION_DEPTH: usize = 32;

/// The QoS of [`rejections_topic`]: reliable, transient local, the last [`REJECTION_DEPTH`],
/// so a client whose subscription is still propagating when the refusal goes out gets it
/// from the publisher's cache.
pub fn rejections_qos() -> QosProfile {
    QosProfile {
        reliability: QosReliability::Reliable,
        durability: QosDurability::TransientLocal,
        history: QosHistory::KeepLast(
            std::num::NonZeroUsize::new(REJECTION_DEPTH).expect("REJECTION_DEPTH is not zero"),
        ),
        ..QosProfile::default()
    }
}

/// The five endpoint names of an action, from its fully qualified name, and the topic of its
/// refusals.
pub(crate) struct Endpoints {
    pub send_goal: String,
    pub cancel_goal: String,
    pub get_result: String,
    pub feedback: String,
    pub status: String,
    pub rejections: String,
}

impl Endpoints {
    pub(crate) fn of(action: &str) -> Self {
        let a = action.trim_end_matches('/');
        Self {
            send_goal: format!("{a}/_action/send_goal"),
            cancel_goal: format!("{a}/_action/cancel_goal"),
            get_result: format!("{a}/_action/get_result"),
            feedback: format!("{a}/_action/feedback"),
            status: format!("{a}/_action/status"),
            rejections: rejections_topic(a),
        }
    }
}

/// `builtin_interfaces/Time` for now.
pub fn now_stamp() -> hiroz::action::Time {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    hiroz::action::Time {
        sec: d.as_secs().min(i32::MAX as u64) as i32,
        nanosec: d.subsec_nanos(),
    }
}

#[cfg(test)]
mod tests {
    use super::ServerRefusal;

    #[test]
    fn only_the_servers_own_state_makes_a_refusal_transient() {
        for code in ["inactive", "saturated", "undecided"] {
            assert!(ServerRefusal::is_transient(code), "{code}");
        }
        for code in [
            "invalid_goal_id",
            "duplicate_goal_id",
            "unknown_domain",
            "not_a_peer",
            "",
        ] {
            assert!(!ServerRefusal::is_transient(code), "{code}");
        }
    }
}
