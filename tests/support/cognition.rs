//! A cognition lab on disk and on the control plane: the shipped meshes plus a `lab` mesh
//! whose experts run on scripted models, a compiled catalog, a router, and a real engine
//! process. `lab/sleeper` calls our MCP test server's `hang` tool first (so its task runs
//! until something ends it); `lab/clerk` answers at once. Expert processes are the engine's
//! children and are found in the process table; every descendant of the engine is killed
//! on drop, so no expert or tool server outlives the test.

use std::path::Path;

use iron::protocol::Payload;

use super::project::Project;
use super::{Proc, bin, copy_dir};

/// The answer `lab/clerk` gives.
pub const CLERK_ANSWER: &str = "Filed: the clerk has it on record.";

fn lab_mesh(test_server: &str) -> String {
    format!(
        r#"---
name: lab
status: active
description: Test mesh for the engine's guards.
defaults:
  model: hanging
  models:
    clerk: quick
    chief: chiefly
  clearance: full
  timeouts:
    task_secs: 600
    tool_secs: 600
    delegation_secs: 60
servers:
  faulty:
    transport: local
    description: Iron's MCP test server.
    command: {}
    tools: [echo, hang]
---

The lab mesh exists for tests.
"#,
        serde_json::Value::String(test_server.to_string())
    )
}

const EXPERTS: &[(&str, &str, &str)] = &[
    (
        "sleeper",
        "Waits on a tool that never answers.",
        "---\nclearance: full\ntools:\n  add: [faulty/hang, faulty/echo]\n---\n\nWaits.\n",
    ),
    (
        "clerk",
        "Files what it is given and says so.",
        "---\nclearance: read\n---\n\nFiles.\n",
    ),
    (
        "chief",
        "Hands filing to the clerk and reports back.",
        "---\nclearance: read\npeers:\n  add: [clerk]\n---\n\nDelegates.\n",
    ),
];

/// What `lab/chief` says once the clerk has answered it.
pub const CHIEF_ANSWER: &str = "The clerk filed it.";

/// The lab: a [`Project`] with the lab mesh and a router, and the engine process.
pub struct Lab {
    pub p: Project,
    pub engine: Proc,
}

impl Lab {
    /// Writes the project and starts a router and an active engine with `engine_args`.
    pub fn start(engine_args: &[&str]) -> Lab {
        let p = Project::offline().with_router();
        let dir = p.dir.path();
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("aem"),
            &p.path("aem"),
        );
        for (role, description, caps) in EXPERTS {
            p.write(
                &format!("aem/lab/skills/{role}/SKILL.md"),
                &format!("---\nname: {role}\nidentity: The {role} of the lab.\ndescription: {description}\n---\n\nDo what the test asks.\n"),
            );
            p.write(&format!("aem/lab/skills/{role}/capabilities.md"), caps);
        }
        p.write(
            "aem/lab/AEM.md",
            &lab_mesh(env!("CARGO_BIN_EXE_mcp_test_server")),
        );
        p.write(
            "hanging.yaml",
            "turns:\n  - tool_calls:\n      - name: faulty__hang\n        arguments: {}\n  - text: \"the hang ended\"\n",
        );
        p.write(
            "quick.yaml",
            &format!("turns:\n  - text: {CLERK_ANSWER:?}\n"),
        );
        // The chief first asks an expert that is not its peer (refused), then the clerk.
        p.write(
            "chief.yaml",
            &format!(
                "turns:\n  - tool_calls:\n      - name: delegate\n        arguments: {{domain: lab/nowhere, instruction: file it}}\n  - expect: \"not among your peers\"\n    tool_calls:\n      - name: delegate\n        arguments: {{domain: lab/clerk, instruction: file it}}\n  - expect: {CLERK_ANSWER:?}\n    text: {CHIEF_ANSWER:?}\n"
            ),
        );
        p.set_config(
            &format!(
                "models:\n  backends:\n    hang:\n      kind: scripted\n      script: {d}/hanging.yaml\n    quick:\n      kind: scripted\n      script: {d}/quick.yaml\n    chiefly:\n      kind: scripted\n      script: {d}/chief.yaml\n  logical:\n    hanging: [hang]\n    quick: [quick]\n    chiefly: [chiefly]\n    fast: [quick]\n    standard: [quick]\n    strong: [quick]\n",
                d = dir.display()
            ),
        );
        p.build_catalog();

        let engine = p.start_active(&bin("engine_node"), "/iron/engine", engine_args);
        Lab { p, engine }
    }

    /// Starts `iron task send --domain <domain> <instruction>` in the background.
    pub fn send(&self, domain: &str, instruction: &str) -> std::process::Child {
        std::process::Command::new(bin("iron"))
            .args([
                "task",
                "send",
                "--domain",
                domain,
                "--timeout",
                "30",
                "--wait",
                "120",
                instruction,
            ])
            .envs(self.p.envs())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The expert processes the engine is running now: (pid, fully qualified node name).
    pub fn experts(&self) -> Vec<(u32, String)> {
        children(self.engine.pid())
            .into_iter()
            .filter(|pid| comm(*pid).as_deref() == Some("expert_node"))
            .filter_map(|pid| node_name(pid).map(|n| (pid, n)))
            .collect()
    }

    /// The payloads of the events of `kind` that `keep` keeps, each read as `T` (an event of
    /// the kind that is not a `T` fails the test).
    pub async fn payloads_where<T: Payload>(
        &self,
        kind: &str,
        keep: impl Fn(&T) -> bool,
    ) -> Vec<T> {
        super::read::<T>(&self.p.events(kind).await)
            .into_iter()
            .filter(|p| keep(p))
            .collect()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Children first (the engine's kill-on-drop does not run when it is SIGKILLed).
        for pid in descendants(self.engine.pid()) {
            kill9(pid);
        }
    }
}

/// Sends SIGKILL to `pid`.
pub fn kill9(pid: u32) {
    // SAFETY: kill(2) on a pid this test started (directly or through the engine).
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

fn stat_ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid …; comm may contain spaces, so split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// True while `pid` runs (a zombie waiting to be reaped does not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = stat.get(stat.rfind(')')? + 2..)?.to_string();
            rest.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// Live children of `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| stat_ppid(*p) == Some(pid))
        .filter(|p| !is_zombie(*p))
        .collect()
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .and_then(|i| s[i + 2..].chars().next())
                .map(|c| c == 'Z')
        })
        .unwrap_or(true)
}

/// Every live descendant of `pid`, children before their own children.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut next = vec![pid];
    while let Some(p) = next.pop() {
        for c in children(p) {
            out.push(c);
            next.push(c);
        }
    }
    out
}

fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The node name an expert process was started with (`__ns:=` + `__node:=`).
fn node_name(pid: u32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let value = |prefix: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(prefix).map(str::to_string))
    };
    Some(format!("{}/{}", value("__ns:=")?, value("__node:=")?))
}
