//! The action client: send a goal, follow its feedback, wait for its result, cancel it.
//! Every wait is bounded, and a wait for a result ends early when the server leaves the graph.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use hiroz::{
    Builder,
    action::{
        GoalId, GoalInfo, GoalStatus, Time, ZAction,
        messages::{
            CancelGoalServiceRequest, CancelService, FeedbackMessage, GetResultRequest,
            GoalService, ResultService, SendGoalRequest,
        },
    },
    entity::EndpointKind,
    graph::Graph,
    node::ZNode,
    pubsub::ZSub,
    service::ZClient,
};
use tokio::sync::{Notify, mpsc};
use zenoh::Wait;

use super::{CancelCode, Endpoints, Refusal, cancel_goal_type_info, rejections_qos};
use crate::{
    interfaces::GoalRejection,
    spine::control::{
        ControlError,
        lifecycle::client::{classify, retry},
    },
};

type Routes<F> = Arc<Mutex<HashMap<GoalId, mpsc::UnboundedSender<F>>>>;

/// How long a rejected goal waits for its server's published reason, when the server
/// publishes reasons. The server publishes before it answers, so this is rarely waited out.
pub const REASON_WAIT: Duration = Duration::from_secs(2);

/// How long a server seen in the graph must stay absent from it (while this side is still
/// connected to a router) before a wait for a result gives up on it. Covers a token that
/// blinks out and back while a session reconnects.
pub const SERVER_GONE_AFTER: Duration = Duration::from_secs(2);

/// Refusals published for the goals this client is sending, by goal id (`None` until one
/// arrives).
#[derive(Default)]
struct Refusals {
    waiting: Mutex<HashMap<String, Option<Refusal>>>,
    arrived: Notify,
}

/// The subscription to a server's refusals (see [`ActionClient::with_rejections`]).
struct RejectionWatch {
    topic: String,
    refusals: Arc<Refusals>,
    _sub: ZSub<GoalRejection, (), <GoalRejection as hiroz::msg::ZMessage>::Serdes>,
}

/// A client of one action.
pub struct ActionClient<A: ZAction> {
    name: String,
    get_result_name: String,
    send_goal: ZClient<GoalService<A>>,
    get_result: ZClient<ResultService<A>>,
    cancel: ZClient<CancelService<A>>,
    routes: Routes<A::Feedback>,
    _feedback: ZSub<FeedbackMessage<A>, (), <FeedbackMessage<A> as hiroz::msg::ZMessage>::Serdes>,
    graph: Arc<Graph>,
    session: Arc<zenoh::Session>,
    rejections: Option<RejectionWatch>,
}

/// How a goal ended.
#[derive(Debug, Clone)]
pub struct GoalOutcome<R> {
    pub status: GoalStatus,
    pub result: R,
}

/// An accepted goal: its id and its feedback, in order.
pub struct SentGoal<F> {
    pub id: GoalId,
    pub feedback: mpsc::UnboundedReceiver<F>,
}

impl<A: ZAction> ActionClient<A> {
    /// A client of the action `name` (absolute, e.g. `/iron/engine/task`).
    pub fn new(node: &ZNode, name: &str) -> Result<Self, ControlError> {
        let ep = Endpoints::of(name);
        let declare = |what: &str| {
            let what = format!("client of {what}");
            move |source| ControlError::Declare { what, source }
        };
        let routes: Routes<A::Feedback> = Arc::default();
        let r = routes.clone();
        let feedback = node
            .create_sub_impl::<FeedbackMessage<A>>(&ep.feedback, Some(A::feedback_type_info()))
            .build_with_callback(move |msg: FeedbackMessage<A>| {
                let routes = r.lock().expect("feedback routes lock");
                if let Some(tx) = routes.get(&msg.goal_id) {
                    let _ = tx.send(msg.feedback);
                }
            })
            .map_err(declare(&ep.feedback))?;
        Ok(Self {
            send_goal: node
                .create_client_impl::<GoalService<A>>(&ep.send_goal, Some(A::send_goal_type_info()))
                .build()
                .map_err(declare(&ep.send_goal))?,
            get_result: node
                .create_client_impl::<ResultService<A>>(
                    &ep.get_result,
                    Some(A::get_result_type_info()),
                )
                .build()
                .map_err(declare(&ep.get_result))?,
            cancel: node
                .create_client_impl::<CancelService<A>>(
                    &ep.cancel_goal,
                    Some(cancel_goal_type_info::<A>()),
                )
                .build()
                .map_err(declare(&ep.cancel_goal))?,
            routes,
            _feedback: feedback,
            name: name.to_string(),
            get_result_name: ep.get_result,
            graph: node.graph().clone(),
            session: node.session().clone(),
            rejections: None,
        })
    }

