//! Build facts the binary and the tests need:
//!
//! - `NETCHECK_COMMIT`: the git commit the binary was built from, for `--version` (`git
//!   describe --always --tags`; `NETCHECK_GIT_COMMIT` when set, e.g. by an image build without
//!   `.git`; "unknown" outside a git checkout). Uncommitted changes are not shown: the
//!   script reruns when HEAD moves, not on every edit.
//! - `cfg(netcheck_no_libfabric)` when libfabric cannot be found here, so the tests that need it
//!   show as `ignored` with the reason instead of passing without running.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=NETCHECK_COMMIT={}", commit());
    println!("cargo:rustc-check-cfg=cfg(netcheck_no_libfabric)");
    if !libfabric_found() {
        println!("cargo:rustc-cfg=netcheck_no_libfabric");
    }
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn commit() -> String {
    println!("cargo:rerun-if-env-changed=NETCHECK_GIT_COMMIT");
    if let Ok(c) = std::env::var("NETCHECK_GIT_COMMIT")
        && !c.trim().is_empty()
    {
        return c.trim().to_string();
    }
    let Some(describe) = git(&["describe", "--always", "--tags"]) else {
        return "unknown".into();
    };
    // Rerun when HEAD moves: the HEAD file (a checkout) and the branch it names (a commit).
    for path in [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ]
    .into_iter()
    .flatten()
    {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    describe
}

/// Where `netcheck::fabric::Libfabric::load` looks: `NETCHECK_LIBFABRIC`, the EFA installer's
/// folder, then the loader's cache.
fn libfabric_found() -> bool {
    println!("cargo:rerun-if-env-changed=NETCHECK_LIBFABRIC");
    if let Ok(p) = std::env::var("NETCHECK_LIBFABRIC") {
        return Path::new(&p).exists();
    }
    for dir in ["/opt/amazon/efa/lib", "/opt/amazon/efa/lib64"] {
        if Path::new(dir).join("libfabric.so.1").exists() {
            return true;
        }
    }
    if Path::new("/etc/ld.so.cache").exists() {
        println!("cargo:rerun-if-changed=/etc/ld.so.cache");
    }
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .ok()
        .is_some_and(|o| String::from_utf8_lossy(&o.stdout).contains("libfabric.so.1 "))
}
