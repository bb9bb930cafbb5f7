//! The control plane's bad-input corpus: the whole shipped system under `iron up`, and every
//! service any of its nodes offers (the lifecycle services, the action servers' services, the
//! tool bridge, the sources' state) sent empty, garbage, truncated, oversized, mistyped and
//! invalid-UTF-8 requests, straight onto Zenoh as a hostile peer would. Each query must end
//! (dropped or answered, never hung) and be logged with what was wrong; afterwards every node
//! (a resident expert too) is still there and active, no process restarted and nothing
//! panicked.

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use iron::spine::control::{ControlConfig, ControlPlane};
use support::project::Project;

const T: Duration = Duration::from_secs(60);

/// A CDR payload: the little-endian encapsulation header, then `body`.
fn cdr(body: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 1, 0, 0];
    out.extend_from_slice(body);
    out
}

/// A CDR string field holding `bytes` (length with the terminating NUL, then the bytes).
fn cdr_string(bytes: &[u8]) -> Vec<u8> {
    let mut out = ((bytes.len() + 1) as u32).to_le_bytes().to_vec();
    out.extend_from_slice(bytes);
    out.push(0);
    out
}

/// What is sent to every service, with whether it carries the rmw_zenoh attachment.
fn corpus() -> Vec<support::RawCase> {
    let strings = |s: &[&[u8]]| cdr(&s.iter().flat_map(|b| cdr_string(b)).collect::<Vec<_>>());
    vec![
        (
            "garbage without attachment",
            b"\xff\xfe garbage".to_vec(),
            false,
        ),
        ("empty payload", Vec::new(), true),
        ("header only", cdr(&[]), true),
        ("truncated CDR", vec![0, 1, 0, 0, 5, 0, 0, 0, b'a'], true),
        (
            "wrong encapsulation",
            vec![9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8],
            true,
        ),
        (
            "a string longer than the payload",
            cdr(&u32::MAX.to_le_bytes()),
            true,
        ),
        (
            "invalid UTF-8 in string fields",
            strings(&[b"\xff\xfe\xfd", b"\xc3\x28", b"\xed\xa0\x80", b"\x80"]),
            true,
        ),
        (
            "wrong types (numbers where strings go)",
            cdr(&[7u8; 64]),
            true,
        ),
        (
            "oversized (4 MiB string)",
            strings(&[&vec![b'a'; 4 << 20], b"{}", b"x", b"y"]),
            true,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_of_every_node_survives_the_corpus() {
    let p = Project::offline();
    // The shipped list, plus a resident expert: the one node kind the list leaves to the engine.
    let list = Project::shipped_launch_list()
        + "  - name: analyst\n    namespace: /iron/experts/newsroom\n    executable: expert_node\n    args: [--expert, newsroom/analyst]\n";
    let up = p.up(&list, &[]);
    up.wait_for("node(s) running", T);
    let listed = support::eventually("every node active", T, || async {
        let out = p.iron(&["lifecycle", "list"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && text.lines().all(|l| l.ends_with("\tactive"))).then_some(text)
    })
    .await;
    // Experts the engine spawns for the newsroom's own tasks (`<role>_<8 hex>`) come and go
    // beside the list's nodes; the list's are what is counted.
    let spawned = |n: &str| {
        n.starts_with("/iron/experts/")
            && n.rsplit('/')
                .next()
                .and_then(|last| last.rsplit_once('_'))
                .is_some_and(|(_, tag)| {
                    tag.len() == 8 && tag.chars().all(|c| c.is_ascii_hexdigit())
                })
    };
    let nodes: BTreeSet<&str> = listed
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|n| !spawned(n))
        .collect();
    assert_eq!(
        nodes.len(),
        list.lines()
            .filter(|l| l.trim_start().starts_with("- name:"))
            .count(),
        "every node of the list: {listed}"
    );
    assert!(nodes.contains("/iron/experts/newsroom/analyst"), "{listed}");

    let control = ControlPlane::connect(ControlConfig {
        router: p.router().to_string(),
        domain_id: 0,
    })
    .await
    .unwrap();
    let me = control.node("corpus", "/").unwrap();
    control.wait_for_router(&me, T).await.unwrap();
    // Every service of those nodes, as the graph shows them: those under a node's name and
    // the shared ones under /iron/ (the trust boundaries: delivery, memory, hunk decisions).
    let shared = [
        "/iron/tools/delivery",
        "/iron/tools/memory",
        "/iron/workspace/decide_hunks",
    ];
    let services: BTreeSet<String> = support::eventually("the nodes' services", T, || async {
        let services: BTreeSet<String> = control
            .context()
            .graph()
            .get_service_names_and_types()
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| {
                // (Spawned experts' services come and go with them: only the list's count.)
                (name.starts_with("/iron/") && !name.starts_with("/iron/experts/"))
                    || nodes.iter().any(|n| name.starts_with(&format!("{n}/")))
            })
            .collect();
        let each_node_has_some = nodes
            .iter()
            .all(|n| services.iter().any(|s| s.starts_with(&format!("{n}/"))));
        let shared_served = shared.iter().all(|s| services.contains(*s));
        (each_node_has_some && shared_served).then_some(services)
    })
    .await;
    for kind in ["/get_state", "/_action/send_goal", "/state"] {
        assert!(
            services.iter().any(|s| s.ends_with(kind)),
            "no {kind} service in {services:?}"
        );
    }

    let session = me.session().clone();
    for service in &services {
        // <domain>/<name>/<type>/<hash>: exactly this service, not those of a node that has
        // its name (the delivery node is /iron/tools/delivery too).
        let ke = format!("0{service}/*/*");
        support::survives_raw_queries(&session, service, &ke, corpus(), Duration::from_secs(10))
            .await;
    }

    // Everything is still there, active, never restarted, and said why it dropped requests.
    let after = p.iron_ok(&["lifecycle", "list"]);
    for node in &nodes {
        assert!(
            after.contains(&format!("{node}\tactive")),
            "{node}: {after}"
        );
    }
    let output = up.output().join("\n");
    assert!(!output.contains("panicked"), "{output}");
    assert!(up.matching(": exited").is_empty(), "{output}");
    // Each of Iron's services said, in its node's log, what was wrong with what it dropped.
    // The standard parameter services are hiroz's own: they drop in silence, and are held to
    // the rest (the node survives, stays active, never restarts).
    let dropped = up.matching("dropped a malformed request");
    let hiroz_parameters = [
        "/describe_parameters",
        "/get_parameters",
        "/get_parameter_types",
        "/list_parameters",
        "/set_parameters",
        "/set_parameters_atomically",
    ];
    assert!(
        services.iter().any(|s| s.ends_with("/get_parameters")),
        "every node serves its parameters: {services:?}"
    );
    for service in services
        .iter()
        .filter(|s| !hiroz_parameters.iter().any(|p| s.ends_with(p)))
    {
        assert!(
            dropped
                .iter()
                .any(|l| l.ends_with(&format!("service={service}"))),
            "{service} logged no drop: {}",
            dropped.join("\n")
        );
    }
    eprintln!(
        "{} services of {} nodes, {} requests each",
        services.len(),
        nodes.len(),
        corpus().len()
    );
}
