//! `iron bench …`: the arguments' counts, and the call to the bench (`crate::bench`), which
//! measures and prints lines `bench <name> <value> <unit>`; never asserted.

use std::time::Duration;

use super::{BenchArgs, BenchCommand, CliError};
use crate::bench;

/// Runs `iron bench …`: each count as given, else the bench's own (small ones with
/// `--smoke`).
pub(super) async fn run(args: BenchArgs, timeout: Duration) -> Result<(), CliError> {
    let smoke = args.smoke;
    // A count: as given, else the smoke or the full default.
    let n = |given: Option<usize>, full: usize, small: usize| {
        given.unwrap_or(if smoke { small } else { full })
    };
    let ran = match args.bench {
        BenchCommand::Control { iterations } => {
            bench::control::run(n(iterations, 2000, 20), timeout).await
        }
        BenchCommand::Log {
            events,
            burst,
            nats,
        } => bench::log::run(n(events, 5000, 50), n(burst, 10_000, 100), nats).await,
        BenchCommand::Tools { calls, nats } => bench::tools::run(n(calls, 500, 5), nats).await,
        BenchCommand::Cognition {
            messages,
            rate,
            starts,
        } => bench::cognition::run(n(messages, 50_000, 50), rate, n(starts, 30, 1), timeout).await,
        BenchCommand::Workspace {
            files,
            scratches,
            runs,
        } => {
            bench::workspace::run(n(files, 10_000, 50), n(scratches, 10, 2), n(runs, 200, 10)).await
        }
        BenchCommand::Memory {
            corpus,
            burst,
            queries,
            dir,
            reuse,
            recall_only,
        } => {
            bench::memory::run(
                n(corpus, 1_000_000, 1000),
                n(burst, 10_000, 100),
                n(queries, 500, 10),
                dir,
                reuse,
                recall_only,
            )
            .await
        }
        BenchCommand::Routing { set, aem } => bench::routing::run(&set, &aem),
        BenchCommand::Newsroom { feeds, items, new } => {
            // A smoke run's first bulletin comes in seconds; a stuck one fails in minutes, not ten.
            let first_within = Duration::from_secs(if smoke { 120 } else { 600 });
            bench::newsroom::run(
                n(feeds, 20, 2),
                n(items, 1000, 10),
                n(new, 5, 1),
                first_within,
            )
            .await
        }
        BenchCommand::Jobs {
            steps,
            resume_steps,
            python,
            nats,
        } => {
            bench::jobs::run(
                n(steps, 2000, 20),
                n(resume_steps, 10_000, 20),
                python,
                nats,
            )
            .await
        }
        BenchCommand::Console {
            events,
            clients,
            tasks,
        } => {
            bench::console::run(
                n(events, 20_000, 200),
                n(clients, 20, 2),
                n(tasks, 40, 2),
                timeout,
            )
            .await
        }
        BenchCommand::Catalog { experts } => bench::catalog::run(n(experts, 1000, 10)),
        BenchCommand::Embed { sentences, dir } => {
            bench::embed::run(n(sentences, 1024, 64), dir).await
        }
        BenchCommand::EchoServer => {
            bench::tools::serve_echo()
                .await
                .map_err(|source| bench::BenchError::Io {
                    what: "serving the echo tool".into(),
                    source,
                })
        }
    };
    Ok(ran?)
}
