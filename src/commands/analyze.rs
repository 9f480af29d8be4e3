//! `netcheck analyze [LOG...]`: which transport carried inter-node traffic, with evidence.

use std::path::PathBuf;

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// NCCL_DEBUG=INFO logs: files, .gz files, or `-` / nothing for stdin.
    #[arg(value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    /// The inter-node transport that must have been used; anything else fails (exit 1).
    #[arg(long, value_name = "TRANSPORT", default_value = "any",
          value_parser = ["efa", "ib", "roce", "socket", "tcpx", "any"])]
    pub expect: String,
    /// Output format.
    #[arg(long, default_value = "text", value_parser = ["text", "json", "markdown"])]
    pub format: String,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("analyze"))
}
