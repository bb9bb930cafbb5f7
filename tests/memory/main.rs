//! Integration tests of memory: emit, the projector and workers, documents, recall, the local model, traces and log shipping: one test binary, one module per file.

#[path = "../support/mod.rs"]
mod support;
#[path = "../support_llm/mod.rs"]
mod support_llm;

mod local_model;
mod log_shipping;
mod memory;
mod memory_documents;
mod memory_up;
mod memory_workers;
mod model_service;
mod traces;
