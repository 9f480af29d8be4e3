use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = netcheck::cli::Cli::parse();
    match netcheck::cli::dispatch(cli) {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(err) => {
            err.print();
            ExitCode::from(err.exit_code())
        }
    }
}
