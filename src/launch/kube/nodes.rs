//! Preflight: what each candidate node offers (allocatable GPUs, EFA devices, huge pages,
//! memory), whether a pod of ours can land there (Ready, not cordoned, taints tolerated, GPUs
//! free), and the pools (instance type and zone) nodes are grouped by. Pure: it reads `Node`
//! objects the client fetched and says what is wrong, with what to do.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Node, Taint, Toleration};

use crate::launch::plan::Pool;

pub const GPU: &str = "nvidia.com/gpu";
pub const EFA: &str = "vpc.amazonaws.com/efa";
pub const HUGEPAGES_2MI: &str = "hugepages-2Mi";
pub const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const GPU_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";

/// Huge pages a pod asks for when it asks for EFA: what AWS's EFA manifests request.
pub const EFA_HUGEPAGES_BYTES: u64 = 5120 << 20;

/// EFA devices per instance type, from AWS's health-check profiles and manifests
/// (k8s-conventions.md §1.1). Only a cross-check: the node's allocatable count is what is
/// requested.
const KNOWN_EFA: &[(&str, u32)] = &[
    ("p4d.24xlarge", 4),
    ("p4de.24xlarge", 4),
    ("p5.48xlarge", 32),
    ("p5e.48xlarge", 32),
    ("p5en.48xlarge", 16),
    ("p6-b200.48xlarge", 8),
];

/// Taint keys Kubernetes sets from a node's state (not-ready, unreachable, unschedulable,
/// memory-pressure, disk-pressure, pid-pressure, network-unavailable).
const CONDITION_TAINT_PREFIX: &str = "node.kubernetes.io/";

/// The EKS node-monitoring conditions that must not be False on a node we test.
const HEALTH_CONDITIONS: &[&str] = &["AcceleratedHardwareReady", "NetworkingReady"];

/// What one node offers, read from its status and labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    pub name: String,
    pub instance_type: Option<String>,
    pub zone: Option<String>,
    pub gpus: u32,
    pub efa: u32,
    pub hugepages_2mi_bytes: u64,
    pub memory_bytes: u64,
    /// GPUs requested by pods already bound to the node (None: not known).
    pub gpus_in_use: Option<u32>,
    /// Those pods, as `namespace/name (N GPUs)`; a leftover of a netcheck run says so.
    pub gpu_holders: Vec<String>,
}

/// GPUs that pods bound to one node request, and which pods.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuUse {
    pub gpus: u32,
    pub pods: Vec<String>,
}

impl NodeInfo {
    pub fn from_node(node: &Node) -> NodeInfo {
        let name = node.metadata.name.clone().unwrap_or_default();
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let alloc = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default();
        let quantity = |key: &str| {
            alloc
                .get(key)
                .and_then(|q| parse_quantity(&q.0))
                .unwrap_or(0)
        };
        NodeInfo {
            name,
            instance_type: labels.get(INSTANCE_TYPE_LABEL).cloned(),
            zone: labels.get(ZONE_LABEL).cloned(),
            gpus: quantity(GPU) as u32,
            efa: quantity(EFA) as u32,
            hugepages_2mi_bytes: quantity(HUGEPAGES_2MI),
            memory_bytes: quantity("memory"),
            gpus_in_use: None,
            gpu_holders: vec![],
        }
    }

    /// The pool this node is grouped in: instance type and zone.
    pub fn pool(&self) -> String {
        let kind = self.instance_type.as_deref().unwrap_or("unknown-type");
        match &self.zone {
            Some(zone) => format!("{kind}/{zone}"),
            None => kind.to_string(),
        }
    }
}

/// What the run will ask each node for. `None` counts mean "whatever the node has".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Requirements {
    pub gpus: Option<u32>,
    pub efa: Option<u32>,
    /// Huge pages per pod; `None`: 5120Mi where the pod gets EFA devices and the node has them.
    pub hugepages_bytes: Option<u64>,
    /// Memory per pod, including the memory-backed /dev/shm.
    pub memory_bytes: u64,
    pub tolerations: Vec<Toleration>,
}

