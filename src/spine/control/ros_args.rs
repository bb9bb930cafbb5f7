//! The `--ros-args …` tail that launch_ros appends to every node's command line:
//! `-r __node:=NAME`, `-r __ns:=/NS`, other remaps `-r from:=to`, `-p name:=value`,
//! `--params-file FILE`, `--log-level LEVEL`, each optionally closed by `--`.

use std::path::PathBuf;

/// What a node process took from its `--ros-args` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RosArgs {
    /// `-r __node:=NAME`: the node's name.
    pub node_name: Option<String>,
    /// `-r __ns:=/NS`: the node's namespace.
    pub namespace: Option<String>,
    /// Other `-r from:=to` remaps, in order.
    pub remaps: Vec<(String, String)>,
    /// `-p name:=value` parameters, values kept as written (YAML).
    pub params: Vec<(String, String)>,
    /// `--params-file FILE`, in order.
    pub params_files: Vec<PathBuf>,
    /// `--log-level LEVEL` (or `--log-level name:=LEVEL`).
    pub log_level: Option<String>,
}

/// A malformed `--ros-args` section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RosArgsError {
    #[error("`{flag}` needs a value after it")]
    MissingValue { flag: String },
    #[error("`{arg}` is not of the form `from:=to`")]
    NotARule { arg: String },
    #[error(
        "unknown ROS argument `{arg}` (known: -r/--remap, -p/--param, --params-file, --log-level, --enclave)"
    )]
    Unknown { arg: String },
}

impl RosArgs {
    /// Splits a process's arguments into its own and the ROS ones. Everything between
    /// `--ros-args` and a lone `--` (or the end) is ROS's; there may be several sections.
    pub fn split<I, S>(args: I) -> Result<(Vec<String>, RosArgs), RosArgsError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut own = Vec::new();
        let mut ros = RosArgs::default();
        let mut it = args.into_iter().map(Into::into);
        while let Some(arg) = it.next() {
            if arg != "--ros-args" {
                own.push(arg);
                continue;
            }
            while let Some(flag) = it.next() {
                if flag == "--" {
                    break;
                }
                if flag == "--ros-args" {
                    continue;
                }
                let mut value = |flag: &str| {
                    it.next().ok_or_else(|| RosArgsError::MissingValue {
                        flag: flag.to_string(),
                    })
                };
                match flag.as_str() {
                    "-r" | "--remap" => {
                        let rule = value(&flag)?;
                        let (from, to) = split_rule(&rule)?;
                        // A node-qualified rule (`node:__ns:=…`) applies to us too: we run one node.
                        let from = from.rsplit(':').next().unwrap_or(from).to_string();
                        match from.as_str() {
                            "__node" | "__name" => ros.node_name = Some(to.to_string()),
                            "__ns" => ros.namespace = Some(to.to_string()),
                            _ => ros.remaps.push((from, to.to_string())),
                        }
                    }
                    "-p" | "--param" => {
                        let rule = value(&flag)?;
                        let (name, v) = split_rule(&rule)?;
                        ros.params.push((name.to_string(), v.to_string()));
                    }
                    "--params-file" => ros.params_files.push(PathBuf::from(value(&flag)?)),
                    "--log-level" => {
                        let level = value(&flag)?;
                        let level = level.rsplit(":=").next().unwrap_or(&level).to_string();
                        ros.log_level = Some(level);
                    }
                    "-e" | "--enclave" => {
                        value(&flag)?;
                    }
                    "--disable-rosout-logs"
                    | "--enable-rosout-logs"
                    | "--disable-stdout-logs"
                    | "--enable-stdout-logs"
                    | "--disable-external-lib-logs"
                    | "--enable-external-lib-logs" => {}
                    _ => return Err(RosArgsError::Unknown { arg: flag }),
                }
            }
        }
        Ok((own, ros))
    }
}

fn split_rule(rule: &str) -> Result<(&str, &str), RosArgsError> {
    match rule.split_once(":=") {
        Some((from, to)) if !from.is_empty() => Ok((from, to)),
        _ => Err(RosArgsError::NotARule {
            arg: rule.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_what_launch_ros_appends() {
        let (own, ros) = RosArgs::split([
            "demo_node",
            "--flag",
            "--ros-args",
            "-r",
            "__node:=demo",
            "-r",
            "__ns:=/iron",
            "--params-file",
            "/tmp/p.yaml",
            "-p",
            "depth:=3",
            "-r",
            "chatter:=talk",
            "--",
            "tail",
        ])
        .unwrap();
        assert_eq!(own, vec!["demo_node", "--flag", "tail"]);
        assert_eq!(ros.node_name.as_deref(), Some("demo"));
        assert_eq!(ros.namespace.as_deref(), Some("/iron"));
        assert_eq!(ros.params_files, vec![PathBuf::from("/tmp/p.yaml")]);
        assert_eq!(ros.params, vec![("depth".into(), "3".into())]);
        assert_eq!(ros.remaps, vec![("chatter".into(), "talk".into())]);
    }

    #[test]
    fn node_qualified_rules_and_errors() {
        let (_, ros) = RosArgs::split(["x", "--ros-args", "-r", "demo:__node:=other"]).unwrap();
        assert_eq!(ros.node_name.as_deref(), Some("other"));
        assert_eq!(
            RosArgs::split(["x", "--ros-args", "-r"]).unwrap_err(),
            RosArgsError::MissingValue { flag: "-r".into() }
        );
        assert!(matches!(
            RosArgs::split(["x", "--ros-args", "-r", "nonsense"]),
            Err(RosArgsError::NotARule { .. })
        ));
        assert!(matches!(
            RosArgs::split(["x", "--ros-args", "--bogus"]),
            Err(RosArgsError::Unknown { .. })
        ));
    }
}
