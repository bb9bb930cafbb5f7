//! The view layer: what people see of a running system. Log shipping ([`ship`]): every
//! process's output to its terminal and to the log plane, read back by `iron logs`; the
//! console node ([`console`]): `/metrics` today, behind the deployment's token; one task's
//! history as a timeline ([`timeline`]), for `iron task show` and the console; the newsroom's
//! bulletins with their evidence ([`desk`]), for the console's Desk and `iron desk`.

pub mod console;
pub mod desk;
pub mod otlp;
pub mod overview;
pub mod ship;
pub mod timeline;