/// What one pod of a pool asks for, decided once per pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodResources {
    pub gpus: u32,
    pub efa: u32,
    pub hugepages_bytes: u64,
    pub memory_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub node: String,
    pub message: String,
}

/// The outcome of preflight: nodes fit to test, grouped in pools with what their pods request,
/// and the nodes that are not (with why).
#[derive(Debug, Clone, Default)]
pub struct Preflight {
    pub eligible: Vec<NodeInfo>,
    pub pools: Vec<(Pool, PodResources)>,
    pub problems: Vec<Problem>,
}

/// Checks every node against what the run needs. `gpus_in_use` maps node names to GPUs that
/// pods already bound there request (empty when unknown).
pub fn assess(
    nodes: &[Node],
    req: &Requirements,
    gpus_in_use: &HashMap<String, GpuUse>,
) -> Preflight {
    let mut problems = vec![];
    let mut candidates = vec![];
    for node in nodes {
        let mut info = NodeInfo::from_node(node);
        if let Some(used) = gpus_in_use.get(&info.name) {
            info.gpus_in_use = Some(used.gpus);
            info.gpu_holders = used.pods.clone();
        }
        let found = schedulability_problems(node, &req.tolerations);
        if found.is_empty() {
            candidates.push(info);
        } else {
            problems.extend(found.into_iter().map(|message| Problem {
                node: info.name.clone(),
                message,
            }));
        }
    }
    let mut by_pool: BTreeMap<String, Vec<NodeInfo>> = BTreeMap::new();
    for info in candidates {
        by_pool.entry(info.pool()).or_default().push(info);
    }
    let mut out = Preflight {
        problems,
        ..Default::default()
    };
    for (pool, members) in by_pool {
        let resources = pool_resources(&members, req);
        let mut names = vec![];
        for info in members {
            let found = resource_problems(&info, &resources, req);
            if found.is_empty() {
                names.push(info.name.clone());
                out.eligible.push(info);
            } else {
                out.problems
                    .extend(found.into_iter().map(|message| Problem {
                        node: info.name.clone(),
                        message,
                    }));
            }
        }
        if !names.is_empty() {
            out.pools.push((
                Pool {
                    name: pool,
                    nodes: names,
                },
                resources,
            ));
        }
    }
    out
}

/// Requests for the pods of one pool: the flags where given, else the most the pool's nodes
/// offer, so a node offering less than its siblings is caught rather than under-tested.
fn pool_resources(members: &[NodeInfo], req: &Requirements) -> PodResources {
    let gpus = req
        .gpus
        .unwrap_or_else(|| members.iter().map(|n| n.gpus).max().unwrap_or(0));
    let efa = req.efa.unwrap_or_else(|| {
        let most = members.iter().map(|n| n.efa).max().unwrap_or(0);
        let known = members
            .iter()
            .filter_map(|n| n.instance_type.as_deref())
            .find_map(known_efa);
        known.unwrap_or(most).max(most)
    });
    let hugepages_bytes = req.hugepages_bytes.unwrap_or_else(|| {
        let offered = members
            .iter()
            .map(|n| n.hugepages_2mi_bytes)
            .max()
            .unwrap_or(0);
        if efa > 0 && offered >= EFA_HUGEPAGES_BYTES {
            EFA_HUGEPAGES_BYTES
        } else {
            0
        }
    });
    PodResources {
        gpus,
        efa,
        hugepages_bytes,
        memory_bytes: req.memory_bytes,
    }
}

fn known_efa(instance_type: &str) -> Option<u32> {
    KNOWN_EFA
        .iter()
        .find(|(t, _)| *t == instance_type)
        .map(|&(_, n)| n)
}

/// What keeps a pod of ours off this node now (not Ready, cordoned, a taint not tolerated,
/// unhealthy): preflight's checks of the Node object, for the recheck between rounds.
pub fn node_problems(node: &Node, tolerations: &[Toleration]) -> Vec<String> {
    schedulability_problems(node, tolerations)
}

