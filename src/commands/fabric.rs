//! `netcheck fabric`: libfabric providers, and RDM ping-pong between two ranks.

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// List providers, fabrics, domains and endpoint types.
    #[arg(long)]
    pub list: bool,
    /// libfabric provider (e.g. efa, tcp).
    #[arg(long)]
    pub provider: Option<String>,
    /// Run both ranks on this host.
    #[arg(long, conflicts_with_all = ["server", "connect"])]
    pub local: bool,
    /// Wait for a peer (`--connect`) on this host.
    #[arg(long, conflicts_with = "connect")]
    pub server: bool,
    /// Connect to a `--server` peer at HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: Option<String>,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("fabric"))
}
