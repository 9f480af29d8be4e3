//! What the NVIDIA driver stack needs beside the GPUs, read from procfs, sysfs and the kernel
//! log (no NVML, so it works in a container without the driver libraries):
//!
//! - GPUDirect RDMA: the NIC reads and writes GPU memory directly when `nvidia-peermem` (or the
//!   older `nv_peer_mem`) is loaded, or through dma-buf with the NVIDIA open kernel modules on
//!   Linux ≥ 5.12. Without either, NCCL stages every network transfer through host memory.
//! - The fabric manager on NVSwitch hosts (HGX H100/H200/B200): without `nv-fabricmanager`
//!   running, CUDA fails to initialise ("system not yet initialized", error 802).
//! - Xid errors in the kernel log (`NVRM: Xid (PCI:0000:53:00): 79, ...`): a GPU that fell off
//!   the bus, NVLink errors, ECC errors (Xid 48, 63, 64, 92, 94, 95).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use super::check::{Check, HostPaths, read_trimmed};

/// `peer memory` kernel modules that give GPUDirect RDMA.
const PEERMEM_MODULES: &[&str] = &["nvidia_peermem", "nv_peer_mem"];

/// The loaded peer-memory module, from `/proc/modules` or `/sys/module`.
fn peermem_module(paths: &HostPaths) -> Option<&'static str> {
    let modules = std::fs::read_to_string(paths.proc().join("modules")).unwrap_or_default();
    PEERMEM_MODULES.iter().copied().find(|m| {
        modules
            .lines()
            .any(|l| l.split_whitespace().next() == Some(*m))
            || paths.sys().join("module").join(m).is_dir()
    })
}

/// `5.15.0-1048-aws` → (5, 15).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The `gpu.gdr` check. `gpus`: NVIDIA GPUs seen; `rdma_devices`: EFA/IB/RoCE devices.
pub fn check_gdr(paths: &HostPaths, gpus: usize, rdma_devices: usize) -> Check {
    const ID: &str = "gpu.gdr";
    if gpus == 0 || rdma_devices == 0 {
        return Check::ok(
            ID,
            format!(
                "GPUDirect RDMA not applicable: {gpus} NVIDIA GPU(s), {rdma_devices} RDMA device(s)"
            ),
        );
    }
    if let Some(m) = peermem_module(paths) {
        return Check::ok(
            ID,
            format!("GPUDirect RDMA: the {m} kernel module is loaded"),
        )
        .with_evidence([format!("{m} in {}", paths.proc().join("modules").display())]);
    }
    let driver = read_trimmed(&paths.proc().join("driver/nvidia/version")).unwrap_or_default();
    let open = driver.contains("Open Kernel Module");
    let release = read_trimmed(&paths.proc().join("sys/kernel/osrelease"));
    let kernel_ok = release
        .as_deref()
        .and_then(kernel_version)
        .is_some_and(|v| v >= (5, 12));
    let evidence = vec![
        format!("no {} loaded", PEERMEM_MODULES.join(" or ")),
        format!(
            "NVIDIA kernel module: {}",
            driver
                .lines()
                .next()
                .unwrap_or("not found in /proc/driver/nvidia/version")
        ),
        format!("kernel {}", release.as_deref().unwrap_or("?")),
    ];
    if open && kernel_ok {
        return Check::ok(
            ID,
            "GPUDirect RDMA through dma-buf (NVIDIA open kernel module, kernel >= 5.12); nvidia-peermem is not needed",
        )
        .with_evidence(evidence);
    }
    Check::warn(
        ID,
        format!("no GPUDirect RDMA path for {rdma_devices} RDMA device(s): neither nvidia-peermem nor dma-buf (open kernel module on kernel >= 5.12); NCCL will stage network transfers through host memory"),
    )
    .with_evidence(evidence)
    .with_hint("`modprobe nvidia-peermem` (it ships with the driver), or install the NVIDIA open kernel modules for dma-buf; NCCL's log then shows `GDRDMA` on NET channels")
}

/// Processes whose `comm` is `name`, as (pid, comm), from `/proc/<pid>/comm`.
fn processes_named(paths: &HostPaths, name: &str) -> Vec<u32> {
    std::fs::read_dir(paths.proc())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            (read_trimmed(&e.path().join("comm"))? == name).then_some(pid)
        })
        .collect()
}

