//! What an attacker inside a confined run would try against the host, each through the
//! production path (the real bubblewrap, slirp4netns, control groups and resource limits,
//! and `iron sandbox run` itself): sockets on the host, the host's loopback with network
//! granted, the real repository's secrets, the user's home, a fork bomb, a memory hog, a
//! file and a temporary directory past their sizes, privileges. Each must fail, and what
//! may work still does.

use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use iron::workspace::sandbox::{Confined, Limits, RunOutput, RunPolicy, Sandbox, SandboxError};
use iron::workspace::scratch::{GitWorktree, ScratchProvider};

/// A directory outside `/tmp` (which every sandbox replaces with its own).
fn test_root() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = tmp.path().canonicalize().unwrap();
    (tmp, root)
}

/// bubblewrap, or a failure that says how to install it (never a skip).
async fn sandbox() -> Sandbox {
    Sandbox::locate()
        .await
        .unwrap_or_else(|e| panic!("{e}; these tests need it (scripts/test.sh installs it)"))
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=test", "-c", "user.email=test@localhost"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository whose config holds a token (as CI checkouts do) and with an untracked
/// `.env`, and a linked worktree of it: the scratch an expert works in.
async fn repo_and_scratch(root: &Path) -> (PathBuf, PathBuf) {
    let repo = root.join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.txt"), "one\n").unwrap();
    git(&repo, &["init", "--quiet", "-b", "main"]);
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "base"]);
    git(
        &repo,
        &[
            "config",
            "http.extraheader",
            "AUTHORIZATION: basic czNjcjN0LXRva2Vu",
        ],
    );
    git(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "https://ci:s3cr3t-token@example.com/r.git",
        ],
    );
    std::fs::write(repo.join(".env"), "API_KEY=s3cr3t-token\n").unwrap();
    let provider = GitWorktree {
        repo: repo.clone(),
        root: root.join("state/scratch"),
    };
    let scratch = provider.create("t").await.unwrap();
    (repo, scratch.dir)
}

async fn sh(sandbox: &Sandbox, run: &Confined) -> RunOutput {
    sandbox.run(run).await.unwrap()
}

fn output_of(out: &RunOutput) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn python(code: &str, scratch: &Path) -> Confined {
    Confined::new("python3", &["-c", code], scratch)
}

