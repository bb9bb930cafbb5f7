//! Cognition: the inbox (zero model calls), the engine (routing, delegation, judgement,
//! delivery) and the per-task experts.

pub mod inbox;
