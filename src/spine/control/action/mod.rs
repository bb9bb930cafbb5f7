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

use hiroz::entity::{TypeHash, TypeInfo};

/// RIHS01 of `action_msgs/srv/CancelGoal` as rosidl computes it for Jazzy (hiroz-codegen
/// 0.2.1 computes another value). Pinned against an independent hasher in
/// `tests/type_hashes.rs`.
pub const CANCEL_GOAL_HASH: &str =
    "RIHS01_573d8b0a534451d7bc2ac8c5ffde8ac14b8593b7001175d0cd6516dcbeb8689a";

/// The type info ROS 2 peers expect for `<action>/_action/cancel_goal`.
pub fn cancel_goal_type_info<A: ZAction>() -> TypeInfo {
    let mut info = A::cancel_goal_type_info();
    info.hash =
        TypeHash::from_rihs_string(CANCEL_GOAL_HASH).expect("constant is a valid RIHS01 string");
    info
}

/// The five endpoint names of an action, from its fully qualified name.
pub(crate) struct Endpoints {
    pub send_goal: String,
    pub cancel_goal: String,
    pub get_result: String,
    pub feedback: String,
    pub status: String,
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
