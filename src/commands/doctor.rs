//! `netcheck doctor`: GPUs, NCCL, OFI plugin, EFA devices, environment lint.

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("doctor"))
}
