//! `iron bench routing`: the offline router's accuracy on a labelled set of instructions.

use super::BenchError;

/// The offline router the engine makes of `catalog` with no model: unmatched work goes to
/// `core/assistant` when it is spawnable. `iron eval routing` starts from it too.
pub fn offline_router(
    catalog: &crate::aem::Catalog,
) -> Result<crate::llm::router::OfflineRouter, BenchError> {
    let router = crate::llm::router::OfflineRouter::new(catalog);
    match catalog
        .expert("core/assistant")
        .is_some_and(|e| e.spawnable)
    {
        true => router
            .with_fallback("core/assistant")
            .map_err(|e| BenchError::Failed(e.to_string())),
        false => Ok(router),
    }
}

/// `iron bench routing`: the offline router on a labelled set.
pub fn run(set: &std::path::Path, aem: &std::path::Path) -> Result<(), BenchError> {
    super::stats::print_machine("routing");
    let catalog = crate::aem::compile(aem)?;
    let router = offline_router(&catalog)?;
    let text = std::fs::read_to_string(set).map_err(|source| BenchError::Io {
        what: format!("reading {}", set.display()),
        source,
    })?;
    let report = crate::llm::router::accuracy(&router, &text)
        .map_err(|e| BenchError::Failed(format!("{}: {e}", set.display())))?;
    for miss in &report.misses {
        println!("miss {miss}");
    }
    println!(
        "bench routing.accuracy {:.1} % ({} of {} cases, {})",
        report.accuracy() * 100.0,
        report.cases - report.misses.len(),
        report.cases,
        set.display()
    );
    Ok(())
}
