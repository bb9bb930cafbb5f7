//! The engine (`/iron/engine`): the action server `/iron/engine/task`. For each goal it checks
//! the request against the catalog, reads what memory knows (recent turns, relevant facts, the
//! experts' records), routes it (or takes the goal's `domain` as given), runs it
//! on a freshly spawned expert process, judges the result, delivers the reply through the
//! mesh's declared delivery channel (a tool call or the terminal, never a model call), and
//! writes each step to the log with a `cause` chain back to the inbound turn.

mod background;
mod node;
mod validate;

pub use background::Background;
pub use node::{EngineDeps, EngineNode, EngineOptions};
pub use validate::{Rejection, check_domain, validate};
