//! Iron's configuration: `config/iron.yaml` (or the file `IRON_CONFIG` names), then `IRON_*`
//! environment variables, then command-line flags, in that order. Unknown keys are errors;
//! secrets are never written here, only referenced (`${VAR}`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Set by `iron up` for the nodes it starts, once it has opened the durable plane itself.
pub const PLANE_CHECKED_ENV: &str = "IRON_PLANE_CHECKED";

/// The whole configuration.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Tenant every event is written under.
    pub tenant: String,
    /// Where Iron keeps its state (embedded log, projection, sessions).
    pub state_dir: PathBuf,
    /// The durable plane.
    pub durable: DurableConfig,
    /// Memory.
    pub memory: MemoryConfig,
    /// Model backends and logical model names (parsed by the `llm` layer; kept raw here so the
    /// kernel does not depend on it).
    pub models: Option<serde_norway::Value>,
    /// Operators who may answer any task's questions and correct any task, besides the person
    /// whose message started it (its `user_id`).
    pub operators: Vec<String>,
}

/// Which backend holds the log, KV and documents.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DurableConfig {
    /// `embedded` (SQLite, no server; the default) or `jetstream`.
    pub backend: Backend,
    /// The embedded log's database; relative paths are under `state_dir`.
    pub embedded_path: PathBuf,
    /// NATS server URL for `jetstream`; a cluster's servers separated by commas.
    pub nats_url: String,
    /// The NATS server's monitoring address, used to check that it fsyncs before acking.
    pub nats_monitor: Option<String>,
    /// Timeout of one durable-plane operation, in seconds.
    pub timeout_secs: f64,
    /// Copies JetStream keeps of every stream, each on another server of the cluster (1 to 5;
    /// the embedded log keeps one and refuses more).
    pub replicas: u8,
    /// The launcher already opened the plane and said what its checks found
    /// (`IRON_PLANE_CHECKED=1`, set by `iron up` for its nodes); not from the file.
    #[serde(skip)]
    pub checked: bool,
}

/// The durable backend.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Embedded,
    Jetstream,
}

/// Memory settings.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// The projection database the projector writes; relative paths are under `state_dir`.
    pub projection: PathBuf,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            tenant: "default".into(),
            state_dir: PathBuf::from(".iron"),
            durable: DurableConfig::default(),
            memory: MemoryConfig::default(),
            models: None,
            operators: Vec::new(),
        }
    }
}

impl Default for DurableConfig {
    fn default() -> Self {
        Self {
            backend: Backend::Embedded,
            embedded_path: PathBuf::from("log.db"),
            nats_url: "nats://127.0.0.1:4222".into(),
            nats_monitor: None,
            timeout_secs: 5.0,
            replicas: 1,
            checked: false,
        }
    }
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            projection: PathBuf::from("projection.db"),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_norway::Error,
    },
    #[error("{var}={value:?}: {problem}")]
    Env {
        var: String,
        value: String,
        problem: String,
    },
}

/// The default configuration file, relative to the working directory.
pub const DEFAULT_FILE: &str = "config/iron.yaml";

impl Config {
    /// Loads `IRON_CONFIG` (which must exist), else `config/iron.yaml` if present, else the
    /// defaults; then applies the environment.
    pub fn load() -> Result<Self, ConfigError> {
        let explicit = std::env::var_os("IRON_CONFIG").map(PathBuf::from);
        let mut config = match explicit {
            Some(path) => Self::from_file(&path)?,
            None if Path::new(DEFAULT_FILE).is_file() => Self::from_file(Path::new(DEFAULT_FILE))?,
            None => Self::default(),
        };
        config.apply_env(|k| std::env::var(k).ok())?;
        Ok(config)
    }

    /// Reads one file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        serde_norway::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Applies `IRON_TENANT`, `IRON_STATE_DIR`, `IRON_DURABLE` (embedded|jetstream),
    /// `IRON_NATS_URL`, `IRON_NATS_MONITOR`, `IRON_DURABLE_REPLICAS` and
    /// `IRON_PLANE_CHECKED` from `get`.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(v) = get("IRON_TENANT") {
            self.tenant = v;
        }
        if let Some(v) = get("IRON_STATE_DIR") {
            self.state_dir = PathBuf::from(v);
        }
        if let Some(v) = get("IRON_DURABLE") {
            self.durable.backend = match v.as_str() {
                "embedded" => Backend::Embedded,
                "jetstream" => Backend::Jetstream,
                _ => {
                    return Err(ConfigError::Env {
                        var: "IRON_DURABLE".into(),
                        value: v,
                        problem: "expected embedded or jetstream".into(),
                    });
                }
            };
        }
        if let Some(v) = get("IRON_NATS_URL") {
            self.durable.nats_url = v;
        }
        if let Some(v) = get("IRON_NATS_MONITOR") {
            self.durable.nats_monitor = Some(v);
        }
        if let Some(v) = get("IRON_DURABLE_REPLICAS") {
            self.durable.replicas = v.parse().map_err(|_| ConfigError::Env {
                var: "IRON_DURABLE_REPLICAS".into(),
                value: v.clone(),
                problem: "expected a number of copies, 1 to 5".into(),
            })?;
        }
        if let Some(v) = get(PLANE_CHECKED_ENV) {
            self.durable.checked = v == "1";
        }
        Ok(())
    }

    /// A path from the configuration, under `state_dir` when relative.
    pub fn state_path(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.state_dir.join(path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_embedded_under_dot_iron() {
        let c = Config::default();
        assert_eq!(c.durable.backend, Backend::Embedded);
        assert_eq!(
            c.state_path(&c.durable.embedded_path),
            PathBuf::from(".iron/log.db")
        );
    }

    #[test]
    fn file_then_env() {
        let mut c: Config =
            serde_norway::from_str("tenant: acme\ndurable:\n  backend: jetstream\n").unwrap();
        assert_eq!(c.durable.backend, Backend::Jetstream);
        c.apply_env(|k| (k == "IRON_DURABLE").then(|| "embedded".to_string()))
            .unwrap();
        assert_eq!(c.durable.backend, Backend::Embedded);
        assert_eq!(c.tenant, "acme");
        assert!(
            c.apply_env(|k| (k == "IRON_DURABLE").then(|| "postgres".to_string()))
                .is_err()
        );
    }

    #[test]
    fn unknown_keys_are_errors() {
        let err = serde_norway::from_str::<Config>("tenant: a\ncolour: red\n").unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
}
