//! Integration tests of the durable plane (both backends), the control plane, ROS 2 wire and packaging, the layer rule: one test binary, one module per file.

#[path = "../support/mod.rs"]
mod support;

mod cluster;
mod contract;
mod control_plane;
mod faults;
mod interop;
mod layers;
mod leases;
mod protocol_golden;
mod ros_packaging;
mod type_hashes;