/// Ready, not cordoned, healthy, no taint we don't tolerate.
fn schedulability_problems(node: &Node, tolerations: &[Toleration]) -> Vec<String> {
    let name = node.metadata.name.as_deref().unwrap_or("?");
    let mut out = vec![];
    let spec = node.spec.clone().unwrap_or_default();
    if spec.unschedulable == Some(true) {
        out.push(format!(
            "cordoned (run `kubectl uncordon {name}` to test it)"
        ));
    }
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True");
    for taint in spec.taints.iter().flatten() {
        if !matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            || tolerations.iter().any(|t| tolerates(t, taint))
        {
            continue;
        }
        // Taints Kubernetes itself sets from a node's state: tolerating them is not the fix.
        if let Some(state) = taint.key.strip_prefix(CONDITION_TAINT_PREFIX) {
            match state {
                // Said already, with what to do: not Ready, cordoned.
                "not-ready" | "unreachable" if !ready => {}
                "unschedulable" if spec.unschedulable == Some(true) => {}
                "not-ready" | "unreachable" => out.push(format!(
                    "still tainted {}:{} although Ready (the node lifecycle controller has not \
                     lifted it yet; check kube-controller-manager if it stays)",
                    taint.key, taint.effect
                )),
                _ => out.push(format!(
                    "tainted {}:{} by Kubernetes from the node's state ({}); fix that rather \
                     than tolerating it",
                    taint.key,
                    taint.effect,
                    state.replace('-', " ")
                )),
            }
            continue;
        }
        let value = taint
            .value
            .as_deref()
            .map(|v| format!("={v}"))
            .unwrap_or_default();
        out.push(format!(
            "tainted {}{value}:{} (add `--toleration {}{value}:{}` to test it)",
            taint.key, taint.effect, taint.key, taint.effect
        ));
    }
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    match conditions.iter().find(|c| c.type_ == "Ready") {
        Some(c) if c.status == "True" => {}
        // The kubelet's reason is nearly always `KubeletNotReady`: its message says what.
        Some(c) => out.push(format!(
            "not Ready (Ready is {}{})",
            c.status,
            [c.reason.as_deref(), c.message.as_deref()]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .map(|s| format!(": {s}"))
                .collect::<String>()
        )),
        None => out.push("not Ready (no Ready condition)".into()),
    }
    for c in &conditions {
        if HEALTH_CONDITIONS.contains(&c.type_.as_str()) && c.status == "False" {
            out.push(format!(
                "condition {} is False{}",
                c.type_,
                c.message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ));
        }
    }
    if let Some(product) = node
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(GPU_PRODUCT_LABEL))
        && product.contains("MIG")
    {
        out.push(format!(
            "GPUs are MIG slices ({product}); NCCL tests need whole GPUs"
        ));
    }
    out
}

/// Can the pod get what the pool's pods request on this node?
fn resource_problems(info: &NodeInfo, res: &PodResources, req: &Requirements) -> Vec<String> {
    let mut out = vec![];
    let kind = info.instance_type.as_deref().unwrap_or("node");
    if info.gpus == 0 {
        out.push(format!(
            "no allocatable {GPU} (is the NVIDIA device plugin running on it?)"
        ));
    } else if info.gpus < res.gpus {
        out.push(format!(
            "{} allocatable {GPU}, {} requested{}",
            info.gpus,
            res.gpus,
            if req.gpus.is_some() {
                ""
            } else {
                " (other nodes of its pool have more)"
            }
        ));
    } else if let Some(used) = info.gpus_in_use
        && info.gpus.saturating_sub(used) < res.gpus
    {
        let by = if info.gpu_holders.is_empty() {
            String::new()
        } else {
            format!(" ({})", info.gpu_holders.join(", "))
        };
        out.push(format!(
            "{used} of its {} GPUs are requested by other pods{by}; {} needed",
            info.gpus, res.gpus
        ));
    }
    if info.efa < res.efa {
        let why = match (req.efa, info.instance_type.as_deref().and_then(known_efa)) {
            (Some(_), _) => "requested with --efa-per-node".to_string(),
            (None, Some(k)) if k == res.efa => format!("a {kind} has {k}"),
            _ => "other nodes of its pool have that many".to_string(),
        };
        let hint = if info.efa == 0 {
            " (is the EFA device plugin running on it? `--efa-per-node 0` tests without EFA)"
        } else {
            ""
        };
        out.push(format!(
            "{} allocatable {EFA}, {} expected: {why}{hint}",
            info.efa, res.efa
        ));
    }
    if info.hugepages_2mi_bytes < res.hugepages_bytes {
        out.push(format!(
            "{} allocatable {HUGEPAGES_2MI}, {} requested",
            format_quantity(info.hugepages_2mi_bytes),
            format_quantity(res.hugepages_bytes)
        ));
    }
    if info.memory_bytes > 0 && info.memory_bytes < res.memory_bytes {
        out.push(format!(
            "{} allocatable memory, {} requested (lower --memory or --shm-size)",
            format_quantity(info.memory_bytes),
            format_quantity(res.memory_bytes)
        ));
    }
    out
}

