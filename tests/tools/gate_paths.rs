//! Gate 2 (path guard) against the real filesystem server, which is allowed the whole
//! project so that only the guard stands between a write and the governance files.

use crate::support_tools as support;

use iron::tools::{CallContext, DenialReason, Gate, ToolError, ToolEventKind, ToolOutcome};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn ctx() -> CallContext {
    CallContext::task("task-g2")
}

/// The governance file every refusal must leave untouched.
fn aem_md(p: &support::ToolLab) -> PathBuf {
    p.root.join("aem/lab/AEM.md")
}

fn expect_governance(err: &ToolError, protected_suffix: &str) -> PathBuf {
    let d = err
        .denial()
        .unwrap_or_else(|| panic!("expected a denial, got {err:?}"));
    assert_eq!(d.gate, Gate::Path, "{err}");
    match &d.reason {
        DenialReason::Governance {
            protected,
            resolved,
            ..
        } => {
            assert!(
                protected.ends_with(protected_suffix),
                "{protected:?} / {err}"
            );
            resolved.clone()
        }
        other => panic!("expected Governance, got {other:?}"),
    }
}

async fn write(
    m: &iron::tools::ToolManager,
    path: Value,
) -> Result<iron::tools::ToolOutput, ToolError> {
    m.call(
        "fs__write_file",
        json!({"path": path, "content": "overwritten"}),
        &ctx(),
    )
    .await
}

#[tokio::test]
async fn absolute_path_into_aem_is_refused() {
    let p = support::tool_lab();
    let before = support::read(&aem_md(&p));
    let m = p.manager("writer");
    let err = write(&m, json!(aem_md(&p))).await.unwrap_err();
    let resolved = expect_governance(&err, "aem");
    assert_eq!(resolved, aem_md(&p));
    assert!(err.to_string().contains("gate 2"), "{err}");
    assert_eq!(support::read(&aem_md(&p)), before);
    // The compiled catalog and manifest, config/ and .git/ likewise.
    for (path, suffix) in [
        (p.build_dir().join("catalog.json"), "catalog.json"),
        (
            p.build_dir().join("tool_manifest.json"),
            "tool_manifest.json",
        ),
        (p.root.join("config/iron.yaml"), "config"),
        (p.root.join(".git/config"), ".git"),
    ] {
        let before = std::fs::read(&path).unwrap();
        let err = write(&m, json!(path)).await.unwrap_err();
        expect_governance(&err, suffix);
        assert_eq!(std::fs::read(&path).unwrap(), before, "{}", path.display());
    }
    let denied = p.events.of_kind(ToolEventKind::GateDenied);
    assert_eq!(denied.len(), 5);
    assert!(denied.iter().all(|e| matches!(
        e.outcome,
        ToolOutcome::Denied {
            gate: Gate::Path,
            gate_number: 2,
            ..
        }
    )));
    assert!(p.events.of_kind(ToolEventKind::ToolCall).is_empty());
}

#[tokio::test]
async fn dot_dot_traversal_is_resolved_before_the_check() {
    let p = support::tool_lab();
    let m = p.manager("writer");
    // Into governance through the granted root.
    let sneaky = format!("{}/../aem/lab/AEM.md", p.work().display());
    let err = write(&m, json!(sneaky)).await.unwrap_err();
    assert_eq!(expect_governance(&err, "aem"), aem_md(&p));
    // Relative, against the server's root (the project).
    let err = write(&m, json!("work/../aem/lab/AEM.md"))
        .await
        .unwrap_err();
    expect_governance(&err, "aem");
    // Out of every granted root.
    let escape = format!("{}/../escape.txt", p.work().display());
    let err = write(&m, json!(escape)).await.unwrap_err();
    let d = err.denial().unwrap();
    assert!(
        matches!(&d.reason, DenialReason::OutsideRoots { resolved, .. } if resolved == &p.root.join("escape.txt")),
        "{err}"
    );
    assert!(!p.root.join("escape.txt").exists());
}

