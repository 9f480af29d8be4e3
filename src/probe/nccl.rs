//! Finding NCCL libraries and reading their versions, without initialising anything: each file
//! is loaded (`dlopen`, lazy, local) only to call `ncclGetVersion`, and scanned for the version
//! string NCCL embeds (`NCCL version 2.28.9+cuda13.0`), which also says which CUDA it was built
//! for.
//!
//! Where: LD_LIBRARY_PATH, $NCCL_HOME/lib{,64}, the `nvidia-nccl-cu*` Python wheel
//! (`nvidia/nccl/lib/libnccl.so.2`, found by asking `python3`), `ldconfig -p`, and the usual
//! system and vendor directories. `run` uses the same discovery to pick its library.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::check::Check;
use super::gpu::{GpuFacts, parse_major_minor};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NcclSource {
    LdLibraryPath,
    NcclHome,
    PythonWheel,
    Ldconfig,
    SystemPath,
}

impl NcclSource {
    pub fn label(self) -> &'static str {
        match self {
            NcclSource::LdLibraryPath => "LD_LIBRARY_PATH",
            NcclSource::NcclHome => "NCCL_HOME",
            NcclSource::PythonWheel => "python wheel",
            NcclSource::Ldconfig => "ldconfig",
            NcclSource::SystemPath => "system path",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NcclLibrary {
    /// The real file (symlinks resolved); one entry per file.
    pub path: PathBuf,
    /// "2.28.9", from `ncclGetVersion` (or the embedded string when the file cannot be loaded).
    pub version: Option<String>,
    /// Where it was found first.
    pub source: NcclSource,
    /// The CUDA version NCCL was built for ("13.0"), from its embedded version string.
    #[serde(default)]
    pub cuda: Option<String>,
}

/// Directories searched after the environment's, in this order.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/local/cuda/lib64",
    "/usr/local/nccl/lib",
    "/opt/nccl/build/lib",
];

/// Every NCCL library on this host, in search order, each with its version.
pub fn find_nccl_libraries() -> Vec<NcclLibrary> {
    find_with(&SearchInputs::from_env())
}

/// What the search looks at; `from_env` fills it from this process and host.
#[derive(Debug, Clone, Default)]
pub struct SearchInputs {
    pub ld_library_path: Option<String>,
    pub nccl_home: Option<String>,
    /// `<wheel>/nvidia/nccl/lib`.
    pub python_wheel_lib: Option<PathBuf>,
    /// Paths `ldconfig -p` lists for libnccl.
    pub ldconfig: Vec<PathBuf>,
    pub system_dirs: Vec<PathBuf>,
}

impl SearchInputs {
    pub fn from_env() -> SearchInputs {
        SearchInputs {
            ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
            nccl_home: std::env::var("NCCL_HOME").ok(),
            python_wheel_lib: python_wheel_dir().map(|d| d.join("lib")),
            ldconfig: ldconfig_paths("libnccl.so"),
            system_dirs: SYSTEM_DIRS.iter().map(PathBuf::from).collect(),
        }
    }
}

pub fn find_with(inputs: &SearchInputs) -> Vec<NcclLibrary> {
    let mut dirs: Vec<(PathBuf, NcclSource)> = Vec::new();
    for d in inputs
        .ld_library_path
        .iter()
        .flat_map(|p| p.split(':'))
        .filter(|d| !d.is_empty())
    {
        dirs.push((PathBuf::from(d), NcclSource::LdLibraryPath));
    }
    if let Some(home) = inputs.nccl_home.as_deref().filter(|h| !h.is_empty()) {
        for sub in ["lib", "lib64"] {
            dirs.push((Path::new(home).join(sub), NcclSource::NcclHome));
        }
    }
    if let Some(d) = &inputs.python_wheel_lib {
        dirs.push((d.clone(), NcclSource::PythonWheel));
    }
    let mut files: Vec<(PathBuf, NcclSource)> = Vec::new();
    for (dir, source) in dirs {
        files.extend(nccl_files_in(&dir).into_iter().map(|f| (f, source)));
    }
    files.extend(
        inputs
            .ldconfig
            .iter()
            .map(|p| (p.clone(), NcclSource::Ldconfig)),
    );
    for dir in &inputs.system_dirs {
        files.extend(
            nccl_files_in(dir)
                .into_iter()
                .map(|f| (f, NcclSource::SystemPath)),
        );
    }

    let mut found: Vec<NcclLibrary> = Vec::new();
    for (file, source) in files {
        let Ok(real) = std::fs::canonicalize(&file) else {
            continue;
        };
        if !real.is_file() || found.iter().any(|l| l.path == real) {
            continue;
        }
        let (version, cuda) = read_version(&real);
        found.push(NcclLibrary {
            path: real,
            version,
            source,
            cuda,
        });
    }
    found
}

/// `libnccl.so` and `libnccl.so.<N...>` in `dir`, sorted.
fn nccl_files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name == "libnccl.so"
                || name
                    .strip_prefix("libnccl.so.")
                    .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

/// (version, CUDA build version) of one library file.
pub fn read_version(path: &Path) -> (Option<String>, Option<String>) {
    let embedded = embedded_version(path);
    let loaded = version_by_loading(path);
    let version = loaded.or_else(|| embedded.as_ref().map(|(v, _)| v.clone()));
    (version, embedded.and_then(|(_, cuda)| cuda))
}

/// `ncclGetVersion` of the library at `path`; loads it without running any NCCL init.
fn version_by_loading(path: &Path) -> Option<String> {
    type GetVersion = unsafe extern "C" fn(*mut std::ffi::c_int) -> std::ffi::c_int;
    let flags = libc::RTLD_LAZY | libc::RTLD_LOCAL;
    // SAFETY: loading NCCL runs only its static constructors; ncclGetVersion writes one int.
    unsafe {
        let lib = libloading::os::unix::Library::open(Some(path), flags).ok()?;
        let get: libloading::os::unix::Symbol<GetVersion> = lib.get(b"ncclGetVersion\0").ok()?;
        let mut code = 0;
        if get(&mut code) != 0 {
            return None;
        }
        // Keep the library loaded: NCCL is not built to be unloaded, and a second look at the
        // same file returns this handle.
        std::mem::forget(lib);
        Some(decode_version(code))
    }
}

/// NCCL_VERSION_CODE → "X.Y.Z" (X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before).
pub fn decode_version(code: i32) -> String {
    let code = code.max(0);
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100)
    }
}

