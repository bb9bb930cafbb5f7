//! `iron up`: start, configure, activate and supervise the launch list; stop it in reverse.
//!
//! Supervision keeps every autostarted node active: a process that exits is started again, and
//! a live process that left `active` through error processing (its run or a callback failed,
//! as when the durable plane was away longer than its timeout) or never got there is
//! configured and activated again, both with the same backoff. A node a person takes out of
//! `active` with a transition that succeeds is left as they put it.

use std::time::{Duration, Instant};

use std::sync::Arc;

use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::{LaunchError, NodeSpec, Plan};
use crate::core::backoff::Backoff;
use crate::spine::control::{
    ControlConfig, ControlError, ControlPlane, ROUTER_ENV,
    lifecycle::{LifecycleClient, State},
    router::{Router, RouterConfig},
};
use crate::view::ship::{Shipper, Stream, tee};

/// Restart backoff: 1 s, doubling, at most 30 s; reset after a minute active.
const RESTART: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
const HEALTHY_AFTER: Duration = Duration::from_secs(60);
/// How long a node process may take to answer its lifecycle services after it starts.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(15);

struct Managed {
    spec: NodeSpec,
    child: Option<Child>,
    /// When the node was last brought to `active` (or its process started).
    up_since: Instant,
    backoff: Backoff,
    /// When to start the process again.
    restart_at: Option<Instant>,
    /// When to configure and activate the live process again.
    reactivate_at: Option<Instant>,
}

impl Managed {
    /// Schedules the next try at bringing the live process to `active`, after the backoff.
    fn reactivate_later(&mut self, why: &str) {
        let wait = self.backoff.fail();
        warn!(
            "{}: {why}; configuring and activating it again in {wait:?}",
            self.spec.fqn()
        );
        self.reactivate_at = Some(Instant::now() + wait);
    }

    /// After [`start`] failed: the process is started again if it did not start, and an
    /// autostarted one that did is brought to `active` again, each after the backoff.
    fn start_failed(&mut self, e: LaunchError) {
        error!("{e}");
        if self.child.is_none() {
            if self.spec.respawn {
                self.restart_at = Some(Instant::now() + self.backoff.fail());
            }
        } else if self.spec.autostart {
            self.reactivate_later("did not become active");
        }
    }
}

/// What every node process is started with.
pub struct Launch<'a> {
    /// The router endpoint every process uses.
    pub router: &'a str,
    /// Extra environment of every node.
    pub env: &'a [(String, String)],
    /// Where each node's output goes besides this terminal.
    pub shipper: &'a Shipper,
}

/// Runs the launch list until `shutdown` fires. With `start_router` a router is started at
/// `launch.router` first. Each node's stdout and stderr pass through here to this process's
/// own, unchanged, and are shipped to the log plane as that node's (`iron logs <node>`).
pub async fn up(
    plan: Plan,
    launch: Launch<'_>,
    start_router: bool,
    timeout: Duration,
    shutdown: CancellationToken,
) -> Result<(), LaunchError> {
    let router = launch.router;
    let router_task = if start_router {
        let r = Router::start(RouterConfig {
            listen: vec![router.to_string()],
            connect: Vec::new(),
        })
        .await?;
        info!("router {} listening on {router}", r.zid());
        let stop = CancellationToken::new();
        let handle = tokio::spawn(r.run(stop.clone()));
        Some((stop, handle))
    } else {
        None
    };

    let control = ControlPlane::connect(ControlConfig {
        router: router.to_string(),
        ..ControlConfig::from_env()?
    })
    .await?;
    let me = control.node(&format!("iron_up_{}", std::process::id()), "/")?;
    control.wait_for_router(&me, timeout).await?;

    // Each autostarted node's transition events: one that ends error processing in
    // `unconfigured` sends the node's index here.
    let (errored, mut errored_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut watches = Vec::new();
    let mut nodes = Vec::new();
    for (index, spec) in plan.nodes.into_iter().enumerate() {
        if spec.autostart {
            watches.push(watch_errors(&me, &spec.fqn(), index, errored.clone())?);
        }
        let mut m = Managed {
            spec,
            child: None,
            up_since: Instant::now(),
            backoff: RESTART,
            restart_at: None,
            reactivate_at: None,
        };
        if let Err(e) = start(&mut m, &launch, &me, timeout).await {
            m.start_failed(e);
        }
        nodes.push(m);
    }
    info!("up: {} node(s) running; Ctrl-C stops them", nodes.len());

    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(index) = errored_rx.recv() => {
                let m: &mut Managed = &mut nodes[index];
                if m.child.is_some() && m.reactivate_at.is_none() {
                    m.reactivate_later("fell to unconfigured after an error");
                }
                continue;
            }
            _ = tick.tick() => {}
        }
        for m in &mut nodes {
            supervise(m, &launch, &me, timeout).await;
        }
    }

    drop(watches);
    info!("stopping {} node(s) in reverse order", nodes.len());
    for m in nodes.iter_mut().rev() {
        stop(m, &me, timeout).await;
    }
    if let Some((stop, handle)) = router_task {
        stop.cancel();
        let _ = handle.await;
    }
    Ok(())
}

