//! `netcheck run`: NCCL all-gather / reduce-scatter sweeps on this host's GPUs.

use std::path::PathBuf;

use crate::config::ByteSize;
use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bench config TOML (default: the embedded bench-configs/default.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Collectives, comma-separated: all_gather, reduce_scatter, all_reduce.
    #[arg(long, value_delimiter = ',')]
    pub ops: Option<Vec<String>>,
    /// Smallest size (the gathered buffer, as nccl-tests counts it), e.g. 1K.
    #[arg(long, value_name = "SIZE")]
    pub min_bytes: Option<ByteSize>,
    /// Largest size, e.g. 1G.
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<ByteSize>,
    /// Multiply the size by this between steps.
    #[arg(long, value_name = "N")]
    pub step_factor: Option<u64>,
    /// Timed iterations per size.
    #[arg(long, value_name = "N")]
    pub iters: Option<u32>,
    /// Untimed iterations before timing.
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    /// Data types, comma-separated: float32, bfloat16, float16, int8, ...
    #[arg(long, value_delimiter = ',')]
    pub dtype: Option<Vec<String>>,
    /// Number of local GPUs to use (default: all).
    #[arg(long, value_name = "N")]
    pub gpus: Option<u32>,
    /// Give ranks different NCCL_HOSTID values so NCCL treats them as N nodes and uses its
    /// network path on one host.
    #[arg(long, value_name = "N")]
    pub simulate_nodes: Option<u32>,
    /// The inter-node transport that must carry traffic; anything else fails (exit 1).
    #[arg(long, value_name = "TRANSPORT",
          value_parser = ["efa", "ib", "roce", "socket", "tcpx", "any"])]
    pub expect: Option<String>,
    /// Output folder (default: reports/<timestamp>/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Give up after this long without progress (e.g. 90s, 10m); exit 124.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub timeout: String,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("run"))
}
