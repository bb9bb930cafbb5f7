//! Rust flows and the registry that names them. The registry is a value passed to the runner,
//! never a global.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::ctx::{Ctx, Exit};

/// What a flow's `run` returns.
pub type FlowFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, Exit>> + Send + 'a>>;

/// A flow: `run(ctx, input)`. Everything non-deterministic goes inside `ctx.step`; code
/// between steps computes only from the input and earlier results.
pub trait Flow: Send + Sync + 'static {
    /// Runs (or replays) the flow.
    fn run<'a>(&'a self, ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a>;
}

impl<F> Flow for F
where
    F: for<'a> Fn(&'a mut Ctx, Value) -> FlowFuture<'a> + Send + Sync + 'static,
{
    fn run<'a>(&'a self, ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
        self(ctx, input)
    }
}

/// The Rust flows a runner knows, by `<mesh>/<role>/<flow>`.
#[derive(Clone, Default)]
pub struct Registry {
    flows: BTreeMap<String, Arc<dyn Flow>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the flow `<mesh>/<role>/<flow>`; `*/*/<flow>` names a built-in flow
    /// any role of any mesh may start (see [`Registry::builtin`]).
    pub fn register(&mut self, name: &str, flow: impl Flow) -> &mut Self {
        self.flows.insert(name.to_string(), Arc::new(flow));
        self
    }

    /// The flow named `<mesh>/<role>/<flow>`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Flow>> {
        self.flows.get(name).cloned()
    }

    /// The built-in flow (`*/*/<flow>`) for `<mesh>/<role>/<flow>`.
    pub fn builtin(&self, name: &str) -> Option<Arc<dyn Flow>> {
        let flow = name.rsplit('/').next()?;
        self.flows.get(&format!("*/*/{flow}")).cloned()
    }

    /// Registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.flows.keys().map(String::as_str)
    }
}
