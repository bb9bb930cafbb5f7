//! `iron bench control`: what the control plane's action round trip costs against the raw Zenoh
//! query it is built on.

use std::time::{Duration, Instant};

use super::BenchError;
use super::stats::{BenchEnv, Figures, PrivateRouter, beside_iron, pct, us};
use crate::{
    interfaces::{AolTask, AolTaskGoal},
    spine::control::{
        ControlPlane,
        action::{ActionClient, GoalStatus},
        demo::echo_key,
        lifecycle::LifecycleClient,
    },
};

/// `iron bench control`: an AolTask round trip for an empty goal (send_goal with get_result
/// pipelined, see `ActionClient::run`) against a raw Zenoh query round trip, both between
/// this process and one demo node process, interleaved so machine noise hits both alike.
pub async fn run(iterations: usize, timeout: Duration) -> Result<(), BenchError> {
    super::stats::print_machine("control");
    let router = PrivateRouter::start().await?;
    let endpoint = router.endpoint.clone();
    let exe = beside_iron("demo_node")?;
    let mut demo = BenchEnv::new()
        .router(&endpoint)
        .command(&exe)
        .args([
            "--ros-args",
            "-r",
            "__node:=bench",
            "-r",
            "__ns:=/iron",
            "--log-level",
            "warn",
        ])
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| BenchError::Io {
            what: format!("starting {}", exe.display()),
            source,
        })?;

    let (_control, node) = ControlPlane::client(&endpoint, timeout).await?;
    let life = LifecycleClient::watching(&node, "/iron/bench", timeout * 3)?;
    life.activate().await?;
    let actions = ActionClient::<AolTask>::new(&node, "/iron/bench/task")?;
    let session = node.session().clone();
    let key = echo_key("/iron/bench");

    let goal_round_trip = || async {
        let started = Instant::now();
        let outcome = actions.run(AolTaskGoal::default(), timeout).await?;
        if outcome.status != GoalStatus::Succeeded {
            return Err(BenchError::Failed(format!(
                "goal ended {:?}",
                outcome.status
            )));
        }
        Ok::<_, BenchError>(started.elapsed())
    };
    let query_round_trip = || async {
        let started = Instant::now();
        let replies = session
            .get(&key)
            .payload(vec![0u8; 16])
            .timeout(timeout)
            .await
            .map_err(|source| crate::spine::control::ControlError::Call {
                what: format!("query {key}"),
                source,
            })?;
        match replies.recv_async().await {
            Ok(reply) if reply.result().is_ok() => Ok::<_, BenchError>(started.elapsed()),
            _ => Err(BenchError::Failed(format!("no echo from {key}"))),
        }
    };

    // Warm up both paths (routing tables, connections, allocations).
    for _ in 0..iterations.min(200) {
        goal_round_trip().await?;
        query_round_trip().await?;
    }
    let mut goals = Vec::with_capacity(iterations);
    let mut queries = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        goals.push(goal_round_trip().await?);
        queries.push(query_round_trip().await?);
    }
    goals.sort();
    queries.sort();

    let (g50, g99, q50, q99) = (
        pct(&goals, 50.0),
        pct(&goals, 99.0),
        pct(&queries, 50.0),
        pct(&queries, 99.0),
    );
    let mut figs = Figures::default();
    figs.line(format!("bench control.iterations {iterations} count"));
    figs.line(format!(
        "bench control.aoltask_empty_goal_p50 {:.1} us",
        us(g50)
    ));
    figs.line(format!(
        "bench control.aoltask_empty_goal_p99 {:.1} us",
        us(g99)
    ));
    figs.line(format!("bench control.zenoh_query_p50 {:.1} us", us(q50)));
    figs.line(format!("bench control.zenoh_query_p99 {:.1} us", us(q99)));
    figs.line(format!(
        "bench control.ratio_p50 {:.2} x",
        us(g50) / us(q50)
    ));
    figs.line(format!(
        "bench control.ratio_p99 {:.2} x",
        us(g99) / us(q99)
    ));

    figs.print();
    let _ = life.set("deactivate").await;
    let _ = life.set("shutdown").await;
    let _ = tokio::time::timeout(timeout, demo.wait()).await;
    router.stop().await;
    Ok(())
}