/// Kubernetes' toleration matching (core/v1 `Toleration.ToleratesTaint`).
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect_ok = t
        .effect
        .as_deref()
        .is_none_or(|e| e.is_empty() || e == taint.effect);
    let key_ok = match t.key.as_deref() {
        None | Some("") => t.operator.as_deref() == Some("Exists"),
        Some(k) => k == taint.key,
    };
    let value_ok = match t.operator.as_deref() {
        Some("Exists") => true,
        _ => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
    };
    effect_ok && key_ok && value_ok
}

/// The tolerations every pod carries: the GPU and EFA device-plugin taints
/// (k8s-conventions.md §1.5).
pub fn default_tolerations() -> Vec<Toleration> {
    ["nvidia.com/gpu", "aws.amazon.com/efa", EFA]
        .into_iter()
        .map(|key| Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some("NoSchedule".into()),
            ..Default::default()
        })
        .collect()
}

/// Parses `key[=value][:effect]` (as `kubectl taint` writes taints) into a toleration.
pub fn parse_toleration(s: &str) -> Result<Toleration, String> {
    let (rest, effect) = match s.rsplit_once(':') {
        Some((rest, effect)) => (rest, Some(effect)),
        None => (s, None),
    };
    if let Some(e) = effect
        && !matches!(e, "NoSchedule" | "NoExecute" | "PreferNoSchedule")
    {
        return Err(format!(
            "`{s}`: effect `{e}` is not NoSchedule, NoExecute or PreferNoSchedule"
        ));
    }
    let (key, value) = match rest.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (rest, None),
    };
    if key.is_empty() {
        return Err(format!("`{s}` has no key (write key[=value][:effect])"));
    }
    Ok(Toleration {
        key: Some(key.into()),
        operator: Some(if value.is_some() { "Equal" } else { "Exists" }.into()),
        value: value.map(str::to_string),
        effect: effect.map(str::to_string),
        ..Default::default()
    })
}

/// Parses a Kubernetes quantity (`32`, `5120Mi`, `192Gi`, `16000000Ki`, `1.5Gi`, `4k`, `100m`)
/// to a whole number (bytes, or a count; fractions are rounded down).
pub fn parse_quantity(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let value: f64 = num.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse().ok()?),
        _ => return None,
    };
    let v = value * factor;
    (v.is_finite() && v >= 0.0).then_some(v as u64)
}

