//! Pinned tool-server packages, installed once so that a server can start with no network.
//!
//! A local server declared as `npx -y PKG@VERSION …` or `uvx PKG@VERSION …` fetches its
//! package when it starts. That cannot happen inside the sandbox an expert's servers run in
//! (no network, a private home without the user's caches), so `iron tools install` installs
//! each pinned package once, by a person, into the package store, and a confined server runs
//! from there, read-only:
//!
//! - npm: `<store>/npm/<name>@<version>/`, made by `npm install --prefix`; the server runs
//!   the package's `bin` with `node`;
//! - PyPI: `<store>/pypi/<name>@<version>/`, a virtual environment made by `python3 -m venv`
//!   and `pip install <name>==<version>`; the server runs its `bin/<name>`.
//!
//! An install is complete only once its marker file is written, so a half-made one is never
//! used. The store is `$IRON_TOOLS_DIR`, else `$XDG_CACHE_HOME/iron/tools`, else
//! `~/.cache/iron/tools`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The file written last in a complete install.
const MARKER: &str = ".iron-installed";
/// The longest one install may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// A package a local server's declaration pins.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Package {
    /// An npm package, run by `npx`.
    Npm {
        /// Its name (`@scope/name` or `name`).
        name: String,
        /// Its exact version.
        version: String,
    },
    /// A PyPI package, run by `uvx`.
    PyPi {
        /// Its name.
        name: String,
        /// Its exact version.
        version: String,
    },
}

/// Why a package cannot be used or installed.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The command runs a package fetched at launch, but names no exact version.
    #[error(
        "`{command} {spec}` names no exact version; a confined server runs only a pinned package (`{spec}@x.y.z`)"
    )]
    Unpinned {
        /// `npx` or `uvx`.
        command: String,
        /// The package as written.
        spec: String,
    },
    /// The package is not installed in the store.
    #[error("{package} is not installed in {}; run `iron tools install`", store.display())]
    NotInstalled {
        /// The package.
        package: Package,
        /// The store.
        store: PathBuf,
    },
    /// The install is there but its entry point cannot be found.
    #[error("{package} in {}: {why}", dir.display())]
    Broken {
        /// The package.
        package: Package,
        /// Its install.
        dir: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Installing failed.
    #[error("installing {package}: {why}")]
    Install {
        /// The package.
        package: Package,
        /// What failed.
        why: String,
    },
}

impl std::fmt::Display for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Package::Npm { name, version } => write!(f, "npm {name}@{version}"),
            Package::PyPi { name, version } => write!(f, "PyPI {name}=={version}"),
        }
    }
}

