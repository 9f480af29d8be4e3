//! `netcheck doctor`: what this node offers NCCL, and whether it is set up right; plus the RDMA
//! counter snapshots `run` and `launch` take around a benchmark.
//!
//! Facts first, checks over them second: `gpu`, `nccl`, `plugins`, `libfabric`, `rdma` and
//! `counters`, `system`, `envlint`, each with its own check functions; `doctor` runs them all.

pub mod check;
pub mod counters;
pub mod cuda;
pub mod doctor;
pub mod envlint;
pub mod files;
pub mod gpu;
pub mod libfabric;
pub mod loaded;
pub mod nccl;
pub mod nvidia;
pub mod pci;
pub mod plugins;
pub mod rdma;
pub mod system;

pub use check::{Check, HostPaths, Status};
pub use counters::{CounterDelta, CounterSnapshot};
