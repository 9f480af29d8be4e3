//! NCCL network plugins (`libnccl-net*.so`, e.g. aws-ofi-nccl, which NCCL needs to use EFA):
//! which files exist, whether they load (their dependencies resolve), which plugin interface
//! versions they export, and whether NCCL would find the one it looks for.
//!
//! NCCL opens `libnccl-net.so`, or `libnccl-net-<NCCL_NET_PLUGIN>.so` when that is set (newer
//! NCCL also accepts a path), through the dynamic loader; `NCCL_NET_PLUGIN=none` disables
//! plugins.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::check::Check;
use super::files::{ldconfig_paths, scan_file};
use crate::engine::library::Search;

/// Where plugins are installed besides the loader's path: the EFA installer (current and older
/// layouts) and common prefixes.
pub const PLUGIN_DIRS: &[&str] = &[
    "/opt/amazon/ofi-nccl/lib",
    "/opt/amazon/ofi-nccl/lib64",
    "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu",
    "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu",
    "/opt/aws-ofi-nccl/lib",
    // The DLC's libfabric folder, on its LD_LIBRARY_PATH beside the plugin's.
    "/opt/amazon/efa/lib",
    "/opt/aws-ofi-nccl/install/lib",
    "/usr/local/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetPlugin {
    pub path: PathBuf,
    /// `dlopen` succeeded (all its dependencies, e.g. libfabric, were found).
    pub loads: bool,
    pub load_error: Option<String>,
    /// Exported plugin interfaces, newest first (`ncclNetPlugin_v9`, ...).
    pub interfaces: Vec<String>,
    /// The aws-ofi-nccl version embedded in the file, when it is aws-ofi-nccl.
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PluginFacts {
    pub plugins: Vec<NetPlugin>,
    /// What NCCL will try to open (`None` when NCCL_NET_PLUGIN=none).
    pub nccl_opens: Option<String>,
    /// The file that name resolves to in this environment, if any.
    pub resolves_to: Option<PathBuf>,
    /// The folders NCCL's `dlopen` searches for it, in order (LD_LIBRARY_PATH, the folders
    /// of /etc/ld.so.conf, the loader's default folders); empty for a path.
    #[serde(default)]
    pub searched: Vec<PathBuf>,
}

/// The name NCCL opens for a given NCCL_NET_PLUGIN value.
pub fn plugin_name(nccl_net_plugin: Option<&str>) -> Option<String> {
    match nccl_net_plugin.map(str::trim) {
        None | Some("") => Some("libnccl-net.so".into()),
        Some(v) if v.eq_ignore_ascii_case("none") => None,
        Some(v) if v.contains('/') || v.ends_with(".so") => Some(v.to_string()),
        Some(v) => Some(format!("libnccl-net-{v}.so")),
    }
}

/// Finds plugin files on the loader path (LD_LIBRARY_PATH, ldconfig) and in [`PLUGIN_DIRS`].
pub fn find(ld_library_path: Option<&str>, nccl_net_plugin: Option<&str>) -> PluginFacts {
    let mut env = std::collections::BTreeMap::new();
    if let Some(p) = ld_library_path {
        env.insert("LD_LIBRARY_PATH".to_string(), p.to_string());
    }
    find_in(&Search::system(&env), nccl_net_plugin)
}

/// [`find`] under `search.root`. On the real root (`search.system`) the name NCCL opens is
/// resolved by `dlopen` itself; under another root by [`loader_search`], the same search.
pub fn find_in(search: &Search, nccl_net_plugin: Option<&str>) -> PluginFacts {
    let ld_library_path = search.env.get("LD_LIBRARY_PATH").map(String::as_str);
    let searched = loader_dirs(search, ld_library_path);
    let mut dirs = searched.clone();
    dirs.extend(PLUGIN_DIRS.iter().map(|d| search.at(d)));
    let mut files: Vec<PathBuf> = dirs.iter().flat_map(|d| plugin_files_in(d)).collect();
    if search.system {
        files.extend(ldconfig_paths("libnccl-net"));
    }
    let nccl_opens = plugin_name(nccl_net_plugin);
    if let Some(name) = nccl_opens.as_deref().filter(|n| n.contains('/')) {
        files.push(search.at(name));
    }

    let mut plugins: Vec<NetPlugin> = Vec::new();
    for file in files {
        let Ok(real) = std::fs::canonicalize(&file) else {
            continue;
        };
        if !real.is_file() || plugins.iter().any(|p| p.path == real) {
            continue;
        }
        plugins.push(inspect(&real));
    }
    let resolves_to = nccl_opens.as_deref().and_then(|name| {
        if search.system {
            resolve(name)
        } else {
            loader_search(search, &searched, name).and_then(|p| std::fs::canonicalize(p).ok())
        }
    });
    PluginFacts {
        plugins,
        searched: if nccl_opens.as_deref().is_some_and(|n| n.contains('/')) {
            vec![]
        } else {
            searched
        },
        nccl_opens,
        resolves_to,
    }
}

/// The loader's default folders on x86-64 and arm64 distributions (Debian's multiarch
/// folders, RHEL's lib64), after LD_LIBRARY_PATH and the ld.so cache.
pub const LOADER_DEFAULT_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// The folders `dlopen(name)` searches, in its order: LD_LIBRARY_PATH, the folders
/// /etc/ld.so.conf lists (what ldconfig builds the cache from), the default folders.
pub fn loader_dirs(search: &Search, ld_library_path: Option<&str>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ld_library_path
        .iter()
        .flat_map(|p| p.split(':'))
        .filter(|d| !d.is_empty())
        .map(|d| search.at(d))
        .collect();
    dirs.extend(
        ld_so_conf(search, Path::new("/etc/ld.so.conf"), 0)
            .into_iter()
            .map(|d| search.at(d)),
    );
    dirs.extend(LOADER_DEFAULT_DIRS.iter().map(|d| search.at(d)));
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// The folders an ld.so.conf file lists, following `include` lines (globs in the last
/// component, as the EFA installer's `/etc/ld.so.conf.d/efa.conf` is included).
fn ld_so_conf(search: &Search, file: &Path, depth: u32) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(search.at(file)) else {
        return vec![];
    };
    let mut dirs = vec![];
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(pattern) = line.strip_prefix("include") {
            if depth >= 4 {
                continue;
            }
            for pattern in pattern.split_whitespace() {
                let pattern = Path::new(pattern);
                let (Some(parent), Some(name)) = (pattern.parent(), pattern.file_name()) else {
                    continue;
                };
                let name = name.to_string_lossy();
                for inc in crate::engine::library::expand(&search.at(parent), &[&name]) {
                    let Ok(rel) = inc.strip_prefix(search.root) else {
                        continue;
                    };
                    dirs.extend(ld_so_conf(search, &Path::new("/").join(rel), depth + 1));
                }
            }
        } else if line.starts_with('/') {
            dirs.push(line.to_string());
        }
    }
    dirs
}

