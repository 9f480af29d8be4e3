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
/// `LD_LIBRARY_PATH`, `NCCL_HOME`, the system paths, a Python wheel, a conda environment.
/// Duplicates (the same file through links) are listed once.
pub fn find_nccl_libraries() -> Vec<NcclLibrary> {
    let env = process_env();
    let mut found = find_nccl_libraries_in(&Search::system(&env));
    for l in &mut found {
        l.version = read_version(&l.path);
    }
    found
}

/// This process's environment as text (a value that is not UTF-8 is kept lossily rather than
/// panicking as `std::env::vars` does).
pub fn process_env() -> std::collections::BTreeMap<String, String> {
    std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// Where to look: a root folder (`/`, or a fake image tree in tests) and the environment the
/// paths come from. Paths the environment names are taken inside `root`.
pub struct Search<'a> {
    pub root: &'a Path,
    pub env: &'a std::collections::BTreeMap<String, String>,
    /// Also ask this system's `ldconfig -p` and `python3` (only for the real root).
    pub system: bool,
}

impl<'a> Search<'a> {
    pub fn system(env: &'a std::collections::BTreeMap<String, String>) -> Search<'a> {
        Search {
            root: Path::new("/"),
            env,
            system: true,
        }
    }

    /// `path` (absolute, as the image names it) inside the root.
    pub fn at(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        match path.strip_prefix("/") {
            Ok(rel) => self.root.join(rel),
            Err(_) => self.root.join(path),
        }
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// [`find_nccl_libraries`] under `search.root`, without loading anything (`version` is `None`).
/// Every location images keep NCCL in: `NETCHECK_NCCL_LIBRARY`, `LD_LIBRARY_PATH`,
/// `NCCL_HOME`, ldconfig and the system folders (NGC: `/usr/lib/x86_64-linux-gnu`), PyTorch's
/// `nvidia-nccl-cu*` wheel in any `python3.X` site-packages or dist-packages (system, `/usr/local`,
/// a venv, conda), and conda environments' `lib` (`$CONDA_PREFIX`, `/opt/conda`,
/// `/opt/conda/envs/*`).
pub fn find_nccl_libraries_in(search: &Search) -> Vec<NcclLibrary> {
    let mut candidates: Vec<(PathBuf, &str)> = vec![];
    if let Some(p) = search.var(LIBRARY_ENV) {
        candidates.push((search.at(p), LIBRARY_ENV));
    }
    for dir in search.var("LD_LIBRARY_PATH").unwrap_or("").split(':') {
        if !dir.is_empty() {
            candidates.extend(names_in(&search.at(dir)).map(|p| (p, "LD_LIBRARY_PATH")));
        }
    }
    if let Some(home) = search.var("NCCL_HOME") {
        for sub in ["lib", "lib64", "build/lib"] {
            candidates.extend(names_in(&search.at(home).join(sub)).map(|p| (p, "NCCL_HOME")));
        }
    }
    if search.system {
        candidates.extend(ldconfig_nccl().into_iter().map(|p| (p, "system")));
    }
    for dir in SYSTEM_DIRS {
        candidates.extend(names_in(&search.at(dir)).map(|p| (p, "system")));
    }
    if search.system
        && let Some(dir) = python_wheel_dir()
    {
        candidates.extend(names_in(&dir).map(|p| (p, "python wheel")));
    }
    for dir in wheel_dirs(search) {
        candidates.extend(names_in(&dir).map(|p| (p, "python wheel")));
    }
    for prefix in conda_prefixes(search) {
        candidates.extend(names_in(&prefix.join("lib")).map(|p| (p, "conda")));
    }

    let mut seen = std::collections::HashSet::new();
    candidates
        .into_iter()
        .filter(|(p, _)| p.is_file())
        .filter(|(p, _)| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())))
        .map(|(path, source)| NcclLibrary {
            version: None,
            path,
            source: source.to_string(),
        })
        .collect()
}

/// Python installations' package folders: `lib/python3.X/{site,dist}-packages` under the
/// system prefixes, `$VIRTUAL_ENV`, common venv folders, user installs and conda prefixes.
fn python_package_dirs(search: &Search) -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = vec![];
    if let Some(v) = search.var("VIRTUAL_ENV") {
        prefixes.push(search.at(v));
    }
    for p in ["/usr", "/usr/local", "/opt/venv", "/venv", "/root/.local"] {
        prefixes.push(search.at(p));
    }
    prefixes.extend(expand(&search.at("/home"), &["*", ".local"]));
    prefixes.extend(expand(&search.at("/opt"), &["*", "venv"]));
    prefixes.extend(expand(&search.at("/opt"), &["*", ".venv"]));
    prefixes.extend(conda_prefixes(search));
    let mut dirs = vec![];
    for prefix in prefixes {
        for lib in ["lib", "lib64"] {
            for kind in ["site-packages", "dist-packages"] {
                dirs.extend(expand(&prefix.join(lib), &["python3*", kind]));
            }
        }
    }
    dirs
}

