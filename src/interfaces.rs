//! Rust types generated at build time from the ROS 2 interface files in `msg/`, `srv/` and
//! `action/` (and the lifecycle_msgs and rcl_interfaces messages in `ros/overrides/`), with their
//! RIHS01 hashes.

#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    non_snake_case,
    non_camel_case_types,
    unused,
    unexpected_cfgs
)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/generated.rs"));
}

pub use generated::ros::iron::{
    Answer, AolTaskFeedback, AolTaskGoal, AolTaskResult, DecideHunksRequest, DecideHunksResponse,
    EmbedRequest, EmbedResponse, GoalRejection, InboxMessage, Interjection, Question,
    SessionControl, SourceStateRequest, SourceStateResponse, ToolCallRequest, ToolCallResponse,
    action::AolTask, srv::DecideHunks, srv::Embed, srv::SourceState, srv::ToolCall,
};

/// rcl_interfaces' Log (the type of `/rosout`) as ROS 2 Jazzy defines it.
pub mod rosout {
    pub use super::generated::ros::rcl_interfaces::Log;
}

/// lifecycle_msgs messages as ROS 2 Jazzy defines them.
pub mod lifecycle {
    pub use super::generated::ros::lifecycle_msgs::{State, Transition, TransitionEvent};
}