/// What a server declared as `command args…` runs from the store: the package, and the
/// arguments that follow it. `None` when the command is not `npx` or `uvx` (it runs as
/// declared); an error when it is, but the package is not pinned to an exact version.
pub fn declared(
    command: &str,
    args: &[String],
) -> Option<Result<(Package, Vec<String>), PackageError>> {
    let program = Path::new(command).file_name()?.to_str()?;
    let (flags, npm): (&[&str], bool) = match program {
        "npx" => (&["-y", "--yes"], true),
        "uvx" => (&[], false),
        _ => return None,
    };
    let mut rest = args.iter().skip_while(|a| flags.contains(&a.as_str()));
    let spec = rest.next()?.clone();
    let unpinned = || PackageError::Unpinned {
        command: program.to_string(),
        spec: spec.clone(),
    };
    // `@scope/name@1.2.3`: the version follows the last `@` that is not the first character.
    let split = if npm {
        spec.rfind('@')
            .filter(|&i| i > 0)
            .map(|i| (&spec[..i], &spec[i + 1..]))
    } else {
        spec.split_once("==").or_else(|| spec.split_once('@'))
    };
    let Some((name, version)) = split else {
        return Some(Err(unpinned()));
    };
    let exact = !version.is_empty()
        && version.chars().next().is_some_and(|c| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    if !exact || !plain_name(name, npm) {
        return Some(Err(unpinned()));
    }
    let package = if npm {
        Package::Npm {
            name: name.to_string(),
            version: version.to_string(),
        }
    } else {
        Package::PyPi {
            name: name.to_string(),
            version: version.to_string(),
        }
    };
    Some(Ok((package, rest.cloned().collect())))
}

/// Whether `name` is a registry's package name and nothing more: npm's `name` or
/// `@scope/name`, PyPI's `name`; never a path (`..`, a leading `.`, `/` elsewhere).
fn plain_name(name: &str, npm: bool) -> bool {
    let segment = |s: &str| {
        !s.is_empty()
            && !s.starts_with(['.', '-'])
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    match name.strip_prefix('@') {
        Some(scoped) if npm => scoped
            .split_once('/')
            .is_some_and(|(scope, rest)| segment(scope) && segment(rest)),
        _ => segment(name),
    }
}

/// How to start an installed package: the program and the arguments before the server's
/// own, and the trees it needs to see (read-only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The program.
    pub program: String,
    /// Arguments before the declared ones.
    pub args: Vec<String>,
    /// Directories the program reads: the install, and the Python it was made with.
    pub reads: Vec<PathBuf>,
}

/// Where pinned packages are installed.
#[derive(Debug, Clone)]
pub struct PackageStore {
    root: PathBuf,
}

impl PackageStore {
    /// The store at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The store this environment names: `IRON_TOOLS_DIR`, else under `XDG_CACHE_HOME`, else
    /// under `HOME`'s `.cache`.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let nonempty = |k: &str| get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        nonempty("IRON_TOOLS_DIR")
            .or_else(|| nonempty("XDG_CACHE_HOME").map(|c| c.join("iron/tools")))
            .or_else(|| nonempty("HOME").map(|h| h.join(".cache/iron/tools")))
            .map(Self::at)
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory `package` is installed in.
    pub fn dir(&self, package: &Package) -> PathBuf {
        match package {
            Package::Npm { name, version } => self
                .root
                .join("npm")
                .join(format!("{}@{version}", name.replace('/', "+"))),
            Package::PyPi { name, version } => {
                self.root.join("pypi").join(format!("{name}@{version}"))
            }
        }
    }

    /// Whether `package` is completely installed.
    pub fn has(&self, package: &Package) -> bool {
        self.dir(package).join(MARKER).is_file()
    }

    /// How to start the installed `package`.
    pub fn entry(&self, package: &Package) -> Result<Installed, PackageError> {
        let dir = self.dir(package);
        if !self.has(package) {
            return Err(PackageError::NotInstalled {
                package: package.clone(),
                store: self.root.clone(),
            });
        }
        let broken = |why: String| PackageError::Broken {
            package: package.clone(),
            dir: dir.clone(),
            why,
        };
        match package {
            Package::Npm { name, .. } => {
                let root = dir.join("node_modules").join(name);
                let manifest: serde_json::Value = std::fs::read(root.join("package.json"))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .ok_or_else(|| broken("no readable package.json".into()))?;
                let script = npm_bin(name, &manifest["bin"])
                    .ok_or_else(|| broken("its package.json names no single `bin`".into()))?;
                Ok(Installed {
                    program: "node".into(),
                    args: vec![root.join(script).display().to_string()],
                    reads: vec![dir],
                })
            }
            Package::PyPi { name, .. } => {
                let script = dir.join("bin").join(name);
                if !script.is_file() {
                    return Err(broken(format!("no script bin/{name}")));
                }
                let mut reads = vec![dir.clone()];
                reads.extend(venv_python_prefix(&dir));
                Ok(Installed {
                    program: script.display().to_string(),
                    args: Vec::new(),
                    reads,
                })
            }
        }
    }

    /// Installs `package` (from its registry, over the network) unless it is already there;
    /// `true` when it was installed now. A failed install leaves nothing behind.
    pub async fn install(&self, package: &Package) -> Result<bool, PackageError> {
        if self.has(package) {
            return Ok(false);
        }
        let dir = self.dir(package);
        let failed = |why: String| PackageError::Install {
            package: package.clone(),
            why,
        };
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
        let steps: Vec<Vec<String>> = match package {
            Package::Npm { name, version } => vec![vec![
                "npm".into(),
                "install".into(),
                "--prefix".into(),
                dir.display().to_string(),
                "--no-save".into(),
                "--no-audit".into(),
                "--no-fund".into(),
                "--loglevel=error".into(),
                format!("{name}@{version}"),
            ]],
            Package::PyPi { name, version } => vec![
                vec![
                    "python3".into(),
                    "-m".into(),
                    "venv".into(),
                    dir.display().to_string(),
                ],
                vec![
                    dir.join("bin/pip").display().to_string(),
                    "install".into(),
                    "--quiet".into(),
                    "--disable-pip-version-check".into(),
                    format!("{name}=={version}"),
                ],
            ],
        };
        for step in &steps {
            if let Err(e) = run_step(package, step).await {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        }
        let done = std::fs::write(dir.join(MARKER), package.to_string())
            .map_err(|e| failed(e.to_string()))
            .and_then(|()| self.entry(package).map_err(|e| failed(e.to_string())));
        if let Err(e) = done {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(true)
    }
}

/// The script an npm package's `bin` runs, as npx picks it: the only one, or the one named
/// like the package (without its scope).
fn npm_bin<'a>(name: &str, bin: &'a serde_json::Value) -> Option<&'a str> {
    match bin {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Object(map) if map.len() == 1 => map.values().next()?.as_str(),
        serde_json::Value::Object(map) => {
            let short = name.rsplit('/').next()?;
            map.get(short)?.as_str()
        }
        _ => None,
    }
}

/// The installation prefix of the Python a virtual environment was made with (its
/// `pyvenv.cfg` names that Python's `bin/`), which the environment's `python` links to.
fn venv_python_prefix(venv: &Path) -> Option<PathBuf> {
    let cfg = std::fs::read_to_string(venv.join("pyvenv.cfg")).ok()?;
    let home = cfg.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "home").then(|| PathBuf::from(v.trim()))
    })?;
    let prefix = home.parent()?.canonicalize().ok()?;
    // The system's own Python is shown to every confined run already.
    (!prefix.starts_with("/usr")).then_some(prefix)
}

