//! `netcheck analyze --kube` against a real control plane (tests/kube_env.rs: kube-apiserver
//! with RBAC, controller-manager, scheduler, kwok's fake nodes and pods): pods labelled as
//! KubeRay, PyTorchJob, MPIJob, JobSet, LeaderWorkerSet and Job pods are, on fake p5 nodes,
//! their logs served by kwok through the API server's `pods/log` from CRI-format files. The
//! logs are the project's own: the captures of tests/fixtures/logs/h200 (a host's ranks split
//! into pods, the host renamed to the pod, as NCCL prints a pod's host name) and the
//! grammar-written EFA logs of tests/fixtures/logs/grammar. Skipped where the control plane
//! is not built (a failure under `CI=true`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, LogParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::kube_env::{FakeNode, START, TestNs, cluster, cri_log};
use crate::util::fixture;

/// The lines of a captured log that belong to one process or host, as one pod would print
/// them: `key` starts the NCCL prefix (`vm:1066:` for a process, `mv-a:` for a host),
/// wrapper tags in front (`[pod/x/c] `, `0: `) are dropped and `host` becomes `pod_host`.
fn podify(path: &str, key: &str, host: &str, pod_host: &str) -> String {
    let text = std::fs::read_to_string(fixture(path)).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let Some(at) = line.find(key) else { continue };
        let before = &line[..at];
        let wrapper = before.is_empty()
            || (before.starts_with("[pod/") && before.ends_with("] "))
            || before
                .trim_end()
                .trim_end_matches(':')
                .parse::<u32>()
                .is_ok();
        if !wrapper {
            continue;
        }
        out.push_str(pod_host);
        out.push_str(&line[at + host.len()..]);
        out.push('\n');
    }
    assert!(!out.is_empty(), "no line of {path} starts with {key}");
    out
}

/// A pod to create: on `node` (full name) or unschedulable, its log served by kwok.
#[derive(Clone, Default)]
struct PodSpec {
    name: String,
    labels: Vec<(String, String)>,
    node: Option<String>,
    container: String,
    gpus: u32,
    efa: u32,
    hugepages: bool,
    env: Vec<(String, String)>,
    /// `None`: the pod never starts (Pending).
    log: Option<String>,
    previous_log: Option<String>,
    follow: bool,
}

fn pod(name: &str, node: &str, labels: &[(&str, &str)], log: String) -> PodSpec {
    PodSpec {
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        node: Some(node.into()),
        container: "worker".into(),
        gpus: 8,
        efa: 32,
        hugepages: true,
        env: vec![("NCCL_DEBUG".into(), "INFO".into())],
        log: Some(log),
        ..Default::default()
    }
}

impl PodSpec {
    /// No GPU, EFA or hugepages request: a Ray head's, a CPU pod's.
    fn without_gpus(mut self) -> PodSpec {
        self.gpus = 0;
        self.efa = 0;
        self.hugepages = false;
        self
    }
}

/// The grammar-written EFA log of two hosts, two ranks each.
const EFA_2NODE: &str = "logs/grammar/efa-2node.log";

/// Host `train-{i}` of the two-node EFA log, as the pod whose host name is `host` prints it.
fn efa_host_log(i: usize, host: &str) -> String {
    podify(
        EFA_2NODE,
        &format!("train-{i}:"),
        &format!("train-{i}"),
        host,
    )
}

/// A captured one-host log (host `vm`) as the pod whose host name is `host` prints it.
fn renamed(rel: &str, host: &str) -> String {
    std::fs::read_to_string(fixture(rel))
        .unwrap()
        .replace("vm:", &format!("{host}:"))
}

/// The captured two-host Socket run as two pods, one rank (process 1066, 1067) each, without
/// an EFA request.
fn socket_pods(names: [&str; 2], nodes: [&str; 2], labels: &[(&str, &str)]) -> [PodSpec; 2] {
    let log = "logs/h200/fakehosts-socket.log";
    [("vm:1066:", 0), ("vm:1067:", 1)].map(|(key, i)| {
        let mut p = pod(names[i], nodes[i], labels, podify(log, key, "vm", names[i]));
        p.efa = 0;
        p
    })
}

const RAY: &str = "ray.io/cluster";

/// The head pod of the KubeRay cluster `fsdp`: no GPUs, no NCCL lines.
fn fsdp_head(node: &str) -> PodSpec {
    pod(
        "fsdp-head",
        node,
        &[(RAY, "fsdp"), ("ray.io/node-type", "head")],
        "2026-12-01 06:00:00,000\tINFO usage_lib.py: Usage stats collection is enabled.\n\
         Ray runtime started.\n"
            .into(),
    )
    .without_gpus()
}

/// Worker `i` of the KubeRay cluster `fsdp`: host `train-{i}` of the two-node EFA log.
fn fsdp_worker(i: usize, node: &str) -> PodSpec {
    let name = format!("fsdp-worker-{i}");
    let log = efa_host_log(i, &name);
    pod(
        &name,
        node,
        &[(RAY, "fsdp"), ("ray.io/node-type", "worker")],
        log,
    )
}

/// deploy/rbac.yaml, as shipped.
fn rbac_docs() -> Vec<Value> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/rbac.yaml"))
            .unwrap();
    serde_saphyr::from_str_multiple(&text).unwrap()
}

fn logs_api(ns: &TestNs) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "kwok.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "kwok.x-k8s.io/v1alpha1".into(),
        kind: "Logs".into(),
        plural: "logs".into(),
    };
    Api::namespaced_with(ns.client.clone(), &ns.name, &resource)
}

