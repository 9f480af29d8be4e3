//! NCCL libraries as `doctor` reports them: `run`'s own discovery
//! (`engine::library::find_nccl_libraries`, the same order `run` picks from), plus the CUDA
//! version each was built for (from the version string NCCL embeds, `NCCL version
//! 2.28.9+cuda13.0`), and the file `dlopen("libnccl.so.2")` opens in this environment.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::check::Check;
use super::files::scan_file;
use super::gpu::{GpuFacts, parse_major_minor};
use crate::engine::library;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NcclFact {
    pub path: PathBuf,
    /// From `ncclGetVersion`, or the embedded string when the file cannot be loaded here.
    pub version: Option<String>,
    /// Where `run`'s discovery found it (`LD_LIBRARY_PATH`, `NCCL_HOME`, `system`, ...).
    pub source: String,
    /// The CUDA version it was built for, e.g. "13.0".
    pub cuda: Option<String>,
}

/// Every NCCL library `run` could use, with its CUDA build version.
pub fn find() -> Vec<NcclFact> {
    library::find_nccl_libraries()
        .into_iter()
        .map(|l| {
            let (embedded, cuda) = embedded_version(&l.path).unwrap_or_default();
            NcclFact {
                version: l.version.or((!embedded.is_empty()).then_some(embedded)),
                path: l.path,
                source: l.source,
                cuda,
            }
        })
        .collect()
}

static EMBEDDED: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    // NCCL embeds both "NCCL version 2.28.9+cuda13.0" and "NCCL version 2.28.9 compiled with
    // CUDA 13.0" (seen in the 2.28.9 wheel), and a bare "NCCL version 2.28.9", which is skipped.
    regex::bytes::Regex::new(
        r"NCCL version (\d+\.\d+\.\d+)[A-Za-z0-9_.-]*(?:\+cuda| compiled with CUDA )(\d+\.\d+)",
    )
    .expect("valid regex")
});

/// (version, CUDA build) from the string NCCL embeds; the library is hundreds of MB, so it is
/// read in chunks.
pub fn embedded_version(path: &Path) -> Option<(String, Option<String>)> {
    let caps = scan_file(path, &EMBEDDED, 1 << 30)?;
    Some((caps[0].clone().unwrap_or_default(), caps[1].clone()))
}

/// The file `dlopen("libnccl.so.2")` opens in this process's environment. Call it before
/// anything loads NCCL by path: a loaded copy answers to its name afterwards.
pub fn loader_choice() -> Option<PathBuf> {
    // SAFETY: loading NCCL runs only its static constructors; dladdr reads the loader's tables.
    unsafe {
        let flags = libc::RTLD_LAZY | libc::RTLD_LOCAL;
        let lib = libloading::os::unix::Library::open(Some("libnccl.so.2"), flags).ok()?;
        let sym: libloading::os::unix::Symbol<*const std::ffi::c_void> =
            lib.get(b"ncclGetVersion\0").ok()?;
        let mut info: libc::Dl_info = std::mem::zeroed();
        let found = libc::dladdr(*sym, &mut info) != 0 && !info.dli_fname.is_null();
        let path = found.then(|| {
            let name = std::ffi::CStr::from_ptr(info.dli_fname);
            PathBuf::from(name.to_string_lossy().into_owned())
        });
        // Stay loaded: NCCL is not built to be unloaded.
        std::mem::forget(lib);
        path.and_then(|p| std::fs::canonicalize(p).ok())
    }
}

