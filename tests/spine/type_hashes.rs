//! The RIHS01 type hashes Iron advertises must equal what rosidl computes, or a stock ROS 2
//! peer on rmw_zenoh never matches our endpoints. The golden values come from an independent
//! hasher (PyPI zenoh-ros2-sdk) via tests/interop/golden_hashes.py.

use std::collections::BTreeMap;

use hiroz::{MessageTypeInfo, ServiceTypeInfo, action::ZAction, entity::TypeInfo};
use iron::{
    interfaces::{self, AolTask, lifecycle, rosout},
    spine::control::action::cancel_goal_type_info,
};

fn golden() -> BTreeMap<String, String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/interop/golden_type_hashes.json"
    );
    let text = std::fs::read_to_string(path).expect("golden hashes file");
    serde_json::from_str(&text).expect("golden hashes are a JSON object")
}

fn check(golden: &BTreeMap<String, String>, name: &str, info: TypeInfo, bad: &mut Vec<String>) {
    let ours = info.hash.to_rihs_string();
    match golden.get(name) {
        Some(g) if *g == ours => {}
        Some(g) => bad.push(format!("{name}: we advertise {ours}, rosidl computes {g}")),
        None => bad.push(format!(
            "{name}: no golden value (regenerate golden_type_hashes.json)"
        )),
    }
}

#[test]
fn advertised_hashes_match_an_independent_rosidl_hasher() {
    let g = golden();
    let mut bad = Vec::new();
    // Our messages and services.
    check(
        &g,
        "iron/msg/InboxMessage",
        interfaces::InboxMessage::type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/msg/SessionControl",
        interfaces::SessionControl::type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/msg/Interjection",
        interfaces::Interjection::type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/msg/Question",
        interfaces::Question::type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/msg/Answer",
        interfaces::Answer::type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/msg/GoalRejection",
        interfaces::GoalRejection::type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/srv/ToolCall",
        interfaces::ToolCall::service_type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/srv/SourceState",
        interfaces::SourceState::service_type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/srv/DecideHunks",
        interfaces::DecideHunks::service_type_info(),
        &mut bad,
    );
    // The action's endpoints, as the action server and client declare them.
    check(
        &g,
        "iron/action/AolTask_SendGoal",
        AolTask::send_goal_type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/action/AolTask_GetResult",
        AolTask::get_result_type_info(),
        &mut bad,
    );
    check(
        &g,
        "iron/action/AolTask_FeedbackMessage",
        AolTask::feedback_type_info(),
        &mut bad,
    );
    check(
        &g,
        "action_msgs/msg/GoalStatusArray",
        AolTask::status_type_info(),
        &mut bad,
    );
    check(
        &g,
        "action_msgs/srv/CancelGoal",
        cancel_goal_type_info::<AolTask>(),
        &mut bad,
    );
    // The lifecycle services and the transition event.
    use hiroz_msgs::lifecycle_msgs::srv;
    check(
        &g,
        "lifecycle_msgs/srv/ChangeState",
        srv::ChangeState::service_type_info(),
        &mut bad,
    );
    check(
        &g,
        "lifecycle_msgs/srv/GetState",
        srv::GetState::service_type_info(),
        &mut bad,
    );
    check(
        &g,
        "lifecycle_msgs/srv/GetAvailableStates",
        srv::GetAvailableStates::service_type_info(),
        &mut bad,
    );
    check(
        &g,
        "lifecycle_msgs/srv/GetAvailableTransitions",
        srv::GetAvailableTransitions::service_type_info(),
        &mut bad,
    );
    check(
        &g,
        "lifecycle_msgs/msg/TransitionEvent",
        lifecycle::TransitionEvent::type_info(),
        &mut bad,
    );
    // The /rosout record a node publishes when a transition fails (Jazzy's hash:
    // RIHS01_e28ce254…, what a stock rmw_zenoh node advertises for /rosout).
    check(
        &g,
        "rcl_interfaces/msg/Log",
        rosout::Log::type_info(),
        &mut bad,
    );
    assert!(bad.is_empty(), "type hash mismatches:\n{}", bad.join("\n"));
}

#[test]
fn hiroz_codegen_cancel_goal_hash_is_still_wrong_so_the_override_stays_needed() {
    // If a hiroz upgrade fixes this, drop the override in spine::control::action.
    let g = golden();
    assert_ne!(
        Some(&AolTask::cancel_goal_type_info().hash.to_rihs_string()),
        g.get("action_msgs/srv/CancelGoal")
    );
}
