//! `netcheck fabric` against the real libfabric (Debian's `libfabric1`, tcp provider): provider
//! listing, a two-process ping-pong, two-node mode over loopback, and the error exits.
//!
//! Without libfabric these tests skip, except when `CI=true`: there they fail, so a missing
//! install step in CI cannot hide them.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::util::{netcheck, stdout_text};

/// True when libfabric can be loaded; panics in CI when it cannot.
pub fn libfabric_present() -> bool {
    match netcheck::fabric::Libfabric::load() {
        Ok(_) => true,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but libfabric is missing ({e}); install libfabric1")
        }
        Err(e) => {
            eprintln!("skipping: libfabric not available ({e})");
            false
        }
    }
}

// The test's own view of the JSON contracts, so any change to them fails here.
#[derive(Debug, Deserialize)]
struct Listing {
    schema: String,
    libfabric: Library,
    entries: Vec<Entry>,
    efa: Efa,
}

#[derive(Debug, Deserialize)]
struct Library {
    path: String,
    version: String,
}

#[derive(Debug, Deserialize)]
struct Entry {
    provider: String,
    fabric: String,
    domain: String,
    endpoint_type: String,
}

#[derive(Debug, Deserialize)]
struct Efa {
    devices: Vec<String>,
    rdm_entries: usize,
}

#[derive(Debug, Deserialize)]
struct Report {
    schema: String,
    mode: String,
    local: Side,
    peer: Side,
    results: Vec<SizeResult>,
    verdict: String,
}

#[derive(Debug, Deserialize)]
struct Side {
    endpoint: Endpoint,
}

#[derive(Debug, Deserialize)]
struct Endpoint {
    provider: String,
    domain: String,
}

#[derive(Debug, Deserialize)]
struct SizeResult {
    bytes: u64,
    iters: u32,
    rtt_us: Rtt,
    one_way_us: f64,
    stream: Stream,
    payload_ok: bool,
}

#[derive(Debug, Deserialize)]
struct Rtt {
    min: f64,
    p50: f64,
    p99: f64,
    max: f64,
}

#[derive(Debug, Deserialize)]
struct Stream {
    messages: u64,
    bytes: u64,
    gbs: Option<f64>,
}

/// The address a `--server` prints on stderr ("listening on 127.0.0.1:PORT; ...").
fn listening_address(server: &mut std::process::Child) -> String {
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    for line in lines.by_ref().take(20) {
        let line = line.unwrap();
        if let Some(addr) = line
            .split_whitespace()
            .find(|w| w.starts_with("127.0.0.1:"))
        {
            // Keep draining stderr so the server never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return addr.trim_end_matches(';').to_string();
        }
    }
    panic!("the server did not say where it listens");
}

/// Small, fixed work: the machine running the tests may have two busy cores.
const PLAN: &[&str] = &[
    "--sizes",
    "64,4K,64K",
    "--iters",
    "100",
    "--warmup",
    "10",
    "--window",
    "8",
    "--batches",
    "2",
    "--timeout",
    "30s",
];

/// Less still, for the tests of a choice rather than of the measurement.
const SHORT_PLAN: &[&str] = &[
    "--sizes",
    "64",
    "--iters",
    "10",
    "--warmup",
    "2",
    "--batches",
    "1",
];

