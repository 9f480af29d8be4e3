//! Host limits NCCL and RDMA run into: the size of /dev/shm, the locked-memory limit, and huge
//! pages. Each check is a pure function of the facts, so the thresholds are unit-tested.

use std::path::Path;

use super::check::{Check, HostPaths, read_trimmed};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Size of the filesystem at `path` (`statvfs`), in bytes.
pub fn filesystem_size(path: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is NUL-terminated; st is written by statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_blocks as u64 * st.f_frsize as u64)
}

/// `/dev/shm`: NCCL's SHM transport and its proxy buffers live there. Docker's default is
/// 64 MiB, and NCCL then crashes in `ncclShmOpen`; PyTorch's CI moved to 2 GiB.
pub fn check_shm(size: Option<u64>) -> Check {
    const ID: &str = "host.shm";
    let hint = "give the container more shared memory: `--shm-size=16g` (docker), or an emptyDir with medium: Memory mounted at /dev/shm (Kubernetes)";
    match size {
        None => Check::fail(
            ID,
            "/dev/shm is missing: NCCL's shared-memory transport cannot work",
        )
        .with_hint(hint),
        Some(s) if s < 256 * MIB => Check::fail(
            ID,
            format!(
                "/dev/shm is only {} MiB: NCCL fails to create its shared-memory segments",
                s / MIB
            ),
        )
        .with_hint(hint),
        Some(s) if s < GIB => Check::warn(
            ID,
            format!(
                "/dev/shm is {} MiB: may be too small for NCCL with several GPUs",
                s / MIB
            ),
        )
        .with_hint(hint),
        Some(s) => Check::ok(ID, format!("/dev/shm is {:.1} GiB", s as f64 / GIB as f64)),
    }
}

/// RLIMIT_MEMLOCK soft limit in bytes; `None` is unlimited.
pub fn memlock_limit() -> Option<u64> {
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: getrlimit writes the struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0
        || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(r.rlim_cur as u64)
}

/// CAP_IPC_LOCK (bit 14) in the effective set of /proc/self/status.
pub fn has_ipc_lock(paths: &HostPaths) -> bool {
    let Some(status) = read_trimmed(&paths.proc().join("self/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 14) != 0)
}

/// Memory registration for RDMA pins pages: past RLIMIT_MEMLOCK it fails with ENOMEM unless
/// the process has CAP_IPC_LOCK.
pub fn check_memlock(limit: Option<u64>, ipc_lock: bool, rdma_devices: usize) -> Check {
    const ID: &str = "host.memlock";
    let shown = limit.map_or("unlimited".into(), |l| format!("{} KiB", l / 1024));
    if limit.is_none() || ipc_lock {
        let why = if limit.is_none() {
            ""
        } else {
            " (CAP_IPC_LOCK lifts the limit)"
        };
        return Check::ok(ID, format!("locked-memory limit {shown}{why}"));
    }
    if rdma_devices == 0 {
        return Check::ok(
            ID,
            format!(
                "locked-memory limit {shown}; only RDMA needs more, and there is no RDMA device"
            ),
        );
    }
    Check::fail(ID, format!("locked-memory limit {shown}: RDMA memory registration of NCCL's buffers fails with ENOMEM"))
        .with_hint("run with `ulimit -l unlimited` (docker: --ulimit memlock=-1), or add the IPC_LOCK capability to the container")
}

/// Huge pages from /proc/meminfo and the cgroup's 2 MiB hugetlb limit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HugePages {
    pub total: u64,
    pub free: u64,
    pub page_kib: u64,
    /// `hugetlb.2MB.max` of this cgroup (v2): `None` unlimited or unknown.
    pub cgroup_limit: Option<u64>,
}

pub fn huge_pages(paths: &HostPaths) -> HugePages {
    let mut h = HugePages::default();
    if let Some(text) = read_trimmed(&paths.proc().join("meminfo")) {
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(key), Some(value)) = (
                parts.next(),
                parts.next().and_then(|v| v.parse::<u64>().ok()),
            ) else {
                continue;
            };
            match key {
                "HugePages_Total:" => h.total = value,
                "HugePages_Free:" => h.free = value,
                "Hugepagesize:" => h.page_kib = value,
                _ => {}
            }
        }
    }
    h.cgroup_limit =
        read_trimmed(&paths.sys().join("fs/cgroup/hugetlb.2MB.max")).and_then(|v| v.parse().ok());
    h
}

