//! `iron bench control`: measured, never asserted.

use std::time::Duration;

use super::CliError;

pub(super) async fn control(_iterations: usize, _timeout: Duration) -> Result<(), CliError> {
    Err(CliError::Failed("bench control is not built yet".into()))
}

/// `iron bench catalog`: generates a mesh of `experts` experts in a temporary directory and
/// times one compile of it.
pub(super) fn catalog(experts: usize) -> Result<(), CliError> {
    let io = |what: &str| {
        let what = what.to_string();
        move |source| CliError::Io { what, source }
    };
    let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
    crate::aem::bench::generate_mesh(dir.path(), experts).map_err(io("generating the mesh"))?;
    let started = std::time::Instant::now();
    let catalog = crate::aem::compile(dir.path())?;
    let took = started.elapsed();
    if catalog.experts.len() != experts {
        return Err(CliError::Failed(format!(
            "compiled {} experts, expected {experts}",
            catalog.experts.len()
        )));
    }
    println!(
        "bench catalog.build_{experts} {:.1} ms",
        took.as_secs_f64() * 1000.0
    );
    Ok(())
}
