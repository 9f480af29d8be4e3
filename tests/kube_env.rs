//! A real Kubernetes control plane for the `launch` tests: etcd, kube-apiserver (TLS, token
//! auth, RBAC, an audit log), kube-controller-manager, kube-scheduler and kwok (fake nodes and
//! pods), built by `scripts/kube-testenv.sh` into `target/kube-testenv/`.
//!
//! One control plane per test binary, started on first use on loopback ports chosen free at
//! start; each test gets its own namespace and its own fake nodes (names prefixed with the
//! namespace, labelled `netcheck-test/ns=<namespace>`). Everything started is stopped by pid when
//! the test binary exits (atexit), and killed by the kernel if the binary dies first
//! (PR_SET_PDEATHSIG from a thread that lives as long as the process).
//!
//! Without the binaries the tests skip and say why; with `CI=true` that is a failure, as for
//! the fabric tests and libfabric.
//!
//! Pods have no container runtime here. A test gives each namespace a *script* (what the pod on
//! node X with rank K prints, and whether and how it exits); `Pods::run` plays it: for each pod
//! the scheduler has bound, it writes the log in CRI format, points a kwok `Logs` object at it
//! (the API server then serves it through `pods/log`), and annotates the pod so that kwok's
//! stages (below) start it and, later, end it with the exit code.

use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// Annotation that lets kwok start a pod (set once its log is in place).
pub const START: &str = "netcheck-test/start";
/// Annotation holding the exit code kwok ends the pod with.
pub const EXIT: &str = "netcheck-test/exit";
/// Annotation holding the digest kwok reports as the container's `imageID` (a kubelet reports
/// the one it pulled).
pub const IMAGE_ID: &str = "netcheck-test/image-id";
/// Annotation that keeps a bound pod in `ContainerCreating`, with its value as the message.
pub const STUCK: &str = "netcheck-test/stuck";
/// Label on every fake node of a test: the test's namespace.
pub const NS_LABEL: &str = "netcheck-test/ns";
/// The API server's version, as `scripts/kube-testenv.sh` builds it.
pub const KUBE_VERSION: &str = "v1.34.4";

pub struct Cluster {
    pub root: PathBuf,
    pub kubeconfig: PathBuf,
    pub server: String,
    pub bin: PathBuf,
    pub audit_log: PathBuf,
    kwok_port: u16,
    ca_b64: String,
    /// How long the control plane took to start, etcd to the default service account.
    pub started_in: Duration,
}

enum Unavailable {
    /// Not built here: skip (fail under CI=true).
    Missing(String),
    /// Built but broken: always a failure.
    Broken(String),
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
static SKIP: OnceLock<Option<String>> = OnceLock::new();
/// Pids of everything started, in start order.
static PIDS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
static ROOT: Mutex<Option<PathBuf>> = Mutex::new(None);

fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// The shared control plane; `None` (with the reason on stderr) when it is not built here.
/// Panics when it is built but does not start, or when `CI=true` and it is not built.
pub fn cluster() -> Option<&'static Cluster> {
    let skip = SKIP.get_or_init(|| testenv_dir().and_then(check_built).err());
    if let Some(why) = skip {
        if ci() {
            panic!("CI=true but the Kubernetes test control plane is missing: {why}");
        }
        eprintln!("skipping: no Kubernetes test control plane ({why})");
        return None;
    }
    let started = CLUSTER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        // The children's parent-death signal fires when the thread that forked them ends,
        // so they are forked from one that never does.
        std::thread::Builder::new()
            .name("kube-testenv".into())
            .spawn(move || {
                let _ = tx.send(start());
                loop {
                    std::thread::park();
                }
            })
            .expect("a thread for the control plane");
        match rx.recv() {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(Unavailable::Missing(w) | Unavailable::Broken(w))) => Err(w),
            Err(_) => Err("the start-up thread died".into()),
        }
    });
    match started {
        Ok(c) => Some(c),
        Err(why) => panic!("the Kubernetes test control plane did not start: {why}"),
    }
}

fn testenv_dir() -> Result<PathBuf, String> {
    Ok(match std::env::var_os("KUBE_TESTENV_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/kube-testenv"),
    })
}

