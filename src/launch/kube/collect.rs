//! From a finished group to a verdict: rank 0's `NETCHECK_RESULT` line (its RunRecord), the
//! pods' exit codes and the scheduler's words become one `PairResult`, and the planner's
//! `Outcome`. Then all groups merge into the run's RunRecord. Pure.

use std::collections::BTreeMap;

use crate::launch::plan::{NodeVerdict, Outcome};
use crate::logscan::{Analysis, Analyzer, Options};
use crate::results::{HostInfo, NodeResult, PairResult, ResultRow, RunRecord, RunStatus};

use super::nodes::NodeInfo;
use super::status::{Finish, PodPhase, PodView};
use crate::launch::fabric_check::FABRIC_PREFIX;

/// The line rank 0 prints when the sweep ends, followed by its compact RunRecord.
pub const RESULT_PREFIX: &str = "NETCHECK_RESULT ";

/// Worker exit codes (DESIGN.md, the same for every command).
const EXIT_CHECK_FAILED: i32 = 1;
const EXIT_ENVIRONMENT: i32 = 3;
const EXIT_TIMEOUT: i32 = 124;
/// Codes of a worker stopped from outside (Ctrl-C/SIGTERM handled, SIGKILL, SIGTERM).
const STOPPED: &[i32] = &[130, 137, 143];

/// Pair statuses, as `PairResult.status` spells them.
pub const PASS: &str = "pass";
pub const FAIL: &str = "fail";
pub const TIMEOUT: &str = "timeout";
pub const ERROR: &str = "error";
pub const UNSCHEDULABLE: &str = "unschedulable";

/// A finished group, judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub pair: PairResult,
    pub outcome: Outcome,
    /// Rank 0's own RunRecord, when it printed one.
    pub record: Option<RunRecord>,
    /// RDMA counter deltas by node: rank 0's from its record, the others' from their
    /// `NETCHECK_COUNTERS` lines. The proof that bytes crossed each EFA device.
    pub counters: BTreeMap<String, serde_json::Value>,
    /// `--fabric-check` reports by node: each other node's `NETCHECK_FABRIC` line (its
    /// ping-pong against rank 0's node, which measures nothing itself).
    pub fabric: BTreeMap<String, serde_json::Value>,
    /// The image each node's pod ran and the digest its kubelet pulled (set by the watcher
    /// from the pods' status, not by `judge`).
    pub images: BTreeMap<String, PodImage>,
}

/// The benchmark container's image in one pod: the reference the pod spec names and the
/// digest the kubelet reports (`imageID`, e.g. `registry/repo@sha256:…`; empty until pulled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodImage {
    pub image: String,
    pub image_id: Option<String>,
}

/// The benchmark container's image and pulled digest, from a pod the API server returned.
pub fn pod_image(pod: &k8s_openapi::api::core::v1::Pod) -> Option<PodImage> {
    let container = super::names::CONTAINER;
    let spec_image = pod
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == container)
        .and_then(|c| c.image.clone());
    let status = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == container));
    let image = spec_image.or_else(|| status.map(|c| c.image.clone()))?;
    let image_id = status
        .map(|c| c.image_id.clone())
        .filter(|id| !id.is_empty());
    Some(PodImage { image, image_id })
}

/// The digest part of an imageID (`…@sha256:…` → `sha256:…`; anything else as it is).
fn digest(image_id: &str) -> &str {
    image_id
        .rsplit_once('@')
        .map_or(image_id, |(_, digest)| digest)
}

/// A finding when the pods of one image reference ran different digests (a tag moved during
/// the run, or nodes had different copies cached): their results are not of the same image.
pub fn image_finding(judged: &[Judged]) -> Option<String> {
    // image → digest → nodes
    let mut seen: BTreeMap<&str, BTreeMap<&str, std::collections::BTreeSet<&str>>> =
        BTreeMap::new();
    for j in judged {
        for (node, img) in &j.images {
            if let Some(id) = &img.image_id {
                seen.entry(img.image.as_str())
                    .or_default()
                    .entry(digest(id))
                    .or_default()
                    .insert(node.as_str());
            }
        }
    }
    let differing: Vec<String> = seen
        .iter()
        .filter(|(_, digests)| digests.len() > 1)
        .map(|(image, digests)| {
            let parts: Vec<String> = digests
                .iter()
                .map(|(d, nodes)| {
                    format!(
                        "{d} on {}",
                        nodes.iter().copied().collect::<Vec<_>>().join(", ")
                    )
                })
                .collect();
            format!("{image}: {}", parts.join("; "))
        })
        .collect();
    (!differing.is_empty()).then(|| {
        format!(
            "the nodes ran different digests of the same image ({}): results may differ by \
             image, not by node; pin the image by digest (--image REPO@sha256:...)",
            differing.join(" | ")
        )
    })
}

/// The line every other node prints with its counter delta (`netcheck run`).
pub const COUNTERS_PREFIX: &str = "NETCHECK_COUNTERS ";

