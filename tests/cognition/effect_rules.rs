//! The kernel's effect rules, as tables: verbs anywhere in a name, separators and
//! camelCase, the fail-closed default, annotations that only raise, and the lowering cap.

use Effect::{Destructive as D, Read as R, Write as W};
use iron::core::effect::{
    Clearance, Effect, LoweringRefused, classify_tool_name, lower_within_cap, raise_by_annotation,
    resolve_effect, split_words,
};

#[test]
fn names_split_on_separators_and_case() {
    let table: &[(&str, &[&str])] = &[
        ("read_text_file", &["read", "text", "file"]),
        ("list-directory", &["list", "directory"]),
        ("files.search", &["files", "search"]),
        ("git/git_log", &["git", "git", "log"]),
        ("getUserProfile", &["get", "user", "profile"]),
        ("HTTPGetStatus", &["http", "get", "status"]),
        ("deleteV2Item", &["delete", "v", "2", "item"]),
        ("send message", &["send", "message"]),
        ("", &[]),
    ];
    for (name, words) in table {
        assert_eq!(split_words(name), *words, "{name}");
    }
}

#[test]
fn classification_table() {
    let table: &[(&str, Effect, Option<&str>)] = &[
        // one verb, each separator and camelCase
        ("read_text_file", R, Some("read")),
        ("list-directory", R, Some("list")),
        ("search.files", R, Some("search")),
        ("tools/fetch", R, Some("fetch")),
        ("getCurrentTime", R, Some("get")),
        ("describeTable", R, Some("describe")),
        ("write_file", W, Some("write")),
        ("editFile", W, Some("edit")),
        ("send_message", W, Some("send")),
        ("git_commit", W, Some("commit")),
        ("create-issue", W, Some("create")),
        ("delete_file", D, Some("delete")),
        ("dropTable", D, Some("drop")),
        ("purge.cache", D, Some("purge")),
        ("run_confined", D, Some("run")),
        ("shell", D, Some("shell")),
        ("exec_command", D, Some("exec")),
        ("git_reset", D, Some("reset")),
        // query is destructive: a query can drop a table
        ("query", D, Some("query")),
        ("sql_query_readonly", D, Some("sql")),
        ("run_query", D, Some("run")),
        // no verb: fail closed
        ("directory_tree", D, None),
        ("git_log", D, None),
        ("weather", D, None),
        ("convert_time", D, None),
        ("", D, None),
        // the strongest verb wins, wherever it is
        ("get_and_delete_item", D, Some("delete")),
        ("listThenDrop", D, Some("drop")),
        ("read_or_write_file", W, Some("write")),
        ("search_and_send", W, Some("send")),
        // inflections count as the verb
        ("listing_deleted_items", D, Some("delete")),
        ("droppedRows", D, Some("drop")),
        ("runningJobs", D, Some("run")),
        ("pushes", W, Some("push")),
        // whole words only: verbs hidden inside other words do not count
        ("readme", D, None),
        ("settings_panel", D, None),
        ("getaway", D, None),
    ];
    for (name, effect, verb) in table {
        let c = classify_tool_name(name);
        assert_eq!((c.effect, c.verb), (*effect, *verb), "{name}");
    }
}

#[test]
fn clearances_gate_effects() {
    let table = [
        (Clearance::Read, R, true),
        (Clearance::Read, W, false),
        (Clearance::Read, D, false),
        (Clearance::ReadWrite, W, true),
        (Clearance::ReadWrite, D, false),
        (Clearance::Full, D, true),
    ];
    for (c, e, ok) in table {
        assert_eq!(c.permits(e), ok, "{c} / {e}");
    }
    assert_eq!(
        Clearance::from_word("read-write"),
        Some(Clearance::ReadWrite)
    );
    assert_eq!(Clearance::from_word("admin"), None);
    assert_eq!(Effect::from_word("destructive"), Some(D));
    assert_eq!(Effect::from_word("safe"), None);
}

#[test]
fn annotations_raise_but_never_lower() {
    assert_eq!(raise_by_annotation(R, Some(D)), D);
    assert_eq!(raise_by_annotation(R, Some(W)), W);
    // a server claiming its destructive tool is read-only is ignored
    assert_eq!(raise_by_annotation(D, Some(R)), D);
    assert_eq!(raise_by_annotation(W, Some(R)), W);
    assert_eq!(raise_by_annotation(W, None), W);
    let r = resolve_effect("delete_everything", Some(R), None).unwrap();
    assert_eq!((r.derived.effect, r.annotated, r.effect), (D, D, D));
    let r = resolve_effect("get_secret", Some(D), None).unwrap();
    assert_eq!((r.derived.effect, r.annotated, r.effect), (R, D, D));
}

#[test]
fn mcp_hints_map_to_effects() {
    assert_eq!(Effect::from_mcp_hints(Some(true), None), Some(R));
    assert_eq!(Effect::from_mcp_hints(Some(false), Some(false)), Some(W));
    assert_eq!(Effect::from_mcp_hints(Some(false), None), Some(D));
    assert_eq!(Effect::from_mcp_hints(None, Some(true)), Some(D));
    assert_eq!(Effect::from_mcp_hints(None, None), None);
}

#[test]
fn lowering_within_the_cap() {
    // one level down is allowed
    assert_eq!(lower_within_cap("run_confined", D, W), Ok(W));
    assert_eq!(lower_within_cap("directory_tree", D, W), Ok(W));
    assert_eq!(lower_within_cap("send_preview", W, R), Ok(R));
    // raising or keeping is always allowed
    assert_eq!(lower_within_cap("read_file", R, D), Ok(D));
    assert_eq!(lower_within_cap("delete_file", D, D), Ok(D));
}

#[test]
fn lowering_beyond_the_cap() {
    // two levels at once
    assert_eq!(
        lower_within_cap("run_confined", D, R),
        Err(LoweringRefused::TooFar {
            from: D,
            to: R,
            floor: W
        })
    );
    assert_eq!(
        lower_within_cap("weather", D, R),
        Err(LoweringRefused::TooFar {
            from: D,
            to: R,
            floor: W
        })
    );
    // irreversible verbs are never lowered, even by one level
    for name in [
        "delete_file",
        "dropTable",
        "purge_queue",
        "wipe-disk",
        "removeUser",
    ] {
        assert!(
            matches!(
                lower_within_cap(name, D, W),
                Err(LoweringRefused::Irreversible { to: W, .. })
            ),
            "{name}"
        );
    }
    // the cap is measured from the effect after annotations
    let raised = resolve_effect("get_report", Some(D), Some(R));
    assert!(matches!(
        raised,
        Err(LoweringRefused::TooFar { from: D, .. })
    ));
    let ok = resolve_effect("get_report", Some(D), Some(W)).unwrap();
    assert_eq!(ok.effect, W);
}
