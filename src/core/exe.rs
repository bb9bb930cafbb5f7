//! Iron's own executables and the processes it starts: where the executables are (beside the
//! running binary first, so an installed or a freshly built tree runs its own programs rather
//! than whatever `PATH` finds), and how a child is tied to the process that started it.

use std::path::PathBuf;

/// `executable` beside the running binary when it is there, else the name as given (a path
/// with a directory is returned unchanged; a bare name is then looked up on `PATH`).
pub fn beside_current(executable: &str) -> PathBuf {
    let path = PathBuf::from(executable);
    if path.components().count() > 1 {
        return path;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(executable)))
        .filter(|candidate| candidate.is_file())
        .unwrap_or(path)
}

/// Makes the child of `cmd` receive SIGTERM when the process that started it dies (even by
/// SIGKILL), so no child lives on unsupervised; with `own_group`, it also gets a process group
/// of its own, so a terminal's Ctrl-C reaches only its parent.
pub fn die_with_parent(cmd: &mut tokio::process::Command, own_group: bool) {
    // SAFETY: setpgid and prctl are async-signal-safe and touch only the child being set up.
    unsafe {
        cmd.pre_exec(move || {
            if own_group {
                libc::setpgid(0, 0);
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}
