//! The spine: how processes talk (control plane, ROS 2 on Zenoh) and how history is kept
//! (durable plane).

pub mod control;
pub mod durable;
