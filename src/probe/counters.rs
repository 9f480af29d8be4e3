//! RDMA hardware counters, snapshotted before and after a run so a report can prove that bytes
//! crossed each EFA device (and spot a rail that moved nothing), independent of log verbosity.
//!
//! Layout read (Linux `Documentation/ABI/stable/sysfs-class-infiniband`, and the EFA driver's
//! counter names in `drivers/infiniband/hw/efa/efa_verbs.c`, read in Linux 6.1):
//! - `class/infiniband/<dev>/ports/<port>/hw_counters/<name>`: one decimal number per file
//!   (`"%llu\n"`), plus a `lifespan` file (the refresh interval in ms, not a counter). EFA port
//!   counters: tx_bytes, tx_pkts, rx_bytes, rx_pkts, rx_drops, send_bytes, send_wrs, recv_bytes,
//!   recv_wrs, rdma_read_wrs, rdma_read_bytes, rdma_read_wr_err, rdma_read_resp_bytes; newer
//!   kernels add rdma_write_* counters, used where present.
//! - `class/infiniband/<dev>/hw_counters/<name>`: device-wide counters (EFA: admin commands and
//!   allocation errors).
//! - `class/infiniband/<dev>/ports/<port>/counters/port_{xmit,rcv}_data`: the InfiniBand
//!   standard counters, in units of 4 bytes; used for tx/rx bytes when hw_counters lack them
//!   (mlx5 and other IB/RoCE devices).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// All RDMA devices' counters at one moment.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CounterSnapshot {
    /// Wall-clock time of the snapshot, RFC 3339.
    pub taken_at: String,
    /// Milliseconds since the Unix epoch, for the delta's duration.
    pub unix_ms: u64,
    pub devices: Vec<DeviceCounters>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceCounters {
    pub device: String,
    /// Kernel driver (`efa`, `mlx5_core`, ...), from the `device/driver` link.
    #[serde(default)]
    pub driver: Option<String>,
    /// Device-wide `hw_counters`.
    #[serde(default)]
    pub device_counters: BTreeMap<String, u64>,
    pub ports: Vec<PortCounters>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PortCounters {
    pub port: u32,
    /// `ports/<port>/hw_counters`.
    #[serde(default)]
    pub hw: BTreeMap<String, u64>,
    /// `ports/<port>/counters` (InfiniBand standard counters; data counters in 4-byte units).
    #[serde(default)]
    pub ib: BTreeMap<String, u64>,
}

/// Bytes through one port, from whichever counters the device has.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Traffic {
    pub tx_bytes: Option<u64>,
    pub rx_bytes: Option<u64>,
    /// Bytes this device read from peers with RDMA read (EFA `rdma_read_bytes`).
    pub rdma_read_bytes: Option<u64>,
    /// Bytes this device wrote to peers with RDMA write (EFA `rdma_write_bytes`, newer kernels).
    pub rdma_write_bytes: Option<u64>,
}

impl PortCounters {
    pub fn traffic(&self) -> Traffic {
        let ib_bytes = |name: &str| self.ib.get(name).map(|words| words.saturating_mul(4));
        Traffic {
            tx_bytes: self
                .hw
                .get("tx_bytes")
                .copied()
                .or_else(|| ib_bytes("port_xmit_data")),
            rx_bytes: self
                .hw
                .get("rx_bytes")
                .copied()
                .or_else(|| ib_bytes("port_rcv_data")),
            rdma_read_bytes: self.hw.get("rdma_read_bytes").copied(),
            rdma_write_bytes: self.hw.get("rdma_write_bytes").copied(),
        }
    }
}

/// Reads every device's counters under `sysfs_root` (normally `/sys`). No RDMA devices is an
/// empty snapshot, not an error; unreadable or non-numeric files are skipped (some counters are
/// root-only on some drivers).
pub fn snapshot(sysfs_root: &Path) -> Result<CounterSnapshot> {
    let now = chrono::Utc::now();
    let class = sysfs_root.join("class/infiniband");
    let mut devices = Vec::new();
    if class.exists() {
        for device in sorted_entries(&class).map_err(|e| Error::read(&class, e))? {
            let dir = class.join(&device);
            let mut ports = Vec::new();
            if let Ok(port_names) = sorted_entries(&dir.join("ports")) {
                for name in port_names {
                    let Ok(port) = name.parse::<u32>() else {
                        continue;
                    };
                    let pdir = dir.join("ports").join(&name);
                    ports.push(PortCounters {
                        port,
                        hw: read_counters(&pdir.join("hw_counters")),
                        ib: read_counters(&pdir.join("counters")),
                    });
                }
            }
            ports.sort_by_key(|p| p.port);
            devices.push(DeviceCounters {
                driver: driver_of(&dir),
                device_counters: read_counters(&dir.join("hw_counters")),
                device,
                ports,
            });
        }
    }
    Ok(CounterSnapshot {
        taken_at: now.to_rfc3339(),
        unix_ms: now.timestamp_millis().max(0) as u64,
        devices,
    })
}

