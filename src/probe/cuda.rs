//! The image's CUDA against the node's driver: is the driver older than the CUDA the image was
//! built for, and are CUDA forward-compatibility libraries (`/usr/local/cuda/compat/libcuda.so.*`)
//! in use? The Ray Train DLC's entrypoint turns them on when the driver is older; a pod that
//! bypasses the entrypoint then fails CUDA init on exactly those nodes.
//!
//! Facts come from a root folder (a fake image tree in tests) and the environment; the decision
//! is a pure function of them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::check::Check;
use super::gpu::parse_major_minor;
use crate::engine::library::{Search, expand};

/// NVIDIA's minimum Linux driver for each CUDA release (CUDA Toolkit release notes, "CUDA
/// Toolkit and Corresponding Driver Versions", GA drivers): a kernel module of at least this
/// version runs that CUDA natively.
pub const MIN_DRIVER: &[((u32, u32), &str)] = &[
    ((11, 0), "450.36.06"),
    ((11, 1), "455.23"),
    ((11, 2), "460.27.03"),
    ((11, 3), "465.19.01"),
    ((11, 4), "470.42.01"),
    ((11, 5), "495.29.05"),
    ((11, 6), "510.39.01"),
    ((11, 7), "515.43.04"),
    ((11, 8), "520.61.05"),
    ((12, 0), "525.60.13"),
    ((12, 1), "530.30.02"),
    ((12, 2), "535.54.03"),
    ((12, 3), "545.23.06"),
    ((12, 4), "550.54.14"),
    ((12, 5), "555.42.02"),
    ((12, 6), "560.28.03"),
    ((12, 8), "570.26"),
    ((12, 9), "575.51.03"),
    ((13, 0), "580.65.06"),
];

/// `580.65.06` → [580, 65, 6].
fn numbers(v: &str) -> Vec<u32> {
    v.split('.').map_while(|p| p.parse().ok()).collect()
}

/// The newest CUDA a kernel module version runs without compat libraries.
pub fn native_cuda(kernel_module: &str) -> Option<(u32, u32)> {
    let have = numbers(kernel_module);
    if have.is_empty() {
        return None;
    }
    MIN_DRIVER
        .iter()
        .rev()
        .find(|(_, min)| numbers(min) <= have)
        .map(|(cuda, _)| *cuda)
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CudaFacts {
    /// Each CUDA version the image declares, with where it says so (`CUDA_VERSION`,
    /// `/usr/local/cuda/version.json`, `torch/version.py`, `libcudart.so.12.8.90`).
    pub image: Vec<(String, String)>,
    /// `libcuda.so.*` files in a `compat` folder of the image (`/usr/local/cuda*/compat`).
    pub compat_files: Vec<PathBuf>,
    /// The libcuda this process has mapped (after the driver was loaded), if any.
    pub libcuda_loaded: Option<PathBuf>,
    /// The libcuda.so.1 the loader would open first (LD_LIBRARY_PATH, ld.so.conf, defaults).
    pub libcuda_first: Option<PathBuf>,
}

impl CudaFacts {
    /// The newest CUDA version the image declares (what some part of it needs).
    pub fn image_cuda(&self) -> Option<(u32, u32)> {
        self.image
            .iter()
            .filter_map(|(v, _)| parse_major_minor(v))
            .max()
    }

    /// Forward compatibility is in use: the loaded libcuda (or, with none loaded, the one the
    /// loader would open) is a compat library.
    pub fn compat_in_use(&self) -> bool {
        self.libcuda_loaded
            .as_deref()
            .or(self.libcuda_first.as_deref())
            .is_some_and(is_compat_path)
    }
}

fn is_compat_path(p: &Path) -> bool {
    p.parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == "compat")
}