/// The JSON after the last line starting with `prefix` in a pod's log.
fn last_json_line(log: &str, prefix: &str) -> Option<serde_json::Value> {
    log.lines()
        .rev()
        .find_map(|l| l.trim_end().strip_prefix(prefix))
        .and_then(|json| serde_json::from_str(json).ok())
}

/// Rank 0's RunRecord from its log: the last `NETCHECK_RESULT` line. `Err` when the line is
/// there but unreadable.
pub fn find_result(log: &str) -> Option<Result<RunRecord, String>> {
    let line = log
        .lines()
        .rev()
        .find_map(|l| l.trim_end().strip_prefix(RESULT_PREFIX))?;
    Some(RunRecord::parse(line, "NETCHECK_RESULT line").map_err(|e| e.to_string()))
}

/// Judges a group: `name` is the pair's name (`a+b`), `logs` maps node rank to its log,
/// `warnings` are the Warning events of the pod or Job at fault.
pub fn judge(
    nodes: &[String],
    finish: &Finish,
    pods: &[PodView],
    logs: &BTreeMap<usize, String>,
    warnings: &[String],
) -> Judged {
    let name = nodes.join("+");
    let record = logs.get(&0).and_then(|l| find_result(l));
    let (status, message) = match finish {
        Finish::Exited => exited(pods, logs, &record),
        Finish::Unschedulable { pod, message } => (
            UNSCHEDULABLE,
            format!(
                "{} was not scheduled: {}{}",
                pod_label(pod),
                message,
                events_suffix(warnings, message)
            ),
        ),
        Finish::PeerNeverRan { peer, failed } => {
            let why = match &peer.phase {
                PodPhase::Unscheduled { message } => format!(
                    "was never scheduled: {message}{}",
                    events_suffix(warnings, message)
                ),
                PodPhase::Starting { reason, message } if reason == "NotCreated" => {
                    format!("never ran: {message}{}", events_suffix(warnings, message))
                }
                PodPhase::Starting { reason, message } => format!(
                    "never started on its node (still {reason}{}){}",
                    if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {message}")
                    },
                    events_suffix(warnings, message)
                ),
                _ => "never ran".to_string(),
            };
            let code = failed.exit_code().unwrap_or(-1);
            let detail = last_words(failed, logs.get(&failed.index).map(String::as_str));
            let status = if matches!(peer.phase, PodPhase::Unscheduled { .. }) {
                UNSCHEDULABLE
            } else {
                ERROR
            };
            (
                status,
                format!(
                    "{} {why}; meanwhile {} exited {code}{detail}: nothing between the nodes \
                     was tested, so neither node is blamed",
                    if peer.name.is_empty() {
                        pod_label(peer)
                    } else {
                        peer.describe()
                    },
                    pod_label(failed)
                ),
            )
        }
        Finish::Broken { pod, message } => (
            ERROR,
            format!(
                "{} cannot run: {message}{}",
                pod.describe(),
                events_suffix(warnings, message)
            ),
        ),
        Finish::MissingPods { found } => (
            ERROR,
            format!(
                "the Job created {found} of {} pods{}{}",
                nodes.len(),
                events_suffix(warnings, ""),
                pod_security_hint(warnings)
            ),
        ),
        Finish::TimedOut { running_for } => (
            TIMEOUT,
            format!(
                "no result after {}s of running (a hang?); the pods were stopped",
                running_for.as_secs()
            ),
        ),
    };
    // Where the ranks ran, from the pods' own status: a pair on one node is never a pass.
    let (status, message) = match misplaced(nodes, pods) {
        Some(why) if matches!(finish, Finish::Exited | Finish::TimedOut { .. }) => (ERROR, why),
        _ => (status, message),
    };
    let outcome = match status {
        PASS => Outcome::Pass,
        FAIL | TIMEOUT => Outcome::Fail,
        _ => Outcome::Inconclusive,
    };
    let good_record = record.and_then(Result::ok);
    let rows = good_record
        .as_ref()
        .map(|r| {
            r.rows
                .iter()
                .cloned()
                .map(|row| ResultRow {
                    group: Some(name.clone()),
                    ..row
                })
                .collect()
        })
        .unwrap_or_default();
    // Rank 0's analysis covers every rank; without it (a pair that failed or hung), the pods'
    // own logs still say which transport NCCL chose and where it stopped.
    let analysis = good_record
        .as_ref()
        .and_then(|r| r.analysis.clone())
        .or_else(|| analyse_pod_logs(&name, logs));
    let mut counters = BTreeMap::new();
    let mut fabric = BTreeMap::new();
    for (index, node) in nodes.iter().enumerate() {
        let log = logs.get(&index);
        let delta = if index == 0 {
            good_record.as_ref().and_then(|r| r.counters.clone())
        } else {
            log.and_then(|log| last_json_line(log, COUNTERS_PREFIX))
        };
        if let Some(delta) = delta {
            counters.insert(node.clone(), delta);
        }
        // Kept whatever became of the pair: the report is what the fabric did before NCCL.
        if let Some(report) = log.and_then(|log| last_json_line(log, FABRIC_PREFIX)) {
            fabric.insert(node.clone(), report);
        }
    }
    Judged {
        pair: PairResult {
            name,
            nodes: nodes.to_vec(),
            status: status.into(),
            message: (!message.is_empty()).then_some(message),
            rows,
            analysis,
        },
        outcome,
        record: good_record,
        counters,
        fabric,
        images: BTreeMap::new(),
    }
}

