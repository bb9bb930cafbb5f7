//! `iron tools install`: the pinned packages of the tool servers that run confined, installed
//! once so that they start in the sandbox with no network; and the note `iron up` prints when
//! some are missing.

use std::collections::BTreeMap;
use std::path::Path;

use super::CliError;
use crate::aem::{Catalog, MeshStatus, ServerDescriptor};
use crate::tools::packages::{self, Package, PackageStore};

/// The packages the servers of meshes that declare `workspace:` run (their experts' servers
/// run confined), with the servers (`mesh/server`) that use each; and those servers whose
/// package is not pinned, with why.
struct Wanted {
    packages: BTreeMap<Package, Vec<String>>,
    unpinned: Vec<String>,
}

impl Wanted {
    fn of<'a>(meshes: impl Iterator<Item = &'a crate::aem::MeshEntry>) -> Wanted {
        let mut out = Wanted {
            packages: BTreeMap::new(),
            unpinned: Vec::new(),
        };
        for mesh in meshes.filter(|m| m.workspace.is_some()) {
            for (name, server) in &mesh.servers {
                let ServerDescriptor::Local { command, args, .. } = &server.descriptor else {
                    continue;
                };
                let who = format!("{}/{name}", mesh.name);
                match packages::declared(command, args) {
                    None => {}
                    Some(Ok((package, _))) => out.packages.entry(package).or_default().push(who),
                    Some(Err(e)) => out.unpinned.push(format!("{who}: {e}")),
                }
            }
        }
        out
    }
}

fn store_of(dir: Option<&Path>) -> Option<PackageStore> {
    match dir {
        Some(dir) => Some(PackageStore::at(dir)),
        None => PackageStore::from_env(|k| std::env::var(k).ok()),
    }
}

/// Installs the package of every `local` server of a mesh that declares `workspace:`, each
/// into the package store unless it is already there. A server whose package is not pinned
/// is named, and the command then fails: it could never start confined.
pub(super) async fn install(aem: &Path, store: Option<&Path>) -> Result<(), CliError> {
    let catalog = crate::aem::compile(aem)?;
    let store = store_of(store).ok_or_else(|| {
        CliError::Failed("no package store: set IRON_TOOLS_DIR, XDG_CACHE_HOME or HOME".into())
    })?;
    let wanted = Wanted::of(catalog.meshes.values());
    println!("package store: {}", store.root().display());
    if wanted.packages.is_empty() && wanted.unpinned.is_empty() {
        println!("no mesh with a workspace runs a packaged server; nothing to install");
    }
    let mut failed = wanted.unpinned;
    for (package, servers) in &wanted.packages {
        let who = servers.join(", ");
        if store.has(package) {
            println!("  {package}: installed ({who})");
            continue;
        }
        println!("  {package}: installing ({who})…");
        match store.install(package).await {
            Ok(_) => println!("  {package}: installed in {}", store.dir(package).display()),
            Err(e) => failed.push(e.to_string()),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} server package(s) not installed:\n  {}",
            failed.len(),
            failed.join("\n  ")
        )))
    }
}

/// What `iron up` says when servers of an active mesh would run confined from packages that
/// are not installed (their tool calls would fail until `iron tools install`).
pub(super) fn missing_note(catalog: &Catalog) -> Option<String> {
    let store = store_of(None)?;
    let wanted = Wanted::of(
        catalog
            .meshes
            .values()
            .filter(|m| m.status == MeshStatus::Active),
    );
    let missing: Vec<&str> = wanted
        .packages
        .iter()
        .filter(|(p, _)| !store.has(p))
        .flat_map(|(_, servers)| servers.iter().map(String::as_str))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "tool servers: {} run confined from installed packages and are not installed yet; \
             run `iron tools install` once (they fail until then)",
            missing.join(", ")
        )
    })
}
