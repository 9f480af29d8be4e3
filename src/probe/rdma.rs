//! RDMA devices in sysfs (EFA, InfiniBand, RoCE): their ports, whether this process can open
//! them (`/dev/infiniband/uverbsN`), and their error counters. Layout: see `counters.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::check::{Check, HostPaths, read_trimmed};
use super::counters::{self, CounterSnapshot};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RdmaKind {
    Efa,
    Ib,
    Roce,
    Other,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RdmaDevice {
    pub name: String,
    pub kind: RdmaKind,
    pub driver: Option<String>,
    pub ports: Vec<RdmaPort>,
    /// `uverbsN`, from `class/infiniband_verbs/uverbsN/ibdev`.
    pub uverbs: Option<String>,
    /// `/dev/infiniband/<uverbs>` exists: this process (container) can use the device.
    pub device_node: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RdmaPort {
    pub port: u32,
    /// "ACTIVE", "DOWN", ... (the text after `N: ` in `state`).
    pub state: Option<String>,
    pub rate: Option<String>,
    pub link_layer: Option<String>,
}

impl RdmaKind {
    pub fn label(self) -> &'static str {
        match self {
            RdmaKind::Efa => "EFA",
            RdmaKind::Ib => "InfiniBand",
            RdmaKind::Roce => "RoCE",
            RdmaKind::Other => "RDMA",
        }
    }
}

impl RdmaDevice {
    pub fn is_efa(&self) -> bool {
        self.kind == RdmaKind::Efa
    }
}

/// Every RDMA device under `<root>/sys/class/infiniband`.
pub fn scan(paths: &HostPaths) -> Vec<RdmaDevice> {
    let class = paths.sys().join("class/infiniband");
    let uverbs = uverbs_map(paths);
    let Ok(entries) = std::fs::read_dir(&class) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let dir = class.join(&name);
            let driver = counters::driver_of(&dir);
            let mut ports: Vec<RdmaPort> = std::fs::read_dir(dir.join("ports"))
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let port = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                    let p = e.path();
                    Some(RdmaPort {
                        port,
                        state: read_trimmed(&p.join("state"))
                            .map(|s| s.split_once(": ").map_or(s.clone(), |(_, t)| t.to_string())),
                        rate: read_trimmed(&p.join("rate")),
                        link_layer: read_trimmed(&p.join("link_layer")),
                    })
                })
                .collect();
            ports.sort_by_key(|p| p.port);
            let uverbs = uverbs.get(&name).cloned();
            let device_node = uverbs
                .as_ref()
                .is_some_and(|u| paths.dev().join("infiniband").join(u).exists());
            RdmaDevice {
                kind: kind_of(&name, driver.as_deref(), &ports),
                name,
                driver,
                ports,
                uverbs,
                device_node,
            }
        })
        .collect()
}

/// EFA by driver (or by the kernel's `efa_N` name); otherwise the link layer decides.
fn kind_of(name: &str, driver: Option<&str>, ports: &[RdmaPort]) -> RdmaKind {
    if driver == Some("efa") || (driver.is_none() && name.starts_with("efa_")) {
        return RdmaKind::Efa;
    }
    match ports.first().and_then(|p| p.link_layer.as_deref()) {
        Some("InfiniBand") => RdmaKind::Ib,
        Some("Ethernet") => RdmaKind::Roce,
        _ => RdmaKind::Other,
    }
}

/// device name → `uverbsN`.
fn uverbs_map(paths: &HostPaths) -> BTreeMap<String, String> {
    let dir = paths.sys().join("class/infiniband_verbs");
    let mut map = BTreeMap::new();
    for e in std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
    {
        if let Some(dev) = read_trimmed(&e.path().join("ibdev")) {
            map.insert(dev, e.file_name().to_string_lossy().into_owned());
        }
    }
    map
}

/// The `rdma.devices` check. `require_efa`: `--require efa`; `expect_efa`: `--expect-efa N`.
pub fn check_devices(devices: &[RdmaDevice], require_efa: bool, expect_efa: Option<u32>) -> Check {
    const ID: &str = "rdma.devices";
    let efa: Vec<&RdmaDevice> = devices.iter().filter(|d| d.is_efa()).collect();
    let evidence: Vec<String> = devices.iter().map(describe).collect();
    if devices.is_empty() {
        let summary = "no RDMA devices (EFA, InfiniBand, RoCE): NCCL traffic between nodes would use TCP sockets";
        let check = if require_efa || expect_efa.is_some_and(|n| n > 0) {
            Check::fail(ID, summary).absent()
        } else {
            Check::ok(ID, summary)
        };
        return check.with_hint("on AWS, use an EFA-enabled instance type and request vpc.amazonaws.com/efa for the pod");
    }
    let mut problems = Vec::new();
    for d in devices {
        for p in &d.ports {
            if p.state.as_deref() != Some("ACTIVE") {
                problems.push(format!(
                    "{} port {} is {}",
                    d.name,
                    p.port,
                    p.state.as_deref().unwrap_or("in an unknown state")
                ));
            }
        }
        if d.uverbs.is_some() && !d.device_node {
            problems.push(format!(
                "{} has no /dev/infiniband/{} in this container",
                d.name,
                d.uverbs.as_deref().unwrap_or("?")
            ));
        }
    }
    if let Some(n) = expect_efa
        && efa.len() != n as usize
    {
        problems.push(format!("{} EFA device(s), expected {n}", efa.len()));
    }
    if require_efa && efa.is_empty() {
        problems.push("no EFA device".into());
    }
    let counts = format!(
        "{} EFA, {} other RDMA device(s)",
        efa.len(),
        devices.len() - efa.len()
    );
    if problems.is_empty() {
        return Check::ok(ID, format!("{counts}, all ports ACTIVE and usable here"))
            .with_evidence(evidence);
    }
    let no_node = problems.iter().any(|p| p.contains("/dev/infiniband"));
    Check::fail(ID, format!("{counts}: {}", problems.join("; ")))
        .with_evidence(evidence)
        .with_hint(if no_node {
            "the host has the devices but this container cannot open them: request vpc.amazonaws.com/efa (all of the node's EFA devices) in the pod spec"
        } else {
            "a missing or inactive device is a node fault: compare with the instance type's EFA count and check the EFA driver (dmesg | grep efa)"
        })
}

