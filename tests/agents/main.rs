//! Integration tests of agent folders: the catalog compiler, shipped meshes, `iron new`: one test binary, one module per file.

#[path = "../support/mod.rs"]
mod support;

mod aem_bad_corpus;
mod catalog_output;
mod new_agents;
mod shipped_meshes;
mod shipped_tool_meshes;
