//! Shared fixture for the tools layer's integration tests: a throw-away project with real
//! governance files (aem/, config/, .git/, a compiled catalog), a mesh whose servers are
//! real MCP servers, and helpers that build a tool manager for one of its experts.
//!
//! A missing server is a test failure that names the install command, never a skip.

#![allow(dead_code)]

use iron::aem::{self, Catalog, ToolManifest};
use iron::tools::env::EnvMap;
use iron::tools::{ManagerSetup, MemoryEvents, PathPolicy, ToolManager};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub const NPM_INSTALL: &str = "scripts/test.sh (or: npm ci --no-audit --no-fund)   # installs @modelcontextprotocol/server-filesystem@2026.8.31 from package.json";
pub const TOOLS_INSTALL: &str = "scripts/test.sh (or: target/debug/iron tools install --aem aem)";
pub const PIP_INSTALL: &str = "scripts/test.sh (or: python3 -m venv .venv-test && .venv-test/bin/pip install -r tests/requirements.txt)";

/// The crate root (where node_modules/ and .venv/ are installed).
pub fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Entry point of the real filesystem server.
pub fn fs_server_js() -> PathBuf {
    let p = crate_root().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        p.is_file(),
        "the filesystem MCP server is not installed at {}; install it with:\n  {NPM_INSTALL}",
        p.display()
    );
    p
}

/// `aem_md` (the dev mesh's AEM.md as shipped), checked to still start its filesystem and
/// git servers with their pinned packages, and those packages installed in the package
/// store: the dev mesh's experts have a scratch, so their servers run confined, from there.
pub fn dev_servers_installed(aem_md: &str) -> String {
    use iron::tools::packages::{Package, PackageStore};
    let shipped = [
        "command: npx\n    args: [\"-y\", \"@modelcontextprotocol/server-filesystem@2026.8.31\", \"${IRON_SCRATCH}\"]",
        "command: uvx\n    args: [\"mcp-server-git@2026.10.19\", \"--repository\", \"${IRON_SCRATCH}\"]",
    ];
    for server in shipped {
        assert!(
            aem_md.contains(server),
            "the shipped dev mesh no longer starts a server as {server}"
        );
    }
    node();
    let store = PackageStore::from_env(|k| std::env::var(k).ok())
        .expect("a package store (HOME or IRON_TOOLS_DIR)");
    let packages = [
        Package::Npm {
            name: "@modelcontextprotocol/server-filesystem".into(),
            version: "2026.8.31".into(),
        },
        Package::PyPi {
            name: "mcp-server-git".into(),
            version: "2026.10.19".into(),
        },
    ];
    for package in packages {
        assert!(
            store.has(&package),
            "{package} is not installed in {}; install it with:\n  {TOOLS_INSTALL}",
            store.root().display()
        );
    }
    aem_md.to_string()
}

/// The real time server.
pub fn time_server() -> PathBuf {
    let p = crate_root().join(".venv-test/bin/mcp-server-time");
    assert!(
        p.is_file(),
        "mcp-server-time is not installed at {}; install it with:\n  {PIP_INSTALL}",
        p.display()
    );
    p
}

/// Our own rmcp test server.
pub fn test_server() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp_test_server"))
}

/// `node` must be on PATH for the filesystem server.
pub fn node() -> String {
    let ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "`node` is not on PATH; install Node.js (apt-get install nodejs npm)"
    );
    "node".to_string()
}

