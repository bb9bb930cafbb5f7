//! The expert (`/iron/experts/<mesh>/<role>_<id>`): one process per task, built at `configure`
//! from its catalog entry (model, tools behind both gates, memory mounts, perception grants),
//! serving `<node>/task` while active, and shutting itself down after its idle lifetime.
//! Nothing of its memory lives in the process: each task recalls it and reads its sources
//! afresh ([`wake`]), and every step goes to the log.

mod adapters;
mod confined;
pub mod delegate;
mod deliver;
mod error;
mod node;
pub mod operator;
pub(crate) mod scratch;
mod task;
pub mod wake;

pub use error::StartError;
pub use node::{ExpertDeps, ExpertNode};
