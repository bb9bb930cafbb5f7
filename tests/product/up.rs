//! `iron up` with a real launch list: start, configure, activate, restart after kill -9, and
//! an orderly stop in reverse order on SIGINT.

use crate::support;

use std::time::Duration;

use support::{project::Project, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn up_starts_supervises_and_stops_in_reverse_order() {
    let p = Project::offline();
    let mut up = p.up(
        "nodes:\n  - name: first\n    executable: demo_node\n  - name: second\n    executable: demo_node\n  - name: manual\n    executable: demo_node\n    autostart: false\n",
        &[],
    );
    up.wait_for("up: 3 node(s) running", T);

    // A second `iron up` on the same project is refused before it touches anything: the
    // listing below still checks against the first one's record.
    let mut second = p.up("nodes:\n  - name: first\n    executable: demo_node\n", &[]);
    let status = second.wait_exit(T).expect("a second up exits");
    assert!(!status.success());
    assert!(
        !second.matching("another `iron up`").is_empty(),
        "{}",
        second.output().join("\n")
    );

    assert!(
        p.iron_ok(&["lifecycle", "get", "/iron/first"])
            .starts_with("active")
    );
    assert!(
        p.iron_ok(&["lifecycle", "get", "/iron/second"])
            .starts_with("active")
    );
    assert!(
        p.iron_ok(&["lifecycle", "get", "/iron/manual"])
            .starts_with("unconfigured")
    );
    let out = p.iron_ok(&[
        "task",
        "send",
        "--action",
        "/iron/second/task",
        "through up",
    ]);
    assert!(out.contains("echo: through up"), "{out}");

    let pid_of = |node: &str| -> i32 {
        up.matching(&format!("{node}: started"))[0]
            .split("pid Some(")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .and_then(|s| s.parse().ok())
            .expect("the supervisor logs the pid")
    };

    // The listing is checked against what `iron up` runs.
    let lifecycle_list = |extra: &[&str]| {
        let mut args = vec!["lifecycle", "list", "--timeout", "2"];
        args.extend_from_slice(extra);
        let out = p.iron(&args);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    let (ok, listed, err) = lifecycle_list(&[]);
    assert!(ok, "{listed}\n{err}");
    for line in [
        "/iron/first\tactive",
        "/iron/second\tactive",
        "/iron/manual\tunconfigured",
    ] {
        assert!(listed.contains(line), "{line}: {listed}");
    }
    // A node that does not answer (stopped) makes the listing partial, and it fails.
    let second = pid_of("/iron/second");
    // SAFETY: kill(2) on a process this test started through `iron up`.
    unsafe { libc::kill(second, libc::SIGSTOP) };
    let (ok, listed, err) = lifecycle_list(&[]);
    // SAFETY: as above.
    unsafe { libc::kill(second, libc::SIGCONT) };
    assert!(!ok, "{listed}\n{err}");
    // (Whether it still shows on the graph depends on who answers the graph query.)
    assert!(
        listed.contains("/iron/second\t?") || listed.contains("/iron/second\tmissing"),
        "{listed}"
    );
    assert!(listed.contains("/iron/first\tactive"), "{listed}");
    assert!(err.contains("partial listing: 1 "), "{err}");
    // So does a node of a launch list that is not on the graph.
    let ghost = p.write(
        "ghost.yaml",
        "nodes:\n  - name: first\n    executable: demo_node\n  - name: ghost\n    executable: demo_node\n",
    );
    let (ok, listed, err) = lifecycle_list(&["--launch", ghost.to_str().unwrap()]);
    assert!(!ok, "{listed}\n{err}");
    assert!(listed.contains("/iron/ghost\tmissing"), "{listed}");
    assert!(
        err.contains("partial listing: 1 of 2 expected node(s) not on the graph"),
        "{err}"
    );

    // kill -9 one node: it is restarted, configured and activated again.
    let pid = pid_of("/iron/first");
    // SAFETY: kill(2) on a process this test started through `iron up`.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    up.wait_for("/iron/first exited", T);
    wait_until(
        T,
        || up.matching("/iron/first: active").len() >= 2,
        || format!("not restarted:\n{}", up.output().join("\n")),
    );
    assert!(
        p.iron_ok(&["lifecycle", "get", "/iron/first"])
            .starts_with("active")
    );

    // Ctrl-C: every node deactivated and shut down, last started first.
    up.signal(libc::SIGINT);
    let status = up.wait_exit(T).expect("iron up exits after SIGINT");
    assert!(status.success(), "{status}\n{}", up.output().join("\n"));
    assert!(
        !p.path("up.json").exists(),
        "iron up removes its record when it stops"
    );
    let exits: Vec<String> = up
        .matching(": exited")
        .into_iter()
        .filter(|l| !l.contains("restarting"))
        .collect();
    let order: Vec<&str> = ["/iron/manual", "/iron/second", "/iron/first"]
        .into_iter()
        .filter(|n| exits.iter().any(|l| l.contains(&format!("{n}: exited"))))
        .collect();
    assert_eq!(order.len(), 3, "{}", up.output().join("\n"));
    let pos = |n: &str| {
        exits
            .iter()
            .position(|l| l.contains(&format!("{n}: exited")))
            .unwrap()
    };
    assert!(pos("/iron/manual") < pos("/iron/second") && pos("/iron/second") < pos("/iron/first"));
    assert!(
        up.matching("callback deactivate").len() >= 2,
        "active nodes are deactivated first"
    );
}

#[test]
fn a_node_that_fails_to_configure_says_why_in_ups_output() {
    let p = Project::offline();
    let mut up = p.up(
        "nodes:\n  - name: picky\n    executable: demo_node\n    args: [--fail-on, configure]\n",
        &[],
    );
    // The reason comes from the node (on /rosout), not from guessing.
    up.wait_for(
        "node /iron/picky: configure failed: configure told to fail; the node stays unconfigured",
        T,
    );
    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("iron up stops on SIGINT");
}

/// A node whose run fails (its process alive, the node fallen through error processing to
/// `unconfigured`) is configured and activated again by `iron up`, with backoff, until it
/// stays active; then it serves.
#[test]
fn a_node_whose_run_fails_is_brought_back_to_active() {
    let p = Project::offline();
    let mut up = p.up(
        "nodes:\n  - name: flaky\n    executable: demo_node\n    args: [--fail-runs, '2']\n",
        &[],
    );
    up.wait_for("up: 1 node(s) running", T);
    // Two failed runs, each followed by a try one backoff later (1 s, then 2 s).
    wait_until(
        T,
        || up.matching("/iron/flaky: active").len() >= 3,
        || format!("not brought back:\n{}", up.output().join("\n")),
    );
    let again =
        up.matching("fell to unconfigured after an error; configuring and activating it again in");
    assert_eq!(again.len(), 2, "{}", up.output().join("\n"));
    assert!(
        again[0].ends_with("in 1s") && again[1].ends_with("in 2s"),
        "{again:?}"
    );
    assert_eq!(
        up.matching("run failed: running: told to fail").len(),
        2,
        "the node said why"
    );
    assert_eq!(
        up.matching(": exited").len(),
        0,
        "the process was not restarted"
    );
    assert!(
        p.iron_ok(&["lifecycle", "get", "/iron/flaky"])
            .starts_with("active")
    );
    let out = p.iron_ok(&[
        "task",
        "send",
        "--action",
        "/iron/flaky/task",
        "after two falls",
    ]);
    assert!(out.contains("echo: after two falls"), "{out}");

    // A person's deactivation is theirs: the node stays inactive.
    p.iron_ok(&["lifecycle", "set", "/iron/flaky", "deactivate"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        p.iron_ok(&["lifecycle", "get", "/iron/flaky"])
            .starts_with("inactive")
    );
    up.signal(libc::SIGINT);
    up.wait_exit(T).expect("iron up stops on SIGINT");
}

/// `iron up --nats auto` from a project whose state directory is relative (`.iron`, the
/// default): its own nats-server starts with the store under it, the nodes run, and other
/// commands read the log they write. The server's configuration language read a bare
/// `.iron/nats` as a malformed number, the launcher then waited 20 s for a server that had
/// already exited, and commands beside it read the configuration's embedded log.
#[test]
fn up_with_nats_auto_keeps_the_store_under_a_relative_state_directory() {
    let p = Project::offline();
    p.write("iron.yaml", "state_dir: .iron\n");
    p.write(
        "config/nats-server.conf",
        &std::fs::read_to_string("config/nats-server.conf").unwrap(),
    );
    let aem = std::fs::canonicalize("aem").unwrap();
    let mut up = p.up_inside(
        "nodes:\n  - name: first\n    executable: demo_node\n",
        &["--nats", "auto", "--aem", aem.to_str().unwrap()],
    );
    up.wait_for("up: 1 node(s) running", T);
    assert_eq!(
        up.matching("nats-server up at nats://127.0.0.1:4222").len(),
        1
    );
    assert!(
        p.path(".iron/nats/jetstream").is_dir(),
        "{}",
        up.output().join("\n")
    );
    // A command run beside it reads the log the nodes write (JetStream), not the
    // configuration's default (the embedded log): here the node's output, shipped by `up`.
    let read = || p.iron_ok_inside(&["logs", "/iron/first", "--last", "0"]);
    wait_until(T, || read().contains("callback activate"), read);
    assert!(
        !p.path(".iron/log.db").exists(),
        "nothing opened the embedded log"
    );
    up.signal(libc::SIGINT);
    let status = up.wait_exit(T).expect("iron up stops on SIGINT");
    assert!(status.success(), "{status}\n{}", up.output().join("\n"));
}
