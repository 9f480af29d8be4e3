//! Shared helpers for the integration tests.

use std::path::PathBuf;

/// The netcheck binary under test.
pub fn netcheck() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("netcheck").expect("binary built");
    // Keep tests independent of the developer's environment.
    cmd.env_remove("NCCL_DEBUG");
    cmd
}

/// A file under tests/fixtures.
#[allow(dead_code)]
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}