/// `nvidia/nccl/lib` of every `nvidia-nccl-cu*` wheel installed.
fn wheel_dirs(search: &Search) -> Vec<PathBuf> {
    python_package_dirs(search)
        .into_iter()
        .map(|d| d.join("nvidia/nccl/lib"))
        .filter(|d| d.is_dir())
        .collect()
}

/// Conda installations and their environments: `$CONDA_PREFIX`, `/opt/conda` and the other
/// usual install folders, and each one's `envs/*`.
fn conda_prefixes(search: &Search) -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = vec![];
    if let Some(p) = search.var("CONDA_PREFIX") {
        bases.push(search.at(p));
    }
    for p in [
        "/opt/conda",
        "/opt/miniconda3",
        "/opt/miniforge3",
        "/root/miniconda3",
        "/root/anaconda3",
    ] {
        bases.push(search.at(p));
    }
    for name in ["anaconda3", "miniconda3", "miniforge3"] {
        bases.extend(expand(&search.at("/home"), &["*", name]));
    }
    let mut prefixes: Vec<PathBuf> = vec![];
    for base in bases.into_iter().filter(|b| b.is_dir()) {
        let envs = expand(&base, &["envs", "*"]);
        if !prefixes.contains(&base) {
            prefixes.push(base);
        }
        for env in envs {
            if !prefixes.contains(&env) {
                prefixes.push(env);
            }
        }
    }
    prefixes
}

/// The folders `base/<c1>/<c2>/...` that exist, where a component may hold one `*` (matched
/// against the names in that folder, sorted).
pub fn expand(base: &Path, components: &[&str]) -> Vec<PathBuf> {
    let Some((first, rest)) = components.split_first() else {
        return vec![base.to_path_buf()];
    };
    let matches: Vec<PathBuf> = match first.split_once('*') {
        None => {
            let p = base.join(first);
            if p.exists() { vec![p] } else { vec![] }
        }
        Some((prefix, suffix)) => {
            let mut names: Vec<String> = std::fs::read_dir(base)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    n.len() >= prefix.len() + suffix.len()
                        && n.starts_with(prefix)
                        && n.ends_with(suffix)
                })
                .collect();
            names.sort();
            names.into_iter().map(|n| base.join(n)).collect()
        }
    };
    matches.into_iter().flat_map(|m| expand(&m, rest)).collect()
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

/// Fake image trees for the unit tests of the searches over an image (here and in probe).
#[cfg(test)]
pub(crate) mod fake {
    use std::collections::BTreeMap;