/// The `nccl.libraries` check.
pub fn check(
    libs: &[NcclFact],
    loader: Option<&Path>,
    cudarc_finds: bool,
    gpus: &GpuFacts,
    required: bool,
) -> Check {
    const ID: &str = "nccl.libraries";
    let is_loader_choice =
        |l: &NcclFact| loader.is_some() && std::fs::canonicalize(&l.path).ok().as_deref() == loader;
    let describe = |l: &NcclFact| {
        format!(
            "{} {} ({}{}{})",
            l.path.display(),
            l.version.as_deref().unwrap_or("version unknown"),
            l.source,
            l.cuda
                .as_deref()
                .map_or(String::new(), |c| format!(", built for CUDA {c}")),
            if is_loader_choice(l) {
                ", what dlopen(\"libnccl.so.2\") opens here"
            } else {
                ""
            }
        )
    };
    let mut evidence: Vec<String> = libs.iter().map(describe).collect();
    evidence.push(format!(
        "cudarc's loader (libnccl.so, libnccl.so.N) {} NCCL by itself; `run` links the library it picks as libnccl.so for its workers",
        if cudarc_finds { "finds" } else { "does not find" }
    ));
    if libs.is_empty() {
        return Check::missing(ID, required, "no NCCL library found")
            .with_evidence(evidence)
            .with_hint("install one (`pip install nvidia-nccl-cu13`, or cu12 for CUDA 12 drivers), or point NETCHECK_NCCL_LIBRARY, NCCL_HOME or LD_LIBRARY_PATH at it");
    }

    // A library built for a newer CUDA major version than the driver supports cannot run.
    let driver = gpus.cuda_driver_version();
    let too_new: Vec<&NcclFact> = libs
        .iter()
        .filter(|l| {
            let built = l.cuda.as_deref().and_then(parse_major_minor);
            matches!((built, driver), (Some((b, _)), Some((d, _))) if b > d)
        })
        .collect();
    if !too_new.is_empty() {
        let (d_major, d_minor) = driver.unwrap_or_default();
        let summary = format!(
            "{} of {} NCCL libraries need a newer driver than this one (CUDA {d_major}.{d_minor})",
            too_new.len(),
            libs.len()
        );
        let check = if too_new.len() == libs.len() {
            Check::fail(ID, summary)
        } else {
            Check::warn(ID, summary)
        };
        return check.with_evidence(evidence).with_hint(
            "use an NCCL build for this driver's CUDA major version (e.g. nvidia-nccl-cu12 on a CUDA 12 driver), or upgrade the driver",
        );
    }

    let mut versions: Vec<&str> = libs.iter().filter_map(|l| l.version.as_deref()).collect();
    versions.sort_unstable();
    versions.dedup();
    if versions.len() > 1 {
        return Check::warn(
            ID,
            format!(
                "{} NCCL libraries with different versions: {}",
                libs.len(),
                versions.join(", ")
            ),
        )
        .with_evidence(evidence)
        .with_hint("which one a program loads depends on its RPATH and LD_LIBRARY_PATH (torch uses its wheel's; `run` takes the first listed); `NCCL_DEBUG=INFO` prints the version actually used");
    }
    let version = versions.first().copied().unwrap_or("(version unknown)");
    let summary = match libs.len() {
        1 => format!("NCCL {version} at {}", libs[0].path.display()),
        n => format!("{n} copies of NCCL {version}"),
    };
    Check::ok(ID, summary).with_evidence(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::check::Status;

    fn lib(version: &str, cuda: &str) -> NcclFact {
        NcclFact {
            path: PathBuf::from(format!("/x/{version}/libnccl.so.2")),
            version: Some(version.into()),
            source: "system".into(),
            cuda: Some(cuda.into()),
        }
    }

    fn driver(cuda: &str) -> GpuFacts {
        GpuFacts {
            libcuda: true,
            cuda_driver: Some(cuda.into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_embedded_version_string_gives_the_cuda_build() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libnccl.so.2");
        let mut bytes = vec![0u8; 1 << 20];
        let s = b"NCCL version 2.28.3+cuda12.9\0";
        bytes[4096..4096 + s.len()].copy_from_slice(s);
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(
            embedded_version(&path),
            Some(("2.28.3".into(), Some("12.9".into())))
        );
        // A format string is not a version; a bare version is skipped for one with CUDA.
        std::fs::write(&path, b"NCCL version %s\0").unwrap();
        assert_eq!(embedded_version(&path), None);
        std::fs::write(
            &path,
            b"NCCL version 2.28.9\0NCCL version 2.28.9 compiled with CUDA 13.0\0",
        )
        .unwrap();
        assert_eq!(
            embedded_version(&path),
            Some(("2.28.9".into(), Some("13.0".into())))
        );
    }

    #[test]
    fn differing_versions_warn() {
        let libs = [lib("2.28.9", "13.0"), lib("2.28.3", "13.0")];
        let c = check(&libs, None, false, &driver("13.0"), false);
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.summary.contains("2.28.3, 2.28.9"));
        assert!(c.evidence.iter().any(|e| e.contains("does not find")));
    }

    #[test]
    fn the_loaders_choice_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libnccl.so.2");
        std::fs::write(&path, b"x").unwrap();
        let mut l = lib("2.28.9", "13.0");
        l.path = path.clone();
        let real = std::fs::canonicalize(&path).unwrap();
        let c = check(&[l], Some(&real), true, &driver("13.0"), false);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.evidence[0].contains("dlopen"), "{c:?}");
    }

    #[test]
    fn a_library_built_for_a_newer_cuda_than_the_driver_fails() {
        let c = check(&[lib("2.28.9", "13.0")], None, true, &driver("12.8"), false);
        assert_eq!(c.status, Status::Fail, "{c:?}");
        // Another usable copy makes it a warning.
        let c = check(
            &[lib("2.28.9", "13.0"), lib("2.27.7", "12.9")],
            None,
            true,
            &driver("12.8"),
            false,
        );
        assert_eq!(c.status, Status::Warn);
        // Same major version is fine (CUDA minor version compatibility).
        let c = check(&[lib("2.28.9", "12.9")], None, true, &driver("12.2"), false);
        assert_eq!(c.status, Status::Ok, "{c:?}");
    }

    #[test]
    fn none_found_is_a_warning_unless_required() {
        let none = GpuFacts::default();
        assert_eq!(check(&[], None, false, &none, false).status, Status::Warn);
        assert_eq!(check(&[], None, false, &none, true).status, Status::Fail);
    }
}