    /// Also listens on the server's `<action>/rejections`, so a rejected goal's error carries
    /// the reason the server published (an Iron server does when it was told to, like the
    /// engine). Against a server that publishes nothing the error just says "rejected".
    pub fn with_rejections(mut self, node: &ZNode) -> Result<Self, ControlError> {
        let topic = Endpoints::of(&self.name).rejections;
        let refusals = Arc::new(Refusals::default());
        let r = refusals.clone();
        let sub = node
            .create_sub::<GoalRejection>(&topic)
            .with_qos(rejections_qos())
            .build_with_callback(move |msg: GoalRejection| {
                let mut waiting = r.waiting.lock().expect("refusals lock");
                // Only goals of this client are kept: the history of other clients' goals
                // (transient local) passes by.
                if let Some(slot) = waiting.get_mut(&msg.goal_id) {
                    *slot = Some(Refusal {
                        code: msg.code,
                        reason: msg.reason,
                    });
                    r.arrived.notify_waiters();
                }
            })
            .map_err(|source| ControlError::Declare {
                what: format!("subscription to {topic}"),
                source,
            })?;
        self.rejections = Some(RejectionWatch {
            topic,
            refusals,
            _sub: sub,
        });
        Ok(self)
    }

    /// Sends a goal and waits (at most `timeout`, retrying while the server is not yet
    /// reachable) for the server's decision. A rejected goal is an error.
    pub async fn send(
        &self,
        goal: A::Goal,
        timeout: Duration,
    ) -> Result<SentGoal<A::Feedback>, ControlError> {
        self.send_as(GoalId::new(), goal, timeout).await
    }

    /// Runs a goal to its end without following feedback, in about one round trip:
    /// `get_result` goes out together with `send_goal` (an Iron server waits briefly for the
    /// goal; with any other server an early `STATUS_UNKNOWN` is simply asked again).
    pub async fn run(
        &self,
        goal: A::Goal,
        timeout: Duration,
    ) -> Result<GoalOutcome<A::Result>, ControlError> {
        let id = GoalId::new();
        let (sent, early) = tokio::join!(self.send_as(id, goal, timeout), self.result(id, timeout));
        sent?;
        match early {
            Ok(outcome) if outcome.status != GoalStatus::Unknown => Ok(outcome),
            _ => self.result(id, timeout).await,
        }
    }