/// The `gpu.fabric_manager` check. `nvswitches`: NVSwitch devices on the PCI bus.
pub fn check_fabric_manager(paths: &HostPaths, nvswitches: usize) -> Check {
    const ID: &str = "gpu.fabric_manager";
    if nvswitches == 0 {
        return Check::ok(ID, "no NVSwitch on the PCI bus: no fabric manager needed");
    }
    let pids = processes_named(paths, "nv-fabricmanager");
    if let Some(pid) = pids.first() {
        return Check::ok(
            ID,
            format!("{nvswitches} NVSwitch(es); nv-fabricmanager is running (pid {pid})"),
        );
    }
    Check::warn(
        ID,
        format!("{nvswitches} NVSwitch(es) but no nv-fabricmanager process is visible: without it CUDA fails to initialise (error 802, system not yet initialized)"),
    )
    .with_evidence([format!("no process named nv-fabricmanager under {}", paths.proc().display())])
    .with_hint("start it on the host (`systemctl start nvidia-fabricmanager`, same version as the driver); inside a container the host's processes are not visible, so check there")
}

/// One Xid from the kernel log.
#[derive(Debug, Clone, PartialEq)]
pub struct Xid {
    pub code: u32,
    /// `PCI:0000:53:00`.
    pub device: String,
    /// Seconds since boot, when the record carries it.
    pub at_s: Option<f64>,
    pub line: String,
}

/// Xids that mean the GPU, its memory or its links are damaged (the node needs attention).
const FATAL: &[u32] = &[48, 61, 62, 64, 74, 79, 95, 119, 120, 140];
/// Xids about GPU memory (ECC): double-bit error, page retirement / row remapping events and
/// failures, high single-bit rate, contained and uncontained errors, unrecovered ECC.
const ECC: &[u32] = &[48, 63, 64, 92, 94, 95, 140];

fn xid_meaning(code: u32) -> &'static str {
    match code {
        48 => "double-bit ECC error",
        61 | 62 => "internal micro-controller error",
        63 => "ECC page retirement or row remapping event",
        64 => "ECC page retirement or row remapping failure",
        74 => "NVLink error",
        79 => "GPU has fallen off the bus",
        92 => "high single-bit ECC error rate",
        94 => "contained ECC error",
        95 => "uncontained ECC error",
        119 | 120 => "GSP error",
        140 => "unrecovered ECC error",
        13 | 31 | 43 | 45 => "application fault (bad memory access, stopped process)",
        _ => "see NVIDIA's Xid catalogue",
    }
}

/// Xids in kernel log text: `/dev/kmsg` records (`6,1234,5678901234,-;NVRM: Xid (PCI:...): 79,
/// ...`, time in µs since boot) or `dmesg` lines (`[ 5678.901234] NVRM: Xid ...`).
pub fn parse_xids(text: &str) -> Vec<Xid> {
    text.lines()
        .filter_map(|line| {
            let at = line.find("NVRM: Xid")?;
            let rest = &line[at + "NVRM: Xid".len()..];
            let (device, after) = rest.trim_start().strip_prefix('(')?.split_once(')')?;
            let code: u32 = after
                .trim_start_matches(':')
                .trim()
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()?;
            let head = &line[..at];
            let at_s = if let Some((meta, _)) = head.split_once(';') {
                meta.split(',')
                    .nth(2)
                    .and_then(|t| t.parse::<f64>().ok())
                    .map(|us| us / 1e6)
            } else {
                head.trim()
                    .strip_prefix('[')
                    .and_then(|h| h.split(']').next())
                    .and_then(|t| t.trim().parse().ok())
            };
            Some(Xid {
                code,
                device: device.to_string(),
                at_s,
                line: line[at..].trim().to_string(),
            })
        })
        .collect()
}

