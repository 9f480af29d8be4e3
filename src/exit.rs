//! Exit codes, the same for every command (the command-line contract, `netcheck --help`).
//!
//! Scripts and CI pipelines rely on these numbers; never reuse one for another meaning.

/// Everything passed (warnings allowed).
pub const PASS: u8 = 0;
/// The check ran and failed: TCP fallback, expectation not met, regression, wrong results.
pub const CHECK_FAILED: u8 = 1;
/// Usage error or bad input (unreadable file, malformed JSON, invalid config).
pub const BAD_INPUT: u8 = 2;
/// A required environment is missing: no GPU, no NCCL, no libfabric, no kubeconfig.
pub const MISSING_ENVIRONMENT: u8 = 3;
/// Infrastructure failure: API errors, pods that cannot be scheduled.
pub const INFRASTRUCTURE: u8 = 4;
/// A timeout or hang (NCCL init, a collective, a pod that never finished).
pub const TIMEOUT: u8 = 124;
/// Interrupted by the user (Ctrl-C / SIGTERM).
pub const INTERRUPTED: u8 = 130;
