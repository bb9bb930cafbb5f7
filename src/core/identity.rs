//! Operators prove who they are. Each operator has an Ed25519 key pair: the private half in a
//! file only that person can read (`$XDG_CONFIG_HOME/iron/operators/<name>.key`, mode 0600, in a
//! directory of mode 0700: outside every scratch and sandbox, which never show the home), the
//! public half registered with the deployment (`<state_dir>/operators/<name>.pub`). The CLI
//! and the console sign each operator action; the node that acts on it verifies the
//! signature against the registry and takes it only from someone allowed (see
//! [`Authority`]). Nodes hold public keys only, so an expert process — which can write the
//! log and publish on every topic — cannot sign, whatever its grants.
//!
//! What is signed is a [`Statement`]: the action, its subject, the decision, the operator and
//! the time, encoded as a JSON array (unambiguous whatever the fields contain) after a version
//! tag. A statement on the log is verified whenever it is read back, so a forged decision
//! written straight to the log is ignored like one sent to a service.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use serde::{Deserialize, Serialize};

/// Overrides where private keys are kept (default `$XDG_CONFIG_HOME/iron/operators`, else
/// `~/.config/iron/operators`).
pub const KEY_DIR_ENV: &str = "IRON_OPERATOR_KEYS";
/// The operator the CLI and the console act as when none is named.
pub const OPERATOR_ENV: &str = "IRON_OPERATOR";
/// How old a statement sent to a service may be (a replayed message is refused after it).
pub const FRESH_FOR: Duration = Duration::from_secs(300);

const VERSION: &str = "iron-operator-v1";

/// The prefix of the approval a review job waits on for one hunk: `hunk-<id>`.
pub const HUNK_APPROVAL: &str = "hunk-";

/// What an operator does; the `action` of a [`Statement`].
pub mod action {
    /// Approve or reject hunks; subject: the hunk ids, space-separated.
    pub const HUNKS: &str = "hunks.decide";
    /// Answer a task's question; subject `<task>/<question>`, decision the answer's text.
    pub const ANSWER: &str = "task.answer";
    /// Correct a running task; subject the task, decision the text.
    pub const INTERJECT: &str = "task.interject";
    /// Answer a job's approval; subject `<job>/<approval>`, decision `approved|rejected`.
    pub const JOB_APPROVE: &str = "job.approve";
    /// Resume a parked job; subject the job.
    pub const JOB_RESUME: &str = "job.resume";
    /// Cancel a job; subject the job.
    pub const JOB_CANCEL: &str = "job.cancel";
    /// Change a node's lifecycle state; subject the node, decision the transition.
    pub const LIFECYCLE: &str = "node.lifecycle";
}

/// The decision word of an approval or a hunk decision: `approved` or `rejected`.
pub fn decision(approved: bool) -> &'static str {
    if approved { "approved" } else { "rejected" }
}

/// Why an operator's action was not taken, or a key could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// Not a usable operator name.
    #[error(
        "{0:?} is not an operator name (1 to 64 of letters, digits, `.`, `_`, `-`, not starting with `.`)"
    )]
    BadName(String),
    /// No private key for this operator on this machine.
    #[error("no key for operator {name:?} at {}: run `iron operator add {name}`", path.display())]
    NoKey {
        /// The operator.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// No key at all on this machine.
    #[error(
        "no operator key in {}: make one with `iron operator add NAME` (then act as it with --operator NAME or {OPERATOR_ENV})",
        .0.display()
    )]
    NoKeys(PathBuf),
    /// Several keys here and none named.
    #[error("keys of {names} in {}: say which with --operator NAME or {OPERATOR_ENV}", dir.display())]
    WhichKey {
        /// The key directory.
        dir: PathBuf,
        /// The operators whose keys are there.
        names: String,
    },
    /// The key exists already.
    #[error("operator {name:?} already has a key at {}", path.display())]
    Exists {
        /// The operator.
        name: String,
        /// The key file.
        path: PathBuf,
    },
    /// A key file that others may read is not used.
    #[error("{} is readable by others (mode {mode:o}): `chmod 600` it", path.display())]
    Exposed {
        /// The key file.
        path: PathBuf,
        /// Its mode.
        mode: u32,
    },
    /// Reading or writing a key.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A key file that does not hold a key.
    #[error("{} does not hold an Ed25519 key", .0.display())]
    BadKey(PathBuf),
    /// Nowhere to keep keys.
    #[error("no home for operator keys: set {KEY_DIR_ENV}, XDG_CONFIG_HOME or HOME")]
    NoKeyDir,
    /// The operator's public key is not registered with this deployment.
    #[error("operator {0:?} is not registered here (`iron operator add {0}` on this deployment)")]
    Unregistered(String),
    /// Unsigned, or a proof that does not parse.
    #[error("the action by {operator:?} is not signed{why}")]
    Unsigned {
        /// Who it claims to be from.
        operator: String,
        /// What was wrong, with a leading separator, or empty.
        why: String,
    },
    /// The signature does not match the statement and the registered key.
    #[error("the signature of {0:?} does not verify: not signed by that operator's key")]
    Forged(String),
    /// Signed too long ago (or in the future) for a live action.
    #[error("the action by {operator:?} was signed {age_s} s from now: older than {max_s} s")]
    Stale {
        /// Who signed.
        operator: String,
        /// Seconds between signing and now.
        age_s: u64,
        /// The window.
        max_s: u64,
    },
    /// Verified, but this person may not do it.
    #[error("{0:?} is not an operator of this deployment nor the task's owner")]
    NotAllowed(String),
}

