//! What a Kubernetes cluster knows about the sources of an analysis and the log does not
//! (`netcheck analyze --kube`): which pod each log came from, the node it runs on (so the
//! node count is a fact: two pods on one node are one node), the node's instance type, zone
//! and EFA devices, what the pod requested (GPUs, `vpc.amazonaws.com/efa`, huge pages) and
//! the `NCCL_*`/`FI_*` variables of its spec.
//!
//! [`apply`] takes the job's `Analysis` (every pod's log fed as one job, the pod name as the
//! source) and these facts, maps NCCL's ranks to pods by host name, replaces the node count
//! with the cluster's and adds the findings only the cluster can support. Pure: the facts
//! are gathered by `launch::kube::logs`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde::Serialize;

use super::analysis::{Analysis, Evidence, Finding, RankSummary, Severity, Transport, Verdict};
use super::rules::list;

/// One pod, as the API server describes it, and how reading its log went.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PodFacts {
    /// The pod's name: also the source name of its log in the analysis' evidence.
    pub pod: String,
    /// The host name NCCL prints for the pod's processes: `spec.hostname` or the pod name
    /// (the node's name with `hostNetwork`).
    pub hostname: String,
    pub node: Option<String>,
    pub instance_type: Option<String>,
    pub zone: Option<String>,
    /// The node's allocatable `vpc.amazonaws.com/efa`; `None` when the node was not read.
    pub node_efa: Option<u64>,
    /// `Pending`, `Running`, `Succeeded`, `Failed`.
    pub phase: String,
    /// Why the pod or its container is not running (scheduler message, `ContainerCreating`).
    pub waiting: Option<String>,
    /// The container whose log was read.
    pub container: Option<String>,
    /// What its containers request (limits where no request is given).
    pub gpus: u64,
    pub efa: u64,
    /// `hugepages-2Mi` / `hugepages-1Gi` requested, as written in the spec.
    pub hugepages: Option<String>,
    /// `NCCL_*`, `FI_*` and `OFI_*` variables set in the container's spec (values of
    /// `valueFrom` shown as `<from ...>`).
    pub env: BTreeMap<String, String>,
    /// `None`: the log was not read (the pod is not running yet).
    pub log: Option<LogStats>,
}

/// How much of a pod's log was read.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LogStats {
    pub bytes: u64,
    pub lines: u64,
    /// `NCCL INFO` and `NCCL WARN` records seen (one per line, unless a wrapper glued some).
    pub nccl_lines: u64,
    /// Whether some communicator printed `Init COMPLETE`.
    pub init_complete: bool,
    /// Why reading stopped early or failed (`--follow` deadline, API error), if it did.
    pub stopped: Option<String>,
}

/// Where a pod stands in the verdict.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PodStatus {
    /// Its NCCL lines are part of the analysis.
    Analyzed,
    /// Not running yet: no log to read.
    Pending,
    /// Its log holds no NCCL lines (yet).
    NoNcclLines,
    /// `--follow` ended before its NCCL init completed.
    InInit,
    /// The log could not be read.
    Unreadable,
}

impl PodStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PodStatus::Analyzed => "analyzed",
            PodStatus::Pending => "pending",
            PodStatus::NoNcclLines => "no NCCL lines",
            PodStatus::InInit => "in NCCL init",
            PodStatus::Unreadable => "log unreadable",
        }
    }
}

/// One pod in the output: its facts and what its ranks showed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PodReport {
    #[serde(flatten)]
    pub facts: PodFacts,
    pub status: PodStatus,
    /// NCCL ranks whose host is this pod (`null` entries: ranks the log does not number).
    pub ranks: Vec<Option<u32>>,
    pub nccl_versions: Vec<String>,
    pub networks: Vec<String>,
    /// What this pod's ranks used between nodes.
    pub inter_node: Vec<Transport>,
}

/// The analysis of a job on a cluster: the `netcheck.analysis.v1` fields plus `pods` and the
/// nodes they run on.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClusterAnalysis {
    #[serde(flatten)]
    pub analysis: Analysis,
    /// Nodes of the pods whose logs were analyzed, sorted.
    pub cluster_nodes: Vec<String>,
    pub pods: Vec<PodReport>,
}

