//! `netcheck analyze --kube`: the transport verdict of a job that is already running, from its
//! pods' logs. Selects the pods (label selector, names, or a workload's name), streams each
//! selected container's log into one `logscan::Analyzer` with the pod name as the source,
//! and hands the cluster's facts (nodes, instance types, zones, EFA and huge-page requests,
//! NCCL/FI env) to `logscan::cluster`.
//!
//! Streaming: at most `concurrency` logs are open at once, each read in 64 KiB pieces into a
//! bounded channel (16 pieces), so memory stays at about `concurrency` MiB whatever the logs'
//! size, and nothing is written to disk. The analysis reads the pods one after another in
//! selection order while the next ones are already streaming; a stream's slot is freed when
//! the analysis has taken its last piece, so the pod being analysed always has one.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::{Container, Node, Pod};
use kube::api::LogParams;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Instant;

use super::client::KubeClient;
use super::nodes::{EFA, GPU, INSTANCE_TYPE_LABEL, ZONE_LABEL, parse_quantity};
use crate::error::{Error, Result};
use crate::logscan::cluster::{self, ClusterAnalysis, FOLLOW_DEADLINE, LogStats, PodFacts};
use crate::logscan::{Analyzer, Finding, Options, Severity};

/// Which pods: the union of a label selector, pod names and a workload's pods.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub selector: Option<String>,
    pub pods: Vec<String>,
    /// `NAME` or `KIND/NAME` (see [`WORKLOAD_LABELS`]).
    pub workload: Option<String>,
}

/// How the logs are read.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// The container to read; default: kubectl's default-container annotation, else the one
    /// requesting GPUs, else the first.
    pub container: Option<String>,
    /// Only lines newer than this.
    pub since: Option<Duration>,
    /// The previous (crashed) instance of the container.
    pub previous: bool,
    /// Wait for pods to start and NCCL to initialise; end at this deadline at the latest.
    pub follow: Option<Duration>,
    /// With `follow`: a pod is done once it printed `Init COMPLETE` and then no NCCL line for
    /// this long (the connection lines of the first collectives come right after init).
    pub settle: Duration,
    /// Logs streamed at once.
    pub concurrency: usize,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            container: None,
            since: None,
            previous: false,
            follow: None,
            settle: Duration::from_secs(5),
            concurrency: 8,
        }
    }
}

/// The labels that name a pod's workload, by the workload's kind: the operators set them on
/// every pod they create.
pub const WORKLOAD_LABELS: &[(&str, &str)] = &[
    ("RayCluster", "ray.io/cluster"),
    ("PyTorchJob", "training.kubeflow.org/job-name"),
    ("MPIJob", "training.kubeflow.org/job-name"),
    ("JobSet", "jobset.sigs.k8s.io/jobset-name"),
    ("LeaderWorkerSet", "leaderworkerset.sigs.k8s.io/name"),
    ("Job", "batch.kubernetes.io/job-name"),
    ("Job", "job-name"),
];

const READ_PIECE: usize = 64 * 1024;

/// Without `--follow`, a log read that delivers nothing for this long is given up (the API
/// server or the kubelet stalled): the pod is reported with what was read, and why it stopped.
const LOG_STALL: Duration = Duration::from_secs(60);

/// One read of a log that is not followed: `Err` with the reason when nothing came for
/// `stall`, or the read failed.
async fn read_unless_stalled(
    reader: &mut (impl futures::AsyncRead + Unpin),
    buf: &mut [u8],
    stall: Duration,
) -> std::result::Result<usize, String> {
    match tokio::time::timeout(stall, reader.read(buf)).await {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(e)) => Err(format!("log broke off: {e}")),
        Err(_) => Err(format!(
            "log stalled: nothing for {} s, the rest is not read",
            stall.as_secs()
        )),
    }
}
const PIECES_IN_FLIGHT: usize = 16;

const ANALYZER_ROLE_HINT: &str = "bind the ClusterRole `netcheck-analyzer` of deploy/rbac.yaml \
     (get/list pods, get pods/log) with a RoleBinding in the job's namespace, and \
     `netcheck-analyzer-nodes` for nodes";

/// The permission errors of `analyze --kube` name its own Role.
fn with_role_hint(e: Error) -> Error {
    match e {
        Error::MissingEnvironment { what, .. } if what.contains("forbidden") => {
            Error::missing(what, ANALYZER_ROLE_HINT)
        }
        other => other,
    }
}

