//! `iron bench catalog`: the build time of a generated mesh of many experts, each with tools,
//! memory, peers and a capabilities file, so a build exercises every resolution step.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::BenchError;

const BENCH_AEM: &str = r#"---
name: bench
status: active
description: Generated mesh for the catalog benchmark.
defaults:
  model: scripted
  clearance: read
servers:
  files:
    transport: local
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "./workspace/bench"]
    tools: [read_text_file, list_directory, search_files, write_file, edit_file]
  clock:
    transport: local
    command: uvx
    args: [mcp-server-time@2026.10.19]
    tools: [get_current_time]
tools: [files/read_text_file, files/list_directory, clock/get_current_time]
delegation:
  scope: all
---

A generated mesh.
"#;

/// Writes a mesh called `bench` with `n` experts under `dir` (which becomes an `aem`
/// directory) and returns `dir`. Every third expert has read-write clearance and a write
/// tool; every expert declares episodic and semantic memory and reaches every other by
/// `delegation: {scope: all}`.
pub fn generate_mesh(dir: &Path, n: usize) -> io::Result<PathBuf> {
    let mesh = dir.join("bench");
    fs::create_dir_all(mesh.join("skills"))?;
    fs::write(mesh.join("AEM.md"), BENCH_AEM)?;
    for i in 0..n {
        let role = format!("expert-{i:05}");
        let skill = mesh.join("skills").join(&role);
        fs::create_dir_all(&skill)?;
        let mut text = String::new();
        let _ = write!(
            text,
            "---\nname: {role}\nidentity: Generated expert number {i}.\n"
        );
        let _ = write!(
            text,
            "description: Answers questions about topic {i} for the benchmark.\nmemory:\n"
        );
        text.push_str("  - kind: episodic\n    scope: own\n    access: read-write\n");
        text.push_str("  - kind: semantic\n    scope: mesh\n    access: read\n---\n\n");
        let _ = writeln!(
            text,
            "Answer questions about topic {i}. Cite what you read and say what you could not check."
        );
        fs::write(skill.join("SKILL.md"), text)?;
        let caps = if i % 3 == 0 {
            "---\nclearance: read-write\ntools:\n  add: [files/write_file, files/search_files]\n---\n"
        } else {
            "---\ntools:\n  add: [files/search_files]\n---\n"
        };
        fs::write(skill.join("capabilities.md"), caps)?;
    }
    Ok(dir.to_path_buf())
}

/// `iron bench catalog`: generates a mesh of `experts` experts in a temporary directory and
/// times one compile of it and the writing of its files (`catalog.json`, the tool manifest),
/// as `iron catalog build` does; prints the catalog's size.
pub fn run(experts: usize) -> Result<(), BenchError> {
    super::stats::print_machine("catalog");
    let io = |what: &str| {
        let what = what.to_string();
        move |source| BenchError::Io { what, source }
    };
    let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
    generate_mesh(dir.path(), experts).map_err(io("generating the mesh"))?;
    let started = Instant::now();
    let catalog = crate::aem::compile(dir.path())?;
    let compiled = started.elapsed();
    let out = dir.path().join("out");
    let written = crate::aem::write_catalog(&catalog, &out).map_err(io("writing the catalog"))?;
    let took = started.elapsed();
    let size = std::fs::metadata(&written)
        .map_err(io("reading the catalog's size"))?
        .len();
    if catalog.experts.len() != experts {
        return Err(BenchError::Failed(format!(
            "compiled {} experts, expected {experts}",
            catalog.experts.len()
        )));
    }
    println!(
        "bench catalog.build_and_write_{experts} {:.1} ms (compile {:.1} ms)",
        took.as_secs_f64() * 1000.0,
        compiled.as_secs_f64() * 1000.0
    );
    println!(
        "bench catalog.size_{experts} {:.1} KiB",
        size as f64 / 1024.0
    );
    Ok(())
}
