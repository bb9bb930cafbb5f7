//! Gate 2's unit tests: names, collection, resolution and the checks of one call.

use super::*;
use serde_json::json;

#[test]
fn names_that_are_paths() {
    for n in [
        "path",
        "paths",
        "filePath",
        "repo_path",
        "source",
        "destination",
        "root",
        "targetDir",
    ] {
        assert!(path_like_name(n), "{n}");
    }
    for n in ["content", "text", "pattern", "edits", "oldText", "message"] {
        assert!(!path_like_name(n), "{n}");
    }
}

#[test]
fn names_that_are_free_text() {
    for n in [
        "content",
        "oldText",
        "commit_message",
        "observations",
        "query",
    ] {
        assert!(text_like_name(n), "{n}");
    }
    // A path word wins: these are checked.
    for n in [
        "text_file",
        "contentPath",
        "dst",
        "target",
        "output",
        "branch",
    ] {
        assert!(!text_like_name(n), "{n}");
    }
}

#[test]
fn every_string_is_collected_with_how_it_is_read() {
    let args = json!({
        "paths": ["a", "b"], "opts": {"dir": "c", "dst": "d"}, "content": "/aem/x",
        "files": {"/etc/passwd": "x"}, "target": "t", "n": null, "count": 3
    });
    let mut out = Vec::new();
    collect_paths(&args, "", "", Kind::Text, &SchemaHints::default(), &mut out);
    let names: Vec<(&str, &str, Kind)> = out
        .iter()
        .map(|f| (f.argument.as_str(), f.name.as_str(), f.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("[key \"content\"]", "", Kind::Text),
            ("content", "content", Kind::Text),
            ("[key \"count\"]", "", Kind::Text),
            ("[key \"files\"]", "", Kind::Text),
            ("files[key \"/etc/passwd\"]", "files", Kind::Maybe),
            ("files./etc/passwd", "/etc/passwd", Kind::Maybe),
            ("[key \"n\"]", "", Kind::Text),
            ("[key \"opts\"]", "", Kind::Text),
            ("opts[key \"dir\"]", "opts", Kind::Maybe),
            ("opts.dir", "dir", Kind::Path),
            ("opts[key \"dst\"]", "opts", Kind::Maybe),
            ("opts.dst", "dst", Kind::Maybe),
            ("[key \"paths\"]", "", Kind::Text),
            ("paths[0]", "paths", Kind::Path),
            ("paths[1]", "paths", Kind::Path),
            ("[key \"target\"]", "", Kind::Text),
            ("target", "target", Kind::Maybe),
        ]
    );
    // A schema Iron ships exempts an argument, its keys and everything inside it.
    let hints = SchemaHints::shipped(&json!({"properties": {
        "bulletin": {"type": "object", "x-iron-path": false}
    }}));
    let mut out = Vec::new();
    let args = json!({"bulletin": {"/etc/passwd": "../aem/x"}});
    collect_paths(&args, "", "", Kind::Text, &hints, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
}

#[test]
fn schema_hints() {
    let schema = json!({"type": "object", "properties": {
        "out": {"type": "string", "format": "path"},
        "where": {"type": "string", "x-iron-path": true},
        "patch": {"type": "string", "x-iron-path": false},
        "text": {"type": "string"}
    }});
    let hints = SchemaHints::of(&schema);
    assert_eq!(hints.paths.iter().collect::<Vec<_>>(), ["out", "where"]);
    assert_eq!(hints.kind("patch"), Kind::Text);
    assert_eq!(hints.kind("other"), Kind::Maybe);
}

#[test]
fn lexical_parts_resolve_without_links() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let r = resolve_path(&base, Path::new("a/./b/../c//")).unwrap();
    assert_eq!(r, base.join("a/c"));
    let r = resolve_path(&base, Path::new("../../x")).unwrap();
    assert_eq!(r, base.parent().unwrap().parent().unwrap().join("x"));
}

#[test]
fn dangling_links_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(base.join("secret/new.md"), base.join("link")).unwrap();
    assert_eq!(
        resolve_path(&base, Path::new("link")).unwrap(),
        base.join("secret/new.md")
    );
}

#[test]
fn link_loops_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(base.join("b"), base.join("a")).unwrap();
    std::os::unix::fs::symlink(base.join("a"), base.join("b")).unwrap();
    assert!(resolve_path(&base, Path::new("a/x")).is_err());
}

/// A project with governance, a state directory and a scratch granted inside it.
fn lab() -> (tempfile::TempDir, PathBuf, PathPolicy, ServerPlace) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let scratch = root.join(".iron/scratch/s1");
    for d in ["aem/news", "config", ".git", "src"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        std::fs::create_dir_all(scratch.join(d)).unwrap();
    }
    let policy = PathPolicy::new(&root, &root.join(".iron"))
        .unwrap()
        .grant_root(&scratch)
        .unwrap();
    let place = ServerPlace {
        root: scratch.clone(),
        home: Some(root.join("home")),
    };
    (dir, root, policy, place)
}

