//! The view layer: what people see of a running system. Log shipping ([`ship`]): every
//! process's output to its terminal and to the log plane, read back by `iron logs`; the
//! console node ([`console`]): `/metrics` today, behind the deployment's token.

pub mod console;
pub mod otlp;
pub mod overview;
pub mod ship;
