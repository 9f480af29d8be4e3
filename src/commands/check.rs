//! `netcheck check`: the one-off verdict: doctor, run, analyze, report, one line and an exit code.

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run on a Kubernetes cluster (through `launch`) instead of local GPUs.
    #[arg(long)]
    pub kube: bool,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("check"))
}