#[tokio::test]
async fn symlink_inside_the_root_to_a_governance_file_is_refused() {
    let p = support::tool_lab();
    let before = support::read(&aem_md(&p));
    let link = p.work().join("innocent.md");
    std::os::unix::fs::symlink(aem_md(&p), &link).unwrap();
    // A link to a directory, then a path through it.
    std::os::unix::fs::symlink(p.root.join("config"), p.work().join("settings")).unwrap();
    // A dangling link to a governance file that does not exist yet.
    std::os::unix::fs::symlink(p.root.join("aem/lab/NEW.md"), p.work().join("later.md")).unwrap();
    let m = p.manager("writer");
    let err = write(&m, json!(link)).await.unwrap_err();
    assert_eq!(expect_governance(&err, "aem"), aem_md(&p));
    let err = write(&m, json!(p.work().join("settings/iron.yaml")))
        .await
        .unwrap_err();
    expect_governance(&err, "config");
    let err = write(&m, json!(p.work().join("later.md")))
        .await
        .unwrap_err();
    expect_governance(&err, "aem");
    assert_eq!(support::read(&aem_md(&p)), before);
    assert!(!p.root.join("aem/lab/NEW.md").exists());
}

#[tokio::test]
async fn dot_segments_and_trailing_slashes_do_not_hide_governance() {
    let p = support::tool_lab();
    let m = p.manager("writer");
    let r = p.root.display().to_string();
    for path in [
        format!("{r}/./aem/./lab/AEM.md"),
        format!("{r}//aem//lab/"),
        format!("{r}/work/./../config/"),
        format!("{r}/aem"),
        format!("{r}/aem/"),
        // An ancestor of governance: moving or writing it would touch aem/.
        r.clone(),
    ] {
        let err = m
            .call("fs__create_directory", json!({"path": path}), &ctx())
            .await
            .unwrap_err();
        assert_eq!(
            err.denial().map(|d| d.gate),
            Some(Gate::Path),
            "{path}: {err}"
        );
        assert!(
            matches!(
                err.denial().unwrap().reason,
                DenialReason::Governance { .. }
            ),
            "{path}: {err}"
        );
    }
}