/// Whether `pod` belongs to the workload `spec` (`NAME` or `KIND/NAME`): a workload label
/// or a controller owner reference with that name (a StatefulSet, a RayCluster, an MPIJob).
pub fn in_workload(pod: &Pod, spec: &str) -> bool {
    let (kind, name) = match spec.split_once('/') {
        Some((k, n)) => (Some(k), n),
        None => (None, spec),
    };
    let kind_ok = |k: &str| kind.is_none_or(|want| want.eq_ignore_ascii_case(k));
    let labels = pod.metadata.labels.as_ref();
    let by_label = WORKLOAD_LABELS.iter().any(|(k, label)| {
        kind_ok(k) && labels.and_then(|l| l.get(*label)).map(String::as_str) == Some(name)
    });
    let by_owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.name == name && kind_ok(&o.kind));
    by_label || by_owner
}

/// The selected pods, sorted by name (pods named with `--pod` must exist: exit 2 otherwise).
pub async fn select(client: &KubeClient, selection: &Selection) -> Result<Vec<Pod>> {
    let mut chosen: BTreeMap<String, Pod> = BTreeMap::new();
    let ns = client.namespace().to_string();
    for name in &selection.pods {
        let pod = client.pod(name).await.map_err(with_role_hint)?;
        let pod = pod.ok_or_else(|| Error::Usage {
            message: format!("no pod `{name}` in namespace `{ns}`"),
            hint: Some(format!("list them with `kubectl get pods -n {ns}`")),
        })?;
        chosen.insert(name.clone(), pod);
    }
    if let Some(selector) = &selection.selector {
        let pods = client
            .list_pods(Some(selector))
            .await
            .map_err(with_role_hint)?;
        if pods.is_empty() {
            return Err(Error::Usage {
                message: format!("no pod in namespace `{ns}` matches `{selector}`"),
                hint: Some(format!(
                    "check the labels with `kubectl get pods -n {ns} --show-labels`, or pass -n"
                )),
            });
        }
        for pod in pods {
            chosen.insert(pod.metadata.name.clone().unwrap_or_default(), pod);
        }
    }
    if let Some(workload) = &selection.workload {
        let pods: Vec<Pod> = client
            .list_pods(None)
            .await
            .map_err(with_role_hint)?
            .into_iter()
            .filter(|p| in_workload(p, workload))
            .collect();
        if pods.is_empty() {
            let labels: BTreeSet<&str> = WORKLOAD_LABELS.iter().map(|(_, l)| *l).collect();
            return Err(Error::Usage {
                message: format!(
                    "no pod in namespace `{ns}` belongs to workload `{workload}` (by owner or by the labels {})",
                    labels.into_iter().collect::<Vec<_>>().join(", ")
                ),
                hint: Some("select the pods with -l SELECTOR or --pod NAME instead".into()),
            });
        }
        for pod in pods {
            chosen.insert(pod.metadata.name.clone().unwrap_or_default(), pod);
        }
    }
    Ok(chosen.into_values().collect())
}

