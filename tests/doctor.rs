//! `netcheck doctor` on this machine (whatever it has: no GPU and no EFA in CI) and on the fake
//! EFA host under tests/fixtures/sysfs; the RDMA counter snapshots and deltas.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::util::{fixture, netcheck};

// The test's own view of the doctor JSON contract.
#[derive(Debug, Deserialize)]
struct Report {
    schema: String,
    host: String,
    verdict: String,
    checks: Vec<Check>,
    facts: Facts,
}

#[derive(Debug, Deserialize)]
struct Check {
    id: String,
    status: String,
    summary: String,
    evidence: Vec<String>,
    hint: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Facts {
    gpus: Gpus,
    rdma_devices: Vec<serde_json::Value>,
    environment: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct Gpus {
    libcuda: bool,
    devices: Vec<serde_json::Value>,
}

impl Report {
    fn check(&self, id: &str) -> &Check {
        self.checks
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no check {id} in {:#?}", self.checks))
    }
}

/// The binary with only PATH from the developer's environment (doctor reads the environment).
fn doctor() -> assert_cmd::Command {
    let mut cmd = netcheck();
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .arg("doctor");
    cmd
}

fn run_json(cmd: &mut assert_cmd::Command) -> (Report, i32) {
    let out = cmd.args(["--format", "json"]).output().unwrap();
    let code = out.status.code().expect("exited normally, no signal");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let report: Report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (report, code)
}

#[test]
fn doctor_reports_this_machine_and_exits_by_its_verdict() {
    let (report, code) = run_json(&mut doctor());
    assert_eq!(report.schema, "netcheck.doctor.v1");
    assert!(!report.host.is_empty());
    for id in [
        "gpu.driver",
        "cuda.compat",
        "nccl.libraries",
        "nccl.net_plugin",
        "libfabric",
        "rdma.devices",
        "host.shm",
        "host.memlock",
        "host.hugepages",
    ] {
        report.check(id);
    }
    let any_fail = report.checks.iter().any(|c| c.status == "fail");
    assert_eq!(
        code,
        if any_fail { 1 } else { 0 },
        "exit code follows the checks: {:#?}",
        report.checks
    );
    assert_eq!(report.verdict == "fail", any_fail);
    for c in &report.checks {
        assert!(["ok", "warn", "fail"].contains(&c.status.as_str()), "{c:?}");
        if c.status != "ok" {
            assert!(c.hint.is_some(), "every problem says what to do: {c:?}");
        }
    }
    // No GPU (CI, this development machine) is a clean warning, not a crash or a failure.
    if !report.facts.gpus.libcuda {
        let gpu = report.check("gpu.driver");
        assert_eq!(gpu.status, "warn");
        assert!(gpu.summary.contains("no CUDA driver"), "{gpu:?}");
        assert!(report.facts.gpus.devices.is_empty());
    }
}

#[test]
fn required_gpus_that_are_missing_fail_the_doctor() {
    let (report, _) = run_json(&mut doctor());
    if report.facts.gpus.libcuda {
        return; // a GPU machine: nothing missing to require
    }
    // Required and not there at all: a missing environment (exit 3), as `check` says it.
    let (report, code) = run_json(doctor().args(["--require", "gpu,efa"]));
    assert_eq!(report.check("gpu.driver").status, "fail");
    assert_eq!(code, 3);
    doctor()
        .args(["--require", "gpu"])
        .assert()
        .code(3)
        .stderr(predicates::str::contains("gpu.driver is required"));
}

#[test]
fn text_output_has_one_line_per_check_and_a_verdict() {
    let out = doctor().output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("netcheck doctor: "), "{text}");
    assert!(text.lines().any(|l| l.contains("gpu.driver")), "{text}");
    assert!(
        text.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("verdict: "),
        "{text}"
    );
}

fn efa_node() -> PathBuf {
    fixture("sysfs/efa-node")
}

#[test]
fn the_fake_efa_node_shows_its_devices_counters_and_huge_pages() {
    let root = efa_node();
    let (report, _) =
        run_json(doctor().args(["--root", root.to_str().unwrap(), "--expect-efa", "2"]));
    let rdma = report.check("rdma.devices");
    assert_eq!(rdma.status, "ok", "{rdma:?}");
    assert!(rdma.summary.starts_with("2 EFA"), "{rdma:?}");
    assert!(
        rdma.evidence
            .iter()
            .any(|e| e.contains("rdmap16s27") && e.contains("uverbs0 present")),
        "{rdma:?}"
    );
    assert_eq!(report.facts.rdma_devices.len(), 2);
    let counters = report.check("rdma.counters");
    assert_eq!(counters.status, "ok");
    assert!(
        counters
            .evidence
            .iter()
            .any(|e| e.starts_with("rdmap16s27 port 1: tx 1M rx 2M rdma_read 64K")),
        "{counters:?}"
    );
    assert_eq!(report.check("host.hugepages").status, "ok");
    assert_eq!(
        report.check("host.memlock").status,
        "ok",
        "the fixture process has CAP_IPC_LOCK"
    );
    // An EFA node needs the plugin; this test machine has none (if it had, it would load it).
    let plugin = report.check("nccl.net_plugin");
    if plugin.status == "fail" {
        assert!(plugin.summary.contains("falls back to TCP"), "{plugin:?}");
    }

    let (report, code) =
        run_json(doctor().args(["--root", root.to_str().unwrap(), "--expect-efa", "32"]));
    assert_eq!(report.check("rdma.devices").status, "fail");
    assert_eq!(code, 1);
}

#[test]
fn the_environment_is_linted_against_the_hardware() {
    let root = efa_node();
    let (report, code) = run_json(
        doctor()
            .args(["--root", root.to_str().unwrap()])
            .env("FI_PROVIDER", "tcp")
            .env("NCCL_SOCKET_IFNAME", "ib")
            .env("NCCL_PROTO", "simple")
            .env("RDMAV_FORK_SAFE", "1")
            .env("FI_EFA_USE_DEVICE_RDMA", "1"),
    );
    assert_eq!(code, 1);
    assert_eq!(report.verdict, "fail");
    assert_eq!(report.check("env.FI_PROVIDER").status, "fail");
    let ifname = report.check("env.NCCL_SOCKET_IFNAME");
    assert_eq!(ifname.status, "fail");
    assert!(
        ifname
            .evidence
            .iter()
            .any(|e| e.contains("docker0, eth0, lo")),
        "interfaces come from the fake host: {ifname:?}"
    );
    for id in [
        "env.NCCL_PROTO",
        "env.RDMAV_FORK_SAFE",
        "env.FI_EFA_USE_DEVICE_RDMA",
    ] {
        assert_eq!(report.check(id).status, "warn", "{id}");
    }
    assert_eq!(
        report
            .facts
            .environment
            .get("NCCL_PROTO")
            .map(String::as_str),
        Some("simple")
    );
}

#[test]
fn a_root_that_is_not_a_directory_is_a_usage_error() {
    doctor()
        .args(["--root", "/nonexistent/netcheck-root"])
        .assert()
        .code(2);
}

#[test]
fn counter_deltas_prove_which_efa_devices_carried_bytes() {
    use netcheck::probe::counters::snapshot;
    let before = snapshot(&fixture("sysfs/efa-node/sys")).unwrap();
    let after = snapshot(&fixture("sysfs/efa-node-after/sys")).unwrap();
    assert_eq!(before.devices.len(), 2);
    assert_eq!(before.devices[0].driver.as_deref(), Some("efa"));
    assert!(
        !before.devices[0].ports[0].hw.contains_key("lifespan"),
        "lifespan is not a counter"
    );
    assert_eq!(
        before.devices[0].device_counters.get("submitted_cmds"),
        Some(&412)
    );

    let delta = before.delta(&after);
    let busy = &delta.ports[0];
    assert_eq!((busy.device.as_str(), busy.port), ("rdmap16s27", 1));
    assert_eq!(busy.traffic.tx_bytes, Some(8 << 30));
    assert_eq!(busy.traffic.rx_bytes, Some(8 << 30));
    assert_eq!(busy.traffic.rdma_read_bytes, Some((8 << 30) - 4096));
    assert_eq!(
        busy.traffic.rdma_write_bytes, None,
        "Linux 6.1's EFA driver has no write counters"
    );
    assert!(!busy.idle());
    let idle = &delta.ports[1];
    assert_eq!(idle.device, "rdmap32s27");
    assert!(idle.idle(), "the second rail moved nothing");
    assert_eq!(delta.total.tx_bytes, Some(8 << 30));

    // It goes into RunRecord.counters as JSON and comes back unchanged.
    let value = serde_json::to_value(&delta).unwrap();
    assert_eq!(value["ports"][0]["traffic"]["tx_bytes"], 8u64 << 30);
    let back: netcheck::probe::CounterDelta = serde_json::from_value(value).unwrap();
    assert_eq!(back, delta);
}

#[test]
fn netcheck_sysfs_root_and_procfs_root_are_honoured() {
    let root = efa_node();
    let (report, _) = run_json(
        doctor()
            .env("NETCHECK_SYSFS_ROOT", root.join("sys"))
            .env("NETCHECK_PROCFS_ROOT", root.join("proc"))
            .args(["--expect-efa", "2"]),
    );
    let rdma = report.check("rdma.devices");
    assert!(rdma.summary.starts_with("2 EFA"), "{rdma:?}");
    assert_eq!(report.check("host.hugepages").status, "ok");
    doctor()
        .env("NETCHECK_SYSFS_ROOT", "/nonexistent/netcheck-sys")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("NETCHECK_SYSFS_ROOT"));
}

fn write(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn pci(root: &std::path::Path, address: &str, vendor: &str, class: &str, link: (&str, u32, u32)) {
    let d = format!("sys/bus/pci/devices/{address}");
    write(root, &format!("{d}/vendor"), &format!("{vendor}\n"));
    write(root, &format!("{d}/device"), "0x2335\n");
    write(root, &format!("{d}/class"), &format!("{class}\n"));
    write(
        root,
        &format!("{d}/current_link_speed"),
        &format!("{} PCIe\n", link.0),
    );
    write(root, &format!("{d}/max_link_speed"), "32.0 GT/s PCIe\n");
    write(
        root,
        &format!("{d}/current_link_width"),
        &format!("{}\n", link.1),
    );
    write(
        root,
        &format!("{d}/max_link_width"),
        &format!("{}\n", link.2),
    );
}

/// A fake HGX node: 2 GPUs (one trained at x8), 1 NVSwitch without a fabric manager, one EFA
/// device and no peer-memory module, and a GPU that fell off the bus a minute ago.
#[test]
fn gpu_host_checks_read_a_fake_sysfs_and_procfs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    pci(
        root,
        "0000:53:00.0",
        "0x10de",
        "0x030200",
        ("32.0 GT/s", 16, 16),
    );
    pci(
        root,
        "0000:64:00.0",
        "0x10de",
        "0x030200",
        ("32.0 GT/s", 8, 16),
    );
    pci(
        root,
        "0000:07:00.0",
        "0x10de",
        "0x068000",
        ("32.0 GT/s", 2, 2),
    );
    pci(
        root,
        "0000:31:00.0",
        "0x1d0f",
        "0x020000",
        ("32.0 GT/s", 16, 16),
    );
    write(
        root,
        "sys/class/infiniband/rdmap31s0/ports/1/state",
        "4: ACTIVE\n",
    );
    write(
        root,
        "proc/modules",
        "nvidia 1 0 - Live 0x0\nefa 1 0 - Live 0x0\n",
    );
    write(root, "proc/sys/kernel/osrelease", "6.1.0-27-cloud-amd64\n");
    write(
        root,
        "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 UTC 2025\n",
    );
    write(root, "proc/uptime", "3600.00 7000.00\n");
    write(root, "proc/1/comm", "systemd\n");
    write(
        root,
        "dev/kmsg",
        "6,900,3540000000,-;NVRM: Xid (PCI:0000:64:00): 79, pid=4242, name=python, GPU has fallen off the bus.\n",
    );
    let (report, code) = run_json(doctor().arg("--root").arg(root));
    assert_eq!(code, 1);

    let links = report.check("pcie.links");
    assert_eq!(links.status, "fail", "{links:?}");
    assert!(
        links.summary.contains("GPU 0000:64:00.0 x8 of x16"),
        "{links:?}"
    );
    assert!(links.hint.is_some());

    let gdr = report.check("gpu.gdr");
    assert_eq!(gdr.status, "warn", "{gdr:?}");
    assert!(
        gdr.evidence.iter().any(|e| e.contains("no nvidia_peermem")),
        "{gdr:?}"
    );

    let fm = report.check("gpu.fabric_manager");
    assert_eq!(fm.status, "warn", "{fm:?}");
    assert!(fm.summary.contains("1 NVSwitch"), "{fm:?}");

    let xid = report.check("gpu.xid");
    assert_eq!(xid.status, "fail", "{xid:?}");
    assert!(xid.evidence[0].contains("Xid 79"), "{xid:?}");
    assert_eq!(report.check("gpu.ecc").status, "ok");

    // The same node with the fabric manager and nvidia-peermem: those two pass.
    write(root, "proc/777/comm", "nv-fabricmanager\n");
    write(
        root,
        "proc/modules",
        "nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 1 - Live 0x0\n",
    );
    let (report, _) = run_json(doctor().arg("--root").arg(root));
    assert_eq!(report.check("gpu.fabric_manager").status, "ok");
    assert_eq!(report.check("gpu.gdr").status, "ok");
}