/// The NCCL log lines in the pods' logs (echoed by `netcheck run`), analysed as one job.
fn analyse_pod_logs(group: &str, logs: &BTreeMap<usize, String>) -> Option<Analysis> {
    if logs.is_empty() {
        return None;
    }
    let mut analyzer = Analyzer::new(Options::default());
    for (rank, text) in logs {
        analyzer
            .feed(text.as_bytes(), &format!("{group} rank {rank}"))
            .ok()?;
    }
    Some(analyzer.finish())
}

fn pod_label(pod: &PodView) -> String {
    match (&pod.node, pod.name.is_empty()) {
        (Some(node), _) => format!("rank {} (node {node})", pod.index),
        (None, false) => format!("rank {} (pod {})", pod.index, pod.name),
        (None, true) => format!("rank {}", pod.index),
    }
}

/// What to change when Pod Security admission refused the pods: the two things of ours that
/// the `baseline` level forbids are CAP_IPC_LOCK and the host's /dev/shm.
fn pod_security_hint(warnings: &[String]) -> String {
    let Some(w) = warnings
        .last()
        .filter(|w| w.contains("violates PodSecurity"))
    else {
        return String::new();
    };
    let mut fixes = vec![];
    if w.contains("IPC_LOCK") {
        fixes.push("--no-ipc-lock");
    }
    if w.contains("hostPath") {
        fixes.push("a memory-backed /dev/shm (--shm-size 16Gi instead of host)");
    }
    // The `restricted` level's demands, all met by --run-as-non-root.
    if [
        "runAsNonRoot",
        "allowPrivilegeEscalation",
        "seccompProfile",
        "unrestricted capabilities",
    ]
    .iter()
    .any(|k| w.contains(k))
    {
        fixes.push(
            "--run-as-non-root (and --run-as-user UID if the image's user is root or a name)",
        );
    }
    if fixes.is_empty() {
        return String::new();
    }
    format!(
        "; the namespace enforces a Pod Security level: run with {}",
        fixes.join(" and ")
    )
}

/// The newest warning event, unless it only repeats `said` (the scheduler's message is both
/// the pod's condition and its FailedScheduling event).
fn events_suffix(warnings: &[String], said: &str) -> String {
    match warnings.last() {
        Some(w) if !said.trim().is_empty() && w.contains(said.trim()) => String::new(),
        Some(w) => format!(" [event {w}]"),
        None => String::new(),
    }
}

/// Whether every rank ran on the node the plan gave it, each on its own node. A group whose
/// ranks shared a node tested nothing between nodes: `Some(why)` then.
pub fn misplaced(nodes: &[String], pods: &[PodView]) -> Option<String> {
    let mut by_node: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut wrong = vec![];
    for p in pods.iter().filter(|p| p.started()) {
        let Some(node) = p.node.as_deref() else {
            continue;
        };
        let ranks = by_node.entry(node).or_default();
        if !ranks.contains(&p.index) {
            ranks.push(p.index);
        }
        if nodes.get(p.index).map(String::as_str) != Some(node) {
            wrong.push(format!(
                "rank {} ran on {node}, planned for {}",
                p.index,
                nodes.get(p.index).map(String::as_str).unwrap_or("no node")
            ));
        }
    }
    let shared: Vec<String> = by_node
        .iter()
        .filter(|(_, ranks)| ranks.len() > 1)
        .map(|(node, ranks)| {
            let list: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
            format!("ranks {} all ran on {node}", list.join(" and "))
        })
        .collect();
    if shared.is_empty() && wrong.is_empty() {
        return None;
    }
    let mut said = shared;
    said.extend(wrong);
    Some(format!(
        "{}: nothing between nodes was tested (inconclusive, not a pass)",
        said.join("; ")
    ))
}