fn log_file(ns: &TestNs, name: &str) -> PathBuf {
    let dir = ns.cluster.root.join("podlogs").join(&ns.name);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Creates the pods; those with a log are started by kwok once the log is in place.
async fn make_pods(ns: &TestNs, specs: &[PodSpec]) {
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    for s in specs {
        let mut limits = serde_json::Map::new();
        if s.gpus > 0 {
            limits.insert("nvidia.com/gpu".into(), json!(s.gpus.to_string()));
        }
        if s.efa > 0 {
            limits.insert("vpc.amazonaws.com/efa".into(), json!(s.efa.to_string()));
        }
        if s.hugepages {
            limits.insert("hugepages-2Mi".into(), json!("5120Mi"));
            limits.insert("memory".into(), json!("32000Mi"));
        }
        let env: Vec<Value> = s
            .env
            .iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect();
        let mut spec = json!({
            "containers": [{"name": s.container, "image": "registry.example.com/train:1",
                            "env": env, "resources": {"limits": limits, "requests": limits}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        });
        match &s.node {
            Some(node) => spec["nodeName"] = json!(node),
            // Nothing carries this label: the scheduler reports the pod Unschedulable.
            None => spec["nodeSelector"] = json!({"netcheck-test/nowhere": "true"}),
        }
        let labels: serde_json::Map<String, Value> = s
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let object: Pod = serde_json::from_value(json!({
            "metadata": {"name": s.name, "labels": labels}, "spec": spec}))
        .unwrap();
        pods.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create pod {}: {e}", s.name));
        if let Some(log) = &s.log {
            start(
                ns,
                &s.name,
                &s.container,
                log,
                s.previous_log.as_deref(),
                s.follow,
            )
            .await;
        }
    }
    // Until kwok runs every started pod (and the scheduler has judged the others).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut ready = true;
        for s in specs {
            let p = pods.get(&s.name).await.unwrap();
            let status = p.status.unwrap_or_default();
            ready &= match &s.log {
                Some(_) => status.phase.as_deref() == Some("Running"),
                None => status
                    .conditions
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "PodScheduled" && c.status == "False"),
            };
        }
        if ready {
            return;
        }
        if Instant::now() >= deadline {
            let all: Vec<Value> = pods
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|p| {
                    json!({"name": p.metadata.name, "annotations": p.metadata.annotations,
                    "node": p.spec.and_then(|s| s.node_name), "status": p.status})
                })
                .collect();
            panic!(
                "pods not running after 30s: {}",
                serde_json::to_string_pretty(&all).unwrap()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Serves `log` (and `previous`) as the container's log through kwok and reports the pod
/// running, as a kubelet would.
async fn start(
    ns: &TestNs,
    name: &str,
    container: &str,
    log: &str,
    previous: Option<&str>,
    follow: bool,
) {
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let file = log_file(ns, &format!("{name}.log"));
    std::fs::write(&file, cri_log(log)).unwrap();
    let mut entry = json!({"containers": [container], "logsFile": file.display().to_string(),
                           "follow": follow});
    if let Some(previous) = previous {
        let prev = log_file(ns, &format!("{name}.previous.log"));
        std::fs::write(&prev, cri_log(previous)).unwrap();
        entry["previousLogsFile"] = json!(prev.display().to_string());
    }
    let logs: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
        "metadata": {"name": name, "namespace": ns.name},
        "spec": {"logs": [entry]}}))
    .unwrap();
    logs_api(ns)
        .create(&PostParams::default(), &logs)
        .await
        .unwrap_or_else(|e| panic!("Logs for {name}: {e}"));
    let start = json!({"metadata": {"annotations": {START: "true"}}});
    pods.patch(name, &PatchParams::default(), &Patch::Merge(start))
        .await
        .unwrap();
    let now = "2026-12-01T06:00:00Z";
    let mut status = json!({"name": container, "image": "registry.example.com/train:1",
        "imageID": "", "ready": true, "started": true, "restartCount": 0,
        "state": {"running": {"startedAt": now}}});
    if previous.is_some() {
        status["restartCount"] = json!(1);
        status["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error",
            "startedAt": now, "finishedAt": now}});
    }
    let status = json!({"status": {"phase": "Running", "hostIP": "127.0.0.1",
        "podIP": "10.244.0.9", "startTime": now, "containerStatuses": [status],
        "conditions": [{"type": "Ready", "status": "True"},
                       {"type": "PodScheduled", "status": "True"}]}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap_or_else(|e| panic!("status of pod {name}: {e}"));
    // kwok learns of the new `Logs` object through its watch, which lags on a busy machine:
    // until then the API server answers "no logs found". Wait until the log is served (and
    // the previous one), as it would be from a kubelet, so no test races kwok.
    let params = |previous| LogParams {
        container: Some(container.to_string()),
        previous,
        ..LogParams::default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    for want_previous in std::iter::once(false).chain(previous.map(|_| true)) {
        while let Err(e) = pods.logs(name, &params(want_previous)).await {
            assert!(
                Instant::now() < deadline,
                "kwok never served the log of {name}/{container}: {e}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// What one `netcheck analyze --kube` run printed.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Ran {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}\n{self}"))
    }
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?} after {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.elapsed, self.stdout, self.stderr
        )
    }
}

