//! The bad-input corpus: every malformed mesh under `tests/fixtures/aem_bad/<case>` fails
//! the build with exactly the errors listed here (file, field, message, line where the
//! parser or a search can tell), and nothing else.

use crate::support;

use iron::aem::{self, Diagnostic};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// One expected error: file (path suffix under the case), field, message fragment, line.
struct Want {
    file: &'static str,
    field: &'static str,
    message: &'static str,
    line: Option<usize>,
}

const AEM: &str = "m/AEM.md";
const SKILL: &str = "m/skills/a/SKILL.md";
const CAPS: &str = "m/skills/a/capabilities.md";

fn w(file: &'static str, field: &'static str, message: &'static str) -> Want {
    Want {
        file,
        field,
        message,
        line: None,
    }
}

fn wl(file: &'static str, field: &'static str, message: &'static str, line: usize) -> Want {
    Want {
        file,
        field,
        message,
        line: Some(line),
    }
}

fn matches(d: &Diagnostic, case_dir: &Path, want: &Want) -> bool {
    d.file == case_dir.join(want.file)
        && d.field == want.field
        && d.to_string().contains(want.message)
        && want.line.is_none_or(|l| d.line == Some(l))
}

fn check(case: &str, wants: &[Want]) {
    let dir = fixtures().join("aem_bad").join(case);
    assert!(dir.is_dir(), "missing fixture {case}");
    let errors = match aem::compile(&dir) {
        Ok(_) => panic!("{case}: the build must fail"),
        Err(e) => e,
    };
    for want in wants {
        assert!(
            errors.iter().any(|d| matches(d, &dir, want)),
            "{case}: expected {}: {}: …{}… (line {:?}), got:\n{errors}",
            want.file,
            want.field,
            want.message,
            want.line
        );
    }
    assert_eq!(
        errors.len(),
        wants.len(),
        "{case}: unexpected extra errors:\n{errors}"
    );
}

#[test]
fn base_fixture_compiles() {
    // Every bad case is this mesh with one thing broken.
    let c = aem::compile(&fixtures().join("aem_good")).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.expert("m/a").is_some() && c.expert("m/b").is_some());
}

