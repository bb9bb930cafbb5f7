//! The tools layer: MCP clients (through `rmcp`), the per-expert tool manager, gate 1
//! (clearance, at call time) and gate 2 (the path guard), names for models, paste-in
//! server configuration, the probe that fills `tool_manifest.json`, and the events every
//! decision produces, and both ends of `iron/srv/ToolCall` for `native`/`remote` servers
//! (with the delivery bridge as the shipped native server). Uses the layers below it.

pub mod caller;
pub mod client;
pub mod delivery;
pub mod env;
mod error;
pub mod events;
pub mod import;
mod manager;
pub mod names;
pub mod packages;
pub mod paths;
pub mod probe;
pub mod redact;
pub mod remote;
pub mod roots;
pub mod ros;
pub mod webhooks;

pub use caller::CallerKey;
pub use client::{Confine, LaunchSpec, LiveTool, McpClient};
pub use error::{DenialReason, Gate, GateDenial, ToolError};
pub use events::{MemoryEvents, RecordError, ToolEvent, ToolEventKind, ToolEvents, ToolOutcome};
pub use manager::{CallContext, ManagerError, ManagerSetup, ModelTool, ToolManager, ToolOutput};
pub use names::{ToolNames, ToolRef};
pub use paths::PathPolicy;
pub use remote::{RemoteCaller, RemoteServer, RemoteTools};
pub use ros::{Bridge, RosTools, serve_bridge};
