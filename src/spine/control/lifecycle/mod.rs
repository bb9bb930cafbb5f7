//! Managed (lifecycle) nodes: the state machine, the host that serves the five lifecycle
//! services and `transition_event` for a node written once as [`ManagedNode`] (and logs why a
//! transition failed on `/rosout`), and the client that drives any managed node, ours or a
//! stock ROS 2 one.

mod both;
pub mod client;
mod host;
pub mod machine;
mod msgs;
pub mod rosout;

pub use both::Both;
pub use client::LifecycleClient;
pub use host::{CallbackError, HostOptions, ManagedNode, NodeContext, RunError, qualified, serve};
pub use machine::{Outcome, State, Transition};