/// Every pod exited, or one failed and the rest were stopped: which exit explains it.
fn exited(
    pods: &[PodView],
    logs: &BTreeMap<usize, String>,
    record: &Option<Result<RunRecord, String>>,
) -> (&'static str, String) {
    let failed: Vec<&PodView> = pods
        .iter()
        .filter(|p| p.exit_code().is_some_and(|c| c != 0))
        .collect();
    // The pod that failed first on its own, not one stopped because its peer had failed.
    let culprit = failed
        .iter()
        .find(|p| is_oom(p) || !STOPPED.contains(&p.exit_code().unwrap_or(0)))
        .or(failed.first());
    let Some(&pod) = culprit else {
        return match record {
            Some(Ok(_)) => (PASS, String::new()),
            Some(Err(e)) => (ERROR, format!("rank 0 passed but its result is unreadable: {e}")),
            None => (
                ERROR,
                "rank 0 exited 0 without a NETCHECK_RESULT line (is the image's netcheck the same version?)".into(),
            ),
        };
    };
    let code = pod.exit_code().unwrap_or(-1);
    let detail = last_words(pod, logs.get(&pod.index).map(String::as_str));
    let who = pod_label(pod);
    if is_oom(pod) {
        return (
            ERROR,
            format!("{who} was killed for using too much memory (OOMKilled); raise --memory"),
        );
    }
    match code {
        EXIT_CHECK_FAILED => (FAIL, format!("{who} failed the check{detail}")),
        EXIT_TIMEOUT => (TIMEOUT, format!("{who} timed out (exit 124){detail}")),
        EXIT_ENVIRONMENT => (
            FAIL,
            format!("{who} found its GPU, NCCL or libfabric environment missing (exit 3){detail}"),
        ),
        c if STOPPED.contains(&c) => (ERROR, format!("{who} was stopped (exit {c}){detail}")),
        c => (ERROR, format!("{who} exited {c}{detail}")),
    }
}

fn is_oom(pod: &PodView) -> bool {
    matches!(&pod.phase, PodPhase::Exited { reason, .. } if reason == "OOMKilled")
}

/// The most telling line a failed pod left: its last `error:` line, else its termination
/// message's last line, else its last log line that is not NCCL chatter.
fn last_words(pod: &PodView, log: Option<&str>) -> String {
    let log = log.unwrap_or("");
    let error_line = log
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("error:"));
    let termination = match &pod.phase {
        PodPhase::Exited { message, .. } => message.lines().rev().find(|l| !l.trim().is_empty()),
        _ => None,
    };
    let last = log.lines().rev().find(|l| {
        !l.trim().is_empty()
            && !l.contains(" NCCL INFO ")
            && ![RESULT_PREFIX, COUNTERS_PREFIX, FABRIC_PREFIX]
                .iter()
                .any(|p| l.starts_with(p))
    });
    match error_line.or(termination).or(last) {
        Some(line) => format!(": {}", line.trim()),
        None => String::new(),
    }
}

/// The largest bus bandwidth a pair reached at its largest size (any op), in GB/s.
pub fn peak_busbw(pair: &PairResult) -> Option<f64> {
    let largest = pair.rows.iter().map(|r| r.bytes).max()?;
    pair.rows
        .iter()
        .filter(|r| r.bytes == largest)
        .filter_map(|r| r.busbw_gbs)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
}

/// Marks passing pairs of `candidates` as failed when their peak bus bandwidth is below
/// `fraction` of the median of all passing pairs of the same pool (`reference`). Needs three
/// passing pairs to speak of a median. Returns how many were marked.
pub fn mark_slow(
    candidates: &mut [(String, Judged)],
    reference: &[(String, PairResult)],
    fraction: f64,
) -> usize {
    if fraction <= 0.0 {
        return 0;
    }
    let mut marked = 0;
    for (pool, judged) in candidates.iter_mut() {
        if judged.outcome != Outcome::Pass {
            continue;
        }
        let mut peers: Vec<f64> = reference
            .iter()
            .filter(|(p, pair)| p == pool && pair.status == PASS)
            .filter_map(|(_, pair)| peak_busbw(pair))
            .collect();
        if peers.len() < 3 {
            continue;
        }
        peers.sort_by(f64::total_cmp);
        let median = peers[peers.len() / 2];
        let Some(own) = peak_busbw(&judged.pair) else {
            continue;
        };
        if own < fraction * median {
            judged.outcome = Outcome::Fail;
            judged.pair.status = FAIL.into();
            judged.pair.message = Some(format!(
                "slow: peak bus bandwidth {own:.1} GB/s is below {:.0}% of the pool's median {median:.1} GB/s",
                fraction * 100.0
            ));
            marked += 1;
        }
    }
    marked
}

/// What the merged record needs besides the pairs.
pub struct RunSummary<'a> {
    pub started_at: String,
    pub status: RunStatus,
    pub label: String,
    pub nodes: &'a [NodeInfo],
    pub verdicts: &'a [NodeVerdict],
    /// Nodes preflight left out, with why.
    pub ineligible: &'a [(String, String)],
    /// The environment the pods got (NCCL_DEBUG, NCCL_NET, --env).
    pub environment: BTreeMap<String, String>,
    pub errors: Vec<String>,
}

