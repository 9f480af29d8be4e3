//! PCI devices from sysfs (`/sys/bus/pci/devices/<address>/`): NVIDIA GPUs, NVSwitches and
//! network adapters (EFA, ConnectX, ENA), with their PCIe link speed and width against the
//! device's maximum. A GPU or NIC that trained at x8 instead of x16 (a badly seated card, a
//! damaged riser) moves half the bytes; nothing else on the node says so.
//!
//! Files read (Linux `Documentation/ABI/testing/sysfs-bus-pci`): `vendor` and `device`
//! (`0x10de`), `class` (`0x030200`), `current_link_speed` / `max_link_speed`
//! (`32.0 GT/s PCIe`), `current_link_width` / `max_link_width` (`16`).

use serde::{Deserialize, Serialize};

use super::check::{Check, HostPaths, read_trimmed};

pub const NVIDIA: &str = "0x10de";

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PciRole {
    Gpu,
    NvSwitch,
    Nic,
}

impl PciRole {
    fn label(self) -> &'static str {
        match self {
            PciRole::Gpu => "GPU",
            PciRole::NvSwitch => "NVSwitch",
            PciRole::Nic => "NIC",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PciDevice {
    /// `0000:53:00.0`.
    pub address: String,
    pub role: PciRole,
    pub vendor: String,
    pub device: String,
    /// GT/s, when the kernel knows it.
    pub speed_gts: Option<f64>,
    pub max_speed_gts: Option<f64>,
    pub width: Option<u32>,
    pub max_width: Option<u32>,
}

/// What a device is, from its vendor and class: NVIDIA display/3D controllers are GPUs, NVIDIA
/// "other bridge" devices are NVSwitches, every network or InfiniBand controller is a NIC.
fn role_of(vendor: &str, class: &str) -> Option<PciRole> {
    let class = class.trim_start_matches("0x");
    let base = class.get(..4)?;
    match (vendor, base) {
        (NVIDIA, "0300" | "0302") => Some(PciRole::Gpu),
        (NVIDIA, "0680") => Some(PciRole::NvSwitch),
        (_, b) if b.starts_with("02") => Some(PciRole::Nic),
        _ => None,
    }
}

/// `32.0 GT/s PCIe` → 32.0; `Unknown` → None.
fn parse_speed(s: &str) -> Option<f64> {
    s.split_whitespace().next()?.parse().ok()
}

/// GPUs, NVSwitches and NICs, sorted by address.
pub fn scan(paths: &HostPaths) -> Vec<PciDevice> {
    let dir = paths.sys().join("bus/pci/devices");
    let mut out: Vec<PciDevice> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            let vendor = read_trimmed(&p.join("vendor"))?;
            let class = read_trimmed(&p.join("class"))?;
            let role = role_of(&vendor, &class)?;
            Some(PciDevice {
                address: e.file_name().to_string_lossy().into_owned(),
                role,
                device: read_trimmed(&p.join("device")).unwrap_or_default(),
                vendor,
                speed_gts: read_trimmed(&p.join("current_link_speed"))
                    .and_then(|s| parse_speed(&s)),
                max_speed_gts: read_trimmed(&p.join("max_link_speed"))
                    .and_then(|s| parse_speed(&s)),
                width: read_trimmed(&p.join("current_link_width")).and_then(|s| s.parse().ok()),
                max_width: read_trimmed(&p.join("max_link_width")).and_then(|s| s.parse().ok()),
            })
        })
        .collect();
    out.sort_by(|a, b| a.address.cmp(&b.address));
    out
}

