//! The stack a rank actually loaded (`HostInfo.stack`, schema `netcheck.stack.v1`): NCCL, the
//! net plugin, libfabric, the CUDA driver and runtime, and the `NCCL_*`/`FI_*`/`OFI_*`
//! environment the process saw. `run` and `launch` (whose pods run the same worker) both
//! record it, per host; the report groups hosts by it and names the ones that differ.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{HostInfo, RunRecord};

pub const STACK_SCHEMA: &str = "netcheck.stack.v1";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StackInfo {
    pub schema: String,
    #[serde(default)]
    pub nccl: Option<Loaded>,
    /// The net plugin NCCL loaded (`None`: none was mapped, NCCL used its internal ones).
    #[serde(default)]
    pub net_plugin: Option<NetPluginInfo>,
    /// The libfabric the process mapped (through the plugin); `None` when none was.
    #[serde(default)]
    pub libfabric: Option<LibfabricInfo>,
    /// cuDriverGetVersion, e.g. "13.0" (a compat libcuda's version when one is loaded).
    #[serde(default)]
    pub cuda_driver: Option<String>,
    /// The kernel module, e.g. "580.65.06" (/proc/driver/nvidia/version).
    #[serde(default)]
    pub kernel_driver: Option<String>,
    /// The CUDA runtime the stack was built for: NCCL's `+cudaX.Y`, else the image's CUDA.
    #[serde(default)]
    pub cuda_runtime: Option<String>,
    /// The libcuda mapped, and whether it is a forward-compatibility library.
    #[serde(default)]
    pub libcuda: Option<String>,
    #[serde(default)]
    pub cuda_compat: Option<bool>,
    /// `NCCL_*`, `FI_*` and `OFI_*` as this process saw them (the image's ENV and the pod's).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Loaded {
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NetPluginInfo {
    /// The name NCCL gave it (`Loaded net plugin Libfabric (v10)`), when the log says.
    #[serde(default)]
    pub name: Option<String>,
    /// `aws-ofi-nccl 1.21.1` → "1.21.1" (its banner in the log, or the string in the file).
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    /// The plugin interface NCCL used (`v10`).
    #[serde(default)]
    pub interface: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LibfabricInfo {
    /// The release (`fi_tostr(FI_TYPE_VERSION)`, e.g. "2.1.0amzn3.0"), when it says.
    #[serde(default)]
    pub version: Option<String>,
    /// `fi_version()`, the API version, e.g. "2.1".
    #[serde(default)]
    pub api: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    /// Providers offering RDM endpoints, in libfabric's order.
    #[serde(default)]
    pub providers: Vec<String>,
}

impl StackInfo {
    pub fn new() -> StackInfo {
        StackInfo {
            schema: STACK_SCHEMA.into(),
            ..Default::default()
        }
    }

    /// `NCCL 2.29.7, aws-ofi-nccl 1.21.1, libfabric 2.1.0, CUDA driver 13.0, FI_PROVIDER=efa`.
    pub fn line(&self) -> String {
        let mut parts = vec![];
        match self.nccl.as_ref().and_then(|n| n.version.as_deref()) {
            Some(v) => parts.push(format!("NCCL {v}")),
            None => parts.push("NCCL ?".into()),
        }
        match &self.net_plugin {
            Some(p) => {
                let name = if p.path.as_deref().is_some_and(|x| x.contains("ofi"))
                    || p.version.is_some()
                {
                    "aws-ofi-nccl".to_string()
                } else {
                    p.name.clone().unwrap_or_else(|| "net plugin".into())
                };
                parts.push(format!("{name} {}", p.version.as_deref().unwrap_or("?")));
            }
            None => parts.push("no net plugin".into()),
        }
        if let Some(f) = &self.libfabric {
            parts.push(format!(
                "libfabric {}",
                f.version.as_deref().or(f.api.as_deref()).unwrap_or("?")
            ));
        }
        if let Some(d) = &self.cuda_driver {
            parts.push(format!(
                "CUDA driver {d}{}",
                self.kernel_driver
                    .as_deref()
                    .map_or(String::new(), |k| format!(" ({k})"))
            ));
        }
        if let Some(r) = &self.cuda_runtime {
            parts.push(format!("CUDA runtime {r}"));
        }
        if self.cuda_compat == Some(true) {
            parts.push("compat libcuda".into());
        }
        for key in ["FI_PROVIDER", "NCCL_NET", "NCCL_NET_PLUGIN"] {
            if let Some(v) = self.environment.get(key) {
                parts.push(format!("{key}={v}"));
            }
        }
        parts.join(", ")
    }
}

/// Hosts that share an image and a stack, for the report: "image X: NCCL …" → host names.
#[derive(Debug, Clone, PartialEq)]
pub struct StackGroup {
    pub image: Option<String>,
    pub line: String,
    pub hosts: Vec<String>,
}

impl StackGroup {
    pub fn text(&self) -> String {
        let image = self
            .image
            .as_deref()
            .map_or(String::new(), |i| format!("image {i}: "));
        format!("{image}{} ({})", self.line, self.hosts.join(", "))
    }
}

/// How the record names a host's image: the digest the kubelet pulled when known
/// (`repo@sha256:…`), else the reference.
pub fn image_of(host: &HostInfo) -> Option<String> {
    let id = host
        .image_id
        .as_deref()
        .map(|i| i.trim_start_matches("docker-pullable://"))
        .filter(|i| !i.is_empty());
    match (host.image.as_deref(), id) {
        // The kubelet's `repo@sha256:…` names the pulled image exactly.
        (_, Some(id)) if id.contains("@sha256:") => Some(id.to_string()),
        // A bare digest: the reference's repository (without its tag) and the digest.
        (Some(image), Some(id)) if id.starts_with("sha256:") => {
            Some(format!("{}@{id}", repository(image)))
        }
        (Some(image), _) => Some(image.to_string()),
        (None, Some(id)) => Some(id.to_string()),
        (None, None) => None,
    }
}

/// `registry:5000/team/img:tag` or `…@sha256:…` → `registry:5000/team/img`.
fn repository(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    match image[name_start..].find(':') {
        Some(colon) => &image[..name_start + colon],
        None => image,
    }
}

/// The record's hosts grouped by image and stack line, largest group first.
pub fn groups(record: &RunRecord) -> Vec<StackGroup> {
    let mut by: BTreeMap<(Option<String>, String), Vec<String>> = BTreeMap::new();
    for h in &record.hosts {
        let image = image_of(h);
        let Some(stack) = &h.stack else {
            if image.is_some() {
                by.entry((image, "stack not recorded".into()))
                    .or_default()
                    .push(h.hostname.clone());
            }
            continue;
        };
        by.entry((image, stack.line()))
            .or_default()
            .push(h.hostname.clone());
    }
    let mut groups: Vec<StackGroup> = by
        .into_iter()
        .map(|((image, line), hosts)| StackGroup { image, line, hosts })
        .collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.hosts.len()));
    groups
}

