//! The `iron` command line.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = iron::cli::Cli::parse();
    iron::cli::init_command_tracing(&cli);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(iron::cli::run(cli));
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(iron::cli::CliError::Exit(code)) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
