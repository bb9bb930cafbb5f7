//! Integration tests of the workspace: scratches, the sandbox, hunks and their review: one test binary, one module per file.

#[path = "../support/mod.rs"]
mod support;
#[path = "../support_tools/mod.rs"]
mod support_tools;

mod hunk_review;
mod sandbox_escapes;
mod workspace;
mod workspace_review;