/// Checks an operator name: it becomes a file name and part of actor ids.
pub fn check_name(name: &str) -> Result<(), IdentityError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(IdentityError::BadName(name.to_string()))
    }
}

/// A signed operator action, as it travels on the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// One of [`action`].
    pub action: String,
    /// What it is about.
    pub subject: String,
    /// What was decided.
    pub decision: String,
    /// Who signed.
    pub operator: String,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The Ed25519 signature, hex.
    pub signature: String,
}

impl Statement {
    /// The bytes signed.
    fn message(action: &str, subject: &str, decision: &str, operator: &str, at_ms: u64) -> Vec<u8> {
        serde_json::to_vec(&(VERSION, action, subject, decision, operator, at_ms))
            .expect("a tuple of strings serialises")
    }

    /// The proof alone, as a service field carries it beside the operator's name:
    /// `v1:<at_ms>:<signature>`.
    pub fn proof(&self) -> String {
        format!("v1:{}:{}", self.at_ms, self.signature)
    }

    /// Rebuilds a statement from what a service request says and its `proof` field.
    pub fn from_proof(
        action: &str,
        subject: &str,
        decision: &str,
        operator: &str,
        proof: &str,
    ) -> Result<Self, IdentityError> {
        let unsigned = |why: &str| IdentityError::Unsigned {
            operator: operator.to_string(),
            why: why.to_string(),
        };
        if proof.trim().is_empty() {
            return Err(unsigned(
                ": sign it with the operator's key (the `iron` CLI does; `iron operator sign` prints a proof)",
            ));
        }
        let mut parts = proof.trim().splitn(3, ':');
        let (Some("v1"), Some(at), Some(signature)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(unsigned(": the proof is not `v1:<ms>:<signature>`"));
        };
        let at_ms = at
            .parse()
            .map_err(|_| unsigned(": the proof's time is not a number"))?;
        Ok(Self {
            action: action.to_string(),
            subject: subject.to_string(),
            decision: decision.to_string(),
            operator: operator.to_string(),
            at_ms,
            signature: signature.to_string(),
        })
    }

    /// Whether this statement is about `action` on `subject` with `decision`.
    pub fn says(&self, action: &str, subject: &str, decision: &str) -> bool {
        self.action == action && self.subject == subject && self.decision == decision
    }

    /// Whether this is a decision on hunk `id` (one of the ids it names) with `decision`.
    pub fn decides_hunk(&self, id: &str, decision: &str) -> bool {
        self.action == action::HUNKS
            && self.decision == decision
            && self.subject.split(' ').any(|h| h == id)
    }

    /// Whether this hunk decision also answers the approval `name` a review job waits on
    /// (`hunk-<id>`, [`HUNK_APPROVAL`]): deciding a hunk answers its review.
    pub fn decides_hunk_approval(&self, name: &str, decision: &str) -> bool {
        name.strip_prefix(HUNK_APPROVAL)
            .is_some_and(|id| self.decides_hunk(id, decision))
    }
}