static EMBEDDED: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    regex::bytes::Regex::new(r"NCCL version (\d+\.\d+\.\d+)[A-Za-z0-9_.-]*(?:\+cuda(\d+\.\d+))?")
        .expect("valid regex")
});

/// The version string NCCL embeds, read in chunks (the library is hundreds of MB).
fn embedded_version(path: &Path) -> Option<(String, Option<String>)> {
    scan_file(path, &EMBEDDED, 1 << 30)
        .map(|caps| (caps[0].clone().unwrap_or_default(), caps[1].clone()))
}

/// The first match of `re` in the file's first `limit` bytes, as its capture groups.
pub fn scan_file(path: &Path, re: &regex::bytes::Regex, limit: u64) -> Option<Vec<Option<String>>> {
    scan_chunks(path, re, limit, 8 << 20, 256)
}

/// `scan_file` with explicit chunk sizes; `overlap` bytes of each chunk are kept for the next,
/// so a match is found even when it crosses a chunk boundary (`overlap` must be at least the
/// longest possible match).
fn scan_chunks(
    path: &Path,
    re: &regex::bytes::Regex,
    limit: u64,
    chunk_len: usize,
    overlap: usize,
) -> Option<Vec<Option<String>>> {
    let mut file = std::fs::File::open(path).ok()?.take(limit);
    let mut buf: Vec<u8> = Vec::with_capacity(chunk_len + overlap);
    let mut chunk = vec![0u8; chunk_len];
    loop {
        let n = file.read(&mut chunk).ok()?;
        let eof = n == 0;
        buf.extend_from_slice(&chunk[..n]);
        let mut keep_from = buf.len().saturating_sub(overlap);
        if let Some(c) = re.captures(&buf) {
            let whole = c.get(0).expect("group 0 always matches");
            // A match touching the end of what was read may continue in the next chunk.
            if eof || whole.end() + overlap <= buf.len() {
                return Some(
                    (1..c.len())
                        .map(|i| {
                            c.get(i)
                                .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
                        })
                        .collect(),
                );
            }
            keep_from = keep_from.min(whole.start());
        }
        if eof {
            return None;
        }
        buf.drain(..keep_from);
    }
}