const TOOLS: &[&str] = &[
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
];
const ASSETS: &[&str] = &[
    "pki/ca.crt",
    "pki/apiserver.crt",
    "pki/apiserver.key",
    "pki/sa.key",
    "pki/sa.pub",
    "kwok/logs-crd.yaml",
];

fn check_built(dir: PathBuf) -> Result<PathBuf, String> {
    let missing: Vec<String> = TOOLS
        .iter()
        .map(|t| format!("bin/{t}"))
        .chain(ASSETS.iter().map(|a| a.to_string()))
        .filter(|p| !dir.join(p).is_file())
        .collect();
    if missing.is_empty() {
        Ok(dir)
    } else {
        Err(format!(
            "{} not in {} (build it with `scripts/kube-testenv.sh`, which needs Go >= 1.26 and about 5 minutes)",
            missing.join(", "),
            dir.display()
        ))
    }
}

fn free_ports(n: usize) -> Vec<u16> {
    // All bound at once, so they differ; released just before use.
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free loopback port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

extern "C" fn stop_all() {
    let pids: Vec<i32> = PIDS.lock().map(|p| p.clone()).unwrap_or_default();
    // Last started first: kwok and the controllers before the API server, etcd last.
    for &pid in pids.iter().rev() {
        // SAFETY: signalling and reaping children this process started.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut status = 0;
            // SAFETY: as above.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r != 0 || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above; a no-op when it has exited.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
        }
    }
    if std::env::var_os("NETCHECK_KEEP_TESTENV").is_none()
        && let Some(root) = ROOT.lock().ok().and_then(|r| r.clone())
    {
        let _ = std::fs::remove_dir_all(root);
    }
}

fn spawn(root: &Path, bin: &Path, name: &str, args: &[String]) -> Result<(), Unavailable> {
    let log = std::fs::File::create(root.join(format!("logs/{name}.log")))
        .map_err(|e| Unavailable::Broken(format!("log file for {name}: {e}")))?;
    let mut cmd = Command::new(bin.join(name));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("dup"))
        .stderr(log)
        .current_dir(root);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| Unavailable::Broken(format!("cannot start {name}: {e}")))?;
    PIDS.lock().unwrap().push(child.id() as i32);
    // The Child is dropped without waiting; stop_all reaps it by pid.
    Ok(())
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) -> Result<(), Unavailable> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(Unavailable::Broken(format!(
        "{what} not ready after {}s",
        limit.as_secs()
    )))
}

fn http_get_ok(port: u16, path: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200")
}

/// Only the launcher's identities (service accounts) are audited: their request counts are
/// what the scale test reports; the controllers' traffic would drown them.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  userGroups: [\"system:serviceaccounts\"]
- level: None
";

/// kwok's stages for these tests (kwok's own "fast" stages, gated on the annotations a test's
/// script sets): a bound pod starts once its log is in place (START), ends with the exit code
/// in EXIT, and is removed when deleted. One node stage that never matches: kwok only manages
/// nodes (and so their pods) when it has a node stage, and the status each test wrote
/// (conditions, allocatable) must stay as it is.
const KWOK_STAGES: &str = r#"apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-untouched
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.metadata.annotations["netcheck-test/never"]', operator: In, values: ["true"]}
  next:
    statusTemplate: "{}"
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-start
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Pending]}
    - {key: '.metadata.annotations["netcheck-test/start"]', operator: In, values: ["true"]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady}
      {{ $id := index .metadata.annotations "netcheck-test/image-id" }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        imageID: ""
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: {{ if $id }}{{ $id | Quote }}{{ else }}""{{ end }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: "127.0.0.1"
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-stuck
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Pending]}
    - {key: '.metadata.annotations["netcheck-test/stuck"]', operator: Exists}
    - {key: '.status.containerStatuses', operator: DoesNotExist}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $message := index .metadata.annotations "netcheck-test/stuck" }}
      conditions:
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
      - {lastTransitionTime: {{ $now | Quote }}, status: "False", type: Ready, reason: ContainersNotReady}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
            reason: ContainerCreating
            message: {{ $message | Quote }}
      {{ end }}
      hostIP: "127.0.0.1"
      phase: Pending
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-exit
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Running]}
    - {key: '.metadata.annotations["netcheck-test/exit"]', operator: Exists}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $code := index .metadata.annotations "netcheck-test/exit" }}
      {{ $id := index .metadata.annotations "netcheck-test/image-id" }}
      conditions:
      - {lastTransitionTime: {{ $now | Quote }}, status: "False", type: Ready}
      - {lastTransitionTime: {{ $now | Quote }}, status: "False", type: ContainersReady}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: {{ if $id }}{{ $id | Quote }}{{ else }}""{{ end }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {{ $code }}
            reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: Exists}
  next:
    delete: true
