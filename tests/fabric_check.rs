//! `netcheck run --fabric-check PROVIDER` between nodes, on loopback with the real libfabric's
//! tcp provider and no GPU: node 0 serves on the rendezvous port + 1, the others measure.
//! Skipped without libfabric, except under `CI=true` (see tests/fabric.rs).

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use netcheck::launch::fabric_check::{self, Checked, FABRIC_PREFIX, FabricCheck};

use crate::fabric::libfabric_present;
use crate::util::netcheck;

/// A rendezvous address whose port + 1 was free a moment ago (the check listens there).
fn rendezvous() -> String {
    let port = TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{}", port - 1)
}

fn node(rank: u32, nnodes: u32, rendezvous: &str, token: &str) -> FabricCheck {
    FabricCheck {
        provider: "tcp".into(),
        nnodes,
        node_rank: rank,
        rendezvous: rendezvous.into(),
        token: token.into(),
        timeout: Duration::from_secs(60),
    }
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn node_zero_serves_every_other_node_and_each_measures_a_passing_ping_pong() {
    if !libfabric_present() {
        return;
    }
    let rdzv = rendezvous();
    let run = |check: FabricCheck| std::thread::spawn(move || fabric_check::run(&check));
    let server = run(node(0, 3, &rdzv, "t0ken"));
    // Someone else on the port first (an old run, a wrong token): refused, and not counted.
    let stranger = run(node(1, 3, &rdzv, "other")).join().unwrap();
    let err = stranger.unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    assert!(err.to_string().contains("wrong or missing token"), "{err}");
    let drivers = [
        run(node(1, 3, &rdzv, "t0ken")),
        run(node(2, 3, &rdzv, "t0ken")),
    ];

    let plan = fabric_check::plan();
    let mut driver_hosts = vec![];
    for d in drivers {
        let Checked::Measured(report) = d.join().unwrap().unwrap() else {
            panic!("a non-zero node measures");
        };
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.mode, "remote");
        assert!(report.local.endpoint.provider.starts_with("tcp"));
        assert_eq!(
            report.peer.address.as_deref(),
            Some(&*format!(
                "127.0.0.1:{}",
                fabric_check::address(&rdzv).unwrap().1
            ))
        );
        let sizes: Vec<u64> = report.results.iter().map(|r| r.bytes).collect();
        assert_eq!(sizes, plan.sizes);
        for r in &report.results {
            assert!(r.payload_ok, "{r:?}");
            assert_eq!(r.iters, plan.iters);
            assert!(
                r.rtt_us.p50 > 0.0 && r.stream.gbs.is_some_and(|g| g > 0.0),
                "{r:?}"
            );
        }
        driver_hosts.push(report.local.host.clone());
    }
    let Checked::Served(served) = server.join().unwrap().unwrap() else {
        panic!("node 0 serves");
    };
    assert_eq!(
        served.peers.len(),
        2,
        "the stranger does not count: {served:?}"
    );
    assert_eq!(served.plan, plan);
    let record = Checked::Served(served).to_record();
    assert_eq!(record["role"], "responder");
    assert_eq!(record["provider"], "tcp");
    assert_eq!(record["peers"][0]["host"], driver_hosts[0].as_str());
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn run_prints_the_report_line_before_any_gpu_work() {
    if !libfabric_present() {
        return;
    }
    let rdzv = rendezvous();
    let bin = assert_cmd::cargo::cargo_bin("netcheck");
    let out = tempfile::tempdir().unwrap();
    let args = |rank: &str| {
        let mut cmd = Command::new(&bin);
        cmd.args([
            "run",
            "--nnodes",
            "2",
            "--node-rank",
            rank,
            "--rendezvous",
            &rdzv,
        ])
        .args(["--fabric-check", "tcp", "--timeout", "60s", "--out"])
        .arg(out.path().join(rank))
        .env("NETCHECK_RDZV_TOKEN", "0123456789abcdef")
        // No GPU, whatever the machine: the run must stop right after the check (exit 3).
        .env("CUDA_VISIBLE_DEVICES", "")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        cmd
    };
    let node0 = args("0").spawn().unwrap();
    let node1 = args("1").output().unwrap();
    let node0 = node0.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let (err0, err1) = (text(&node0.stderr), text(&node1.stderr));

    let line = text(&node1.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(FABRIC_PREFIX).map(str::to_string))
        .unwrap_or_else(|| panic!("no {FABRIC_PREFIX}line from node 1: {err1}"));
    let report: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(report["schema"], "netcheck.fabric.v1");
    assert_eq!(report["verdict"], "pass");
    assert!(
        err1.contains("# verdict: pass"),
        "the table goes to stderr: {err1}"
    );
    assert!(err0.contains("fabric check (tcp): served"), "{err0}");
    // Node 0 prints no report: only the drivers measure.
    assert!(!text(&node0.stdout).contains(FABRIC_PREFIX));
    for (node, status, err) in [(0, node0.status, &err0), (1, node1.status, &err1)] {
        assert_eq!(
            status.code(),
            Some(3),
            "node {node} stops at the GPU check: {err}"
        );
    }
}

#[test]
#[cfg_attr(
    netcheck_no_libfabric,
    ignore = "libfabric not installed (apt-get install libfabric1)"
)]
fn a_missing_provider_fails_the_node_by_name_with_exit_3() {
    if !libfabric_present() {
        return;
    }
    netcheck()
        .args(["run", "--nnodes", "2", "--node-rank", "1"])
        .args([
            "--rendezvous",
            "127.0.0.1:1",
            "--fabric-check",
            "no-such-provider",
        ])
        .env("NETCHECK_RDZV_TOKEN", "0123456789abcdef")
        .timeout(Duration::from_secs(60))
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "fabric check on node 1 (provider no-such-provider)",
        ));
}

#[test]
fn the_check_needs_several_nodes_and_a_token() {
    netcheck()
        .args(["run", "--fabric-check", "tcp"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--nnodes"))
        .stderr(predicates::str::contains("fabric --local --provider tcp"));
    netcheck()
        .args(["run", "--nnodes", "2", "--node-rank", "1"])
        .args(["--rendezvous", "127.0.0.1:29400", "--fabric-check", "tcp"])
        .env_remove("NETCHECK_RDZV_TOKEN")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("NETCHECK_RDZV_TOKEN"));
}
