//! netcheck: NCCL/EFA network diagnostics and benchmarks.
//!
//! Modules are listed in the order data flows through them:
//! config → (launch → worker: rendezvous + engine) → results → logscan → report / gate,
//! with probe and fabric beside them.

pub mod cli;
pub mod commands;
pub mod error;
pub mod exit;
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
pub mod probe;