    /// A fake image tree: each file at its path (absolute, as in the image) with its text.
    pub(crate) fn image(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let file = root.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, text).unwrap();
        }
        root
    }

    /// An environment for a `Search`, from pairs.
    pub(crate) fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
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

    /// A fake image tree with `libnccl.so.2` at each of `paths` (absolute, as in the image).
    fn image(paths: &[&str]) -> tempfile::TempDir {
        let files: Vec<(&str, &str)> = paths.iter().map(|p| (*p, "not really NCCL")).collect();
        fake::image(&files)
    }

    fn found_in(root: &Path, env: &[(&str, &str)]) -> Vec<(String, String)> {
        let env = fake::env(env);
        let search = Search {
            root,
            env: &env,
            system: false,
        };
        find_nccl_libraries_in(&search)
            .into_iter()
            .map(|l| {
                let rel = l.path.strip_prefix(root).unwrap().display().to_string();
                (format!("/{rel}"), l.source)
            })
            .collect()
    }

    /// (file in the image, environment, expected source)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

    #[test]
    fn nccl_is_found_where_each_kind_of_image_keeps_it() {
        let cases: &[Case] = &[
            // The Ray Train DLC and the GPU host: torch's wheel in a python3.X site-packages.
            (
                "/usr/local/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
                &[],
                "python wheel",
            ),
            // Debian/Ubuntu's python: dist-packages, and the version-less python3 folder.
            (
                "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
                &[],
                "python wheel",
            ),
            // A venv named by VIRTUAL_ENV, and one in /opt/venv.
            (
                "/work/env/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2",
                &[("VIRTUAL_ENV", "/work/env")],
                "python wheel",
            ),
            (
                "/opt/venv/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2",
                &[],
                "python wheel",
            ),
            // The wheel inside a conda environment (rayproject images: /home/ray/anaconda3).
            (
                "/home/ray/anaconda3/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
                &[],
                "python wheel",
            ),
            // NGC: the system library folder.
            ("/usr/lib/x86_64-linux-gnu/libnccl.so.2", &[], "system"),
            // conda's nccl package: $CONDA_PREFIX/lib, /opt/conda/lib, /opt/conda/envs/*/lib.
            (
                "/srv/env/lib/libnccl.so.2",
                &[("CONDA_PREFIX", "/srv/env")],
                "conda",
            ),
            ("/opt/conda/lib/libnccl.so.2", &[], "conda"),
            ("/opt/conda/envs/train/lib/libnccl.so.2", &[], "conda"),
            // NCCL_HOME and LD_LIBRARY_PATH, taken inside the root.
            (
                "/opt/nccl-2.27/lib/libnccl.so.2",
                &[("NCCL_HOME", "/opt/nccl-2.27")],
                "NCCL_HOME",
            ),
            (
                "/x/lib/libnccl.so.2",
                &[("LD_LIBRARY_PATH", "/nonexistent::/x/lib")],
                "LD_LIBRARY_PATH",
            ),
        ];
        for (path, env, source) in cases {
            let root = image(&[path]);
            assert_eq!(
                found_in(root.path(), env),
                vec![(path.to_string(), source.to_string())],
                "{path} with {env:?}"
            );
        }
        // Without the variable that names it, a custom folder is not searched.
        let root = image(&["/opt/nccl-2.27/lib/libnccl.so.2"]);
        assert_eq!(found_in(root.path(), &[]), vec![]);
    }

    #[test]
    fn several_copies_are_listed_in_runs_order_once_each() {
        let root = image(&[
            "/opt/conda/lib/libnccl.so.2",
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
            "/usr/local/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
        ]);
        let found = found_in(
            root.path(),
            &[("LD_LIBRARY_PATH", "/usr/lib/x86_64-linux-gnu")],
        );
        let sources: Vec<&str> = found.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            sources,
            ["LD_LIBRARY_PATH", "python wheel", "conda"],
            "{found:?}"
        );
    }

    #[test]
    fn globbed_components_expand_in_sorted_order() {
        let root = image(&["/a/python3.9/x", "/a/python3.12/x", "/a/other/x"]);
        let got: Vec<String> = expand(&root.path().join("a"), &["python3*", "x"])
            .iter()
            .map(|p| p.strip_prefix(root.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(got, ["a/python3.12/x", "a/python3.9/x"]);
        assert!(expand(&root.path().join("none"), &["*"]).is_empty());
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
