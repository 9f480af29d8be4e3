//! Loading libfabric at run time (dlopen), so the binary has no link-time dependency on it and
//! a node without libfabric gets a clear "not installed" instead of a loader error.
//!
//! Only the exported functions are looked up here; libfabric's `static inline` calls
//! (`fi_domain`, `fi_send`, `fi_cq_read`, ...) are calls through the providers' ops tables and
//! live in `resources.rs`.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ffi;
use crate::error::{Error, Result};

/// Set to a library path to load that libfabric instead of searching.
pub const LIBFABRIC_ENV: &str = "NETCHECK_LIBFABRIC";

/// Where to look, in order. The EFA installer's copy comes first: on AWS hosts it is the one the
/// aws-ofi-nccl plugin uses, and a distribution libfabric found first would not list `efa`.
pub const SEARCH: &[&str] = &[
    "/opt/amazon/efa/lib/libfabric.so.1",
    "/opt/amazon/efa/lib64/libfabric.so.1",
    "libfabric.so.1",
];

type GetInfoFn = unsafe extern "C" fn(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const ffi::fi_info,
    info: *mut *mut ffi::fi_info,
) -> c_int;
type FreeInfoFn = unsafe extern "C" fn(info: *mut ffi::fi_info);
type DupInfoFn = unsafe extern "C" fn(info: *const ffi::fi_info) -> *mut ffi::fi_info;
type FabricFn = unsafe extern "C" fn(
    attr: *mut ffi::fi_fabric_attr,
    fabric: *mut *mut ffi::fid_fabric,
    context: *mut c_void,
) -> c_int;
type VersionFn = unsafe extern "C" fn() -> u32;
type StrErrorFn = unsafe extern "C" fn(errnum: c_int) -> *const c_char;
type ToStrFn = unsafe extern "C" fn(data: *const c_void, datatype: ffi::fi_type) -> *mut c_char;

/// The loaded library and the functions netcheck calls. Keep it alive as long as any libfabric
/// object exists: dropping it unloads the code the providers' ops tables point into.
pub struct Libfabric {
    pub(super) getinfo: GetInfoFn,
    pub(super) freeinfo: FreeInfoFn,
    pub(super) dupinfo: DupInfoFn,
    pub(super) fabric: FabricFn,
    strerror: StrErrorFn,
    tostr: Option<ToStrFn>,
    version: u32,
    path: PathBuf,
    _lib: libloading::Library,
}

/// Which library was loaded, for reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LibraryInfo {
    /// The file the dynamic loader opened.
    pub path: String,
    /// `fi_version()`: the API version the library implements, e.g. "1.17".
    pub version: String,
}

impl Libfabric {
    /// Loads libfabric from `$NETCHECK_LIBFABRIC` when set, else from [`SEARCH`].
    pub fn load() -> Result<Libfabric> {
        match std::env::var_os(LIBFABRIC_ENV) {
            Some(path) if !path.is_empty() => {
                let path = PathBuf::from(path);
                Self::open(&path).map_err(|e| {
                    Error::missing(
                        format!(
                            "cannot load libfabric from {LIBFABRIC_ENV}={}: {e}",
                            path.display()
                        ),
                        format!(
                            "point {LIBFABRIC_ENV} at a libfabric.so.1, or unset it to search {}",
                            SEARCH.join(", ")
                        ),
                    )
                })
            }
            _ => Self::search(SEARCH),
        }
    }

    /// Loads the libfabric at `path` (e.g. the copy a plugin already mapped).
    pub fn load_path(path: &Path) -> std::result::Result<Libfabric, String> {
        Self::open(path)
    }

