//! Resource limits of a confined run: what one process may use (memory, CPU time, the size of
//! a file it writes) and how many processes the run may add. They are set as resource limits
//! (`setrlimit`) on bubblewrap just before it starts, so the sandbox and everything in it
//! inherit them and nothing inside can raise them (`--cap-drop ALL` takes
//! `CAP_SYS_RESOURCE`).
//!
//! The process limit is per user, as the kernel counts it: the run may start at most
//! [`Limits::processes`] more processes than its user already had when it began, so a fork
//! bomb inside stops there while the host (whose processes carry no such limit) goes on.

use std::io;
use std::time::Duration;

/// What a confined run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of data (heap and private mappings) per process (`RLIMIT_DATA`).
    pub memory: u64,
    /// Processes the run may add to those its user already runs (`RLIMIT_NPROC`).
    pub processes: u64,
    /// Largest file a process may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size: u64,
    /// Size of each private in-memory directory (the run's `TMPDIR`), in bytes.
    pub tmp_size: u64,
}

impl Default for Limits {
    /// 4 GiB of memory per process, 256 more processes, 1 GiB files, a 256 MiB `TMPDIR`.
    fn default() -> Self {
        Self {
            memory: 4 << 30,
            processes: 256,
            file_size: 1 << 30,
            tmp_size: 256 << 20,
        }
    }
}

/// The numbers a run's limits come to, fixed before the sandbox starts (the closure that
/// applies them runs between `fork` and `exec`, where nothing may allocate).
#[derive(Debug, Clone, Copy)]
pub(super) struct Rlimits {
    data: u64,
    nproc: u64,
    fsize: u64,
    cpu: u64,
}

impl Rlimits {
    /// `limits` for a run of at most `timeout`: CPU time is capped at twice the wall time
    /// (a process may use both cores), and the process count is taken now.
    pub(super) fn of(limits: &Limits, timeout: Duration) -> Self {
        Self {
            data: limits.memory,
            nproc: processes_of_this_user().saturating_add(limits.processes),
            fsize: limits.file_size,
            cpu: timeout.as_secs().saturating_add(1).saturating_mul(2),
        }
    }

    /// Sets them on the calling process. Only `setrlimit`: safe between `fork` and `exec`.
    pub(super) fn apply(&self) -> io::Result<()> {
        set(libc::RLIMIT_DATA, self.data)?;
        set(libc::RLIMIT_NPROC, self.nproc)?;
        set(libc::RLIMIT_FSIZE, self.fsize)?;
        set(libc::RLIMIT_CPU, self.cpu)?;
        set(libc::RLIMIT_CORE, 0)
    }
}

fn set(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: setrlimit reads the struct it is given and touches nothing else.
    if unsafe { libc::setrlimit(resource, &limit) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// How many processes this process's real user runs now (what `RLIMIT_NPROC` is checked
/// against).
fn processes_of_this_user() -> u64 {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid cannot fail and has no side effects.
    let uid = unsafe { libc::getuid() };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_pid))
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .count() as u64
}

fn is_pid(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_limit_counts_from_what_the_user_runs() {
        let r = Rlimits::of(&Limits::default(), Duration::from_secs(60));
        // At least this test's own process is counted.
        assert!(r.nproc > 256, "{r:?}");
        assert_eq!(r.cpu, 122);
    }
}