/// Tries to connect to `addr` from inside; prints `REACHED` when it did.
fn connect_script(host: &str, port: u16) -> String {
    format!(
        "import socket\ntry:\n    socket.create_connection(('{host}', {port}), 3)\n    \
         print('REACHED')\nexcept OSError as e:\n    print('refused', e)\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_on_the_host_is_out_of_reach() {
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    let (_, scratch) = repo_and_scratch(&root).await;
    // A socket in the host's /tmp, one under /run (a user's D-Bus and agents, a Docker
    // socket live there) and one beside the project.
    let pid = std::process::id();
    let places = [
        PathBuf::from(format!("/tmp/iron-escape-{pid}.sock")),
        PathBuf::from(format!("/run/iron-escape-{pid}.sock")),
        root.join("host.sock"),
    ];
    let mut listeners = Vec::new();
    for place in &places {
        let _ = std::fs::remove_file(place);
        let l = UnixListener::bind(place).unwrap_or_else(|e| panic!("{}: {e}", place.display()));
        l.set_nonblocking(true).unwrap();
        listeners.push(l);
    }
    for place in &places {
        let code = format!(
            "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('{}')\n    \
             print('REACHED')\nexcept OSError as e:\n    print('refused', e)\n",
            place.display()
        );
        let out = sh(&sandbox, &python(&code, &scratch)).await;
        let said = output_of(&out);
        assert!(said.contains("refused"), "{}: {said}", place.display());
    }
    for (place, l) in places.iter().zip(&listeners) {
        assert!(l.accept().is_err(), "{} was reached", place.display());
        let _ = std::fs::remove_file(place);
    }
    // /run does not exist inside at all.
    let out = sh(&sandbox, &Confined::new("ls", &["/run"], &scratch)).await;
    assert!(!out.success(), "{}", output_of(&out));
}

/// This host's address on its outside network: what a networked run may reach, as any
/// program on the network could.
fn outside_address() -> std::net::IpAddr {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    // No packet is sent: connecting a UDP socket only picks the route.
    probe
        .connect("192.0.2.1:9")
        .or_else(|_| probe.connect("10.255.255.1:9"))
        .expect("this machine has no route off loopback; the network tests need one");
    let ip = probe.local_addr().unwrap().ip();
    assert!(!ip.is_loopback(), "{ip}");
    ip
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_network_reaches_out_but_never_the_hosts_loopback() {
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    let (_, scratch) = repo_and_scratch(&root).await;
    // Where the router, NATS and the console listen: the host's loopback.
    let router = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    router.set_nonblocking(true).unwrap();
    let port = router.local_addr().unwrap().port();
    // A service on the outside network.
    let outside = outside_address();
    let public = std::net::TcpListener::bind((outside, 0)).unwrap();
    public.set_nonblocking(true).unwrap();
    let public_port = public.local_addr().unwrap().port();
    let policy = RunPolicy {
        network: true,
        ..RunPolicy::default()
    };
    // 10.0.2.2 is slirp's gateway, which would lead to the host's loopback.
    for host in ["127.0.0.1", "10.0.2.2", "localhost"] {
        let run = python(&connect_script(host, port), &scratch)
            .under(&policy)
            .unwrap();
        let out = sh(&sandbox, &run).await;
        assert!(
            out.success() && output_of(&out).contains("refused"),
            "{host}: {}",
            output_of(&out)
        );
    }
    assert!(router.accept().is_err(), "the host's loopback was reached");
    let run = python(&connect_script(&outside.to_string(), public_port), &scratch)
        .under(&policy)
        .unwrap();
    let out = sh(&sandbox, &run).await;
    assert!(output_of(&out).contains("REACHED"), "{}", output_of(&out));
    // Without the grant, not even the outside.
    let out = sh(
        &sandbox,
        &python(&connect_script(&outside.to_string(), public_port), &scratch),
    )
    .await;
    assert!(output_of(&out).contains("refused"), "{}", output_of(&out));
    // The command's input is empty once its network is up, as without network.
    let run = Confined::new("sh", &["-c", "wc -c"], &scratch)
        .under(&policy)
        .unwrap();
    let out = sh(&sandbox, &run).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_slirp4netns_a_networked_run_is_refused_never_run_on_the_host_network() {
    let (_tmp, root) = test_root();
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let bwrap = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .expect("bwrap");
    std::os::unix::fs::symlink(&bwrap, bin.join("bwrap")).unwrap();
    let sandbox = Sandbox::locate_in(bin.as_os_str()).await.unwrap();
    let policy = RunPolicy {
        network: true,
        ..RunPolicy::default()
    };
    let run = Confined::new("true", &[], &root).under(&policy).unwrap();
    match sandbox.run(&run).await {
        Err(e @ SandboxError::Unavailable(_)) => {
            assert!(e.to_string().contains("slirp4netns"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_repositorys_git_config_dotenv_the_users_home_and_operator_keys_are_unreadable() {
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    let (repo, scratch) = repo_and_scratch(&root).await;
    let home = std::env::var("HOME").unwrap();
    // An operator's key, where `iron operator add` keeps it (the home) and where a person
    // may point IRON_OPERATOR_KEYS: an agent that read it could approve its own work.
    iron::core::identity::OperatorKey::create(&root.join("keys"), "ana").unwrap();
    let key = std::fs::read_to_string(root.join("keys/ana.key")).unwrap();
    let script = format!(
        "cat {repo}/.git/config; cat {repo}/.env; cat {repo}/src/lib.txt; \
         git config --get remote.origin.url; git config --get http.extraheader; \
         ls -A {home}; ls -A {root}/state; cat {root}/keys/ana.key; \
         cat {home}/.config/iron/operators/*.key; echo end",
        repo = repo.display(),
        root = root.display()
    );
    let out = sh(&sandbox, &Confined::new("sh", &["-c", &script], &scratch)).await;
    let seen = output_of(&out);
    assert!(seen.contains("end\n"), "{seen}");
    assert!(
        !seen.contains("s3cr3t") && !seen.contains("czNjcjN0") && !seen.contains(key.trim()),
        "a secret was read: {seen}"
    );
    // What git needs still works inside the scratch: its history and its status.
    let out = sh(
        &sandbox,
        &Confined::new(
            "sh",
            &["-c", "git log --oneline && git status --short && echo ok"],
            &scratch,
        ),
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.success() && stdout.contains("base") && stdout.ends_with("ok\n"),
        "{}",
        output_of(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_stops_at_the_process_limit() {
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    let code = "import subprocess\nps = []\ntry:\n    for i in range(300):\n        \
                ps.append(subprocess.Popen(['sleep', '30']))\nexcept OSError as e:\n    \
                print('stopped', e)\nprint('started', len(ps))\nfor p in ps:\n    p.kill()\n";
    let mut run = python(code, &root);
    run.limits.processes = 24;
    run.timeout = std::time::Duration::from_secs(60);
    let out = sh(&sandbox, &run).await;
    let said = output_of(&out);
    let started: usize = said
        .lines()
        .find_map(|l| l.strip_prefix("started "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(said.contains("stopped"), "{said}");
    assert!(started < 24, "{started} processes started: {said}");
    // A classic shell fork bomb runs into the same wall, and the run still ends.
    let mut run = Confined::new("sh", &["-c", "b() { b | b & }; b; sleep 2"], &root);
    run.limits.processes = 24;
    run.timeout = std::time::Duration::from_secs(10);
    let out = sh(&sandbox, &run).await;
    let said = output_of(&out);
    assert!(
        said.to_lowercase().contains("fork"),
        "{:?}: {said}",
        out.ended
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_hog_a_huge_file_and_a_full_tmpdir_are_stopped() {
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    let mut run = python("b = bytearray(1 << 30)\nprint('allocated')", &root);
    run.limits.memory = 256 << 20;
    let out = sh(&sandbox, &run).await;
    assert!(
        !out.success() && !output_of(&out).contains("allocated"),
        "{}",
        output_of(&out)
    );
    let mut run = Confined::new("sh", &["-c", "head -c 2097152 /dev/zero > big"], &root);
    run.limits.file_size = 1 << 20;
    let out = sh(&sandbox, &run).await;
    assert!(!out.success(), "{out:?}");
    let written = std::fs::metadata(root.join("big"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(written <= 1 << 20, "{written} bytes written");
    let mut run = Confined::new(
        "sh",
        &["-c", "head -c 2097152 /dev/zero > \"$TMPDIR/fill\""],
        &root,
    );
    run.limits.tmp_size = 1 << 20;
    let out = sh(&sandbox, &run).await;
    assert!(!out.success(), "{out:?}");
    // Under the defaults, the same work is fine.
    let out = sh(
        &sandbox,
        &Confined::new(
            "sh",
            &[
                "-c",
                "head -c 2097152 /dev/zero > \"$TMPDIR/fill\" && echo ok",
            ],
            &root,
        ),
    )
    .await;
    assert!(out.success(), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_inside_has_privileges_or_the_callers_environment() {
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    let out = sh(
        &sandbox,
        &Confined::new(
            "sh",
            &[
                "-c",
                "grep -E '^(NoNewPrivs|CapEff|CapPrm)' /proc/self/status; env",
            ],
            &root,
        ),
    )
    .await;
    let said = output_of(&out);
    assert!(said.contains("NoNewPrivs:\t1"), "{said}");
    assert!(said.contains("CapEff:\t0000000000000000"), "{said}");
    assert!(said.contains("CapPrm:\t0000000000000000"), "{said}");
    let defaults = Limits::default();
    assert!(defaults.processes > 0 && defaults.memory > 0);
    for var in std::env::vars().map(|(k, _)| k) {
        if !["PATH", "HOME", "LANG", "TMPDIR", "PWD", "SHLVL", "_"].contains(&var.as_str()) {
            assert!(
                !said.contains(&format!("\n{var}=")),
                "{var} reached the run"
            );
        }
    }
}

/// A project whose one mesh declares a workspace: the shape `iron sandbox run` reads.
fn project(root: &Path) -> PathBuf {
    let project = root.join("project");
    let write = |rel: &str, text: &str| {
        let p = project.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "aem/dev/AEM.md",
        "---\nname: dev\nstatus: active\ndescription: test\ndefaults:\n  model: standard\n\
         workspace:\n  target: .\n  provider: git_worktree\n---\n",
    );
    write(
        "aem/dev/skills/engineer/SKILL.md",
        "---\nname: engineer\ndescription: changes code\nidentity: An engineer.\n---\n\
         You change code.\n",
    );
    write("src/lib.txt", "one\n");
    git(&project, &["init", "--quiet", "-b", "main"]);
    git(&project, &["add", "--all"]);
    git(&project, &["commit", "--quiet", "-m", "base"]);
    project
}

#[test]
fn iron_sandbox_run_confines_a_command_as_an_expert_and_passes_its_exit_code_on() {
    let (_tmp, root) = test_root();
    let project = project(&root);
    let iron = |args: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iron"))
            .args(args)
            .current_dir(&project)
            .env("IRON_STATE_DIR", root.join("state"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (child.wait().unwrap().code(), out, err)
    };
    let script = format!(
        "cat src/lib.txt; echo x > made; ls {}; ls /run; exit 7",
        root.join("state").display()
    );
    let (code, out, err) = iron(&["sandbox", "run", "--", "sh", "-c", &script]);
    assert_eq!(code, Some(7), "{out}{err}");
    assert!(out.starts_with("one\n"), "{out}{err}");
    assert!(err.contains("as an expert of dev"), "{err}");
    assert!(
        !project.join("made").exists(),
        "the run wrote the real tree"
    );
    // The scratch is gone afterwards.
    let left: Vec<_> = std::fs::read_dir(root.join("state/scratch"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    // A mesh that is not there, and one without a workspace, are named.
    let (code, _, err) = iron(&["sandbox", "run", "--mesh", "nope", "--", "true"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no mesh nope"), "{err}");
}