/// The container whose log is read: `requested` (it must exist), else kubectl's
/// `kubectl.kubernetes.io/default-container`, else the only one, else the first that requests
/// GPUs, else the first.
pub fn container_of(pod: &Pod, requested: Option<&str>) -> Result<String> {
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let containers: Vec<&Container> = pod
        .spec
        .as_ref()
        .map(|s| s.containers.iter().collect())
        .unwrap_or_default();
    let names = || {
        containers
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(want) = requested {
        if containers.iter().any(|c| c.name == want) {
            return Ok(want.to_string());
        }
        return Err(Error::Usage {
            message: format!(
                "pod `{name}` has no container `{want}` (it has: {})",
                names()
            ),
            hint: Some("pass one of its containers with --container".into()),
        });
    }
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubectl.kubernetes.io/default-container"))
        .filter(|a| containers.iter().any(|c| &c.name == *a));
    if let Some(a) = annotated {
        return Ok(a.clone());
    }
    containers
        .iter()
        .find(|c| resource(c, GPU) > 0)
        .or(containers.first())
        .map(|c| c.name.clone())
        .ok_or_else(|| Error::infra(format!("pod `{name}` has no containers")))
}

/// A container's request for `key` (its limit where no request is given; extended resources
/// such as GPUs and EFA are often written as limits only).
fn resource(c: &Container, key: &str) -> u64 {
    let r = c.resources.as_ref();
    r.and_then(|r| r.requests.as_ref()?.get(key))
        .or_else(|| r.and_then(|r| r.limits.as_ref()?.get(key)))
        .and_then(|q| parse_quantity(&q.0))
        .unwrap_or(0)
}

fn hugepages(c: &Container) -> Option<String> {
    let r = c.resources.as_ref()?;
    let mut found: Vec<String> = [r.requests.as_ref(), r.limits.as_ref()]
        .into_iter()
        .flatten()
        .flat_map(|m| m.iter())
        .filter(|(k, _)| k.starts_with("hugepages-"))
        .map(|(k, v)| format!("{k}={}", v.0))
        .collect();
    found.sort();
    found.dedup_by(|a, b| a.split('=').next() == b.split('=').next());
    (!found.is_empty()).then(|| found.join(","))
}

/// The host name NCCL prints for a pod's processes: the node's with `hostNetwork`, else
/// `spec.hostname` (Indexed Jobs, MPIJob workers), else the pod name, cut at 63 characters
/// as the kubelet cuts it.
pub fn hostname_of(pod: &Pod) -> String {
    let spec = pod.spec.as_ref();
    if spec.and_then(|s| s.host_network).unwrap_or(false)
        && let Some(node) = spec.and_then(|s| s.node_name.clone())
    {
        return node;
    }
    let name = spec
        .and_then(|s| s.hostname.clone())
        .or_else(|| pod.metadata.name.clone())
        .unwrap_or_default();
    if name.len() > 63 {
        name[..63].trim_end_matches(['-', '.']).to_string()
    } else {
        name
    }
}

/// Why a pod has no log to read yet (`None`: its container has started).
fn waiting(pod: &Pod, container: &str, previous: bool) -> Option<String> {
    let status = pod.status.as_ref();
    let unscheduled = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    if let Some(c) = unscheduled {
        let reason = c.reason.clone().unwrap_or_else(|| "not scheduled".into());
        return Some(match &c.message {
            Some(m) => format!("{reason}: {}", first_sentence(m)),
            None => reason,
        });
    }
    if pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_none()
    {
        return Some("not scheduled yet".into());
    }
    let cs = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.name == container);
    let Some(cs) = cs else {
        return Some("container not started".into());
    };
    if previous {
        return None;
    }
    let state = cs.state.as_ref();
    if state.is_some_and(|s| s.running.is_some() || s.terminated.is_some()) {
        return None;
    }
    let w = state.and_then(|s| s.waiting.as_ref());
    // A container waiting to restart (CrashLoopBackOff) still has its last log.
    if cs
        .last_state
        .as_ref()
        .is_some_and(|l| l.terminated.is_some())
    {
        return None;
    }
    Some(
        w.and_then(|w| w.reason.clone())
            .unwrap_or_else(|| "container not started".into()),
    )
}

fn first_sentence(m: &str) -> String {
    let m = m.trim();
    let cut = m.find(". ").map_or(m.len(), |i| i + 1);
    m[..cut].chars().take(160).collect()
}

/// What the cluster knows about one pod (its node from `node`, when it could be read).
pub fn pod_facts(
    pod: &Pod,
    node: Option<&Node>,
    container: &str,
    previous: bool,
    log: Option<LogStats>,
) -> PodFacts {
    let spec = pod.spec.as_ref();
    let c = spec.and_then(|s| s.containers.iter().find(|c| c.name == container));
    let env: BTreeMap<String, String> = c
        .and_then(|c| c.env.as_ref())
        .into_iter()
        .flatten()
        .filter(|e| {
            ["NCCL_", "FI_", "OFI_"]
                .iter()
                .any(|p| e.name.starts_with(p))
        })
        .map(|e| {
            let value = match (&e.value, &e.value_from) {
                (Some(v), _) => v.clone(),
                (None, Some(from)) => {
                    let source = if from.config_map_key_ref.is_some() {
                        "configMap"
                    } else if from.secret_key_ref.is_some() {
                        "secret"
                    } else {
                        "field"
                    };
                    format!("<from {source}>")
                }
                (None, None) => String::new(),
            };
            (e.name.clone(), value)
        })
        .collect();
    let node_label = |key: &str| node.and_then(|n| n.metadata.labels.as_ref()?.get(key).cloned());
    let node_efa = node.map(|n| {
        n.status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref()?.get(EFA))
            .and_then(|q| parse_quantity(&q.0))
            .unwrap_or(0)
    });
    PodFacts {
        pod: pod.metadata.name.clone().unwrap_or_default(),
        hostname: hostname_of(pod),
        node: spec.and_then(|s| s.node_name.clone()),
        instance_type: node_label(INSTANCE_TYPE_LABEL)
            .or_else(|| node_label("beta.kubernetes.io/instance-type")),
        zone: node_label(ZONE_LABEL),
        node_efa,
        phase: pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".into()),
        waiting: if log.is_some() {
            None
        } else {
            waiting(pod, container, previous)
        },
        container: Some(container.to_string()),
        gpus: c.map_or(0, |c| resource(c, GPU)),
        efa: c.map_or(0, |c| resource(c, EFA)),
        hugepages: c.and_then(hugepages),
        env,
        log,
    }
}