async fn analyze(kubeconfig: &Path, args: &[&str]) -> Ran {
    let t0 = Instant::now();
    let out = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("netcheck"))
        .args(["analyze", "--kube", "--kubeconfig"])
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .expect("run netcheck analyze");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: t0.elapsed(),
    }
}

/// `netcheck analyze --kube -n <the namespace> <args>`, the arguments split at white space,
/// with the cluster's admin kubeconfig.
async fn analyze_in(ns: &TestNs, args: &str) -> Ran {
    let mut all = vec!["-n", ns.name.as_str()];
    all.extend(args.split_whitespace());
    analyze(&ns.cluster.kubeconfig, &all).await
}

fn finding<'a>(json: &'a Value, id: &str) -> Option<&'a Value> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
}

fn pod_of<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == name)
        .unwrap_or_else(|| panic!("no pod {name} in {json}"))
}

fn p5(name: &str) -> FakeNode {
    FakeNode::p5(name)
}

/// A KubeRay cluster on EFA: two worker pods on two p5 nodes (the grammar-written EFA log of
/// two pods, two ranks each) and a head pod without GPUs or NCCL lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ray_cluster_on_efa_passes_with_expect_efa_and_nodes_from_the_cluster() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akefa").await;
    let nodes = ns.add_nodes(&[p5("a"), p5("b")]).await;
    make_pods(
        &ns,
        &[
            fsdp_head(&nodes[0]),
            fsdp_worker(0, &nodes[0]),
            fsdp_worker(1, &nodes[1]),
        ],
    )
    .await;

    let ran = analyze_in(&ns, "-l ray.io/cluster=fsdp --expect efa --format json").await;
    assert_eq!(ran.code, Some(0), "{ran}");
    let j = ran.json();
    assert_eq!(j["verdict"], "pass", "{ran}");
    assert_eq!(j["inter_node_transport"], "efa");
    assert_eq!(j["nodes"], 2);
    assert_eq!(j["cluster_nodes"], json!([nodes[0], nodes[1]]));
    let w1 = pod_of(&j, "fsdp-worker-1");
    assert_eq!(w1["node"], nodes[1].as_str());
    assert_eq!(w1["instance_type"], "p5.48xlarge");
    assert_eq!(w1["zone"], "us-east-2a");
    assert_eq!(
        (w1["efa"].as_u64(), w1["node_efa"].as_u64()),
        (Some(32), Some(32))
    );
    // The API server writes quantities canonically (5120Mi is 5Gi).
    assert_eq!(w1["hugepages"], "hugepages-2Mi=5Gi");
    assert_eq!(w1["env"]["NCCL_DEBUG"], "INFO");
    assert_eq!(w1["ranks"], json!([2, 3]));
    assert_eq!(w1["inter_node"], json!(["efa"]));
    assert_eq!(w1["status"], "analyzed");
    // The head runs no NCCL: listed, as information, not as a pass.
    assert_eq!(pod_of(&j, "fsdp-head")["status"], "no-nccl-lines");
    let silent = finding(&j, "pods-not-judged").expect("the head is listed");
    assert_eq!(silent["severity"], "info");

    // The same by workload name, as text: pods and nodes in the table and the evidence.
    let ran = analyze_in(&ns, "--workload raycluster/fsdp --expect efa").await;
    assert_eq!(ran.code, Some(0), "{ran}");
    assert!(ran.stdout.starts_with("verdict: PASS"), "{ran}");
    assert!(ran.stdout.contains("pods: 3 on 2 node(s)"), "{ran}");
    let row = ran
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("fsdp-worker-0"))
        .unwrap_or_else(|| panic!("{ran}"));
    assert!(
        row.contains(&nodes[0]) && row.contains("p5.48xlarge") && row.contains("0-1"),
        "{row}"
    );
}

/// PyTorchJob pods on EFA nodes that requested no EFA: NCCL used sockets (the captured
/// two-host Socket run, one rank per pod), and the finding names the missing request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_in_pods_without_an_efa_request_fails_and_names_the_request() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("aksock").await;
    let nodes = ns.add_nodes(&[p5("a"), p5("b")]).await;
    let pods = socket_pods(
        ["qwen-master-0", "qwen-worker-0"],
        [&nodes[0], &nodes[1]],
        &[("training.kubeflow.org/job-name", "qwen")],
    )
    .map(|mut p| {
        p.hugepages = false;
        p.container = "pytorch".into();
        p
    });
    make_pods(&ns, &pods).await;

    let ran = analyze_in(&ns, "--workload qwen --format json").await;
    assert_eq!(ran.code, Some(1), "{ran}");
    let j = ran.json();
    assert_eq!(j["inter_node_transport"], "socket", "{ran}");
    assert_eq!(j["socket_fallback"], true);
    let f = finding(&j, "efa-not-requested").unwrap_or_else(|| panic!("{ran}"));
    assert_eq!(f["severity"], "error");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("qwen-master-0 (node {})", nodes[0])),
        "{message}"
    );
    assert!(message.contains("has 32 allocatable"), "{message}");
    assert!(
        f["hint"]
            .as_str()
            .unwrap()
            .contains("vpc.amazonaws.com/efa: 32")
    );
    // The evidence is the pod's own log line.
    let e = &f["evidence"][0];
    assert!(e["source"].as_str().unwrap().starts_with("qwen-"), "{f}");
    assert!(e["text"].as_str().unwrap().contains("Socket"), "{f}");

    // --expect efa: fails too; markdown names the pods' nodes in the evidence.
    let ran = analyze_in(
        &ns,
        "--pod qwen-master-0 --pod qwen-worker-0 --expect efa --format markdown",
    )
    .await;
    assert_eq!(ran.code, Some(1), "{ran}");
    assert!(ran.stdout.contains("`efa-not-requested`"), "{ran}");
    assert!(
        ran.stdout.contains(&format!("qwen-master-0@{}:", nodes[0])),
        "{ran}"
    );
    assert!(ran.stdout.contains("#### Pods (2 on 2 node(s))"), "{ran}");
}

