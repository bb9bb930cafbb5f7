//! A control group per confined run, where this process may make one: it caps the run's
//! processes (`pids`) and its memory as a whole (`memory`), which resource limits cannot do
//! for root (the kernel never applies `RLIMIT_NPROC` to root) and do only per process for
//! memory. The group is made beside this process's own, in each controller's hierarchy
//! (cgroup v1 and v2 alike), the sandbox joins it between fork and exec, and it is removed
//! when the run ends.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Limits;

/// The groups one run is in.
#[derive(Debug)]
pub(super) struct RunGroup {
    dirs: Vec<PathBuf>,
    procs: Vec<CString>,
    /// Whether the process count is capped.
    pub(super) caps_processes: bool,
}

impl RunGroup {
    /// Makes the run's groups named `name` with `limits`; controllers this process cannot
    /// use are left out (see [`RunGroup::caps_processes`]).
    pub(super) fn make(name: &str, limits: &Limits) -> RunGroup {
        let mut group = RunGroup {
            dirs: Vec::new(),
            procs: Vec::new(),
            caps_processes: false,
        };
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let wanted: [(&str, &str, &str, String); 2] = [
            ("pids", "pids.max", "pids.max", limits.processes.to_string()),
            (
                "memory",
                "memory.limit_in_bytes",
                "memory.max",
                limits.memory.to_string(),
            ),
        ];
        for (controller, v1_file, v2_file, value) in &wanted {
            let made = hierarchy(&own, controller)
                .and_then(|(base, v2)| {
                    let file = if v2 { v2_file } else { v1_file };
                    make_one(&base.join(name), file, value)
                })
                .and_then(|dir| {
                    let procs = CString::new(
                        dir.join("cgroup.procs")
                            .into_os_string()
                            .into_encoded_bytes(),
                    )
                    .ok()?;
                    Some((dir, procs))
                });
            if let Some((dir, procs)) = made {
                group.caps_processes |= *controller == "pids";
                group.dirs.push(dir);
                group.procs.push(procs);
            }
        }
        group
    }

    /// What moves a process into the groups, for the child to run between fork and exec.
    pub(super) fn joiner(&self) -> Joiner {
        Joiner(self.procs.clone())
    }

    /// Removes the groups once the processes in them are gone (a killed sandbox takes a
    /// moment to be reaped).
    pub(super) async fn remove(mut self) {
        for _ in 0..50 {
            self.dirs
                .retain(|d| std::fs::remove_dir(d).is_err() && d.exists());
            if self.dirs.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The `cgroup.procs` files of a run's groups.
pub(super) struct Joiner(Vec<CString>);

impl Joiner {
    /// Moves the calling process into the groups. Only open/write/close: safe between fork
    /// and exec.
    pub(super) fn join(&self) -> std::io::Result<()> {
        for procs in &self.0 {
            // SAFETY: plain syscalls on a NUL-terminated path made before the fork.
            let ok = unsafe {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                let ok = fd >= 0 && libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                if fd >= 0 {
                    libc::close(fd);
                }
                ok
            };
            if !ok {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl Drop for RunGroup {
    fn drop(&mut self) {
        for dir in &self.dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The directory of this process's group in `controller`'s hierarchy, and whether it is
/// cgroup v2, from `/proc/self/cgroup` (`ID:CONTROLLERS:PATH` lines; v2 is `0::PATH`).
fn hierarchy(own: &str, controller: &str) -> Option<(PathBuf, bool)> {
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == controller) {
            let base = Path::new("/sys/fs/cgroup").join(controller).join(path);
            return base.is_dir().then_some((base, false));
        }
        if controllers.is_empty() {
            for root in ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
                let base = Path::new(root).join(path);
                let enabled = std::fs::read_to_string(base.join("cgroup.subtree_control"))
                    .is_ok_and(|c| c.split_whitespace().any(|c| c == controller));
                if enabled {
                    return Some((base, true));
                }
            }
        }
    }
    None
}

/// Makes `dir` and writes `value` to its `file`; removes it again if that fails.
fn make_one(dir: &Path, file: &str, value: &str) -> Option<PathBuf> {
    std::fs::create_dir(dir).ok()?;
    if std::fs::write(dir.join(file), value).is_ok() {
        Some(dir.to_path_buf())
    } else {
        let _ = std::fs::remove_dir(dir);
        None
    }
}