fn reason(policy: &PathPolicy, access: Access, place: &ServerPlace, args: Value) -> String {
    match policy.check("s/t", access, place, &args, &SchemaHints::default()) {
        Ok(_) => "ok".to_string(),
        Err(d) => serde_json::to_value(&d.reason).unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_string(),
    }
}

#[test]
fn free_text_is_checked_when_its_whole_value_is_a_path() {
    let (_d, root, policy, place) = lab();
    let w = |args| reason(&policy, Access::Write, &place, args);
    assert_eq!(
        w(json!({"title": "../../../aem/news/SKILL.md"})),
        "governance"
    );
    assert_eq!(
        w(json!({"title": root.join("aem/news/SKILL.md")})),
        "governance"
    );
    assert_eq!(w(json!({"query": "FILE:///etc/passwd"})), "outside_roots");
    assert_eq!(
        w(json!({"body": "%2e%2e/%2e%2e/%2e%2e/config"})),
        "governance"
    );
    // Prose, file bodies and paths inside the root pass.
    assert_eq!(
        w(json!({"message": "Fix the bug in src/x.rs and ../aem", "title": "notes/today.md"})),
        "ok"
    );
    assert_eq!(w(json!({"content": "//! Docs\n/etc/passwd\n"})), "ok");
}

#[test]
fn object_keys_are_checked_like_values() {
    let (_d, _root, policy, place) = lab();
    let w = |args| reason(&policy, Access::Write, &place, args);
    assert_eq!(w(json!({"files": {"/etc/passwd": "x"}})), "outside_roots");
    assert_eq!(
        w(json!({"meta": {"x": {"aem/news/A.md": 1}}})),
        "governance"
    );
    assert_eq!(w(json!({"/etc/passwd": "x"})), "outside_roots");
    assert_eq!(w(json!({"files": {"src/a.rs": "x"}})), "ok");
}

#[test]
fn home_relative_paths_use_the_servers_home_or_are_refused() {
    let (_d, root, policy, mut place) = lab();
    place.home = Some(root.join(".iron/scratch/s1"));
    let w = |place: &ServerPlace, args| reason(&policy, Access::Write, place, args);
    assert_eq!(w(&place, json!({"dst": "~/src/a.rs"})), "ok");
    assert_eq!(
        w(&place, json!({"dst": "$HOME/../../../aem/x"})),
        "governance"
    );
    assert_eq!(
        w(&place, json!({"dst": "${HOME}/../../../x"})),
        "outside_roots"
    );
    place.home = None;
    assert_eq!(w(&place, json!({"dst": "~/src/a.rs"})), "unexpandable_home");
}

#[test]
fn reads_may_not_touch_secrets_or_the_state_directory() {
    let (_d, root, policy, place) = lab();
    let r = |args| reason(&policy, Access::Read, &place, args);
    for path in [
        root.join(".env"),
        root.join(".iron/caller.key"),
        root.join(".iron"),
        root.join(".git/config"),
        PathBuf::from("/home/u/.ssh/id_rsa"),
    ] {
        assert_eq!(r(json!({"path": path})), "secret", "{}", path.display());
    }
    // Governance and the rest of the machine are readable; the scratch in the state
    // directory too.
    for path in [
        root.join("aem/news"),
        root.join(".git/HEAD"),
        place.root.join("src"),
    ] {
        assert_eq!(r(json!({"path": path})), "ok", "{}", path.display());
    }
}

#[test]
fn dash_values_where_a_path_or_ref_is_expected_are_refused() {
    let (_d, _root, policy, place) = lab();
    for access in [Access::Read, Access::Write] {
        for args in [
            json!({"revision": "--output=/tmp/x"}),
            json!({"branch_name": "-D"}),
            json!({"files": ["src/a.rs", "--all"]}),
            json!({"target": " --no-index"}),
            json!({"repo_path": "%2d%2dupload-pack=x"}),
        ] {
            assert_eq!(
                reason(&policy, access, &place, args.clone()),
                "option_like",
                "{args}"
            );
        }
    }
    // In free text or another argument a dash is just a character.
    let args = json!({"message": "-- fixes", "revision": "HEAD~1", "n": "-1"});
    assert_eq!(reason(&policy, Access::Write, &place, args), "ok");
}

#[test]
fn the_scratch_root_is_a_place_to_work_not_a_file_to_write() {
    let (_d, _root, policy, place) = lab();
    let w = |args| reason(&policy, Access::Write, &place, args);
    let s = place.root.display().to_string();
    assert_eq!(w(json!({"repo_path": s, "files": ["src/a.rs"]})), "ok");
    assert_eq!(w(json!({"repo_path": ".", "message": "Fix it"})), "ok");
    assert_eq!(w(json!({"cwd": s})), "ok");
    // As a file target it is still an ancestor of its governance, and its .git is never
    // a target.
    assert_eq!(w(json!({"path": s})), "governance");
    assert_eq!(w(json!({"repo_path": format!("{s}/.git")})), "governance");
    assert_eq!(
        w(json!({"repo_path": s, "files": ["aem/news/SKILL.md"]})),
        "governance"
    );
}
