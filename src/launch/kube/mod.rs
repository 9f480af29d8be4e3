//! `netcheck launch` on Kubernetes: one pod per node, running `netcheck run` against its peers
//! through a headless Service, in the groups and rounds the planner chooses.
//!
//! Data flows through the files in this order:
//! - `nodes`: preflight from Node objects (allocatable GPUs, EFA, huge pages; cordons, taints).
//! - `names` and `manifest`: the objects of a run, built by pure functions; `selector`: label
//!   selectors checked as the API server parses them.
//! - `client`: the one type that talks to the API server.
//! - `status`: where each pod is, and when a group is finished.
//! - `logs`: `analyze --kube`, the logs of pods that run already (not the launcher's).
//! - `collect`: rank 0's result line and the exit codes → a pair verdict; the merged record.
//! - `launcher`: the run itself, with cleanup on errors and Ctrl-C; `watch`: one round of it;
//!   `dry_run`: the YAML only.

pub mod client;
pub mod collect;
pub mod dry_run;
pub mod launcher;
pub mod logs;
pub mod manifest;
pub mod names;
pub mod nodes;
pub mod selector;
pub mod status;
mod watch;

pub use client::{Connect, KubeClient};
pub use launcher::{Conclusion, Report, Selection, Settings, launch};
