//! `netcheck doctor`: gathers the facts (GPUs, NCCL, plugin, libfabric, RDMA devices and
//! counters, host limits, environment), runs the checks over them, and renders the report.
//!
//! A doctor report is a report, not a gate on hardware being present: a host without a GPU or
//! EFA gets warnings and exits 0; only checks that fail (something present but broken or
//! contradictory, or something the user declared required with `--require`) exit 1.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::check::{Check, HostPaths, Status};
use super::counters::{self, CounterSnapshot};
use super::cuda::{self, CudaFacts};
use super::envlint::{self, LintContext};
use super::gpu::{self, GpuFacts};
use super::libfabric::{self, LibfabricFacts};
use super::nccl::{self, NcclFact};
use super::nvidia;
use super::pci::{self, PciDevice, PciRole};
use super::plugins::{self, PluginFacts};
use super::rdma::{self, RdmaDevice, RdmaKind};
use super::system;

pub const DOCTOR_SCHEMA: &str = "netcheck.doctor.v1";

/// What the user declared must be there (`--require`, `--expect-gpus`, `--expect-efa`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Requirements {
    pub gpu: bool,
    pub nccl: bool,
    pub libfabric: bool,
    pub efa: bool,
    pub ofi_plugin: bool,
    pub gpus: Option<u32>,
    pub efa_devices: Option<u32>,
}

pub struct Inputs {
    pub paths: HostPaths,
    pub env: BTreeMap<String, String>,
    pub require: Requirements,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DoctorReport {
    pub schema: String,
    pub host: String,
    pub kernel: Option<String>,
    pub generated_at: String,
    /// `pass`, `warn` or `fail`: the worst check.
    pub verdict: String,
    pub checks: Vec<Check>,
    pub facts: Facts,
}

/// Everything found, for scripts that want more than the verdicts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Facts {
    pub gpus: GpuFacts,
    /// The image's CUDA version(s), its compat libraries, and the libcuda in use.
    #[serde(default)]
    pub cuda: CudaFacts,
    pub nccl_libraries: Vec<NcclFact>,
    /// What `dlopen("libnccl.so.2")` opens in this environment.
    pub nccl_loader_choice: Option<PathBuf>,
    pub net_plugins: PluginFacts,
    pub libfabric: LibfabricFacts,
    pub rdma_devices: Vec<RdmaDevice>,
    /// NVIDIA GPUs, NVSwitches and NICs on the PCI bus, with their link speed and width.
    #[serde(default)]
    pub pci_devices: Vec<PciDevice>,
    pub counters: CounterSnapshot,
    /// NCCL_*, FI_*, OFI_*, RDMAV_*, CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH.
    pub environment: BTreeMap<String, String>,
}