async fn supervise(
    m: &mut Managed,
    launch: &Launch<'_>,
    me: &hiroz::node::ZNode,
    timeout: Duration,
) {
    if let Some(child) = m.child.as_mut() {
        match child.try_wait() {
            Ok(None) => {
                if let Some(at) = m.reactivate_at {
                    if Instant::now() >= at {
                        m.reactivate_at = None;
                        if let Err(e) = bring_up(m, me, timeout).await {
                            error!("{e}");
                            m.reactivate_later("is still not active");
                        }
                    }
                } else if m.up_since.elapsed() > HEALTHY_AFTER {
                    m.backoff.reset();
                }
                return;
            }
            Ok(Some(status)) => {
                m.child = None;
                m.reactivate_at = None;
                if !m.spec.respawn {
                    warn!(
                        "{} exited ({status}); not restarting (respawn: false)",
                        m.spec.fqn()
                    );
                    return;
                }
                let wait = m.backoff.fail();
                warn!("{} exited ({status}); restarting in {wait:?}", m.spec.fqn());
                m.restart_at = Some(Instant::now() + wait);
            }
            Err(e) => {
                warn!("{}: cannot poll the process: {e}", m.spec.fqn());
                return;
            }
        }
    }
    if let Some(at) = m.restart_at
        && Instant::now() >= at
    {
        m.restart_at = None;
        if let Err(e) = start(m, launch, me, timeout).await {
            m.start_failed(e);
        }
    }
}

/// Passes the child's stdout and stderr through to this process's own, line by line, and
/// ships them as `node`'s output; each on a thread of its own until the child closes it.
fn ship_output(child: &mut Child, node: &str, shipper: &Shipper) {
    let node: Arc<str> = Arc::from(node);
    if let Some(out) = child.stdout.take().and_then(|o| o.into_owned_fd().ok()) {
        let (shipper, node) = (shipper.clone(), node.clone());
        std::thread::spawn(move || {
            tee(
                std::fs::File::from(out),
                std::io::stdout(),
                &shipper,
                &node,
                Stream::Stdout,
            )
        });
    }
    if let Some(err) = child.stderr.take().and_then(|e| e.into_owned_fd().ok()) {
        let (shipper, node) = (shipper.clone(), node.clone());
        std::thread::spawn(move || {
            tee(
                std::fs::File::from(err),
                std::io::stderr(),
                &shipper,
                &node,
                Stream::Stderr,
            )
        });
    }
}