/// MPIJob workers sharing one node (a node without EFA): one node, not two, and a warning
/// that NCCL sent their traffic through the network stack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pods_on_one_node_are_one_node() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akshare").await;
    let mut g6 = p5("a");
    g6.instance_type = "g6.12xlarge".into();
    g6.efa = 0;
    let nodes = ns.add_nodes(&[g6]).await;
    let label = [
        ("training.kubeflow.org/job-name", "bert"),
        ("training.kubeflow.org/job-role", "worker"),
    ];
    let pods = socket_pods(
        ["bert-worker-0", "bert-worker-1"],
        [&nodes[0], &nodes[0]],
        &label,
    )
    .map(|mut p| {
        p.gpus = 1;
        p
    });
    make_pods(&ns, &pods).await;
    let ran = analyze_in(&ns, "-l training.kubeflow.org/job-name=bert --format json").await;
    let j = ran.json();
    assert_eq!(j["nodes"], 1, "{ran}");
    let f = finding(&j, "pods-share-node").unwrap_or_else(|| panic!("{ran}"));
    assert_eq!(f["severity"], "warn");
    assert!(f["message"].as_str().unwrap().contains(&nodes[0]), "{f}");
    // No EFA on the node: sockets were the only choice, no missing request.
    assert!(finding(&j, "efa-not-requested").is_none(), "{ran}");
    assert_ne!(j["verdict"], "pass", "{ran}");
    assert_eq!(ran.code, Some(0), "{ran}");
}

/// JobSet pods: one initialised EFA, on the other node the OFI plugin failed and NCCL fell
/// back to sockets (the grammar-written log, one node per pod).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_pod_on_efa_and_another_on_sockets_fails_naming_both() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akmixed").await;
    let nodes = ns.add_nodes(&[p5("a"), p5("b")]).await;
    let label = [("jobset.sigs.k8s.io/jobset-name", "llm")];
    let log = "logs/grammar/efa-some-ranks-socket.log";
    make_pods(
        &ns,
        &[
            pod(
                "llm-w-0-0",
                &nodes[0],
                &label,
                podify(log, "p5-a:", "p5-a", "llm-w-0-0"),
            ),
            pod(
                "llm-w-0-1",
                &nodes[1],
                &label,
                podify(log, "p5-b:", "p5-b", "llm-w-0-1"),
            ),
        ],
    )
    .await;
    let ran = analyze_in(&ns, "--workload llm --expect efa --format json").await;
    assert_eq!(ran.code, Some(1), "{ran}");
    let j = ran.json();
    let f = finding(&j, "mixed-transports").unwrap_or_else(|| panic!("{ran}"));
    assert_eq!(f["severity"], "error");
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains(&format!("efa in llm-w-0-0 (node {})", nodes[0])),
        "{m}"
    );
    assert!(
        m.contains(&format!("socket in llm-w-0-1 (node {})", nodes[1])),
        "{m}"
    );
    // It requested EFA: the log's own socket-fallback, not a missing request.
    assert!(finding(&j, "efa-not-requested").is_none(), "{ran}");
}

/// LeaderWorkerSet pods on two NCCL builds (the captured single-node runs with the wheel's
/// 2.28.9 and the system's 2.28.3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_on_different_nccl_versions_are_named() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akver").await;
    let nodes = ns.add_nodes(&[p5("a"), p5("b")]).await;
    let label = [("leaderworkerset.sigs.k8s.io/name", "vllm")];
    let wheel = renamed("logs/h200/nvlink.log", "vllm-0");
    let system = renamed("logs/h200/system-nccl.log", "vllm-0-1");
    make_pods(
        &ns,
        &[
            pod("vllm-0", &nodes[0], &label, wheel),
            pod("vllm-0-1", &nodes[1], &label, system),
        ],
    )
    .await;
    let ran = analyze_in(&ns, "--workload vllm --format json").await;
    let j = ran.json();
    let f = finding(&j, "mixed-nccl-versions").unwrap_or_else(|| panic!("{ran}"));
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains(&format!("2.28.3 in vllm-0-1 (node {})", nodes[1])),
        "{m}"
    );
    assert!(
        m.contains(&format!("2.28.9 in vllm-0 (node {})", nodes[0])),
        "{m}"
    );
    assert_eq!(pod_of(&j, "vllm-0")["nccl_versions"], json!(["2.28.9"]));
    assert_eq!(ran.code, Some(0), "{ran}");
}

