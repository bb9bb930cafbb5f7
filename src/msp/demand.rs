//! `startup: on_demand` sources: started by the expert that holds the grant when it is
//! configured and nobody else serves them, and stopped with it. The source runs as its own
//! node (`/iron/msp/<mesh>/<source>_<pid>`, the expert's pid) driven through its lifecycle like
//! any other, so a person sees it in `iron node list` and the reader finds it in the phone book.

use std::{path::Path, process::Stdio, time::Duration};

use hiroz::node::ZNode;
use tokio::process::{Child, Command};
use tracing::{info, warn};

use super::reader::{self, Outcome};
use crate::{
    aem::{SourceEntry, Startup},
    core::durable::KeyValue,
    spine::control::lifecycle::LifecycleClient,
};

/// One source this process started.
struct Running {
    fqn: String,
    child: Child,
}

/// The on-demand sources an expert started; [`Started::stop`] shuts them down (dropping it
/// kills them, and they die with the expert's process in any case).
#[derive(Default)]
pub struct Started {
    running: Vec<Running>,
}

impl Started {
    /// Node names of the sources started.
    pub fn nodes(&self) -> Vec<String> {
        self.running.iter().map(|r| r.fqn.clone()).collect()
    }

    /// Starts each on-demand source of `mesh` in `granted` that does not answer now, with
    /// `source_node` (`executable`), and waits up to `timeout` for each to show a state.
    /// A source that cannot be started is logged and left out (the reader then reports it
    /// as not running); this never fails the expert.
    pub async fn start_missing<K: KeyValue>(
        me: &ZNode,
        kv: &K,
        executable: &Path,
        mesh: &str,
        granted: &[(String, SourceEntry)],
        timeout: Duration,
    ) -> Started {
        let mut started = Started::default();
        for (name, entry) in granted {
            if entry.startup != Startup::OnDemand {
                continue;
            }
            let probe = reader::read_all(
                me,
                kv,
                mesh,
                &[(name.clone(), String::new())],
                "on-demand check",
                Duration::from_secs(2),
            )
            .await;
            if matches!(probe[0].outcome, Outcome::Read { .. }) {
                continue;
            }
            match start_one(me, kv, executable, mesh, name, timeout).await {
                Ok(r) => {
                    info!(source = %name, node = %r.fqn, "started an on-demand source");
                    started.running.push(r);
                }
                Err(e) => warn!(source = %name, "could not start the on-demand source: {e}"),
            }
        }
        started
    }

    /// Shuts every started source down through its lifecycle (it then leaves the phone book),
    /// killing what does not exit within `timeout`.
    pub async fn stop(&mut self, me: &ZNode, timeout: Duration) {
        for mut r in self.running.drain(..) {
            if let Ok(life) = LifecycleClient::new(me, &r.fqn, timeout) {
                let _ = life.set("shutdown").await;
            }
            if tokio::time::timeout(timeout, r.child.wait()).await.is_err() {
                let _ = r.child.kill().await;
            }
        }
    }
}

/// Why an on-demand source did not come up (it is killed, and the expert goes on without it).
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("{}: {source}", program.display())]
    Spawn {
        program: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Control(#[from] crate::spine::control::ControlError),
    #[error("did not come up: {0}")]
    NotUp(#[source] crate::spine::control::ControlError),
    #[error("exited while starting ({0:?})")]
    Exited(std::io::Result<std::process::ExitStatus>),
}

async fn start_one<K: KeyValue>(
    me: &ZNode,
    kv: &K,
    executable: &Path,
    mesh: &str,
    name: &str,
    timeout: Duration,
) -> Result<Running, StartError> {
    let node = format!("{name}_{}", std::process::id());
    let ns = format!("/iron/msp/{mesh}");
    let fqn = format!("{ns}/{node}");
    let mut cmd = Command::new(executable);
    cmd.args(["--source", &format!("{mesh}/{name}")])
        .args(["--ros-args", "-r", &format!("__node:={node}"), "-r"])
        .arg(format!("__ns:={ns}"))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    crate::core::exe::die_with_parent(&mut cmd, false);
    let mut child = cmd.spawn().map_err(|source| StartError::Spawn {
        program: executable.to_path_buf(),
        source,
    })?;
    let drive = async {
        let life = LifecycleClient::watching(me, &fqn, timeout)?;
        life.get_state().await.map_err(StartError::NotUp)?;
        life.activate().await?;
        // Its first state, so the first task already sees it.
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let read = reader::read_all(
                me,
                kv,
                mesh,
                &[(name.to_string(), String::new())],
                "on-demand start",
                timeout,
            )
            .await;
            if matches!(read[0].outcome, Outcome::Read { .. })
                || tokio::time::Instant::now() > deadline
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let driven = tokio::select! {
        r = drive => r,
        status = child.wait() => Err(StartError::Exited(status)),
    };
    match driven {
        Ok(()) => Ok(Running { fqn, child }),
        Err(e) => {
            let _ = child.kill().await;
            Err(e)
        }
    }
}
