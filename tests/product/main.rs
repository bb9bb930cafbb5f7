//! Integration tests of the product as a person meets it: iron up, the newsroom, the console, task history, eval, benches, feeds: one test binary, one module per file.

#[path = "../support/mod.rs"]
mod support;
#[path = "../support_llm/mod.rs"]
mod support_llm;

mod bad_input;
mod benches;
mod console;
mod console_ui;
mod eval_cli;
mod feed_health;
mod newsroom;
mod perception;
mod profile_script;
mod task_history;
mod up;