/// Maps the analysis' ranks to `pods`, sets the node count from the cluster and adds the
/// cluster's findings; the verdict follows from all findings, as `analyze` decides it.
pub fn apply(mut analysis: Analysis, pods: Vec<PodFacts>) -> ClusterAnalysis {
    let owners = rank_owners(&analysis.per_rank, &pods);
    let mut reports: Vec<PodReport> = pods
        .into_iter()
        .enumerate()
        .map(|(i, facts)| report(facts, &analysis.per_rank, &owners, i))
        .collect();
    let analyzed = job_pods(&reports);
    let nodes: BTreeSet<String> = analyzed
        .iter()
        .filter_map(|p| p.facts.node.clone())
        .collect();
    // The pods' nodes are the job's nodes when the pods hold every rank of it; a selection
    // of some of its pods only bounds the count from below (NCCL's own count stays).
    let ranks_held = owners.iter().filter(|o| !o.is_empty()).count() as u32;
    let whole_job = analysis.ranks.is_none_or(|world| ranks_held >= world);
    if !nodes.is_empty() && whole_job && analyzed.iter().all(|p| p.facts.node.is_some()) {
        analysis.nodes = Some(nodes.len() as u32);
        // The cluster's fact, shown like the log's evidence (`basis`, `why`).
        if !analysis.basis.iter().any(|b| b == "pod-nodes") {
            analysis.basis.insert(0, "pod-nodes".into());
        }
        let fact = match nodes.len() {
            1 => "pods on 1 node".to_string(),
            n => format!("pods on {n} nodes"),
        };
        analysis.why = if analysis.why.is_empty() {
            fact
        } else {
            format!("{fact}; {}", analysis.why)
        };
    }
    if !whole_job {
        // "NCCL counted N nodes but every rank runs on one host" reads the selected pods as
        // the whole job; they hold only some of its ranks.
        analysis.findings.retain(|f| f.id != "simulated-nodes");
    }
    let mut findings = Vec::new();
    for rule in RULES {
        rule(&analysis, &reports, &mut findings);
    }
    // The cluster's findings name the cause: they come first within a severity.
    let mut added = Vec::new();
    for f in findings {
        if let Some(f) = merge(&mut analysis, f) {
            added.push(f);
        }
    }
    analysis.findings.splice(0..0, added);
    if analysis
        .findings
        .iter()
        .any(|f| f.id == EFA_NOT_REQUESTED && f.severity == Severity::Error)
        && analysis.inter_node_transport == Transport::Socket
    {
        // The node had EFA devices the pod did not ask for: TCP although RDMA was present.
        analysis.socket_fallback = Some(true);
    }
    analysis
        .findings
        .sort_by_key(|f| std::cmp::Reverse(f.severity));
    analysis.verdict = match analysis.findings.iter().map(|f| f.severity).max() {
        Some(Severity::Error) => Verdict::Fail,
        Some(Severity::Warn) => Verdict::Warn,
        _ => Verdict::Pass,
    };
    reports.sort_by(|a, b| a.facts.pod.cmp(&b.facts.pod));
    ClusterAnalysis {
        analysis,
        cluster_nodes: nodes.into_iter().collect(),
        pods: reports,
    }
}

/// The job's pods: those its ranks run in (a Ray head whose log carries its workers' lines
/// holds no rank), else those whose logs were analysed.
fn job_pods(reports: &[PodReport]) -> Vec<&PodReport> {
    let with_ranks: Vec<&PodReport> = reports.iter().filter(|p| !p.ranks.is_empty()).collect();
    if with_ranks.is_empty() {
        reports
            .iter()
            .filter(|p| p.status == PodStatus::Analyzed)
            .collect()
    } else {
        with_ranks
    }
}

/// A finding with the id of one the log analysis already made replaces its message (the
/// same fact, now with pods and nodes) and keeps its evidence; others are returned, to add.
fn merge(analysis: &mut Analysis, f: Finding) -> Option<Finding> {
    match analysis.findings.iter_mut().find(|g| g.id == f.id) {
        Some(existing) => {
            existing.message = f.message;
            existing.severity = existing.severity.max(f.severity);
            if existing.evidence.is_empty() {
                existing.evidence = f.evidence;
            }
            if f.hint.is_some() {
                existing.hint = f.hint;
            }
            None
        }
        None => Some(f),
    }
}

/// For each rank (index into `per_rank`), the pods it belongs to: those whose host name NCCL
/// printed. A rank with no such pod belongs to the one pod whose log holds NCCL lines, when
/// only one does.
fn rank_owners(ranks: &[RankSummary], pods: &[PodFacts]) -> Vec<Vec<usize>> {
    let with_lines: Vec<usize> = pods
        .iter()
        .enumerate()
        .filter(|(_, p)| p.log.as_ref().is_some_and(|l| l.nccl_lines > 0))
        .map(|(i, _)| i)
        .collect();
    ranks
        .iter()
        .map(|r| {
            let by_host: Vec<usize> = r
                .host
                .as_deref()
                .map(|h| {
                    pods.iter()
                        .enumerate()
                        .filter(|(_, p)| same_host(&p.hostname, h))
                        .map(|(i, _)| i)
                        .collect()
                })
                .unwrap_or_default();
            if by_host.is_empty() && with_lines.len() == 1 {
                with_lines.clone()
            } else {
                by_host
            }
        })
        .collect()
}

/// NCCL prints the host name up to its first dot.
fn same_host(hostname: &str, nccl_host: &str) -> bool {
    hostname == nccl_host || hostname.split('.').next() == Some(nccl_host)
}

