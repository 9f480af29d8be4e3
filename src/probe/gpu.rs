//! GPUs and the CUDA driver, through cudarc's driver API loaded at run time. Every entry point
//! is gated on `is_culib_present`: without libcuda cudarc panics instead of returning an error.

use serde::{Deserialize, Serialize};

use super::check::{Check, HostPaths, read_trimmed};
use crate::engine::gpu;
use crate::results::GpuInfo;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GpuFacts {
    /// libcuda could be loaded.
    pub libcuda: bool,
    /// CUDA version the driver supports (`cuDriverGetVersion`), e.g. "13.0".
    pub cuda_driver: Option<String>,
    /// The kernel module's version from /proc/driver/nvidia/version, e.g. "580.65.06".
    pub kernel_driver: Option<String>,
    pub devices: Vec<GpuInfo>,
    /// Why the devices could not be listed, if they could not.
    pub error: Option<String>,
}

impl GpuFacts {
    /// The driver's CUDA version as (major, minor).
    pub fn cuda_driver_version(&self) -> Option<(u32, u32)> {
        parse_major_minor(self.cuda_driver.as_deref()?)
    }
}

pub fn parse_major_minor(s: &str) -> Option<(u32, u32)> {
    let mut it = s.split('.');
    Some((
        it.next()?.parse().ok()?,
        it.next().unwrap_or("0").parse().ok()?,
    ))
}

/// What the CUDA driver says (through `run`'s own inventory, `engine::gpu`), plus the kernel
/// module version; never panics without a GPU or driver.
pub fn probe(paths: &HostPaths) -> GpuFacts {
    let kernel_driver = kernel_driver_version(paths);
    let libcuda = gpu::driver_present();
    match gpu::detect_gpus() {
        Ok(inventory) => GpuFacts {
            libcuda,
            cuda_driver: Some(inventory.cuda_driver),
            kernel_driver,
            devices: inventory.gpus,
            error: None,
        },
        Err(e) => GpuFacts {
            libcuda,
            kernel_driver,
            error: libcuda.then(|| e.to_string()),
            ..Default::default()
        },
    }
}

/// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." (or "... Open
/// Kernel Module for x86_64  580.65.06 ...") → "580.65.06": the first dotted number.
pub fn kernel_driver_version(paths: &HostPaths) -> Option<String> {
    let text = read_trimmed(&paths.proc().join("driver/nvidia/version"))?;
    let line = text.lines().next()?;
    let after = line.split("Kernel Module").nth(1)?;
    after
        .split_whitespace()
        .find(|t| {
            t.contains('.')
                && t.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// The `gpu.driver` check. `required`: the user asked for GPUs (`--require gpu`);
/// `expected`: the number of GPUs there must be.
pub fn check(facts: &GpuFacts, required: bool, expected: Option<u32>) -> Check {
    const ID: &str = "gpu.driver";
    let versions = format!(
        "CUDA driver API {}, kernel module {}",
        facts.cuda_driver.as_deref().unwrap_or("?"),
        facts.kernel_driver.as_deref().unwrap_or("?")
    );
    if !facts.libcuda {
        return Check::missing(ID, required, "no CUDA driver (libcuda.so.1 not found): GPU benchmarks cannot run here")
            .with_evidence(facts.kernel_driver.iter().map(|v| format!("kernel module {v} is loaded, but libcuda is not on the loader path")))
            .with_hint("install the NVIDIA driver, or run the container with the NVIDIA runtime (`--gpus all`, or a `nvidia.com/gpu` resource request)");
    }
    if facts.devices.is_empty() {
        return Check::missing(ID, required, "the CUDA driver is installed but sees no GPU")
            .with_evidence([versions].into_iter().chain(facts.error.clone()))
            .with_hint("check CUDA_VISIBLE_DEVICES and that the container was given GPUs (`nvidia-smi` should list them)");
    }
    let names: Vec<String> = facts
        .devices
        .iter()
        .map(|g| {
            format!(
                "GPU {}: {} ({}{})",
                g.index,
                g.name,
                g.pci_bus_id.as_deref().unwrap_or("bus ?"),
                g.memory_bytes
                    .map_or(String::new(), |m| format!(", {} GiB", m >> 30))
            )
        })
        .collect();
    let summary = format!(
        "{} GPU(s): {}; {versions}",
        facts.devices.len(),
        facts.devices[0].name
    );
    let check = match expected {
        Some(n) if n as usize != facts.devices.len() => Check::fail(ID, format!("{summary}; expected {n}"))
            .with_hint("a missing GPU usually means a hardware or driver fault on this node (see `nvidia-smi` and dmesg for Xid errors)"),
        _ => Check::ok(ID, summary),
    };
    check.with_evidence(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(i: u32) -> GpuInfo {
        GpuInfo {
            index: i,
            name: "NVIDIA H200".into(),
            pci_bus_id: Some(format!("0000:{i:02}:00.0")),
            memory_bytes: Some(141 << 30),
        }
    }

    #[test]
    fn no_driver_is_a_warning_unless_required() {
        let facts = GpuFacts::default();
        assert_eq!(
            check(&facts, false, None).status,
            super::super::check::Status::Warn
        );
        assert_eq!(
            check(&facts, true, None).status,
            super::super::check::Status::Fail
        );
    }

    #[test]
    fn a_gpu_count_below_the_expectation_fails() {
        let facts = GpuFacts {
            libcuda: true,
            cuda_driver: Some("13.0".into()),
            devices: vec![gpu(0), gpu(1)],
            ..Default::default()
        };
        let ok = check(&facts, true, Some(2));
        assert_eq!(ok.status, super::super::check::Status::Ok, "{ok:?}");
        assert!(ok.summary.contains("2 GPU(s): NVIDIA H200"));
        assert_eq!(ok.evidence.len(), 2);
        assert_eq!(
            check(&facts, false, Some(8)).status,
            super::super::check::Status::Fail
        );
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_major_minor("13.0"), Some((13, 0)));
        assert_eq!(parse_major_minor("12"), Some((12, 0)));
        assert_eq!(parse_major_minor("x"), None);
    }

    #[test]
    fn the_kernel_module_version_is_read_from_proc() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/driver/nvidia")).unwrap();
        std::fs::write(
            dir.path().join("proc/driver/nvidia/version"),
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B07-2-1)  Sun Jul 27 06:54:38 UTC 2025\nGCC version:  gcc version 12.2.0\n",
        )
        .unwrap();
        assert_eq!(
            kernel_driver_version(&HostPaths::new(dir.path())).as_deref(),
            Some("580.65.06")
        );
    }
}
