//! The models directory on disk: where it is, what state each model in it is in, reading a
//! model's files only when their digests are right, and installing a freshly fetched model in
//! one rename so no reader ever sees half of one.
//!
//! Layout: `<models dir>/<model name>/<file>`; the models directory is `--dir`, else
//! `IRON_MODELS_DIR`, else `$XDG_CACHE_HOME/iron/models`, else `~/.cache/iron/models`. The
//! environment is passed in (a lookup function), so a test names its own directory without
//! touching the process's environment.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::catalog::{KnownModel, ModelFile};
use super::error::LoadError;

/// The variable that names the models directory.
pub const MODELS_DIR_VAR: &str = "IRON_MODELS_DIR";

/// The models directory: `flag` if given, else from `env` (see the module docs). `None` when
/// nothing names one (no `IRON_MODELS_DIR`, `XDG_CACHE_HOME` nor `HOME`).
pub fn models_dir(flag: Option<&Path>, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = flag {
        return Some(dir.to_path_buf());
    }
    if let Some(dir) = set(MODELS_DIR_VAR) {
        return Some(dir);
    }
    // The XDG base directory spec: a relative XDG_CACHE_HOME is invalid and ignored.
    if let Some(cache) = set("XDG_CACHE_HOME").filter(|p| p.is_absolute()) {
        return Some(cache.join("iron").join("models"));
    }
    set("HOME").map(|home| home.join(".cache").join("iron").join("models"))
}

/// The models directory this process's environment names (see [`models_dir`]).
pub fn models_dir_from_env(flag: Option<&Path>) -> Result<PathBuf, LoadError> {
    models_dir(flag, &|name| std::env::var_os(name)).ok_or(LoadError::NoModelsDir)
}

/// A SHA-256 in lowercase hex, computed as the bytes stream by.
pub(crate) struct Digest(ring::digest::Context);

impl Digest {
    pub(crate) fn new() -> Self {
        Self(ring::digest::Context::new(&ring::digest::SHA256))
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub(crate) fn hex(self) -> String {
        hex::encode(self.0.finish().as_ref())
    }
}

/// The SHA-256 of `bytes`, lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let mut d = Digest::new();
    d.update(bytes);
    d.hex()
}

/// What one file of a model is on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// There, with the pinned size and digest.
    Good,
    /// Not there.
    Missing,
    /// There, but not the pinned file: what was found (a size or a digest).
    Corrupt { found: String },
    /// Could not be read (the reason).
    Unreadable { reason: String },
}

/// What a model is on disk, as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelState {
    /// Every file there and good.
    Present,
    /// No file there.
    Missing,
    /// Some there, some not (an interrupted copy by hand).
    Incomplete,
    /// A file there is not the pinned one, or cannot be read.
    Corrupt,
}

impl ModelState {
    /// The word `iron models list` prints.
    pub fn word(self) -> &'static str {
        match self {
            ModelState::Present => "present",
            ModelState::Missing => "missing",
            ModelState::Incomplete => "incomplete",
            ModelState::Corrupt => "corrupt",
        }
    }
}

