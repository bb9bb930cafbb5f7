//! The workspace layer against the real tools: scratches are real git worktrees (and plain
//! copies), confined commands run under the real bubblewrap, hunks are applied with git.
//! The heart is the escape attempts: from inside the sandbox each write, read, connection and
//! signal that leaves the scratch fails, and the real tree is byte-identical afterwards.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use iron::tools::PathPolicy;
use iron::workspace::hunks::{self, HunkError};
use iron::workspace::sandbox::{Confined, Ended, Sandbox, SandboxError};
use iron::workspace::scratch::{GitWorktree, PlainCopy, Scratch, ScratchProvider, branch_of};

/// A directory for one test outside `/tmp` (which every sandbox replaces with its own), so
/// that what the sandbox must protect is the host's real filesystem. Removed when dropped.
fn test_root() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = tmp.path().canonicalize().unwrap();
    (tmp, root)
}

/// bubblewrap, or a failure that says how to install it (never a skip).
async fn sandbox() -> Sandbox {
    Sandbox::locate().await.unwrap_or_else(|e| {
        panic!("{e}; the workspace tests need it (scripts/test.sh installs it)")
    })
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=test", "-c", "user.email=test@localhost"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A repository with code, governance and a committed history: the real tree.
fn fixture(root: &Path) -> PathBuf {
    let repo = root.join("repo");
    let write = |rel: &str, text: &str| {
        let p = repo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let body: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    write("src/lib.txt", &body);
    write("README.md", "# fixture\n");
    write("aem/dev/AEM.md", "---\nname: dev\n---\n");
    write(
        "aem/dev/skills/engineer/capabilities.md",
        "---\nclearance: read\n---\n",
    );
    git(&repo, &["init", "--quiet", "-b", "main"]);
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "fixture"]);
    repo
}

/// Every file under `dir` (not `.git`) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let kind = e.file_type().unwrap();
            if e.file_name() == ".git" {
                continue;
            }
            if kind.is_dir() {
                stack.push(e.path());
            } else {
                let bytes = if kind.is_symlink() {
                    std::fs::read_link(e.path())
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes()
                } else {
                    std::fs::read(e.path()).unwrap()
                };
                out.insert(e.path(), bytes);
            }
        }
    }
    out
}

async fn worktree(root: &Path, repo: &Path, task: &str) -> (GitWorktree, Scratch) {
    let provider = GitWorktree {
        repo: repo.to_path_buf(),
        root: root.join("state/scratch"),
    };
    let scratch = provider.create(task).await.unwrap();
    (provider, scratch)
}