/// Spawns the node process and, with autostart, configures and activates it.
async fn start(
    m: &mut Managed,
    launch: &Launch<'_>,
    me: &hiroz::node::ZNode,
    timeout: Duration,
) -> Result<(), LaunchError> {
    let exe = crate::core::exe::beside_current(&m.spec.executable);
    let mut cmd = Command::new(&exe);
    cmd.args(&m.spec.args)
        .args(m.spec.ros_args())
        .env(ROUTER_ENV, launch.router)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // Each node gets its own process group, so a terminal's Ctrl-C reaches `iron up` alone
    // and the nodes are stopped in order; if `iron up` dies, they get SIGTERM instead of
    // living on unsupervised.
    crate::core::exe::die_with_parent(&mut cmd, true);
    let mut child = cmd.spawn().map_err(|source| LaunchError::Spawn {
        executable: exe.clone(),
        source,
    })?;
    ship_output(&mut child, &m.spec.fqn(), launch.shipper);
    info!(
        "{}: started {} (pid {:?})",
        m.spec.fqn(),
        exe.display(),
        child.id()
    );
    m.child = Some(child);
    m.up_since = Instant::now();

    let fqn = m.spec.fqn();
    let node_err = |problem: String| LaunchError::Node {
        node: fqn.clone(),
        problem,
    };
    let state = LifecycleClient::new(me, &fqn, STARTUP_TIMEOUT)?
        .get_state()
        .await
        .map_err(|e| node_err(format!("did not come up: {e}")))?;
    if !m.spec.autostart {
        info!("{fqn}: {state}, waiting for a person to configure it");
        return Ok(());
    }
    bring_up(m, me, timeout).await
}

/// Takes the node's live process from where it is to `active`: configure (when unconfigured)
/// and activate.
async fn bring_up(
    m: &mut Managed,
    me: &hiroz::node::ZNode,
    timeout: Duration,
) -> Result<(), LaunchError> {
    let fqn = m.spec.fqn();
    let node_err = |problem: String| LaunchError::Node {
        node: fqn.clone(),
        problem,
    };
    let client = LifecycleClient::watching(me, &fqn, timeout)?;
    match client.activate().await {
        Ok(()) => {}
        Err(ControlError::Transition { reason, .. }) => {
            return Err(node_err(format!(
                "{reason}; the node stays {}",
                client.get_state().await?
            )));
        }
        Err(e) => return Err(e.into()),
    }
    m.up_since = Instant::now();
    info!("{fqn}: active");
    Ok(())
}

/// Subscribes to `fqn`'s transition events; one that ends error processing in
/// `unconfigured` sends `index` to `errored`.
fn watch_errors(
    me: &hiroz::node::ZNode,
    fqn: &str,
    index: usize,
    errored: tokio::sync::mpsc::UnboundedSender<usize>,
) -> Result<impl Sized + use<>, LaunchError> {
    use crate::interfaces::lifecycle::TransitionEvent;
    me.create_sub::<TransitionEvent>(&format!("{fqn}/transition_event"))
        .build_with_callback(move |e: TransitionEvent| {
            if e.start_state.id == State::ErrorProcessing.id()
                && e.goal_state.id == State::Unconfigured.id()
            {
                let _ = errored.send(index);
            }
        })
        .map_err(|source| {
            LaunchError::Control(ControlError::Declare {
                what: format!("subscriber on {fqn}/transition_event"),
                source,
            })
        })
}

/// Deactivates and shuts the node down through its lifecycle, then makes sure it exited.
async fn stop(m: &mut Managed, me: &hiroz::node::ZNode, timeout: Duration) {
    let Some(mut child) = m.child.take() else {
        return;
    };
    let fqn = m.spec.fqn();
    if let Ok(client) = LifecycleClient::new(me, &fqn, timeout) {
        match client.get_state().await {
            Ok(State::Active) => {
                if !client.set("deactivate").await.unwrap_or(false) {
                    warn!("{fqn}: deactivate failed");
                }
                let _ = client.set("shutdown").await;
            }
            Ok(State::Finalized) => {}
            Ok(_) => {
                let _ = client.set("shutdown").await;
            }
            Err(e) => warn!("{fqn}: no answer ({e}); terminating it"),
        }
    }
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => info!("{fqn}: exited ({status})"),
        _ => {
            warn!("{fqn}: still running after shutdown; killing it");
            let _ = child.kill().await;
        }
    }
}