fn q(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The lab mesh: real servers, and experts of every clearance.
pub fn lab_aem_md() -> String {
    format!(
        r#"---
name: lab
status: active
description: Test mesh for the tools layer.
defaults:
  model: scripted
  clearance: read
  timeouts:
    task_secs: 600
    tool_secs: 30
    delegation_secs: 60
servers:
  fs:
    transport: local
    description: The real filesystem server, allowed the whole project.
    command: {node}
    args: [{js}, "${{LAB_FS_ROOT:-./workspace/lab}}"]
    env:
      HOME: "${{LAB_HOME:-/nonexistent-lab-home}}"
    tools: [read_text_file, list_directory, write_file, edit_file, move_file, create_directory]
  faulty:
    transport: local
    description: Our rmcp test server.
    command: {faulty}
    env:
      LAB_MARKER: "${{LAB_MARKER:-declared}}"
    tools: [echo, delete_record, hang, crash, garble, get_environment, get_pid, save_text, save_note, git_add, git_commit, git_diff, list_nothing]
  time:
    transport: local
    description: The real time server.
    command: {time}
    env:
      TZ: "${{LAB_TZ}}"
    tools: [get_current_time, convert_time]
  delivery:
    transport: native
    tools:
      - name: send_message
        annotation: write
  ledger:
    transport: remote
    service: /iron/tools/ledger
    tools: [get_account_balance, delete_entry]
tools:
  - time/get_current_time
---

The lab mesh exists for tests.
"#,
        node = q(&node()),
        js = q(&fs_server_js().display().to_string()),
        faulty = q(&test_server().display().to_string()),
        time = q(&time_server().display().to_string()),
    )
}

pub const EXPERTS: &[(&str, &str)] = &[
    (
        "reader",
        "---\nclearance: read\ntools:\n  add: [fs/read_text_file, fs/list_directory]\n---\n\nReads only.\n",
    ),
    (
        "writer",
        "---\nclearance: read-write\ntools:\n  add: [fs/read_text_file, fs/write_file, fs/edit_file, fs/move_file, fs/create_directory]\neffects:\n  fs/write_file: write\n  fs/edit_file: write\n  fs/move_file: write\n---\n\nWrites, with reviewed declarations.\n",
    ),
    (
        "hasty",
        "---\nclearance: read-write\ntools:\n  add: [fs/write_file]\n---\n\nWrites, without declarations.\n",
    ),
    (
        "operator",
        "---\nclearance: full\ntools:\n  add: [faulty/echo, faulty/delete_record, faulty/hang, faulty/crash, faulty/garble, faulty/get_environment, faulty/get_pid, faulty/save_text, faulty/save_note, faulty/git_add, faulty/git_commit, faulty/git_diff, faulty/list_nothing, delivery/send_message, ledger/get_account_balance, ledger/delete_entry, fs/write_file]\n---\n\nHolds everything.\n",
    ),
];

pub fn skill_md(role: &str) -> String {
    format!(
        "---\nname: {role}\nidentity: The {role} of the lab.\ndescription: Exercises tools as the {role}.\n---\n\nDo what the test asks.\n"
    )
}

/// The tools layer in one process: a project on disk with real governance files, the lab
/// mesh compiled, and tool managers built for its experts (no router, no nodes).
pub struct ToolLab {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub catalog: Catalog,
    pub manifest: ToolManifest,
    pub events: Arc<MemoryEvents>,
}

impl ToolLab {
    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    pub fn build_dir(&self) -> PathBuf {
        self.root.join("build")
    }

    /// The environment servers start from: PATH, the fs root, the time server's zone, and a
    /// secret that must never reach a server.
    pub fn env(&self) -> EnvMap {
        let mut env = EnvMap::new();
        if let Ok(path) = std::env::var("PATH") {
            env.insert("PATH".into(), path);
        }
        env.insert("LAB_FS_ROOT".into(), self.root.display().to_string());
        env.insert("LAB_TZ".into(), "UTC".into());
        env.insert("SECRET_TOKEN".into(), "do-not-leak".into());
        env
    }

    pub fn policy(&self) -> PathPolicy {
        PathPolicy::new(&self.root, &self.build_dir())
            .unwrap()
            .grant_root(&self.work())
            .unwrap()
    }

    pub fn setup(&self) -> ManagerSetup {
        ManagerSetup::new(self.events.clone(), self.policy(), self.work(), self.env())
            .with_start_timeout(Duration::from_secs(60))
    }

    pub fn manager(&self, role: &str) -> ToolManager {
        self.manager_with(role, self.setup())
    }

    pub fn manager_with(&self, role: &str, setup: ManagerSetup) -> ToolManager {
        ToolManager::new(&self.catalog, &self.manifest, &format!("lab/{role}"), setup).unwrap()
    }
}

/// Writes the lab project: aem/lab (+ experts), config/, .git/, work/, a compiled catalog.
pub fn tool_lab() -> ToolLab {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mesh = root.join("aem/lab");
    for (role, caps) in EXPERTS {
        let d = mesh.join("skills").join(role);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SKILL.md"), skill_md(role)).unwrap();
        std::fs::write(d.join("capabilities.md"), caps).unwrap();
    }
    std::fs::write(mesh.join("AEM.md"), lab_aem_md()).unwrap();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::write(root.join("config/iron.yaml"), "tenant: lab\n").unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(root.join("work")).unwrap();
    let catalog = match aem::compile(&root.join("aem")) {
        Ok(c) => c,
        Err(e) => panic!("the lab mesh must compile:\n{e}"),
    };
    aem::write_catalog(&catalog, &root.join("build")).unwrap();
    let manifest =
        aem::read_tool_manifest(&root.join("build").join(aem::TOOL_MANIFEST_FILE)).unwrap();
    ToolLab {
        dir,
        root,
        catalog,
        manifest,
        events: Arc::new(MemoryEvents::default()),
    }
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}
