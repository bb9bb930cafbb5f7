//! `iron logs` reads back what processes printed (stream `LOGS`, see `crate::view::ship`);
//! `iron ship` runs a command with its output teed to the terminal and shipped, which is how
//! the launch file gives every node's output to the log plane (`iron up` does the same
//! in-process).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{CliError, stop_on_signals};
use crate::core::durable::EventLog;
use crate::spine::durable::AnyLog;
use crate::spine::durable::streams::LOGS;
use crate::view::ship::{Batch, Shipper, Stream, subject_of, tee};

/// `iron logs [NODE] [--last N] [--follow]`.
pub async fn logs(node: Option<String>, last: usize, follow: bool) -> Result<(), CliError> {
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    let filter = match &node {
        Some(n) => subject_of(n),
        None => "iron.log.>".to_string(),
    };
    let many = node.is_none();
    let mut from = 1;
    let mut tail: VecDeque<String> = VecDeque::new();
    loop {
        let page = log
            .read(LOGS, &filter, from, 1_000)
            .await
            .map_err(read_failed)?;
        let Some(end) = page.last().map(|m| m.seq) else {
            break;
        };
        from = end + 1;
        for m in page {
            for text in lines_of(&m.payload, many) {
                tail.push_back(text);
                if last > 0 && tail.len() > last {
                    tail.pop_front();
                }
            }
        }
    }
    for text in tail.drain(..) {
        println!("{text}");
    }
    if !follow {
        return Ok(());
    }
    let shutdown = CancellationToken::new();
    stop_on_signals(shutdown.clone());
    while !shutdown.is_cancelled() {
        let page = log
            .read(LOGS, &filter, from, 1_000)
            .await
            .map_err(read_failed)?;
        match page.last().map(|m| m.seq) {
            Some(end) => {
                from = end + 1;
                for m in page {
                    for text in lines_of(&m.payload, many) {
                        println!("{text}");
                    }
                }
            }
            None => {
                tokio::select! {
                    _ = shutdown.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                }
            }
        }
    }
    Ok(())
}

fn read_failed(e: crate::core::durable::DurableError) -> CliError {
    CliError::Failed(format!("reading the LOGS stream: {e}"))
}

/// The printable lines of one shipped batch (prefixed with the node when `many`).
fn lines_of(payload: &[u8], many: bool) -> Vec<String> {
    let Ok(batch) = serde_json::from_slice::<Batch>(payload) else {
        return vec!["(a message on the LOGS stream that is not a batch of lines)".into()];
    };
    let prefix = if many {
        format!("[{}] ", batch.node)
    } else {
        String::new()
    };
    let mut out = Vec::new();
    if batch.dropped > 0 {
        out.push(format!(
            "{prefix}… {} line(s) dropped here (the log plane was not taking them)",
            batch.dropped
        ));
    }
    out.extend(batch.lines.iter().map(|l| format!("{prefix}{}", l.l)));
    out
}

/// `iron ship --node NODE -- COMMAND…`: runs the command, its stdout and stderr teed line by
/// line to this terminal and to the log plane as `NODE`'s; SIGINT and SIGTERM are passed on to
/// it. Once it exits, what is queued is shipped for up to `flush` (the plane may be down), and
/// this process exits as the command did.
pub async fn ship(node: String, flush: Duration, command: Vec<String>) -> Result<(), CliError> {
    let config = super::load_config()?;
    let Some((program, args)) = command.split_first() else {
        return Err(CliError::Failed(
            "name the command to run after `--`".into(),
        ));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::core::exe::die_with_parent(&mut cmd, false);
    let mut child = cmd.spawn().map_err(|source| CliError::Io {
        what: format!("starting {program}"),
        source,
    })?;
    let (shipper, shipping) = Shipper::start(config);
    let node: Arc<str> = Arc::from(node.as_str());
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take().and_then(|o| o.into_owned_fd().ok()) {
        let (shipper, node) = (shipper.clone(), node.clone());
        readers.push(std::thread::spawn(move || {
            tee(
                std::fs::File::from(out),
                std::io::stdout(),
                &shipper,
                &node,
                Stream::Stdout,
            )
        }));
    }
    if let Some(err) = child.stderr.take().and_then(|e| e.into_owned_fd().ok()) {
        let (shipper, node) = (shipper.clone(), node.clone());
        readers.push(std::thread::spawn(move || {
            tee(
                std::fs::File::from(err),
                std::io::stderr(),
                &shipper,
                &node,
                Stream::Stderr,
            )
        }));
    }
    drop(shipper);
    let status = wait_passing_signals(&mut child).await?;
    // The pipes end with the command (unless something it started keeps them open: then the
    // readers are left behind, and the flush below stops waiting at its limit).
    for r in readers {
        if r.is_finished() {
            let _ = r.join();
        }
    }
    if !shipping.finish(flush).await {
        eprintln!(
            "iron ship: some output of {node} was not shipped within {} s (the log plane did not take it)",
            flush.as_secs()
        );
    }
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    std::process::exit(code)
}

/// Waits for `child`, passing SIGINT and SIGTERM on to it.
async fn wait_passing_signals(
    child: &mut tokio::process::Child,
) -> Result<std::process::ExitStatus, CliError> {
    use tokio::signal::unix::{SignalKind, signal};
    let io = |source| CliError::Io {
        what: "watching for signals".into(),
        source,
    };
    let mut int = signal(SignalKind::interrupt()).map_err(io)?;
    let mut term = signal(SignalKind::terminate()).map_err(io)?;
    let pid = child.id();
    let pass = |sig| {
        if let Some(pid) = pid {
            // SAFETY: kill(2) on the child this process started; it is reaped only by the
            // wait below, which ends this loop.
            unsafe { libc::kill(pid as i32, sig) };
        }
    };
    loop {
        tokio::select! {
            status = child.wait() => {
                return status.map_err(|source| CliError::Io { what: "waiting for the command".into(), source });
            }
            _ = int.recv() => pass(libc::SIGINT),
            _ = term.recv() => pass(libc::SIGTERM),
        }
    }
}