/// The kernel log: `/dev/kmsg` read without blocking (one record per read), or a regular file
/// standing in for it in a fake tree.
fn read_kernel_log(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let mut text = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    for _ in 0..1_000_000 {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                text.extend_from_slice(&buf[..n]);
                if !text.ends_with(b"\n") {
                    text.push(b'\n');
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            // A record overwritten while reading: go on with the next.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// How far back an Xid counts as recent.
pub const RECENT_S: f64 = 24.0 * 3600.0;

/// The `gpu.xid` and `gpu.ecc` checks over the kernel log's Xids of the last 24 hours.
pub fn check_xids(paths: &HostPaths, gpus: usize) -> Vec<Check> {
    let kmsg = paths.dev().join("kmsg");
    let log = match read_kernel_log(&kmsg) {
        Ok(text) => text,
        Err(e) if gpus == 0 => {
            return vec![Check::ok(
                "gpu.xid",
                format!(
                    "no NVIDIA GPU; kernel log not read ({}: {e})",
                    kmsg.display()
                ),
            )];
        }
        Err(e) => {
            return vec![
                Check::warn(
                    "gpu.xid",
                    format!("cannot read the kernel log for Xid and ECC errors ({}: {e})", kmsg.display()),
                )
                .with_hint("run doctor as root (or with CAP_SYSLOG), or look yourself: `dmesg | grep -i xid`"),
            ];
        }
    };
    let uptime: Option<f64> = read_trimmed(&paths.proc().join("uptime"))
        .and_then(|u| u.split_whitespace().next()?.parse().ok());
    let recent: Vec<Xid> = parse_xids(&log)
        .into_iter()
        .filter(|x| match (x.at_s, uptime) {
            (Some(at), Some(up)) => up - at <= RECENT_S,
            _ => true,
        })
        .collect();
    let describe = |xs: &[&Xid]| -> Vec<String> {
        let mut by: BTreeMap<(u32, &str), (usize, &str)> = BTreeMap::new();
        for x in xs {
            let e = by
                .entry((x.code, x.device.as_str()))
                .or_insert((0, &x.line));
            e.0 += 1;
        }
        by.into_iter()
            .map(|((code, dev), (n, line))| {
                format!("Xid {code} ({}) on {dev}, {n}×: {line}", xid_meaning(code))
            })
            .collect()
    };
    let window = if uptime.is_some() {
        "in the last 24 h"
    } else {
        "since boot"
    };
    let mut checks = vec![];
    let all: Vec<&Xid> = recent.iter().collect();
    let fatal: Vec<&Xid> = recent.iter().filter(|x| FATAL.contains(&x.code)).collect();
    checks.push(if all.is_empty() {
        Check::ok("gpu.xid", format!("no NVIDIA Xid error in the kernel log {window}"))
    } else if !fatal.is_empty() {
        Check::fail(
            "gpu.xid",
            format!("{} Xid error(s) {window}, {} of them hardware faults (GPU, memory or NVLink)", all.len(), fatal.len()),
        )
        .with_evidence(describe(&all))
        .with_hint("drain the node and reset or replace the GPU (`nvidia-smi -q` shows its state); NVIDIA's Xid catalogue says what each code needs")
    } else {
        Check::warn("gpu.xid", format!("{} Xid error(s) {window} (application-level codes)", all.len()))
            .with_evidence(describe(&all))
            .with_hint("these usually follow a crashing application; repeated ones on one GPU deserve a look with `nvidia-smi -q`")
    });
    let ecc: Vec<&Xid> = recent.iter().filter(|x| ECC.contains(&x.code)).collect();
    checks.push(if ecc.is_empty() {
        Check::ok("gpu.ecc", format!("no ECC Xid (48, 63, 64, 92, 94, 95, 140) {window}"))
    } else if ecc.iter().any(|x| FATAL.contains(&x.code)) {
        Check::fail("gpu.ecc", format!("{} uncorrectable or failed-remap ECC event(s) {window}", ecc.len()))
            .with_evidence(describe(&ecc))
            .with_hint("the GPU's memory lost data: reset the GPU (row remapping takes effect on reset), and replace it if the errors return (`nvidia-smi -q -d ECC,ROW_REMAPPER`)")
    } else {
        Check::warn("gpu.ecc", format!("{} corrected or contained ECC event(s) {window}", ecc.len()))
            .with_evidence(describe(&ecc))
            .with_hint("schedule a GPU reset so pending row remaps apply; watch `nvidia-smi -q -d ECC,ROW_REMAPPER`")
    });
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Status;

    #[test]
    fn xids_are_read_from_kmsg_records_and_dmesg_lines() {
        let text = "\
6,1001,5000000,-;NVRM: Xid (PCI:0000:53:00): 79, pid=1234, name=python, GPU has fallen off the bus.
4,1002,6000000,-;eth0: link up
[ 7.250000] NVRM: Xid (PCI:0000:64:00): 13, pid=99, Graphics SM Warp Exception
6,1003,8000000,-;NVRM: Xid (PCI:0000:53:00): 94, pid=1234, Contained: SM (0x1). RST: No
";
        let x = parse_xids(text);
        assert_eq!(x.len(), 3, "{x:?}");
        assert_eq!(
            (x[0].code, x[0].device.as_str(), x[0].at_s),
            (79, "PCI:0000:53:00", Some(5.0))
        );
        assert_eq!((x[1].code, x[1].at_s), (13, Some(7.25)));
        assert_eq!(x[2].code, 94);
        assert!(parse_xids("NVRM: loading NVIDIA UNIX x86_64 Kernel Module").is_empty());
    }

    fn tree(kmsg: Option<&str>, uptime: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("dev")).unwrap();
        std::fs::create_dir_all(root.path().join("proc")).unwrap();
        if let Some(k) = kmsg {
            std::fs::write(root.path().join("dev/kmsg"), k).unwrap();
        }
        std::fs::write(root.path().join("proc/uptime"), format!("{uptime} 100.0\n")).unwrap();
        root
    }

    #[test]
    fn recent_hardware_xids_fail_old_ones_are_forgotten() {
        // Uptime 2 days; one Xid 79 a minute ago, one Xid 48 two days ago.
        let up = 2.0 * 86400.0;
        let log = format!(
            "6,1,{},-;NVRM: Xid (PCI:0000:53:00): 48, pid=1, DBE (double bit error) ECC error\n\
             6,2,{},-;NVRM: Xid (PCI:0000:53:00): 79, pid=1, GPU has fallen off the bus.\n",
            1_000_000u64,
            ((up - 60.0) * 1e6) as u64
        );
        let root = tree(Some(&log), &up.to_string());
        let checks = check_xids(&HostPaths::new(root.path()), 8);
        assert_eq!(checks[0].id, "gpu.xid");
        assert_eq!(checks[0].status, Status::Fail, "{checks:?}");
        assert!(
            checks[0].evidence[0].contains("Xid 79 (GPU has fallen off the bus)"),
            "{checks:?}"
        );
        assert_eq!(
            checks[0].evidence.len(),
            1,
            "the old Xid 48 is not recent: {checks:?}"
        );
        assert_eq!(checks[1].id, "gpu.ecc");
        assert_eq!(checks[1].status, Status::Ok, "{checks:?}");
    }

    #[test]
    fn ecc_xids_are_their_own_check() {
        let log =
            "6,1,100000000,-;NVRM: Xid (PCI:0000:53:00): 94, pid=1, Contained: SM (0x1). RST: No\n";
        let root = tree(Some(log), "200.0");
        let checks = check_xids(&HostPaths::new(root.path()), 8);
        assert_eq!(checks[0].status, Status::Warn, "{checks:?}");
        assert_eq!(checks[1].status, Status::Warn, "{checks:?}");
        assert!(
            checks[1].evidence[0].contains("contained ECC error"),
            "{checks:?}"
        );
        let log =
            "6,1,100000000,-;NVRM: Xid (PCI:0000:53:00): 95, pid=1, Uncontained: FBHUB. RST: Yes\n";
        let root = tree(Some(log), "200.0");
        let checks = check_xids(&HostPaths::new(root.path()), 8);
        assert_eq!(checks[1].status, Status::Fail, "{checks:?}");
        let root = tree(Some("6,1,5,-;nothing here\n"), "200.0");
        let checks = check_xids(&HostPaths::new(root.path()), 8);
        assert!(checks.iter().all(|c| c.status == Status::Ok), "{checks:?}");
    }

    #[test]
    fn an_unreadable_kernel_log_warns_only_where_there_are_gpus() {
        let root = tree(None, "200.0");
        let paths = HostPaths::new(root.path());
        assert_eq!(check_xids(&paths, 8)[0].status, Status::Warn);
        assert_eq!(check_xids(&paths, 0)[0].status, Status::Ok);
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn gdr_needs_peermem_or_dma_buf() {
        let root = tempfile::tempdir().unwrap();
        let paths = HostPaths::new(root.path());
        assert_eq!(
            check_gdr(&paths, 0, 4).status,
            Status::Ok,
            "no GPU: not applicable"
        );
        write(
            root.path(),
            "proc/modules",
            "nvidia 1 0 - Live 0x0\nefa 1 0 - Live 0x0\n",
        );
        write(
            root.path(),
            "proc/sys/kernel/osrelease",
            "6.1.0-27-cloud-amd64\n",
        );
        write(
            root.path(),
            "proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 UTC 2025\n",
        );
        let c = check_gdr(&paths, 8, 32);
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.hint.as_deref().unwrap().contains("nvidia-peermem"));
        write(
            root.path(),
            "proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build\n",
        );
        let c = check_gdr(&paths, 8, 32);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.summary.contains("dma-buf"), "{c:?}");
        write(root.path(), "proc/sys/kernel/osrelease", "5.10.0-1\n");
        assert_eq!(
            check_gdr(&paths, 8, 32).status,
            Status::Warn,
            "dma-buf needs 5.12"
        );
        write(
            root.path(),
            "proc/modules",
            "nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 1 nvidia_peermem, Live 0x0\n",
        );
        let c = check_gdr(&paths, 8, 32);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.summary.contains("nvidia_peermem"), "{c:?}");
    }

    #[test]
    fn nvswitch_hosts_need_the_fabric_manager() {
        let root = tempfile::tempdir().unwrap();
        let paths = HostPaths::new(root.path());
        write(root.path(), "proc/1/comm", "systemd\n");
        assert_eq!(check_fabric_manager(&paths, 0).status, Status::Ok);
        let c = check_fabric_manager(&paths, 4);
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.summary.contains("802"), "{c:?}");
        write(root.path(), "proc/4242/comm", "nv-fabricmanager\n");
        let c = check_fabric_manager(&paths, 4);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.summary.contains("pid 4242"), "{c:?}");
    }
}
