//! `netcheck report RESULTS... --out DIR`: plots, Markdown, HTML and JSON from RunRecords.

use std::path::PathBuf;

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// results.json files written by `run`, `launch` or `ingest`.
    #[arg(value_name = "RESULTS", required = true)]
    pub results: Vec<PathBuf>,
    /// Output folder.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A results.json to draw as the baseline.
    #[arg(long, value_name = "RESULTS")]
    pub baseline: Option<PathBuf>,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("report"))
}
