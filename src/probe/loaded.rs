//! What a rank actually loaded, after NCCL's communicator init: the files in
//! /proc/self/maps (libnccl, libnccl-net*, libfabric, libcuda), NCCL's own log lines (the
//! plugin's name and interface, aws-ofi-nccl's banner, NCCL's CUDA build), libfabric's own
//! answers, and the environment. Recorded per host in the RunRecord (`results::stack`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use super::cuda::mapped;
use crate::results::stack::{LibfabricInfo, Loaded, NetPluginInfo, StackInfo};

/// The variables a stack records: what the image and the pod set for NCCL, libfabric and
/// the OFI plugin.
pub fn stack_environment<'a>(
    vars: impl Iterator<Item = (&'a String, &'a String)>,
) -> BTreeMap<String, String> {
    vars.filter(|(k, _)| ["NCCL_", "FI_", "OFI_"].iter().any(|p| k.starts_with(p)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

static PLUGIN_LOADED: LazyLock<regex::Regex> = LazyLock::new(|| {
    // NET/Plugin: Loaded net plugin Libfabric (v10)  (2.18.5+; `Loaded net plugin %s (vN)`)
    regex::Regex::new(r"NET/Plugin ?: Loaded net plugin (.+?) \((v\d+)\)").expect("valid regex")
});
static OFI_BANNER: LazyLock<regex::Regex> = LazyLock::new(|| {
    // NET/OFI Initializing aws-ofi-nccl 1.21.1
    regex::Regex::new(r"NET/OFI Initializing aws-ofi-nccl (\S+)").expect("valid regex")
});
static NCCL_CUDA: LazyLock<regex::Regex> = LazyLock::new(|| {
    // NCCL version 2.28.9+cuda13.0
    regex::Regex::new(r"NCCL version \S+?\+cuda(\d+\.\d+)").expect("valid regex")
});

/// The stack from this process's maps text and NCCL log; no I/O (libfabric's version and
/// providers are filled by [`collect`]).
pub fn from_parts(
    maps: &str,
    log: Option<&str>,
    env: &BTreeMap<String, String>,
    nccl_version: Option<String>,
) -> StackInfo {
    let mut s = StackInfo::new();
    let first = |prefix: &str| {
        mapped(maps, prefix)
            .into_iter()
            .next()
            .map(|p| p.display().to_string())
    };
    s.nccl = Some(Loaded {
        version: nccl_version,
        path: first("libnccl.so"),
    })
    .filter(|n| n.version.is_some() || n.path.is_some());
    let log = log.unwrap_or("");
    let plugin_line = PLUGIN_LOADED.captures(log);
    let banner = OFI_BANNER
        .captures(log)
        .map(|c| c[1].to_string())
        .filter(|v| !v.starts_with("m4_"));
    if let Some(path) = first("libnccl-net") {
        s.net_plugin = Some(NetPluginInfo {
            name: plugin_line.as_ref().map(|c| c[1].trim().to_string()),
            version: banner,
            path: Some(path),
            interface: plugin_line.as_ref().map(|c| c[2].to_string()),
        });
    }
    if let Some(path) = first("libfabric.so") {
        s.libfabric = Some(LibfabricInfo {
            path: Some(path),
            ..Default::default()
        });
    }
    s.libcuda = first("libcuda.so");
    s.cuda_compat = s
        .libcuda
        .as_deref()
        .map(|p| Path::new(p).parent().and_then(|d| d.file_name()) == Some("compat".as_ref()));
    s.cuda_runtime = NCCL_CUDA.captures(log).map(|c| c[1].to_string());
    s.environment = stack_environment(env.iter());
    s
}

/// The stack of this process, after NCCL's init: [`from_parts`] over /proc/self/maps and
/// this rank's NCCL log, plus what the mapped plugin and libfabric say of themselves.
pub fn collect(
    nccl_version: Option<String>,
    cuda_driver: Option<String>,
    kernel_driver: Option<String>,
) -> StackInfo {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let log = std::env::var("NCCL_DEBUG_FILE")
        .ok()
        .filter(|p| !p.contains('%'))
        .and_then(|p| read_head(Path::new(&p), 4 << 20));
    let env = crate::engine::library::process_env();
    let mut s = from_parts(&maps, log.as_deref(), &env, nccl_version);
    s.cuda_driver = cuda_driver;
    s.kernel_driver = kernel_driver;
    if let Some(p) = &mut s.net_plugin
        && p.version.is_none()
        && let Some(path) = &p.path
    {
        p.version = super::plugins::embedded_version(Path::new(path));
    }
    if let Some(f) = &mut s.libfabric
        && let Some(path) = f.path.clone()
        && let Ok(lib) = crate::fabric::library::Libfabric::load_path(Path::new(&path))
    {
        f.api = Some(lib.info().version);
        f.version = lib.release();
        if let Ok(listing) = crate::fabric::info::list(&lib, None, None) {
            let mut seen = std::collections::BTreeSet::new();
            f.providers = listing
                .entries
                .iter()
                .filter(|e| e.endpoint_type == "FI_EP_RDM" && seen.insert(e.provider.clone()))
                .map(|e| e.provider.clone())
                .collect();
        }
        // The plugin holds it loaded; netcheck's handle must not unload it under NCCL.
        std::mem::forget(lib);
    }
    if s.cuda_runtime.is_none() {
        let facts = super::cuda::probe(&crate::engine::library::Search::system(&env), Some(&maps));
        s.cuda_runtime = facts.image_cuda().map(|(a, b)| format!("{a}.{b}"));
    }
    s
}

/// The first `limit` bytes of a file as text (NCCL prints its init lines first).
fn read_head(path: &Path, limit: u64) -> Option<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut buf)
        .ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_comes_from_the_mapped_files_and_ncclss_log_lines() {
        let maps = "\
7f0000-7f1000 r-xp 00000000 08:01 11 /usr/local/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
7f1000-7f2000 r--p 00001000 08:01 11 /usr/local/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
7f2000-7f3000 r-xp 00000000 08:01 12 /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so
7f3000-7f4000 r-xp 00000000 08:01 13 /opt/amazon/efa/lib/libfabric.so.1.27.0
7f4000-7f5000 r-xp 00000000 08:01 14 /usr/local/cuda/compat/libcuda.so.580.65.06
";
        let log = "\
ip-10-0-0-1:42:42 [0] NCCL INFO NCCL version 2.29.7+cuda13.0
ip-10-0-0-1:42:42 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.21.1
ip-10-0-0-1:42:42 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)
";
        let env: BTreeMap<String, String> = [
            ("FI_PROVIDER", "efa"),
            ("NCCL_DEBUG", "INFO"),
            ("OFI_NCCL_PROTOCOL", "RDMA"),
            ("HOME", "/root"),
            ("LD_LIBRARY_PATH", "/x"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let s = from_parts(maps, Some(log), &env, Some("2.29.7".into()));
        assert_eq!(s.schema, "netcheck.stack.v1");
        let nccl = s.nccl.as_ref().unwrap();
        assert_eq!(nccl.version.as_deref(), Some("2.29.7"));
        assert!(
            nccl.path
                .as_deref()
                .unwrap()
                .ends_with("nvidia/nccl/lib/libnccl.so.2")
        );
        let p = s.net_plugin.as_ref().unwrap();
        assert_eq!(p.name.as_deref(), Some("Libfabric"));
        assert_eq!(p.interface.as_deref(), Some("v10"));
        assert_eq!(p.version.as_deref(), Some("1.21.1"));
        assert_eq!(
            s.libfabric.as_ref().unwrap().path.as_deref(),
            Some("/opt/amazon/efa/lib/libfabric.so.1.27.0")
        );
        assert_eq!(s.cuda_compat, Some(true));
        assert_eq!(s.cuda_runtime.as_deref(), Some("13.0"));
        let keys: Vec<&str> = s.environment.keys().map(String::as_str).collect();
        assert_eq!(keys, ["FI_PROVIDER", "NCCL_DEBUG", "OFI_NCCL_PROTOCOL"]);
    }

    #[test]
    fn nothing_mapped_is_recorded_as_absent_not_guessed() {
        let s = from_parts("", None, &BTreeMap::new(), None);
        assert_eq!(s.nccl, None);
        assert_eq!(s.net_plugin, None);
        assert_eq!(s.libfabric, None);
        assert_eq!(s.cuda_compat, None);
        // An untagged 1.19+ build prints its m4 macro, not a version.
        let log =
            "NET/OFI Initializing aws-ofi-nccl m4_normalize(fatal_esyscmd([m4/get_version.sh]";
        let maps = "1-2 r-xp 0 0:0 1 /opt/amazon/ofi-nccl/lib/libnccl-net.so\n";
        let s = from_parts(maps, Some(log), &BTreeMap::new(), None);
        assert_eq!(s.net_plugin.unwrap().version, None);
    }
}
