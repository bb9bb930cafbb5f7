//! `iron bench workspace`: what the workspace costs a task. A scratch of a repository of
//! `files` files made and removed (a linked git worktree, and a plain copy), and a confined
//! `true` under bubblewrap against a plain spawn of `true`, interleaved so both see the same
//! machine.

use std::path::Path;
use std::time::{Duration, Instant};

use super::stats::{Figures, ms, pct, us};
use super::{BenchError, failed};
use crate::aem::WorkspaceProvider;
use crate::workspace::sandbox::{Confined, Sandbox};
use crate::workspace::scratch::provider;

/// A committed repository of `files` small files in 100 directories under `dir`.
fn make_repo(dir: &Path, files: usize) -> Result<(), BenchError> {
    let io = |what: &str| {
        let what = what.to_string();
        move |source| BenchError::Io { what, source }
    };
    for i in 0..files {
        let d = dir.join(format!("d{:02}", i % 100));
        std::fs::create_dir_all(&d).map_err(io("creating the bench repository"))?;
        std::fs::write(d.join(format!("f{i}.txt")), format!("file {i}\n"))
            .map_err(io("writing the bench repository"))?;
    }
    for args in [
        &["init", "--quiet", "-b", "main"][..],
        &["add", "--all"],
        &[
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@localhost",
            "commit",
            "--quiet",
            "-m",
            "bench",
        ],
    ] {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .map_err(io("running git"))?;
        if !out.status.success() {
            return Err(failed(String::from_utf8_lossy(&out.stderr)));
        }
    }
    Ok(())
}

/// Runs the benchmark and prints `bench workspace.<name> <value> <unit>` lines.
pub async fn run(files: usize, scratches: usize, runs: usize) -> Result<(), BenchError> {
    super::stats::print_machine("workspace");
    let sandbox = Sandbox::locate().await.map_err(failed)?;
    let temp = tempfile::tempdir().map_err(|source| BenchError::Io {
        what: "making a temporary directory".into(),
        source,
    })?;
    let repo = temp.path().join("repo");
    let started = Instant::now();
    make_repo(&repo, files)?;
    eprintln!(
        "made a repository of {files} files in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut figs = Figures::default();
    figs.line(format!("bench workspace.files {files} count"));
    for (name, kind) in [
        ("worktree", WorkspaceProvider::GitWorktree),
        ("copy", WorkspaceProvider::Copy),
    ] {
        let p = provider(kind, &repo, &temp.path().join(format!("scratch-{name}")));
        let (mut made, mut removed) = (Vec::new(), Vec::new());
        for i in 0..scratches {
            let t = Instant::now();
            let s = p.create(&format!("bench-{i}")).await.map_err(failed)?;
            made.push(t.elapsed());
            let t = Instant::now();
            p.remove(&s).await.map_err(failed)?;
            removed.push(t.elapsed());
        }
        made.sort();
        removed.sort();
        figs.line(format!(
            "bench workspace.{name}_create_p50 {:.1} ms",
            ms(pct(&made, 50.0))
        ));
        figs.line(format!(
            "bench workspace.{name}_remove_p50 {:.1} ms",
            ms(pct(&removed, 50.0))
        ));
    }
    let scratch = temp.path().join("confined");
    std::fs::create_dir_all(&scratch).map_err(|source| BenchError::Io {
        what: "making the sandbox's scratch".into(),
        source,
    })?;
    let run = Confined::new("true", &[], &scratch);
    let (mut confined, mut plain): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let out = sandbox.run(&run).await.map_err(failed)?;
        confined.push(t.elapsed());
        if !out.success() {
            return Err(failed(format!("confined `true` ended {:?}", out.ended)));
        }
        let t = Instant::now();
        let status = tokio::process::Command::new("true")
            .status()
            .await
            .map_err(|source| BenchError::Io {
                what: "spawning true".into(),
                source,
            })?;
        plain.push(t.elapsed());
        if !status.success() {
            return Err(failed("`true` failed"));
        }
    }
    confined.sort();
    plain.sort();
    let (c50, p50) = (pct(&confined, 50.0), pct(&plain, 50.0));
    figs.line(format!(
        "bench workspace.confined_true_p50 {:.1} us",
        us(c50)
    ));
    figs.line(format!(
        "bench workspace.confined_true_p99 {:.1} us",
        us(pct(&confined, 99.0))
    ));
    figs.line(format!("bench workspace.plain_true_p50 {:.1} us", us(p50)));
    figs.line(format!(
        "bench workspace.plain_true_p99 {:.1} us",
        us(pct(&plain, 99.0))
    ));
    figs.line(format!(
        "bench workspace.confined_ratio_p50 {:.2} x",
        us(c50) / us(p50)
    ));
    figs.print();
    Ok(())
}
