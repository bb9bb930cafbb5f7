//! `iron catalog build|check|export|import`: the agent folders compiled, checked and moved.

use std::time::Duration;

use super::{CatalogCommand, CliError};

/// Runs one `iron catalog` command.
pub(super) async fn run(command: CatalogCommand, timeout: Duration) -> Result<(), CliError> {
    match command {
        CatalogCommand::Build { aem, out, probe } => {
            let catalog = crate::aem::compile(&aem)?;
            let path =
                crate::aem::write_catalog(&catalog, &out).map_err(|source| CliError::Io {
                    what: format!("writing the catalog into {}", out.display()),
                    source,
                })?;
            tools_manifest(&catalog, &out, probe, timeout).await?;
            println!(
                "{} mesh(es), {} expert(s) -> {}",
                catalog.meshes.len(),
                catalog.experts.len(),
                path.display()
            );
            Ok(())
        }
        CatalogCommand::Check { aem } => {
            let catalog = crate::aem::compile(&aem)?;
            println!(
                "ok: {} mesh(es), {} expert(s)",
                catalog.meshes.len(),
                catalog.experts.len()
            );
            Ok(())
        }
        CatalogCommand::Export { expert, out, aem } => {
            let done = crate::aem::transfer::export_skill(&aem, &expert, &out)?;
            println!(
                "exported {expert} -> {} ({}); its capabilities.md and memory stay here",
                done.dir.display(),
                done.files.join(", ")
            );
            Ok(())
        }
        CatalogCommand::Import { folder, mesh, aem } => {
            let done = crate::aem::transfer::import_skill(&aem, &mesh, &folder)?;
            println!(
                "imported {} -> {} ({}); it has the mesh defaults until you write its capabilities.md",
                folder.display(),
                done.dir.display(),
                done.files.join(", ")
            );
            Ok(())
        }
    }
}

/// After a catalog build: probe the local servers, or report which recorded probes are stale.
async fn tools_manifest(
    catalog: &crate::aem::Catalog,
    out: &std::path::Path,
    probe: bool,
    timeout: Duration,
) -> Result<(), CliError> {
    let io = |source| CliError::Io {
        what: format!("the tool manifest in {}", out.display()),
        source,
    };
    if !probe {
        let status = crate::tools::probe::manifest_status(out).map_err(io)?;
        if !status.stale.is_empty() {
            eprintln!(
                "stale probes (descriptor changed; run with --probe): {}",
                status.stale.join(", ")
            );
        }
        if !status.unprobed.is_empty() {
            eprintln!("never probed: {}", status.unprobed.join(", "));
        }
        return Ok(());
    }
    let options = crate::tools::probe::ProbeOptions {
        env: std::env::vars().collect(),
        workdir: std::env::current_dir().map_err(io)?,
        start_timeout: timeout.max(Duration::from_secs(30)),
    };
    let report = crate::tools::probe::probe(catalog, out, &options)
        .await
        .map_err(io)?;
    println!("probed: {}", report.probed.join(", "));
    for (server, why) in &report.failed {
        eprintln!("could not probe {server}: {why}");
    }
    for (server, tool) in &report.missing {
        eprintln!("{server} does not offer the declared tool {tool}");
    }
    for c in &report.conflicts {
        eprintln!(
            "{}: {} cannot be held at clearance {:?}: {}",
            c.expert, c.tool, c.clearance, c.detail
        );
    }
    if !report.conflicts.is_empty() {
        return Err(CliError::Failed(format!(
            "{} grant(s) conflict with the servers' live annotations",
            report.conflicts.len()
        )));
    }
    Ok(())
}