fn report(facts: PodFacts, ranks: &[RankSummary], owners: &[Vec<usize>], i: usize) -> PodReport {
    let mine: Vec<&RankSummary> = ranks
        .iter()
        .zip(owners)
        .filter(|(_, o)| o.contains(&i))
        .map(|(r, _)| r)
        .collect();
    let status = match &facts.log {
        None => PodStatus::Pending,
        Some(log) if log.nccl_lines == 0 && mine.is_empty() => {
            if log.stopped.is_some() && log.bytes == 0 {
                PodStatus::Unreadable
            } else {
                PodStatus::NoNcclLines
            }
        }
        Some(log) if !log.init_complete && log.stopped.as_deref() == Some(FOLLOW_DEADLINE) => {
            PodStatus::InInit
        }
        Some(_) => PodStatus::Analyzed,
    };
    let set = |f: &dyn Fn(&RankSummary) -> Option<String>| -> Vec<String> {
        let s: BTreeSet<String> = mine.iter().filter_map(|r| f(r)).collect();
        s.into_iter().collect()
    };
    let inter: BTreeSet<Transport> = mine.iter().filter_map(|r| r.inter_node_transport).collect();
    PodReport {
        status,
        ranks: mine.iter().map(|r| r.rank).collect(),
        nccl_versions: set(&|r| r.nccl_version.clone()),
        networks: set(&|r| r.network.clone()),
        inter_node: inter.into_iter().collect(),
        facts,
    }
}

/// `LogStats::stopped` when `--follow` reached its deadline.
pub const FOLLOW_DEADLINE: &str = "--follow deadline reached";

type Rule = fn(&Analysis, &[PodReport], &mut Vec<Finding>);

/// The cluster's rules, in the order their findings are most useful to read.
const RULES: &[Rule] = &[
    efa_not_requested,
    mixed_transports,
    mixed_versions,
    shared_nodes,
    not_checked,
];

const EFA_NOT_REQUESTED: &str = "efa-not-requested";

/// `pod-a (node-1)`, `pod-a`.
fn pod_label(p: &PodReport) -> String {
    match &p.facts.node {
        Some(node) => format!("{} (node {node})", p.facts.pod),
        None => p.facts.pod.clone(),
    }
}

/// The first evidence lines of the analysis' findings that came from `pod`'s log and
/// mention `word`.
fn evidence_of(analysis: &Analysis, pod: &str, word: &str) -> Vec<Evidence> {
    let mut seen = BTreeSet::new();
    analysis
        .findings
        .iter()
        .flat_map(|f| f.evidence.iter())
        .filter(|e| &*e.source == pod && e.text.contains(word))
        .filter(|e| seen.insert((e.line, e.text.clone())))
        .take(2)
        .cloned()
        .collect()
}

fn finding(id: &str, severity: Severity, message: String, evidence: Vec<Evidence>) -> Finding {
    Finding {
        id: id.to_string(),
        severity,
        message,
        evidence,
        hint: None,
    }
}

/// Whether a pod's ranks sent inter-node traffic over TCP sockets.
fn on_sockets(analysis: &Analysis, p: &PodReport) -> bool {
    p.inter_node.contains(&Transport::Socket)
        || (p.inter_node.is_empty()
            && analysis.inter_node_transport == Transport::Socket
            && p.networks.iter().any(|n| n == "Socket"))
}

/// `Using network Socket` (or NET/Socket between nodes) in a pod that requested no
/// `vpc.amazonaws.com/efa`: the EFA device plugin gave it no device, so NCCL had nothing but
/// TCP. An error where its node has EFA devices or EFA was expected.
fn efa_not_requested(analysis: &Analysis, pods: &[PodReport], out: &mut Vec<Finding>) {
    let expect_efa = analysis.expected == Some(Transport::Efa);
    let culprits: Vec<&PodReport> = pods
        .iter()
        .filter(|p| p.status == PodStatus::Analyzed && p.facts.efa == 0 && on_sockets(analysis, p))
        .filter(|p| expect_efa || p.facts.node_efa.is_some_and(|n| n > 0))
        .collect();
    let Some(first) = culprits.first() else {
        return;
    };
    let node_efa = first.facts.node_efa.filter(|n| *n > 0);
    let on_node = match (node_efa, &first.facts.node) {
        (Some(n), Some(node)) => format!(
            "; node {node}{} has {n} allocatable",
            first
                .facts
                .instance_type
                .as_ref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default()
        ),
        _ => String::new(),
    };
    let names = list(culprits.iter().map(|p| pod_label(p)));
    let mut evidence: Vec<Evidence> = culprits
        .iter()
        .flat_map(|p| evidence_of(analysis, &p.facts.pod, "Socket"))
        .take(2)
        .collect();
    if evidence.is_empty() {
        evidence = culprits
            .iter()
            .flat_map(|p| evidence_of(analysis, &p.facts.pod, "NET"))
            .take(2)
            .collect();
    }
    let mut f = finding(
        EFA_NOT_REQUESTED,
        Severity::Error,
        format!(
            "NCCL used TCP sockets in {names}, which requested no vpc.amazonaws.com/efa{on_node}: \
             the EFA device plugin mounts EFA devices only into pods that request them"
        ),
        evidence,
    );
    let efa = node_efa.map_or("N".to_string(), |n| n.to_string());
    f.hint = Some(format!(
        "add `vpc.amazonaws.com/efa: {efa}` (the node's allocatable count) and `hugepages-2Mi: 5120Mi` \
         to the container's resources (requests and limits)"
    ));
    out.push(f);
}