/// AWS: instances with the EFA driver pre-allocate 5128 2-MiB huge pages, which pods request as
/// `hugepages-2Mi`; libfabric's EFA provider uses them for its buffers unless
/// FI_EFA_USE_HUGE_PAGE=0.
pub fn check_huge_pages(h: &HugePages, efa_devices: usize, huge_pages_disabled: bool) -> Check {
    const ID: &str = "host.hugepages";
    let shown = format!(
        "{} huge pages of {} KiB ({} free){}",
        h.total,
        h.page_kib,
        h.free,
        h.cgroup_limit.map_or(String::new(), |l| format!(
            ", this cgroup may use {} MiB",
            l / MIB
        ))
    );
    if efa_devices == 0 || huge_pages_disabled {
        let why = if huge_pages_disabled {
            " (FI_EFA_USE_HUGE_PAGE=0)"
        } else {
            ""
        };
        return Check::ok(ID, format!("{shown}{why}"));
    }
    if h.total == 0 {
        return Check::warn(ID, format!("{shown}: EFA nodes normally pre-allocate 2 MiB huge pages for libfabric"))
            .with_hint("check the node's EFA setup (AWS pre-allocates 5128 2-MiB pages) and request hugepages-2Mi in the pod spec");
    }
    if h.cgroup_limit == Some(0) {
        return Check::warn(ID, format!("{shown}: this container may not use any")).with_hint(
            "request hugepages-2Mi in the pod spec (AWS's p5 manifests request 5120Mi)",
        );
    }
    Check::ok(ID, shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::check::Status;

    #[test]
    fn shm_thresholds() {
        assert_eq!(check_shm(None).status, Status::Fail);
        assert_eq!(
            check_shm(Some(64 * MIB)).status,
            Status::Fail,
            "docker's default"
        );
        assert_eq!(check_shm(Some(512 * MIB)).status, Status::Warn);
        assert_eq!(check_shm(Some(16 * GIB)).status, Status::Ok);
    }

    #[test]
    fn memlock_matters_only_with_rdma_and_without_ipc_lock() {
        assert_eq!(check_memlock(None, false, 4).status, Status::Ok);
        assert_eq!(check_memlock(Some(8 * MIB), true, 4).status, Status::Ok);
        assert_eq!(check_memlock(Some(8 * MIB), false, 0).status, Status::Ok);
        let c = check_memlock(Some(64 * 1024), false, 4);
        assert_eq!(c.status, Status::Fail);
        assert!(c.summary.contains("64 KiB"));
    }

    #[test]
    fn huge_pages_from_the_fixture_and_their_checks() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/efa-node");
        let h = huge_pages(&HostPaths::new(root));
        assert_eq!((h.total, h.free, h.page_kib), (5128, 5128, 2048));
        assert_eq!(check_huge_pages(&h, 2, false).status, Status::Ok);
        let none = HugePages {
            page_kib: 2048,
            ..Default::default()
        };
        assert_eq!(check_huge_pages(&none, 2, false).status, Status::Warn);
        assert_eq!(check_huge_pages(&none, 2, true).status, Status::Ok);
        assert_eq!(check_huge_pages(&none, 0, false).status, Status::Ok);
        let capped = HugePages {
            cgroup_limit: Some(0),
            ..h
        };
        assert_eq!(check_huge_pages(&capped, 2, false).status, Status::Warn);
    }

    #[test]
    fn capabilities_are_read_from_proc_status() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(
            dir.path().join("proc/self/status"),
            "Name:\tx\nCapEff:\t00000000a80425fb\n",
        )
        .unwrap();
        assert!(!has_ipc_lock(&HostPaths::new(dir.path())));
        std::fs::write(
            dir.path().join("proc/self/status"),
            "CapEff:\t000001ffffffffff\n",
        )
        .unwrap();
        assert!(has_ipc_lock(&HostPaths::new(dir.path())));
    }
}
