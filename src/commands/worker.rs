//! `netcheck worker` (hidden): one rank (or, with --ranks, several as threads), started by a launcher (`run`, or a pod from `launch`).
//! Not for direct use: the launcher passes the sweep and sets the environment.

use std::path::PathBuf;

use crate::config::{Sweep, parse_duration};
use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// This worker's global rank (with --ranks: the first of them).
    #[arg(long)]
    pub rank: u32,
    /// Run this many consecutive ranks as threads of this process, rank + i on GPU
    /// local-gpu + i (`netcheck run --one-process`).
    #[arg(long, default_value_t = 1)]
    pub ranks: u32,
    /// Total number of ranks.
    #[arg(long)]
    pub world_size: u32,
    /// Local CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub local_gpu: u32,
    /// Rank 0: the address to listen on (HOST:PORT, port 0 = any); others: rank 0's address.
    #[arg(long)]
    pub rendezvous: String,
    /// Output folder (rank 0 writes the other hosts' logs there).
    #[arg(long)]
    pub out: PathBuf,
    /// The sweep, as JSON (the `[sweep]` table of a bench config).
    #[arg(long)]
    pub sweep: String,
    /// Deadline for each step (rendezvous, init, one timed loop).
    #[arg(long, default_value = "5m")]
    pub timeout: String,
    /// Only exercise the rendezvous (no GPU, no NCCL).
    #[arg(long)]
    pub rendezvous_only: bool,
    /// With --rendezvous-only: stay joined this long between two barriers.
    #[arg(long, default_value = "0s", requires = "rendezvous_only")]
    pub hold: String,
}

pub fn run(args: Args) -> Result<Outcome> {
    if args.world_size == 0
        || args.ranks == 0
        || u64::from(args.rank) + u64::from(args.ranks) > u64::from(args.world_size)
    {
        return Err(Error::usage(format!(
            "ranks {}..{} are outside world size {}",
            args.rank,
            u64::from(args.rank) + u64::from(args.ranks),
            args.world_size
        )));
    }
    let sweep: Sweep = serde_json::from_str(&args.sweep)
        .map_err(|e| Error::bad_input("--sweep", e.to_string()))?;
    let timeout = parse_duration(&args.timeout).map_err(|m| Error::bad_input("--timeout", m))?;
    let first = crate::worker::WorkerOptions {
        rank: args.rank,
        world_size: args.world_size,
        local_gpu: args.local_gpu,
        rendezvous: args.rendezvous,
        out: args.out,
        sweep,
        timeout,
        rendezvous_only: args.rendezvous_only,
        hold: match args.hold.as_str() {
            "0" | "0s" => std::time::Duration::ZERO,
            h => parse_duration(h).map_err(|m| Error::bad_input("--hold", m))?,
        },
        listening: None,
        share_log: true,
    };
    crate::worker::run_threads(first, args.ranks)
}
