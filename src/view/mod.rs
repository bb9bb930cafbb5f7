//! The view layer: what people see of a running system. Today, log shipping ([`ship`]):
//! every process's output to its terminal and to the log plane, read back by `iron logs`.

pub mod ship;