/// A Job with a running pod (the captured one-rank run), a Pending one and one whose log
/// has no NCCL lines: the last two are listed, never passed; only Pending pods: exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_pods_and_pods_without_nccl_lines_are_listed_not_passed() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akpend").await;
    let nodes = ns.add_nodes(&[p5("a"), p5("b")]).await;
    let label = [("batch.kubernetes.io/job-name", "smoke")];
    let one = renamed("logs/h200/one-rank.log", "smoke-0");
    let mut pending = pod("smoke-2", &nodes[0], &label, String::new());
    pending.node = None;
    pending.log = None;
    let mut quiet = pod(
        "smoke-1",
        &nodes[1],
        &label,
        "loading checkpoint shard 1/4\n".into(),
    );
    quiet.env.clear();
    make_pods(
        &ns,
        &[pod("smoke-0", &nodes[0], &label, one), quiet, pending],
    )
    .await;
    let ran = analyze_in(&ns, "--workload job/smoke --format json").await;
    // Untested is not passed (issue 24 item 6): a WARN with GPU pods not judged is exit 4,
    // said on stderr, unless --allow-untested.
    assert_eq!(ran.code, Some(4), "{ran}");
    assert!(
        ran.stderr.contains(
            "untested: 2 GPU pod(s) not judged: smoke-1 (no NCCL lines), smoke-2 (pending)"
        ),
        "{ran}"
    );
    let j = ran.json();
    assert_eq!(j["verdict"], "warn", "{ran}");
    let f = finding(&j, "pods-not-judged").unwrap_or_else(|| panic!("{ran}"));
    let m = f["message"].as_str().unwrap();
    assert!(m.contains("2 of 3"), "{m}");
    assert!(m.contains("pending: smoke-2 (Unschedulable"), "{m}");
    assert!(m.contains("no NCCL lines: smoke-1"), "{m}");
    assert!(
        f["hint"].as_str().unwrap().contains("NCCL_DEBUG=INFO"),
        "{f}"
    );
    assert_eq!(pod_of(&j, "smoke-2")["status"], "pending");
    assert!(pod_of(&j, "smoke-2")["log"].is_null());
    let accepted = analyze_in(&ns, "--workload job/smoke --allow-untested").await;
    assert_eq!(accepted.code, Some(0), "{accepted}");
    assert!(
        accepted.stderr.contains("accepted with --allow-untested"),
        "{accepted}"
    );

    // Only the pending pod: no NCCL line anywhere, nothing to judge (exit 2, as for an
    // empty log), with the pod named.
    let ran = analyze_in(&ns, "--pod smoke-2").await;
    assert_eq!(ran.code, Some(2), "{ran}");
    assert!(
        ran.stdout.contains("none of the 1 selected pod(s)"),
        "{ran}"
    );
}

/// `--container`, `--previous` (the crashed instance's log) and `--since`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_previous_and_since_reach_the_api_server() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akprev").await;
    let nodes = ns.add_nodes(&[p5("a")]).await;
    let mut p = pod(
        "train-0",
        &nodes[0],
        &[("app", "train")],
        "restarted, waiting for peers\n".into(),
    );
    p.container = "ray-worker".into();
    p.previous_log = Some(renamed("logs/h200/fakehosts-netforced-ib.log", "train-0"));
    make_pods(&ns, &[p]).await;
    let base = "--pod train-0 --format json";
    let now = analyze_in(&ns, base).await;
    assert_eq!(
        pod_of(&now.json(), "train-0")["status"],
        "no-nccl-lines",
        "{now}"
    );
    let before = analyze_in(&ns, &format!("{base} --previous --container ray-worker")).await;
    let j = before.json();
    assert_eq!(pod_of(&j, "train-0")["status"], "analyzed", "{before}");
    assert_eq!(j["verdict"], "fail", "{before}");
    assert_eq!(before.code, Some(1));
    // The log's lines are stamped 06:00 today (cri_log): `--since` reaches kwok, which keeps
    // the lines of the last ten years and none of the last minute.
    let ran = analyze_in(&ns, &format!("{base} --since 1m")).await;
    assert_eq!(pod_of(&ran.json(), "train-0")["log"]["bytes"], 0, "{ran}");
    let ran = analyze_in(&ns, &format!("{base} --since 87600h")).await;
    assert!(
        pod_of(&ran.json(), "train-0")["log"]["bytes"]
            .as_u64()
            .unwrap()
            > 0,
        "{ran}"
    );
    let ran = analyze_in(&ns, &format!("{base} --container nope")).await;
    assert_eq!(ran.code, Some(2), "{ran}");
    assert!(
        ran.stderr
            .contains("has no container `nope` (it has: ray-worker)"),
        "{ran}"
    );
}

/// `--follow`: a pod still initialising; the verdict comes once NCCL's init completed and
/// its lines stopped, well before the deadline; a pod that never completes init is listed
/// at the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_gives_the_verdict_once_init_is_done() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akfollow").await;
    let nodes = ns.add_nodes(&[p5("a"), p5("b")]).await;
    let log = renamed("logs/h200/nvlink.log", "late-0");
    let lines: Vec<&str> = log.lines().collect();
    let cut = lines
        .iter()
        .position(|l| l.contains("Init COMPLETE"))
        .unwrap();
    let mut p = pod(
        "late-0",
        &nodes[0],
        &[("app", "late")],
        lines[..cut].join("\n") + "\n",
    );
    p.follow = true;
    let hang = renamed("logs/h200/hang-init.log", "stuck-0");
    let mut stuck = pod("stuck-0", &nodes[1], &[("app", "stuck")], hang);
    stuck.follow = true;
    make_pods(&ns, &[p, stuck]).await;
    let file = log_file(&ns, "late-0.log");
    let rest: String = lines[cut..].iter().map(|l| format!("{l}\n")).collect();
    let appender = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
        f.write_all(cri_log(&rest).as_bytes()).unwrap();
    });
    let ran = analyze_in(
        &ns,
        "-l app=late --follow --settle 1s --timeout 60s --format json",
    )
    .await;
    appender.await.unwrap();
    let j = ran.json();
    assert_eq!(pod_of(&j, "late-0")["status"], "analyzed", "{ran}");
    assert_eq!(pod_of(&j, "late-0")["log"]["init_complete"], true, "{ran}");
    assert_eq!(j["inter_node_transport"], "none", "{ran}");
    assert!(ran.elapsed < Duration::from_secs(30), "{ran}");
    assert_eq!(ran.code, Some(0), "{ran}");

    let ran = analyze_in(&ns, "-l app=stuck --follow --timeout 3s --format json").await;
    let j = ran.json();
    assert_eq!(pod_of(&j, "stuck-0")["status"], "in-init", "{ran}");
    assert_eq!(ran.code, Some(1), "{ran}");
    assert!(ran.elapsed < Duration::from_secs(20), "{ran}");
}

