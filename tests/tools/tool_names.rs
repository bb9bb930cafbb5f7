//! Names a model sees: valid, namespaced, collision-free, stable, and mapped back.

use iron::tools::names::{MAX_NAME_LEN, ToolNames, ToolRef, valid_model_name};

fn r(s: &str, t: &str) -> ToolRef {
    ToolRef::new(s, t)
}

#[test]
fn plain_names_are_server_double_underscore_tool() {
    let names = ToolNames::build([r("files", "read_text_file"), r("time", "get_current_time")]);
    assert_eq!(
        names.exposed(&r("files", "read_text_file")),
        Some("files__read_text_file")
    );
    assert_eq!(
        names.resolve("time__get_current_time"),
        Some(&r("time", "get_current_time"))
    );
    assert_eq!(names.resolve("time/get_current_time"), None);
}

#[test]
fn names_are_cleaned_shortened_and_kept_apart() {
    let long = "x".repeat(120);
    let tools = vec![
        r("git", "repo.status"), // '.' is not allowed
        r("git", "repo_status"), // the cleaned form of the one above
        r("a__b", "c"),          // collides with the next, raw
        r("a", "b__c"),
        r("srv", &long),               // too long
        r("srv", &format!("{long}y")), // shares the first 64 characters
        r("ok", "fine"),
    ];
    let names = ToolNames::build(tools.clone());
    assert_eq!(names.len(), tools.len(), "every tool has its own name");
    for t in &tools {
        let n = names.exposed(t).unwrap();
        assert!(valid_model_name(n), "{n}");
        assert!(n.len() <= MAX_NAME_LEN);
        assert_eq!(names.resolve(n), Some(t), "{n} maps back");
    }
    assert_eq!(names.exposed(&r("ok", "fine")), Some("ok__fine"));
    assert_ne!(names.exposed(&r("a__b", "c")), Some("a__b__c"));
    assert!(
        names
            .exposed(&r("git", "repo.status"))
            .unwrap()
            .starts_with("git__repo_status_")
    );
}

#[test]
fn names_are_stable_across_order_and_unrelated_additions() {
    let base = vec![
        r("git", "repo.status"),
        r("srv", &"z".repeat(90)),
        r("ok", "fine"),
    ];
    let a = ToolNames::build(base.clone());
    let mut more = base.clone();
    more.reverse();
    more.push(r("new", "tool"));
    let b = ToolNames::build(more);
    for t in &base {
        assert_eq!(a.exposed(t), b.exposed(t), "{t:?}");
    }
}

#[test]
fn model_name_rule() {
    assert!(valid_model_name("a"));
    assert!(valid_model_name(&"a".repeat(64)));
    assert!(!valid_model_name(&"a".repeat(65)));
    assert!(!valid_model_name(""));
    assert!(!valid_model_name("a.b"));
    assert!(!valid_model_name("a/b"));
}