/// Runs one install step of `package`, with its output kept for the error.
async fn run_step(package: &Package, step: &[String]) -> Result<(), PackageError> {
    let failed = |why: String| PackageError::Install {
        package: package.clone(),
        why,
    };
    let Some((program, args)) = step.split_first() else {
        return Ok(());
    };
    let out = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(INSTALL_TIMEOUT, out)
        .await
        .map_err(|_| {
            failed(format!(
                "`{program}` did not finish within {} s",
                INSTALL_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| failed(format!("cannot run `{program}`: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
    Err(failed(format!(
        "`{}` failed ({}): {}",
        step.join(" "),
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pinned_npx_and_uvx_declarations_name_their_package_and_keep_the_rest() {
        let (p, rest) = declared(
            "npx",
            &args(&[
                "-y",
                "@modelcontextprotocol/server-filesystem@2026.8.31",
                "/s",
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            p,
            Package::Npm {
                name: "@modelcontextprotocol/server-filesystem".into(),
                version: "2026.8.31".into()
            }
        );
        assert_eq!(rest, args(&["/s"]));
        let (p, rest) = declared(
            "/usr/bin/uvx",
            &args(&["mcp-server-git@2026.10.19", "--repository", "/s"]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            p,
            Package::PyPi {
                name: "mcp-server-git".into(),
                version: "2026.10.19".into()
            }
        );
        assert_eq!(rest, args(&["--repository", "/s"]));
        assert!(declared("node", &args(&["x.js"])).is_none());
    }

    #[test]
    fn a_package_with_no_exact_version_or_a_name_that_is_a_path_is_refused() {
        for (cmd, a) in [
            (
                "npx",
                args(&["-y", "@modelcontextprotocol/server-filesystem"]),
            ),
            ("npx", args(&["pkg@latest"])),
            ("npx", args(&["pkg@^1.2.0"])),
            ("uvx", args(&["mcp-server-time"])),
            ("uvx", args(&["mcp-server-time>=1"])),
            ("uvx", args(&["--from=x@1", "y"])),
            ("npx", args(&["-y", "../../evil@1.0.0"])),
            ("npx", args(&["-y", "@scope/../x@1.0.0"])),
            ("npx", args(&["-y", "a/b@1.0.0"])),
            ("uvx", args(&["../x@1.0"])),
            ("uvx", args(&["@scope/x@1.0"])),
        ] {
            let r = declared(cmd, &a).expect("npx/uvx");
            assert!(
                matches!(r, Err(PackageError::Unpinned { .. })),
                "{cmd} {a:?}: {r:?}"
            );
        }
    }

    #[test]
    fn an_npm_bin_is_the_only_one_or_the_one_named_like_the_package() {
        let one = serde_json::json!({"mcp-server-filesystem": "dist/index.js"});
        assert_eq!(npm_bin("@m/server-filesystem", &one), Some("dist/index.js"));
        let two = serde_json::json!({"a": "a.js", "tool": "t.js"});
        assert_eq!(npm_bin("@s/tool", &two), Some("t.js"));
        assert_eq!(npm_bin("@s/other", &two), None);
        assert_eq!(npm_bin("x", &serde_json::json!("cli.js")), Some("cli.js"));
    }

    #[test]
    fn an_install_without_its_marker_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let store = PackageStore::at(dir.path());
        let p = Package::PyPi {
            name: "x".into(),
            version: "1.0".into(),
        };
        std::fs::create_dir_all(store.dir(&p).join("bin")).unwrap();
        std::fs::write(store.dir(&p).join("bin/x"), "").unwrap();
        assert!(matches!(
            store.entry(&p),
            Err(PackageError::NotInstalled { .. })
        ));
        std::fs::write(store.dir(&p).join(MARKER), "").unwrap();
        assert_eq!(
            store.entry(&p).unwrap().program,
            store.dir(&p).join("bin/x").display().to_string()
        );
    }
}