/// The Role and ClusterRole of deploy/rbac.yaml are enough, and nothing less: a service
/// account without them is told which Role to grant (exit 3); with the Role but not the
/// node ClusterRole the analysis still runs, without instance types.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_come_from_the_analyzer_role() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akrbac").await;
    let nodes = ns.add_nodes(&[p5("a")]).await;
    let one = renamed("logs/h200/one-rank.log", "solo-0");
    make_pods(&ns, &[pod("solo-0", &nodes[0], &[("app", "solo")], one)]).await;
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "reader", "namespace": ns.name}});
    cluster.apply(&account.to_string());
    let kubeconfig = ns.token_kubeconfig("reader").await;
    let args = ["-n", ns.name.as_str(), "-l", "app=solo", "--format", "json"];
    let denied = analyze(&kubeconfig, &args).await;
    assert_eq!(denied.code, Some(3), "{denied}");
    assert!(denied.stderr.contains("forbidden"), "{denied}");
    assert!(denied.stderr.contains("netcheck-analyzer"), "{denied}");

    // The ClusterRole from deploy/rbac.yaml as shipped, bound by a RoleBinding in the test's
    // namespace (the job's), as its hint says: a Role of namespace `netcheck` could not be.
    let role = rbac_docs()
        .into_iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "netcheck-analyzer")
        .unwrap();
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "netcheck-analyzer", "namespace": ns.name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "netcheck-analyzer"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns.name}]});
    for doc in [role, binding] {
        cluster.apply(&doc.to_string());
    }
    // RBAC takes effect at once in the API server's authorizer cache, give it a moment.
    let mut ran = analyze(&kubeconfig, &args).await;
    for _ in 0..20 {
        if ran.code != Some(3) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        ran = analyze(&kubeconfig, &args).await;
    }
    assert_eq!(ran.code, Some(0), "{ran}");
    let j = ran.json();
    assert_eq!(pod_of(&j, "solo-0")["node"], nodes[0].as_str());
    assert!(pod_of(&j, "solo-0")["instance_type"].is_null());
    let f = finding(&j, "nodes-unreadable").unwrap_or_else(|| panic!("{ran}"));
    assert!(
        f["hint"]
            .as_str()
            .unwrap()
            .contains("netcheck-analyzer-nodes")
    );
}

/// Bad selections are exit 2 with what to do; no kubeconfig at all is exit 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_selections_and_missing_configuration() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akbad").await;
    let none = analyze_in(&ns, "-l app=nothing").await;
    assert_eq!(none.code, Some(2), "{none}");
    assert!(none.stderr.contains("no pod in namespace"), "{none}");
    let missing = analyze_in(&ns, "--pod ghost").await;
    assert_eq!(missing.code, Some(2), "{missing}");
    assert!(missing.stderr.contains("no pod `ghost`"), "{missing}");
    let workload = analyze_in(&ns, "--workload ghost").await;
    assert_eq!(workload.code, Some(2), "{workload}");
    let dir = tempfile::tempdir().unwrap();
    let nowhere = analyze(&dir.path().join("none"), &["-l", "a=b"]).await;
    assert_eq!(nowhere.code, Some(3), "{nowhere}");
    // An API server that does not answer: infrastructure, exit 4, with what to check.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = std::fs::read_to_string(&cluster.kubeconfig).unwrap();
    let down = dir.path().join("down.kubeconfig");
    std::fs::write(
        &down,
        text.replace(&cluster.server, &format!("https://127.0.0.1:{port}")),
    )
    .unwrap();
    let ran = analyze(&down, &["-n", &ns.name, "-l", "a=b"]).await;
    assert_eq!(ran.code, Some(4), "{ran}");
    assert!(ran.stderr.contains("kubectl get nodes"), "{ran}");
}

/// The analyzer's RBAC grants exactly get/list pods and get pods/log in the namespace, and
/// get nodes cluster-wide.
#[test]
fn rbac_analyzer_role_grants_read_only_access() {
    let docs = rbac_docs();
    let rules = |kind: &str, name: &str| -> Vec<(String, String)> {
        let doc = docs
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"));
        let mut out = vec![];
        for rule in doc["rules"].as_array().unwrap() {
            assert_eq!(rule["apiGroups"], json!([""]));
            for r in rule["resources"].as_array().unwrap() {
                for v in rule["verbs"].as_array().unwrap() {
                    out.push((r.as_str().unwrap().into(), v.as_str().unwrap().into()));
                }
            }
        }
        out.sort();
        out
    };
    let s = |r: &str, v: &str| (r.to_string(), v.to_string());
    assert_eq!(
        rules("ClusterRole", "netcheck-analyzer"),
        vec![s("pods", "get"), s("pods", "list"), s("pods/log", "get")]
    );
    assert_eq!(
        rules("ClusterRole", "netcheck-analyzer-nodes"),
        vec![s("nodes", "get")]
    );
}

