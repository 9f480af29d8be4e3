//! `netcheck launch`: paired benchmark pods across a Kubernetes node group.

use std::path::PathBuf;

use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Namespace for the pods and services.
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// kubeconfig context.
    #[arg(long)]
    pub context: Option<String>,
    /// kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Nodes to test, comma-separated.
    #[arg(long, value_delimiter = ',', conflicts_with = "selector")]
    pub nodes: Option<Vec<String>>,
    /// Label selector choosing the nodes to test.
    #[arg(long, short = 'l')]
    pub selector: Option<String>,
    /// pairs: disjoint pairs in rounds; ring: every pair; full: one communicator over all nodes.
    #[arg(long, default_value = "pairs", value_parser = ["pairs", "ring", "full"])]
    pub mode: String,
    /// Container image holding the netcheck binary and NCCL.
    #[arg(long)]
    pub image: Option<String>,
    /// GPUs per node to request (default: the node's allocatable nvidia.com/gpu).
    #[arg(long)]
    pub gpus_per_node: Option<u32>,
    /// EFA devices per node to request (default: the node's allocatable vpc.amazonaws.com/efa).
    #[arg(long)]
    pub efa_per_node: Option<u32>,
    /// Print the manifests as YAML and touch no cluster.
    #[arg(long)]
    pub dry_run: bool,
    /// Keep the pods and services for debugging.
    #[arg(long)]
    pub keep: bool,
    /// Deadline per pair or group (e.g. 10m).
    #[arg(long, default_value = "15m")]
    pub timeout: String,
}

pub fn run(_args: Args) -> Result<Outcome> {
    Err(Error::NotBuilt("launch"))
}