    /// The release version (`fi_tostr(…, FI_TYPE_VERSION)`, libfabric's PACKAGE_VERSION,
    /// e.g. "1.22.0amzn4.0"); `None` when the library does not say.
    pub fn release(&self) -> Option<String> {
        let tostr = self.tostr?;
        let dummy = 0u64;
        // SAFETY: for FI_TYPE_VERSION fi_tostr does not read `data` (a valid u64 anyway) and
        // returns a thread-local buffer holding the package version, copied out here.
        let text = unsafe {
            cstr_or(
                Some(tostr(
                    &dummy as *const u64 as *const c_void,
                    ffi::FI_TYPE_VERSION,
                )),
                "",
            )
        };
        let text = text.trim();
        (!text.is_empty() && text.starts_with(|c: char| c.is_ascii_digit()))
            .then(|| text.to_string())
    }

    /// Tries each candidate in order; the error lists every attempt.
    pub fn search(candidates: &[&str]) -> Result<Libfabric> {
        let mut tried = Vec::new();
        for name in candidates {
            // An absolute path that does not exist is not worth a dlopen error message.
            if name.starts_with('/') && !Path::new(name).exists() {
                tried.push(format!("{name}: not present"));
                continue;
            }
            match Self::open(Path::new(name)) {
                Ok(lib) => return Ok(lib),
                Err(e) => tried.push(format!("{name}: {e}")),
            }
        }
        Err(Error::missing(
            format!("libfabric not found; tried {}", tried.join("; ")),
            format!(
                "install it (Debian/Ubuntu: apt-get install libfabric1; on AWS: the EFA installer, \
                 which puts it in /opt/amazon/efa/lib), or set {LIBFABRIC_ENV}=/path/to/libfabric.so.1"
            ),
        ))
    }

    fn open(path: &Path) -> std::result::Result<Libfabric, String> {
        // SAFETY: loading libfabric runs its constructors, which only set up provider tables.
        let lib =
            unsafe { libloading::Library::new(path) }.map_err(|e| short_dl_error(&e, path))?;
        // SAFETY: each symbol is looked up with the C signature from rdma/fabric.h (1.17).
        unsafe {
            let getinfo = *lib
                .get::<GetInfoFn>(b"fi_getinfo\0")
                .map_err(|e| short_dl_error(&e, path))?;
            let freeinfo = *lib
                .get::<FreeInfoFn>(b"fi_freeinfo\0")
                .map_err(|e| short_dl_error(&e, path))?;
            let dupinfo = *lib
                .get::<DupInfoFn>(b"fi_dupinfo\0")
                .map_err(|e| short_dl_error(&e, path))?;
            let fabric = *lib
                .get::<FabricFn>(b"fi_fabric\0")
                .map_err(|e| short_dl_error(&e, path))?;
            let version_fn = *lib
                .get::<VersionFn>(b"fi_version\0")
                .map_err(|e| short_dl_error(&e, path))?;
            let strerror = *lib
                .get::<StrErrorFn>(b"fi_strerror\0")
                .map_err(|e| short_dl_error(&e, path))?;
            let tostr = lib.get::<ToStrFn>(b"fi_tostr\0").ok().map(|s| *s);
            let path = loaded_path(getinfo as *const c_void).unwrap_or_else(|| path.to_path_buf());
            Ok(Libfabric {
                getinfo,
                freeinfo,
                dupinfo,
                fabric,
                strerror,
                tostr,
                version: version_fn(),
                path,
                _lib: lib,
            })
        }
    }

    /// `fi_version()`, the value to pass to `fi_getinfo` to get everything this library offers.
    pub fn api_version(&self) -> u32 {
        self.version
    }

    pub fn info(&self) -> LibraryInfo {
        LibraryInfo {
            path: self.path.display().to_string(),
            version: format_version(self.version),
        }
    }

    /// `fi_strerror` for a libfabric return code (negative or positive).
    pub fn strerror(&self, code: i64) -> String {
        let code = code.unsigned_abs().min(c_int::MAX as u64) as c_int;
        // SAFETY: fi_strerror returns a pointer to a static string.
        unsafe { cstr_or(Some((self.strerror)(code)), "unknown error") }
    }

