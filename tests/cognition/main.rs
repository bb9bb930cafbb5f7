//! Integration tests of cognition: the inbox, engine, experts, delegation, models, routing, operators: one test binary, one module per file.

#[path = "../support/mod.rs"]
mod support;
#[path = "../support_llm/mod.rs"]
mod support_llm;

mod agent_loop;
mod budget;
mod cognition_e2e;
mod context_e2e;
mod delegation_guards;
mod effect_rules;
mod engine_crash;
mod expert_crash;
mod expert_delegation;
mod inbox;
mod llm_anthropic_failover;
mod llm_openai;
mod operator;
mod resident_expert;
mod router;
mod routing_accuracy;
mod routing_e2e;