/// Pods of one job whose ranks crossed nodes over different transports: one on EFA, another
/// on sockets.
fn mixed_transports(analysis: &Analysis, pods: &[PodReport], out: &mut Vec<Finding>) {
    let mut by: BTreeMap<Transport, Vec<&PodReport>> = BTreeMap::new();
    for p in pods.iter().filter(|p| p.status == PodStatus::Analyzed) {
        for t in &p.inter_node {
            if !matches!(t, Transport::None | Transport::Unknown) {
                by.entry(*t).or_default().push(p);
            }
        }
    }
    if by.len() < 2 {
        return;
    }
    let parts = by.iter().map(|(t, ps)| {
        format!(
            "{} in {}",
            t.as_str(),
            list(ps.iter().map(|p| pod_label(p)))
        )
    });
    let evidence: Vec<Evidence> = by
        .values()
        .filter_map(|ps| ps.first())
        .flat_map(|p| {
            evidence_of(analysis, &p.facts.pod, "NET")
                .into_iter()
                .take(1)
        })
        .collect();
    let mut f = finding(
        "mixed-transports",
        Severity::Error,
        format!(
            "the pods of one job crossed nodes over different transports: {}",
            parts.collect::<Vec<_>>().join("; ")
        ),
        evidence,
    );
    f.hint = Some(
        "the slowest link sets the pace of every collective: give every pod the same resources \
         (vpc.amazonaws.com/efa, hugepages-2Mi) and image"
            .into(),
    );
    out.push(f);
}

/// Pods of one job on different NCCL versions (per pod, with nodes).
fn mixed_versions(analysis: &Analysis, pods: &[PodReport], out: &mut Vec<Finding>) {
    let mut by: BTreeMap<&str, Vec<&PodReport>> = BTreeMap::new();
    for p in pods.iter().filter(|p| p.status == PodStatus::Analyzed) {
        for v in &p.nccl_versions {
            by.entry(v.as_str()).or_default().push(p);
        }
    }
    if by.len() < 2 {
        return;
    }
    let parts = by
        .iter()
        .map(|(v, ps)| format!("{v} in {}", list(ps.iter().map(|p| pod_label(p)))));
    let evidence = by
        .iter()
        .filter_map(|(v, ps)| {
            evidence_of(analysis, &ps.first()?.facts.pod, v)
                .into_iter()
                .next()
        })
        .collect();
    let mut f = finding(
        "mixed-nccl-versions",
        Severity::Warn,
        format!(
            "the pods of one job run different NCCL versions: {}",
            parts.collect::<Vec<_>>().join("; ")
        ),
        evidence,
    );
    f.hint = Some(
        "run one image (one NCCL build) in every pod; mixed versions can fail or hang in init"
            .into(),
    );
    out.push(f);
}

/// Pods with different host names on one node: NCCL takes each for a host of its own, so
/// their ranks talk over the network stack instead of NVLink or shared memory.
fn shared_nodes(analysis: &Analysis, pods: &[PodReport], out: &mut Vec<Finding>) {
    let mut by_node: BTreeMap<&str, Vec<&PodReport>> = BTreeMap::new();
    for p in job_pods(pods) {
        if let Some(node) = &p.facts.node {
            by_node.entry(node.as_str()).or_default().push(p);
        }
    }
    let shared: Vec<(&str, Vec<&PodReport>)> = by_node
        .into_iter()
        .filter(|(_, ps)| {
            let hosts: BTreeSet<&str> = ps.iter().map(|p| p.facts.hostname.as_str()).collect();
            hosts.len() > 1
        })
        .collect();
    if shared.is_empty() {
        return;
    }
    let parts = shared.iter().map(|(node, ps)| {
        format!(
            "{} on node {node}",
            list(ps.iter().map(|p| p.facts.pod.clone()))
        )
    });
    let network = analysis.inter_node_transport;
    let over = if matches!(network, Transport::None | Transport::Unknown) {
        String::new()
    } else {
        format!(" (here: {})", network.as_str())
    };
    let nodes = analysis.nodes.map_or("?".into(), |n| n.to_string());
    let mut f = finding(
        "pods-share-node",
        Severity::Warn,
        format!(
            "{}: NCCL counts each pod as a host of its own, so traffic between pods of one node \
             goes through the network{over} instead of NVLink or shared memory; the job runs on {nodes} node(s)",
            parts.collect::<Vec<_>>().join("; ")
        ),
        vec![],
    );
    f.hint = Some(
        "give each pod a node of its own (podAntiAffinity on kubernetes.io/hostname, or request \
         all of the node's GPUs), or run the node's ranks in one pod"
            .into(),
    );
    out.push(f);
}