/// One RunRecord for the whole run: every pair (with its rows and rank 0's analysis), every
/// row tagged with its pair, a verdict per node.
pub fn merge(summary: RunSummary<'_>, judged: &[Judged]) -> RunRecord {
    let mut record = RunRecord::new("launch");
    record.started_at = Some(summary.started_at);
    record.finished_at = Some(crate::results::now_rfc3339());
    record.status = summary.status;
    record.label = Some(summary.label);
    record.environment = summary.environment;
    let images: BTreeMap<&str, &PodImage> = judged
        .iter()
        .flat_map(|j| j.images.iter().map(|(n, i)| (n.as_str(), i)))
        .collect();
    record.hosts = summary
        .nodes
        .iter()
        .map(|n| HostInfo {
            hostname: n.name.clone(),
            node: Some(n.name.clone()),
            instance_type: n.instance_type.clone(),
            image: images.get(n.name.as_str()).map(|i| i.image.clone()),
            image_id: images.get(n.name.as_str()).and_then(|i| i.image_id.clone()),
            ..Default::default()
        })
        .collect();
    // Each node's loaded stack, from the first group record that has it.
    for j in judged {
        let Some(r) = &j.record else { continue };
        for (node, stack) in crate::results::stack::stacks_by_node(r, &j.pair.nodes) {
            if let Some(h) = record.hosts.iter_mut().find(|h| h.hostname == node) {
                h.stack.get_or_insert(stack);
            }
        }
    }
    let first = judged.iter().find_map(|j| j.record.as_ref());
    record.nccl = first.and_then(|r| r.nccl.clone());
    record.config = first.and_then(|r| r.config.clone());
    record.rows = judged.iter().flat_map(|j| j.pair.rows.clone()).collect();
    record.pairs = judged.iter().map(|j| j.pair.clone()).collect();
    record.nodes = summary
        .verdicts
        .iter()
        .map(|v| NodeResult {
            name: v.node.clone(),
            pool: Some(v.pool.clone()),
            verdict: v.verdict.as_str().into(),
            reason: Some(v.reason.clone()),
        })
        .chain(summary.ineligible.iter().map(|(node, why)| NodeResult {
            name: node.clone(),
            pool: None,
            verdict: "ineligible".into(),
            reason: Some(why.clone()),
        }))
        .collect();
    let counters: serde_json::Map<String, serde_json::Value> = judged
        .iter()
        .flat_map(|j| j.counters.iter().map(|(n, d)| (n.clone(), d.clone())))
        .collect();
    if !counters.is_empty() {
        record.counters = Some(serde_json::json!({ "nodes": counters }));
    }
    let fabric: serde_json::Map<String, serde_json::Value> = judged
        .iter()
        .flat_map(|j| j.fabric.iter().map(|(n, r)| (n.clone(), r.clone())))
        .collect();
    if !fabric.is_empty() {
        record.fabric = Some(serde_json::json!({ "nodes": fabric }));
    }
    record.errors = summary.errors;
    record.errors.extend(image_finding(judged));
    record
        .errors
        .extend(judged.iter().filter(|j| j.pair.status != PASS).map(|j| {
            format!(
                "{}: {}",
                j.pair.name,
                j.pair.message.clone().unwrap_or_default()
            )
        }));
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::TimeStats;

    fn pod(index: usize, code: i32, reason: &str) -> PodView {
        PodView {
            name: format!("p{index}"),
            index,
            node: Some(format!("node-{index}")),
            phase: PodPhase::Exited {
                code,
                reason: reason.into(),
                message: String::new(),
            },
        }
    }

    fn record_line(busbw: f64) -> String {
        let mut r = RunRecord::new("run");
        r.rows.push(ResultRow {
            op: "all_gather".into(),
            dtype: "float32".into(),
            bytes: 1 << 30,
            count: 1 << 27,
            in_place: false,
            redop: None,
            iters: Some(20),
            time_us: TimeStats {
                mean: 1000.0,
                ..Default::default()
            },
            algbw_gbs: Some(busbw * 2.0),
            busbw_gbs: Some(busbw),
            wrong: Some(0),
            group: None,
        });
        format!(
            "NCCL INFO whatever\n{RESULT_PREFIX}{}\n",
            serde_json::to_string(&r).unwrap()
        )
    }

    fn nodes() -> Vec<String> {
        vec!["node-0".into(), "node-1".into()]
    }

    /// The pair's judgement after both pods exited on their own, no warnings.
    fn exited(pods: &[PodView], logs: &BTreeMap<usize, String>) -> Judged {
        judge(&nodes(), &Finish::Exited, pods, logs, &[])
    }

    /// Both pods of the pair exited 0.
    fn completed() -> [PodView; 2] {
        [pod(0, 0, "Completed"), pod(1, 0, "Completed")]
    }

    #[test]
    fn counter_deltas_of_every_node_are_kept() {
        let delta = r#"{"from":"a","to":"b","seconds":1.0,"ports":[],"total":{"tx_bytes":4096}}"#;
        let logs = BTreeMap::from([
            (0, record_line(20.0)),
            (
                1,
                format!("[rank 1] NCCL INFO x\n{COUNTERS_PREFIX}{delta}\n"),
            ),
        ]);
        let j = exited(&completed(), &logs);
        assert_eq!(j.counters.len(), 1, "rank 0's record carried none");
        assert_eq!(j.counters["node-1"]["total"]["tx_bytes"], 4096);
    }

    #[test]
    fn fabric_reports_of_the_other_nodes_are_kept_and_merged() {
        let report = r#"{"schema":"netcheck.fabric.v1","mode":"remote","verdict":"pass"}"#;
        let logs = BTreeMap::from([
            (0, record_line(20.0)),
            (
                1,
                format!(
                    "netcheck: fabric check (efa): measuring\n{FABRIC_PREFIX}{report}\n[rank 1] NCCL INFO x\n"
                ),
            ),
        ]);
        let j = exited(&completed(), &logs);
        assert_eq!(j.fabric.len(), 1, "rank 0's node measures nothing");
        assert_eq!(j.fabric["node-1"]["verdict"], "pass");

        // A failed pair keeps its fabric report, and the failure message is not the report
        // line (stdout and stderr interleave in a pod's log: the report may come last).
        let failed_logs = BTreeMap::from([
            (0, String::new()),
            (
                1,
                format!(
                    "netcheck: FAIL: fabric check on node 1 (provider efa): payloads came back wrong\n{FABRIC_PREFIX}{report}\n"
                ),
            ),
        ]);
        let on = |mut p: PodView, node: &str| {
            p.node = Some(node.into());
            p
        };
        let failed = judge(
            &["node-2".to_string(), "node-3".to_string()],
            &Finish::Exited,
            &[
                on(pod(0, 143, "Error"), "node-2"),
                on(pod(1, 1, "Error"), "node-3"),
            ],
            &failed_logs,
            &[],
        );
        assert_eq!(failed.fabric["node-3"]["mode"], "remote");
        assert!(
            failed
                .pair
                .message
                .as_ref()
                .unwrap()
                .ends_with("payloads came back wrong"),
            "{:?}",
            failed.pair.message
        );

        let verdicts = [];
        let record = merge(
            RunSummary {
                started_at: "t".into(),
                status: RunStatus::Complete,
                label: "l".into(),
                nodes: &[],
                verdicts: &verdicts,
                ineligible: &[],
                environment: BTreeMap::new(),
                errors: vec![],
            },
            &[j, failed],
        );
        let fabric = record.fabric.expect("merged fabric reports");
        assert_eq!(fabric["nodes"]["node-1"]["verdict"], "pass");
        assert_eq!(fabric["nodes"]["node-3"]["schema"], "netcheck.fabric.v1");
        assert!(fabric["nodes"].get("node-0").is_none());
    }

    #[test]
    fn images_land_in_hosts_and_different_digests_are_a_finding() {
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "netcheck", "image": "train:1"}]},
            "status": {"containerStatuses": [{"name": "netcheck", "image": "docker.io/library/train:1",
                "imageID": "docker.io/library/train@sha256:aaaa", "ready": true, "restartCount": 0}]}
        }))
        .unwrap();
        // The reference as the pod spec names it, the digest as the kubelet reports it.
        let a = pod_image(&pod).unwrap();
        assert_eq!(a.image, "train:1");
        assert_eq!(
            a.image_id.as_deref(),
            Some("docker.io/library/train@sha256:aaaa")
        );
        let b = PodImage {
            image: "train:1".into(),
            image_id: Some("docker.io/library/train@sha256:bbbb".into()),
        };
        let group = |nodes: [&str; 2], images: [&PodImage; 2]| {
            let logs = BTreeMap::from([(0, record_line(20.0))]);
            let names: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
            // Each rank on the node the plan gives it.
            let placed = |i: usize| PodView {
                node: Some(names[i].clone()),
                ..pod_view(i)
            };
            let mut j = judge(&names, &Finish::Exited, &[placed(0), placed(1)], &logs, &[]);
            j.images = names.into_iter().zip(images.into_iter().cloned()).collect();
            j
        };
        let node = |name: &str| NodeInfo {
            name: name.into(),
            instance_type: Some("p5.48xlarge".into()),
            zone: None,
            gpus: 8,
            efa: 32,
            hugepages_2mi_bytes: 0,
            memory_bytes: 0,
            gpus_in_use: None,
            gpu_holders: vec![],
        };
        let nodes = [node("n1"), node("n2"), node("n3"), node("n4")];
        let summary = || RunSummary {
            started_at: "t".into(),
            status: RunStatus::Complete,
            label: "l".into(),
            nodes: &nodes,
            verdicts: &[],
            ineligible: &[],
            environment: BTreeMap::new(),
            errors: vec![],
        };
        let same = [group(["n1", "n2"], [&a, &a]), group(["n3", "n4"], [&a, &a])];
        assert_eq!(image_finding(&same), None);
        let record = merge(summary(), &same);
        assert_eq!(record.hosts[2].image.as_deref(), Some("train:1"));
        assert_eq!(
            record.hosts[2].image_id.as_deref(),
            Some("docker.io/library/train@sha256:aaaa")
        );
        assert!(record.errors.is_empty(), "{:?}", record.errors);

        let mixed = [group(["n1", "n2"], [&a, &a]), group(["n3", "n4"], [&a, &b])];
        let record = merge(summary(), &mixed);
        let finding = record
            .errors
            .iter()
            .find(|e| e.contains("different digests"))
            .expect("a finding");
        assert!(
            finding.contains("train:1: sha256:aaaa on n1, n2, n3; sha256:bbbb on n4"),
            "{finding}"
        );
        assert_eq!(
            record.hosts[3].image_id.as_deref(),
            Some("docker.io/library/train@sha256:bbbb")
        );
        // A pod not pulled yet (no digest) is no evidence of a difference.
        let unpulled = PodImage {
            image: "train:1".into(),
            image_id: None,
        };
        assert_eq!(image_finding(&[group(["n1", "n2"], [&a, &unpulled])]), None);
    }

    fn pod_view(index: usize) -> PodView {
        pod(index, 0, "Completed")
    }

    #[test]
    fn a_clean_exit_with_a_result_passes_and_tags_rows() {
        let logs = BTreeMap::from([(0, record_line(20.0)), (1, String::new())]);
        let j = exited(&completed(), &logs);
        assert_eq!(j.pair.status, PASS);
        assert_eq!(j.outcome, Outcome::Pass);
        assert_eq!(j.pair.rows[0].group.as_deref(), Some("node-0+node-1"));
        assert_eq!(peak_busbw(&j.pair), Some(20.0));
    }

    #[test]
    fn a_pair_without_a_result_is_analysed_from_its_pod_logs() {
        let nccl = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/logs/h200/fakehosts-socket.log"),
        )
        .unwrap();
        let logs = BTreeMap::from([(0, nccl)]);
        let j = exited(&[pod(0, 1, "Error"), pod(1, 1, "Error")], &logs);
        let a = j.pair.analysis.expect("analysed from the pod logs");
        assert_eq!(a.inter_node_transport, crate::logscan::Transport::Socket);
    }

    #[test]
    fn a_clean_exit_without_a_result_is_an_error() {
        let logs = BTreeMap::from([(0, "hello\n".to_string())]);
        let j = exited(&completed(), &logs);
        assert_eq!(j.pair.status, ERROR);
        assert_eq!(j.outcome, Outcome::Inconclusive);
    }

    #[test]
    fn the_first_pod_that_failed_on_its_own_is_blamed() {
        let logs = BTreeMap::from([
            (0, "NCCL INFO x\n".to_string()),
            (
                1,
                "NCCL INFO y\nerror: expected efa, NCCL used socket\n".to_string(),
            ),
        ]);
        let j = exited(&[pod(0, 143, "Error"), pod(1, 1, "Error")], &logs);
        assert_eq!(j.pair.status, FAIL);
        let m = j.pair.message.unwrap();
        assert!(
            m.starts_with("rank 1 (node node-1) failed the check: error: expected efa"),
            "{m}"
        );
    }

    #[test]
    fn oom_and_timeouts_and_missing_environment() {
        let l = BTreeMap::new();
        let oom = judge(
            &nodes(),
            &Finish::Exited,
            &[pod(0, 137, "OOMKilled")],
            &l,
            &[],
        );
        assert_eq!(
            (oom.pair.status.as_str(), oom.outcome),
            (ERROR, Outcome::Inconclusive)
        );
        assert!(oom.pair.message.unwrap().contains("--memory"));
        let hang = judge(&nodes(), &Finish::Exited, &[pod(0, 124, "Error")], &l, &[]);
        assert_eq!(
            (hang.pair.status.as_str(), hang.outcome),
            (TIMEOUT, Outcome::Fail)
        );
        let env = judge(&nodes(), &Finish::Exited, &[pod(1, 3, "Error")], &l, &[]);
        assert_eq!(env.pair.status, FAIL);
        assert!(env.pair.message.unwrap().contains("node-1"));
    }

    #[test]
    fn unschedulable_keeps_the_scheduler_and_event_words() {
        let p = PodView {
            name: "p0".into(),
            index: 0,
            node: None,
            phase: PodPhase::Unscheduled {
                message: "x".into(),
            },
        };
        let finish = Finish::Unschedulable {
            pod: p.clone(),
            message: "0/4 nodes are available: 1 Insufficient vpc.amazonaws.com/efa.".into(),
        };
        let j = judge(
            &nodes(),
            &finish,
            &[p],
            &BTreeMap::new(),
            &["FailedScheduling: 0/4 nodes".into()],
        );
        assert_eq!(j.pair.status, UNSCHEDULABLE);
        assert!(
            j.pair
                .message
                .unwrap()
                .contains("Insufficient vpc.amazonaws.com/efa")
        );
    }

    /// Both ranks ran on one node: whatever they printed, nothing between nodes was tested.
    #[test]
    fn a_pair_that_ran_on_one_node_is_inconclusive_not_a_pass() {
        let logs = BTreeMap::from([(0, record_line(20.0)), (1, String::new())]);
        let mut same = [pod(0, 0, "Completed"), pod(1, 0, "Completed")];
        same[1].node = Some("node-0".into());
        let j = judge(&nodes(), &Finish::Exited, &same, &logs, &[]);
        assert_eq!(j.pair.status, ERROR);
        assert_eq!(j.outcome, Outcome::Inconclusive);
        let m = j.pair.message.unwrap();
        assert!(m.contains("ranks 0 and 1 all ran on node-0"), "{m}");
        assert!(
            m.contains("rank 1 ran on node-0, planned for node-1"),
            "{m}"
        );
        assert_eq!(misplaced(&nodes(), &[pod(0, 0, "x"), pod(1, 0, "x")]), None);
    }

    #[test]
    fn a_peer_that_never_ran_is_inconclusive_with_the_schedulers_words_once() {
        let said = "0/4 nodes are available: 1 Insufficient nvidia.com/gpu.";
        let peer = PodView {
            name: "p1".into(),
            index: 1,
            node: None,
            phase: PodPhase::Unscheduled {
                message: said.into(),
            },
        };
        let failed = pod(0, 124, "Error");
        let logs = BTreeMap::from([(0, "error: rendezvous: 1 of 2 nodes did not join\n".into())]);
        let j = judge(
            &nodes(),
            &Finish::PeerNeverRan {
                peer: peer.clone(),
                failed: failed.clone(),
            },
            &[failed, peer],
            &logs,
            &[format!("FailedScheduling: {said}")],
        );
        assert_eq!(j.pair.status, UNSCHEDULABLE);
        assert_eq!(j.outcome, Outcome::Inconclusive);
        let m = j.pair.message.unwrap();
        assert!(m.contains("was never scheduled: 0/4 nodes"), "{m}");
        assert!(m.contains("rank 0 (node node-0) exited 124"), "{m}");
        assert!(m.contains("neither node is blamed"), "{m}");
        assert_eq!(m.matches("Insufficient nvidia.com/gpu").count(), 1, "{m}");
    }

    #[test]
    fn slow_pairs_are_failed_against_the_pool_median() {
        let pass = |bw: f64| {
            let logs = BTreeMap::from([(0, record_line(bw))]);
            exited(&[pod(0, 0, "Completed")], &logs)
        };
        let reference: Vec<(String, PairResult)> = [20.0, 21.0, 19.0, 5.0]
            .iter()
            .map(|&bw| ("p".to_string(), pass(bw).pair))
            .collect();
        let mut candidates = vec![("p".to_string(), pass(5.0)), ("p".to_string(), pass(19.0))];
        assert_eq!(mark_slow(&mut candidates, &reference, 0.5), 1);
        assert_eq!(candidates[0].1.outcome, Outcome::Fail);
        assert!(
            candidates[0]
                .1
                .pair
                .message
                .as_ref()
                .unwrap()
                .starts_with("slow:")
        );
        assert_eq!(candidates[1].1.outcome, Outcome::Pass);
    }
}