/// One message per part of the stack that differs between hosts (driver, NCCL, plugin,
/// libfabric, image digest): "NCCL differs between nodes: 2.29.7 on a, b; 2.27.7 on c".
pub fn differences(record: &RunRecord) -> Vec<String> {
    type Get = fn(&HostInfo) -> Option<String>;
    let parts: [(&str, Get); 6] = [
        ("image", |h| image_of(h)),
        ("CUDA driver", |h| {
            let s = h.stack.as_ref()?;
            s.kernel_driver.clone().or(s.cuda_driver.clone())
        }),
        ("NCCL", |h| h.stack.as_ref()?.nccl.as_ref()?.version.clone()),
        ("NCCL path", |h| {
            h.stack.as_ref()?.nccl.as_ref()?.path.clone()
        }),
        ("net plugin", |h| {
            let p = h.stack.as_ref()?.net_plugin.as_ref();
            Some(p.map_or("none".into(), |p| {
                format!(
                    "{} {}",
                    p.path.as_deref().unwrap_or("?"),
                    p.version.as_deref().unwrap_or("?")
                )
            }))
        }),
        ("libfabric", |h| {
            let f = h.stack.as_ref()?.libfabric.as_ref();
            Some(f.map_or("not loaded".into(), |f| {
                f.version.clone().or(f.api.clone()).unwrap_or("?".into())
            }))
        }),
    ];
    let mut out = vec![];
    for (what, get) in parts {
        let mut by: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for h in &record.hosts {
            if h.stack.is_none() && what != "image" {
                continue;
            }
            if let Some(v) = get(h) {
                by.entry(v).or_default().push(&h.hostname);
            }
        }
        if by.len() > 1 {
            let shown: Vec<String> = by
                .iter()
                .map(|(v, hosts)| format!("{v} on {}", hosts.join(", ")))
                .collect();
            out.push(format!(
                "{what} differs between nodes: {}",
                shown.join("; ")
            ));
        }
    }
    out
}

