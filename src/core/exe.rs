//! Where Iron's own executables are: beside the running binary first, so an installed or a
//! freshly built tree runs its own programs rather than whatever `PATH` finds.

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