/// Set to the Python interpreter whose `nvidia-nccl-cu*` wheel should be found (e.g. a venv's).
pub const PYTHON_ENV: &str = "NETCHECK_PYTHON";

/// `<site-packages>/nvidia/nccl`, asking `$NETCHECK_PYTHON`, `python3` or `python` (the first
/// that has the wheel). It is a namespace package: `__path__`, not `__file__`.
pub fn python_wheel_dir() -> Option<PathBuf> {
    let mut interpreters: Vec<String> = std::env::var(PYTHON_ENV)
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
    interpreters.extend(["python3".to_string(), "python".to_string()]);
    interpreters.iter().find_map(|python| {
        let out = run_with_timeout(
            python,
            &["-c", "import nvidia.nccl as m; print(list(m.__path__)[0])"],
            Duration::from_secs(15),
        )?;
        let line = out.lines().next()?.trim();
        (!line.is_empty()).then(|| PathBuf::from(line))
    })
}

/// Paths `ldconfig -p` lists for libraries whose name starts with `prefix`.
pub fn ldconfig_paths(prefix: &str) -> Vec<PathBuf> {
    let out = ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|cmd| run_with_timeout(cmd, &["-p"], Duration::from_secs(10)));
    out.map(|text| parse_ldconfig(&text, prefix))
        .unwrap_or_default()
}

/// `\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2` → the path.
pub fn parse_ldconfig(text: &str, prefix: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| {
            let (name, path) = line.trim().split_once(" => ")?;
            name.starts_with(prefix).then(|| PathBuf::from(path.trim()))
        })
        .collect()
}

/// A command's stdout, or `None` when it is missing, fails or takes too long.
pub fn run_with_timeout(cmd: &str, args: &[&str], timeout: Duration) -> Option<String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let text = reader.join().ok()?;
    status.success().then_some(text)
}

/// The file `dlopen("libnccl.so.2")` opens in this process's environment. Call it before
/// loading any NCCL by path: once a copy is loaded, the name resolves to that copy.
pub fn loader_choice() -> Option<PathBuf> {
    // SAFETY: as in `version_by_loading`.
    unsafe {
        let lib = libloading::os::unix::Library::open(
            Some("libnccl.so.2"),
            libc::RTLD_LAZY | libc::RTLD_LOCAL,
        )
        .ok()?;
        let sym: libloading::os::unix::Symbol<*const std::ffi::c_void> =
            lib.get(b"ncclGetVersion\0").ok()?;
        let mut info: libc::Dl_info = std::mem::zeroed();
        let found = libc::dladdr(*sym, &mut info) != 0 && !info.dli_fname.is_null();
        let path = found.then(|| {
            PathBuf::from(
                std::ffi::CStr::from_ptr(info.dli_fname)
                    .to_string_lossy()
                    .into_owned(),
            )
        });
        std::mem::forget(lib);
        path.and_then(|p| std::fs::canonicalize(p).ok())
    }
}