/// Pods whose logs say nothing yet: Pending, no NCCL lines, still in NCCL init, unreadable.
/// Never a pass: a warning where such a pod requested GPUs (a pod without GPUs, such as a Ray
/// head or an MPI launcher, runs no NCCL of its own), an error when no pod could be checked.
fn not_checked(_analysis: &Analysis, pods: &[PodReport], out: &mut Vec<Finding>) {
    let unchecked: Vec<&PodReport> = pods
        .iter()
        .filter(|p| p.status != PodStatus::Analyzed)
        .collect();
    if unchecked.is_empty() {
        return;
    }
    let analyzed = pods.len() - unchecked.len();
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for p in &unchecked {
        let why = match (&p.facts.waiting, &p.facts.log) {
            (Some(w), _) => format!("{} ({w})", p.facts.pod),
            (
                None,
                Some(LogStats {
                    stopped: Some(s), ..
                }),
            ) if p.status == PodStatus::Unreadable => format!("{} ({s})", p.facts.pod),
            _ if p.facts.gpus == 0 => format!("{} (no GPUs requested)", p.facts.pod),
            _ => p.facts.pod.clone(),
        };
        by.entry(p.status.as_str()).or_default().push(why);
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(status, names)| format!("{status}: {}", list(names.iter().cloned())))
        .collect();
    let severity = if analyzed == 0 {
        Severity::Error
    } else if unchecked.iter().any(|p| p.facts.gpus > 0) {
        Severity::Warn
    } else {
        Severity::Info
    };
    let message = if analyzed == 0 {
        format!(
            "none of the {} selected pod(s) shows NCCL lines to judge: {}",
            pods.len(),
            parts.join("; ")
        )
    } else {
        format!(
            "{} of {} pod(s) not judged: {}",
            unchecked.len(),
            pods.len(),
            parts.join("; ")
        )
    };
    let no_debug = unchecked.iter().any(|p| {
        p.status == PodStatus::NoNcclLines
            && p.facts.gpus > 0
            && !p.facts.env.contains_key("NCCL_DEBUG")
    });
    let hint = if severity == Severity::Info {
        "pods without GPUs (a Ray head, an MPI launcher) run no NCCL of their own"
    } else if no_debug {
        "set NCCL_DEBUG=INFO in the pods' env (NCCL_DEBUG_SUBSYS=INIT,NET is enough) and restart the job"
    } else if unchecked
        .iter()
        .any(|p| matches!(p.status, PodStatus::Pending | PodStatus::InInit))
    {
        "run again once the pods are running and NCCL has initialised, or use --follow to wait for them"
    } else {
        "check that the container (--container) is the one running NCCL, and --since/--previous"
    };
    let mut f = finding("pods-not-judged", severity, message, vec![]);
    f.hint = Some(hint.into());
    out.push(f);
}

/// `3 node(s)`, or `3 node(s), 2 with analyzed NCCL lines` when pods without NCCL traffic
/// (a Ray head) run elsewhere: every pod's node counts.
fn nodes_said(c: &ClusterAnalysis) -> String {
    let all: BTreeSet<&str> = c
        .pods
        .iter()
        .filter_map(|p| p.facts.node.as_deref())
        .collect();
    if all.len() == c.cluster_nodes.len() {
        format!("{} node(s)", all.len())
    } else {
        format!(
            "{} node(s), {} with analyzed NCCL lines",
            all.len(),
            c.cluster_nodes.len()
        )
    }
}

/// Text for terminals: the pods table (after `render::text` of the analysis).
pub fn text(c: &ClusterAnalysis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\npods: {} on {}", c.pods.len(), nodes_said(c));
    for line in pod_lines(c) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// Markdown: the pods table.
pub fn markdown(c: &ClusterAnalysis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n#### Pods ({} on {})\n", c.pods.len(), nodes_said(c));
    let _ = writeln!(
        out,
        "| pod | node | instance | zone | GPU / EFA / hugepages | NCCL lines | ranks | inter-node | NCCL | status |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for p in &c.pods {
        let f = &p.facts;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md(&f.pod),
            md(f.node.as_deref().unwrap_or("-")),
            md(f.instance_type.as_deref().unwrap_or("-")),
            md(f.zone.as_deref().unwrap_or("-")),
            requests(f),
            f.log
                .as_ref()
                .map_or("-".into(), |l| l.nccl_lines.to_string()),
            ranks_text(&p.ranks),
            inter_text(p),
            md(&dash(&p.nccl_versions)),
            status_text(p),
        );
    }
    out
}

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn dash(items: &[String]) -> String {
    if items.is_empty() {
        "-".into()
    } else {
        items.join(",")
    }
}

/// `8/32/5Gi`: GPUs, EFA devices and huge pages (sizes only; JSON has the resource names).
fn requests(f: &PodFacts) -> String {
    let pages = f.hugepages.as_deref().map_or("-".to_string(), |h| {
        h.split(',')
            .map(|kv| kv.split_once('=').map_or(kv, |(_, v)| v))
            .collect::<Vec<_>>()
            .join("+")
    });
    format!("{}/{}/{pages}", f.gpus, f.efa)
}

fn ranks_text(ranks: &[Option<u32>]) -> String {
    if ranks.is_empty() {
        return "-".into();
    }
    let mut numbered: Vec<u32> = ranks.iter().flatten().copied().collect();
    numbered.sort_unstable();
    let unnumbered = ranks.len() - numbered.len();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbered.len() {
        let start = numbered[i];
        let mut end = start;
        while i + 1 < numbered.len() && numbered[i + 1] == end + 1 {
            i += 1;
            end = numbered[i];
        }
        parts.push(if end > start {
            format!("{start}-{end}")
        } else {
            start.to_string()
        });
        i += 1;
    }
    if unnumbered > 0 {
        parts.push(format!("{unnumbered}?"));
    }
    parts.join(",")
}

