//! Files that hold credentials: no tool call, read or write, may name one. The state
//! directory (caller keys, tokens, the log) is added by the policy, which knows where it is.

use std::ffi::OsStr;
use std::path::{Component, Path};

/// A kind of file that holds credentials, matched on a resolved path's components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secret {
    /// A file of exactly this name, anywhere.
    File(&'static str),
    /// A file whose name starts with this (`.env.local`).
    FilePrefix(&'static str),
    /// A file whose name ends with this (`server.pem`).
    FileSuffix(&'static str),
    /// Anything inside a directory of this name, anywhere.
    Dir(&'static str),
    /// A path ending with these components (`.git/config`).
    Tail(&'static [&'static str]),
}

/// Governance secrets: what a tool may never read (nor write) through a path argument.
///
/// Environment files (`.env`, `.env.*`, `.envrc`), private keys (`id_rsa` and its kin,
/// `*.pem`, `*.key`, `*.p12`, `*.pfx`, `~/.ssh/`, `~/.gnupg/`), a repository's
/// `.git/config` (remote URLs and `extraheader`s carry tokens), and the credential files of
/// common clients: git (`.git-credentials`), curl and ftp (`.netrc`), npm (`.npmrc`), PyPI
/// (`.pypirc`), PostgreSQL (`.pgpass`), cargo, Docker, kubectl, the GitHub CLI, AWS and
/// Google service accounts; operators' private keys are `<name>.key`. `.env.example` is
/// refused too: a template is read from
/// documentation, not from a tool.
pub const SECRETS: &[Secret] = &[
    Secret::File(".env"),
    Secret::FilePrefix(".env."),
    Secret::File(".envrc"),
    Secret::File("id_rsa"),
    Secret::File("id_dsa"),
    Secret::File("id_ecdsa"),
    Secret::File("id_ed25519"),
    Secret::FileSuffix(".pem"),
    Secret::FileSuffix(".key"),
    Secret::FileSuffix(".p12"),
    Secret::FileSuffix(".pfx"),
    Secret::Dir(".ssh"),
    Secret::Dir(".gnupg"),
    Secret::Dir(".aws"),
    Secret::Tail(&[".git", "config"]),
    Secret::File(".git-credentials"),
    Secret::File(".netrc"),
    Secret::File("_netrc"),
    Secret::File(".npmrc"),
    Secret::File(".pypirc"),
    Secret::File(".pgpass"),
    Secret::File("credentials.json"),
    Secret::Tail(&[".cargo", "credentials"]),
    Secret::Tail(&[".cargo", "credentials.toml"]),
    Secret::Tail(&[".docker", "config.json"]),
    Secret::Tail(&[".kube", "config"]),
    Secret::Tail(&[".config", "gh", "hosts.yml"]),
];

impl Secret {
    fn matches(self, names: &[&OsStr]) -> bool {
        let last = names.last().and_then(|n| n.to_str());
        match self {
            Secret::File(f) => last == Some(f),
            Secret::FilePrefix(p) => last.is_some_and(|l| l.starts_with(p)),
            Secret::FileSuffix(s) => last.is_some_and(|l| l.len() > s.len() && l.ends_with(s)),
            Secret::Dir(d) => names.iter().any(|n| *n == OsStr::new(d)),
            Secret::Tail(tail) => {
                names.len() >= tail.len()
                    && names[names.len() - tail.len()..]
                        .iter()
                        .zip(tail.iter())
                        .all(|(n, t)| *n == OsStr::new(t))
            }
        }
    }

    /// How the refusal names it.
    pub fn describe(self) -> String {
        match self {
            Secret::File(f) => format!("a `{f}` file"),
            Secret::FilePrefix(p) => format!("a `{p}*` file"),
            Secret::FileSuffix(s) => format!("a `*{s}` key file"),
            Secret::Dir(d) => format!("the `{d}/` directory"),
            Secret::Tail(t) => format!("a `{}` file", t.join("/")),
        }
    }
}

/// The entry of [`SECRETS`] a resolved path falls under, if any.
pub fn secret_of(resolved: &Path) -> Option<Secret> {
    let names: Vec<&OsStr> = resolved
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    SECRETS.iter().copied().find(|s| s.matches(&names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_files_are_secrets() {
        for p in [
            "/p/.env",
            "/p/sub/.env.local",
            "/p/.envrc",
            "/home/u/.ssh/id_ed25519",
            "/home/u/.ssh/known_hosts",
            "/home/u/.ssh",
            "/p/certs/server.pem",
            "/p/tls.key",
            "/p/.git/config",
            "/home/u/.git-credentials",
            "/home/u/.netrc",
            "/home/u/.npmrc",
            "/home/u/.cargo/credentials.toml",
            "/home/u/.docker/config.json",
            "/home/u/.config/gh/hosts.yml",
            "/home/u/.aws/credentials",
        ] {
            assert!(secret_of(Path::new(p)).is_some(), "{p}");
        }
    }

    #[test]
    fn ordinary_files_are_not() {
        for p in [
            "/p/src/env.rs",
            "/p/.environment/x",
            "/p/config/iron.yaml",
            "/p/.git/HEAD",
            "/p/keys.md",
            "/p/.key",
            "/p/docs/ssh.md",
            "/p/.gitconfig.md",
            "/p",
        ] {
            assert_eq!(secret_of(Path::new(p)), None, "{p}");
        }
    }
}
