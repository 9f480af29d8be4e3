//! netcheck: NCCL/EFA network diagnostics and benchmarks.
//!
//! Modules are listed in the order data flows through them:
//! config → (launch → worker: rendezvous + engine) → results → logscan → report / gate,
//! with probe and fabric beside them.

// Messages for people go through `say!` (a broken stderr drops them), data through
// `output::stdout`/`output::write_file` (a closed stdout ends quietly): `eprintln!` and
// `println!` panic on a broken stream (exit 101).
#![deny(clippy::print_stderr, clippy::print_stdout)]

pub mod cli;
pub mod commands;
pub mod error;
pub mod exit;
pub mod flags;
pub mod input;
pub mod output;

pub mod config;
pub mod console;
pub mod engine;
pub mod gate;
pub mod ingest;
pub mod launch;
pub mod logscan;
pub mod rendezvous;
pub mod report;
pub mod results;
pub mod worker;

pub mod fabric;
pub mod host;
pub mod probe;
