//! Who is calling a tool bridge. Zenoh does not say who sent a request, so `caller` in an
//! `iron/srv/ToolCall` would be whatever the sender wrote. Each request therefore carries a
//! credential: an HMAC-SHA256 of the caller and the task id under the deployment's caller key,
//! a random secret in `<state_dir>/caller.key` (created once, readable by its owner only).
//! Iron's processes read the key from the state directory they share; a peer on the graph
//! without it cannot name itself someone else, and a bridge refuses a request whose
//! credential does not match. (On an unencrypted network a credential can be replayed for the
//! same caller and task; that needs Zenoh's TLS, not this.)

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::core::fs::create_whole;

/// The key file, in the state directory.
pub const KEY_FILE: &str = "caller.key";

/// Why the caller key is not available.
#[derive(Debug, thiserror::Error)]
pub enum CallerKeyError {
    /// The key file could not be read or created.
    #[error("caller key {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The key file holds something else than a key.
    #[error("caller key {path} is not 64 hexadecimal digits; remove it to make a new one")]
    Malformed { path: PathBuf },
}

/// The deployment's secret for caller credentials.
#[derive(Clone)]
pub struct CallerKey([u8; 32]);

impl std::fmt::Debug for CallerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallerKey(…)")
    }
}

impl CallerKey {
    /// The key of the state directory `state_dir`, made (atomically, mode 0600) by whichever
    /// process needs it first.
    pub fn open(state_dir: &Path) -> Result<Self, CallerKeyError> {
        let path = state_dir.join(KEY_FILE);
        let io = |source| CallerKeyError::Io {
            path: path.clone(),
            source,
        };
        if !path.exists() {
            let mut fresh = [0u8; 32];
            fresh[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
            fresh[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
            // A reader never sees a partial key; of two processes racing, the first wins.
            create_whole(&path, io, |tmp| {
                let mut file = std::fs::File::create(tmp).map_err(io)?;
                file.write_all(hex::encode(fresh).as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(io)
            })?;
        }
        let text = std::fs::read_to_string(&path).map_err(io)?;
        let mut key = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut key)
            .map_err(|_| CallerKeyError::Malformed { path: path.clone() })?;
        Ok(Self(key))
    }

    fn mac(&self, caller: &str, task_id: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key size");
        mac.update(caller.as_bytes());
        mac.update(b"\n");
        mac.update(task_id.as_bytes());
        mac
    }

    /// The credential of `caller` for `task_id` (hexadecimal).
    pub fn credential(&self, caller: &str, task_id: &str) -> String {
        hex::encode(self.mac(caller, task_id).finalize().into_bytes())
    }

    /// Whether `credential` is that of `caller` for `task_id` (compared in constant time).
    pub fn verify(&self, caller: &str, task_id: &str, credential: &str) -> bool {
        hex::decode(credential.trim())
            .map(|bytes| self.mac(caller, task_id).verify_slice(&bytes).is_ok())
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_names_one_caller_and_task_under_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let key = CallerKey::open(dir.path()).unwrap();
        let same = CallerKey::open(dir.path()).unwrap();
        let c = key.credential("newsroom/publisher", "t-1");
        assert!(same.verify("newsroom/publisher", "t-1", &c));
        assert!(!key.verify("newsroom/analyst", "t-1", &c), "another caller");
        assert!(!key.verify("newsroom/publisher", "t-2", &c), "another task");
        assert!(!key.verify("newsroom/publisher", "t-1", ""), "none");
        assert!(!key.verify("newsroom/publisher", "t-1", "zz"), "not hex");
        let other = tempfile::tempdir().unwrap();
        let stranger = CallerKey::open(other.path()).unwrap();
        assert!(
            !stranger.verify("newsroom/publisher", "t-1", &c),
            "another deployment"
        );
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.path().join(KEY_FILE))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o077, 0, "readable by its owner only");
    }
}
