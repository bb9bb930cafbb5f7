//! Integration tests of tools: MCP servers, the manager and its gates, bridges, confined servers: one test binary, one module per file.

#[path = "../support/mod.rs"]
mod support;
#[path = "../support_tools/mod.rs"]
mod support_tools;

mod confined_servers;
mod expert_tools_e2e;
mod gate_clearance;
mod gate_paths;
mod tool_bench;
mod tool_bridge;
mod tool_events;
mod tool_faults;
mod tool_import;
mod tool_names;
mod tool_probe;
mod tool_routing;
mod write_roots;
