//! libfabric, loaded at run time: provider listing and an RDM ping-pong between two ranks
//! (latency and bandwidth), below NCCL, to tell whether the fabric itself is usable.
//!
//! In data-flow order: `library` (dlopen) → `info` (fi_getinfo, listing) → `endpoint` (one RDM
//! endpoint and its objects) → `transfer` (posting and completions) → `pingpong` (the
//! measurement) → `session` (two ranks meeting over TCP) → `report` (text and JSON).

pub mod endpoint;
pub mod ffi;
pub mod info;
pub mod library;
pub mod pingpong;
pub mod report;
pub mod session;
pub mod transfer;

pub use library::Libfabric;
