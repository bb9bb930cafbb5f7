//! The `--ros-args …` tail that launch_ros appends to every node's command line:
//! `-r __node:=NAME`, `-r __ns:=/NS`, other remaps `-r from:=to`, `-p name:=value`,
//! `--params-file FILE`, `--log-level LEVEL`, each optionally closed by `--`.
//!
//! Iron nodes have no ROS parameter server: their settings are command-line options. So
//! parameters are honoured by turning them into those options ([`RosArgs::param_options`]):
//! `name:=value` becomes `--name value` (`_` read as `-`), `true` the bare flag `--name`,
//! `false` nothing, a list the option once per item. The node then refuses an option it does
//! not have, as it would on its command line; nothing given is silently dropped.

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
    #[error("cannot read the parameters file {path}: {problem}")]
    ParamsFile { path: PathBuf, problem: String },
    #[error("parameter `{name}`: {problem}")]
    Param { name: String, problem: String },
    #[error(
        "remapping `{from}:={to}` is not supported: Iron nodes honour only `__node` and `__ns`"
    )]
    Remap { from: String, to: String },
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

impl RosArgs {
    /// The node's parameters: every `--params-file` section for all nodes (`/**`) or for this
    /// one (its name or fully qualified name, as remapped), in order, then each `-p`; a later
    /// value of a name replaces an earlier one.
    pub fn parameters(&self) -> Result<Vec<(String, serde_norway::Value)>, RosArgsError> {
        let mut params: Vec<(String, serde_norway::Value)> = Vec::new();
        let mut set = |name: String, value: serde_norway::Value| {
            params.retain(|(n, _)| *n != name);
            params.push((name, value));
        };
        for path in &self.params_files {
            for (name, value) in self.file_params(path)? {
                set(name, value);
            }
        }
        for (name, value) in &self.params {
            let value = serde_norway::from_str(value)
                .unwrap_or_else(|_| serde_norway::Value::String(value.clone()));
            set(name.clone(), value);
        }
        Ok(params)
    }

    /// The node's [`RosArgs::parameters`] as its own long options (`name_x: v` is
    /// `--name-x v`), so the node honours them or refuses them like any option. Topic and
    /// service remaps, which no Iron node honours, are refused here too.
    pub fn param_options(&self) -> Result<Vec<String>, RosArgsError> {
        if let Some((from, to)) = self.remaps.first() {
            return Err(RosArgsError::Remap {
                from: from.clone(),
                to: to.clone(),
            });
        }
        let mut options = Vec::new();
        for (name, value) in self.parameters()? {
            push_option(&name, &value, &mut options)?;
        }
        Ok(options)
    }

