//! Paste-in configuration: the common `mcpServers` shape and VS Code's `servers`, secrets
//! kept as references, and YAML that the catalog compiler accepts.

use crate::support_tools as support;

use iron::tools::import::{discover_tools, import, render_yaml};
use std::time::Duration;

const CLAUDE: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/notes"],
      "alwaysAllow": ["read_file"]
    },
    "GitHub Tools": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "--token=ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "ghcr.io/github/github-mcp-server"],
      "env": {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "GITHUB_HOST": "${GITHUB_HOST:-github.com}",
        "TZ": "${TZ}"
      }
    },
    "remote-docs": { "url": "https://example.invalid/mcp" },
    "old": { "command": "x", "disabled": true }
  },
  "globalShortcut": "Ctrl+Space"
}"#;

const VSCODE: &str = r#"{
  // VS Code's mcp.json allows comments
  "inputs": [{"type": "promptString", "id": "api-key", "password": true}],
  "servers": {
    "time": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-time", "--root", "${workspaceFolder}"],
      "env": {"API_KEY": "${input:api-key}", "LOG": "${env:LOG_LEVEL}"}, /* trailing */
      "envFile": "${workspaceFolder}/.env"
    },
    "web": {"type": "http", "url": "https://example.invalid", "note": "a // in a string"},
  },
}"#;

#[test]
fn claude_desktop_shape() {
    let imported = import(CLAUDE).unwrap();
    let names: Vec<&str> = imported.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["filesystem", "github-tools"]);
    let skipped: Vec<&str> = imported.skipped.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(skipped, ["old", "remote-docs"]);
    let gh = &imported.servers[1];
    assert_eq!(gh.source_name, "GitHub Tools");
    assert_eq!(
        gh.env["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "${GITHUB_PERSONAL_ACCESS_TOKEN}"
    );
    assert_eq!(gh.env["GITHUB_HOST"], "${GITHUB_HOST:-github.com}");
    assert_eq!(gh.env["TZ"], "${TZ}");
    assert_eq!(gh.args[3], "--token=${GITHUB_TOOLS_ARG_3}");
    assert!(
        gh.notes
            .iter()
            .any(|n| n.contains("export GITHUB_PERSONAL_ACCESS_TOKEN"))
    );
    let fs = &imported.servers[0];
    assert_eq!(
        fs.args[2], "${HOME}/notes",
        "references in args are kept for the starter"
    );
    let yaml = render_yaml(&imported.servers);
    assert!(
        !yaml.contains("ghp_"),
        "a secret must never be written:\n{yaml}"
    );
}

#[test]
fn vscode_shape() {
    let imported = import(VSCODE).unwrap();
    assert_eq!(imported.servers.len(), 1);
    assert_eq!(imported.skipped[0].0, "web");
    let t = &imported.servers[0];
    assert_eq!(t.command, "uvx");
    assert_eq!(
        t.args,
        ["mcp-server-time", "--root", "${WORKSPACE_FOLDER:-.}"]
    );
    assert_eq!(t.env["API_KEY"], "${API_KEY}");
    assert_eq!(t.env["LOG"], "${LOG_LEVEL}");
    assert!(t.notes.iter().any(|n| n.contains("envFile")));
    // Also under `mcp` in a settings file.
    let settings = format!(
        "{{\"mcp\": {}}}",
        VSCODE.replace("// VS Code's mcp.json allows comments", "")
    );
    assert_eq!(import(&settings).unwrap().servers.len(), 1);
}

#[test]
fn not_a_server_config() {
    assert!(import("{\"foo\": 1}").is_err());
    assert!(import("not json").is_err());
}

#[test]
fn rendered_yaml_compiles_as_a_mesh() {
    let mut imported = import(CLAUDE).unwrap();
    for s in &mut imported.servers {
        s.tools = vec!["read_text_file".into(), "list_directory".into()];
    }
    let yaml = render_yaml(&imported.servers);
    let dir = tempfile::tempdir().unwrap();
    let mesh = dir.path().join("aem/pasted");
    std::fs::create_dir_all(mesh.join("skills/helper")).unwrap();
    std::fs::write(
        mesh.join("AEM.md"),
        format!("---\nname: pasted\nstatus: active\ndefaults:\n  model: scripted\n{yaml}---\n\nPasted servers.\n"),
    )
    .unwrap();
    std::fs::write(
        mesh.join("skills/helper/SKILL.md"),
        support::skill_md("helper"),
    )
    .unwrap();
    let catalog =
        iron::aem::compile(&dir.path().join("aem")).unwrap_or_else(|e| panic!("{e}\n---\n{yaml}"));
    let servers = &catalog.meshes["pasted"].servers;
    assert!(servers.contains_key("github-tools") && servers.contains_key("filesystem"));
}

#[tokio::test]
async fn discover_tools_lists_a_pasted_server() {
    let json = format!(
        "{{\"mcpServers\": {{\"Faulty\": {{\"command\": {}}}}}}}",
        serde_json::Value::String(support::test_server().display().to_string())
    );
    let imported = import(&json).unwrap();
    let env: iron::tools::env::EnvMap = std::env::vars().filter(|(k, _)| k == "PATH").collect();
    let tools = discover_tools(
        &imported.servers[0],
        &env,
        &std::env::temp_dir(),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert!(
        tools.contains(&"echo".to_string()) && tools.contains(&"delete_record".to_string()),
        "{tools:?}"
    );
}