/// The file `dlopen(name)` would open, searching `dirs` (from [`loader_dirs`]) for a bare
/// name; a name with a `/` is that path.
pub fn loader_search(search: &Search, dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = search.at(name);
        return p.is_file().then_some(p);
    }
    dirs.iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn plugin_files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("libnccl-net") && name.contains(".so")
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

static OFI_VERSION: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    regex::bytes::Regex::new(r"aws-ofi-nccl[ -]v?(\d+\.\d+\.\d+[A-Za-z0-9.-]*)")
        .expect("valid regex")
});

/// The aws-ofi-nccl version embedded in a plugin file, if it is aws-ofi-nccl.
pub fn embedded_version(path: &Path) -> Option<String> {
    scan_file(path, &OFI_VERSION, 256 << 20).and_then(|c| c.into_iter().next().flatten())
}

/// Loads the plugin (lazily, locally) to see whether its dependencies resolve and which
/// interfaces it exports; nothing in it is called.
pub fn inspect(path: &Path) -> NetPlugin {
    let version = embedded_version(path);
    // SAFETY: loading runs the plugin's static constructors only; symbols are looked up, not
    // called.
    let loaded = unsafe {
        libloading::os::unix::Library::open(Some(path), libc::RTLD_LAZY | libc::RTLD_LOCAL)
    };
    match loaded {
        Ok(lib) => {
            let interfaces = (2..=12)
                .rev()
                .map(|v| format!("ncclNetPlugin_v{v}"))
                // SAFETY: only the symbol's address is read.
                .filter(|name| {
                    unsafe { lib.get::<*const std::ffi::c_void>(name.as_bytes()) }.is_ok()
                })
                .collect();
            std::mem::forget(lib); // plugins are not made to be unloaded
            NetPlugin {
                path: path.to_path_buf(),
                loads: true,
                load_error: None,
                interfaces,
                version,
            }
        }
        Err(e) => NetPlugin {
            path: path.to_path_buf(),
            loads: false,
            load_error: Some(
                std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string()),
            ),
            interfaces: Vec::new(),
            version,
        },
    }
}

