//! The kernel: pure rules and types every other layer codes against. Depends on nothing else
//! in the crate.

pub mod effect;