/// A model's files checked against their pins (every byte is read and digested).
#[derive(Debug, Clone)]
pub struct Inspection {
    /// The model's directory.
    pub dir: PathBuf,
    /// Each file with its state, in the model's order.
    pub files: Vec<(&'static ModelFile, FileState)>,
    /// Bytes on disk of the files that are there.
    pub bytes: u64,
}

impl Inspection {
    /// The model's state from its files'.
    pub fn state(&self) -> ModelState {
        let good = self
            .files
            .iter()
            .filter(|(_, s)| *s == FileState::Good)
            .count();
        let missing = self
            .files
            .iter()
            .filter(|(_, s)| *s == FileState::Missing)
            .count();
        if good == self.files.len() {
            ModelState::Present
        } else if missing == self.files.len() {
            ModelState::Missing
        } else if good + missing == self.files.len() {
            ModelState::Incomplete
        } else {
            ModelState::Corrupt
        }
    }
}

/// The directory of `model` under `models_dir`.
pub fn model_dir(models_dir: &Path, model: &KnownModel) -> PathBuf {
    models_dir.join(model.name)
}

/// Whether every file of `model` is in `models_dir` with its pinned size: a cheap look (no
/// digest) for a process deciding whether to ask the model service; loading checks the bytes.
pub fn looks_pulled(models_dir: &Path, model: &KnownModel) -> bool {
    let dir = model_dir(models_dir, model);
    model.files.iter().all(|file| {
        std::fs::metadata(dir.join(file.name)).is_ok_and(|meta| meta.len() == file.size)
    })
}

/// Checks every file of `model` in `models_dir` against its pin.
pub fn inspect(models_dir: &Path, model: &KnownModel) -> Inspection {
    let dir = model_dir(models_dir, model);
    let mut bytes = 0;
    let files = model
        .files
        .iter()
        .map(|file| {
            let path = dir.join(file.name);
            let state = match std::fs::metadata(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileState::Missing,
                Err(e) => FileState::Unreadable {
                    reason: e.to_string(),
                },
                Ok(meta) => {
                    bytes += meta.len();
                    match read_verified(&path, file) {
                        Ok(_) => FileState::Good,
                        Err(LoadError::Corrupt { found, .. }) => FileState::Corrupt { found },
                        Err(e) => FileState::Unreadable {
                            reason: e.to_string(),
                        },
                    }
                }
            };
            (file, state)
        })
        .collect();
    Inspection { dir, files, bytes }
}

/// The bytes of `path` if they are `file` (its pinned size and digest); the check and the use
/// are of the same bytes, so nothing can change the file between them.
pub fn read_verified(path: &Path, file: &ModelFile) -> Result<Vec<u8>, LoadError> {
    let io = |source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut handle = match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LoadError::Missing {
                path: path.to_path_buf(),
            });
        }
        other => other.map_err(io)?,
    };
    let size = handle.metadata().map_err(io)?.len();
    if size != file.size {
        return Err(LoadError::Corrupt {
            path: path.to_path_buf(),
            expected: format!("{} bytes", file.size),
            found: format!("{size} bytes"),
        });
    }
    let mut bytes = Vec::with_capacity(file.size as usize);
    handle.read_to_end(&mut bytes).map_err(io)?;
    let found = sha256_hex(&bytes);
    if found != file.sha256 {
        return Err(LoadError::Corrupt {
            path: path.to_path_buf(),
            expected: format!("sha256 {}", file.sha256),
            found: format!("sha256 {found}"),
        });
    }
    Ok(bytes)
}

/// How old a pull's leftover (a staging or set-aside directory of a pull that was killed)
/// must be before a later pull removes it: older than any pull still running could be.
pub const LEFTOVER_AGE: Duration = Duration::from_secs(24 * 3600);

/// A directory next to the model's, on the same filesystem, that a pull fills before
/// [`install`] renames it into place; removed when dropped unless installed. Leftovers of
/// killed pulls older than [`LEFTOVER_AGE`] are removed first (each holds up to a model's
/// size).
pub fn staging_dir(models_dir: &Path, model: &KnownModel) -> std::io::Result<tempfile::TempDir> {
    std::fs::create_dir_all(models_dir)?;
    remove_leftovers(models_dir, model, LEFTOVER_AGE);
    tempfile::Builder::new()
        .prefix(&format!(".{}.partial-", model.name))
        .tempdir_in(models_dir)
}