/// The `pcie.links` check: every GPU and NIC link at its maximum width (else fail: half the
/// lanes, half the bandwidth) and speed (else warn for a NIC; for a GPU only a note, since
/// idle GPUs lower their link speed to save power and raise it under load).
pub fn check_links(devices: &[PciDevice]) -> Check {
    const ID: &str = "pcie.links";
    let links: Vec<&PciDevice> = devices
        .iter()
        .filter(|d| d.role != PciRole::NvSwitch && d.width.is_some() && d.max_width.is_some())
        .collect();
    if links.is_empty() {
        return Check::ok(
            ID,
            "no GPU or NIC with a readable PCIe link in sysfs: nothing to compare",
        );
    }
    let mut narrow = vec![];
    let mut slow_nic = vec![];
    let mut evidence = vec![];
    for d in &links {
        let (w, mw) = (d.width.unwrap_or(0), d.max_width.unwrap_or(0));
        let speed = |s: Option<f64>| s.map_or("?".to_string(), |v| format!("{v} GT/s"));
        let mut line = format!(
            "{} {} ({}:{}): x{w} of x{mw}, {} of {}",
            d.role.label(),
            d.address,
            d.vendor,
            d.device,
            speed(d.speed_gts),
            speed(d.max_speed_gts)
        );
        if w < mw {
            narrow.push(format!("{} {} x{w} of x{mw}", d.role.label(), d.address));
        }
        if let (Some(s), Some(m)) = (d.speed_gts, d.max_speed_gts)
            && s < m
        {
            if d.role == PciRole::Nic {
                slow_nic.push(format!("NIC {} {s} of {m} GT/s", d.address));
            } else {
                line.push_str(" (an idle GPU lowers its link speed; judged by width only)");
            }
        }
        evidence.push(line);
    }
    let check = if !narrow.is_empty() {
        Check::fail(
            ID,
            format!(
                "{} link(s) below their maximum width: {}",
                narrow.len(),
                narrow.join(", ")
            ),
        )
        .with_hint("a link that trained narrower than the device allows (reseat the card or riser, check the slot; `lspci -vv` shows LnkSta against LnkCap) moves proportionally fewer bytes")
    } else if !slow_nic.is_empty() {
        Check::warn(
            ID,
            format!(
                "{} NIC link(s) below their maximum speed: {}",
                slow_nic.len(),
                slow_nic.join(", ")
            ),
        )
        .with_hint("a NIC below its PCIe generation (slot, BIOS setting or a retrained link) can cap network bandwidth; compare `lspci -vv` LnkSta with LnkCap")
    } else {
        Check::ok(
            ID,
            format!("{} GPU/NIC link(s) at their maximum width", links.len()),
        )
    };
    check.with_evidence(evidence)
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::path::Path;

    /// Writes one PCI device into a fake `sys/bus/pci/devices`.
    pub fn device(
        sys: &Path,
        address: &str,
        vendor: &str,
        class: &str,
        link: Option<(&str, &str, u32, u32)>,
    ) {
        let d = sys.join("bus/pci/devices").join(address);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("vendor"), format!("{vendor}\n")).unwrap();
        std::fs::write(d.join("device"), "0x2335\n").unwrap();
        std::fs::write(d.join("class"), format!("{class}\n")).unwrap();
        if let Some((speed, max_speed, width, max_width)) = link {
            std::fs::write(d.join("current_link_speed"), format!("{speed} PCIe\n")).unwrap();
            std::fs::write(d.join("max_link_speed"), format!("{max_speed} PCIe\n")).unwrap();
            std::fs::write(d.join("current_link_width"), format!("{width}\n")).unwrap();
            std::fs::write(d.join("max_link_width"), format!("{max_width}\n")).unwrap();
        }
    }

    #[test]
    fn roles_come_from_vendor_and_class() {
        assert_eq!(role_of("0x10de", "0x030200"), Some(PciRole::Gpu));
        assert_eq!(role_of("0x10de", "0x030000"), Some(PciRole::Gpu));
        assert_eq!(role_of("0x10de", "0x068000"), Some(PciRole::NvSwitch));
        assert_eq!(role_of("0x1d0f", "0x020000"), Some(PciRole::Nic));
        assert_eq!(role_of("0x15b3", "0x020700"), Some(PciRole::Nic));
        assert_eq!(role_of("0x8086", "0x060400"), None);
        assert_eq!(
            role_of("0x10de", "0x040300"),
            None,
            "a GPU's audio function"
        );
    }

    #[test]
    fn a_narrow_link_fails_a_slow_nic_warns_an_idle_gpu_passes() {
        let root = tempfile::tempdir().unwrap();
        let sys = root.path().join("sys");
        device(
            &sys,
            "0000:53:00.0",
            NVIDIA,
            "0x030200",
            Some(("2.5 GT/s", "32.0 GT/s", 16, 16)),
        );
        device(
            &sys,
            "0000:64:00.0",
            "0x1d0f",
            "0x020000",
            Some(("32.0 GT/s", "32.0 GT/s", 16, 16)),
        );
        device(
            &sys,
            "0000:00:01.0",
            "0x8086",
            "0x060400",
            Some(("8.0 GT/s", "8.0 GT/s", 4, 16)),
        );
        let paths = HostPaths::new(root.path());
        let c = check_links(&scan(&paths));
        assert_eq!(c.status, super::super::Status::Ok, "{c:?}");
        assert!(c.evidence.iter().any(|e| e.contains("idle GPU")), "{c:?}");
        assert_eq!(c.evidence.len(), 2, "the bridge is not a GPU or NIC: {c:?}");

        device(
            &sys,
            "0000:65:00.0",
            "0x1d0f",
            "0x020000",
            Some(("16.0 GT/s", "32.0 GT/s", 16, 16)),
        );
        let c = check_links(&scan(&paths));
        assert_eq!(c.status, super::super::Status::Warn, "{c:?}");
        assert!(
            c.summary.contains("NIC 0000:65:00.0 16 of 32 GT/s"),
            "{c:?}"
        );

        device(
            &sys,
            "0000:54:00.0",
            NVIDIA,
            "0x030200",
            Some(("32.0 GT/s", "32.0 GT/s", 8, 16)),
        );
        let c = check_links(&scan(&paths));
        assert_eq!(c.status, super::super::Status::Fail, "{c:?}");
        assert!(c.summary.contains("GPU 0000:54:00.0 x8 of x16"), "{c:?}");
        assert!(c.hint.is_some());
    }

    #[test]
    fn no_sysfs_means_nothing_to_compare() {
        let root = tempfile::tempdir().unwrap();
        let c = check_links(&scan(&HostPaths::new(root.path())));
        assert_eq!(c.status, super::super::Status::Ok);
        assert!(c.summary.contains("nothing to compare"));
    }
}