/// Pods made by the real controllers: a StatefulSet's (owned by it, no workload label) and an
/// Indexed Job's (`spec.hostname` is `<job>-<index>`, which is what NCCL prints, not the pod
/// name), placed by the real scheduler one per node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_and_indexed_job_pods_by_owner_and_hostname() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akctl").await;
    let nodes = ns.add_nodes(&[p5("a"), p5("b"), p5("c"), p5("d")]).await;
    let template = |app: &str| {
        json!({"metadata": {"labels": {"app": app}}, "spec": {
            "nodeSelector": {"netcheck-test/ns": ns.name},
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "worker", "image": "registry.example.com/train:1",
                "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}}]}})
    };
    let mut job_template = template("idx");
    job_template["spec"]["restartPolicy"] = json!("Never");
    cluster.apply(&json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "sts", "namespace": ns.name},
         "spec": {"replicas": 2, "podManagementPolicy": "Parallel", "serviceName": "sts",
                  "selector": {"matchLabels": {"app": "sts"}}, "template": template("sts")}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "idx", "namespace": ns.name},
         "spec": {"completions": 2, "parallelism": 2, "completionMode": "Indexed",
                  "template": job_template}},
    ]}).to_string());
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let deadline = Instant::now() + Duration::from_secs(60);
    let placed = loop {
        let list = pods.list(&Default::default()).await.unwrap().items;
        let bound: Vec<Pod> = list
            .into_iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
            .collect();
        if bound.len() == 4 {
            break bound;
        }
        assert!(
            Instant::now() < deadline,
            "controllers and scheduler placed {} of 4 pods",
            bound.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for p in &placed {
        let name = p.metadata.name.clone().unwrap();
        let host = netcheck::launch::kube::logs::hostname_of(p);
        let app = &p.metadata.labels.as_ref().unwrap()["app"];
        let index = if app == "sts" {
            name.rsplit('-').next().unwrap().parse::<usize>().unwrap()
        } else {
            p.metadata.annotations.as_ref().unwrap()["batch.kubernetes.io/job-completion-index"]
                .parse()
                .unwrap()
        };
        let log = efa_host_log(index, &host);
        start(&ns, &name, "worker", &log, None, false).await;
    }
    let on: std::collections::BTreeSet<String> = placed
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .collect();
    assert_eq!(on.len(), 4, "one pod per node: {on:?} of {nodes:?}");
    for workload in ["statefulset/sts", "job/idx"] {
        let ran = analyze_in(
            &ns,
            &format!("--workload {workload} --expect efa --format json"),
        )
        .await;
        assert_eq!(ran.code, Some(0), "{workload}: {ran}");
        let j = ran.json();
        assert_eq!(j["verdict"], "pass", "{ran}");
        assert_eq!(j["nodes"], 2, "{ran}");
        let pods = j["pods"].as_array().unwrap();
        assert_eq!(pods.len(), 2, "{ran}");
        for p in pods {
            assert_eq!(p["status"], "analyzed", "{ran}");
            assert_eq!(p["ranks"].as_array().unwrap().len(), 2, "{ran}");
        }
        if workload == "job/idx" {
            // The pod is `idx-0-<random>`; NCCL printed its host name `idx-0`.
            let p = &pods[0];
            assert_ne!(p["pod"], p["hostname"], "{ran}");
            assert!(p["hostname"].as_str().unwrap().starts_with("idx-"), "{ran}");
        }
    }
}

/// A RayJob's driver runs in the head pod, and Ray forwards its workers' output there:
/// `(RayTrainWorker pid=41, ip=10.1.17.5) <worker host>:41:41 [0] NCCL INFO ...` (grammar §1.3).
/// The workers' own logs hold only the raylet's lines. The ranks belong to the workers (NCCL
/// prints their host names), so the job runs on the workers' two nodes, not the head's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ray_head_carrying_its_workers_lines_maps_the_ranks_to_the_workers() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akdriver").await;
    let mut cpu = p5("cpu");
    cpu.instance_type = "m5.2xlarge".into();
    cpu.gpus = 0;
    cpu.efa = 0;
    let nodes = ns.add_nodes(&[cpu, p5("a"), p5("b")]).await;
    let workers = ["rj-raycluster-worker-gpu-0", "rj-raycluster-worker-gpu-1"];
    let mut driver = String::from("Job submitted, waiting for the driver to start.\n");
    for (i, worker) in workers.iter().enumerate() {
        for line in efa_host_log(i, worker).lines() {
            let pid = line.split(':').nth(1).unwrap();
            driver.push_str(&format!(
                "(RayTrainWorker pid={pid}, ip=10.1.17.{i}) {line}\n"
            ));
        }
    }
    let label = [(RAY, "rj-raycluster")];
    let head = pod("rj-raycluster-head", &nodes[0], &label, driver).without_gpus();
    let raylet = "[2026-12-01 06:00:01,000 I 12 12] (raylet) main.cc:180: Setting cluster ID\n";
    let w = |i: usize| pod(workers[i], &nodes[i + 1], &label, raylet.into());
    make_pods(&ns, &[head, w(0), w(1)]).await;
    let ran = analyze_in(&ns, "--workload rj-raycluster --expect efa --format json").await;
    assert_eq!(ran.code, Some(0), "{ran}");
    let j = ran.json();
    assert_eq!(j["verdict"], "pass", "{ran}");
    assert_eq!(j["nodes"], 2, "{ran}");
    assert_eq!(j["cluster_nodes"], json!([nodes[1], nodes[2]]), "{ran}");
    assert_eq!(pod_of(&j, workers[1])["ranks"], json!([2, 3]), "{ran}");
    assert_eq!(pod_of(&j, workers[1])["status"], "analyzed", "{ran}");
    assert_eq!(pod_of(&j, workers[1])["log"]["nccl_lines"], 0, "{ran}");
    assert_eq!(
        pod_of(&j, "rj-raycluster-head")["ranks"],
        json!([]),
        "{ran}"
    );
}