#[cfg(test)]
mod pod_security {
    use super::pod_security_hint;

    #[test]
    fn refusals_by_pod_security_say_which_flag_fixes_them() {
        let ipc = r#"FailedCreate: Error creating: pods "x" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "netcheck" must not include "IPC_LOCK" in securityContext.capabilities.add)"#;
        assert!(pod_security_hint(&[ipc.into()]).ends_with("run with --no-ipc-lock"));
        let host = r#"FailedCreate: Error creating: pods "x" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes (volume "shm"), non-default capabilities (container "netcheck" must not include "IPC_LOCK" in securityContext.capabilities.add)"#;
        let hint = pod_security_hint(&[host.into()]);
        assert!(
            hint.contains("--no-ipc-lock and a memory-backed /dev/shm"),
            "{hint}"
        );
        let restricted = r#"FailedCreate: Error creating: pods "x" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (containers "netcheck-install", "netcheck" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers "netcheck-install", "netcheck" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or containers "netcheck-install", "netcheck" must set securityContext.runAsNonRoot=true), seccompProfile (pod or containers "netcheck-install", "netcheck" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#;
        let hint = pod_security_hint(&[restricted.into()]);
        assert!(hint.ends_with("run with --run-as-non-root (and --run-as-user UID if the image's user is root or a name)"), "{hint}");
        // Other refusals (quota, webhooks) get no Pod Security advice.
        assert_eq!(
            pod_security_hint(&["FailedCreate: exceeded quota: gpu".into()]),
            ""
        );
    }
}
