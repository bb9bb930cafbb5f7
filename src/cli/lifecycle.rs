//! `iron lifecycle list|get|set`: managed nodes and their states, like `ros2 lifecycle`.
//!
//! A listing is checked against the nodes that should be there: those of `--launch`, else
//! those of the `iron up` running on this router (its `up.json`). A node that should be
//! there and is not on the graph, or that does not answer, makes the listing partial: it
//! is shown as such and the command fails, instead of printing a short list as if it were
//! all there is.

use std::{collections::BTreeSet, path::Path, time::Duration};

use futures_util::future::join_all;

use super::{CliError, LifecycleCommand, connect::connect};
use crate::{
    launch::{Plan, Running},
    spine::control::{ControlPlane, lifecycle::LifecycleClient},
};

/// Runs one `iron lifecycle` command.
pub(super) async fn run(
    cmd: LifecycleCommand,
    router: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    let (control, node) = connect(router, timeout).await?;
    match cmd {
        LifecycleCommand::List { launch } => {
            let expected = expected_nodes(launch.as_deref(), router)?;
            list(&control, &node, &expected, timeout).await
        }
        LifecycleCommand::Get { node: target } => {
            let client = LifecycleClient::new(&node, &target, timeout)?;
            let state = client.get_state().await?;
            println!("{state} [{}]", state.id());
            Ok(())
        }
        LifecycleCommand::Set {
            node: target,
            transition,
        } => {
            let client = LifecycleClient::watching(&node, &target, timeout)?;
            client.transition(&transition).await?;
            println!("Transitioning successful");
            Ok(())
        }
    }
}

/// The nodes a listing must show: those of the launch list given, else those of the
/// `iron up` running on `router`, else none known.
fn expected_nodes(launch: Option<&Path>, router: &str) -> Result<BTreeSet<String>, CliError> {
    if let Some(path) = launch {
        let plan = Plan::load(path)?;
        return Ok(plan.nodes.iter().map(|n| n.fqn()).collect());
    }
    let config = super::load_config()?;
    Ok(Running::find(&config.state_dir, router)
        .map(|r| r.nodes.into_iter().collect())
        .unwrap_or_default())
}

async fn list(
    control: &ControlPlane,
    node: &hiroz::node::ZNode,
    expected: &BTreeSet<String>,
    timeout: Duration,
) -> Result<(), CliError> {
    let (managed, settled) = discover_managed(control, expected, timeout).await;
    let states = join_all(managed.iter().map(|target| async move {
        let state = match LifecycleClient::new(node, target, timeout) {
            Ok(client) => client.get_state().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        (target, state)
    }))
    .await;
    let mut silent = Vec::new();
    for (target, state) in states {
        match state {
            Ok(state) => println!("{target}\t{state}"),
            Err(e) => {
                println!("{target}\t? ({e})");
                silent.push(target.clone());
            }
        }
    }
    let missing: Vec<&String> = expected.difference(&managed).collect();
    for target in &missing {
        println!("{target}\tmissing (not on the graph)");
    }
    if !settled {
        eprintln!(
            "note: the graph was still changing after {:.0} s; nodes that came or went meanwhile may be missing",
            timeout.as_secs_f64()
        );
    }
    if missing.is_empty() && silent.is_empty() {
        return Ok(());
    }
    let mut why = Vec::new();
    if !missing.is_empty() {
        why.push(format!(
            "{} of {} expected node(s) not on the graph",
            missing.len(),
            expected.len()
        ));
    }
    if !silent.is_empty() {
        why.push(format!("{} node(s) did not answer", silent.len()));
    }
    Err(CliError::Failed(format!(
        "partial listing: {}",
        why.join("; ")
    )))
}

/// The managed nodes (those offering `<node>/get_state`) on the graph, once every expected
/// one is there and the set has not changed for half a second, or `timeout` has passed.
/// Returns whether the set had stopped changing.
async fn discover_managed(
    control: &ControlPlane,
    expected: &BTreeSet<String>,
    timeout: Duration,
) -> (BTreeSet<String>, bool) {
    const STABLE_POLLS: u32 = 5;
    let graph = control.context().graph();
    let until = tokio::time::Instant::now() + timeout;
    let mut seen = BTreeSet::new();
    let mut stable = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now: BTreeSet<String> = graph
            .get_service_names_and_types()
            .into_iter()
            .filter(|(name, ty)| name.ends_with("/get_state") && ty.contains("GetState"))
            .map(|(name, _)| name.trim_end_matches("/get_state").to_string())
            .collect();
        stable = if now == seen { stable + 1 } else { 0 };
        seen = now;
        let settled = stable >= STABLE_POLLS && expected.is_subset(&seen);
        if settled || tokio::time::Instant::now() >= until {
            return (seen, settled || stable >= STABLE_POLLS);
        }
    }
}
