//! Finding `libnccl` and reading its version without initialising it.
//!
//! cudarc's dynamic loader looks for `libnccl.so`, `libnccl.so.13`, … but not `libnccl.so.2`,
//! the only name the `nvidia-nccl-cu*` wheels ship. So the launcher chooses a library here,
//! links it as `libnccl.so` in a private folder and puts that folder first on the workers'
//! `LD_LIBRARY_PATH` (glibc reads the variable only at process start, hence workers, not us).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Overrides the search: the exact library file to use.
pub const LIBRARY_ENV: &str = "NETCHECK_NCCL_LIBRARY";

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NcclLibrary {
    pub path: PathBuf,
    /// `2.28.9`, read with `ncclGetVersion`; `None` when the file could not be loaded.
    pub version: Option<String>,
    /// Where it was found: `NETCHECK_NCCL_LIBRARY`, `LD_LIBRARY_PATH`, `NCCL_HOME`, `system`,
    /// `python wheel`.
    pub source: String,
}

/// Every NCCL library found, in the order `run` prefers them: `NETCHECK_NCCL_LIBRARY`,
/// `LD_LIBRARY_PATH`, `NCCL_HOME`, the system paths, a Python wheel. Duplicates (the same file
/// through links) are listed once.
pub fn find_nccl_libraries() -> Vec<NcclLibrary> {
    let mut candidates: Vec<(PathBuf, &str)> = vec![];
    if let Some(p) = std::env::var_os(LIBRARY_ENV) {
        candidates.push((PathBuf::from(p), LIBRARY_ENV));
    }
    for dir in std::env::split_paths(&std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default()) {
        candidates.extend(names_in(&dir).map(|p| (p, "LD_LIBRARY_PATH")));
    }
    if let Some(home) = std::env::var_os("NCCL_HOME") {
        for sub in ["lib", "lib64", "build/lib"] {
            candidates.extend(names_in(&Path::new(&home).join(sub)).map(|p| (p, "NCCL_HOME")));
        }
    }
    candidates.extend(ldconfig_nccl().into_iter().map(|p| (p, "system")));
    for dir in SYSTEM_DIRS {
        candidates.extend(names_in(Path::new(dir)).map(|p| (p, "system")));
    }
    if let Some(dir) = python_wheel_dir() {
        candidates.extend(names_in(&dir).map(|p| (p, "python wheel")));
    }

    let mut seen = std::collections::HashSet::new();
    candidates
        .into_iter()
        .filter(|(p, _)| p.is_file())
        .filter(|(p, _)| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())))
        .map(|(path, source)| NcclLibrary {
            version: read_version(&path),
            path,
            source: source.to_string(),
        })
        .collect()
}

/// The library `run` uses, or exit 3 with what to install.
pub fn choose_nccl_library() -> Result<NcclLibrary> {
    let found = find_nccl_libraries();
    match found.iter().find(|l| l.version.is_some()) {
        Some(lib) => Ok(lib.clone()),
        None if !found.is_empty() => Err(Error::missing(
            format!(
                "NCCL library found but not loadable: {}",
                found
                    .iter()
                    .map(|l| l.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "check that it matches this machine (x86-64, glibc) or point NETCHECK_NCCL_LIBRARY at a working libnccl.so.2",
        )),
        None => Err(Error::missing(
            "NCCL not found (libnccl.so.2 in LD_LIBRARY_PATH, NCCL_HOME, the system paths or a Python wheel)",
            "install NCCL (`apt-get install libnccl2`, or `pip install nvidia-nccl-cu13`) or set NETCHECK_NCCL_LIBRARY=/path/to/libnccl.so.2",
        )),
    }
}

/// Creates (or reuses) a private folder holding `libnccl.so -> <library>` and returns it, to be
/// put first on the workers' `LD_LIBRARY_PATH`.
pub fn shim_dir(lib: &Path) -> Result<PathBuf> {
    let target = std::fs::canonicalize(lib).map_err(|e| Error::read(lib, e))?;
    let key = fnv1a(target.as_os_str().as_encoded_bytes());
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!("netcheck-nccl-{uid}-{key:016x}"));
    std::fs::create_dir_all(&dir).map_err(|e| Error::write(&dir, e))?;
    let link = dir.join("libnccl.so");
    if std::fs::read_link(&link).ok().as_deref() != Some(target.as_path()) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).map_err(|e| Error::write(&link, e))?;
    }
    Ok(dir)
}

/// Formats NCCL's integer version (22809 → `2.28.9`; before 2.9: 2708 → `2.7.8`).
pub fn format_version(code: i32) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100)
    }
}

/// Loads the library and calls `ncclGetVersion`, which needs no GPU and initialises nothing.
pub fn read_version(path: &Path) -> Option<String> {
    // SAFETY: loading NCCL runs only its static constructors; the symbol has the C signature
    // `ncclResult_t ncclGetVersion(int*)` in every NCCL 2.x release.
    unsafe {
        let lib = libloading::Library::new(path).ok()?;
        let get: libloading::Symbol<unsafe extern "C" fn(*mut i32) -> i32> =
            lib.get(b"ncclGetVersion\0").ok()?;
        let mut code = 0;
        (get(&mut code) == 0).then(|| format_version(code))
    }
}

/// The libnccl file this process has mapped, from `/proc/self/maps`.
pub fn loaded_library_path() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("libnccl.so"))
        })
        .map(PathBuf::from)
}

const SYSTEM_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/local/lib",
    "/usr/lib64",
    "/usr/local/cuda/lib64",
    "/opt/nccl/build/lib",
];

fn names_in(dir: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    ["libnccl.so.2", "libnccl.so"]
        .into_iter()
        .map(move |n| dir.join(n))
}

fn ldconfig_nccl() -> Vec<PathBuf> {
    let Ok(out) = std::process::Command::new("ldconfig").arg("-p").output() else {
        return vec![];
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("libnccl.so"))
        .filter_map(|l| l.split("=>").nth(1))
        .map(|p| PathBuf::from(p.trim()))
        .collect()
}

fn python_wheel_dir() -> Option<PathBuf> {
    let mut pythons = vec![PathBuf::from("python3")];
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        pythons.insert(0, Path::new(&venv).join("bin/python3"));
    }
    for python in pythons {
        let out = std::process::Command::new(&python)
            .args(["-c", "import nvidia.nccl as m; print(m.__path__[0])"])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if out.status.success() {
            let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
            return Some(Path::new(&dir).join("lib"));
        }
    }
    None
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_format_like_nccl_prints_them() {
        assert_eq!(format_version(22809), "2.28.9");
        assert_eq!(format_version(21903), "2.19.3");
        assert_eq!(format_version(2708), "2.7.8");
    }

    #[test]
    fn an_unloadable_file_has_no_version() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("libnccl.so.2");
        std::fs::write(&fake, b"not a library").unwrap();
        assert_eq!(read_version(&fake), None);
    }

    #[test]
    fn shim_links_libnccl_so_to_the_chosen_file() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libnccl.so.2");
        std::fs::write(&lib, b"x").unwrap();
        let shim = shim_dir(&lib).unwrap();
        let link = std::fs::read_link(shim.join("libnccl.so")).unwrap();
        assert_eq!(link, std::fs::canonicalize(&lib).unwrap());
    }
}
