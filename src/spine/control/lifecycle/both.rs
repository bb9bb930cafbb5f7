//! Two managed nodes served as one ROS node: configured, activated, run, deactivated and
//! cleaned up together, in that order (the first, then the second). A process that takes on a
//! second duty of another layer (the jobs gateway also serves the workspace's review service)
//! is written as two [`ManagedNode`]s and served as [`Both`].

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::host::{CallbackError, ManagedNode, NodeContext, RunError};
use super::machine::State;

/// `A` and `B` as one managed node.
pub struct Both<A, B> {
    first: Arc<A>,
    second: Arc<B>,
}

impl<A, B> Both<A, B> {
    /// Serves `first` and `second` together.
    pub fn new(first: A, second: B) -> Self {
        Self {
            first: Arc::new(first),
            second: Arc::new(second),
        }
    }
}

impl<A: ManagedNode, B: ManagedNode> ManagedNode for Both<A, B> {
    type Deps = (Arc<A::Deps>, Arc<B::Deps>);

    async fn configure(&self, ctx: &NodeContext) -> Result<Self::Deps, CallbackError> {
        let a = Arc::new(self.first.configure(ctx).await?);
        let b = match self.second.configure(ctx).await {
            Ok(b) => Arc::new(b),
            Err(e) => {
                let _ = self.first.cleanup(a).await;
                return Err(e);
            }
        };
        Ok((a, b))
    }

    async fn activate(&self, deps: &Arc<Self::Deps>) -> Result<(), CallbackError> {
        self.first.activate(&deps.0).await?;
        self.second.activate(&deps.1).await
    }

    /// Runs both until `shutdown`; when one stops on its own, the other is stopped too and
    /// the first error (if any) is the node's.
    async fn run(
        self: Arc<Self>,
        deps: Arc<Self::Deps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let stop = shutdown.child_token();
        let a = self.first.clone().run(deps.0.clone(), stop.clone());
        let b = self.second.clone().run(deps.1.clone(), stop.clone());
        tokio::pin!(a, b);
        let (first_done, other) = tokio::select! {
            r = &mut a => (r, Side::Second),
            r = &mut b => (r, Side::First),
        };
        stop.cancel();
        let other_done = match other {
            Side::First => a.await,
            Side::Second => b.await,
        };
        first_done.and(other_done)
    }

    async fn deactivate(&self, deps: &Arc<Self::Deps>) -> Result<(), CallbackError> {
        let a = self.first.deactivate(&deps.0).await;
        let b = self.second.deactivate(&deps.1).await;
        a.and(b)
    }

    async fn cleanup(&self, deps: Arc<Self::Deps>) -> Result<(), CallbackError> {
        let a = self.first.cleanup(deps.0.clone()).await;
        let b = self.second.cleanup(deps.1.clone()).await;
        a.and(b)
    }

    async fn shutdown(&self, deps: Option<Arc<Self::Deps>>) -> Result<(), CallbackError> {
        let (a, b) = match deps {
            Some(d) => (Some(d.0.clone()), Some(d.1.clone())),
            None => (None, None),
        };
        let a = self.first.shutdown(a).await;
        let b = self.second.shutdown(b).await;
        a.and(b)
    }

    async fn on_error(&self, failed_in: State) -> Result<(), CallbackError> {
        let a = self.first.on_error(failed_in).await;
        let b = self.second.on_error(failed_in).await;
        a.and(b)
    }
}

enum Side {
    First,
    Second,
}
