//! The kernel: ids, envelopes, event kinds, the effect rules, traces, and the ports (traits) the
//! other layers code against. It depends on nothing else in the crate.

pub mod backoff;
pub mod config;
pub mod durable;
pub mod effect;
pub mod envelope;
pub mod event_kind;
pub mod exe;
pub mod fs;
pub mod identity;
pub mod ids;
pub mod secrets;
pub mod stats;
pub mod text;
pub mod token;
pub mod trace;