/// The image's CUDA facts under `search.root`; `maps`: this process's /proc/self/maps text.
pub fn probe(search: &Search, maps: Option<&str>) -> CudaFacts {
    let mut image = vec![];
    if let Some(v) = search.env.get("CUDA_VERSION").filter(|v| !v.is_empty()) {
        image.push((v.clone(), "CUDA_VERSION".to_string()));
    }
    for json in expand(&search.at("/usr/local"), &["cuda*", "version.json"]) {
        if let Some(v) = std::fs::read_to_string(&json)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|j| j["cuda"]["version"].as_str().map(str::to_string))
        {
            image.push((v, shown(search, &json)));
        }
    }
    for txt in expand(&search.at("/usr/local"), &["cuda*", "version.txt"]) {
        // "CUDA Version 11.0.207"
        if let Some(v) = std::fs::read_to_string(&txt).ok().and_then(|t| {
            t.split_whitespace()
                .find(|w| parse_major_minor(w).is_some() && w.contains('.'))
                .map(str::to_string)
        }) {
            image.push((v, shown(search, &txt)));
        }
    }
    for cudart in expand(
        &search.at("/usr/local"),
        &["cuda*", "lib64", "libcudart.so.*"],
    ) {
        // libcudart.so.12.8.90: the full version is in the file name.
        let name = cudart.file_name().unwrap_or_default().to_string_lossy();
        let v = name.trim_start_matches("libcudart.so.");
        if v.matches('.').count() >= 1 {
            image.push((v.to_string(), shown(search, &cudart)));
        }
    }
    for py in torch_version_files(search) {
        if let Some(v) = std::fs::read_to_string(&py)
            .ok()
            .and_then(|t| torch_cuda(&t))
        {
            image.push((v, shown(search, &py)));
        }
    }
    image.dedup();
    let compat_files = expand(
        &search.at("/usr/local"),
        &["cuda*", "compat", "libcuda.so.*"],
    );
    let dirs = super::plugins::loader_dirs(
        search,
        search.env.get("LD_LIBRARY_PATH").map(String::as_str),
    );
    let libcuda_first = super::plugins::loader_search(search, &dirs, "libcuda.so.1");
    let libcuda_loaded = maps.and_then(|m| mapped(m, "libcuda.so").into_iter().next());
    CudaFacts {
        image,
        compat_files,
        libcuda_loaded,
        libcuda_first,
    }
}

fn shown(search: &Search, p: &Path) -> String {
    match p.strip_prefix(search.root) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => p.display().to_string(),
    }
}

fn torch_version_files(search: &Search) -> Vec<PathBuf> {
    let mut prefixes = vec![
        search.at("/usr"),
        search.at("/usr/local"),
        search.at("/opt/conda"),
    ];
    if let Some(v) = search.env.get("VIRTUAL_ENV") {
        prefixes.push(search.at(v));
    }
    if let Some(v) = search.env.get("CONDA_PREFIX") {
        prefixes.push(search.at(v));
    }
    let mut files = vec![];
    for prefix in prefixes {
        for kind in ["site-packages", "dist-packages"] {
            files.extend(expand(
                &prefix.join("lib"),
                &["python3*", kind, "torch", "version.py"],
            ));
        }
    }
    files
}

/// `cuda: Optional[str] = '12.8'` (or `cuda = '12.8'`) in torch/version.py.
fn torch_cuda(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("cuda")?;
        let value = rest.split('=').nth(1)?.trim().trim_matches(['\'', '"']);
        parse_major_minor(value).map(|_| value.to_string())
    })
}

/// Files whose name starts with `prefix` in a /proc/PID/maps text, in order, once each.
pub fn mapped(maps: &str, prefix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = vec![];
    for path in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
        let p = Path::new(path);
        if p.file_name()
            .is_some_and(|f| f.to_string_lossy().starts_with(prefix))
            && !out.iter().any(|o| o == p)
        {
            out.push(p.to_path_buf());
        }
    }
    out
}

