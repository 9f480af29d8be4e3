//! The measuring engine: NCCL collectives through cudarc, one small file per collective on a
//! shared harness (nccl-tests' layout). Everything here runs inside a worker process, one per
//! GPU; nothing here knows about hosts, pods or output formats.

pub mod collective;
pub mod comm;
pub mod cuda;
pub mod dtype;
pub mod gpu;
pub mod harness;
pub mod library;
pub mod stats;

mod all_gather;
mod all_reduce;
mod reduce_scatter;
