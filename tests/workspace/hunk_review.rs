//! A hunk review that tells the truth, tried as an attacker (an expert whose changes are
//! meant to mislead the person who reviews them). Changes are made in real scratch worktrees,
//! read back with the production diff, proposed on the project's log exactly as an expert
//! proposes them, and reviewed and applied with the `iron hunks` a person runs:
//!
//! - a carriage return, an ANSI escape or a bidi override in a line or a file name is shown
//!   escaped by `iron hunks list` and `show`, never acted on by the terminal;
//! - a file header's meaning (a new symlink, a mode) is shown and is part of the hunk's id; a
//!   proposal that hides a symlink under a plain file's id is no hunk at all; a mode change
//!   without lines is listed as unreviewable and never applied;
//! - non-ASCII, spaced and quoted file names (and CRLF lines) are proposed and applied byte
//!   for byte;
//! - a file whose text is not UTF-8 is listed as unreviewable while the rest is proposed, and
//!   a change that cannot be proposed at all (its scratch's index locked) keeps its scratch,
//!   and the task's result and the log say why.

use crate::support;
use crate::support_tools;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use iron::core::envelope::Envelope;
use iron::memory::emit;
use iron::protocol::Payload;
use iron::protocol::payload::{ChangeUnreviewable, HunkProposed};
use iron::workspace::display::shown;
use iron::workspace::hunks::{self, FileChange};
use iron::workspace::review::{Proposal, changes_of, proposals};
use iron::workspace::scratch::{GitWorktree, Scratch, ScratchProvider};
use support::{copy_dir, git, project::Project};

const BOUND: Duration = Duration::from_secs(90);

/// A project with the shipped agent folders, the dev mesh's filesystem server as shipped
/// (confined, from the package store), its workspace at `repo` (a fixture repository, committed) and a verify
/// command that passes; models play `script`.
fn dev_project(script: &str) -> (Project, PathBuf) {
    let p = Project::scripted(script);
    p.operator("ana");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("aem"),
        &p.path("aem"),
    );
    let aem_md = p.path("aem/dev/AEM.md");
    let text = std::fs::read_to_string(&aem_md).unwrap();
    let text = support_tools::dev_servers_installed(&text)
        .replace("  target: .\n", "  target: repo\n")
        .replace("  idle_secs: 600\n", "  idle_secs: 3\n")
        .replace(
            "  verify: [cargo, check, --offline, --all-targets]\n  verify_secs: 1800\n",
            "  verify: [sh, -c, \"true\"]\n  verify_secs: 60\n",
        );
    assert!(
        text.contains("target: repo") && text.contains("idle_secs: 3"),
        "the shipped dev mesh changed"
    );
    std::fs::write(&aem_md, text).unwrap();
    p.build_catalog();
    let repo = p.path("repo");
    p.write("repo/src/cli.txt", "usage: tool [flags]\nflags: verbose\n");
    p.write("repo/w.txt", "a\n");
    p.write("repo/crlf.txt", "one\r\ntwo\r\n");
    p.write("repo/run.sh", "echo hi\n");
    git(&repo, &["init", "--quiet", "-b", "main"]);
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "fixture"]);
    let repo = repo.canonicalize().unwrap();
    (p, repo)
}

/// A scratch worktree of `repo` for `task`, under the project's state directory.
async fn scratch_of(p: &Project, repo: &Path, task: &str) -> Scratch {
    GitWorktree {
        repo: repo.to_path_buf(),
        root: p.path("scratch"),
    }
    .create(task)
    .await
    .unwrap()
}

/// What changed in `scratch`, proposed on the project's log for `task` exactly as an expert
/// of the dev mesh proposes it; the file changes.
async fn propose(p: &Project, repo: &Path, scratch: &Scratch, task: &str) -> Vec<FileChange> {
    let files = hunks::parse(&scratch.diff().await.unwrap()).unwrap();
    let log = p.log().await;
    for proposal in proposals(task, "dev/engineer", repo, scratch, &files) {
        let event = Envelope::new(
            "default",
            ["tasks", task],
            "expert/dev/engineer",
            proposal.kind(),
            proposal.to_value(),
        );
        emit(&log, &event).await.unwrap();
    }
    files
}