/// The kernel driver bound to an RDMA device (`<dev>/device/driver` → `.../drivers/efa`).
pub fn driver_of(device_dir: &Path) -> Option<String> {
    let target = std::fs::read_link(device_dir.join("device/driver")).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

fn read_counters(dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Ok(names) = sorted_entries(dir) else {
        return out;
    };
    for name in names {
        if name == "lifespan" {
            continue; // the refresh interval, not a counter
        }
        if let Ok(text) = std::fs::read_to_string(dir.join(&name))
            && let Ok(v) = text.trim().parse::<u64>()
        {
            out.insert(name, v);
        }
    }
    out
}

/// What changed between two snapshots. This is what `RunRecord.counters` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CounterDelta {
    pub from: String,
    pub to: String,
    pub seconds: f64,
    pub ports: Vec<PortDelta>,
    /// Sum over all ports.
    pub total: Traffic,
    /// Devices present in only one of the two snapshots (hot-unplugged, driver reloaded).
    #[serde(default)]
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PortDelta {
    pub device: String,
    pub port: u32,
    #[serde(default)]
    pub driver: Option<String>,
    pub traffic: Traffic,
    /// Every port counter that changed, by how much.
    pub changed: BTreeMap<String, u64>,
    /// Counters that went backwards (device reset or driver reload): their delta is unknown.
    #[serde(default)]
    pub reset: Vec<String>,
}

impl PortDelta {
    /// No bytes in either direction (a rail that carried nothing).
    pub fn idle(&self) -> bool {
        self.traffic.tx_bytes.unwrap_or(0) == 0 && self.traffic.rx_bytes.unwrap_or(0) == 0
    }
}

impl CounterSnapshot {
    /// The change from `self` (before) to `after`.
    pub fn delta(&self, after: &CounterSnapshot) -> CounterDelta {
        let mut ports = Vec::new();
        let mut missing = Vec::new();
        for a in &after.devices {
            let Some(b) = self.devices.iter().find(|d| d.device == a.device) else {
                missing.push(a.device.clone());
                continue;
            };
            for ap in &a.ports {
                let Some(bp) = b.ports.iter().find(|p| p.port == ap.port) else {
                    continue;
                };
                ports.push(port_delta(&a.device, a.driver.clone(), bp, ap));
            }
        }
        for b in &self.devices {
            if !after.devices.iter().any(|a| a.device == b.device) {
                missing.push(b.device.clone());
            }
        }
        let sum = |f: fn(&Traffic) -> Option<u64>| -> Option<u64> {
            let values: Vec<u64> = ports.iter().filter_map(|p| f(&p.traffic)).collect();
            (!values.is_empty()).then(|| values.iter().fold(0u64, |a, v| a.saturating_add(*v)))
        };
        let total = Traffic {
            tx_bytes: sum(|t| t.tx_bytes),
            rx_bytes: sum(|t| t.rx_bytes),
            rdma_read_bytes: sum(|t| t.rdma_read_bytes),
            rdma_write_bytes: sum(|t| t.rdma_write_bytes),
        };
        CounterDelta {
            from: self.taken_at.clone(),
            to: after.taken_at.clone(),
            seconds: after.unix_ms.saturating_sub(self.unix_ms) as f64 / 1e3,
            ports,
            total,
            missing,
        }
    }
}

fn port_delta(
    device: &str,
    driver: Option<String>,
    before: &PortCounters,
    after: &PortCounters,
) -> PortDelta {
    let mut reset = Vec::new();
    let mut diff =
        |b: &BTreeMap<String, u64>, a: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
            let mut out = BTreeMap::new();
            for (name, &av) in a {
                let Some(&bv) = b.get(name) else { continue };
                match av.checked_sub(bv) {
                    Some(d) => {
                        out.insert(name.clone(), d);
                    }
                    None => reset.push(name.clone()),
                }
            }
            out
        };
    let hw = diff(&before.hw, &after.hw);
    let ib = diff(&before.ib, &after.ib);
    let delta_port = PortCounters {
        port: after.port,
        hw,
        ib,
    };
    let traffic = delta_port.traffic();
    let changed = delta_port
        .hw
        .iter()
        .chain(delta_port.ib.iter())
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    PortDelta {
        device: device.to_string(),
        port: after.port,
        driver,
        traffic,
        changed,
        reset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(hw: &[(&str, u64)], ib: &[(&str, u64)]) -> PortCounters {
        PortCounters {
            port: 1,
            hw: hw.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ib: ib.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    fn snap(ms: u64, devices: Vec<(&str, PortCounters)>) -> CounterSnapshot {
        CounterSnapshot {
            taken_at: format!("t{ms}"),
            unix_ms: ms,
            devices: devices
                .into_iter()
                .map(|(d, p)| DeviceCounters {
                    device: d.into(),
                    ports: vec![p],
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn ib_data_counters_count_four_byte_words() {
        let p = port(&[], &[("port_xmit_data", 10), ("port_rcv_data", 3)]);
        assert_eq!(p.traffic().tx_bytes, Some(40));
        assert_eq!(p.traffic().rx_bytes, Some(12));
        // EFA's own byte counters win when both exist.
        let p = port(&[("tx_bytes", 7)], &[("port_xmit_data", 10)]);
        assert_eq!(p.traffic().tx_bytes, Some(7));
    }

    #[test]
    fn deltas_sum_per_port_and_flag_idle_rails_and_resets() {
        let before = snap(
            1_000,
            vec![
                (
                    "rdmap0",
                    port(
                        &[("tx_bytes", 100), ("rx_bytes", 50), ("rdma_read_bytes", 0)],
                        &[],
                    ),
                ),
                ("rdmap1", port(&[("tx_bytes", 500), ("rx_bytes", 500)], &[])),
                ("rdmap2", port(&[("tx_bytes", 900), ("rx_bytes", 10)], &[])),
            ],
        );
        let after = snap(
            3_500,
            vec![
                (
                    "rdmap0",
                    port(
                        &[
                            ("tx_bytes", 1100),
                            ("rx_bytes", 2050),
                            ("rdma_read_bytes", 4096),
                        ],
                        &[],
                    ),
                ),
                ("rdmap1", port(&[("tx_bytes", 500), ("rx_bytes", 500)], &[])),
                ("rdmap2", port(&[("tx_bytes", 5), ("rx_bytes", 20)], &[])),
            ],
        );
        let d = before.delta(&after);
        assert_eq!(d.seconds, 2.5);
        assert_eq!(d.ports.len(), 3);
        assert_eq!(d.ports[0].traffic.tx_bytes, Some(1000));
        assert_eq!(d.ports[0].traffic.rx_bytes, Some(2000));
        assert_eq!(d.ports[0].traffic.rdma_read_bytes, Some(4096));
        assert!(!d.ports[0].idle());
        assert!(d.ports[1].idle(), "rdmap1 moved nothing");
        assert!(d.ports[1].changed.is_empty());
        assert_eq!(
            d.ports[2].reset,
            vec!["tx_bytes"],
            "a counter that went backwards"
        );
        assert_eq!(d.ports[2].traffic.tx_bytes, None);
        assert_eq!(d.total.tx_bytes, Some(1000));
        assert_eq!(d.total.rx_bytes, Some(2010));
        assert_eq!(d.total.rdma_write_bytes, None, "no device has the counter");
    }

    #[test]
    fn devices_in_only_one_snapshot_are_listed() {
        let before = snap(0, vec![("a", port(&[("tx_bytes", 1)], &[]))]);
        let after = snap(0, vec![("b", port(&[("tx_bytes", 1)], &[]))]);
        let d = before.delta(&after);
        assert!(d.ports.is_empty());
        assert_eq!(d.missing, vec!["b", "a"]);
    }

    #[test]
    fn no_infiniband_class_is_an_empty_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let s = snapshot(dir.path()).unwrap();
        assert!(s.devices.is_empty());
        assert!(s.unix_ms > 0);
    }
}