/// Where this person's private keys are kept.
pub fn key_dir() -> Result<PathBuf, IdentityError> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(KEY_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(config) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(config).join("iron/operators"));
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".config/iron/operators"))
        .ok_or(IdentityError::NoKeyDir)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IdentityError + '_ {
    move |source| IdentityError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An operator's private key, loaded to sign.
pub struct OperatorKey {
    name: String,
    pair: Ed25519KeyPair,
}

impl std::fmt::Debug for OperatorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorKey")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl OperatorKey {
    /// The key file of `name` in `dir`.
    pub fn path(dir: &Path, name: &str) -> PathBuf {
        dir.join(format!("{name}.key"))
    }

    /// Makes a new key for `name` in `dir` (created 0700); refuses to replace one.
    pub fn create(dir: &Path, name: &str) -> Result<Self, IdentityError> {
        check_name(name)?;
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io(dir))?;
        let path = Self::path(dir, name);
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new())
            .map_err(|_| IdentityError::BadKey(path.clone()))?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => IdentityError::Exists {
                    name: name.to_string(),
                    path: path.clone(),
                },
                _ => io(&path)(e),
            })?;
        writeln!(file, "{}", hex::encode(pkcs8.as_ref())).map_err(io(&path))?;
        let pair =
            Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(|_| IdentityError::BadKey(path))?;
        Ok(Self {
            name: name.to_string(),
            pair,
        })
    }

    /// Loads `name`'s key from `dir`; a key others can read is refused.
    pub fn load(dir: &Path, name: &str) -> Result<Self, IdentityError> {
        check_name(name)?;
        let path = Self::path(dir, name);
        let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => IdentityError::NoKey {
                name: name.to_string(),
                path: path.clone(),
            },
            _ => io(&path)(e),
        })?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(IdentityError::Exposed { path, mode });
        }
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        let pair = hex::decode(text.trim())
            .ok()
            .and_then(|der| Ed25519KeyPair::from_pkcs8(&der).ok())
            .ok_or_else(|| IdentityError::BadKey(path.clone()))?;
        Ok(Self {
            name: name.to_string(),
            pair,
        })
    }

    /// The operator CLI commands act as: `--operator`/`IRON_OPERATOR` when given, else the
    /// only key in the key directory.
    pub fn for_cli(named: Option<&str>) -> Result<Self, IdentityError> {
        let dir = key_dir()?;
        let env = std::env::var(OPERATOR_ENV).ok().filter(|v| !v.is_empty());
        if let Some(name) = named.map(str::to_string).or(env) {
            return Self::load(&dir, &name);
        }
        let names = names_in(&dir, "key");
        match names.as_slice() {
            [only] => Self::load(&dir, only),
            [] => Err(IdentityError::NoKeys(dir)),
            _ => Err(IdentityError::WhichKey {
                dir,
                names: names.join(", "),
            }),
        }
    }

    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The public key, hex, as registered.
    pub fn public_hex(&self) -> String {
        hex::encode(self.pair.public_key().as_ref())
    }

    /// Signs `action` on `subject` with `decision`, now.
    pub fn sign(&self, action: &str, subject: &str, decision: &str) -> Statement {
        self.sign_at(action, subject, decision, now_ms())
    }

    /// Signs as of `at_ms` (tests make stale statements with it).
    pub fn sign_at(&self, action: &str, subject: &str, decision: &str, at_ms: u64) -> Statement {
        let message = Statement::message(action, subject, decision, &self.name, at_ms);
        Statement {
            action: action.to_string(),
            subject: subject.to_string(),
            decision: decision.to_string(),
            operator: self.name.clone(),
            at_ms,
            signature: hex::encode(self.pair.sign(&message).as_ref()),
        }
    }
}

/// The names of files `*.<ext>` in `dir`, sorted; none when it does not exist.
fn names_in(dir: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            (path.extension()? == ext)
                .then(|| path.file_stem()?.to_str().map(str::to_string))
                .flatten()
        })
        .filter(|n| check_name(n).is_ok())
        .collect();
    names.sort();
    names
}

/// The deployment's registered public keys: `<state_dir>/operators/<name>.pub`.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    keys: BTreeMap<String, Vec<u8>>,
}

impl Registry {
    /// The registry's directory under `state_dir`.
    pub fn dir(state_dir: &Path) -> PathBuf {
        state_dir.join("operators")
    }