/// The id of the one hunk of `path` in `files`.
fn id_of(files: &[FileChange], path: &str) -> String {
    let file = files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no change of {path:?}: {files:#?}"));
    assert_eq!(file.hunks.len(), 1, "{file:#?}");
    file.hunks[0].id.clone()
}

/// Whether `text` holds a character a terminal would act on or hide.
fn acts_on_a_terminal(text: &str) -> bool {
    text.chars().any(|c| {
        (c.is_control() && c != '\n' && c != '\t')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_ascii_file_name_is_proposed_and_applied() {
    let (p, repo) = dev_project("turns: []\n");
    let task = "t-names";
    let scratch = scratch_of(&p, &repo, task).await;
    let written: [(&str, &[u8]); 6] = [
        ("café.txt", b"cr\xc3\xa8me\n"),
        ("new\nline\tand tab.txt", b"nl\n"),
        ("名前/ファイル.txt", b"x\n"),
        ("dir with space/a b.txt", b"spaced\n"),
        ("q\"uote\\d.txt", b"quoted\n"),
        ("crlf.txt", b"one\r\nTWO\r\n"),
    ];
    for (name, bytes) in written {
        let path = scratch.dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let files = propose(&p, &repo, &scratch, task).await;
    let ids: Vec<String> = written
        .iter()
        .map(|(name, _)| id_of(&files, name))
        .collect();

    let listed = p.iron_ok_inside(&["hunks", "list", "--task", task]);
    assert_eq!(listed.lines().count(), 6, "{listed}");
    for (name, _) in written {
        let seen = shown(name);
        assert!(listed.contains(&format!(" {seen} @@")), "{name}: {listed}");
    }
    assert!(listed.contains(" new\\nline\tand tab.txt @@"), "{listed}");
    let mut approve = vec!["hunks", "approve", "--user", "ana"];
    approve.extend(ids.iter().map(String::as_str));
    p.iron_ok_inside(&approve);
    let applied = p.iron_ok_inside(&["hunks", "apply", "--task", task, "--user", "ana"]);
    assert!(applied.contains("applied 6 hunk(s)"), "{applied}");
    for (name, bytes) in written {
        assert_eq!(std::fs::read(repo.join(name)).unwrap(), bytes, "{name}");
    }
    assert!(
        !scratch.dir.exists(),
        "every hunk decided: the scratch is removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_and_file_headers_are_shown_and_never_acted_on() {
    let (p, repo) = dev_project("turns: []\n");
    let task = "t-truth";
    let scratch = scratch_of(&p, &repo, task).await;
    let evil_name = "e\u{1b}[8mvil\u{202e}txt.rs";
    std::fs::write(scratch.dir.join(evil_name), "x\n").unwrap();
    // A carriage return that would hide `evil();` behind `+ok();`.
    std::fs::write(scratch.dir.join("w.txt"), "evil();\r+ok();\n").unwrap();
    // A new symlink, and a mode change without a line changed.
    std::os::unix::fs::symlink("/etc/passwd", scratch.dir.join("link")).unwrap();
    let run = scratch.dir.join("run.sh");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let files = propose(&p, &repo, &scratch, task).await;
    let (evil, w, link) = (
        id_of(&files, evil_name),
        id_of(&files, "w.txt"),
        id_of(&files, "link"),
    );

    let listed = p.iron_ok_inside(&["hunks", "list", "--task", task]);
    assert!(!acts_on_a_terminal(&listed), "{listed:?}");
    assert!(
        listed.contains(&format!("{evil} pending  e\\x1b[8mvil\\u{{202e}}txt.rs @@")),
        "{listed}"
    );
    assert!(listed.contains("(new file, mode 100644)"), "{listed}");
    let link_line = listed.lines().find(|l| l.starts_with(&link)).unwrap();
    assert!(link_line.contains("(new symlink, mode 120000)"), "{listed}");
    let run_line = listed
        .lines()
        .find(|l| l.contains("run.sh"))
        .unwrap_or_else(|| panic!("the mode change is listed: {listed}"));
    assert!(
        run_line.contains("unreviewable") && run_line.contains("mode 100644 → 100755"),
        "{run_line}"
    );

    let shown = p.iron_ok_inside(&["hunks", "show", &w]);
    assert!(!acts_on_a_terminal(&shown), "{shown:?}");
    assert!(shown.contains("\n+evil();\\r+ok();\n"), "{shown}");
    let shown = p.iron_ok_inside(&["hunks", "show", &link]);
    assert!(
        shown.starts_with("# link: new symlink, mode 120000\n"),
        "{shown}"
    );
    let shown = p.iron_ok_inside(&["hunks", "show", &evil]);
    assert!(!acts_on_a_terminal(&shown), "{shown:?}");

    // What is approved is what lands, byte for byte; the mode change never does, and the
    // scratch that holds it is kept.
    p.iron_ok_inside(&["hunks", "approve", "--user", "ana", &evil, &w, &link]);
    let applied = p.iron_ok_inside(&["hunks", "apply", "--task", task, "--user", "ana"]);
    assert!(applied.contains("applied 3 hunk(s)"), "{applied}");
    assert!(applied.contains("its scratch"), "{applied}");
    assert_eq!(
        std::fs::read(repo.join("w.txt")).unwrap(),
        b"evil();\r+ok();\n"
    );
    assert_eq!(
        std::fs::read_link(repo.join("link")).unwrap(),
        Path::new("/etc/passwd")
    );
    assert!(repo.join(evil_name).exists());
    let mode = std::fs::metadata(repo.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "the mode change was never approved");
    assert!(
        scratch.dir.exists(),
        "the unreviewable change stays in its scratch"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hunk_id_changes_when_a_new_file_becomes_a_symlink() {
    let (p, repo) = dev_project("turns: []\n");
    // The same line, once as a file and once as a symlink.
    let plain = scratch_of(&p, &repo, "t-plain").await;
    std::fs::write(plain.dir.join("link"), "/etc/passwd").unwrap();
    let file = hunks::parse(&plain.diff().await.unwrap()).unwrap();
    let linked = scratch_of(&p, &repo, "t-link").await;
    std::os::unix::fs::symlink("/etc/passwd", linked.dir.join("link")).unwrap();
    let link = hunks::parse(&linked.diff().await.unwrap()).unwrap();
    assert_eq!(file[0].hunks[0].lines, link[0].hunks[0].lines);
    let (file_id, link_id) = (id_of(&file, "link"), id_of(&link, "link"));
    assert_ne!(file_id, link_id);

    // An expert proposes the symlink under the id of the plain file: it is no hunk at all.
    let log = p.log().await;
    for proposal in proposals("t-link", "dev/engineer", &repo, &linked, &link) {
        let Proposal::Hunk(mut forged) = proposal else {
            panic!("the symlink is proposed as a hunk: {proposal:?}");
        };
        forged.hunk = file_id.clone();
        forged.summary = String::new();
        let event = Envelope::new(
            "default",
            ["tasks", "t-link"],
            "expert/dev/engineer",
            HunkProposed::KIND,
            forged.to_value(),
        );
        emit(&log, &event).await.unwrap();
    }
    let listed = p.iron_inside(&["hunks", "list", "--all"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).trim().is_empty(),
        "{listed:?}"
    );
    let refused = p.iron_inside(&["hunks", "approve", &file_id, "--user", "ana"]);
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains(&format!("no hunk {file_id}")),
        "{refused:?}"
    );
    assert!(std::fs::symlink_metadata(repo.join("link")).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_utf8_is_unreviewable_and_the_rest_is_proposed() {
    let (p, repo) = dev_project("turns: []\n");
    let task = "t-latin1";
    let scratch = scratch_of(&p, &repo, task).await;
    std::fs::write(scratch.dir.join("latin1.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(scratch.dir.join("NOTES.md"), "kept work\n").unwrap();
    // The production reading of a scratch, as the expert does it: one file unreadable, the
    // other proposed; before, the whole diff failed and nothing was proposed.
    let files = changes_of(&scratch).await.unwrap();
    assert_eq!(files.len(), 2, "{files:#?}");
    let log = p.log().await;
    for proposal in proposals(task, "dev/engineer", &repo, &scratch, &files) {
        let event = Envelope::new(
            "default",
            ["tasks", task],
            "expert/dev/engineer",
            proposal.kind(),
            proposal.to_value(),
        );
        emit(&log, &event).await.unwrap();
    }
    let notes = id_of(&files, "NOTES.md");
    let listed = p.iron_ok_inside(&["hunks", "list", "--task", task]);
    assert!(
        listed.contains(&format!("{notes} pending  NOTES.md")),
        "{listed}"
    );
    assert!(
        listed.contains("unreviewable latin1.txt: its diff is not UTF-8"),
        "{listed}"
    );
    p.iron_ok_inside(&["hunks", "approve", "--user", "ana", &notes]);
    let applied = p.iron_ok_inside(&["hunks", "apply", "--task", task, "--user", "ana"]);
    assert!(applied.contains("applied 1 hunk(s)"), "{applied}");
    assert!(applied.contains("is kept for you"), "{applied}");
    assert!(!repo.join("latin1.txt").exists());
    assert_eq!(
        std::fs::read(scratch.dir.join("latin1.txt")).unwrap(),
        b"caf\xe9\n"
    );
}

const UNPROPOSABLE: &str = r#"turns:
  - expect: "notes"
    tool_calls:
      - name: workspace__write_file
        arguments: {path: "NOTES.md", content: "kept work\n"}
      - name: sandbox__run_confined
        arguments: {command: sleep, args: ["5"]}
  - expect: "exit_code"
    text: "Wrote the notes."
"#;

/// The one scratch under the project's state directory, once it is made and claimed by its
/// expert (its `.owner` file is written after `git worktree add` finished).
fn the_scratch(p: &Project) -> Option<PathBuf> {
    std::fs::read_dir(p.path("scratch"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|d| {
            let mut owner = d.as_os_str().to_owned();
            owner.push(".owner");
            d.is_dir() && Path::new(&owner).exists()
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unproposable_change_keeps_its_scratch_and_says_why() {
    let (p, repo) = dev_project(UNPROPOSABLE);
    let up = p.up_inside(
        "nodes:\n  - {name: engine, namespace: /iron, executable: engine_node, autostart: true}\n",
        &[],
    );
    up.wait_for("/iron/engine: active", BOUND);
    let sender = p.spawn(
        "send",
        &support::bin("iron"),
        &[
            "task",
            "send",
            "--domain",
            "dev/engineer",
            "--timeout",
            "90",
            "write the notes",
        ],
    );
    // While the expert works, its scratch's index is locked (as by a git command that never
    // finished): what changed can then not be read back.
    support::wait_until(
        BOUND,
        || the_scratch(&p).is_some(),
        || format!("no scratch was made: {:#?}", sender.output()),
    );
    let scratch = the_scratch(&p).unwrap();
    let link = std::fs::read_to_string(scratch.join(".git")).unwrap();
    let gitdir = PathBuf::from(link.trim().strip_prefix("gitdir: ").unwrap());
    std::fs::write(gitdir.join("index.lock"), "").unwrap();
    sender.wait_for("could not be proposed for review", BOUND);
    let said = sender.output().join("\n");
    assert!(
        said.contains("index.lock") && said.contains("is kept"),
        "{said}"
    );
    let why: Vec<ChangeUnreviewable> = support::read(&p.events("change_unreviewable").await);
    assert_eq!(why.len(), 1, "{why:#?}");
    assert!(why[0].path.is_none(), "{why:#?}");
    assert!(why[0].why.contains("index.lock"), "{why:#?}");
    assert_eq!(why[0].scratch.as_os_str(), scratch.as_os_str());
    assert!(p.events("hunk_proposed").await.is_empty());
    // The expert goes when idle (it removes a scratch it proposed nothing from); the work
    // stays, and a person is shown where.
    let task = why[0].task_id.clone();
    let mut owner = scratch.as_os_str().to_owned();
    owner.push(".owner");
    let pid = std::fs::read_to_string(&owner).unwrap();
    support::wait_until(
        BOUND,
        || !Path::new("/proc").join(pid.trim()).exists(),
        || format!("the expert {pid} did not end"),
    );
    assert_eq!(
        std::fs::read_to_string(scratch.join("NOTES.md")).unwrap(),
        "kept work\n"
    );
    let listed = p.iron_ok_inside(&["hunks", "list", "--task", &task]);
    assert!(
        listed.contains("unreviewable (all of it): what changed could not be proposed"),
        "{listed}"
    );
    assert!(git(&repo, &["status", "--porcelain"]).is_empty());
}
