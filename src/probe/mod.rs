//! `netcheck doctor`: what this node offers NCCL, and whether it is set up right.
pub mod host;