/// The `nccl.libraries` check.
pub fn check(
    libs: &[NcclLibrary],
    loader: Option<&Path>,
    cudarc_finds: bool,
    gpus: &GpuFacts,
    required: bool,
) -> Check {
    const ID: &str = "nccl.libraries";
    let describe = |l: &NcclLibrary| {
        format!(
            "{} {} ({}{}{})",
            l.path.display(),
            l.version.as_deref().unwrap_or("version unknown"),
            l.source.label(),
            l.cuda
                .as_deref()
                .map_or(String::new(), |c| format!(", built for CUDA {c}")),
            if loader == Some(l.path.as_path()) {
                ", what dlopen(\"libnccl.so.2\") opens here"
            } else {
                ""
            }
        )
    };
    let mut evidence: Vec<String> = libs.iter().map(describe).collect();
    evidence.push(format!(
        "netcheck's own loader (cudarc) {} NCCL by the names libnccl.so/.so.N it tries",
        if cudarc_finds {
            "finds"
        } else {
            "does not find"
        }
    ));
    if libs.is_empty() {
        return Check::missing(ID, required, "no NCCL library found")
            .with_evidence(evidence)
            .with_hint("install one (`pip install nvidia-nccl-cu13`, or cu12 for CUDA 12 drivers), or point NCCL_HOME or LD_LIBRARY_PATH at it");
    }

    // A library built for a newer CUDA major version than the driver supports cannot run.
    let driver = gpus.cuda_driver_version();
    let too_new: Vec<&NcclLibrary> = libs
        .iter()
        .filter(|l| {
            let built = l.cuda.as_deref().and_then(parse_major_minor);
            matches!((built, driver), (Some((b, _)), Some((d, _))) if b > d)
        })
        .collect();
    if !too_new.is_empty() {
        let all = too_new.len() == libs.len();
        let (d_major, d_minor) = driver.unwrap_or_default();
        let summary = format!(
            "{} of {} NCCL libraries need a newer driver than this one (CUDA {d_major}.{d_minor})",
            too_new.len(),
            libs.len()
        );
        let check = if all {
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
        return Check::warn(ID, format!("{} NCCL libraries with different versions: {}", libs.len(), versions.join(", ")))
            .with_evidence(evidence)
            .with_hint("which one a program loads depends on its RPATH and LD_LIBRARY_PATH (torch uses its wheel's); `NCCL_DEBUG=INFO` prints the version actually used");
    }
    let summary = match libs.len() {
        1 => format!(
            "NCCL {} at {}",
            versions.first().unwrap_or(&"(version unknown)"),
            libs[0].path.display()
        ),
        n => format!(
            "{n} copies of NCCL {}",
            versions.first().unwrap_or(&"(version unknown)")
        ),
    };
    Check::ok(ID, summary).with_evidence(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::check::Status;

    #[test]
    fn a_version_string_across_a_chunk_boundary_is_found_whole() {
        let tmp = tempfile::tempdir().unwrap();
        for offset in 0..100 {
            let path = tmp.path().join("lib");
            let mut bytes = vec![b'x'; 100];
            bytes.splice(
                offset..offset,
                b"NCCL version 2.28.9+cuda13.0\0".iter().copied(),
            );
            std::fs::write(&path, &bytes).unwrap();
            let caps = scan_chunks(&path, &EMBEDDED, 1 << 20, 50, 40).unwrap();
            assert_eq!(caps[0].as_deref(), Some("2.28.9"), "offset {offset}");
            assert_eq!(caps[1].as_deref(), Some("13.0"), "offset {offset}");
        }
    }

    #[test]
    fn version_codes_decode_both_schemes() {
        assert_eq!(decode_version(22809), "2.28.9");
        assert_eq!(decode_version(21805), "2.18.5");
        assert_eq!(decode_version(2804), "2.8.4");
    }

    #[test]
    fn ldconfig_lines_give_paths() {
        let text = "1234 libs found in cache `/etc/ld.so.cache'\n\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2\n\tlibnccl-net.so (libc6,x86-64) => /opt/x/libnccl-net.so\n\tlibm.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libm.so.6\n";
        assert_eq!(
            parse_ldconfig(text, "libnccl.so"),
            vec![PathBuf::from("/lib/x86_64-linux-gnu/libnccl.so.2")]
        );
        assert_eq!(
            parse_ldconfig(text, "libnccl-net"),
            vec![PathBuf::from("/opt/x/libnccl-net.so")]
        );
    }

    /// A stand-in library: not loadable, but with NCCL's embedded version string.
    fn fake_nccl(dir: &Path, name: &str, version: &str, cuda: &str) -> PathBuf {
        let path = dir.join(name);
        let mut bytes = vec![0u8; 3 << 20];
        let s = format!("NCCL version {version}+cuda{cuda}");
        let at = bytes.len() - 100; // near the end, past the first read chunk boundary logic
        bytes[at..at + s.len()].copy_from_slice(s.as_bytes());
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn search_order_dedups_symlinks_and_reads_embedded_versions() {
        let tmp = tempfile::tempdir().unwrap();
        let (ld, wheel, sys) = (
            tmp.path().join("ld"),
            tmp.path().join("wheel/lib"),
            tmp.path().join("sys"),
        );
        for d in [&ld, &wheel, &sys] {
            std::fs::create_dir_all(d).unwrap();
        }
        fake_nccl(&wheel, "libnccl.so.2", "2.28.9", "13.0");
        let real = fake_nccl(&sys, "libnccl.so.2.28.3", "2.28.3", "12.9");
        std::os::unix::fs::symlink(&real, sys.join("libnccl.so.2")).unwrap();
        std::os::unix::fs::symlink("libnccl.so.2", sys.join("libnccl.so")).unwrap();
        std::fs::write(sys.join("libnccl_static.a"), b"x").unwrap();
        // The system copy is also on LD_LIBRARY_PATH: it is listed once, from there.
        std::os::unix::fs::symlink(&real, ld.join("libnccl.so.2")).unwrap();

        let inputs = SearchInputs {
            ld_library_path: Some(format!(":{}:/nonexistent", ld.display())),
            python_wheel_lib: Some(wheel.clone()),
            ldconfig: vec![sys.join("libnccl.so.2")],
            system_dirs: vec![sys.clone()],
            ..Default::default()
        };
        let libs = find_with(&inputs);
        assert_eq!(libs.len(), 2, "{libs:#?}");
        assert_eq!(libs[0].source, NcclSource::LdLibraryPath);
        assert_eq!(libs[0].path, std::fs::canonicalize(&real).unwrap());
        assert_eq!(libs[0].version.as_deref(), Some("2.28.3"));
        assert_eq!(libs[0].cuda.as_deref(), Some("12.9"));
        assert_eq!(libs[1].source, NcclSource::PythonWheel);
        assert_eq!(libs[1].version.as_deref(), Some("2.28.9"));
        assert_eq!(libs[1].cuda.as_deref(), Some("13.0"));
    }

    fn lib(version: &str, cuda: &str) -> NcclLibrary {
        NcclLibrary {
            path: PathBuf::from(format!("/x/{version}/libnccl.so.2")),
            version: Some(version.into()),
            source: NcclSource::SystemPath,
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
    fn differing_versions_warn_and_name_the_loaders_choice() {
        let libs = [lib("2.28.9", "13.0"), lib("2.28.3", "13.0")];
        let c = check(
            &libs,
            Some(Path::new("/x/2.28.3/libnccl.so.2")),
            false,
            &driver("13.0"),
            false,
        );
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.summary.contains("2.28.3, 2.28.9"));
        assert!(
            c.evidence
                .iter()
                .any(|e| e.contains("2.28.3") && e.contains("dlopen"))
        );
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
        // Same major version is fine (minor version compatibility).
        let c = check(&[lib("2.28.9", "12.9")], None, true, &driver("12.2"), false);
        assert_eq!(c.status, Status::Ok, "{c:?}");
    }

    #[test]
    fn none_found_is_a_warning_unless_required() {
        assert_eq!(
            check(&[], None, false, &GpuFacts::default(), false).status,
            Status::Warn
        );
        assert_eq!(
            check(&[], None, false, &GpuFacts::default(), true).status,
            Status::Fail
        );
    }
}