pub fn run(inputs: &Inputs) -> DoctorReport {
    let env = &inputs.env;
    let req = &inputs.require;
    let paths = &inputs.paths;

    let gpus = gpu::probe(paths);
    // After the driver was loaded (or not): which libcuda this process mapped.
    let maps = std::fs::read_to_string("/proc/self/maps").ok();
    let cuda_facts = cuda::probe(
        &crate::engine::library::Search::system(env),
        maps.as_deref(),
    );
    // Before any NCCL is loaded by path: afterwards the name resolves to that copy.
    let nccl_loader_choice = nccl::loader_choice();
    let nccl_libraries = nccl::find();
    // SAFETY: only tries to load the library by cudarc's names.
    let cudarc_finds_nccl = unsafe { cudarc::nccl::sys::is_culib_present() };
    let net_plugins = plugins::find(
        env.get("LD_LIBRARY_PATH").map(String::as_str),
        env.get("NCCL_NET_PLUGIN").map(String::as_str),
    );
    let libfabric_facts = libfabric::probe();
    let rdma_devices = rdma::scan(paths);
    let counters = counters::snapshot(&paths.sys()).unwrap_or_default();

    let efa = rdma_devices.iter().filter(|d| d.is_efa()).count();
    let ib = rdma_devices
        .iter()
        .filter(|d| matches!(d.kind, RdmaKind::Ib | RdmaKind::Roce))
        .count();
    let mut checks = vec![
        gpu::check(&gpus, req.gpu || req.gpus.is_some(), req.gpus),
        cuda::check(
            &cuda_facts,
            gpus.kernel_driver.as_deref(),
            gpus.cuda_driver.as_deref(),
        ),
        nccl::check(
            &nccl_libraries,
            nccl_loader_choice.as_deref(),
            cudarc_finds_nccl,
            &gpus,
            req.nccl,
        ),
        plugins::check(&net_plugins, efa, req.ofi_plugin),
        libfabric::check(&libfabric_facts, efa, req.libfabric),
        rdma::check_devices(&rdma_devices, req.efa, req.efa_devices),
    ];
    checks.extend(rdma::check_counters(&counters));
    let pci_devices = pci::scan(paths);
    let count = |role| pci_devices.iter().filter(|d| d.role == role).count();
    let nvidia_gpus = count(PciRole::Gpu).max(gpus.devices.len());
    checks.push(nvidia::check_gdr(paths, nvidia_gpus, rdma_devices.len()));
    checks.push(nvidia::check_fabric_manager(
        paths,
        count(PciRole::NvSwitch),
    ));
    checks.extend(nvidia::check_xids(paths, nvidia_gpus));
    checks.push(pci::check_links(&pci_devices));
    checks.push(system::check_shm(system::filesystem_size(
        &paths.dev().join("shm"),
    )));
    checks.push(system::check_memlock(
        system::memlock_limit(),
        system::has_ipc_lock(paths),
        rdma_devices.len(),
    ));
    let huge_off = env
        .get("FI_EFA_USE_HUGE_PAGE")
        .is_some_and(|v| v.trim() == "0");
    checks.push(system::check_huge_pages(
        &system::huge_pages(paths),
        efa,
        huge_off,
    ));
    let ofi_plugin = net_plugins.resolves_to.as_ref().is_some_and(|opened| {
        net_plugins
            .plugins
            .iter()
            .any(|p| &p.path == opened && p.loads && p.version.is_some())
    });
    let ctx = LintContext {
        efa_devices: efa,
        ib_devices: ib,
        interfaces: interfaces(paths),
        ofi_plugin,
        rdm_providers: libfabric_facts
            .library
            .is_some()
            .then(|| libfabric_facts.rdm_providers.clone()),
    };
    checks.extend(envlint::lint(env, &ctx));

    let worst = checks.iter().map(|c| c.status).max().unwrap_or(Status::Ok);
    DoctorReport {
        schema: DOCTOR_SCHEMA.into(),
        host: crate::host::hostname(),
        kernel: kernel_release(),
        generated_at: chrono::Utc::now().to_rfc3339(),
        verdict: match worst {
            Status::Ok => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
        .into(),
        checks,
        facts: Facts {
            gpus,
            cuda: cuda_facts,
            nccl_libraries,
            nccl_loader_choice,
            net_plugins,
            libfabric: libfabric_facts,
            rdma_devices,
            pci_devices,
            counters,
            environment: env
                .iter()
                .filter(|(k, _)| envlint::is_relevant(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        },
    }
}

/// Network interfaces (`/sys/class/net`).
fn interfaces(paths: &HostPaths) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(paths.sys().join("class/net"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn kernel_release() -> Option<String> {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct with NUL-terminated strings.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // SAFETY: as above.
    let release = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) };
    Some(release.to_string_lossy().into_owned())
}

impl DoctorReport {
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.status == Status::Fail)
    }

    /// The exit code of a doctor report, the same for `doctor` and `check` (README's table):
    /// something required that is not there at all is a missing environment (exit 3, the
    /// error names it); a failing check otherwise fails (exit 1); else a pass.
    pub fn outcome(&self) -> crate::error::Result<crate::error::Outcome> {
        if let Some(c) = self.checks.iter().find(|c| c.missing) {
            return Err(crate::error::Error::missing(
                format!("doctor: {} is required: {}", c.id, c.summary),
                c.hint
                    .clone()
                    .unwrap_or_else(|| "install it, or leave it out of --require".into()),
            ));
        }
        Ok(if self.failed() {
            crate::error::Outcome::Fail
        } else {
            crate::error::Outcome::Pass
        })
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "netcheck doctor: {} (Linux {}), {}",
            self.host,
            self.kernel.as_deref().unwrap_or("?"),
            self.generated_at
        );
        let width = self.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
        for c in &self.checks {
            let label = match c.status {
                Status::Ok => "ok  ",
                Status::Warn => "WARN",
                Status::Fail => "FAIL",
            };
            let _ = writeln!(out, "{label}  {:width$}  {}", c.id, c.summary);
            for e in &c.evidence {
                let _ = writeln!(out, "      {:width$}    {e}", "");
            }
            if let Some(h) = &c.hint
                && c.status != Status::Ok
            {
                let _ = writeln!(out, "      {:width$}    hint: {h}", "");
            }
        }
        let count = |s: Status| self.checks.iter().filter(|c| c.status == s).count();
        let _ = writeln!(
            out,
            "verdict: {} ({} ok, {} warn, {} fail)",
            self.verdict,
            count(Status::Ok),
            count(Status::Warn),
            count(Status::Fail)
        );
        out
    }
}
