//! The launch list: which processes make up a running Iron, in start order.

use std::{collections::BTreeMap, path::Path};

use serde::Deserialize;

use super::LaunchError;

/// The whole list.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    #[serde(default)]
    pub router: RouterSpec,
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
}

/// The Zenoh router started before every node.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouterSpec {
    #[serde(default = "default_listen")]
    pub listen: String,
}

impl Default for RouterSpec {
    fn default() -> Self {
        Self {
            listen: default_listen(),
        }
    }
}

fn default_listen() -> String {
    crate::spine::control::DEFAULT_ROUTER.to_string()
}

/// One managed-node process.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Node name (`__node`).
    pub name: String,
    /// Node namespace (`__ns`).
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// The executable, found beside `iron` or on `PATH`.
    pub executable: String,
    /// The node's own arguments, before `--ros-args`.
    #[serde(default)]
    pub args: Vec<String>,
    /// ROS parameters, passed as `-p name:=value`.
    #[serde(default)]
    pub params: BTreeMap<String, serde_norway::Value>,
    /// Configure and activate at start; otherwise the node waits unconfigured for a person.
    #[serde(default = "yes")]
    pub autostart: bool,
    /// Restart the process (with backoff) when it exits without being told to.
    #[serde(default = "yes")]
    pub respawn: bool,
}

fn default_namespace() -> String {
    "/iron".into()
}

fn yes() -> bool {
    true
}

impl NodeSpec {
    /// The node's fully qualified name.
    pub fn fqn(&self) -> String {
        format!("{}/{}", self.namespace.trim_end_matches('/'), self.name)
    }

    /// The `--ros-args` tail launch_ros would append.
    pub fn ros_args(&self) -> Vec<String> {
        let mut args = vec![
            "--ros-args".to_string(),
            "-r".into(),
            format!("__node:={}", self.name),
            "-r".into(),
            format!("__ns:={}", self.namespace),
        ];
        for (k, v) in &self.params {
            let v = match v {
                serde_norway::Value::String(s) => s.clone(),
                other => serde_norway::to_string(other)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            };
            args.push("-p".into());
            args.push(format!("{k}:={v}"));
        }
        args
    }
}

impl Plan {
    /// Reads and checks a launch list.
    pub fn load(path: &Path) -> Result<Self, LaunchError> {
        let text = std::fs::read_to_string(path).map_err(|source| LaunchError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses and checks a launch list; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, LaunchError> {
        let plan: Plan = serde_norway::from_str(text).map_err(|source| LaunchError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |problem: String| LaunchError::Invalid {
            path: path.to_path_buf(),
            problem,
        };
        let mut seen = std::collections::BTreeSet::new();
        for n in &plan.nodes {
            if n.name.is_empty()
                || !n
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(invalid(format!(
                    "node name {:?} must be letters, digits and underscores",
                    n.name
                )));
            }
            if !n.namespace.starts_with('/') {
                return Err(invalid(format!(
                    "node {}: namespace {:?} must start with /",
                    n.name, n.namespace
                )));
            }
            if n.executable.is_empty() {
                return Err(invalid(format!("node {}: executable is empty", n.name)));
            }
            if !seen.insert(n.fqn()) {
                return Err(invalid(format!("node {} is listed twice", n.fqn())));
            }
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_defaults_and_ros_args() {
        let plan = Plan::parse(
            "nodes:\n  - name: demo\n    executable: demo_node\n    params: {depth: 3, mode: fast}\n",
            Path::new("t.yaml"),
        )
        .unwrap();
        let n = &plan.nodes[0];
        assert_eq!(n.fqn(), "/iron/demo");
        assert!(n.autostart && n.respawn);
        assert_eq!(
            n.ros_args(),
            vec![
                "--ros-args",
                "-r",
                "__node:=demo",
                "-r",
                "__ns:=/iron",
                "-p",
                "depth:=3",
                "-p",
                "mode:=fast"
            ]
        );
        assert_eq!(plan.router.listen, "tcp/127.0.0.1:7447");
    }

    #[test]
    fn rejects_bad_lists() {
        let bad = |t: &str| Plan::parse(t, Path::new("t.yaml")).unwrap_err().to_string();
        assert!(bad("nodes:\n  - name: a b\n    executable: x\n").contains("letters, digits"));
        assert!(
            bad("nodes:\n  - name: a\n    executable: x\n  - name: a\n    executable: y\n")
                .contains("listed twice")
        );
        assert!(
            bad("nodes:\n  - name: a\n    executable: x\n    colour: red\n")
                .contains("unknown field")
        );
        assert!(
            bad("nodes:\n  - name: a\n    namespace: iron\n    executable: x\n")
                .contains("must start with /")
        );
    }
}