macro_rules! corpus {
    ($($name:ident => [$($want:expr),+ $(,)?];)+) => {
        $(
            #[test]
            fn $name() {
                check(stringify!($name), &[$($want),+]);
            }
        )+
        #[test]
        fn every_fixture_has_a_test() {
            let listed = [$(stringify!($name)),+];
            let mut on_disk: Vec<String> = std::fs::read_dir(fixtures().join("aem_bad"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            on_disk.sort();
            let mut listed: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
            listed.sort();
            assert_eq!(on_disk, listed);
            assert!(listed.len() >= 25);
        }
    };
}

corpus! {
    unknown_memory_kind => [wl(SKILL, "memory[0].kind", "unknown memory kind `epsiodic` (expected one of: working, episodic, semantic, procedural, identity)", 6)];
    unknown_scope => [wl(SKILL, "memory[0].scope", "unknown memory scope `team` (expected one of: own, mesh, system)", 7)];
    unknown_access => [wl(SKILL, "memory[0].access", "unknown memory access `rw`", 8)];
    derived_memory_written => [w(SKILL, "memory[0].access", "memory kind `semantic` cannot be mounted with access `read-write`")];
    duplicate_memory => [wl(SKILL, "memory[1]", "memory `episodic` with scope `own` is declared twice", 9)];
    unknown_clearance => [wl(CAPS, "clearance", "unknown clearance `admin` (expected one of: read, read-write, full)", 2)];
    unknown_mesh_clearance => [wl(AEM, "defaults.clearance", "unknown clearance `root`", 7)];
    // A server named `tools`, declared after other servers' `tools:` lists: the error points at
    // its own `transport` (missing: its key), not at the first `tools:` in the file.
    server_named_like_a_key => [wl(AEM, "servers.tools.transport", "`transport` is missing", 17)];
    unknown_transport => [wl(AEM, "servers.fs.transport", "unknown transport `stdio` (expected one of: local, native, remote)", 10)];
    local_without_command => [w(AEM, "servers.fs.command", "malformed server descriptor: a local server needs `command`")];
    inline_env_secret => [w(AEM, "servers.fs.env.API_KEY", "environment value of `API_KEY` is inline")];
    native_with_command => [w(AEM, "servers.delivery.command", "`command` does not apply to a native server")];
    remote_without_service => [w(AEM, "servers.out.service", "a remote server needs `service`")];
    write_outside_workspace => [wl(AEM, "servers.fs.args", "expert `m/a` holds write-class tools of `fs` (write_file), but its argument `.` is outside `workspace/`", 12)];
    tool_above_clearance => [wl(CAPS, "tools.add", "tool `fs/write_file` has effect `write` (verb `write`) and needs clearance `read-write`, but expert `m/a` has `read`", 4)];
    mesh_tool_above_clearance => [
        w(AEM, "tools", "tool `fs/write_file` has effect `write` (verb `write`) and needs clearance `read-write`, but expert `m/a` has `read`"),
        w(AEM, "tools", "but expert `m/b` has `read`"),
    ];
    lowering_too_far => [w(CAPS, "effects.fs/directory_tree", "effect declaration for `fs/directory_tree` over-reaches: declaring `read` lowers `destructive` by more than 1 level; the lowest allowed is `write`")];
    lowering_irreversible => [w(CAPS, "effects.fs/delete_file", "lowers a tool with the irreversible verb `delete`, which stays `destructive`")];
    stray_effect_declaration => [w(CAPS, "effects.fs/write_file", "effect declared for `fs/write_file`, which this expert is not granted")];
    unknown_effect_word => [w(CAPS, "effects.fs/write_file", "unknown effect `safe` (expected one of: read, write, destructive)")];
    unknown_peer => [wl(CAPS, "peers.add[0]", "unknown peer `zed`", 3)];
    parked_peer => [w(CAPS, "peers.add[0]", "peer `p/x` belongs to a parked mesh and cannot be spawned")];
    self_peer => [w(CAPS, "peers.add[0]", "an expert cannot be its own peer")];
    unknown_source => [w(CAPS, "sources.add[0]", "unknown perception source `nope` (expected a source registered under `msp.sources` in AEM.md (feed))")];
    unknown_tool => [w(CAPS, "tools.add[0]", "server `fs` declares no tool `nope`")];
    unknown_server => [w(CAPS, "tools.add[0]", "unknown server `web` (expected a server registered in AEM.md (delivery, fs))")];
    malformed_tool_ref => [w(CAPS, "tools.add[0]", "`read_text_file` is not a tool reference (expected `server/tool`")];
    unknown_channel => [w(CAPS, "delivery[0]", "unknown delivery channel `sms`")];
    delivery_above_clearance => [w(CAPS, "delivery[0]", "tool `delivery/send_message` has effect `write` (delivery channel `chat`)")];
    duplicate_role => [w("m/skills/c/SKILL.md", "name", "role `a` is already defined by")];
    skill_tool_reference => [w(SKILL, "body", "SKILL.md must be portable but contains a tool reference `fs/read_text_file`")];
    skill_url => [w(SKILL, "body", "contains a URL `https://example.org/feed`")];
    skill_host => [w(SKILL, "body", "contains a host name `api.internal.example.com`")];
    skill_absolute_path => [wl(SKILL, "body", "contains an absolute path `/var/lib/newsroom/notes`", 11)];
    skill_secret => [w(SKILL, "body", "contains a secret-looking string `sk-liv…`")];
    skill_env_reference => [w(SKILL, "body", "contains an environment reference `${CHANNEL_ID}`")];
    yaml_syntax_error => [wl(SKILL, "", "invalid YAML", 4)];
    unknown_key => [wl(SKILL, "", "unknown field `memroy`", 5)];
    missing_front_matter => [wl(SKILL, "", "front matter is missing", 1)];
    missing_skill_file => [
        w("m/skills/c/SKILL.md", "", "required file is missing"),
        w("m/skills/c/notes.md", "", "unexpected entry `notes.md`"),
    ];
    misspelt_capabilities => [w("m/skills/b/capabilites.md", "", "unexpected entry `capabilites.md` (expected only SKILL.md, capabilities.md, flows, tests)")];
    empty_instructions => [w(SKILL, "instructions", "must be present and not empty")];
    missing_identity => [w(SKILL, "identity", "must be present and not empty")];
    unknown_status => [wl(AEM, "status", "unknown mesh status `paused` (expected `active` or `parked`)", 3)];
    mesh_name_mismatch => [wl(AEM, "name", "`newsroom` does not match `m`", 2)];
    missing_model => [w(AEM, "defaults.model", "must be present and not empty")];
    unknown_model_role => [w(AEM, "defaults.models.ghost", "unknown role `ghost` (expected a role of this mesh (a, b))")];
    timeout_out_of_range => [w(AEM, "defaults.timeouts.task_secs", "`0` seconds is out of range")];
    budget_out_of_range => [
        wl(AEM, "defaults.budget.max_tokens", "`0` tokens is out of range", 11),
        wl(AEM, "defaults.budget.max_iterations", "`5000` model calls is out of range", 12),
        wl(CAPS, "timeouts.task_secs", "`100000` seconds is out of range", 4),
        wl(CAPS, "budget.max_cost_usd", "`-1` US dollars is out of range", 7),
    ];
    unknown_delegation_scope => [w(AEM, "delegation.scope", "unknown delegation scope `everyone`")];
    delivery_unknown_placeholder => [
        w(AEM, "delivery.chat", "argument `text` uses unknown placeholder `{message}`"),
        w(AEM, "delivery.chat", "no argument carries `{text}`"),
    ];
    delivery_unknown_tool => [w(AEM, "delivery.chat.tool", "server `delivery` declares no tool `send_text`")];
    unknown_startup => [w(AEM, "msp.sources.feed.startup", "unknown startup mode `eager`")];
    working_memory_declared => [w(AEM, "msp.sources.feed.working_memory", "working memory (live relations over a source) is not implemented")];
    trigger_unknown_flow => [w(AEM, "triggers.t.flow", "malformed trigger: expert `a` has no flows/nope.py (expected a flow file of skills/a/flows/ (f))")];
    trigger_two_kinds => [w(AEM, "triggers.t", "give exactly one of `sources`, `schedule` or `webhook`")];
    native_not_shipped => [w(AEM, "servers.shell.transport", "native server `shell` (Iron ships no node /iron/tools/shell) is not implemented")];
    scratch_without_workspace => [w(AEM, "servers.fs.args", "server `fs` works in the scratch, but the mesh declares no `workspace:`")];
    workspace_malformed => [
        w(AEM, "workspace.target", "target `../elsewhere` is not a path inside the project"),
        w(AEM, "workspace.provider", "unknown provider `svn`"),
        w(AEM, "workspace.verify", "verify must name a program and its arguments"),
        w(AEM, "workspace.verify_secs", "0 s (expected between 1 and 86400)"),
        w(AEM, "workspace.toolchain", "toolchain entry 1 `relative/bin` is neither absolute nor under `~/`"),
        w(AEM, "workspace.toolchain", "toolchain entry 2 `~` is neither absolute nor under `~/`"),
        w(AEM, "workspace.toolchain", "toolchain entry 3 `/opt/../etc` must name a directory below it, without `.` or `..`"),
    ];
    native_tool_not_offered => [w(AEM, "servers.delivery.tools[1]", "tool `send_fax` of the native server `delivery` is not implemented")];
    trigger_bad_cron => [w(AEM, "triggers.t.schedule", "`every morning` is not a cron expression")];
    trigger_inline_token => [w(AEM, "triggers.t.webhook", "token `s3cret` is not a reference to a secret")];
    trigger_source_not_granted => [w(AEM, "triggers.t.sources", "expert `a` is not granted source `feed`, so its flow may not be given its items")];
    unknown_annotation => [w(AEM, "servers.delivery.tools[0].annotation", "unknown effect `harmless`")];
    missing_aem_file => [w(AEM, "", "required file is missing")];
    invalid_role_name => [w(SKILL, "name", "`Analyst.One` is not a valid role name")];
    many_errors => [
        w(SKILL, "memory[0].kind", "unknown memory kind `epsiodic`"),
        w(CAPS, "clearance", "unknown clearance `admin`"),
        w(CAPS, "peers.add[0]", "unknown peer `zed`"),
        w(AEM, "servers.out.transport", "unknown transport `carrier-pigeon`"),
        w("m/skills/b/SKILL.md", "body", "contains a URL `https://example.org`"),
    ];
}

#[test]
fn errors_display_one_per_line_with_place_and_expectation() {
    let dir = fixtures().join("aem_bad/unknown_memory_kind");
    let text = aem::compile(&dir).unwrap_err().to_string();
    let expected = format!(
        "{}:6: memory[0].kind: unknown memory kind `epsiodic` (expected one of: working, episodic, semantic, procedural, identity)",
        dir.join(SKILL).display()
    );
    assert_eq!(text, expected);
    let many = aem::compile(&fixtures().join("aem_bad/many_errors")).unwrap_err();
    assert_eq!(many.to_string().lines().count(), many.len());
}

#[test]
fn a_named_pipe_is_refused_not_opened() {
    // A FIFO named SKILL.md: opening it to read would block the compiler forever.
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("case");
    support::copy_dir(&fixtures().join("aem_good"), &case);
    let skill = case.join(SKILL);
    std::fs::remove_file(&skill).unwrap();
    let c = std::ffi::CString::new(skill.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path in this test's own temporary directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(aem::compile(&case).err().map(|e| e.to_string()));
    });
    let errors = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the compiler does not hang on a named pipe")
        .expect("the build fails");
    assert!(
        errors.contains("SKILL.md") && errors.contains("not a regular file"),
        "{errors}"
    );
}
