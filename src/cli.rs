//! Command-line definitions and dispatch only (the command-line contract).

use clap::{Parser, Subcommand};

use crate::commands;
use crate::error::{Outcome, Result};

/// `0.1.0 (commit 1a2b3c4)`: the package version and the git commit it was built from
/// (`build.rs`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("NETCHECK_COMMIT"),
    ")"
);

/// NCCL/EFA network diagnostics and benchmarks.
///
/// Measures NCCL all-gather and reduce-scatter between GPUs and nodes, reads NCCL's own
/// NCCL_DEBUG=INFO logs to say which transport really carried the traffic (EFA, IB, RoCE,
/// NVLink/P2P, SHM or plain TCP sockets), and turns the numbers into reports and pass/fail
/// verdicts.
///
/// Exit codes: 0 pass, 1 check failed, 2 usage or bad input, 3 required environment missing,
/// 4 infrastructure failure, 124 timeout or hang, 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "netcheck", version = VERSION, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Say which transport carried inter-node traffic, from NCCL_DEBUG=INFO logs.
    Analyze(commands::analyze::Args),
    /// Benchmark all-gather and reduce-scatter on this host's GPUs.
    Run(commands::run::Args),
    /// Turn nccl-tests output (-J JSON or text) into a netcheck results file.
    Ingest(commands::ingest::Args),
    /// Render plots, Markdown, HTML and JSON from results files.
    Report(commands::report::Args),
    /// Pass/fail against thresholds or a baseline, for CI.
    Gate(commands::gate::Args),
    /// Run paired benchmark pods across a Kubernetes node group.
    Launch(Box<commands::launch::Args>),
    /// Check GPUs, NCCL, the OFI plugin, EFA devices and the environment.
    Doctor(commands::doctor::Args),
    /// Probe libfabric and measure fabric latency and bandwidth.
    Fabric(commands::fabric::Args),
    /// One-off verdict: doctor, run, analyze, report.
    #[command(mut_arg("out", |a| a.help(
        "Output folder for everything: doctor.json, run/ (or launch/), report/ (default: reports/check-<time>/)"
    )))]
    Check(commands::check::Args),
    /// One benchmark rank (started by `run` and `launch`).
    #[command(hide = true)]
    Worker(commands::worker::Args),
}

pub fn dispatch(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Analyze(args) => commands::analyze::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Ingest(args) => commands::ingest::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Gate(args) => commands::gate::run(args),
        Command::Launch(args) => commands::launch::run(*args),
        Command::Doctor(args) => commands::doctor::run(args),
        Command::Fabric(args) => commands::fabric::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Worker(args) => commands::worker::run(args),
    }
}