async fn sh(sandbox: &Sandbox, run: Confined) -> iron::workspace::sandbox::RunOutput {
    sandbox.run(&run).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_attempts_fail_and_the_real_tree_is_unchanged() {
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    let repo = fixture(&root);
    let (_, scratch) = worktree(&root, &repo, "t1").await;
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let secrets = root.join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("token"), "s3cr3t-token").unwrap();
    let key = root.join("caller.key");
    std::fs::write(&key, "k3y-material").unwrap();
    std::os::unix::fs::symlink(&outside, scratch.dir.join("planted")).unwrap();
    let home = std::env::var("HOME").unwrap();
    let unique = format!("iron-escape-{}", std::process::id());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut victim = Command::new("sleep").arg("120").spawn().unwrap();

    let real_before = snapshot(&repo);
    let outside_before = snapshot(&root.join("outside"));
    let attempts: Vec<(&str, String)> = vec![
        (
            "absolute path",
            format!("echo x > {}/escaped", outside.display()),
        ),
        (
            "../ traversal",
            "echo x > ../escaped && echo x > ../../escaped".to_string(),
        ),
        ("$HOME", format!("echo x > \"$HOME/{unique}\"")),
        ("/tmp", format!("echo x > /tmp/{unique}")),
        ("a planted symlink", "echo x > planted/escaped".to_string()),
        (
            "a symlink made inside",
            format!("ln -s {} out && echo x > out/escaped", outside.display()),
        ),
        (
            "/proc/self/root",
            format!("echo x > /proc/self/root{}/escaped", outside.display()),
        ),
        (
            "/proc/1/root",
            format!("echo x > /proc/1/root{}/escaped", outside.display()),
        ),
        (
            "the real tree",
            format!("echo x >> {}/src/lib.txt", repo.display()),
        ),
        (
            "the repository's .git",
            format!("echo x > {}/.git/escaped", repo.display()),
        ),
        (
            "a masked credential directory",
            format!("cat {}/token", secrets.display()),
        ),
        (
            "a masked credential file",
            format!("grep k3y {}", key.display()),
        ),
        ("/etc/shadow", "grep root /etc/shadow".to_string()),
        (
            "a socket to 127.0.0.1",
            format!(
                "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
            ),
        ),
        ("a process outside", format!("kill -9 {}", victim.id())),
        (
            "remounting read-write",
            "mount -o remount,rw / 2>&1; touch /escaped".to_string(),
        ),
    ];
    for (what, script) in &attempts {
        let mut run = Confined::new("sh", &["-c", script], &scratch.dir);
        run.mask = vec![secrets.clone(), key.clone()];
        let out = sh(&sandbox, run).await;
        assert!(
            !out.success(),
            "{what} ({script}) succeeded: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            !said.contains("s3cr3t") && !said.contains("k3y"),
            "{what}: {said}"
        );
    }
    // /tmp is private and read-only, but for TMPDIR, which is gone when the run ends.
    let out = sh(
        &sandbox,
        Confined::new(
            "sh",
            &[
                "-c",
                &format!("echo x > \"$TMPDIR/{unique}\" && cat \"$TMPDIR/{unique}\""),
            ],
            &scratch.dir,
        ),
    )
    .await;
    assert!(out.success(), "{out:?}");
    assert!(!Path::new("/tmp").join(&unique).exists());
    assert!(!Path::new(&home).join(&unique).exists());
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the process outside is alive"
    );
    victim.kill().unwrap();
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );
    assert_eq!(
        snapshot(&repo),
        real_before,
        "the real tree is byte-identical"
    );
    assert_eq!(
        snapshot(&outside),
        outside_before,
        "nothing written outside"
    );
    assert!(!root.join("state/escaped").exists() && !root.join("state/scratch/escaped").exists());
    // And what may happen does: writing in the scratch.
    let out = sh(
        &sandbox,
        Confined::new(
            "sh",
            &["-c", "echo hello > made.txt && mkdir -p d && echo y > d/f"],
            &scratch.dir,
        ),
    )
    .await;
    assert!(out.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(scratch.dir.join("made.txt")).unwrap(),
        "hello\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_end_a_run_and_say_which() {
    let sandbox = sandbox().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut run = Confined::new("sleep", &["30"], tmp.path());
    run.timeout = std::time::Duration::from_millis(500);
    let out = sh(&sandbox, run).await;
    assert_eq!(out.ended, Ended::TimedOut);
    assert!(out.elapsed < std::time::Duration::from_secs(10));
    let mut run = Confined::new("yes", &[], tmp.path());
    run.max_output = 64 * 1024;
    let out = sh(&sandbox, run).await;
    assert_eq!(out.ended, Ended::OutputLimit);
    assert_eq!(out.stdout.len(), 64 * 1024);
    let out = sh(&sandbox, Confined::new("sh", &["-c", "exit 3"], tmp.path())).await;
    assert_eq!(out.ended, Ended::Exited(3));
    // The network is off unless granted; the environment is clean.
    let out = sh(&sandbox, Confined::new("sh", &["-c", "env"], tmp.path())).await;
    let env = String::from_utf8_lossy(&out.stdout);
    assert!(!env.contains("IRON_") && !env.contains("CARGO"), "{env}");
    // A working directory outside the scratch is refused before anything runs.
    let mut run = Confined::new("true", &[], tmp.path());
    run.cwd = Some(PathBuf::from("/"));
    assert!(matches!(
        sandbox.run(&run).await,
        Err(SandboxError::OutsideScratch { .. })
    ));
}