fn check_report(report: &Report, mode: &str) {
    assert_eq!(report.schema, "netcheck.fabric.v1");
    assert_eq!(report.mode, mode);
    assert!(
        report.local.endpoint.provider.starts_with("tcp"),
        "{report:?}"
    );
    assert_eq!(
        report.peer.endpoint.provider,
        report.local.endpoint.provider
    );
    assert_eq!(report.verdict, "pass");
    let sizes: Vec<u64> = report.results.iter().map(|r| r.bytes).collect();
    assert_eq!(sizes, [64, 4096, 65536]);
    for r in &report.results {
        assert_eq!(r.iters, 100);
        assert!(r.payload_ok, "{r:?}");
        assert!(r.rtt_us.min > 0.0 && r.rtt_us.min <= r.rtt_us.p50, "{r:?}");
        assert!(
            r.rtt_us.p50 <= r.rtt_us.p99 && r.rtt_us.p99 <= r.rtt_us.max,
            "{r:?}"
        );
        assert!((r.one_way_us - r.rtt_us.p50 / 2.0).abs() < 0.01, "{r:?}");
        assert_eq!(r.stream.messages, 16);
        assert_eq!(r.stream.bytes, 16 * r.bytes);
        assert!(r.stream.gbs.is_some_and(|g| g > 0.0), "{r:?}");
    }
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn list_shows_the_tcp_provider_and_no_efa_devices_here() {
    if !libfabric_present() {
        return;
    }
    let out = netcheck()
        .args(["fabric", "--list", "--format", "json"])
        .assert()
        .success();
    let listing: Listing = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(listing.schema, "netcheck.fabric.providers.v1");
    assert!(listing.libfabric.path.contains("libfabric"), "{listing:?}");
    assert!(
        listing.libfabric.version.starts_with(['1', '2']),
        "{listing:?}"
    );
    let tcp_rdm = listing
        .entries
        .iter()
        .find(|e| e.provider == "tcp;ofi_rxm" && e.endpoint_type == "FI_EP_RDM")
        .expect("tcp;ofi_rxm RDM entry");
    assert!(!tcp_rdm.fabric.is_empty() && !tcp_rdm.domain.is_empty());
    // This test machine has no EFA device (a node that has one would list it here).
    if listing.entries.iter().all(|e| e.provider != "efa") {
        assert!(listing.efa.devices.is_empty());
        assert_eq!(listing.efa.rdm_entries, 0);
    }

    let text = netcheck()
        .args(["fabric", "--list", "--provider", "tcp"])
        .assert()
        .success();
    let text = stdout_text(&text);
    assert!(
        text.contains("tcp;ofi_rxm") && text.contains("RDM"),
        "{text}"
    );
    assert!(!text.contains("shm"), "the provider filter applies: {text}");
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn local_tcp_ping_pong_measures_latency_and_bandwidth_between_two_processes() {
    if !libfabric_present() {
        return;
    }
    let out = netcheck()
        .args(["fabric", "--local", "--provider", "tcp", "--format", "json"])
        .args(PLAN)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    let report: Report = serde_json::from_slice(&out.get_output().stdout).unwrap();
    check_report(&report, "local");
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn server_and_connect_measure_across_a_tcp_rendezvous_with_a_token() {
    if !libfabric_present() {
        return;
    }
    let (mut server, addr) = spawn_server(&["--provider", "tcp"], Some("t0ken"));

    let out = netcheck()
        .args([
            "fabric",
            "--connect",
            &addr,
            "--provider",
            "tcp",
            "--token",
            "t0ken",
            "--format",
            "json",
        ])
        .args(PLAN)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    let report: Report = serde_json::from_slice(&out.get_output().stdout).unwrap();
    check_report(&report, "remote");
    assert!(
        server.wait().unwrap().success(),
        "the server exits 0 after one session"
    );
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn a_wrong_token_is_refused_on_both_sides() {
    if !libfabric_present() {
        return;
    }
    let (mut server, addr) = spawn_server(&["--token", "right"], None);
    netcheck()
        .args([
            "fabric",
            "--connect",
            &addr,
            "--provider",
            "tcp",
            "--token",
            "wrong",
            "--sizes",
            "8",
        ])
        .env_remove("NETCHECK_FABRIC_TOKEN")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("wrong or missing token"));
    assert_eq!(server.wait().unwrap().code(), Some(2));
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn the_chosen_domain_is_the_domain_tested() {
    if !libfabric_present() {
        return;
    }
    let out = netcheck()
        .args(["fabric", "--local", "--provider", "tcp", "--domain", "lo"])
        .args(["--format", "json"])
        .args(SHORT_PLAN)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    let report: Report = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(report.local.endpoint.domain, "lo", "{report:?}");
    assert_eq!(report.peer.endpoint.domain, "lo", "{report:?}");
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn list_with_a_domain_lists_only_that_domain() {
    if !libfabric_present() {
        return;
    }
    let out = netcheck()
        .args(["fabric", "--list", "--domain", "lo", "--format", "json"])
        .assert()
        .success();
    let listing: Listing = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(!listing.entries.is_empty());
    assert!(
        listing.entries.iter().all(|e| e.domain == "lo"),
        "{listing:?}"
    );
    netcheck()
        .args(["fabric", "--list", "--domain", "bogus"])
        .assert()
        .code(3)
        .stdout("")
        .stderr(predicates::str::contains("no domain `bogus`"));
}

/// A domain or provider that is not there is missing environment (exit 3), listed or tested:
/// a node-validation script must not pass on a host without it. The error names it, and what
/// there is instead or where to look.
#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn a_domain_or_provider_that_is_not_there_is_missing_environment() {
    if !libfabric_present() {
        return;
    }
    let bogus_domain = [
        &["--local", "--provider", "tcp", "--domain", "bogus0"][..],
        SHORT_PLAN,
    ]
    .concat();
    let cases: [(&[&str], &[&str]); 3] = [
        (&bogus_domain, &["no domain `bogus0`", "lo"]),
        (
            &["--local", "--provider", "no-such-provider"],
            &["no RDM endpoint", "fabric --list"],
        ),
        (
            &["--list", "--provider", "nosuchprov"],
            &["no provider `nosuchprov`", "tcp"],
        ),
    ];
    for (args, says) in cases {
        let out = netcheck()
            .arg("fabric")
            .args(args)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        for said in says {
            assert!(
                stderr.contains(said),
                "{args:?} should say {said:?}: {stderr}"
            );
        }
    }
}

#[test]
fn an_unloadable_libfabric_is_missing_environment_with_what_to_do() {
    netcheck()
        .args(["fabric", "--list"])
        .env("NETCHECK_LIBFABRIC", "/nonexistent/libfabric.so.1")
        .assert()
        .code(3)
        .stderr(predicates::str::contains("cannot load libfabric"))
        .stderr(predicates::str::contains("hint:"));
}

#[test]
fn out_of_bounds_plans_are_usage_errors() {
    for args in [
        &["--sizes", "128M"][..],
        &["--iters", "0"],
        &["--window", "5000"],
        &["--sizes", "8", "--timeout", "0s"],
    ] {
        netcheck()
            .args(["fabric", "--local"])
            .args(args)
            .assert()
            .code(2);
    }
}

/// Starts `fabric --server --bind 127.0.0.1:0 <args>` (the token in the environment, or none)
/// and waits until it listens; the server and its address.
fn spawn_server(args: &[&str], token: Option<&str>) -> (std::process::Child, String) {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("netcheck"));
    cmd.args(["fabric", "--server", "--bind", "127.0.0.1:0"])
        .args(args);
    match token {
        Some(token) => cmd.env("NETCHECK_FABRIC_TOKEN", token),
        None => cmd.env_remove("NETCHECK_FABRIC_TOKEN"),
    };
    // SIGINT and SIGTERM as a terminal gives them: a test run started in the background by a
    // non-interactive shell has SIGINT ignored, and netcheck keeps an ignored signal ignored
    // (`commands::fabric::exit_on_signals`), so the signal tests would wait in vain.
    // SAFETY: `signal` is async-signal-safe, as `pre_exec` requires.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut server = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = listening_address(&mut server);
    (server, addr)
}

/// A tcp server that gives up after `timeout` when nobody connects.
fn start_server(timeout: &str) -> std::process::Child {
    spawn_server(&["--provider", "tcp", "--timeout", timeout], None).0
}

/// Waits for a child at most `limit`; `None` when it is still running (then it is killed).
fn wait_at_most(child: &mut std::process::Child, limit: std::time::Duration) -> Option<i32> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn a_server_nobody_connects_to_times_out_with_124() {
    if !libfabric_present() {
        return;
    }
    let start = std::time::Instant::now();
    let mut server = start_server("1s");
    let code = wait_at_most(&mut server, std::time::Duration::from_secs(30));
    assert_eq!(code, Some(124), "after {:?}", start.elapsed());
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn sigint_and_sigterm_end_a_waiting_server_with_130() {
    if !libfabric_present() {
        return;
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let mut server = start_server("10m");
        // SAFETY: signalling our own child.
        assert_eq!(unsafe { libc::kill(server.id() as i32, signal) }, 0);
        let code = wait_at_most(&mut server, std::time::Duration::from_secs(30));
        assert_eq!(code, Some(130), "signal {signal}");
    }
}

/// In CI the fabric tests must run, not show as ignored: libfabric must be installed there.
#[test]
fn ci_has_libfabric() {
    if std::env::var("CI").as_deref() == Ok("true") {
        assert!(libfabric_present());
    }
}
