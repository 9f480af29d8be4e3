//! Rendezvous without MPI or ssh: rank 0 creates the NCCL unique id and serves it over TCP to
//! peers that prove they hold the run token; afterwards the same connections carry barriers,
//! per-size results gathered on rank 0, heartbeats, and an abort when any rank dies.
//!
//! The API is synchronous (the caller's thread drives CUDA and NCCL, which block); the sockets
//! live on a small tokio runtime owned by each endpoint, so heartbeats and failure detection go
//! on while the caller waits on the GPU.

mod client;
mod protocol;
mod server;
mod shared;

use std::time::{Duration, Instant};

pub use client::Client;
pub use protocol::{MAX_FRAME, Message, PROTOCOL, random_hex, read_frame, write_frame};
pub use server::Server;

/// Environment variable carrying the run token to every rank.
pub const TOKEN_ENV: &str = "NETCHECK_RDZV_TOKEN";

/// A peer that sends nothing (not even heartbeats) for this long is declared dead.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(15);
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum RdzvError {
    /// The deadline passed while waiting for `waiting_for`.
    #[error("rendezvous timed out after {waited:?} waiting for {waiting_for}")]
    Timeout {
        waiting_for: String,
        waited: Duration,
    },
    /// A peer died, was rejected, or rank 0 aborted the run.
    #[error("{0}")]
    Failed(String),
}

/// What every rank can do once joined, whichever side of the connection it is on.
pub trait Group {
    fn rank(&self) -> u32;
    fn world_size(&self) -> u32;
    /// The NCCL unique id created by rank 0.
    fn unique_id(&self) -> [u8; 128];
    /// Blocks until every rank reached barrier `seq`.
    fn barrier(&self, seq: u64, deadline: Instant) -> Result<(), RdzvError>;
    /// Sends this rank's `data` for gather `seq`; rank 0 gets everyone's, by rank.
    fn gather(
        &self,
        seq: u64,
        data: serde_json::Value,
        deadline: Instant,
    ) -> Result<Option<Vec<serde_json::Value>>, RdzvError>;
    /// A failure seen so far (a dead peer, an abort), without blocking.
    fn failure(&self) -> Option<String>;
    /// Tells the others the run is over because of `reason`.
    fn abort(&self, reason: &str);
    /// Finishes normally (peers send `Bye`, rank 0 waits briefly for them).
    fn close(&self);
}

/// Connection retry delays: 200 ms doubling to a 5 s cap, ±20 % jitter.
pub(crate) fn backoff(attempt: u32) -> Duration {
    let base = (200u64 << attempt.min(5)).min(5000);
    let mut b = [0u8; 1];
    let _ = getrandom::fill(&mut b);
    let jitter = (b[0] as f64 / 255.0 - 0.5) * 0.4;
    Duration::from_millis((base as f64 * (1.0 + jitter)) as u64)
}