#[tokio::test]
async fn without_bwrap_confined_execution_refuses() {
    let empty = tempfile::tempdir().unwrap();
    let err = Sandbox::locate_in(empty.path().as_os_str())
        .await
        .unwrap_err();
    assert!(matches!(err, SandboxError::Unavailable(_)));
    let said = err.to_string();
    assert!(
        said.contains("bwrap") && said.contains("apt-get install bubblewrap"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governance_in_the_scratch_stays_unwritable() {
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    let repo = fixture(&root);
    let (_, scratch) = worktree(&root, &repo, "gov").await;
    for script in [
        "echo x >> aem/dev/AEM.md",
        "echo x >> aem/dev/skills/engineer/capabilities.md",
        "rm -rf aem",
        "echo x > .git",
    ] {
        let out = sh(&sandbox, Confined::new("sh", &["-c", script], &scratch.dir)).await;
        assert!(!out.success(), "{script} succeeded");
    }
    assert!(scratch.dir.join("aem/dev/AEM.md").exists());
    // Gate 2 with the scratch as the granted root: its governance is refused too.
    let policy = PathPolicy::new(&repo, &root.join("state"))
        .unwrap()
        .grant_root(&scratch.dir)
        .unwrap();
    let hints = iron::tools::paths::SchemaHints::default();
    for path in [
        "aem/dev/AEM.md",
        "aem/dev/skills/engineer/capabilities.md",
        ".git",
    ] {
        let args = serde_json::json!({ "path": path });
        assert!(
            policy
                .check_call("workspace/write_file", &scratch.dir, &args, &hints)
                .is_err(),
            "{path}"
        );
    }
    let ok = serde_json::json!({ "path": "src/lib.txt" });
    assert!(
        policy
            .check_call("workspace/write_file", &scratch.dir, &ok, &hints)
            .is_ok()
    );
}

/// Edits line `n` (1-based) of the file at `path`.
fn edit_line(path: &Path, n: usize, text: &str) {
    let body = std::fs::read_to_string(path).unwrap();
    let lines: Vec<String> = body
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == n {
                text.to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_hunks_land_and_a_rejected_one_leaves_no_trace() {
    let (_tmp, root) = test_root();
    let repo = fixture(&root);
    let (provider, scratch) = worktree(&root, &repo, "h1").await;
    // Three hunks: two far apart in one file, and a new file.
    edit_line(&scratch.dir.join("src/lib.txt"), 2, "line two, changed");
    edit_line(
        &scratch.dir.join("src/lib.txt"),
        25,
        "line twenty-five, changed",
    );
    std::fs::write(scratch.dir.join("src/new.txt"), "a new file\n").unwrap();
    // And a change to governance, which can never be approved.
    std::fs::write(
        scratch.dir.join("aem/dev/AEM.md"),
        "---\nname: dev\nstatus: parked\n---\n",
    )
    .unwrap();
    let files = hunks::parse(&scratch.diff().await.unwrap()).unwrap();
    let all: Vec<&hunks::Hunk> = files.iter().flat_map(|f| &f.hunks).collect();
    assert_eq!(all.len(), 4, "{files:#?}");
    let governance: Vec<_> = all.iter().filter(|h| h.governance).collect();
    assert_eq!(governance.len(), 1);
    let code: Vec<_> = all.iter().filter(|h| !h.governance).collect();
    let (first, second, new_file) = (code[0], code[1], code[2]);
    assert_eq!(new_file.path, "src/new.txt");

    let refused = hunks::apply(&repo, &files, &BTreeSet::from([governance[0].id.clone()])).await;
    assert!(
        matches!(refused, Err(HunkError::Governance { .. })),
        "{refused:?}"
    );

    // Approve the second edit and the new file; reject the first edit.
    let approved = BTreeSet::from([second.id.clone(), new_file.id.clone()]);
    hunks::apply(&repo, &files, &approved).await.unwrap();
    let lib = std::fs::read_to_string(repo.join("src/lib.txt")).unwrap();
    assert!(lib.contains("line twenty-five, changed"), "{lib}");
    assert!(
        !lib.contains("line two, changed") && lib.contains("line 2\n"),
        "{lib}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("src/new.txt")).unwrap(),
        "a new file\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("aem/dev/AEM.md")).unwrap(),
        "---\nname: dev\n---\n"
    );
    let status = git(&repo, &["status", "--porcelain"]);
    assert_eq!(
        status.lines().count(),
        2,
        "exactly the two approved changes: {status}"
    );

    // A hunk whose place changed under it is reported, and nothing is applied.
    edit_line(
        &repo.join("src/lib.txt"),
        2,
        "someone else changed line two",
    );
    let before = snapshot(&repo);
    let stale = hunks::apply(&repo, &files, &BTreeSet::from([first.id.clone()])).await;
    match stale {
        Err(HunkError::Stale { ids, .. }) => assert_eq!(ids, std::slice::from_ref(&first.id)),
        other => panic!("{other:?}"),
    }
    assert_eq!(snapshot(&repo), before);

    // Removing the scratch removes its worktree and branch.
    provider.remove(&scratch).await.unwrap();
    assert!(!scratch.dir.exists());
    let branches = git(&repo, &["branch", "--list", &branch_of("h1")]);
    assert!(branches.trim().is_empty(), "{branches}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_copy_gives_the_same_diff_and_bad_task_ids_are_refused() {
    let (_tmp, root) = test_root();
    let repo = fixture(&root);
    let provider = PlainCopy {
        source: repo.clone(),
        root: root.join("state/scratch"),
    };
    // What git ignores (a build directory) is not copied; an untracked file is.
    std::fs::write(repo.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(repo.join("target/debug")).unwrap();
    std::fs::write(repo.join("target/debug/big.bin"), vec![0u8; 4096]).unwrap();
    std::fs::write(repo.join("NOTES.md"), "untracked\n").unwrap();
    let scratch = provider.create("copy-1").await.unwrap();
    assert!(scratch.dir.join("src/lib.txt").exists());
    assert!(scratch.dir.join("NOTES.md").exists());
    assert!(!scratch.dir.join("target").exists());
    assert!(
        scratch.diff().await.unwrap().is_empty(),
        "a fresh copy has no changes"
    );
    edit_line(&scratch.dir.join("src/lib.txt"), 2, "changed");
    let files = hunks::parse(&scratch.diff().await.unwrap()).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].hunks.len(), 1);
    assert!(matches!(
        provider.create("copy-1").await,
        Err(iron::workspace::scratch::ScratchError::Exists(_))
    ));
    for bad in ["../x", "a/b", "", "x y"] {
        assert!(provider.create(bad).await.is_err(), "{bad}");
    }
    provider.remove(&scratch).await.unwrap();
    assert!(!scratch.dir.exists());
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "?? .gitignore\n?? NOTES.md\n"
    );
}

/// Where this machine's Rust toolchain is: `CARGO_HOME`/`RUSTUP_HOME`, else under the home
/// directory (what `toolchain:` in AEM.md would name).
fn rust_toolchain() -> Vec<String> {
    let home = std::env::var("HOME").unwrap_or_default();
    [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")]
        .iter()
        .map(|(var, dir)| std::env::var(var).unwrap_or_else(|_| format!("{home}/{dir}")))
        .filter(|p| Path::new(p).is_dir())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_toolchain_runs_cargo_test_confined_and_shows_no_credentials() {
    use iron::workspace::sandbox::RunPolicy;
    let sandbox = sandbox().await;
    let (_tmp, root) = test_root();
    // A crate with one test, in a scratch.
    let krate = root.join("krate");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"krate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/lib.rs"),
        "pub fn two() -> u32 { 2 }\n#[test]\nfn adds() { assert_eq!(two(), 2); }\n",
    )
    .unwrap();
    let cargo_test = || {
        let mut run = Confined::new("cargo", &["test", "--offline"], &krate);
        run.timeout = std::time::Duration::from_secs(300);
        run
    };
    let toolchain = rust_toolchain();
    assert!(!toolchain.is_empty(), "no Rust toolchain found");
    let policy = RunPolicy {
        toolchain: toolchain.clone(),
        ..RunPolicy::default()
    };
    let out = sh(&sandbox, cargo_test().under(&policy).unwrap()).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.success() && stdout.contains("test adds ... ok"),
        "{out:?}\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without the toolchain a toolchain kept under the home directory is out of reach.
    let home = std::env::var("HOME").unwrap_or_default();
    if toolchain.iter().all(|t| t.starts_with(&home)) {
        let out = sh(&sandbox, cargo_test()).await;
        assert!(!out.success(), "{out:?}");
    }

    // A toolchain's bin/ is on PATH and its credential files stay masked.
    let tools = root.join("tools");
    std::fs::create_dir_all(tools.join("bin")).unwrap();
    let tool = tools.join("bin/hello-tool");
    std::fs::write(&tool, "#!/bin/sh\necho hello from the toolchain\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(tools.join("credentials.toml"), "token = \"secret\"\n").unwrap();
    let policy = RunPolicy {
        toolchain: vec![tools.display().to_string()],
        ..RunPolicy::default()
    };
    let script = format!(
        "hello-tool; cat {}/credentials.toml; echo end",
        tools.display()
    );
    let run = Confined::new("sh", &["-c", &script], &krate)
        .under(&policy)
        .unwrap();
    let out = sh(&sandbox, run).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello from the toolchain\nend\n",
        "{out:?}"
    );

    // A toolchain that is, holds or lies in a credential store or the masked state
    // directory, or that is missing, is refused.
    let state = root.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let state_parent = root.display().to_string();
    for entry in [
        "/etc",
        "/",
        "/root",
        "/nonexistent/toolchain",
        &state_parent,
    ] {
        let policy = RunPolicy {
            toolchain: vec![entry.to_string()],
            mask: vec![state.clone()],
            ..RunPolicy::default()
        };
        match Confined::new("true", &[], &krate).under(&policy) {
            Err(e @ SandboxError::Toolchain { .. }) => {
                assert!(e.to_string().contains(entry), "{e}")
            }
            other => panic!("{entry}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_scratches_are_swept_and_the_others_kept() {
    use iron::workspace::scratch::{claim, keep_for_review, sweep};
    let (_tmp, root) = test_root();
    let repo = fixture(&root);
    let provider = GitWorktree {
        repo: repo.clone(),
        root: root.join("state/scratch"),
    };
    let mut dead = Command::new("true").spawn().unwrap();
    dead.wait().unwrap();
    let dead_pid = dead.id().to_string();
    let mut made = Vec::new();
    for task in ["killed", "under-review", "running", "unclaimed"] {
        let s = provider.create(task).await.unwrap();
        match task {
            "killed" | "under-review" => {
                std::fs::write(format!("{}.owner", s.dir.display()), &dead_pid).unwrap();
            }
            "running" => claim(&s).unwrap(),
            _ => {}
        }
        if task == "under-review" {
            keep_for_review(&s).unwrap();
        }
        made.push(s);
    }
    let removed = sweep(&repo, &provider.root).await;
    assert_eq!(
        removed,
        [made[0].dir.clone()],
        "only the killed expert's scratch"
    );
    assert!(!made[0].dir.exists());
    assert!(made[1..].iter().all(|s| s.dir.exists()));
    let branches = git(&repo, &["branch", "--list", &branch_of("killed")]);
    assert!(branches.trim().is_empty(), "{branches}");
    assert!(!Path::new(&format!("{}.owner", made[0].dir.display())).exists());
}