/// Removes `model`'s staging and set-aside directories in `models_dir` not modified for `age`;
/// what cannot be removed is left for the next pull.
fn remove_leftovers(models_dir: &Path, model: &KnownModel, age: Duration) {
    let prefixes = [
        format!(".{}.partial-", model.name),
        format!(".{}.old-", model.name),
    ];
    let Ok(entries) = std::fs::read_dir(models_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = name
            .to_str()
            .is_some_and(|n| prefixes.iter().any(|p| n.starts_with(p.as_str())));
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|elapsed| elapsed >= age);
        if ours && stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Moves the verified files in `staged` into place as `model`'s directory in one rename. A
/// directory already there (corrupt or incomplete) is renamed aside first and removed after;
/// if another pull installed a good copy meanwhile, that copy is kept and `staged` dropped.
pub fn install(
    models_dir: &Path,
    model: &KnownModel,
    staged: tempfile::TempDir,
) -> std::io::Result<()> {
    let target = model_dir(models_dir, model);
    let old = if target.exists() {
        let aside = tempfile::Builder::new()
            .prefix(&format!(".{}.old-", model.name))
            .tempdir_in(models_dir)?;
        // The rename needs the name free: the empty directory made above only reserved it.
        let aside_path = aside.keep();
        std::fs::remove_dir(&aside_path)?;
        std::fs::rename(&target, &aside_path)?;
        Some(aside_path)
    } else {
        None
    };
    let staged_path = staged.keep();
    let result = std::fs::rename(&staged_path, &target);
    if let Some(old) = old {
        let _ = std::fs::remove_dir_all(old);
    }
    match result {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staged_path);
            if inspect(models_dir, model).state() == ModelState::Present {
                Ok(())
            } else {
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_flag_then_the_variable_then_the_xdg_cache_then_home() {
        let all = [
            ("IRON_MODELS_DIR", "/m"),
            ("XDG_CACHE_HOME", "/c"),
            ("HOME", "/h"),
        ];
        let flag = Path::new("/f");
        assert_eq!(models_dir(Some(flag), &env(&all)), Some("/f".into()));
        assert_eq!(models_dir(None, &env(&all)), Some("/m".into()));
        assert_eq!(
            models_dir(None, &env(&all[1..])),
            Some("/c/iron/models".into())
        );
        assert_eq!(
            models_dir(None, &env(&all[2..])),
            Some("/h/.cache/iron/models".into())
        );
        // Empty values and a relative XDG_CACHE_HOME do not count.
        let odd = [
            ("IRON_MODELS_DIR", ""),
            ("XDG_CACHE_HOME", "rel"),
            ("HOME", "/h"),
        ];
        assert_eq!(
            models_dir(None, &env(&odd)),
            Some("/h/.cache/iron/models".into())
        );
        assert_eq!(models_dir(None, &env(&[])), None);
    }

    #[test]
    fn a_pull_removes_only_its_own_stale_leftovers() {
        let models = tempfile::tempdir().unwrap();
        let model = &crate::llm::local::MINILM_L6_V2;
        let made = |name: &str| {
            let path = models.path().join(name);
            std::fs::create_dir_all(path.join("inner")).unwrap();
            path
        };
        let old = [
            made(".all-MiniLM-L6-v2.partial-abc"),
            made(".all-MiniLM-L6-v2.old-def"),
        ];
        let kept = [made("all-MiniLM-L6-v2"), made(".other.partial-x")];
        let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        for path in old.iter().chain(&kept) {
            std::fs::File::open(path)
                .unwrap()
                .set_modified(an_hour_ago)
                .unwrap();
        }
        // Younger than the age: kept.
        remove_leftovers(models.path(), model, Duration::from_secs(7200));
        assert!(old.iter().chain(&kept).all(|p| p.exists()));
        remove_leftovers(models.path(), model, Duration::from_secs(60));
        assert!(old.iter().all(|p| !p.exists()));
        assert!(kept.iter().all(|p| p.exists()));
    }

    #[test]
    fn a_file_is_read_only_when_its_size_and_digest_are_pinned_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        let pinned = ModelFile {
            name: "f",
            sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            size: 3,
        };
        assert_eq!(read_verified(&path, &pinned).unwrap(), b"abc");
        std::fs::write(&path, b"abd").unwrap();
        assert!(matches!(
            read_verified(&path, &pinned),
            Err(LoadError::Corrupt { .. })
        ));
        std::fs::write(&path, b"abcd").unwrap();
        assert!(matches!(
            read_verified(&path, &pinned),
            Err(LoadError::Corrupt { .. })
        ));
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            read_verified(&path, &pinned),
            Err(LoadError::Missing { .. })
        ));
    }
}
