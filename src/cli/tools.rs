//! `iron tools import` turns a client's MCP configuration into server declarations, and
//! `iron tools install`: the pinned packages of the tool servers that run confined, installed
//! once so that they start in the sandbox with no network; and the note `iron up` prints when
//! some are missing.

use std::collections::BTreeMap;
use std::path::Path;

use std::time::Duration;

use super::{CliError, ToolsCommand};
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

/// Runs one `iron tools` command.
pub(super) async fn run(command: ToolsCommand, timeout: Duration) -> Result<(), CliError> {
    match command {
        ToolsCommand::Import { file, discover } => tools_import(&file, discover, timeout).await,
        ToolsCommand::Install { aem, dir } => install(&aem, dir.as_deref()).await,
    }
}

/// `iron tools import`.
async fn tools_import(
    file: &std::path::Path,
    discover: bool,
    timeout: Duration,
) -> Result<(), CliError> {
    let text = std::fs::read_to_string(file).map_err(|source| CliError::Io {
        what: format!("reading {}", file.display()),
        source,
    })?;
    let mut imported =
        crate::tools::import::import(&text).map_err(|e| CliError::Failed(e.to_string()))?;
    for (name, why) in &imported.skipped {
        eprintln!("skipped {name}: {why}");
    }
    if discover {
        let env: crate::tools::env::EnvMap = std::env::vars().collect();
        let workdir = std::env::current_dir().map_err(|source| CliError::Io {
            what: "the working directory".into(),
            source,
        })?;
        for server in &mut imported.servers {
            match crate::tools::import::discover_tools(
                server,
                &env,
                &workdir,
                timeout.max(Duration::from_secs(30)),
            )
            .await
            {
                Ok(tools) => server.tools = tools,
                Err(e) => eprintln!("could not list the tools of {}: {e}", server.name),
            }
        }
    }
    print!("{}", crate::tools::import::render_yaml(&imported.servers));
    Ok(())
}
