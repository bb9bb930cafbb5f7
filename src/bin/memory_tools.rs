//! The memory bridge node (`/iron/tools/memory`): the native tool server through which an
//! expert granted `memory/save_document` saves a file of its workspace or an allowed URL to
//! memory as a document.

use std::process::ExitCode;

use clap::Parser;
use iron::{cli::node::Start, memory::bridge::MemoryToolsNode};

/// Saves documents to memory for the experts granted memory/save_document: files in their
/// writable workspace, URLs only when IRON_DOCUMENT_URLS allows them.
#[derive(Debug, Parser)]
#[command(name = "memory_tools")]
struct Args {}

fn main() -> ExitCode {
    iron::cli::node::start(|_: Args| Ok(Start::new(MemoryToolsNode, "memory", "/iron/tools")))
}
