//! `iron new mesh|expert`: agent folders to start from, and what to do next with them.

use std::path::Path;

use super::{CliError, NewCommand};
use crate::aem::scaffold::{self, FIRST_ROLE, Made};

/// Runs one `iron new` command.
pub(super) fn run(command: NewCommand) -> Result<(), CliError> {
    match command {
        NewCommand::Mesh { name, aem } => {
            let made = scaffold::new_mesh(&aem, &name)?;
            print_made(&aem, &made);
            next(&aem, &name, FIRST_ROLE);
            println!(
                "  # its flows run when the launch list (launch/bringup.yaml) has a runner for it:\n  \
                 #   - {{name: runner, namespace: /iron/jobs/{name}, executable: jobs_runner, \
                 args: [\"--mesh\", \"{name}\"], autostart: true, respawn: true}}"
            );
        }
        NewCommand::Expert { expert, aem } => {
            let made = scaffold::new_expert(&aem, &expert)?;
            print_made(&aem, &made);
            let (mesh, role) = expert.split_once('/').unwrap_or_default();
            next(&aem, mesh, role);
        }
    }
    Ok(())
}

fn print_made(aem: &Path, made: &Made) {
    println!("made {} (it compiles):", made.dir.display());
    for file in &made.files {
        println!("  {}", aem.join(file).display());
    }
}

fn next(aem: &Path, mesh: &str, role: &str) {
    println!("next:");
    println!("  iron catalog check --aem {}", aem.display());
    println!(
        "  python3 {}   # the sample flow's test",
        aem.join(mesh)
            .join("skills")
            .join(role)
            .join("tests/test_answer.py")
            .display()
    );
    println!("  iron up   # then, in another terminal:");
    println!("  iron task send --domain {mesh}/{role} \"hello\"");
    println!("  iron jobs start {mesh}/{role}/answer --input '{{\"question\": \"hello\"}}'");
}