fn inter_text(p: &PodReport) -> String {
    if p.inter_node.is_empty() {
        return "-".into();
    }
    p.inter_node
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn status_text(p: &PodReport) -> String {
    match (&p.facts.waiting, p.status) {
        (Some(w), s) if s != PodStatus::Analyzed => format!("{} ({w})", s.as_str()),
        _ => p.status.as_str().to_string(),
    }
}

fn pod_lines(c: &ClusterAnalysis) -> Vec<String> {
    let row = |cols: [&str; 9]| {
        format!(
            "{:<28} {:<24} {:<14} {:<11} {:<11} {:>6} {:<7} {:<10} {}",
            cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8]
        )
        .trim_end()
        .to_string()
    };
    let mut lines = vec![row([
        "pod",
        "node",
        "instance",
        "zone",
        "gpu/efa/hp",
        "NCCL",
        "ranks",
        "inter",
        "status",
    ])];
    for p in &c.pods {
        let f = &p.facts;
        let nccl = f
            .log
            .as_ref()
            .map_or("-".into(), |l| l.nccl_lines.to_string());
        let status = match p.status {
            PodStatus::Analyzed => format!("analyzed, NCCL {}", dash(&p.nccl_versions)),
            _ => status_text(p),
        };
        lines.push(row([
            &f.pod,
            f.node.as_deref().unwrap_or("-"),
            f.instance_type.as_deref().unwrap_or("-"),
            f.zone.as_deref().unwrap_or("-"),
            &requests(f),
            &nccl,
            &ranks_text(&p.ranks),
            &inter_text(p),
            &status,
        ]));
    }
    lines
}

