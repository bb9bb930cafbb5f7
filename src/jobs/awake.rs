//! keep_awake: while a job's steps run, hold a sleep inhibitor (`systemd-inhibit`) so the
//! machine does not suspend in the middle of a step. Where the tool is missing (or refuses),
//! say so once and carry on: a job survives a suspend anyway, it only resumes later.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::process::{Child, Command};
use tracing::warn;

/// Hands out inhibitors; cheap to clone.
#[derive(Clone, Debug)]
pub struct KeepAwake {
    command: Option<(PathBuf, Vec<String>)>,
    warned: Arc<AtomicBool>,
}

/// Held while steps run; the inhibitor ends when it is dropped.
#[derive(Debug)]
pub struct Inhibitor {
    child: Child,
    awake: KeepAwake,
}

impl Drop for Inhibitor {
    fn drop(&mut self) {
        // An inhibitor that already ended by itself did not hold (no logind, no D-Bus).
        if let Ok(Some(status)) = self.child.try_wait() {
            self.awake
                .warn_once(&format!("the sleep inhibitor exited early ({status})"));
        }
    }
}

impl KeepAwake {
    /// Uses `systemd-inhibit` from `PATH` when there is one.
    pub fn detect() -> Self {
        let found = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("systemd-inhibit"))
                .find(|p| p.is_file())
        });
        Self::with_command(found.map(|p| {
            (
                p,
                [
                    "--what=sleep:idle",
                    "--who=iron",
                    "--why=durable job steps are running",
                    "--mode=block",
                    "sleep",
                    "infinity",
                ]
                .map(String::from)
                .to_vec(),
            )
        }))
    }

    /// Uses `command` (program and arguments; it must run until killed), or nothing.
    pub fn with_command(command: Option<(PathBuf, Vec<String>)>) -> Self {
        Self {
            command,
            warned: Arc::new(AtomicBool::new(false)),
        }
    }

    /// True once the missing or failing inhibitor has been reported.
    pub fn has_warned(&self) -> bool {
        self.warned.load(Ordering::Relaxed)
    }

    fn warn_once(&self, why: &str) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            warn!(
                "keep_awake: {why}; the machine may sleep while job steps run (jobs resume after it wakes)"
            );
        }
    }

    /// Starts an inhibitor, or reports once that it cannot.
    pub fn hold(&self) -> Option<Inhibitor> {
        let Some((program, args)) = &self.command else {
            self.warn_once("systemd-inhibit is not on PATH");
            return None;
        };
        match Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
        {
            Ok(child) => Some(Inhibitor {
                child,
                awake: self.clone(),
            }),
            Err(e) => {
                self.warn_once(&format!("cannot start {}: {e}", program.display()));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_an_inhibitor_it_says_so_once_and_goes_on() {
        let awake = KeepAwake::with_command(None);
        assert!(!awake.has_warned());
        assert!(awake.hold().is_none());
        assert!(awake.has_warned());
        assert!(awake.hold().is_none());
        let broken =
            KeepAwake::with_command(Some((PathBuf::from("/nonexistent/inhibit"), Vec::new())));
        assert!(broken.hold().is_none());
        assert!(broken.has_warned());
    }

    #[tokio::test]
    async fn with_an_inhibitor_a_process_is_held_while_the_guard_lives() {
        let awake = KeepAwake::with_command(Some((PathBuf::from("sleep"), vec!["30".into()])));
        let guard = awake.hold().expect("sleep starts");
        assert!(guard.child.id().is_some());
        drop(guard);
        assert!(!awake.has_warned());
    }
}
