//! What a running `iron up` leaves in the state directory (`up.json`): its pid, the router
//! its nodes use, the nodes of its launch list and the durable plane it gave them.
//! `iron lifecycle list` reads it to know which nodes should answer, so a listing that misses
//! some can say it is partial; every command that opens the log reads the plane, so that
//! after `iron up --nats auto` it reads the log the nodes write.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Plan;

/// File name under the state directory.
pub const RUNNING_FILE: &str = "up.json";

/// The record of one running `iron up`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Running {
    /// Process id of `iron up`.
    pub pid: u32,
    /// The router endpoint its nodes use.
    pub router: String,
    /// Fully qualified names of the nodes of its launch list, in start order.
    pub nodes: Vec<String>,
    /// The durable plane it gave its nodes over the configuration (`IRON_DURABLE`,
    /// `IRON_NATS_URL`, … from `--nats`); empty when they use the configuration's.
    #[serde(default)]
    pub plane_env: Vec<(String, String)>,
}

impl Running {
    /// The record for this process running `plan` on `router`, its nodes given `plane_env`.
    pub fn of(plan: &Plan, router: &str, plane_env: &[(String, String)]) -> Running {
        Running {
            pid: std::process::id(),
            router: router.to_string(),
            nodes: plan.nodes.iter().map(|n| n.fqn()).collect(),
            plane_env: plane_env.to_vec(),
        }
    }

    fn path(state_dir: &Path) -> PathBuf {
        state_dir.join(RUNNING_FILE)
    }

    /// Writes the record, readable by its owner only (the plane's URL may carry credentials);
    /// it is removed when the returned guard is dropped.
    pub fn write(&self, state_dir: &Path) -> std::io::Result<RunningGuard> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(state_dir)?;
        let path = Running::path(state_dir);
        let tmp = path.with_extension("json.tmp");
        let _ = std::fs::remove_file(&tmp);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?
            .write_all(&serde_json::to_vec_pretty(self).unwrap_or_default())?;
        std::fs::rename(&tmp, &path)?;
        Ok(RunningGuard { path })
    }

    /// The record of an `iron up` that is still running on `router`, if there is one
    /// (a record left by a process that has died, or for another router, is ignored).
    pub fn find(state_dir: &Path, router: &str) -> Option<Running> {
        Running::alive(state_dir).filter(|r| r.router == router)
    }

    /// The record of an `iron up` that is still running on this state directory, whatever
    /// its router.
    pub fn alive(state_dir: &Path) -> Option<Running> {
        let text = std::fs::read(Running::path(state_dir)).ok()?;
        let running: Running = serde_json::from_slice(&text).ok()?;
        // SAFETY: kill(2) with signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(running.pid as i32, 0) } == 0;
        alive.then_some(running)
    }
}

/// Removes `up.json` when dropped, unless another `iron up` has written its own since.
#[derive(Debug)]
pub struct RunningGuard {
    path: PathBuf,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        let ours = std::fs::read(&self.path)
            .ok()
            .and_then(|t| serde_json::from_slice::<Running>(&t).ok())
            .is_some_and(|r| r.pid == std::process::id());
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_only_while_its_process_lives_and_for_its_router() {
        let dir = tempfile::tempdir().unwrap();
        let mine = Running {
            pid: std::process::id(),
            router: "tcp/127.0.0.1:7447".into(),
            nodes: vec!["/iron/inbox".into()],
            plane_env: vec![("IRON_DURABLE".into(), "jetstream".into())],
        };
        let guard = mine.write(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(RUNNING_FILE))
            .unwrap()
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        assert_eq!(
            Running::find(dir.path(), "tcp/127.0.0.1:7447"),
            Some(mine.clone())
        );
        assert_eq!(Running::find(dir.path(), "tcp/127.0.0.1:9999"), None);
        // A pid that cannot be alive (above pid_max).
        let dead = Running {
            pid: 1 << 30,
            ..mine.clone()
        };
        let dead_guard = dead.write(dir.path()).unwrap();
        assert_eq!(Running::find(dir.path(), "tcp/127.0.0.1:7447"), None);
        // A guard leaves a record that is not its process's alone.
        drop((guard, dead_guard));
        assert!(dir.path().join(RUNNING_FILE).exists());
        let _again = mine.write(dir.path()).unwrap();
        drop(_again);
        assert!(!dir.path().join(RUNNING_FILE).exists());
    }
}