#[tokio::test]
async fn every_path_argument_is_checked() {
    let p = support::tool_lab();
    let m = p.manager("writer");
    let src = p.work().join("draft.md");
    std::fs::write(&src, "draft").unwrap();
    // move_file: the destination is governance.
    let err = m
        .call(
            "fs__move_file",
            json!({"source": src, "destination": p.root.join(".git/hooks/pre-commit")}),
            &ctx(),
        )
        .await
        .unwrap_err();
    expect_governance(&err, ".git");
    // move_file: the source is governance.
    let err = m
        .call("fs__move_file", json!({"source": p.root.join("config/iron.yaml"), "destination": p.work().join("stolen.yaml")}), &ctx())
        .await
        .unwrap_err();
    expect_governance(&err, "config");
    assert!(src.exists() && p.root.join("config/iron.yaml").exists());
    // Outside the granted roots, though not governance.
    let err = write(&m, json!(p.root.join("notes.txt")))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.denial().unwrap().reason,
            DenialReason::OutsideRoots { .. }
        ),
        "{err}"
    );
    // Home-relative paths: this server's declared home is not a granted root.
    let err = write(&m, json!("~/x.txt")).await.unwrap_err();
    assert!(
        matches!(
            err.denial().unwrap().reason,
            DenialReason::OutsideRoots { .. }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_normal_write_inside_the_root_succeeds_on_the_real_server() {
    let p = support::tool_lab();
    let m = p.manager("writer");
    let target = p.work().join("notes/today.md");
    let out = m
        .call(
            "fs__create_directory",
            json!({"path": p.work().join("notes")}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    let out = write(&m, json!(target)).await.unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(support::read(&target), "overwritten");
    // Relative to the server's root, and with harmless dot segments.
    let out = write(&m, json!("work/./notes/../rel.md")).await.unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(support::read(&p.work().join("rel.md")), "overwritten");
    // A move inside the root.
    let out = m
        .call(
            "fs__move_file",
            json!({"source": target, "destination": p.work().join("moved.md")}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert!(p.work().join("moved.md").exists() && !target.exists());
    assert!(p.events.of_kind(ToolEventKind::GateDenied).is_empty());
}

#[tokio::test]
async fn reading_governance_is_not_refused() {
    // Gate 2 guards writes of governance; reading it is not its business (gate 1 and the
    // server's own allow-list are). Only secrets are kept from read tools (below).
    let p = support::tool_lab();
    let m = p.manager("writer");
    let out = m
        .call("fs__read_text_file", json!({"path": aem_md(&p)}), &ctx())
        .await
        .unwrap();
    assert!(out.text().contains("name: lab"));
    let _: &Path = &p.root;
}

/// A write tool whose file argument is called `dst` (no path word): gate 2 checks it all
/// the same, nested arguments too, while free text (`text`) is never taken as a path.
#[tokio::test]
async fn an_argument_of_any_name_that_names_a_file_is_checked() {
    let p = support::tool_lab();
    let m = p.manager("operator");
    let own = p.root.join("aem/lab/skills/operator/capabilities.md");
    let before = support::read(&own);
    let save = |args: Value| {
        let m = &m;
        async move { m.call("faulty__save_text", args, &ctx()).await }
    };
    // Relative to the server's working directory (the work root), up into governance.
    let err = save(
        json!({"dst": "../aem/lab/skills/operator/capabilities.md", "text": "clearance: full"}),
    )
    .await
    .unwrap_err();
    assert_eq!(expect_governance(&err, "aem"), own);
    assert!(err.to_string().contains("`dst`"), "{err}");
    assert_eq!(support::read(&own), before);
    // Out of the roots through a name that is no path word, at any depth.
    for args in [
        json!({"dst": "/tmp/iron-gate2-escape.txt", "text": "x"}),
        json!({"dst": "ok.txt", "text": "x", "opts": {"target": p.root.join("notes.txt")}}),
        json!({"dst": "ok.txt", "text": "x", "outputs": [{"output": "../escape.txt"}]}),
        json!({"dst": "file:///etc/passwd", "text": "x"}),
        json!({"dst": "~/x.txt", "text": "x"}),
    ] {
        let err = save(args.clone()).await.unwrap_err();
        assert!(
            matches!(
                err.denial().map(|d| &d.reason),
                Some(
                    DenialReason::OutsideRoots { .. }
                        | DenialReason::Unresolvable { .. }
                        | DenialReason::UnexpandableHome { .. }
                )
            ),
            "{args}: {err}"
        );
    }
    assert!(!Path::new("/tmp/iron-gate2-escape.txt").exists());
    assert!(!p.root.join("notes.txt").exists() && !p.root.join("escape.txt").exists());
    assert!(!p.work().join("ok.txt").exists());
    // Inside the root it writes, and free text that mentions paths is left alone.
    let out =
        save(json!({"dst": "ok.txt", "text": "Note: /etc/passwd and ../aem/ are just words"}))
            .await
            .unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(
        support::read(&p.work().join("ok.txt")),
        "Note: /etc/passwd and ../aem/ are just words"
    );
    assert!(p.events.of_kind(ToolEventKind::ToolCall).len() == 1);
}

// Issue 31, tried as an attacker: each call below is one attempt to get a file written,
// or a secret read, past gate 2 through the production path (a tool manager of the lab
// mesh, real servers). Every one must be refused and leave the files as they were.

/// The reason a refused call names, as its snake_case tag.
fn refused(result: Result<iron::tools::ToolOutput, ToolError>) -> String {
    let err = match result {
        Ok(out) => panic!("the call was let through: {}", out.text()),
        Err(e) => e,
    };
    let d = err
        .denial()
        .unwrap_or_else(|| panic!("expected a gate 2 denial, got {err:?}"));
    assert_eq!(d.gate, Gate::Path, "{err}");
    serde_json::to_value(&d.reason).unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Every governance file of the lab, with its content, to show nothing changed.
fn governance_snapshot(p: &support::ToolLab) -> Vec<(PathBuf, Vec<u8>)> {
    [
        aem_md(p),
        p.root.join("aem/lab/skills/operator/capabilities.md"),
        p.root.join("config/iron.yaml"),
        p.root.join(".git/config"),
        p.build_dir().join("catalog.json"),
    ]
    .into_iter()
    .map(|f| {
        let bytes = std::fs::read(&f).unwrap();
        (f, bytes)
    })
    .collect()
}

fn assert_unchanged(before: &[(PathBuf, Vec<u8>)]) {
    for (f, bytes) in before {
        assert_eq!(&std::fs::read(f).unwrap(), bytes, "{} changed", f.display());
    }
}

#[tokio::test]
async fn a_title_argument_holding_a_governance_path_is_refused() {
    let p = support::tool_lab();
    let before = governance_snapshot(&p);
    let m = p.manager("operator");
    let caps = p.root.join("aem/lab/skills/operator/capabilities.md");
    // `save_note` writes `body` to the file named by `title`, from the work root.
    for (title, reason) in [
        ("../aem/lab/skills/operator/capabilities.md", "governance"),
        (caps.to_str().unwrap(), "governance"),
        (" ../config/iron.yaml\n", "governance"),
        ("../escape.txt", "outside_roots"),
    ] {
        let r = m
            .call(
                "faulty__save_note",
                json!({"title": title, "body": "clearance: full"}),
                &ctx(),
            )
            .await;
        assert_eq!(refused(r), reason, "{title:?}");
    }
    // The same through other free-text names of a destructive tool.
    for args in [
        json!({"text": aem_md(&p)}),
        json!({"text": "x", "query": "../aem/lab/AEM.md"}),
        json!({"text": "x", "description": "/etc/passwd"}),
    ] {
        let r = m.call("faulty__echo", args.clone(), &ctx()).await;
        assert_ne!(refused(r), "", "{args}");
    }
    assert_unchanged(&before);
    assert!(!p.root.join("escape.txt").exists());
    // A title that is a plain name is a note in the root.
    let out = m
        .call(
            "faulty__save_note",
            json!({"title": "today.md", "body": "fine"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(support::read(&p.work().join("today.md")), "fine");
}

#[tokio::test]
async fn an_object_key_naming_etc_passwd_is_refused() {
    let p = support::tool_lab();
    let before = governance_snapshot(&p);
    let m = p.manager("operator");
    let save = |extra: Value| {
        let m = &m;
        let mut args = json!({"dst": "ok.txt", "text": "x"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        async move { m.call("faulty__save_text", args, &ctx()).await }
    };
    assert_eq!(
        refused(save(json!({"files": {"/etc/passwd": "x"}})).await),
        "outside_roots"
    );
    assert_eq!(
        refused(save(json!({"meta": {"deep": {"../aem/lab/AEM.md": 1}}})).await),
        "governance"
    );
    assert_eq!(
        refused(save(json!({"/etc/passwd": "top-level key"})).await),
        "outside_roots"
    );
    assert_unchanged(&before);
    assert!(!p.work().join("ok.txt").exists());
}

/// `fs/write_file` (the real filesystem server, allowed the whole project) at a `file:`
/// URI spelled some way.
async fn write_uri(p: &support::ToolLab, uri: String) -> String {
    let m = p.manager("writer");
    refused(write(&m, json!(uri)).await)
}

#[tokio::test]
async fn uppercase_file_scheme_is_refused() {
    let p = support::tool_lab();
    let before = governance_snapshot(&p);
    let a = aem_md(&p).display().to_string();
    assert_eq!(write_uri(&p, format!("FILE://{a}")).await, "governance");
    assert_eq!(write_uri(&p, format!("File://{a}")).await, "governance");
    assert_eq!(
        write_uri(&p, "FILE:///etc/passwd".into()).await,
        "outside_roots"
    );
    assert_unchanged(&before);
}

#[tokio::test]
async fn file_colon_single_slash_is_refused() {
    let p = support::tool_lab();
    let before = governance_snapshot(&p);
    let a = aem_md(&p).display().to_string();
    assert_eq!(write_uri(&p, format!("file:{a}")).await, "governance");
    assert_eq!(
        write_uri(&p, "file:/etc/passwd".into()).await,
        "outside_roots"
    );
    assert_unchanged(&before);
}

#[tokio::test]
async fn file_localhost_uri_is_refused() {
    let p = support::tool_lab();
    let before = governance_snapshot(&p);
    let a = aem_md(&p).display().to_string();
    assert_eq!(
        write_uri(&p, format!("file://localhost{a}")).await,
        "governance"
    );
    assert_eq!(
        write_uri(&p, format!("FILE://LOCALHOST{a}")).await,
        "governance"
    );
    // Another host cannot be resolved here: refused rather than guessed.
    assert_eq!(
        write_uri(&p, format!("file://files.example{a}")).await,
        "unresolvable"
    );
    assert_unchanged(&before);
}

#[tokio::test]
async fn percent_encoded_dotdot_is_refused() {
    let p = support::tool_lab();
    let before = governance_snapshot(&p);
    let m = p.manager("operator");
    for dst in [
        "%2e%2e/aem/lab/AEM.md",
        "%2E%2E%2Fconfig%2Firon.yaml",
        "%252e%252e/aem/lab/AEM.md",
        "..%2f..%2fetc%2fpasswd",
    ] {
        let r = m
            .call(
                "faulty__save_text",
                json!({"dst": dst, "text": "x"}),
                &ctx(),
            )
            .await;
        assert!(
            ["governance", "outside_roots"].contains(&refused(r).as_str()),
            "{dst}"
        );
    }
    let a = aem_md(&p).display().to_string().replace('/', "%2F");
    assert_eq!(write_uri(&p, format!("file:{a}")).await, "governance");
    assert_unchanged(&before);
}

#[tokio::test]
async fn tilde_and_dollar_home_are_expanded_and_checked() {
    let p = support::tool_lab();
    let before = governance_snapshot(&p);
    // The filesystem server's declared HOME and its root are the work root here: both
    // readings of `~/x` (expanded, and a directory called `~`) land inside it.
    let mut setup = p.setup();
    let work = p.work().display().to_string();
    setup.env.insert("LAB_HOME".into(), work.clone());
    setup.env.insert("LAB_FS_ROOT".into(), work);
    let m = p.manager_with("writer", setup);
    for (path, reason) in [
        ("~/../aem/lab/AEM.md", "governance"),
        ("$HOME/../config/iron.yaml", "governance"),
        ("${HOME}/../escape.txt", "outside_roots"),
        ("file:~/../aem/lab/AEM.md", "governance"),
        ("~root/.bashrc", "unexpandable_home"),
    ] {
        assert_eq!(refused(write(&m, json!(path)).await), reason, "{path}");
    }
    // Inside the home, which is the root, the server writes where the guard looked.
    let out = write(&m, json!("~/from-home.md")).await.unwrap();
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(support::read(&p.work().join("from-home.md")), "overwritten");
    // A server whose declaration names no HOME: home-relative paths cannot be checked.
    let m = p.manager("operator");
    let r = m
        .call(
            "faulty__save_text",
            json!({"dst": "~/x.txt", "text": "x"}),
            &ctx(),
        )
        .await;
    assert_eq!(refused(r), "unexpandable_home");
    assert_unchanged(&before);
    assert!(!p.root.join("escape.txt").exists());
}

#[tokio::test]
async fn a_relative_path_resolves_where_the_server_runs() {
    // As in an expert: servers' relative arguments are taken from the project, and the
    // granted root of a write-capable server is its own (the scratch, here `work/`).
    let p = support::tool_lab();
    let setup = iron::tools::ManagerSetup::new(p.events.clone(), p.policy(), &p.root, p.env())
        .with_server_root("faulty", p.work());
    let m = p.manager_with("operator", setup);
    std::fs::create_dir_all(p.root.join("src")).unwrap();
    std::fs::create_dir_all(p.work().join("src")).unwrap();
    let out = m
        .call(
            "faulty__save_text",
            json!({"dst": "src/cli.txt", "text": "x"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    // Written in the root gate 2 checked, not in the project the expert runs in.
    assert!(!p.root.join("src/cli.txt").exists());
    assert_eq!(support::read(&p.work().join("src/cli.txt")), "x");
}

#[tokio::test]
async fn a_read_tool_cannot_read_the_state_directory_or_dotenv() {
    let p = support::tool_lab();
    std::fs::write(p.root.join(".env"), "API_TOKEN=s3cret-token-0042\n").unwrap();
    std::fs::write(p.work().join(".env.local"), "API_TOKEN=s3cret-token-0042\n").unwrap();
    std::fs::write(p.build_dir().join("caller.key"), "s3cret-token-0042").unwrap();
    let m = p.manager("reader");
    let root = p.root.display().to_string();
    for path in [
        format!("{root}/.env"),
        format!("{root}/work/.env.local"),
        "work/../.env".to_string(),
        format!("file://{root}/.env"),
        format!("{root}/%2eenv"),
        format!("{root}/build/catalog.json"),
        format!("{root}/build/caller.key"),
        format!("{root}/build"),
        format!("{root}/.git/config"),
    ] {
        let r = m
            .call("fs__read_text_file", json!({"path": path}), &ctx())
            .await;
        assert_eq!(refused(r), "secret", "{path}");
    }
    let r = m
        .call(
            "fs__list_directory",
            json!({"path": format!("{root}/build")}),
            &ctx(),
        )
        .await;
    assert_eq!(refused(r), "secret");
    let recorded = format!("{:?}", p.events.events());
    assert!(!recorded.contains("s3cret-token-0042"));
    assert!(p.events.of_kind(ToolEventKind::ToolCall).is_empty());
}

/// `work/` as a git repository with one commit, for the git tools of the test server.
fn git_repo(p: &support::ToolLab) -> PathBuf {
    let w = p.work();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&w)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["config", "user.name", "Lab"]);
    git(&["config", "user.email", "lab@example.invalid"]);
    std::fs::write(w.join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    w
}

fn git_log(repo: &Path) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["log", "--format=%s"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn a_dash_leading_ref_is_refused() {
    let p = support::tool_lab();
    let repo = git_repo(&p);
    let m = p.manager("operator");
    let pwned = p.root.join("pwned.txt");
    // `git diff --output=<file>` writes a file: through a read tool.
    for target in [
        format!("--output={}", pwned.display()),
        format!(" --output={}", pwned.display()),
        "%2D%2Doutput=../pwned.txt".to_string(),
    ] {
        let r = m
            .call(
                "faulty__git_diff",
                json!({"repo_path": repo, "target": target}),
                &ctx(),
            )
            .await;
        assert_eq!(refused(r), "option_like", "{target}");
    }
    // `git add --all` would stage what no path names.
    let r = m
        .call(
            "faulty__git_add",
            json!({"repo_path": repo, "files": ["a.txt", "--all"]}),
            &ctx(),
        )
        .await;
    assert_eq!(refused(r), "option_like");
    let r = m
        .call(
            "faulty__git_diff",
            json!({"repo_path": "--upload-pack=touch /tmp/x", "target": "HEAD"}),
            &ctx(),
        )
        .await;
    assert_eq!(refused(r), "option_like");
    assert!(!pwned.exists());
    // An ordinary ref passes and the read tool answers.
    let out = m
        .call(
            "faulty__git_diff",
            json!({"repo_path": repo, "target": "HEAD"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(out.text().starts_with("exit 0"), "{}", out.text());
}

#[tokio::test]
async fn git_tools_work_at_the_scratch_root() {
    let p = support::tool_lab();
    let repo = git_repo(&p);
    let m = p.manager("operator");
    std::fs::write(repo.join("a.txt"), "two\n").unwrap();
    for (tool, args) in [
        (
            "faulty__git_add",
            json!({"repo_path": repo, "files": ["a.txt"]}),
        ),
        (
            "faulty__git_commit",
            json!({"repo_path": repo, "message": "second"}),
        ),
    ] {
        let out = m.call(tool, args, &ctx()).await.unwrap();
        assert!(out.text().starts_with("exit 0"), "{tool}: {}", out.text());
    }
    assert_eq!(git_log(&repo), "second\nfirst\n");
    // The root is a place to work, not a file target: its .git and governance stay shut.
    for args in [
        json!({"repo_path": repo.join(".git"), "files": ["a.txt"]}),
        json!({"repo_path": repo, "files": [".git/config"]}),
        json!({"repo_path": p.root, "files": ["a.txt"]}),
    ] {
        let r = m.call("faulty__git_add", args.clone(), &ctx()).await;
        assert_eq!(refused(r), "governance", "{args}");
    }
}

#[tokio::test]
async fn a_commit_message_of_prose_mentioning_paths_still_passes() {
    let p = support::tool_lab();
    let repo = git_repo(&p);
    let m = p.manager("operator");
    let message =
        "Fix the bug in src/x.rs\n\nThe guard read ../aem/lab/AEM.md and /etc/passwd as prose.";
    std::fs::write(repo.join("a.txt"), "three\n").unwrap();
    let out = m
        .call(
            "faulty__git_add",
            json!({"repo_path": repo, "files": ["a.txt"]}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(out.text().starts_with("exit 0"), "{}", out.text());
    for message in [message, "Fix the bug in src/x.rs"] {
        std::fs::write(repo.join("a.txt"), message).unwrap();
        m.call(
            "faulty__git_add",
            json!({"repo_path": repo, "files": ["a.txt"]}),
            &ctx(),
        )
        .await
        .unwrap();
        let out = m
            .call(
                "faulty__git_commit",
                json!({"repo_path": repo, "message": message}),
                &ctx(),
            )
            .await
            .unwrap();
        assert!(out.text().starts_with("exit 0"), "{}", out.text());
    }
    assert!(git_log(&repo).starts_with("Fix the bug in src/x.rs\nFix the bug in src/x.rs\n"));
    assert!(p.events.of_kind(ToolEventKind::GateDenied).is_empty());
}
