//! `netcheck worker` (hidden): one rank, started by a launcher. Not for direct use.

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// This worker's global rank.
    #[arg(long)]
    pub rank: u32,
    /// Total number of ranks.
    #[arg(long)]
    pub world_size: u32,
    /// Rank 0's rendezvous address (HOST:PORT). Rank 0 listens on it.
    #[arg(long)]
    pub rendezvous: String,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("worker"))
}