fn describe(d: &RdmaDevice) -> String {
    let ports: Vec<String> = d
        .ports
        .iter()
        .map(|p| {
            format!(
                "port {} {} {}",
                p.port,
                p.state.as_deref().unwrap_or("?"),
                p.rate.as_deref().unwrap_or("")
            )
        })
        .collect();
    format!(
        "{} ({}, driver {}): {}; {}",
        d.name,
        d.kind.label(),
        d.driver.as_deref().unwrap_or("?"),
        ports.join(", ").trim_end(),
        match (&d.uverbs, d.device_node) {
            (Some(u), true) => format!("/dev/infiniband/{u} present"),
            (Some(u), false) => format!("/dev/infiniband/{u} MISSING"),
            (None, _) => "no uverbs device".into(),
        }
    )
}

/// The `rdma.counters` check: traffic so far and error counters (since the driver loaded).
pub fn check_counters(snapshot: &CounterSnapshot) -> Option<Check> {
    const ID: &str = "rdma.counters";
    if snapshot.devices.is_empty() {
        return None;
    }
    let mut evidence = Vec::new();
    let mut errors = Vec::new();
    for d in &snapshot.devices {
        for (name, v) in &d.device_counters {
            if name.ends_with("_err") && *v > 0 {
                errors.push(format!("{} {name}={v}", d.device));
            }
        }
        for p in &d.ports {
            let t = p.traffic();
            let show = |v: Option<u64>| v.map_or("-".into(), crate::config::format_bytes);
            evidence.push(format!(
                "{} port {}: tx {} rx {} rdma_read {} rdma_write {}",
                d.device,
                p.port,
                show(t.tx_bytes),
                show(t.rx_bytes),
                show(t.rdma_read_bytes),
                show(t.rdma_write_bytes)
            ));
            for (name, v) in &p.hw {
                if name.ends_with("_err") && *v > 0 {
                    errors.push(format!("{} port {} {name}={v}", d.device, p.port));
                }
            }
        }
    }
    let check = if errors.is_empty() {
        Check::ok(ID, "hardware counters readable; no error counters set")
    } else {
        Check::warn(ID, format!("error counters are non-zero: {}", errors.join(", ")))
            .with_hint("these count since the driver loaded; `netcheck run` records the change during a run to tell old errors from new ones")
    };
    Some(check.with_evidence(evidence))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::check::Status;

    fn fixture() -> HostPaths {
        HostPaths::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/efa-node"),
        )
    }

    #[test]
    fn the_fixture_node_has_two_active_efa_devices_with_device_nodes() {
        let devices = scan(&fixture());
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[0].name, "rdmap16s27");
        assert_eq!(devices[0].kind, RdmaKind::Efa);
        assert_eq!(devices[0].driver.as_deref(), Some("efa"));
        assert_eq!(devices[0].uverbs.as_deref(), Some("uverbs0"));
        assert!(devices[0].device_node);
        assert_eq!(devices[0].ports[0].state.as_deref(), Some("ACTIVE"));
        assert_eq!(
            devices[0].ports[0].rate.as_deref(),
            Some("100 Gb/sec (4X EDR)")
        );
        let c = check_devices(&devices, true, Some(2));
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert_eq!(
            check_devices(&devices, false, Some(32)).status,
            Status::Fail
        );
    }

    #[test]
    fn a_container_without_the_device_nodes_fails_with_the_pod_spec_hint() {
        let mut devices = scan(&fixture());
        devices[1].device_node = false;
        let c = check_devices(&devices, false, None);
        assert_eq!(c.status, Status::Fail);
        assert!(c.summary.contains("no /dev/infiniband/uverbs1"), "{c:?}");
        assert!(c.hint.unwrap().contains("vpc.amazonaws.com/efa"));
    }

    #[test]
    fn a_down_port_fails() {
        let mut devices = scan(&fixture());
        devices[0].ports[0].state = Some("DOWN".into());
        let c = check_devices(&devices, false, None);
        assert_eq!(c.status, Status::Fail);
        assert!(c.summary.contains("rdmap16s27 port 1 is DOWN"));
    }

    #[test]
    fn no_devices_is_fine_unless_efa_is_required() {
        assert_eq!(check_devices(&[], false, None).status, Status::Ok);
        assert_eq!(check_devices(&[], true, None).status, Status::Fail);
    }

    #[test]
    fn non_zero_error_counters_warn() {
        let mut snap = counters::snapshot(&fixture().sys()).unwrap();
        assert_eq!(check_counters(&snap).unwrap().status, Status::Ok);
        snap.devices[0].ports[0]
            .hw
            .insert("rdma_read_wr_err".into(), 3);
        let c = check_counters(&snap).unwrap();
        assert_eq!(c.status, Status::Warn);
        assert!(c.summary.contains("rdmap16s27 port 1 rdma_read_wr_err=3"));
        assert!(check_counters(&CounterSnapshot::default()).is_none());
    }
}