"#;

fn start() -> Result<Cluster, Unavailable> {
    let t0 = Instant::now();
    let dir = testenv_dir()
        .and_then(check_built)
        .map_err(Unavailable::Missing)?;
    let bin = dir.join("bin");
    let pki = dir.join("pki");
    let root = tempfile::Builder::new()
        .prefix("netcheck-kube-testenv-")
        .tempdir()
        .map_err(|e| Unavailable::Broken(format!("temp dir: {e}")))?
        .keep();
    *ROOT.lock().unwrap() = Some(root.clone());
    // SAFETY: registering a plain extern "C" function.
    unsafe {
        libc::atexit(stop_all);
    }
    for sub in ["logs", "podlogs"] {
        std::fs::create_dir_all(root.join(sub)).expect("run folders");
    }
    let token = format!(
        "admin-{}",
        netcheck::launch::kube::names::new_token().expect("random")
    );
    let w = |name: &str, text: &str| {
        std::fs::write(root.join(name), text).expect("write a control-plane file");
        root.join(name)
    };
    let tokens = w(
        "tokens.csv",
        &format!("{token},admin,admin,\"system:masters\"\n"),
    );
    let audit_policy = w("audit-policy.yaml", AUDIT_POLICY);
    let kwok_config = w("kwok.yaml", KWOK_STAGES);
    let audit_log = root.join("audit.log");
    let p = free_ports(4);
    let (etcd_client, etcd_peer, api, kwok_port) = (p[0], p[1], p[2], p[3]);
    let s = |v: &str| v.to_string();
    let path = |p: &Path| p.display().to_string();

    spawn(
        &root,
        &bin,
        "etcd",
        &[
            s("--name=netcheck"),
            format!("--data-dir={}", path(&root.join("etcd"))),
            s("--unsafe-no-fsync"),
            s("--log-level=warn"),
            format!("--listen-client-urls=http://127.0.0.1:{etcd_client}"),
            format!("--advertise-client-urls=http://127.0.0.1:{etcd_client}"),
            format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"),
            format!("--initial-cluster=netcheck=http://127.0.0.1:{etcd_peer}"),
            s("--listen-metrics-urls="),
        ],
    )?;
    wait_for("etcd", Duration::from_secs(30), || {
        http_get_ok(etcd_client, "/health")
    })?;

    spawn(
        &root,
        &bin,
        "kube-apiserver",
        &[
            format!("--etcd-servers=http://127.0.0.1:{etcd_client}"),
            s("--bind-address=127.0.0.1"),
            s("--advertise-address=127.0.0.1"),
            format!("--secure-port={api}"),
            format!("--tls-cert-file={}", path(&pki.join("apiserver.crt"))),
            format!(
                "--tls-private-key-file={}",
                path(&pki.join("apiserver.key"))
            ),
            format!("--client-ca-file={}", path(&pki.join("ca.crt"))),
            format!("--token-auth-file={}", path(&tokens)),
            s("--authorization-mode=Node,RBAC"),
            format!("--service-account-key-file={}", path(&pki.join("sa.pub"))),
            format!(
                "--service-account-signing-key-file={}",
                path(&pki.join("sa.key"))
            ),
            s("--service-account-issuer=https://kubernetes.default.svc.cluster.local"),
            s("--service-cluster-ip-range=10.96.0.0/16"),
            s("--endpoint-reconciler-type=none"),
            s("--kubelet-preferred-address-types=InternalIP"),
            s("--profiling=false"),
            format!("--audit-policy-file={}", path(&audit_policy)),
            format!("--audit-log-path={}", path(&audit_log)),
            s("--audit-log-format=json"),
            s("--audit-log-mode=blocking"),
        ],
    )?;
    let server = format!("https://127.0.0.1:{api}");
    let ca_b64 = {
        use base64::Engine;
        let ca = std::fs::read(pki.join("ca.crt")).expect("the CA");
        base64::engine::general_purpose::STANDARD.encode(ca)
    };
    let kubeconfig = w(
        "admin.kubeconfig",
        &kubeconfig_text(&server, &ca_b64, "admin", &token, "default"),
    );
    let kubectl = |args: &[&str]| {
        Command::new(bin.join("kubectl"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
    };
    wait_for("kube-apiserver /readyz", Duration::from_secs(90), || {
        kubectl(&["get", "--raw", "/readyz"])
            .map(|o| o.status.success() && o.stdout == b"ok")
            .unwrap_or(false)
    })?;
    // kwok watches Logs objects from its start: the CRD first.
    let crd = path(&dir.join("kwok/logs-crd.yaml"));
    let applied = kubectl(&["apply", "-f", &crd])
        .map_err(|e| Unavailable::Broken(format!("kubectl: {e}")))?;
    if !applied.status.success() {
        return Err(Unavailable::Broken(format!(
            "kwok's Logs CRD: {}",
            String::from_utf8_lossy(&applied.stderr)
        )));
    }
    wait_for("the Logs CRD", Duration::from_secs(30), || {
        kubectl(&[
            "wait",
            "--for=condition=established",
            "--timeout=5s",
            "crd/logs.kwok.x-k8s.io",
        ])
        .map(|o| o.status.success())
        .unwrap_or(false)
    })?;
    let kc = path(&kubeconfig);
    spawn(
        &root,
        &bin,
        "kube-controller-manager",
        &[
            format!("--kubeconfig={kc}"),
            s("--bind-address=127.0.0.1"),
            s("--secure-port=0"),
            s("--leader-elect=false"),
            format!(
                "--service-account-private-key-file={}",
                path(&pki.join("sa.key"))
            ),
            format!("--root-ca-file={}", path(&pki.join("ca.crt"))),
            s("--service-cluster-ip-range=10.96.0.0/16"),
            // Fake nodes send no heartbeats: the test sets their conditions once, and the node
            // lifecycle controller (which lifts the not-ready taint the API server puts on
            // every new node) must not mark them Unknown while the tests run.
            s("--node-monitor-grace-period=12h"),
        ],
    )?;
    spawn(
        &root,
        &bin,
        "kube-scheduler",
        &[
            format!("--kubeconfig={kc}"),
            s("--bind-address=127.0.0.1"),
            s("--secure-port=0"),
            s("--leader-elect=false"),
        ],
    )?;
    spawn(
        &root,
        &bin,
        "kwok",
        &[
            format!("--kubeconfig={kc}"),
            format!("--config={}", path(&kwok_config)),
            s("--manage-all-nodes=false"),
            s("--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"),
            s("--cidr=10.244.0.0/16"),
            s("--node-ip=127.0.0.1"),
            format!("--node-port={kwok_port}"),
            format!("--server-address=127.0.0.1:{kwok_port}"),
            s("--enable-crds=Logs"),
        ],
    )?;
    // The controller-manager works once it has made the default namespace's service account.
    wait_for(
        "the default service account",
        Duration::from_secs(60),
        || {
            kubectl(&["get", "serviceaccount", "default", "-n", "default"])
                .map(|o| o.status.success())
                .unwrap_or(false)
        },
    )?;
    wait_for("kwok", Duration::from_secs(30), || {
        http_get_ok(kwok_port, "/healthz")
    })?;
    let cluster = Cluster {
        root,
        kubeconfig,
        server,
        bin,
        audit_log,
        kwok_port,
        ca_b64,
        started_in: t0.elapsed(),
    };
    eprintln!(
        "kube-testenv: control plane up in {:.1}s at {} (folder {})",
        cluster.started_in.as_secs_f64(),
        cluster.server,
        cluster.root.display()
    );
    Ok(cluster)
}

fn kubeconfig_text(server: &str, ca_b64: &str, user: &str, token: &str, ns: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster: {{server: \"{server}\", certificate-authority-data: {ca_b64}}}
users:
- name: {user}
  user: {{token: {token}}}
contexts:
- name: testenv
  context: {{cluster: testenv, user: {user}, namespace: {ns}}}
current-context: testenv
"
    )
}

impl Cluster {
    /// A client with the admin token.
    pub async fn client(&self) -> kube::Client {
        client_for(&self.kubeconfig).await
    }

    /// `kubectl` with the admin kubeconfig.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(self.bin.join("kubectl"));
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd
    }

    /// A kubeconfig for `token` (a service account's), written under the run folder.
    pub fn kubeconfig_for(&self, name: &str, token: &str, ns: &str) -> PathBuf {
        let path = self.root.join(format!("{name}.kubeconfig"));
        std::fs::write(
            &path,
            kubeconfig_text(&self.server, &self.ca_b64, name, token, ns),
        )
        .expect("write a kubeconfig");
        path
    }

    /// API requests made by a service account, from the audit log.
    pub fn requests_by(&self, ns: &str, sa: &str) -> Vec<(String, String)> {
        let user = format!("system:serviceaccount:{ns}:{sa}");
        let text = std::fs::read_to_string(&self.audit_log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["user"]["username"] == user.as_str())
            .map(|e| {
                (
                    e["verb"].as_str().unwrap_or("").to_string(),
                    e["requestURI"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// `kubectl ARGS` (admin) with `input` on its stdin.
    pub fn kubectl_input<S: AsRef<std::ffi::OsStr>>(
        &self,
        args: impl IntoIterator<Item = S>,
        input: &str,
    ) -> std::process::Output {
        let mut child = self
            .kubectl()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// `kubectl ARGS` (admin), which must succeed: its stdout. Panics with the command and
    /// kubectl's words.
    pub fn kubectl_ok<S: AsRef<std::ffi::OsStr>>(
        &self,
        args: impl IntoIterator<Item = S>,
    ) -> String {
        let args: Vec<std::ffi::OsString> =
            args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let out = self.kubectl().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `kubectl apply -f -` of `yaml`; panics with kubectl's words if refused.
    pub fn apply(&self, yaml: &str) {
        let out = self.kubectl_input(["apply", "-f", "-"], yaml);
        assert!(
            out.status.success(),
            "kubectl apply: {}\n{yaml}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A fresh namespace `t-<prefix>-<random>`, ready for pods (its default service account
    /// exists).
    pub async fn namespace(&'static self, prefix: &str) -> TestNs {
        let client = self.client().await;
        let name = format!("t-{prefix}-{}", netcheck::launch::kube::names::new_run_id());
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create the test namespace");
        self.adopt_namespace(&name).await
    }

    /// A namespace made otherwise (e.g. by deploy/rbac.yaml), once it is ready for pods.
    pub async fn adopt_namespace(&'static self, name: &str) -> TestNs {
        let client = self.client().await;
        let name = name.to_string();
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
        let deadline = Instant::now() + Duration::from_secs(60);
        while sas.get_opt("default").await.ok().flatten().is_none() {
            assert!(
                Instant::now() < deadline,
                "no default service account in {name}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        TestNs {
            name,
            client,
            cluster: self,
        }
    }
}

pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let config = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .expect("kubeconfig");
    kube::Client::try_from(config).expect("client")
}

/// A fake GPU node as EKS shows one. Defaults: p5.48xlarge in us-east-2a, 8 GPUs, 32 EFA,
/// 10256Mi of hugepages-2Mi, Ready, EKS health conditions True.
#[derive(Debug, Clone)]
pub struct FakeNode {
    pub name: String,
    pub instance_type: String,
    pub zone: String,
    pub gpus: u32,
    pub efa: u32,
    pub hugepages: String,
    pub memory: String,
    pub ready: bool,
    /// Extra conditions (type, status, message), e.g. the EKS node-monitoring ones.
    pub conditions: Vec<(String, String, String)>,
    /// (key, value, effect)
    pub taints: Vec<(String, Option<String>, String)>,
    pub cordoned: bool,
    pub labels: BTreeMap<String, String>,
    /// Allocatable pods (EKS: the VPC CNI's IP limit); the scheduler enforces it.
    pub max_pods: u32,
}

impl FakeNode {
    pub fn p5(name: &str) -> FakeNode {
        FakeNode {
            name: name.into(),
            instance_type: "p5.48xlarge".into(),
            zone: "us-east-2a".into(),
            gpus: 8,
            efa: 32,
            hugepages: "10256Mi".into(),
            memory: "2000Gi".into(),
            ready: true,
            conditions: vec![
                ("AcceleratedHardwareReady".into(), "True".into(), "".into()),
                ("NetworkingReady".into(), "True".into(), "".into()),
            ],
            taints: vec![(
                "nvidia.com/gpu".into(),
                Some("true".into()),
                "NoSchedule".into(),
            )],
            cordoned: false,
            max_pods: 110,
            labels: BTreeMap::from([(
                "nvidia.com/gpu.product".to_string(),
                "NVIDIA-H100-80GB-HBM3".to_string(),
            )]),
        }
    }

    pub fn condition(mut self, kind: &str, status: &str, message: &str) -> FakeNode {
        self.conditions.retain(|(k, _, _)| k != kind);
        self.conditions
            .push((kind.into(), status.into(), message.into()));
        self
    }
}

/// One test's namespace, client and fake nodes.
pub struct TestNs {
    pub name: String,
    pub client: kube::Client,
    pub cluster: &'static Cluster,
}

impl TestNs {
    /// Creates the nodes (names prefixed with the namespace; returns the full names).
    pub async fn add_nodes(&self, nodes: &[FakeNode]) -> Vec<String> {
        let api: Api<Node> = Api::all(self.client.clone());
        let mut names = vec![];
        for n in nodes {
            let name = format!("{}-{}", self.name, n.name);
            let mut labels = n.labels.clone();
            labels.extend([
                ("kubernetes.io/hostname".to_string(), name.clone()),
                ("kubernetes.io/os".into(), "linux".into()),
                ("kubernetes.io/arch".into(), "amd64".into()),
                (
                    "node.kubernetes.io/instance-type".into(),
                    n.instance_type.clone(),
                ),
                ("topology.kubernetes.io/zone".into(), n.zone.clone()),
                (NS_LABEL.into(), self.name.clone()),
            ]);
            let taints: Vec<Value> = n
                .taints
                .iter()
                .map(|(k, v, e)| json!({"key": k, "value": v, "effect": e}))
                .collect();
            let node: Node = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels, "annotations": {
                    "kwok.x-k8s.io/node": "fake",
                    "node.alpha.kubernetes.io/ttl": "0",
                }},
                "spec": {"taints": taints, "unschedulable": n.cordoned},
            }))
            .unwrap();
            api.create(&PostParams::default(), &node)
                .await
                .unwrap_or_else(|e| panic!("create node {name}: {e}"));
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let mut conditions = vec![json!({
                "type": "Ready", "status": if n.ready { "True" } else { "False" },
                "reason": if n.ready { "KubeletReady" } else { "KubeletNotReady" },
                "message": if n.ready { "kubelet is posting ready status" } else { "container runtime network not ready" },
                "lastHeartbeatTime": now, "lastTransitionTime": now,
            })];
            for (kind, status, message) in &n.conditions {
                conditions.push(json!({"type": kind, "status": status, "message": message,
                    "reason": kind, "lastHeartbeatTime": now, "lastTransitionTime": now}));
            }
            let resources = json!({
                "cpu": "192", "memory": n.memory, "pods": n.max_pods.to_string(), "ephemeral-storage": "1Ti",
                "nvidia.com/gpu": n.gpus.to_string(), "vpc.amazonaws.com/efa": n.efa.to_string(),
                "hugepages-2Mi": n.hugepages,
            });
            let status = json!({"status": {
                "conditions": conditions,
                "allocatable": resources, "capacity": resources,
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                              {"type": "Hostname", "address": name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": self.cluster.kwok_port}},
                "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                    "kubeletVersion": KUBE_VERSION, "kubeProxyVersion": KUBE_VERSION,
                    "containerRuntimeVersion": "kwok", "kernelVersion": "kwok", "osImage": "kwok",
                    "bootID": "", "machineID": "", "systemUUID": ""},
                "phase": "Running",
            }});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .unwrap_or_else(|e| panic!("status of node {name}: {e}"));
            names.push(name);
        }
        // As on a real cluster, a new node carries the not-ready taint until the node lifecycle
        // controller sees it Ready.
        let deadline = Instant::now() + Duration::from_secs(60);
        for (_, name) in nodes.iter().zip(&names).filter(|(n, _)| n.ready) {
            loop {
                let node = api.get(name).await.unwrap();
                let tainted = node
                    .spec
                    .and_then(|s| s.taints)
                    .unwrap_or_default()
                    .iter()
                    .any(|t| t.key == "node.kubernetes.io/not-ready");
                if !tainted {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{name} keeps its not-ready taint"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        names
    }

    /// The selector of this test's nodes.
    pub fn selector(&self) -> String {
        format!("{NS_LABEL}={}", self.name)
    }

    /// A kubeconfig with a fresh token (TokenRequest) for an existing service account.
    pub async fn token_kubeconfig(&self, sa: &str) -> PathBuf {
        let out =
            self.cluster
                .kubectl_ok(["create", "token", sa, "-n", &self.name, "--duration=2h"]);
        let token = out.trim().to_string();
        self.cluster
            .kubeconfig_for(&format!("{}-{sa}", self.name), &token, &self.name)
    }

    /// Every object in the namespace carrying `selector`, as `kind/name`.
    pub async fn labelled(&self, selector: &str) -> Vec<String> {
        let kinds = "configmap,secret,job,service,pod";
        self.cluster
            .kubectl_ok(["get", kinds, "-n", &self.name, "-l", selector, "-o", "name"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Plays `script` for every pod of the namespace until dropped; every pod reports one
    /// digest per image reference as its `imageID`.
    pub fn run_pods(&self, script: impl Fn(&PodCtx) -> Act + Send + Sync + 'static) -> Pods {
        self.run_pods_with_images(script, |ctx: &PodCtx| fake_digest(&ctx.image))
    }

    /// As `run_pods`, with the `imageID` of each pod's benchmark container from `image_id`.
    pub fn run_pods_with_images(
        &self,
        script: impl Fn(&PodCtx) -> Act + Send + Sync + 'static,
        image_id: impl Fn(&PodCtx) -> String + Send + Sync + 'static,
    ) -> Pods {
        let (client, ns) = (self.client.clone(), self.name.clone());
        let dir = self.cluster.root.join("podlogs").join(&self.name);
        std::fs::create_dir_all(&dir).unwrap();
        let script: Arc<dyn Fn(&PodCtx) -> Act + Send + Sync> = Arc::new(script);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let task = tokio::spawn(async move {
            let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
            let logs_resource = ApiResource {
                group: "kwok.x-k8s.io".into(),
                version: "v1alpha1".into(),
                api_version: "kwok.x-k8s.io/v1alpha1".into(),
                kind: "Logs".into(),
                plural: "logs".into(),
            };
            let logs: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), &ns, &logs_resource);
            let mut handled = HashSet::new();
            loop {
                let list = pods.list(&ListParams::default()).await;
                for pod in list.map(|l| l.items).unwrap_or_default() {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
                        continue;
                    };
                    if pod.metadata.deletion_timestamp.is_some() || handled.contains(&name) {
                        continue;
                    }
                    handled.insert(name.clone());
                    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
                    let labels = pod.metadata.labels.clone().unwrap_or_default();
                    let ctx = PodCtx {
                        image: pod
                            .spec
                            .as_ref()
                            .and_then(|s| s.containers.first())
                            .and_then(|c| c.image.clone())
                            .unwrap_or_default(),
                        node: node.clone(),
                        // Each rank's Job labels its pod with the rank.
                        index: labels
                            .get("netcheck.io/rank")
                            .or_else(|| annotations.get("batch.kubernetes.io/job-completion-index"))
                            .and_then(|i| i.parse().ok())
                            .unwrap_or(0),
                        group: annotations
                            .get("netcheck.io/nodes")
                            .map(|n| n.split(',').map(str::to_string).collect())
                            .unwrap_or_default(),
                    };
                    let act = script(&ctx);
                    let digest = image_id(&ctx);
                    record.lock().unwrap().push(ctx);
                    let file = dir.join(format!("{name}.log"));
                    std::fs::write(&file, cri_log(act.log())).unwrap();
                    let object: DynamicObject = serde_json::from_value(json!({
                        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
                        "metadata": {"name": name, "namespace": ns},
                        "spec": {"logs": [{"containers": ["netcheck"],
                                           "logsFile": file.display().to_string()}]},
                    }))
                    .unwrap();
                    if let Err(e) = logs.create(&PostParams::default(), &object).await {
                        eprintln!("kube-testenv: Logs for {name}: {e}");
                    }
                    let annotate = |key: &str, value: String| json!({"metadata": {"annotations": {key: value}}});
                    if let Act::Stuck { message } = &act {
                        // Bound, never started: kwok's `pod-stuck` stage shows it waiting.
                        let _ = pods
                            .patch(
                                &name,
                                &PatchParams::default(),
                                &Patch::Merge(annotate(STUCK, message.clone())),
                            )
                            .await;
                        continue;
                    }
                    let start =
                        json!({"metadata": {"annotations": {START: "true", IMAGE_ID: digest}}});
                    let _ = pods
                        .patch(&name, &PatchParams::default(), &Patch::Merge(start))
                        .await;
                    if let Act::Exit { code, after, .. } = act {
                        let (pods, name) = (pods.clone(), name.clone());
                        let patch = annotate(EXIT, code.to_string());
                        tokio::spawn(async move {
                            tokio::time::sleep(after).await;
                            let _ = pods
                                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                                .await;
                        });
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Pods { task, seen }
    }
}

/// A digest for an image reference, as a kubelet reports it: `<repository>@sha256:<64 hex>`
/// (the same reference always gets the same digest).
pub fn fake_digest(image: &str) -> String {
    let repository = image
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .map_or(image, |(repo, _)| repo);
    // FNV-1a, stretched to 32 bytes: a stable stand-in, not a content hash.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let hex: String = (0..4)
        .map(|round| {
            for b in image.bytes().chain([round as u8]) {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
            format!("{h:016x}")
        })
        .collect();
    format!("{repository}@sha256:{hex}")
}

/// A pod the script is asked about.
#[derive(Debug, Clone)]
pub struct PodCtx {
    /// Its benchmark container's image (`--image`).
    pub image: String,
    pub node: String,
    /// Its node rank (Job completion index).
    pub index: usize,
    /// Its group's nodes, in planning order (the `netcheck.io/nodes` annotation).
    pub group: Vec<String>,
}

/// What a pod does.
#[derive(Debug, Clone)]
pub enum Act {
    /// Runs for `after`, prints `log`, exits with `code`.
    Exit {
        code: i32,
        log: String,
        after: Duration,
    },
    /// Prints `log` and never ends.
    Hang { log: String },
    /// Bound to its node, never started: the container waits in `ContainerCreating` with
    /// `message` (as with a volume, CNI or device-plugin problem).
    Stuck { message: String },
}

impl Act {
    pub fn exit(code: i32, log: impl Into<String>) -> Act {
        Act::Exit {
            code,
            log: log.into(),
            after: Duration::from_millis(300),
        }
    }

    fn log(&self) -> &str {
        match self {
            Act::Exit { log, .. } | Act::Hang { log } => log,
            Act::Stuck { .. } => "",
        }
    }
}

/// The scripted pods of a namespace; stops playing when dropped.
pub struct Pods {
    task: tokio::task::JoinHandle<()>,
    seen: Arc<Mutex<Vec<PodCtx>>>,
}

impl Pods {
    /// Every pod played so far.
    pub fn seen(&self) -> Vec<PodCtx> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until `n` pods have been played (at most 60 s, else panics saying `what` never
    /// happened).
    pub async fn wait_for(&self, n: usize, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.seen().len() < n {
            assert!(Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Pods {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A log in the CRI format the kubelet (and kwok) read: `<time> stdout F <line>`.
pub fn cri_log(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            format!(
                "2026-12-01T06:00:{:02}.{:09}Z stdout F {line}\n",
                i / 1000 % 60,
                i
            )
        })
        .collect()
}