/// The analysis with each evidence source written as `pod@node`, for human output.
pub fn with_nodes_in_evidence(c: &ClusterAnalysis) -> Analysis {
    let nodes: BTreeMap<&str, &str> = c
        .pods
        .iter()
        .filter_map(|p| Some((p.facts.pod.as_str(), p.facts.node.as_deref()?)))
        .collect();
    let mut a = c.analysis.clone();
    for e in a.findings.iter_mut().flat_map(|f| f.evidence.iter_mut()) {
        if let Some(node) = nodes.get(&*e.source) {
            e.source = format!("{}@{node}", e.source).into();
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logscan::ANALYSIS_SCHEMA;

    fn analysis(inter: Transport, ranks: Vec<RankSummary>, findings: Vec<Finding>) -> Analysis {
        Analysis {
            schema: ANALYSIS_SCHEMA.into(),
            nccl_versions: vec![],
            networks: vec![],
            ofi_provider: None,
            nodes: Some(ranks.len() as u32),
            ranks: Some(ranks.len() as u32),
            inter_node_transport: inter,
            socket_fallback: Some(false),
            basis: vec![],
            why: String::new(),
            gdr: None,
            per_rank: ranks,
            findings,
            verdict: Verdict::Pass,
            hosts: vec![],
            expected: None,
        }
    }

    fn rank(n: u32, host: &str, inter: Transport, network: &str, version: &str) -> RankSummary {
        RankSummary {
            rank: Some(n),
            host: Some(host.into()),
            inter_node_transport: Some(inter),
            network: Some(network.into()),
            nccl_version: Some(version.into()),
            ..Default::default()
        }
    }

    /// Ranks 0 and 1 on hosts `w-0` and `w-1`, NCCL 2.28.9: (transport, network) each.
    fn w0_w1(first: (Transport, &str), second: (Transport, &str)) -> Vec<RankSummary> {
        vec![
            rank(0, "w-0", first.0, first.1, "2.28.9"),
            rank(1, "w-1", second.0, second.1, "2.28.9"),
        ]
    }

    /// Pods `w-0` on n1 and `w-1` on `second_node`, asking for `efa` devices each, on nodes
    /// with `node_efa`, 50 NCCL lines each.
    fn w0_w1_pods(second_node: &str, efa: [u64; 2], node_efa: u64) -> Vec<PodFacts> {
        vec![
            pod("w-0", "n1", efa[0], node_efa, 50),
            pod("w-1", second_node, efa[1], node_efa, 50),
        ]
    }

    fn pod(name: &str, node: &str, efa: u64, node_efa: u64, nccl_lines: u64) -> PodFacts {
        PodFacts {
            pod: name.into(),
            hostname: name.into(),
            node: Some(node.into()),
            node_efa: Some(node_efa),
            phase: "Running".into(),
            gpus: 8,
            efa,
            log: Some(LogStats {
                bytes: 100,
                lines: 10,
                nccl_lines,
                init_complete: true,
                stopped: None,
            }),
            ..Default::default()
        }
    }

    fn ids(c: &ClusterAnalysis) -> Vec<(&str, Severity)> {
        c.analysis
            .findings
            .iter()
            .map(|f| (f.id.as_str(), f.severity))
            .collect()
    }

    #[test]
    fn socket_in_a_pod_without_an_efa_request_on_an_efa_node_fails_and_names_the_request() {
        let a = analysis(
            Transport::Socket,
            w0_w1((Transport::Socket, "Socket"), (Transport::Socket, "Socket")),
            vec![],
        );
        let c = apply(a, w0_w1_pods("n2", [0, 0], 32));
        assert_eq!(ids(&c), vec![("efa-not-requested", Severity::Error)]);
        let f = &c.analysis.findings[0];
        assert!(
            f.message.contains("w-0 (node n1), w-1 (node n2)"),
            "{}",
            f.message
        );
        assert!(
            f.hint
                .as_deref()
                .unwrap()
                .contains("vpc.amazonaws.com/efa: 32")
        );
        assert_eq!(c.analysis.verdict, Verdict::Fail);
        assert_eq!(c.analysis.socket_fallback, Some(true));
        assert_eq!(c.analysis.nodes, Some(2));
    }

    #[test]
    fn socket_on_nodes_without_efa_is_no_missing_request_unless_efa_was_expected() {
        let ranks = w0_w1((Transport::Socket, "Socket"), (Transport::Socket, "Socket"));
        let pods = w0_w1_pods("n2", [0, 0], 0);
        let c = apply(
            analysis(Transport::Socket, ranks.clone(), vec![]),
            pods.clone(),
        );
        assert!(ids(&c).is_empty());
        assert_eq!(c.analysis.verdict, Verdict::Pass);
        // A pod that asked for EFA and still used sockets is the log rules' socket fallback,
        // not a missing request.
        let mut asked = pods.clone();
        asked[0].efa = 32;
        asked[1].efa = 32;
        let mut a = analysis(Transport::Socket, ranks.clone(), vec![]);
        a.expected = Some(Transport::Efa);
        assert!(ids(&apply(a.clone(), asked)).is_empty());
        let c = apply(a, pods);
        assert_eq!(ids(&c), vec![("efa-not-requested", Severity::Error)]);
    }

    #[test]
    fn one_pod_on_efa_and_another_on_sockets_is_an_error_naming_both() {
        let a = analysis(
            Transport::Socket,
            w0_w1((Transport::Efa, "Libfabric"), (Transport::Socket, "Socket")),
            vec![finding(
                "mixed-transports",
                Severity::Warn,
                "ranks differ".into(),
                vec![],
            )],
        );
        let c = apply(a, w0_w1_pods("n2", [32, 0], 32));
        let mixed = c
            .analysis
            .findings
            .iter()
            .find(|f| f.id == "mixed-transports")
            .unwrap();
        assert_eq!(mixed.severity, Severity::Error);
        assert!(
            mixed.message.contains("efa in w-0 (node n1)")
                && mixed.message.contains("socket in w-1 (node n2)"),
            "{}",
            mixed.message
        );
        // Merged into the log rules' finding, not added beside it.
        assert_eq!(
            c.analysis
                .findings
                .iter()
                .filter(|f| f.id == "mixed-transports")
                .count(),
            1
        );
        assert!(ids(&c).contains(&("efa-not-requested", Severity::Error)));
    }

    #[test]
    fn pods_on_different_nccl_versions_are_named_with_their_nodes() {
        let a = analysis(
            Transport::Efa,
            vec![
                rank(0, "w-0", Transport::Efa, "Libfabric", "2.28.9"),
                rank(1, "w-1", Transport::Efa, "Libfabric", "2.27.3"),
            ],
            vec![],
        );
        let c = apply(a, w0_w1_pods("n2", [32, 32], 32));
        assert_eq!(ids(&c), vec![("mixed-nccl-versions", Severity::Warn)]);
        let m = &c.analysis.findings[0].message;
        assert!(
            m.contains("2.27.3 in w-1 (node n2); 2.28.9 in w-0 (node n1)"),
            "{m}"
        );
        // One version: nothing.
        let a = analysis(
            Transport::Efa,
            vec![rank(0, "w-0", Transport::Efa, "Libfabric", "2.28.9")],
            vec![],
        );
        assert!(ids(&apply(a, vec![pod("w-0", "n1", 32, 32, 50)])).is_empty());
    }

    #[test]
    fn two_pods_on_one_node_are_one_node() {
        let a = analysis(
            Transport::Socket,
            w0_w1((Transport::Socket, "Socket"), (Transport::Socket, "Socket")),
            vec![],
        );
        let c = apply(a, w0_w1_pods("n1", [0, 0], 0));
        assert_eq!(c.analysis.nodes, Some(1));
        assert_eq!(c.cluster_nodes, vec!["n1".to_string()]);
        assert_eq!(ids(&c), vec![("pods-share-node", Severity::Warn)]);
        // hostNetwork pods share the node's host name: NCCL sees one host, no warning.
        let a = analysis(
            Transport::None,
            vec![
                rank(0, "n1", Transport::None, "Socket", "2.28.9"),
                rank(1, "n1", Transport::None, "Socket", "2.28.9"),
            ],
            vec![],
        );
        let mut pods = w0_w1_pods("n1", [0, 0], 0);
        for p in &mut pods {
            p.hostname = "n1".into();
        }
        let c = apply(a, pods);
        assert!(ids(&c).is_empty(), "{:?}", ids(&c));
        assert_eq!(c.pods[0].ranks, vec![Some(0), Some(1)]);
    }

    #[test]
    fn pending_and_silent_pods_are_listed_never_passed() {
        let a = analysis(
            Transport::Efa,
            vec![rank(0, "w-0", Transport::Efa, "Libfabric", "2.28.9")],
            vec![],
        );
        let mut pending = pod("w-1", "n2", 32, 32, 0);
        pending.log = None;
        pending.node = None;
        pending.waiting = Some("Unschedulable: 0/2 nodes are available".into());
        let mut head = pod("head", "n3", 0, 0, 0);
        head.gpus = 0;
        let c = apply(
            a.clone(),
            vec![pod("w-0", "n1", 32, 32, 50), pending, head.clone()],
        );
        assert_eq!(ids(&c), vec![("pods-not-judged", Severity::Warn)]);
        assert_eq!(c.analysis.verdict, Verdict::Warn);
        let m = &c.analysis.findings[0].message;
        assert!(m.contains("2 of 3"), "{m}");
        assert!(m.contains("pending: w-1 (Unschedulable"), "{m}");
        assert_eq!(c.analysis.nodes, Some(1));
        // Only a pod without GPUs silent (a Ray head): information.
        let c = apply(a.clone(), vec![pod("w-0", "n1", 32, 32, 50), head.clone()]);
        assert_eq!(ids(&c), vec![("pods-not-judged", Severity::Info)]);
        assert_eq!(c.analysis.verdict, Verdict::Pass);
        assert!(
            c.analysis.findings[0]
                .message
                .contains("head (no GPUs requested)")
        );
        // Nothing to judge at all: an error; a GPU pod without NCCL_DEBUG is told to set it.
        let empty = analysis(Transport::Unknown, vec![], vec![]);
        let c = apply(empty, vec![head, pod("w-2", "n2", 32, 32, 0)]);
        assert_eq!(ids(&c), vec![("pods-not-judged", Severity::Error)]);
        assert!(
            c.analysis.findings[0]
                .hint
                .as_deref()
                .unwrap()
                .contains("NCCL_DEBUG=INFO")
        );
        assert_eq!(c.analysis.verdict, Verdict::Fail);
    }

    #[test]
    fn a_head_whose_log_carries_its_workers_lines_is_not_a_node_of_the_job() {
        let a = analysis(
            Transport::Efa,
            w0_w1((Transport::Efa, "Libfabric"), (Transport::Efa, "Libfabric")),
            vec![],
        );
        // The head shares node n1 with a worker: no pods-share-node, it holds no rank.
        let mut head = pod("head", "n1", 0, 0, 80);
        head.gpus = 0;
        let c = apply(
            a,
            vec![
                head,
                pod("w-0", "n1", 32, 32, 0),
                pod("w-1", "n2", 32, 32, 0),
            ],
        );
        assert_eq!(c.analysis.nodes, Some(2));
        assert_eq!(c.cluster_nodes, vec!["n1".to_string(), "n2".to_string()]);
        assert!(c.pods.iter().all(|p| p.status == PodStatus::Analyzed));
        assert!(ids(&c).is_empty(), "{:?}", ids(&c));
    }

    #[test]
    fn some_pods_of_a_job_keep_nccls_node_count() {
        let mut a = analysis(
            Transport::Efa,
            vec![rank(0, "w-0", Transport::Efa, "Libfabric", "2.28.9")],
            vec![],
        );
        a.ranks = Some(16);
        a.nodes = Some(2);
        a.findings.push(finding(
            "simulated-nodes",
            Severity::Info,
            "NCCL counted 2 nodes, but every rank runs on host `w-0`".into(),
            vec![],
        ));
        let c = apply(a, vec![pod("w-0", "n1", 32, 32, 50)]);
        assert_eq!(c.analysis.nodes, Some(2));
        assert!(ids(&c).is_empty(), "{:?}", ids(&c));
        assert_eq!(c.cluster_nodes, vec!["n1".to_string()]);
    }

    #[test]
    fn a_rank_with_an_unknown_host_belongs_to_the_only_pod_with_nccl_lines() {
        let a = analysis(
            Transport::Efa,
            vec![rank(0, "vm", Transport::Efa, "Libfabric", "2.28.9")],
            vec![],
        );
        let c = apply(
            a,
            vec![pod("w-0", "n1", 32, 32, 50), pod("w-1", "n2", 32, 32, 0)],
        );
        let w0 = c.pods.iter().find(|p| p.facts.pod == "w-0").unwrap();
        assert_eq!(w0.ranks, vec![Some(0)]);
        assert_eq!(w0.status, PodStatus::Analyzed);
        assert!(same_host("w-0.svc.ns", "w-0") && !same_host("w-01", "w-0"));
        assert_eq!(
            ranks_text(&[Some(3), Some(0), Some(1), Some(2), Some(7), None]),
            "0-3,7,1?"
        );
    }
}