/// For `launch`: each node's stack from a group's record, the node named by the rank's node
/// index in `nodes` (the group's node names, in node-rank order).
pub fn stacks_by_node(record: &RunRecord, nodes: &[String]) -> Vec<(String, StackInfo)> {
    let mut out: Vec<(String, StackInfo)> = vec![];
    for rank in &record.ranks {
        let Some(node) = rank.node.and_then(|n| nodes.get(n as usize)) else {
            continue;
        };
        if out.iter().any(|(n, _)| n == node) {
            continue;
        }
        if let Some(stack) = record
            .hosts
            .iter()
            .find(|h| h.hostname == rank.host)
            .and_then(|h| h.stack.clone())
        {
            out.push((node.clone(), stack));
        }
    }
    out
}

/// Numeric parts of a version for comparison: "2.29.7" → [2, 29, 7], "1.7.4-aws" →
/// [1, 7, 4], "v1.14.0" → [1, 14, 0]; `None` without a leading number ("git-1a2b3c4").
pub fn version_parts(v: &str) -> Option<Vec<u32>> {
    let v = v.trim().trim_start_matches('v');
    let parts: Vec<u32> = v
        .split('.')
        .map_while(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    (!parts.is_empty()).then_some(parts)
}

/// `have` is at least `min` (missing trailing parts count as 0).
pub fn at_least(have: &[u32], min: &[u32]) -> bool {
    let n = have.len().max(min.len());
    let get = |v: &[u32], i: usize| v.get(i).copied().unwrap_or(0);
    for i in 0..n {
        match get(have, i).cmp(&get(min, i)) {
            std::cmp::Ordering::Greater => return true,
            std::cmp::Ordering::Less => return false,
            std::cmp::Ordering::Equal => {}
        }
    }
    true
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn stack(nccl: &str, plugin: Option<&str>, kernel: &str) -> StackInfo {
        let mut s = StackInfo::new();
        s.nccl = Some(Loaded {
            version: Some(nccl.into()),
            path: Some(
                "/usr/local/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2".into(),
            ),
        });
        s.net_plugin = plugin.map(|v| NetPluginInfo {
            name: Some("Libfabric".into()),
            version: Some(v.into()),
            path: Some("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so".into()),
            interface: Some("v10".into()),
        });
        s.libfabric = Some(LibfabricInfo {
            version: Some("2.1.0amzn3.0".into()),
            api: Some("2.1".into()),
            path: Some("/opt/amazon/efa/lib/libfabric.so.1".into()),
            providers: vec!["efa".into()],
        });
        s.cuda_driver = Some("13.0".into());
        s.kernel_driver = Some(kernel.into());
        s.environment.insert("FI_PROVIDER".into(), "efa".into());
        s
    }

    fn host(name: &str, s: StackInfo, image_id: &str) -> HostInfo {
        HostInfo {
            hostname: name.into(),
            image: Some("public.ecr.aws/deep-learning-containers/ray:train-ml-cuda-v1.1".into()),
            image_id: Some(format!(
                "public.ecr.aws/deep-learning-containers/ray@{image_id}"
            )),
            stack: Some(s),
            ..Default::default()
        }
    }

    #[test]
    fn hosts_group_by_image_and_stack_and_differences_are_named() {
        let mut r = RunRecord::new("launch");
        let good = stack("2.29.7", Some("1.21.1"), "580.65.06");
        r.hosts = vec![
            host("a", good.clone(), "sha256:aaa"),
            host("b", good.clone(), "sha256:aaa"),
            host(
                "c",
                stack("2.27.7", Some("1.14.0"), "575.51.03"),
                "sha256:bbb",
            ),
        ];
        let g = groups(&r);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].hosts, ["a", "b"]);
        assert_eq!(
            g[0].text(),
            "image public.ecr.aws/deep-learning-containers/ray@sha256:aaa: NCCL 2.29.7, aws-ofi-nccl 1.21.1, libfabric 2.1.0amzn3.0, CUDA driver 13.0 (580.65.06), FI_PROVIDER=efa (a, b)"
        );
        let d = differences(&r);
        let what: Vec<&str> = d
            .iter()
            .map(|m| m.split(" differs").next().unwrap())
            .collect();
        assert_eq!(
            what,
            ["image", "CUDA driver", "NCCL", "net plugin"],
            "{d:?}"
        );
        assert!(d[2].contains("2.27.7 on c; 2.29.7 on a, b"), "{d:?}");
        // The same stack everywhere: nothing to say.
        r.hosts.truncate(2);
        assert!(differences(&r).is_empty());
    }

    #[test]
    fn the_image_is_named_by_the_digest_the_kubelet_pulled() {
        let named = |image: Option<&str>, id: Option<&str>| {
            image_of(&HostInfo {
                image: image.map(str::to_string),
                image_id: id.map(str::to_string),
                ..Default::default()
            })
        };
        let tagged = Some("registry:5000/team/train:v1");
        assert_eq!(
            named(tagged, Some("sha256:abc")).as_deref(),
            Some("registry:5000/team/train@sha256:abc")
        );
        assert_eq!(
            named(
                tagged,
                Some("docker-pullable://registry:5000/team/train@sha256:abc")
            )
            .as_deref(),
            Some("registry:5000/team/train@sha256:abc")
        );
        assert_eq!(named(tagged, Some("")).as_deref(), tagged);
        assert_eq!(named(None, None), None);
    }

    #[test]
    fn versions_compare_numerically() {
        assert_eq!(version_parts("1.7.4-aws"), Some(vec![1, 7, 4]));
        assert_eq!(version_parts("v1.14.0"), Some(vec![1, 14, 0]));
        assert_eq!(version_parts("git-1a2b3c4"), None);
        assert!(at_least(&[2, 29, 7], &[2, 27]));
        assert!(at_least(&[2, 27], &[2, 27, 0]));
        assert!(!at_least(&[2, 9, 1], &[2, 27]));
        assert!(!at_least(&[1, 13, 2], &[1, 14]));
    }

    #[test]
    fn a_launch_groups_stacks_land_on_their_nodes() {
        let mut r = RunRecord::new("run");
        r.hosts = vec![
            host("pod-0", stack("2.29.7", None, "580.65.06"), "sha256:a"),
            host("pod-1", stack("2.28.9", None, "580.65.06"), "sha256:a"),
        ];
        for (rank, (h, node)) in [("pod-0", 0), ("pod-0", 0), ("pod-1", 1)]
            .iter()
            .enumerate()
        {
            r.ranks.push(crate::results::RankInfo {
                rank: rank as u32,
                host: h.to_string(),
                node: Some(*node),
                ..Default::default()
            });
        }
        let got = stacks_by_node(&r, &["node-a".into(), "node-b".into()]);
        let got: Vec<(&str, &str)> = got
            .iter()
            .map(|(n, s)| {
                (
                    n.as_str(),
                    s.nccl.as_ref().unwrap().version.as_deref().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, [("node-a", "2.29.7"), ("node-b", "2.28.9")]);
    }
}