/// Bytes as the largest whole binary unit (`5Gi`, `5120Mi`, `1536Ki`) or plain bytes.
pub fn format_quantity(bytes: u64) -> String {
    for (shift, unit) in [(40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity("32"), Some(32));
        assert_eq!(parse_quantity("5120Mi"), Some(5120 << 20));
        assert_eq!(parse_quantity("16000000Ki"), Some(16_000_000 * 1024));
        assert_eq!(parse_quantity("1.5Gi"), Some(3 << 29));
        assert_eq!(parse_quantity("4k"), Some(4000));
        assert_eq!(parse_quantity("1e3"), Some(1000));
        assert_eq!(parse_quantity("250m"), Some(0));
        assert_eq!(parse_quantity("lots"), None);
        assert_eq!(format_quantity(5120 << 20), "5Gi");
        assert_eq!(format_quantity(21122 << 20), "21122Mi");
    }

    /// A NotReady node is named with its Ready condition's reason and message: the reason
    /// alone (`KubeletNotReady`) does not say what is wrong.
    #[test]
    fn not_ready_says_the_kubelets_reason_and_message() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"conditions": [{"type": "Ready", "status": "False",
                "reason": "KubeletNotReady", "message": "PLEG is not healthy"}]},
        }))
        .unwrap();
        assert_eq!(
            node_problems(&node, &[]),
            ["not Ready (Ready is False: KubeletNotReady: PLEG is not healthy)"]
        );
        let unknown: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown", "message": ""}]},
        }))
        .unwrap();
        assert_eq!(
            node_problems(&unknown, &[]),
            ["not Ready (Ready is Unknown)"]
        );
    }

    /// What a real control plane does to a NotReady or cordoned node (the node lifecycle
    /// controller's taints) is reported once, as the state, never as a taint to tolerate.
    #[test]
    fn kubernetes_own_taints_are_reported_as_the_state_behind_them() {
        let node = |ready: &str, cordoned: bool, taints: &[(&str, &str)]| -> Node {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "n"},
                "spec": {"unschedulable": cordoned, "taints": taints.iter()
                    .map(|(k, e)| serde_json::json!({"key": k, "effect": e})).collect::<Vec<_>>()},
                "status": {"conditions": [{"type": "Ready", "status": ready}]},
            }))
            .unwrap()
        };
        let none: &[Toleration] = &[];
        let not_ready = node(
            "False",
            false,
            &[
                ("node.kubernetes.io/not-ready", "NoSchedule"),
                ("node.kubernetes.io/not-ready", "NoExecute"),
            ],
        );
        let found = schedulability_problems(&not_ready, none);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("not Ready"));
        let cordoned = node(
            "True",
            true,
            &[("node.kubernetes.io/unschedulable", "NoSchedule")],
        );
        let found = schedulability_problems(&cordoned, none);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("cordoned"));
        let pressure = node(
            "True",
            false,
            &[("node.kubernetes.io/disk-pressure", "NoSchedule")],
        );
        let found = schedulability_problems(&pressure, none);
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("(disk pressure); fix that"), "{found:?}");
        assert!(found.iter().all(|f| !f.contains("--toleration")));
        let lagging = node(
            "True",
            false,
            &[("node.kubernetes.io/not-ready", "NoSchedule")],
        );
        assert!(schedulability_problems(&lagging, none)[0].contains("still tainted"));
        // Anyone else's taint keeps its toleration advice.
        let other = node("True", false, &[("maintenance", "NoSchedule")]);
        assert!(
            schedulability_problems(&other, none)[0]
                .contains("--toleration maintenance:NoSchedule")
        );
    }

    #[test]
    fn tolerations_parse_and_match_like_kubernetes() {
        let t = parse_toleration("dedicated=gpu:NoSchedule").unwrap();
        let taint = |k: &str, v: Option<&str>, e: &str| Taint {
            key: k.into(),
            value: v.map(str::to_string),
            effect: e.into(),
            ..Default::default()
        };
        assert!(tolerates(
            &t,
            &taint("dedicated", Some("gpu"), "NoSchedule")
        ));
        assert!(!tolerates(
            &t,
            &taint("dedicated", Some("cpu"), "NoSchedule")
        ));
        assert!(!tolerates(
            &t,
            &taint("dedicated", Some("gpu"), "NoExecute")
        ));
        let any = parse_toleration("nvidia.com/gpu").unwrap();
        assert!(tolerates(
            &any,
            &taint("nvidia.com/gpu", Some("x"), "NoExecute")
        ));
        assert!(parse_toleration(":NoSchedule").is_err());
        assert!(parse_toleration("a:Sometimes").is_err());
    }
}