    /// Reads every registered key (none when the directory does not exist). A file that
    /// does not hold a key is left out with a warning: it registers nobody.
    pub fn load(state_dir: &Path) -> Self {
        let dir = Self::dir(state_dir);
        let mut keys = BTreeMap::new();
        for name in names_in(&dir, "pub") {
            let path = dir.join(format!("{name}.pub"));
            let key = std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| hex::decode(text.trim()).ok())
                .filter(|k| k.len() == 32);
            match key {
                Some(key) => {
                    keys.insert(name, key);
                }
                None => tracing::warn!("{} holds no public key: ignored", path.display()),
            }
        }
        Self { keys }
    }

    /// Registers `key`'s public half under `state_dir` (replacing an earlier one of the name).
    pub fn register(state_dir: &Path, key: &OperatorKey) -> Result<PathBuf, IdentityError> {
        let dir = Self::dir(state_dir);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = dir.join(format!("{}.pub", key.name()));
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io(&dir))?;
        writeln!(tmp, "{}", key.public_hex()).map_err(io(&path))?;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
            .map_err(io(&path))?;
        tmp.persist(&path).map_err(|e| io(&path)(e.error))?;
        Ok(path)
    }

    /// Removes `name`'s registration; false when there was none.
    pub fn unregister(state_dir: &Path, name: &str) -> Result<bool, IdentityError> {
        check_name(name)?;
        let path = Self::dir(state_dir).join(format!("{name}.pub"));
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io(&path)(e)),
        }
    }

    /// The registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// Checks that `statement` was signed by its operator's registered key.
    pub fn verify(&self, statement: &Statement) -> Result<(), IdentityError> {
        let key = self
            .keys
            .get(&statement.operator)
            .ok_or_else(|| IdentityError::Unregistered(statement.operator.clone()))?;
        let forged = || IdentityError::Forged(statement.operator.clone());
        let signature = hex::decode(&statement.signature).map_err(|_| forged())?;
        let message = Statement::message(
            &statement.action,
            &statement.subject,
            &statement.decision,
            &statement.operator,
            statement.at_ms,
        );
        UnparsedPublicKey::new(&ED25519, key)
            .verify(&message, &signature)
            .map_err(|_| forged())
    }
}

/// Who may act here: a registered operator whose statement verifies, and who is named in
/// `operators:` (any registered operator when the list is empty: registering needs the
/// deployment's state directory) or is the owner of the task the action is about.
#[derive(Debug, Clone)]
pub struct Authority {
    state_dir: PathBuf,
    operators: BTreeSet<String>,
}

impl Authority {
    /// The authority of a deployment whose state is in `state_dir`.
    pub fn new(state_dir: &Path, operators: &[String]) -> Self {
        Self {
            state_dir: state_dir.to_path_buf(),
            operators: operators.iter().cloned().collect(),
        }
    }

    /// The deployment's state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The registered keys, as they are now.
    pub fn registry(&self) -> Registry {
        Registry::load(&self.state_dir)
    }

    /// Verifies `statement` against the registry as it is now (read again each time, so an
    /// operator added while the system runs is known at once): see [`Authority::check`].
    pub fn admit(
        &self,
        statement: &Statement,
        owner: Option<&str>,
        fresh: Option<Duration>,
    ) -> Result<(), IdentityError> {
        self.check(&self.registry(), statement, owner, fresh)
    }

