//! `iron sandbox run`: a command under exactly the confinement an expert of a mesh gets, so
//! a person can see what their agents can reach. It goes through the same code as an
//! expert's confined command: a scratch made by the mesh's `workspace:` provider, the mesh's
//! run policy (network, toolchain, the state directory masked), [`Confined::under`] and
//! [`Sandbox::run`].

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::{CliError, failed};
use crate::aem::{Catalog, WorkspaceEntry};
use crate::workspace::sandbox::{Confined, Ended, RunPolicy, Sandbox};
use crate::workspace::scratch::{Scratch, provider, remove_dir};

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Run COMMAND confined as an expert of a mesh would be: in a fresh scratch of the mesh's
    /// workspace target (removed afterwards), with the mesh's network grant, toolchain and
    /// limits. Prints the command's output and exits with its code (124 past --time-limit,
    /// 125 when it was ended by a signal or a limit).
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The mesh whose confinement to use (the one mesh that declares `workspace:` when
    /// omitted).
    #[arg(long)]
    mesh: Option<String>,
    /// Run as if the mesh granted network (`workspace.network: true`): a user-mode network
    /// that reaches the outside but not this host's loopback.
    #[arg(long)]
    network: bool,
    /// Seconds before the command is killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    time_limit: u64,
    /// The agent folders the mesh is declared in.
    #[arg(long, default_value = "aem")]
    aem: PathBuf,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Runs `command`.
pub async fn run(command: SandboxCommand) -> Result<(), CliError> {
    let SandboxCommand::Run(args) = command;
    let config = super::load_config()?;
    let catalog = crate::aem::compile(&args.aem)?;
    let (mesh, ws) = workspace_of(&catalog, args.mesh.as_deref())?;
    let mut policy = RunPolicy::of(ws, &config.state_dir);
    policy.network |= args.network;
    let sandbox = Sandbox::locate().await.map_err(failed)?;
    let project = std::env::current_dir().map_err(|source| CliError::Io {
        what: "reading the current directory".into(),
        source,
    })?;
    let target = project
        .join(&ws.target)
        .canonicalize()
        .map_err(|source| CliError::Io {
            what: format!("the workspace target of {mesh} ({})", ws.target),
            source,
        })?;
    let root = config.state_dir.join("scratch");
    let id = format!("sandbox-run-{}", std::process::id());
    let scratch = provider(ws.provider, &target, &root)
        .create(&id)
        .await
        .map_err(failed)?;
    eprintln!(
        "running confined as an expert of {mesh} in the scratch {} (network: {})",
        scratch.dir.display(),
        if policy.network { "user-mode" } else { "none" }
    );
    let ran = confined(&sandbox, &scratch, &policy, &args).await;
    if let Err(e) = remove_dir(&target, &root, &scratch.dir).await {
        eprintln!("the scratch {} was not removed: {e}", scratch.dir.display());
    }
    let out = ran?;
    std::io::stdout().write_all(&out.stdout).ok();
    std::io::stderr().write_all(&out.stderr).ok();
    let code = match out.ended {
        Ended::Exited(0) => return Ok(()),
        Ended::Exited(code) => u8::try_from(code).unwrap_or(1),
        Ended::TimedOut => {
            eprintln!("killed after {} s (--time-limit)", args.time_limit);
            124
        }
        Ended::OutputLimit => {
            eprintln!("killed: it wrote more than the output limit");
            125
        }
        Ended::Signalled => {
            eprintln!("ended by a signal (a limit, or killed)");
            125
        }
    };
    Err(CliError::Exit(code))
}

async fn confined(
    sandbox: &Sandbox,
    scratch: &Scratch,
    policy: &RunPolicy,
    args: &RunArgs,
) -> Result<crate::workspace::sandbox::RunOutput, CliError> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| CliError::Failed("no command given".into()))?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let mut run = Confined::new(program, &rest, &scratch.dir)
        .under(policy)
        .map_err(failed)?;
    run.timeout = Duration::from_secs(args.time_limit);
    sandbox.run(&run).await.map_err(failed)
}

/// The mesh named, or the only one with a `workspace:`, and its workspace.
fn workspace_of<'a>(
    catalog: &'a Catalog,
    mesh: Option<&str>,
) -> Result<(&'a str, &'a WorkspaceEntry), CliError> {
    let with: Vec<(&str, &WorkspaceEntry)> = catalog
        .meshes
        .iter()
        .filter_map(|(name, m)| m.workspace.as_ref().map(|w| (name.as_str(), w)))
        .collect();
    match mesh {
        Some(name) => {
            with.into_iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| match catalog.mesh(name) {
                    Some(_) => CliError::Failed(format!(
                        "the mesh {name} declares no `workspace:`: its experts run no commands"
                    )),
                    None => CliError::Failed(format!("no mesh {name} in the catalog")),
                })
        }
        None => match with.as_slice() {
            [one] => Ok(*one),
            [] => Err(CliError::Failed(
                "no mesh declares `workspace:`; name one with --mesh".into(),
            )),
            many => Err(CliError::Failed(format!(
                "several meshes declare `workspace:` ({}); name one with --mesh",
                many.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ))),
        },
    }
}
