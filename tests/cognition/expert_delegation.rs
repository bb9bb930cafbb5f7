//! An expert delegating to a peer across real processes: `lab/chief` (spawned by the engine for
//! a task) calls its built-in `delegate` tool; a call to an expert outside its peers is refused
//! to the model without reaching the engine, the call to `lab/clerk` goes to the engine as a
//! goal one level deeper, which spawns the clerk, and the clerk's answer returns to the chief
//! as a tool result. The delegated task carries its parent and is not delivered to anyone;
//! only the chief's answer is.

use crate::support;

use iron::protocol::payload::{ReplyDelivered, RoutingDecided, TaskDelegated, TaskRejected};
use support::cognition::{CHIEF_ANSWER, Lab};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expert_delegates_to_its_peer_through_the_engine() {
    let lab = Lab::start(&[]);
    let out = lab
        .send("lab/chief", "have this filed")
        .wait_with_output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(CHIEF_ANSWER),
        "{stdout}\n{}\nengine:\n{}",
        String::from_utf8_lossy(&out.stderr),
        lab.engine.output().join("\n")
    );

    let routed: Vec<RoutingDecided> = support::read(&lab.p.events("routing_decided").await);
    let domains: Vec<&str> = routed.iter().map(|r| r.domain.as_str()).collect();
    assert_eq!(domains, ["lab/chief", "lab/clerk"], "{routed:#?}");
    // The refused call never reached the engine: no task for lab/nowhere, no rejection.
    assert!(
        lab.payloads_where("task_rejected", |r: &TaskRejected| {
            r.domain.as_deref() == Some("lab/nowhere")
        })
        .await
        .is_empty()
    );

    // The clerk's task knows its parent and depth, and its answer went back to the chief.
    let delegated = lab
        .payloads_where("task_delegated", |d: &TaskDelegated| {
            d.domain == "lab/clerk"
        })
        .await;
    assert_eq!(delegated.len(), 1, "{delegated:#?}");
    let chief = lab
        .payloads_where("task_delegated", |d: &TaskDelegated| {
            d.domain == "lab/chief"
        })
        .await;
    assert_eq!(chief.len(), 1);
    let tool_results: Vec<String> = lab
        .p
        .events("model_called")
        .await
        .iter()
        .map(|e| e.payload.to_string())
        .collect();
    assert!(
        tool_results.iter().any(|p| p.contains("delegate")),
        "the chief's model asked to delegate: {tool_results:#?}"
    );
    // Only the person's task is delivered (the lab declares no channel, so it is recorded
    // as not delivered), with the chief's answer; the clerk's answer went to the chief.
    let deliveries: Vec<ReplyDelivered> = support::read(&lab.p.events("reply_delivered").await);
    assert_eq!(deliveries.len(), 1, "{deliveries:#?}");
    assert_eq!(deliveries[0].text, CHIEF_ANSWER, "{deliveries:#?}");
    let clerk_task = &delegated[0].task_id;
    let chief_task = &chief[0].task_id;
    assert_ne!(clerk_task, chief_task);
    let clerk_route = routed.iter().find(|r| r.domain == "lab/clerk").unwrap();
    assert_eq!(clerk_route.depth, 1, "{clerk_route:#?}");
    assert_eq!(&clerk_route.parent_task_id, chief_task, "{clerk_route:#?}");
    let chief_route = routed.iter().find(|r| r.domain == "lab/chief").unwrap();
    assert_eq!(chief_route.depth, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_tasks_that_all_delegate_do_not_starve_their_delegations() {
    // Five chiefs take every slot of their depth; each waits on a clerk, one level deeper.
    // With one pool for all depths the clerks waited for a slot until they failed `saturated`.
    let lab = Lab::start(&["--slot-wait-secs", "20"]);
    let sends: Vec<_> = (0..5)
        .map(|i| lab.send("lab/chief", &format!("have file {i} filed")))
        .collect();
    for (i, send) in sends.into_iter().enumerate() {
        let out = send.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(CHIEF_ANSWER),
            "task {i}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let clerks = lab
        .payloads_where("task_delegated", |d: &TaskDelegated| {
            d.domain == "lab/clerk"
        })
        .await;
    assert_eq!(clerks.len(), 5, "{clerks:#?}");
}