/// `--follow` on a job whose pod is still Pending: it waits for the scheduler (a node gets the
/// label the pod asks for), for the container to start, then for NCCL's init.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_waits_for_a_pending_pod_to_be_scheduled_and_start() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("aklate").await;
    let nodes = ns.add_nodes(&[p5("a")]).await;
    let log = renamed("logs/h200/nvlink.log", "slow-0");
    let mut p = pod("slow-0", &nodes[0], &[("app", "slow")], String::new());
    p.node = None;
    p.log = None;
    make_pods(&ns, &[p]).await;
    // The pod asks for a label no node has; give it one after a while.
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let (node, client, ns_name) = (nodes[0].clone(), ns.client.clone(), ns.name.clone());
    let kubectl = cluster.bin.join("kubectl");
    let kubeconfig = cluster.kubeconfig.clone();
    let later = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let labelled = std::process::Command::new(kubectl)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["label", "node", &node, "netcheck-test/nowhere=true"])
            .output()
            .unwrap();
        assert!(labelled.status.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while pods
            .get("slow-0")
            .await
            .unwrap()
            .spec
            .and_then(|s| s.node_name)
            .is_none()
        {
            assert!(Instant::now() < deadline, "never scheduled");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        (client, ns_name)
    });
    let run = analyze_in(
        &ns,
        "--pod slow-0 --follow --settle 1s --timeout 60s --format json",
    );
    let serve = async {
        let _ = later.await.unwrap();
        start(&ns, "slow-0", "worker", &log, None, false).await;
    };
    let (ran, ()) = tokio::join!(run, serve);
    let j = ran.json();
    assert_eq!(pod_of(&j, "slow-0")["status"], "analyzed", "{ran}");
    assert_eq!(pod_of(&j, "slow-0")["node"], nodes[0].as_str(), "{ran}");
    assert_eq!(ran.code, Some(0), "{ran}");
    assert!(ran.elapsed < Duration::from_secs(40), "{ran}");
}

/// Issue 24 item 7: `--follow` on a healthy RayCluster whose pods keep running: a head
/// without GPUs or NCCL lines (on a third node) and two EFA workers whose logs are complete.
/// Every line of every pod is read, the head is recognised as running no NCCL, and the run
/// ends soon after the last line (the settle time), not at the deadline; with one stream at a
/// time no worker is left unread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_on_a_healthy_ray_cluster_reads_every_line_and_ends_soon() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("akray").await;
    let nodes = ns.add_nodes(&[p5("a"), p5("b"), p5("c")]).await;
    let mut all = vec![fsdp_head(&nodes[2])];
    let mut expected_lines = BTreeMap::new();
    for (i, node) in nodes.iter().enumerate().take(2) {
        let w = fsdp_worker(i, node);
        let lines = w.log.as_deref().unwrap().lines().count() as u64;
        expected_lines.insert(w.name.clone(), lines);
        all.push(w);
    }
    // The containers keep running after the logs are written, as a training job does.
    for p in &mut all {
        p.follow = true;
    }
    make_pods(&ns, &all).await;
    for streams in ["8", "1"] {
        let ran = analyze_in(
            &ns,
            &format!(
                "-l ray.io/cluster=fsdp --expect efa --follow --timeout 30s \
                 --max-streams {streams} --format json"
            ),
        )
        .await;
        assert_eq!(ran.code, Some(0), "--max-streams {streams}: {ran}");
        let j = ran.json();
        assert_eq!(j["verdict"], "pass", "{ran}");
        for (name, lines) in &expected_lines {
            let p = pod_of(&j, name);
            assert_eq!(p["status"], "analyzed", "{name}: {ran}");
            assert_eq!(p["log"]["lines"].as_u64(), Some(*lines), "{name}: {ran}");
        }
        assert_eq!(pod_of(&j, "fsdp-head")["status"], "no-nccl-lines", "{ran}");
        // The settle time (5 s) per stream after the last NCCL line, not the 30 s deadline.
        assert!(
            ran.elapsed < Duration::from_secs(22),
            "--max-streams {streams}: {ran}"
        );
    }
    // Every pod's node counts, the head's third one too.
    let ran = analyze_in(&ns, "-l ray.io/cluster=fsdp --expect efa").await;
    assert_eq!(ran.code, Some(0), "{ran}");
    assert!(
        ran.stdout
            .contains("pods: 3 on 3 node(s), 2 with analyzed NCCL lines"),
        "{ran}"
    );
}

/// Issue 24 item 8: a selector the API server cannot parse is the user's input (exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_selector_is_exit_2() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("aksel").await;
    let ran = analyze_in(&ns, "-l a=b=c").await;
    assert_eq!(ran.code, Some(2), "{ran}");
    assert!(ran.stderr.contains("not a valid label selector"), "{ran}");
}