    /// The `ros__parameters` of the sections of `path` that apply to this node.
    fn file_params(
        &self,
        path: &std::path::Path,
    ) -> Result<Vec<(String, serde_norway::Value)>, RosArgsError> {
        let bad = |problem: String| RosArgsError::ParamsFile {
            path: path.to_path_buf(),
            problem,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let doc: serde_norway::Mapping =
            serde_norway::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let name = self.node_name.as_deref().unwrap_or("");
        let fqn = format!(
            "{}/{name}",
            self.namespace
                .as_deref()
                .unwrap_or("")
                .trim_end_matches('/')
        );
        let mut out = Vec::new();
        for (key, section) in doc {
            let key = key.as_str().unwrap_or("");
            let ours = key == "/**"
                || (!name.is_empty()
                    && (key.trim_start_matches('/') == name
                        || key.trim_start_matches('/') == fqn.trim_start_matches('/')));
            if !ours {
                continue;
            }
            let Some(params) = section.get("ros__parameters") else {
                return Err(bad(format!("section `{key}` has no `ros__parameters`")));
            };
            let params = params
                .as_mapping()
                .ok_or_else(|| bad(format!("`{key}.ros__parameters` is not a mapping")))?;
            for (k, v) in params {
                let k = k
                    .as_str()
                    .ok_or_else(|| bad(format!("a parameter name in `{key}` is not a string")))?;
                out.push((k.to_string(), v.clone()));
            }
        }
        Ok(out)
    }
}

/// A parameter's value as ROS 2 types it (`rcl_interfaces/msg/ParameterValue`): a list of
/// one kind is an array of it, anything else its YAML text.
pub fn parameter_value(value: &serde_norway::Value) -> hiroz::parameter::ParameterValue {
    use hiroz::parameter::ParameterValue as P;
    use serde_norway::Value;
    let all = |items: &[Value], f: fn(&Value) -> bool| !items.is_empty() && items.iter().all(f);
    match value {
        Value::Bool(b) => P::Bool(*b),
        Value::Number(n) if n.is_i64() => P::Integer(n.as_i64().unwrap_or_default()),
        Value::Number(n) => P::Double(n.as_f64().unwrap_or_default()),
        Value::String(s) => P::String(s.clone()),
        Value::Sequence(items) if all(items, Value::is_bool) => {
            P::BoolArray(items.iter().filter_map(Value::as_bool).collect())
        }
        Value::Sequence(items) if all(items, Value::is_i64) => {
            P::IntegerArray(items.iter().filter_map(Value::as_i64).collect())
        }
        Value::Sequence(items) if all(items, Value::is_number) => {
            P::DoubleArray(items.iter().filter_map(Value::as_f64).collect())
        }
        Value::Sequence(items) if all(items, Value::is_string) => P::StringArray(
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        ),
        other => P::String(
            serde_norway::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        ),
    }
}

/// `name` and its value as long options.
fn push_option(
    name: &str,
    value: &serde_norway::Value,
    out: &mut Vec<String>,
) -> Result<(), RosArgsError> {
    use serde_norway::Value;
    let bad = |problem: &str| RosArgsError::Param {
        name: name.to_string(),
        problem: problem.to_string(),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad(
            "names are letters, digits and `_` (nested parameters are not supported)",
        ));
    }
    let flag = format!("--{}", name.replace('_', "-"));
    match value {
        Value::Bool(true) => out.push(flag),
        Value::Bool(false) => {}
        Value::String(s) => out.extend([flag, s.clone()]),
        Value::Number(n) => out.extend([flag, n.to_string()]),
        Value::Sequence(items) => {
            for item in items {
                match item {
                    Value::String(_) | Value::Number(_) => push_option(name, item, out)?,
                    _ => return Err(bad("a list may hold only strings and numbers")),
                }
            }
        }
        Value::Null => return Err(bad("has no value")),
        Value::Mapping(_) | Value::Tagged(_) => {
            return Err(bad("nested parameters are not supported"));
        }
    }
    Ok(())
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
    fn parameters_become_the_nodes_own_options() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("params.yaml");
        std::fs::write(
            &file,
            "/**:\n  ros__parameters:\n    slot_wait_secs: 5\n    fail_on: [configure, activate]\n/iron/demo:\n  ros__parameters:\n    autostart: true\n    quiet: false\n/iron/other:\n  ros__parameters:\n    never: 1\n",
        )
        .unwrap();
        let file = file.display().to_string();
        let (_, ros) = RosArgs::split([
            "x",
            "--ros-args",
            "-r",
            "__node:=demo",
            "-r",
            "__ns:=/iron",
            "--params-file",
            &file,
            "-p",
            "slot_wait_secs:=7",
            "-p",
            "note:=hello world",
        ])
        .unwrap();
        assert_eq!(
            ros.param_options().unwrap(),
            [
                "--fail-on",
                "configure",
                "--fail-on",
                "activate",
                "--autostart",
                "--slot-wait-secs",
                "7",
                "--note",
                "hello world"
            ]
        );
        for bad in ["nested:={a: 1}", "a.b:=1", "empty:=~"] {
            let (_, ros) = RosArgs::split(["x", "--ros-args", "-p", bad]).unwrap();
            assert!(
                matches!(ros.param_options(), Err(RosArgsError::Param { .. })),
                "{bad}"
            );
        }
        let (_, ros) =
            RosArgs::split(["x", "--ros-args", "--params-file", "/nonexistent.yaml"]).unwrap();
        assert!(matches!(
            ros.param_options(),
            Err(RosArgsError::ParamsFile { .. })
        ));
        let (_, ros) = RosArgs::split(["x", "--ros-args", "-r", "chatter:=talk"]).unwrap();
        assert!(matches!(
            ros.param_options(),
            Err(RosArgsError::Remap { .. })
        ));
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

    #[test]
    fn parameters_keep_their_ros_types() {
        use hiroz::parameter::ParameterValue as P;
        let v = |text: &str| parameter_value(&serde_norway::from_str(text).unwrap());
        assert_eq!(v("true"), P::Bool(true));
        assert_eq!(v("30"), P::Integer(30));
        assert_eq!(v("0.5"), P::Double(0.5));
        assert_eq!(v("echo"), P::String("echo".into()));
        assert_eq!(v("[1, 2]"), P::IntegerArray(vec![1, 2]));
        assert_eq!(v("[1, 2.5]"), P::DoubleArray(vec![1.0, 2.5]));
        assert_eq!(v("[a, b]"), P::StringArray(vec!["a".into(), "b".into()]));
        assert_eq!(v("[a, 1]"), P::String("- a\n- 1".into()));
    }
}
