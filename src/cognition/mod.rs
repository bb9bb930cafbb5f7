//! Cognition: the inbox (zero model calls), the engine (routing, delegation, judgement,
//! delivery) and the per-task experts.

pub mod agent;
pub mod delegation;
pub mod delivery;
pub mod engine;
pub mod expert;
pub mod inbox;
pub mod replay;