    /// Verifies `statement` against `registry` and that its operator may act (`owner`: the
    /// task's owner, who may act on their own task). `fresh` bounds the statement's age for a
    /// live action; a statement read back from the log has none.
    pub fn check(
        &self,
        registry: &Registry,
        statement: &Statement,
        owner: Option<&str>,
        fresh: Option<Duration>,
    ) -> Result<(), IdentityError> {
        check_name(&statement.operator)?;
        registry.verify(statement)?;
        if let Some(max) = fresh {
            let age = now_ms().abs_diff(statement.at_ms);
            if age > max.as_millis() as u64 {
                return Err(IdentityError::Stale {
                    operator: statement.operator.clone(),
                    age_s: age / 1000,
                    max_s: max.as_secs(),
                });
            }
        }
        let listed = self.operators.is_empty() || self.operators.contains(&statement.operator);
        if listed || owner == Some(statement.operator.as_str()) {
            Ok(())
        } else {
            Err(IdentityError::NotAllowed(statement.operator.clone()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, OperatorKey, Authority) {
        let dir = tempfile::tempdir().unwrap();
        let key = OperatorKey::create(&dir.path().join("keys"), "ana").unwrap();
        Registry::register(&dir.path().join("state"), &key).unwrap();
        let authority = Authority::new(&dir.path().join("state"), &["ana".into()]);
        (dir, key, authority)
    }

    #[test]
    fn a_signed_action_is_admitted_and_any_change_to_it_is_refused() {
        let (_dir, key, authority) = setup();
        let s = key.sign(action::HUNKS, "h1 h2", "approved");
        authority.admit(&s, None, Some(FRESH_FOR)).unwrap();
        for tampered in [
            Statement {
                decision: "rejected".into(),
                ..s.clone()
            },
            Statement {
                subject: "h1 h2 h3".into(),
                ..s.clone()
            },
            Statement {
                at_ms: s.at_ms + 1,
                ..s.clone()
            },
            Statement {
                signature: "00".repeat(64),
                ..s.clone()
            },
        ] {
            assert!(matches!(
                authority.admit(&tampered, None, None),
                Err(IdentityError::Forged(_))
            ));
        }
        // The same statement under another registered name.
        let bo = OperatorKey::create(&_dir.path().join("keys"), "bo").unwrap();
        Registry::register(authority.state_dir(), &bo).unwrap();
        let as_bo = Statement {
            operator: "bo".into(),
            ..s
        };
        assert!(matches!(
            authority.admit(&as_bo, None, None),
            Err(IdentityError::Forged(_))
        ));
    }

    #[test]
    fn who_may_act_is_the_listed_operators_or_the_owner() {
        let (dir, _ana, authority) = setup();
        let bo = OperatorKey::create(&dir.path().join("keys"), "bo").unwrap();
        Registry::register(authority.state_dir(), &bo).unwrap();
        let s = bo.sign(action::ANSWER, "t1/", "yes");
        assert!(matches!(
            authority.admit(&s, None, None),
            Err(IdentityError::NotAllowed(_))
        ));
        authority.admit(&s, Some("bo"), None).unwrap();
        // With no list, any registered operator.
        Authority::new(authority.state_dir(), &[])
            .admit(&s, None, None)
            .unwrap();
        // Unregistered.
        let eve = OperatorKey::create(&dir.path().join("keys"), "eve").unwrap();
        let s = eve.sign(action::ANSWER, "t1/", "yes");
        assert!(matches!(
            authority.admit(&s, Some("eve"), None),
            Err(IdentityError::Unregistered(_))
        ));
    }

    #[test]
    fn an_old_statement_is_stale_for_a_live_action_only() {
        let (_dir, key, authority) = setup();
        let s = key.sign_at(action::HUNKS, "h1", "approved", now_ms() - 600_000);
        assert!(matches!(
            authority.admit(&s, None, Some(FRESH_FOR)),
            Err(IdentityError::Stale { .. })
        ));
        authority.admit(&s, None, None).unwrap();
    }

    #[test]
    fn proofs_round_trip_and_bad_ones_say_why() {
        let (_dir, key, authority) = setup();
        let s = key.sign(action::HUNKS, "h1", "approved");
        let back =
            Statement::from_proof(action::HUNKS, "h1", "approved", "ana", &s.proof()).unwrap();
        assert_eq!(back, s);
        authority.admit(&back, None, Some(FRESH_FOR)).unwrap();
        for bad in ["", "v2:1:ab", "v1:x:ab", "garbage"] {
            let e = Statement::from_proof(action::HUNKS, "h1", "approved", "ana", bad).unwrap_err();
            assert!(matches!(e, IdentityError::Unsigned { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn keys_are_private_and_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys");
        let key = OperatorKey::create(&keys, "ana").unwrap();
        let path = OperatorKey::path(&keys, "ana");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&keys).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert!(matches!(
            OperatorKey::create(&keys, "ana"),
            Err(IdentityError::Exists { .. })
        ));
        assert_eq!(
            OperatorKey::load(&keys, "ana").unwrap().public_hex(),
            key.public_hex()
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            OperatorKey::load(&keys, "ana"),
            Err(IdentityError::Exposed { .. })
        ));
        for bad in ["", ".hidden", "a/b", "../x", "ana bo", &"x".repeat(65)] {
            assert!(OperatorKey::create(&keys, bad).is_err(), "{bad:?}");
        }
    }
}
