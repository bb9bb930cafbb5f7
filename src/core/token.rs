//! Bearer tokens: made at random, kept in a file only its owner can read, compared in
//! constant time.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Whether `presented` is `expected`, in time that does not depend on where they differ; an
/// empty expected token matches nothing.
pub fn same(presented: &[u8], expected: &[u8]) -> bool {
    presented.len() == expected.len()
        && !expected.is_empty()
        && presented
            .iter()
            .zip(expected)
            .fold(0u8, |d, (x, y)| d | (x ^ y))
            == 0
}

/// The token in `path`, made (64 hex digits, mode 0600) when the file does not exist yet.
pub fn load_or_create(path: &Path) -> std::io::Result<String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let token = text.trim().to_string();
        if !token.is_empty() {
            return Ok(token);
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(token.as_bytes())?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_must_match_exactly() {
        assert!(same(b"s3cret", b"s3cret"));
        assert!(!same(b"s3cre", b"s3cret"));
        assert!(!same(b"s3creT", b"s3cret"));
        assert!(!same(b"", b""));
    }

    #[test]
    fn a_token_is_made_once_and_kept_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t/console.token");
        let a = load_or_create(&path).unwrap();
        assert_eq!(a.len(), 64);
        assert_eq!(load_or_create(&path).unwrap(), a);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