/// The file `dlopen(name)` opens here.
fn resolve(name: &str) -> Option<PathBuf> {
    // SAFETY: as in `inspect`; dladdr only reads the loader's tables.
    unsafe {
        let lib =
            libloading::os::unix::Library::open(Some(name), libc::RTLD_LAZY | libc::RTLD_LOCAL)
                .ok()?;
        let sym = (2..=12).rev().find_map(|v| {
            lib.get::<*const std::ffi::c_void>(format!("ncclNetPlugin_v{v}").as_bytes())
                .ok()
                .map(|s| *s)
        })?;
        let mut info: libc::Dl_info = std::mem::zeroed();
        let found = libc::dladdr(sym, &mut info) != 0 && !info.dli_fname.is_null();
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

/// The `nccl.net_plugin` check. `rdma_devices`: EFA/IB devices on this host, which is when a
/// plugin matters (EFA needs aws-ofi-nccl; IB works with NCCL's built-in transport).
pub fn check(facts: &PluginFacts, efa_devices: usize, required: bool) -> Check {
    const ID: &str = "nccl.net_plugin";
    let evidence: Vec<String> = facts
        .plugins
        .iter()
        .map(|p| {
            let what = match (&p.load_error, p.interfaces.is_empty()) {
                (Some(e), _) => format!("does not load: {e}"),
                (None, true) => "loads, but exports no ncclNetPlugin_v* symbol".into(),
                (None, false) => format!("loads, exports {}", p.interfaces.join(", ")),
            };
            format!(
                "{}{}: {what}",
                p.path.display(),
                p.version
                    .as_deref()
                    .map_or(String::new(), |v| format!(" (aws-ofi-nccl {v})"))
            )
        })
        .collect();
    let needed = efa_devices > 0 || required;
    let Some(name) = &facts.nccl_opens else {
        let check = if efa_devices > 0 {
            Check::fail(ID, "NCCL_NET_PLUGIN=none disables network plugins, so NCCL cannot use the EFA devices here")
                .with_hint("unset NCCL_NET_PLUGIN (or set it to ofi)")
        } else {
            Check::ok(ID, "network plugins disabled (NCCL_NET_PLUGIN=none)")
        };
        return check.with_evidence(evidence);
    };
    let resolved = facts
        .resolves_to
        .as_ref()
        .and_then(|r| facts.plugins.iter().find(|p| &p.path == r));
    match resolved {
        Some(p) if p.loads && !p.interfaces.is_empty() => Check::ok(
            ID,
            format!(
                "NCCL opens {name} → {}{}",
                p.path.display(),
                p.version
                    .as_deref()
                    .map_or(String::new(), |v| format!(" (aws-ofi-nccl {v})"))
            ),
        )
        .with_evidence(evidence),
        _ => {
            let broken: Vec<&NetPlugin> = facts.plugins.iter().filter(|p| !p.loads).collect();
            let summary = if facts.plugins.is_empty() {
                format!("no NCCL network plugin found (NCCL looks for {name})")
            } else if !broken.is_empty() {
                format!(
                    "{} plugin file(s) found, but NCCL's {name} does not load",
                    facts.plugins.len()
                )
            } else {
                format!("plugin file(s) found, but not where NCCL looks for {name}")
            };
            let hint = if facts.plugins.is_empty() {
                "on AWS, install aws-ofi-nccl (the EFA installer puts it in /opt/amazon/ofi-nccl/lib) and add its lib directory to LD_LIBRARY_PATH"
            } else if !broken.is_empty() {
                "a plugin that does not load usually misses libfabric or CUDA libraries: add /opt/amazon/efa/lib to LD_LIBRARY_PATH"
            } else {
                "add the plugin's directory to LD_LIBRARY_PATH, or set NCCL_NET_PLUGIN to its name (ofi for libnccl-net-ofi.so) or full path"
            };
            let mut evidence = evidence;
            if !facts.searched.is_empty() {
                let shown: Vec<String> = facts
                    .searched
                    .iter()
                    .take(12)
                    .map(|d| d.display().to_string())
                    .collect();
                evidence.push(format!(
                    "NCCL's dlopen({name}) searches {}",
                    shown.join(":")
                ));
            }
            // The file NCCL opens is there and the loader refuses it (a libfabric older than
            // the one the plugin was built against, a missing CUDA library): every NCCL job
            // here tries it, logs the loader's error and goes on with its own sockets, EFA or
            // not; `run` calls that a fallback (docs/ofi-matrix.md, `ofi-system-libfabric-tcp`).
            let opened_broken = broken.iter().any(|p| nccl_would_open(facts, name, &p.path));
            let check = if needed {
                Check::fail(
                    ID,
                    format!("{summary}: NCCL will not use EFA and falls back to TCP sockets"),
                )
            } else if opened_broken {
                Check::fail(
                    ID,
                    format!(
                        "{summary}: NCCL tries it, logs the loader's error and falls back to its own TCP sockets"
                    ),
                )
            } else if facts.plugins.is_empty() {
                Check::ok(
                    ID,
                    format!(
                        "{summary}; none needed without EFA devices (NCCL has built-in IB and socket transports)"
                    ),
                )
            } else {
                Check::warn(ID, summary)
            };
            check.with_evidence(evidence).with_hint(hint)
        }
    }
}

/// Whether NCCL's `dlopen(name)` would reach `path`: `name` is that path, or `path` is a
/// file of that name in one of the folders the loader searches.
fn nccl_would_open(facts: &PluginFacts, name: &str, path: &std::path::Path) -> bool {
    if name.contains('/') {
        return std::path::Path::new(name) == path;
    }
    path.file_name().is_some_and(|f| f == name)
        && path
            .parent()
            .is_some_and(|dir| facts.searched.iter().any(|s| s == dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::library::fake::{self, image};
    use crate::probe::check::Status;

    #[test]
    fn nccl_net_plugin_names() {
        assert_eq!(plugin_name(None).as_deref(), Some("libnccl-net.so"));
        assert_eq!(
            plugin_name(Some("ofi")).as_deref(),
            Some("libnccl-net-ofi.so")
        );
        assert_eq!(
            plugin_name(Some("/opt/x/libnccl-net-ofi.so")).as_deref(),
            Some("/opt/x/libnccl-net-ofi.so")
        );
        assert_eq!(plugin_name(Some("none")), None);
    }

    fn plugin(path: &str, loads: bool) -> NetPlugin {
        NetPlugin {
            path: PathBuf::from(path),
            loads,
            load_error: (!loads).then(|| "libfabric.so.1: cannot open shared object file".into()),
            interfaces: if loads {
                vec!["ncclNetPlugin_v9".into()]
            } else {
                vec![]
            },
            version: Some("1.16.3".into()),
        }
    }

    #[test]
    fn efa_without_a_plugin_fails_and_no_efa_without_a_plugin_is_fine() {
        let none = PluginFacts {
            nccl_opens: Some("libnccl-net.so".into()),
            ..Default::default()
        };
        let c = check(&none, 2, false);
        assert_eq!(c.status, Status::Fail);
        assert!(c.summary.contains("falls back to TCP"));
        assert_eq!(check(&none, 0, false).status, Status::Ok);
    }

    #[test]
    fn a_plugin_off_the_loader_path_or_broken_is_reported() {
        let p = "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so";
        let off_path = PluginFacts {
            plugins: vec![plugin(p, true)],
            nccl_opens: Some("libnccl-net.so".into()),
            resolves_to: None,
            searched: vec![],
        };
        let c = check(&off_path, 4, false);
        assert_eq!(c.status, Status::Fail);
        assert!(c.hint.unwrap().contains("NCCL_NET_PLUGIN"));
        // Off the loader's path: NCCL never tries it.
        let broken = PluginFacts {
            plugins: vec![plugin(p, false)],
            nccl_opens: Some("libnccl-net-ofi.so".into()),
            resolves_to: None,
            searched: vec![PathBuf::from("/usr/lib")],
        };
        let c = check(&broken, 0, false);
        assert_eq!(c.status, Status::Warn);
        assert!(c.evidence[0].contains("does not load"), "{c:?}");
        // Where NCCL looks, by name or by path: every job tries it and falls back, EFA or not.
        let tried = PluginFacts {
            searched: vec![
                PathBuf::from("/usr/lib"),
                PathBuf::from("/opt/amazon/ofi-nccl/lib"),
            ],
            ..broken.clone()
        };
        let c = check(&tried, 0, false);
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(c.summary.contains("falls back"), "{c:?}");
        let by_path = PluginFacts {
            nccl_opens: Some(p.into()),
            ..broken.clone()
        };
        assert_eq!(check(&by_path, 0, false).status, Status::Fail);
        let good = PluginFacts {
            plugins: vec![plugin(p, true)],
            nccl_opens: Some("libnccl-net-ofi.so".into()),
            resolves_to: Some(PathBuf::from(p)),
            searched: vec![],
        };
        let c = check(&good, 4, true);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.summary.contains("aws-ofi-nccl 1.16.3"));
    }

    #[test]
    fn plugins_disabled_on_an_efa_node_fail() {
        let facts = PluginFacts {
            nccl_opens: None,
            ..Default::default()
        };
        assert_eq!(check(&facts, 1, false).status, Status::Fail);
        assert_eq!(check(&facts, 0, false).status, Status::Ok);
    }

    fn resolved(root: &Path, env: &[(&str, &str)]) -> (Option<String>, PluginFacts) {
        let env = fake::env(env);
        let search = Search {
            root,
            env: &env,
            system: false,
        };
        let facts = find_in(&search, env.get("NCCL_NET_PLUGIN").map(String::as_str));
        let real_root = std::fs::canonicalize(root).unwrap();
        let rel = facts
            .resolves_to
            .as_ref()
            .map(|p| format!("/{}", p.strip_prefix(&real_root).unwrap().display()));
        (rel, facts)
    }

    const OFI: &str = "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so";
    const OFI_DEFAULT: &str = "/opt/amazon/ofi-nccl/lib/libnccl-net.so";

    #[test]
    fn the_plugin_is_resolved_the_way_nccls_dlopen_finds_it() {
        let body = "aws-ofi-nccl 1.21.1";
        // The DLC: the plugin folder on LD_LIBRARY_PATH, NCCL opens libnccl-net.so.
        let root = image(&[(OFI_DEFAULT, body), (OFI, body)]);
        let dlc = [(
            "LD_LIBRARY_PATH",
            "/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib",
        )];
        let (got, facts) = resolved(root.path(), &dlc);
        assert_eq!(got.as_deref(), Some(OFI_DEFAULT));
        assert_eq!(facts.plugins.len(), 2, "{facts:?}");
        assert!(
            facts
                .plugins
                .iter()
                .all(|p| p.version.as_deref() == Some("1.21.1"))
        );
        // NCCL_NET_PLUGIN as a name: libnccl-net-<name>.so on the same path.
        let (got, _) = resolved(root.path(), &[dlc[0], ("NCCL_NET_PLUGIN", "ofi")]);
        assert_eq!(got.as_deref(), Some(OFI));
        // As a path: that file, wherever it is.
        let (got, facts) = resolved(root.path(), &[("NCCL_NET_PLUGIN", OFI)]);
        assert_eq!(got.as_deref(), Some(OFI));
        assert!(facts.searched.is_empty());
        // Off the loader's path the files are found but NCCL would not open them.
        let (got, facts) = resolved(root.path(), &[]);
        assert_eq!(got, None);
        assert_eq!(facts.plugins.len(), 2);
        let c = check(&facts, 4, false);
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(c.evidence.iter().any(|e| e.contains("searches")), "{c:?}");
        // `none` disables plugins.
        let (got, facts) = resolved(root.path(), &[dlc[0], ("NCCL_NET_PLUGIN", "none")]);
        assert_eq!((got, facts.nccl_opens), (None, None));
    }

    #[test]
    fn ld_so_conf_folders_and_the_default_folders_are_searched_after_ld_library_path() {
        // The EFA installer registers its folders with ldconfig through ld.so.conf.d.
        let root = image(&[
            (
                "/etc/ld.so.conf",
                "# comment
include /etc/ld.so.conf.d/*.conf
",
            ),
            (
                "/etc/ld.so.conf.d/aws-ofi-nccl.conf",
                "/opt/amazon/ofi-nccl/lib
",
            ),
            (OFI_DEFAULT, "x"),
            ("/usr/lib/x86_64-linux-gnu/libnccl-net.so", "x"),
            ("/first/libnccl-net.so", "x"),
        ]);
        let (got, facts) = resolved(root.path(), &[]);
        assert_eq!(got.as_deref(), Some(OFI_DEFAULT), "{facts:?}");
        let (got, _) = resolved(root.path(), &[("LD_LIBRARY_PATH", "/first")]);
        assert_eq!(got.as_deref(), Some("/first/libnccl-net.so"));
        // Without the conf file, the system folder (the loader's default) is next.
        std::fs::remove_file(root.path().join("etc/ld.so.conf")).unwrap();
        let (got, _) = resolved(root.path(), &[]);
        assert_eq!(
            got.as_deref(),
            Some("/usr/lib/x86_64-linux-gnu/libnccl-net.so")
        );
    }

    #[test]
    fn a_file_that_is_not_a_library_does_not_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libnccl-net-fake.so");
        std::fs::write(&path, b"not an ELF file; aws-ofi-nccl 1.14.0-aws").unwrap();
        let p = inspect(&path);
        assert!(!p.loads);
        assert!(p.load_error.is_some());
        assert_eq!(p.version.as_deref(), Some("1.14.0-aws"));
    }
}
