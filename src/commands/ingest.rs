//! `netcheck ingest FILE... --out results.json`: nccl-tests output → RunRecord.

use std::path::PathBuf;

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// nccl-tests `-J` JSON files or their text output (NCCL_DEBUG lines may be mixed in).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the RunRecord.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("ingest"))
}