    /// [`send`](Self::send) under a goal id the caller chose (to resend a goal it may have
    /// sent before: the server refuses an id it knows or is deciding).
    pub async fn send_as(
        &self,
        id: GoalId,
        goal: A::Goal,
        timeout: Duration,
    ) -> Result<SentGoal<A::Feedback>, ControlError> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.routes
            .lock()
            .expect("feedback routes lock")
            .insert(id, tx);
        let req = SendGoalRequest::<A> { goal_id: id, goal };
        let what = format!("{}/_action/send_goal", self.name);
        if let Some(w) = &self.rejections {
            w.refusals
                .waiting
                .lock()
                .expect("refusals lock")
                .insert(id.to_string(), None);
        }
        // Resending is safe: the server refuses a goal id it already knows.
        let resp = retry(&what, timeout, || {
            self.send_goal.call_with_timeout(&req, timeout)
        })
        .await;
        let refusal = match &resp {
            Ok(r) if !r.accepted => self.refusal_of(id).await,
            _ => None,
        };
        if let Some(w) = &self.rejections {
            w.refusals
                .waiting
                .lock()
                .expect("refusals lock")
                .remove(&id.to_string());
        }
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                self.forget(id);
                return Err(e);
            }
        };
        if !resp.accepted {
            self.forget(id);
            let detail = match (&refusal, &self.rejections) {
                (Some(r), _) => format!("the goal was rejected: {} ({})", r.reason, r.code),
                (None, Some(w)) => format!(
                    "the goal was rejected (no reason arrived on {} within {REASON_WAIT:?})",
                    w.topic
                ),
                (None, None) => "the goal was rejected".into(),
            };
            return Err(ControlError::Rejected {
                what,
                code: refusal.map(|r| r.code),
                detail,
            });
        }
        Ok(SentGoal { id, feedback: rx })
    }

    /// The reason the server published for refusing `id`: at once when it came before the
    /// response (the usual order), else waited for up to [`REASON_WAIT`] when a publisher of
    /// reasons is on the graph. `None` without [`with_rejections`](Self::with_rejections).
    async fn refusal_of(&self, id: GoalId) -> Option<Refusal> {
        let w = self.rejections.as_ref()?;
        let key = id.to_string();
        let deadline = tokio::time::Instant::now() + REASON_WAIT;
        loop {
            let arrived = w.refusals.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(Some(r)) = w.refusals.waiting.lock().expect("refusals lock").get(&key) {
                return Some(r.clone());
            }
            if self.graph.count(EndpointKind::Publisher, &w.topic) == 0 {
                return None;
            }
            tokio::select! {
                _ = arrived => {}
                _ = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    /// Waits up to `timeout` for the goal's result. Zenoh ends a query that gets no reply
    /// within its default query timeout (10 s) while the goal is still running; `get_result`
    /// is idempotent, so it is asked again until the result comes or `timeout` passes.
    /// Meanwhile the server's `get_result` service is watched in the graph (the liveliness
    /// token every rmw_zenoh endpoint declares): once a server that was seen has been gone
    /// for [`SERVER_GONE_AFTER`], the wait ends with [`ControlError::Gone`] instead of
    /// running to `timeout`.
    pub async fn result(
        &self,
        id: GoalId,
        timeout: Duration,
    ) -> Result<GoalOutcome<A::Result>, ControlError> {
        let what = format!("{}/_action/get_result", self.name);
        let request = GetResultRequest { goal_id: id };
        let asked = retry(&what, timeout, || {
            self.get_result.call_with_timeout(&request, timeout)
        });
        let resp = tokio::select! {
            resp = asked => resp,
            () = self.server_gone(SERVER_GONE_AFTER) => Err(ControlError::Gone {
                what: format!("the action server {}", self.name),
                during: format!("while goal {id} was running"),
            }),
        };
        self.forget(id);
        let resp = resp?;
        let status = GoalStatus::try_from(resp.status)
            .map_err(|detail| ControlError::Protocol { what, detail })?;
        Ok(GoalOutcome {
            status,
            result: resp.result,
        })
    }

    /// Asks the server to cancel `id` (or every goal, with `None`).
    pub async fn cancel(
        &self,
        id: Option<GoalId>,
        timeout: Duration,
    ) -> Result<(CancelCode, Vec<GoalId>), ControlError> {
        let req = CancelGoalServiceRequest {
            goal_info: GoalInfo {
                goal_id: id.unwrap_or(GoalId::from_bytes([0; 16])),
                stamp: Time { sec: 0, nanosec: 0 },
            },
        };
        let what = format!("{}/_action/cancel_goal", self.name);
        let resp = self
            .cancel
            .call_with_timeout(&req, timeout)
            .await
            .map_err(|source| classify(&what, timeout, source))?;
        let code = match resp.return_code {
            0 => CancelCode::None,
            1 => CancelCode::Rejected,
            2 => CancelCode::UnknownGoalId,
            3 => CancelCode::GoalTerminated,
            other => {
                return Err(ControlError::Protocol {
                    what,
                    detail: format!("unknown return code {other}"),
                });
            }
        };
        Ok((
            code,
            resp.goals_canceling
                .into_iter()
                .map(|g| g.goal_id)
                .collect(),
        ))
    }

    /// Resolves once the server's `get_result` service, after being seen in the graph, has
    /// been absent for `grace` while this session is connected to a router (without a router
    /// the graph says nothing about the server). Never resolves if no server was ever seen:
    /// the caller's own deadline still bounds the wait.
    async fn server_gone(&self, grace: Duration) {
        const RECHECK: Duration = Duration::from_millis(250);
        let mut seen = false;
        let mut absent_since: Option<tokio::time::Instant> = None;
        loop {
            let changed = self.graph.change_notify.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let present = self
                .graph
                .count(EndpointKind::Service, &self.get_result_name)
                > 0;
            let connected = self.session.info().routers_zid().wait().next().is_some();
            if present {
                seen = true;
                absent_since = None;
            } else if seen && connected {
                let since = *absent_since.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() >= grace {
                    return;
                }
            } else {
                absent_since = None;
            }
            // The graph wakes us on every change; the recheck counts the grace down.
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep(RECHECK) => {}
            }
        }
    }

    fn forget(&self, id: GoalId) {
        self.routes
            .lock()
            .expect("feedback routes lock")
            .remove(&id);
    }
}
