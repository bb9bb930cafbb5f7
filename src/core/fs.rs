//! Files that several processes may create at once and that must never be seen half made.

use std::path::Path;

/// Makes `path` whole or not at all: `fill` writes a temporary file beside it (mode 0600),
/// which is then linked into place. Of two processes racing, the first link wins and the
/// other's file is dropped; a reader never finds `path` partly written. `io` turns an I/O
/// error into the caller's error type.
pub fn create_whole<E>(
    path: &Path,
    io: impl Fn(std::io::Error) -> E,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(&io)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)
        .map_err(&io)?;
    fill(tmp.path())?;
    match std::fs::hard_link(tmp.path(), path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_file_made_stays_and_no_temporary_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/key");
        let write = |text: &'static str| move |p: &Path| std::fs::write(p, text);
        create_whole(&path, |e| e, write("first")).unwrap();
        create_whole(&path, |e| e, write("second")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["key"]);
    }
}
