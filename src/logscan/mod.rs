//! NCCL / aws-ofi-nccl log analysis: strip wrapper prefixes → classify lines into events →
//! fold events into per-rank and per-communicator facts → rules → findings and a verdict.

mod analysis;

pub use analysis::*;