/// A piece of a log, or its end.
enum Piece {
    Bytes(Vec<u8>),
    /// The stream ended: how it went, the pod as last seen (with `--follow` it may have
    /// started meanwhile), and the stream's slot, freed once the analysis gets here.
    End {
        stats: Option<LogStats>,
        pod: Box<Pod>,
        _slot: Option<OwnedSemaphorePermit>,
    },
}

/// The analysis' side of a pod's stream: a blocking `Read`.
struct PieceReader {
    rx: mpsc::Receiver<Piece>,
    current: Vec<u8>,
    at: usize,
    end: Option<(Option<LogStats>, Box<Pod>)>,
}

impl Read for PieceReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            if self.end.is_some() {
                return Ok(0);
            }
            match self.rx.blocking_recv() {
                Some(Piece::Bytes(b)) => {
                    self.current = b;
                    self.at = 0;
                }
                Some(Piece::End { stats, pod, .. }) => self.end = Some((stats, pod)),
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.current.len() - self.at);
        out[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Counts what `LogStats` reports, across piece boundaries.
#[derive(Default)]
struct Counter {
    stats: LogStats,
    /// The end of the previous piece, so a marker cut in two is still found.
    carry: Vec<u8>,
}

impl Counter {
    const MARKERS: [&'static [u8]; 2] = [b"NCCL INFO", b"NCCL WARN"];
    const INIT_DONE: &'static [u8] = b"Init COMPLETE";

    /// Returns how many NCCL records the piece held.
    fn piece(&mut self, bytes: &[u8]) -> u64 {
        self.stats.bytes += bytes.len() as u64;
        self.stats.lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        let mut window = std::mem::take(&mut self.carry);
        let old = window.len();
        window.extend_from_slice(bytes);
        // Only markers that end in the new piece: those inside the carry were counted.
        let found: u64 = Self::MARKERS
            .iter()
            .map(|m| {
                memchr::memmem::find_iter(&window, m)
                    .filter(|at| at + m.len() > old)
                    .count() as u64
            })
            .sum();
        if memchr::memmem::find(&window, Self::INIT_DONE).is_some() {
            self.stats.init_complete = true;
        }
        let keep = Self::INIT_DONE.len() - 1;
        self.carry = window[window.len().saturating_sub(keep)..].to_vec();
        self.stats.nccl_lines += found;
        found
    }
}

/// Analyzes the selected pods' logs as one job and adds the cluster's facts.
pub async fn analyze(
    client: &KubeClient,
    pods: Vec<Pod>,
    opts: &LogOptions,
    options: Options,
) -> Result<ClusterAnalysis> {
    let mut pods = pods;
    let gpu_pod = |p: &Pod, c: &str| {
        p.spec
            .as_ref()
            .and_then(|s| s.containers.iter().find(|k| k.name == c))
            .is_some_and(|k| resource(k, GPU) > 0)
    };
    let containers: Vec<String> = pods
        .iter()
        .map(|p| container_of(p, opts.container.as_deref()))
        .collect::<Result<_>>()?;
    // With --follow, pods that request no GPUs (a Ray head, an MPI launcher) run no NCCL of
    // their own: they are read as they are, after the GPU pods, never waited for, so they
    // neither hold a stream slot nor keep the run going until the deadline.
    let mut bystander: Vec<bool> = pods
        .iter()
        .zip(&containers)
        .map(|(p, c)| !gpu_pod(p, c))
        .collect();
    let mut containers = containers;
    if opts.follow.is_some() && bystander.iter().any(|b| *b) && bystander.iter().any(|b| !*b) {
        let mut order: Vec<usize> = (0..pods.len()).collect();
        order.sort_by_key(|&i| bystander[i]);
        pods = reorder(pods, &order);
        containers = reorder(containers, &order);
        bystander = reorder(bystander, &order);
    } else {
        bystander = vec![false; pods.len()];
    }
    let deadline = opts.follow.map(|d| Instant::now() + d);
    let slots = Arc::new(Semaphore::new(opts.concurrency.max(1)));
    let fatal: Arc<Mutex<Option<Error>>> = Arc::default();
    let mut readers = Vec::new();
    let mut senders = Vec::new();
    for pod in &pods {
        let (tx, rx) = mpsc::channel(PIECES_IN_FLIGHT);
        readers.push((
            pod.metadata.name.clone().unwrap_or_default(),
            PieceReader {
                rx,
                current: Vec::new(),
                at: 0,
                end: None,
            },
        ));
        senders.push(tx);
    }
    // Streams open in selection order, each when a slot is free.
    let spawner = {
        let (client, slots, fatal, opts) =
            (client.clone(), slots.clone(), fatal.clone(), opts.clone());
        let jobs: Vec<(Pod, String, mpsc::Sender<Piece>, bool)> = pods
            .into_iter()
            .zip(containers.clone())
            .zip(senders)
            .zip(bystander)
            .map(|(((p, c), tx), b)| (p, c, tx, b))
            .collect();
        tokio::spawn(async move {
            let mut tasks = Vec::new();
            for (pod, container, tx, bystander) in jobs {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    break;
                };
                let (client, fatal, opts) = (client.clone(), fatal.clone(), opts.clone());
                tasks.push(tokio::spawn(async move {
                    let stream = Stream {
                        client: &client,
                        container: &container,
                        opts: &opts,
                        deadline: if bystander { None } else { deadline },
                    };
                    let (stats, pod, error) = stream.run(pod, &tx).await;
                    if let Some(e) = error {
                        fatal.lock().expect("not poisoned").get_or_insert(e);
                    }
                    let _ = tx
                        .send(Piece::End {
                            stats,
                            pod: Box::new(pod),
                            _slot: Some(slot),
                        })
                        .await;
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        })
    };
    let analysis = tokio::task::spawn_blocking(move || {
        let mut analyzer = Analyzer::new(options);
        let mut ends = Vec::new();
        for (name, mut reader) in readers {
            // A PieceReader never fails.
            let _ = analyzer.feed(&mut reader, &name);
            ends.push(reader.end.take());
        }
        (analyzer.finish(), ends)
    });
    let (analysis, ends) = analysis
        .await
        .map_err(|e| Error::infra(format!("the log analysis stopped: {e}")))?;
    let _ = spawner.await;
    if let Some(e) = fatal.lock().expect("not poisoned").take() {
        return Err(with_role_hint(e));
    }
    let pods: Vec<(Pod, Option<LogStats>)> = ends
        .into_iter()
        .map(|e| e.map(|(stats, pod)| (*pod, stats)))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::infra("a log stream ended without a word"))?;
    // Nodes last: with --follow, pods may have been scheduled meanwhile.
    let node_names: BTreeSet<String> = pods
        .iter()
        .filter_map(|(p, _)| p.spec.as_ref()?.node_name.clone())
        .collect();
    let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
    let mut node_trouble = None;
    for name in node_names {
        match client.node(&name).await {
            Ok(Some(n)) => {
                nodes.insert(name, n);
            }
            Ok(None) => {}
            Err(e @ Error::MissingEnvironment { .. }) => {
                node_trouble = Some(e.to_string());
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let facts: Vec<PodFacts> = pods
        .iter()
        .zip(&containers)
        .map(|((pod, stats), c)| {
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_ref())
                .and_then(|n| nodes.get(n));
            pod_facts(pod, node, c, opts.previous, stats.clone())
        })
        .collect();
    let mut result = cluster::apply(analysis, facts);
    if let Some(why) = node_trouble {
        result.analysis.findings.push(Finding {
            id: "nodes-unreadable".into(),
            severity: Severity::Info,
            message: format!("instance types, zones and the nodes' EFA devices are unknown: {why}"),
            evidence: vec![],
            hint: Some(
                "grant the ClusterRole `netcheck-analyzer-nodes` of deploy/rbac.yaml (get nodes)"
                    .into(),
            ),
        });
    }
    Ok(result)
}

/// `items` in the order of the indices in `order` (a permutation).
fn reorder<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut old: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .iter()
        .map(|&i| old[i].take().expect("a permutation"))
        .collect()
}

/// One pod's log stream.
struct Stream<'a> {
    client: &'a KubeClient,
    container: &'a str,
    opts: &'a LogOptions,
    deadline: Option<Instant>,
}

impl Stream<'_> {
    /// Streams the log into `tx`; returns how it went, the pod as last seen, and an error
    /// that ends the whole command (no permission, no API server).
    async fn run(
        &self,
        mut pod: Pod,
        tx: &mpsc::Sender<Piece>,
    ) -> (Option<LogStats>, Pod, Option<Error>) {
        let name = pod.metadata.name.clone().unwrap_or_default();
        // Not started: nothing to read, or with --follow, wait for it.
        while waiting(&pod, self.container, self.opts.previous).is_some() {
            let Some(deadline) = self.deadline else {
                return (None, pod, None);
            };
            if Instant::now() >= deadline {
                return (None, pod, None);
            }
            tokio::time::sleep(Duration::from_secs(1).min(deadline - Instant::now())).await;
            match self.client.pod(&name).await {
                Ok(Some(p)) => pod = p,
                Ok(None) => return (None, pod, None),
                Err(e) => return (None, pod, Some(e)),
            }
        }
        let params = LogParams {
            container: Some(self.container.to_string()),
            follow: self.deadline.is_some(),
            previous: self.opts.previous,
            since_seconds: self.opts.since.map(|d| d.as_secs().max(1) as i64),
            ..Default::default()
        };
        let mut counter = Counter::default();
        let mut reader = match self.client.log_reader(&name, &params).await {
            Ok(r) => r,
            Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => {
                counter.stats.stopped = Some(s.message);
                return (Some(counter.stats), pod, None);
            }
            Err(e) => {
                let what = format!("cannot read the log of pod `{name}`");
                return (None, pod, Some(self.client.describe(&what, e)));
            }
        };
        let mut last_nccl = Instant::now();
        loop {
            let mut buf = vec![0u8; READ_PIECE];
            let read = match self.deadline {
                None => match read_unless_stalled(&mut reader, &mut buf, LOG_STALL).await {
                    Ok(n) => Ok(n),
                    Err(why) => {
                        counter.stats.stopped = Some(why);
                        break;
                    }
                },
                Some(deadline) => {
                    let until = if counter.stats.init_complete {
                        (last_nccl + self.opts.settle).min(deadline)
                    } else {
                        deadline
                    };
                    match tokio::time::timeout_at(until, reader.read(&mut buf)).await {
                        Ok(r) => r,
                        Err(_) => {
                            if Instant::now() >= deadline && !counter.stats.init_complete {
                                counter.stats.stopped = Some(FOLLOW_DEADLINE.into());
                            }
                            break;
                        }
                    }
                }
            };
            match read {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if counter.piece(&buf) > 0 {
                        last_nccl = Instant::now();
                    }
                    if tx.send(Piece::Bytes(buf)).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    counter.stats.stopped = Some(format!("log broke off: {e}"));
                    break;
                }
            }
        }
        (Some(counter.stats), pod, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[tokio::test]
    async fn a_log_that_stalls_is_given_up_with_the_reason() {
        // A stream that never delivers a byte, as a stalled API server or kubelet.
        let mut stalled = futures::TryStreamExt::into_async_read(futures::stream::pending::<
            std::io::Result<Vec<u8>>,
        >());
        let mut buf = [0u8; 16];
        let started = Instant::now();
        let why = read_unless_stalled(&mut stalled, &mut buf, Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(why.starts_with("log stalled"), "{why}");
        assert!(started.elapsed() < Duration::from_secs(5));
        // Bytes and the end come through as they are.
        let mut log = &b"a NCCL INFO x\n"[..];
        let stall = Duration::from_secs(1);
        assert_eq!(read_unless_stalled(&mut log, &mut buf, stall).await, Ok(14));
        assert_eq!(read_unless_stalled(&mut log, &mut buf, stall).await, Ok(0));
    }

    #[test]
    fn markers_cut_between_pieces_are_counted_once() {
        let mut c = Counter::default();
        let text = b"a NCCL INFO x\nb NCCL WARN y\nc - Init COMPLETE\n";
        for piece in text.chunks(5) {
            c.piece(piece);
        }
        assert_eq!(c.stats.nccl_lines, 2);
        assert_eq!(c.stats.lines, 3);
        assert!(c.stats.init_complete);
        assert_eq!(c.stats.bytes, text.len() as u64);
    }

    #[test]
    fn workloads_match_by_label_or_controller_owner() {
        let ray = pod(json!({"metadata": {"name": "w-0", "labels": {"ray.io/cluster": "fsdp"}}}));
        assert!(in_workload(&ray, "fsdp"));
        assert!(in_workload(&ray, "raycluster/fsdp"));
        assert!(!in_workload(&ray, "job/fsdp"));
        assert!(!in_workload(&ray, "other"));
        let sts = pod(json!({"metadata": {"name": "db-0", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "1", "controller": true}]}}));
        assert!(in_workload(&sts, "db") && in_workload(&sts, "StatefulSet/db"));
    }

    #[test]
    fn the_container_read_is_the_named_one_the_default_or_the_gpu_one() {
        let p = pod(json!({"metadata": {"name": "w"}, "spec": {"containers": [
            {"name": "sidecar"},
            {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}));
        assert_eq!(container_of(&p, None).unwrap(), "trainer");
        assert_eq!(container_of(&p, Some("sidecar")).unwrap(), "sidecar");
        let e = container_of(&p, Some("ray-worker")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("sidecar, trainer"), "{e}");
        let mut annotated = p.clone();
        annotated.metadata.annotations = Some(
            [(
                "kubectl.kubernetes.io/default-container".to_string(),
                "sidecar".to_string(),
            )]
            .into(),
        );
        assert_eq!(container_of(&annotated, None).unwrap(), "sidecar");
    }

    #[test]
    fn facts_from_a_pod_and_its_node() {
        let p = pod(json!({
            "metadata": {"name": "job-0-abcde"},
            "spec": {"hostname": "job-0", "nodeName": "n1", "containers": [{"name": "t",
                "env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "PATH", "value": "/bin"},
                        {"name": "FI_PROVIDER", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}],
                "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32",
                    "hugepages-2Mi": "5120Mi"}}}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "t", "image": "i",
                "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}}]}}));
        let n: Node = serde_json::from_value(json!({"metadata": {"name": "n1", "labels": {
            "node.kubernetes.io/instance-type": "p5.48xlarge", "topology.kubernetes.io/zone": "us-east-2a"}},
            "status": {"allocatable": {"vpc.amazonaws.com/efa": "32"}}})).unwrap();
        let f = pod_facts(&p, Some(&n), "t", false, Some(LogStats::default()));
        assert_eq!(f.hostname, "job-0");
        assert_eq!((f.gpus, f.efa, f.node_efa), (8, 32, Some(32)));
        assert_eq!(f.hugepages.as_deref(), Some("hugepages-2Mi=5120Mi"));
        assert_eq!(f.instance_type.as_deref(), Some("p5.48xlarge"));
        assert_eq!(f.env.len(), 2);
        assert_eq!(f.env["FI_PROVIDER"], "<from configMap>");
        assert_eq!(waiting(&p, "t", false), None);
        let pending = pod(
            json!({"metadata": {"name": "w"}, "spec": {"containers": [{"name": "t"}]},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient vpc.amazonaws.com/efa. preemption: none"}]}}),
        );
        assert_eq!(
            waiting(&pending, "t", false).as_deref(),
            Some("Unschedulable: 0/3 nodes are available: 3 Insufficient vpc.amazonaws.com/efa.")
        );
        let host_net = pod(
            json!({"metadata": {"name": "w"}, "spec": {"hostNetwork": true,
            "nodeName": "ip-10-0-1-5.ec2.internal", "containers": [{"name": "t"}]}}),
        );
        assert_eq!(hostname_of(&host_net), "ip-10-0-1-5.ec2.internal");
    }
}
