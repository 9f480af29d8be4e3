//! Launchers: where the benchmark workers run, and collecting what they report.
//!
//! - `fabric_check`: a short libfabric ping-pong between node 0 and every other node before
//!   NCCL starts (`netcheck run --fabric-check PROVIDER`).
//! - `layout`: which GPU and which (real or simulated) node each rank gets.
//! - `local`: one worker per GPU on this host (also one node of a multi-node run, the way each
//!   Kubernetes pod uses it).
//! - `plan`: which nodes are tested together, round by round, and what the results say about
//!   each node (pure: no cluster, no I/O).
//! - `kube`: one pod per node on a Kubernetes cluster (`netcheck launch`), each running `local`.

pub mod fabric_check;
pub mod kube;
pub mod layout;
pub mod local;
pub mod plan;
