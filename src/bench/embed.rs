//! `iron bench embed`: the local sentence embedder's load time, its throughput at the batch
//! size it runs (32), and what one loaded model costs a process in memory.
//!
//! The sentences are generated from small word lists (ordinary news-like statements of varied
//! length), so the figures do not depend on any corpus in the tree. Memory is read from
//! `/proc/self/status`: `RssAnon` before and after loading says how much of the model lives in
//! the process's private memory (candle's CPU tensors own their bytes; nothing stays mapped
//! from the file).

use std::path::PathBuf;
use std::time::Instant;

use super::BenchError;
use super::stats::{Figures, status_kib};
use crate::llm::local::{self, BATCH, LocalEmbedder};

const SUBJECTS: &[&str] = &[
    "The city council",
    "A regional hospital",
    "The national weather service",
    "Researchers at the university",
    "The transport authority",
    "A local bakery",
    "The football club",
    "Officials in the capital",
];
const VERBS: &[&str] = &[
    "announced",
    "postponed",
    "approved",
    "criticised",
    "reported",
    "delayed",
    "celebrated",
    "investigated",
];
const OBJECTS: &[&str] = &[
    "a plan to repair the old bridge",
    "new opening hours for the library",
    "a study of sleep and memory",
    "the budget for next year",
    "heavy rain across the north",
    "a rise in ticket prices",
    "the results of the spring election",
    "changes to the school timetable",
];
const TAILS: &[&str] = &[
    "",
    " on Tuesday",
    " after a long meeting with residents",
    ", saying more details would follow in the coming weeks",
    " despite objections from several groups who had asked for a delay",
];

/// The `i`th generated sentence.
fn sentence(i: usize) -> String {
    format!(
        "{} {} {}{}.",
        SUBJECTS[i % SUBJECTS.len()],
        VERBS[(i / 3) % VERBS.len()],
        OBJECTS[(i / 7) % OBJECTS.len()],
        TAILS[(i / 2) % TAILS.len()]
    )
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "nan".into(), |k| format!("{:.1}", k as f64 / 1024.0))
}

/// `iron bench embed`: loads the model, then embeds `sentences` in batches of 32.
pub async fn run(sentences: usize, dir: Option<PathBuf>) -> Result<(), BenchError> {
    tokio::task::spawn_blocking(move || embed_blocking(sentences, dir))
        .await
        .map_err(super::failed)?
}

fn embed_blocking(sentences: usize, dir: Option<PathBuf>) -> Result<(), BenchError> {
    super::stats::print_machine("embed");
    let models_dir = local::models_dir_from_env(dir.as_deref())?;
    let anon_before = status_kib(None, "RssAnon");
    let started = Instant::now();
    let embedder = LocalEmbedder::load(&models_dir)?;
    let load = started.elapsed();
    let anon_loaded = status_kib(None, "RssAnon");

    let texts: Vec<String> = (0..sentences).map(sentence).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // One batch first: the first call pays for thread pools and allocations.
    embedder
        .embed(&refs[..refs.len().min(BATCH)])
        .map_err(super::failed)?;
    let started = Instant::now();
    let vectors = embedder.embed(&refs).map_err(super::failed)?;
    let took = started.elapsed();
    if vectors.len() != sentences || vectors.iter().any(|v| v.len() != local::DIMS) {
        return Err(BenchError::Failed(format!(
            "{} vectors for {sentences} sentences",
            vectors.len()
        )));
    }

    let mut figures = Figures::default();
    figures.add(
        "embed.load",
        format!("{:.1}", load.as_secs_f64() * 1000.0),
        "ms",
    );
    figures.add(
        format!("embed.sentences_per_s_batch{BATCH}"),
        format!("{:.1}", sentences as f64 / took.as_secs_f64()),
        "sentences/s",
    );
    figures.add(
        "embed.anon_rss_of_model",
        mib(anon_loaded
            .zip(anon_before)
            .map(|(a, b)| a.saturating_sub(b))),
        "MiB",
    );
    figures.add("embed.rss", mib(status_kib(None, "VmRSS")), "MiB");
    figures.add("embed.peak_rss", mib(status_kib(None, "VmHWM")), "MiB");
    figures.print();
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn sentences_vary() {
        let all: std::collections::BTreeSet<String> = (0..64).map(super::sentence).collect();
        assert_eq!(all.len(), 64);
    }
}
