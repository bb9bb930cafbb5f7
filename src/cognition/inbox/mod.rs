//! The inbox (`/iron/inbox`): zero model calls. Every message on `/iron/raw_inbox` is written to
//! a durable queue first, its turn goes to the log, and it is handed to the engine as an
//! `AolTask` goal, in arrival order. When the engine is down or not active the queue simply
//! grows and drains once it is back. Sessions (`source:user_id`) can be stuck to one expert by
//! the engine (`/iron/session_control`); their messages then skip routing.

mod node;
pub mod store;

pub use node::{InboxDeps, InboxNode, InboxOptions};
