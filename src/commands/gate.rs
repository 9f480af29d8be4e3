//! `netcheck gate RESULTS`: thresholds and baseline comparison → pass/fail exit code.

use std::path::PathBuf;

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The results.json to judge.
    #[arg(value_name = "RESULTS")]
    pub results: PathBuf,
    /// Bench config with thresholds and expectations.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Compare size by size against this results.json.
    #[arg(long, value_name = "RESULTS")]
    pub baseline: Option<PathBuf>,
    /// Allowed bus-bandwidth drop against the baseline, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    pub tolerance: f64,
    /// Write a JUnit XML file (a testcase per op×size and per expectation).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("gate"))
}