/// The `cuda.compat` check: the image's CUDA against the node's driver. `kernel_module`:
/// /proc/driver/nvidia/version's version; `driver_api`: cuDriverGetVersion's CUDA version
/// (which reports the compat library's when one is loaded).
pub fn check(facts: &CudaFacts, kernel_module: Option<&str>, driver_api: Option<&str>) -> Check {
    const ID: &str = "cuda.compat";
    let mut evidence: Vec<String> = facts
        .image
        .iter()
        .map(|(v, from)| format!("image CUDA {v} ({from})"))
        .collect();
    let native = kernel_module.and_then(native_cuda);
    if let Some(k) = kernel_module {
        evidence.push(format!(
            "kernel module {k}{}",
            native.map_or(
                " (not in netcheck's driver table)".into(),
                |(a, b)| format!(": runs CUDA {a}.{b} natively")
            )
        ));
    }
    if let Some(d) = driver_api {
        evidence.push(format!("cuDriverGetVersion: CUDA {d}"));
    }
    if let Some(l) = &facts.libcuda_loaded {
        evidence.push(format!("libcuda loaded: {}", l.display()));
    } else if let Some(l) = &facts.libcuda_first {
        evidence.push(format!(
            "libcuda.so.1 the loader opens first: {}",
            l.display()
        ));
    }
    for f in &facts.compat_files {
        evidence.push(format!("compat library in the image: {}", f.display()));
    }
    let in_use = facts.compat_in_use();
    let image = facts.image_cuda();
    // The driver's own CUDA: from the kernel module; cuDriverGetVersion only when no compat
    // library answers for it.
    let driver = native.or_else(|| {
        (!in_use)
            .then(|| driver_api.and_then(parse_major_minor))
            .flatten()
    });
    let fmt = |(a, b): (u32, u32)| format!("{a}.{b}");
    let compat_word = if in_use {
        "compat libraries in use"
    } else {
        "no compat libraries in use"
    };
    let Some(driver) = driver else {
        return Check::ok(
            ID,
            format!(
                "no NVIDIA driver to compare the image's CUDA {} against; {compat_word}",
                image.map_or("(unknown)".into(), fmt)
            ),
        )
        .with_evidence(evidence);
    };
    // A compat library older than the kernel module fails CUDA init (system driver mismatch).
    if in_use
        && let (Some(k), Some(lib)) = (
            kernel_module,
            facts
                .libcuda_loaded
                .as_ref()
                .or(facts.libcuda_first.as_ref()),
        )
    {
        let lib_version = lib
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .trim_start_matches("libcuda.so.")
            .to_string();
        if numbers(&lib_version).len() >= 2 && numbers(&lib_version) < numbers(k) {
            return Check::fail(
                ID,
                format!("compat libcuda {lib_version} is older than the kernel module {k}: CUDA init fails (system driver mismatch)"),
            )
            .with_evidence(evidence)
            .with_hint("use compat libraries only on a driver older than the image's CUDA: take /usr/local/cuda/compat off LD_LIBRARY_PATH (the DLC's entrypoint decides this by itself)");
        }
    }
    let Some(image) = image else {
        return Check::ok(
            ID,
            format!(
                "driver runs CUDA {} natively; the image declares no CUDA version; {compat_word}",
                fmt(driver)
            ),
        )
        .with_evidence(evidence);
    };
    if image <= driver {
        return Check::ok(
            ID,
            format!(
                "driver (CUDA {}) is not older than the image's CUDA {}; {compat_word}",
                fmt(driver),
                fmt(image)
            ),
        )
        .with_evidence(evidence);
    }
    let older = format!(
        "driver (CUDA {}) is older than the image's CUDA {}",
        fmt(driver),
        fmt(image)
    );
    if in_use {
        return Check::ok(
            ID,
            format!("{older}; CUDA forward-compatibility libraries are in use"),
        )
        .with_evidence(evidence);
    }
    let hint = if facts.compat_files.is_empty() {
        "upgrade the node's driver, or use an image built for this driver's CUDA (forward compatibility needs the cuda-compat package and a data-center GPU)"
    } else {
        "the image has compat libraries but they are not loaded: run through the image's entrypoint (it turns them on when the driver is older), or put their folder first on LD_LIBRARY_PATH"
    };
    if image.0 > driver.0 {
        Check::fail(
            ID,
            format!("{older} and no compat libraries are in use: CUDA init fails"),
        )
        .with_evidence(evidence)
        .with_hint(hint)
    } else {
        Check::warn(
            ID,
            format!("{older}; no compat libraries in use: CUDA minor version compatibility runs most code, newer PTX does not JIT"),
        )
        .with_evidence(evidence)
        .with_hint(hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::library::fake::{self, image};
    use crate::probe::check::Status;

    fn facts(root: &Path, env: &[(&str, &str)], maps: Option<&str>) -> CudaFacts {
        let env = fake::env(env);
        let search = Search {
            root,
            env: &env,
            system: false,
        };
        probe(&search, maps)
    }

    const COMPAT: &str = "/usr/local/cuda/compat/libcuda.so.580.65.06";
    const HOST_LIBCUDA: &str = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";

    #[test]
    fn the_drivers_native_cuda_comes_from_nvidias_table() {
        assert_eq!(native_cuda("535.183.01"), Some((12, 2)));
        assert_eq!(native_cuda("580.65.06"), Some((13, 0)));
        assert_eq!(native_cuda("570.26"), Some((12, 8)));
        assert_eq!(native_cuda("570.25"), Some((12, 6)));
        assert_eq!(native_cuda("440.1"), None);
        assert_eq!(native_cuda("x"), None);
    }

    #[test]
    fn the_images_cuda_is_read_from_each_place_images_declare_it() {
        let root = image(&[
            (
                "/usr/local/cuda-13.0/version.json",
                r#"{"cuda": {"name": "CUDA SDK", "version": "13.0.1"}}"#,
            ),
            (
                "/usr/local/cuda-11.0/version.txt",
                "CUDA Version 11.0.207\n",
            ),
            ("/usr/local/cuda/lib64/libcudart.so.12.8.90", ""),
            (
                "/usr/local/lib/python3.12/site-packages/torch/version.py",
                "__version__ = '2.9.0'\ncuda: Optional[str] = '12.9'\n",
            ),
        ]);
        let f = facts(root.path(), &[("CUDA_VERSION", "12.4.1")], None);
        let sources: Vec<&str> = f.image.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            sources,
            [
                "CUDA_VERSION",
                "/usr/local/cuda-13.0/version.json",
                "/usr/local/cuda-11.0/version.txt",
                "/usr/local/cuda/lib64/libcudart.so.12.8.90",
                "/usr/local/lib/python3.12/site-packages/torch/version.py"
            ],
            "{f:?}"
        );
        assert_eq!(f.image[4].0, "12.9");
        assert_eq!(f.image_cuda(), Some((13, 0)));
    }

    #[test]
    fn an_old_driver_without_compat_fails_with_compat_passes() {
        // The DLC (CUDA 13) on a 535 node (CUDA 12.2), entrypoint bypassed: compat files are
        // there, the host's libcuda is loaded.
        let files = [(COMPAT, ""), (HOST_LIBCUDA, "")];
        let root = image(&files);
        let env = [("CUDA_VERSION", "13.0.1")];
        let maps = format!("7f00-7f01 r-xp 0 08:01 1 {HOST_LIBCUDA}\n");
        let f = facts(root.path(), &env, Some(&maps));
        assert!(!f.compat_in_use());
        let c = check(&f, Some("535.183.01"), Some("12.2"));
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(
            c.summary.contains("older than the image's CUDA 13.0"),
            "{c:?}"
        );
        assert!(c.hint.as_deref().unwrap().contains("entrypoint"));
        // Through the entrypoint: the compat library is what got loaded.
        let maps = format!("7f00-7f01 r-xp 0 08:01 1 {COMPAT}\n");
        let f = facts(root.path(), &env, Some(&maps));
        assert!(f.compat_in_use());
        let c = check(&f, Some("535.183.01"), Some("13.0"));
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(
            c.summary
                .contains("forward-compatibility libraries are in use")
        );
        // Nothing loaded yet (no GPU here): the loader's first libcuda decides, and
        // LD_LIBRARY_PATH puts the compat folder first.
        let f = facts(
            root.path(),
            &[env[0], ("LD_LIBRARY_PATH", "/usr/local/cuda/compat")],
            None,
        );
        std::fs::write(root.path().join("usr/local/cuda/compat/libcuda.so.1"), "").unwrap();
        let f2 = facts(
            root.path(),
            &[env[0], ("LD_LIBRARY_PATH", "/usr/local/cuda/compat")],
            None,
        );
        assert!(!f.compat_in_use(), "no libcuda.so.1 link in compat yet");
        assert!(f2.compat_in_use(), "{f2:?}");
    }

    #[test]
    fn same_major_warns_new_enough_passes_and_a_compat_older_than_the_module_fails() {
        let root = image(&[(HOST_LIBCUDA, "")]);
        let f = facts(root.path(), &[("CUDA_VERSION", "12.8.0")], None);
        assert_eq!(check(&f, Some("535.54.03"), None).status, Status::Warn);
        assert_eq!(check(&f, Some("570.86.10"), None).status, Status::Ok);
        assert_eq!(check(&f, Some("580.65.06"), None).status, Status::Ok);
        // No kernel module readable: cuDriverGetVersion stands in.
        assert_eq!(check(&f, None, Some("12.8")).status, Status::Ok);
        // No driver at all: nothing to compare, not a failure.
        assert_eq!(check(&f, None, None).status, Status::Ok);
        // A 580 compat library on a 590 module: mismatch.
        let root = image(&[(COMPAT, "")]);
        let maps = format!("1-2 r-xp 0 0:0 1 {COMPAT}\n");
        let f = facts(root.path(), &[("CUDA_VERSION", "13.0.1")], Some(&maps));
        let c = check(&f, Some("590.10.01"), Some("13.0"));
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(c.summary.contains("older than the kernel module"));
    }

    #[test]
    fn mapped_files_are_listed_once_in_order() {
        let maps = "1-2 r-xp 0 0:0 1 /a/libcuda.so.580.65.06\n3-4 r--p 0 0:0 1 /a/libcuda.so.580.65.06\n5-6 r-xp 0 0:0 0 [vdso]\n7-8 r-xp 0 0:0 1 /b/libnccl.so.2\n";
        assert_eq!(
            mapped(maps, "libcuda.so"),
            vec![PathBuf::from("/a/libcuda.so.580.65.06")]
        );
        assert_eq!(
            mapped(maps, "libnccl"),
            vec![PathBuf::from("/b/libnccl.so.2")]
        );
    }
}