    /// `fi_tostr` for one enum value (ep type, protocol, address format), e.g. "FI_EP_RDM".
    pub fn enum_name(&self, value: u32, kind: ffi::fi_type) -> Option<String> {
        let tostr = self.tostr?;
        // SAFETY: fi_tostr reads one value of the given kind from `data` and returns a pointer
        // to a thread-local buffer, copied out before the next call.
        let text = unsafe { cstr_or(Some(tostr(&value as *const u32 as *const c_void, kind)), "") };
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_string())
    }
}

/// `FI_VERSION(major, minor)` (a macro, so bindgen does not emit it).
pub const fn fi_version(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}

/// "1.17" from `FI_VERSION(1, 17)`.
pub fn format_version(v: u32) -> String {
    format!("{}.{}", v >> 16, v & 0xffff)
}

/// The file the dynamic loader mapped for the object containing `symbol`.
fn loaded_path(symbol: *const c_void) -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables; dli_fname points into them.
    let found = unsafe { libc::dladdr(symbol, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return None;
    }
    let name = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    Some(PathBuf::from(name))
}

/// The loader's reason (libloading keeps it in the error's source), without the file name
/// dlerror repeats.
fn short_dl_error(e: &libloading::Error, path: &Path) -> String {
    let text = std::error::Error::source(e).map_or_else(|| e.to_string(), |s| s.to_string());
    let prefix = format!("{}: ", path.display());
    text.strip_prefix(&prefix).unwrap_or(&text).to_string()
}

/// Copies a C string that libfabric owns; `fallback` for null.
///
/// # Safety
/// `ptr` must be null or point to a NUL-terminated string valid for the duration of the call.
pub(super) unsafe fn cstr_or(ptr: Option<*const c_char>, fallback: &str) -> String {
    match ptr {
        Some(p) if !p.is_null() => unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned(),
        _ => fallback.to_string(),
    }
}

/// A malloc'd copy of `s`, for hint fields that `fi_freeinfo` frees.
pub(super) fn strdup(s: &str) -> Result<*mut c_char> {
    let c = CString::new(s).map_err(|_| Error::usage(format!("`{s}` contains a NUL byte")))?;
    // SAFETY: strdup copies the NUL-terminated string into malloc'd memory.
    let p = unsafe { libc::strdup(c.as_ptr()) };
    if p.is_null() {
        return Err(Error::infra("out of memory copying a libfabric hint"));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_format_like_fi_info() {
        assert_eq!(fi_version(1, 17), 0x1_0011);
        assert_eq!(format_version(fi_version(1, 22)), "1.22");
        assert_eq!(format_version(fi_version(2, 0)), "2.0");
    }

    #[test]
    fn the_release_version_agrees_with_the_api_version() {
        // Where libfabric is installed (CI: Debian's libfabric1), its package version starts
        // with the API version's major number and is not older than it.
        let Ok(lib) = Libfabric::load() else {
            crate::say!("skipping: no libfabric here");
            return;
        };
        let release = lib
            .release()
            .expect("fi_tostr(FI_TYPE_VERSION) names the release");
        crate::say!("libfabric {release} (API {})", lib.info().version);
        let (major, minor) = (lib.api_version() >> 16, lib.api_version() & 0xffff);
        let mut parts = release.split(|c: char| !c.is_ascii_digit());
        let r_major: u32 = parts.next().unwrap().parse().unwrap();
        let r_minor: u32 = parts.next().unwrap().parse().unwrap();
        assert!(
            (r_major, r_minor) >= (major, minor),
            "{release} vs API {major}.{minor}"
        );
    }

    #[test]
    fn a_missing_library_is_a_missing_environment_error_listing_every_attempt() {
        let err = Libfabric::search(&["/nonexistent/libfabric.so.1", "libnetcheck-no-such.so.1"])
            .err()
            .expect("no such library");
        assert_eq!(err.exit_code(), crate::exit::MISSING_ENVIRONMENT);
        let msg = err.to_string();
        assert!(
            msg.contains("/nonexistent/libfabric.so.1: not present"),
            "{msg}"
        );
        assert!(msg.contains("libnetcheck-no-such.so.1:"), "{msg}");
        assert!(err.hint().unwrap().contains("apt-get install libfabric1"));
    }
}
