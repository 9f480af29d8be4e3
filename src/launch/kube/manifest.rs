//! The Kubernetes objects of a run, built by pure functions from typed k8s-openapi structs
//! (a misspelt field is a compile error, not a silently dropped key).
//!
//! Per run: an anchor ConfigMap (`netcheck-<run>`, holding the plan) that owns everything else,
//! and a Secret with the rendezvous token. Per group (pair, or a whole pool in `full` mode): a
//! Job per rank, its pod pinned to that rank's node, with no retries, and a headless Service that gives rank 0 a
//! DNS name before it is Ready (`publishNotReadyAddresses`). Deleting the anchor deletes the run.
//! `netcheck launch --dry-run` prints these objects; golden copies live in tests/fixtures/kube/.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, ConfigMap, Container, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HostPathVolumeSource, LocalObjectReference, NodeAffinity, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, ObjectFieldSelector, PodSecurityContext, PodSpec,
    PodTemplateSpec, ResourceRequirements, SeccompProfile, Secret, SecretKeySelector,
    SecurityContext, Service, ServicePort, ServiceSpec, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::names::{self, GROUP_LABEL, RUN_LABEL};
use super::nodes::{EFA, GPU, HUGEPAGES_2MI, PodResources, format_quantity};

/// Where the results folder of `netcheck run` lives inside the pod.
pub const RESULTS_DIR: &str = "/results";

/// Everything about a run that is the same for every group.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    pub run: String,
    pub namespace: String,
    pub image: String,
    pub image_pull_policy: Option<String>,
    /// Rank 0's rendezvous port.
    pub port: u16,
    /// Flags for `netcheck run` after the rendezvous ones: the sweep and `--timeout`.
    pub worker_args: Vec<String>,
    /// `--fabric-check PROVIDER` for the workers: a libfabric ping-pong against rank 0's node
    /// (on `port + 1`) before NCCL starts. None: no check.
    pub fabric_check: Option<String>,
    /// Plain environment variables, in order (`NCCL_DEBUG=INFO` first).
    pub env: Vec<(String, String)>,
    pub tolerations: Vec<Toleration>,
    /// Pin `NCCL_NET` to the expected transport's network, so NCCL fails instead of falling
    /// back to TCP sockets.
    pub strict_net: bool,
    /// Add CAP_IPC_LOCK (RDMA memory registration); off for restricted Pod Security namespaces.
    pub ipc_lock: bool,
    pub shm: Shm,
    /// Job `activeDeadlineSeconds`: the cluster's own cap on a group, scheduling included.
    pub deadline_secs: i64,
    /// Job `ttlSecondsAfterFinished`: removes finished groups if the launcher dies (None: keep).
    pub ttl_secs: Option<i32>,
    pub service_account: Option<String>,
    /// Where netcheck comes from in the pods and how it starts; pull secrets; non-root.
    pub image_opts: ImageOptions,
}

/// How the pods get netcheck and start it, and what the images need from the pod.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageOptions {
    /// `--netcheck-image`: a small image holding netcheck at [`NETCHECK_IMAGE_BINARY`]; an init
    /// container copies it into a shared emptyDir, so `--image` can be any training image.
    /// None: `--image` itself holds `netcheck` on its PATH (the image of deploy/Dockerfile).
    pub netcheck_image: Option<String>,
    pub entrypoint: Entrypoint,
    /// `--image-pull-secret`: the pod's `imagePullSecrets`, for both images.
    pub pull_secrets: Vec<String>,
    /// `--run-as-non-root`: `runAsNonRoot`, no privilege escalation, capabilities dropped (but
    /// IPC_LOCK unless `--no-ipc-lock`), the runtime's default seccomp profile.
    pub run_as_non_root: bool,
    /// `--run-as-user`: the pod's `runAsUser` (images whose USER is a name need one for
    /// `runAsNonRoot`: the kubelet cannot tell whether a name is root).
    pub run_as_user: Option<i64>,
    /// `--read-only-root-fs`: `readOnlyRootFilesystem` on every container; `/tmp` becomes an
    /// emptyDir (netcheck itself writes only under `--out`, an emptyDir already).
    pub read_only_root: bool,
}

/// Whether the pods start through the image's own ENTRYPOINT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Entrypoint {
    /// Only `args` is set (netcheck's path first), so the image's ENTRYPOINT runs and is handed
    /// the command: images like AWS's deep-learning containers turn on CUDA forward
    /// compatibility there. An image without ENTRYPOINT runs the args as the command.
    #[default]
    Keep,
    /// `command` is set to netcheck, replacing the image's ENTRYPOINT (for entrypoints that do
    /// not hand their arguments on).
    Bypass,
}

impl Entrypoint {
    pub fn parse(s: &str) -> Option<Entrypoint> {
        match s {
            "keep" => Some(Entrypoint::Keep),
            "bypass" => Some(Entrypoint::Bypass),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Entrypoint::Keep => "keep",
            Entrypoint::Bypass => "bypass",
        }
    }
}

/// Where the netcheck binary is in the `--netcheck-image` image (deploy/Dockerfile.netcheck).
pub const NETCHECK_IMAGE_BINARY: &str = "/usr/local/bin/netcheck";
/// The shared emptyDir the init container copies netcheck into, as the pods mount it.
pub const INJECT_DIR: &str = "/opt/netcheck";
/// The injected binary as the benchmark container runs it.
pub const INJECTED_BINARY: &str = "/opt/netcheck/netcheck";
/// The init container that copies netcheck into [`INJECT_DIR`].
pub const INIT_CONTAINER: &str = "netcheck-install";

/// `/dev/shm` for NCCL: memory-backed emptyDir of a size (counted in the memory request),
/// or the host's (as AWS's samples do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shm {
    Memory { bytes: u64 },
    Host,
}

/// One group of a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpec {
    /// Run-wide sequence number; names the Job and Service.
    pub seq: u32,
    pub round: u32,
    pub pool: String,
    pub nodes: Vec<String>,
    pub resources: PodResources,
    /// The transport that must carry inter-node traffic (`--expect` of the worker).
    pub expect: Option<String>,
}

impl GroupSpec {
    pub fn name(&self, run: &str) -> String {
        names::group(run, self.seq)
    }
}

fn run_labels(run: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (names::NAME_LABEL.into(), names::TOOL.into()),
        (names::MANAGED_BY_LABEL.into(), names::TOOL.into()),
        (RUN_LABEL.into(), run.into()),
    ])
}

fn group_labels(run: &str, group: &GroupSpec) -> BTreeMap<String, String> {
    let mut labels = run_labels(run);
    labels.insert(GROUP_LABEL.into(), group.seq.to_string());
    labels.insert(names::ROUND_LABEL.into(), group.round.to_string());
    labels
}

/// Labels the Service selects: exactly one group's pods.
fn group_selector(run: &str, group: &GroupSpec) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RUN_LABEL.into(), run.into()),
        (GROUP_LABEL.into(), group.seq.to_string()),
    ])
}

fn group_annotations(group: &GroupSpec) -> BTreeMap<String, String> {
    BTreeMap::from([
        (names::NODES_ANNOTATION.into(), group.nodes.join(",")),
        (names::POOL_ANNOTATION.into(), group.pool.clone()),
    ])
}

/// An owner reference to an object the API server has returned (it needs the uid).
/// Not a controller reference and no `blockOwnerDeletion`: those need extra permissions.
pub fn owner_reference(api_version: &str, kind: &str, meta: &ObjectMeta) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: meta.name.clone()?,
        uid: meta.uid.clone()?,
        ..Default::default()
    })
}

fn meta(name: String, spec: &RunSpec, owner: Option<OwnerReference>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(spec.namespace.clone()),
        labels: Some(run_labels(&spec.run)),
        owner_references: owner.map(|o| vec![o]),
        ..Default::default()
    }
}

/// The anchor every other object of the run hangs from; `plan_json` says what the run is.
pub fn anchor_config_map(spec: &RunSpec, plan_json: String) -> ConfigMap {
    ConfigMap {
        metadata: meta(names::anchor(&spec.run), spec, None),
        data: Some(BTreeMap::from([("plan.json".into(), plan_json)])),
        ..Default::default()
    }
}

/// The rendezvous token, read by the pods as `NETCHECK_RDZV_TOKEN`.
pub fn token_secret(spec: &RunSpec, token: &str, owner: Option<OwnerReference>) -> Secret {
    Secret {
        metadata: meta(names::anchor(&spec.run), spec, owner),
        type_: Some("Opaque".into()),
        string_data: Some(BTreeMap::from([(names::TOKEN_KEY.into(), token.into())])),
        ..Default::default()
    }
}

/// The headless Service giving `<job>-0.<job>` a DNS record as soon as rank 0 has an IP.
pub fn group_service(spec: &RunSpec, group: &GroupSpec, owner: Option<OwnerReference>) -> Service {
    let mut metadata = meta(group.name(&spec.run), spec, owner);
    metadata.labels = Some(group_labels(&spec.run, group));
    Service {
        metadata,
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            publish_not_ready_addresses: Some(true),
            selector: Some(group_selector(&spec.run, group)),
            ports: Some(
                ports(spec)
                    .map(|(name, port)| ServicePort {
                        name: Some(name.into()),
                        port: port.into(),
                        target_port: Some(IntOrString::Int(port.into())),
                        protocol: Some("TCP".into()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The ports rank 0's pod listens on: the rendezvous, and the fabric check's (`port + 1`)
/// when there is one.
fn ports(spec: &RunSpec) -> impl Iterator<Item = (&'static str, u16)> {
    let fabric = spec
        .fabric_check
        .as_ref()
        .and_then(|_| spec.port.checked_add(1))
        .map(|p| ("fabric", p));
    std::iter::once(("rdzv", spec.port)).chain(fabric)
}

/// One Job per rank of a group (`netcheck-<run>-g<seq>-<rank>`), its one pod pinned to that
/// rank's node by a required node affinity on `metadata.name` (the scheduler still checks
/// resources). One Indexed Job for the whole group could not pin each index to its node: its
/// affinity listed every node of the group, and pod anti-affinity ignores finished pods, so
/// a rank that started late could land on the node where its peer had just finished.
/// The pod's hostname and subdomain give rank 0 its DNS name. `backoffLimit: 0`: a failed
/// pod is not retried; the launcher stops the other ranks of the group.
pub fn group_jobs(spec: &RunSpec, group: &GroupSpec, owner: Option<OwnerReference>) -> Vec<Job> {
    (0..group.nodes.len())
        .map(|rank| rank_job(spec, group, rank, owner.clone()))
        .collect()
}

/// The Job of rank `rank` of `group`.
pub fn rank_job(
    spec: &RunSpec,
    group: &GroupSpec,
    rank: usize,
    owner: Option<OwnerReference>,
) -> Job {
    let group_name = group.name(&spec.run);
    let name = names::rank_job(&group_name, rank);
    let mut labels = group_labels(&spec.run, group);
    labels.insert(names::RANK_LABEL.into(), rank.to_string());
    let mut metadata = meta(name, spec, owner);
    metadata.labels = Some(labels.clone());
    metadata.annotations = Some(group_annotations(group));
    let mut pod_annotations = group_annotations(group);
    // Karpenter must not consolidate a node mid-benchmark; a mesh sidecar would sit in the
    // data path and keep the pod from completing.
    pod_annotations.insert("karpenter.sh/do-not-disrupt".into(), "true".into());
    pod_annotations.insert("sidecar.istio.io/inject".into(), "false".into());
    let mut pod = pod_spec(spec, group, &group_name, rank);
    pod.hostname = Some(names::pod_hostname(&group_name, rank));
    Job {
        metadata,
        spec: Some(JobSpec {
            completions: Some(1),
            parallelism: Some(1),
            backoff_limit: Some(0),
            active_deadline_seconds: Some(spec.deadline_secs),
            ttl_seconds_after_finished: spec.ttl_secs,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    annotations: Some(pod_annotations),
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod_spec(spec: &RunSpec, group: &GroupSpec, name: &str, rank: usize) -> PodSpec {
    let shm_volume = match spec.shm {
        Shm::Memory { bytes } => Volume {
            name: "shm".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".into()),
                size_limit: Some(Quantity(format_quantity(bytes))),
            }),
            ..Default::default()
        },
        Shm::Host => Volume {
            name: "shm".into(),
            host_path: Some(HostPathVolumeSource {
                path: "/dev/shm".into(),
                type_: Some("Directory".into()),
            }),
            ..Default::default()
        },
    };
    PodSpec {
        subdomain: Some(name.into()),
        restart_policy: Some("Never".into()),
        termination_grace_period_seconds: Some(15),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        service_account_name: spec.service_account.clone(),
        affinity: Some(affinity(&group.nodes[rank])),
        tolerations: Some(spec.tolerations.clone()),
        containers: vec![container(spec, group, name, rank)],
        init_containers: install_container(spec).map(|c| vec![c]),
        image_pull_secrets: image_pull_secrets(spec),
        security_context: pod_security_context(spec),
        volumes: Some(
            [
                shm_volume,
                Volume {
                    name: "results".into(),
                    empty_dir: Some(EmptyDirVolumeSource::default()),
                    ..Default::default()
                },
            ]
            .into_iter()
            .chain(extra_volumes(spec))
            .collect(),
        ),
        ..Default::default()
    }
}

/// The init container of `--netcheck-image`: copies netcheck into the shared emptyDir and makes
/// it executable (the image needs `sh`, `cp` and `chmod`, as busybox has them).
fn install_container(spec: &RunSpec) -> Option<Container> {
    let image = spec.image_opts.netcheck_image.as_ref()?;
    Some(Container {
        name: INIT_CONTAINER.into(),
        image: Some(image.clone()),
        image_pull_policy: spec.image_pull_policy.clone(),
        command: Some(vec![
            "sh".into(),
            "-c".into(),
            format!("cp {NETCHECK_IMAGE_BINARY} {INJECTED_BINARY} && chmod 0755 {INJECTED_BINARY}"),
        ]),
        security_context: container_security_context(spec, false),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        volume_mounts: Some(vec![VolumeMount {
            name: "netcheck-bin".into(),
            mount_path: INJECT_DIR.into(),
            ..Default::default()
        }]),
        ..Default::default()
    })
}

fn image_pull_secrets(spec: &RunSpec) -> Option<Vec<LocalObjectReference>> {
    let secrets = &spec.image_opts.pull_secrets;
    (!secrets.is_empty()).then(|| {
        secrets
            .iter()
            .map(|s| LocalObjectReference { name: s.clone() })
            .collect()
    })
}

fn pod_security_context(spec: &RunSpec) -> Option<PodSecurityContext> {
    let o = &spec.image_opts;
    if !o.run_as_non_root && o.run_as_user.is_none() {
        return None;
    }
    Some(PodSecurityContext {
        run_as_non_root: o.run_as_non_root.then_some(true),
        run_as_user: o.run_as_user,
        seccomp_profile: o.run_as_non_root.then(|| SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The container's securityContext: CAP_IPC_LOCK for the benchmark (`with_ipc_lock`), and what
/// `--run-as-non-root` and `--read-only-root-fs` ask for.
fn container_security_context(spec: &RunSpec, with_ipc_lock: bool) -> Option<SecurityContext> {
    let o = &spec.image_opts;
    let ipc_lock = with_ipc_lock && spec.ipc_lock;
    if !ipc_lock && !o.run_as_non_root && !o.read_only_root {
        return None;
    }
    let add = ipc_lock.then(|| vec!["IPC_LOCK".to_string()]);
    let drop = o.run_as_non_root.then(|| vec!["ALL".to_string()]);
    Some(SecurityContext {
        capabilities: (add.is_some() || drop.is_some()).then_some(Capabilities { add, drop }),
        allow_privilege_escalation: o.run_as_non_root.then_some(false),
        read_only_root_filesystem: o.read_only_root.then_some(true),
        ..Default::default()
    })
}

/// The emptyDirs besides `/dev/shm` and `/results`: netcheck's own folder for the init
/// container to fill, and `/tmp` under a read-only root.
fn extra_volumes(spec: &RunSpec) -> Vec<Volume> {
    let empty = |name: &str| Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    };
    let mut volumes = vec![];
    if spec.image_opts.netcheck_image.is_some() {
        volumes.push(empty("netcheck-bin"));
    }
    if spec.image_opts.read_only_root {
        volumes.push(empty("tmp"));
    }
    volumes
}

fn extra_mounts(spec: &RunSpec) -> Vec<VolumeMount> {
    let mut mounts = vec![];
    if spec.image_opts.netcheck_image.is_some() {
        mounts.push(VolumeMount {
            name: "netcheck-bin".into(),
            mount_path: INJECT_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        });
    }
    if spec.image_opts.read_only_root {
        mounts.push(VolumeMount {
            name: "tmp".into(),
            mount_path: "/tmp".into(),
            ..Default::default()
        });
    }
    mounts
}

/// The netcheck the benchmark container runs: the injected copy, or the image's own on PATH.
pub fn netcheck_binary(spec: &RunSpec) -> &'static str {
    if spec.image_opts.netcheck_image.is_some() {
        INJECTED_BINARY
    } else {
        "netcheck"
    }
}

/// The benchmark container's `command` and `args`. Through the image's entrypoint (`Keep`):
/// no command, the binary first in args; `Bypass`: the binary is the command.
pub fn command_and_args(
    spec: &RunSpec,
    group: &GroupSpec,
    name: &str,
) -> (Option<Vec<String>>, Vec<String>) {
    let binary = netcheck_binary(spec).to_string();
    let args = worker_args(spec, group, name);
    match spec.image_opts.entrypoint {
        Entrypoint::Keep => (None, std::iter::once(binary).chain(args).collect()),
        Entrypoint::Bypass => (Some(vec![binary]), args),
    }
}

fn affinity(node: &str) -> Affinity {
    Affinity {
        // matchFields on metadata.name pins to the node without bypassing the scheduler
        // (spec.nodeName would, and then fail on missing resources instead of waiting). The
        // API server allows one value per `metadata.name` requirement (422 otherwise).
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".into(),
                        operator: "In".into(),
                        values: Some(vec![node.to_string()]),
                    }]),
                    ..Default::default()
                }],
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The worker contract: `netcheck run --nnodes N --node-rank K --rendezvous HOST:PORT
/// --out /results [--gpus G] [--expect T] [--fabric-check P] [sweep flags]`, token in
/// `NETCHECK_RDZV_TOKEN`.
pub fn worker_args(spec: &RunSpec, group: &GroupSpec, name: &str) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "run".into(),
        "--nnodes".into(),
        group.nodes.len().to_string(),
        "--node-rank".into(),
        // Expanded by the kubelet from the env var (each rank's Job sets it).
        "$(NODE_RANK)".into(),
        "--rendezvous".into(),
        format!("{}:{}", names::rank0_host(name, &spec.namespace), spec.port),
        "--out".into(),
        RESULTS_DIR.into(),
        "--gpus".into(),
        group.resources.gpus.to_string(),
    ];
    if let Some(expect) = &group.expect {
        args.extend(["--expect".into(), expect.clone()]);
    }
    if let Some(provider) = &spec.fabric_check {
        args.extend(["--fabric-check".into(), provider.clone()]);
    }
    args.extend(spec.worker_args.iter().cloned());
    args
}

/// The `NCCL_NET` name that forces a transport (as AWS's EFA isolation test does); `None`
/// for transports NCCL cannot be pinned to by name.
pub fn nccl_net_for(expect: &str) -> Option<&'static str> {
    match expect {
        "efa" => Some("AWS Libfabric"),
        "ib" | "roce" => Some("IB"),
        "socket" => Some("Socket"),
        _ => None,
    }
}

fn container(spec: &RunSpec, group: &GroupSpec, name: &str, rank: usize) -> Container {
    let field = |path: &str| EnvVarSource {
        field_ref: Some(ObjectFieldSelector {
            field_path: path.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut env = vec![
        EnvVar {
            name: "NODE_RANK".into(),
            value: Some(rank.to_string()),
            ..Default::default()
        },
        EnvVar {
            name: "NODE_NAME".into(),
            value_from: Some(field("spec.nodeName")),
            ..Default::default()
        },
        EnvVar {
            name: "NETCHECK_RDZV_TOKEN".into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: names::anchor(&spec.run),
                    key: names::TOKEN_KEY.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    ];
    // A NCCL_NET the user set with --env wins over the pinned one.
    let pinned = match (&group.expect, spec.strict_net) {
        (Some(expect), true) if !spec.env.iter().any(|(k, _)| k == "NCCL_NET") => {
            nccl_net_for(expect)
        }
        _ => None,
    };
    if let Some(net) = pinned {
        env.push(EnvVar {
            name: "NCCL_NET".into(),
            value: Some(net.into()),
            ..Default::default()
        });
    }
    env.extend(spec.env.iter().map(|(k, v)| EnvVar {
        name: k.clone(),
        value: Some(v.clone()),
        ..Default::default()
    }));
    let r = &group.resources;
    let mut amounts = BTreeMap::from([
        (GPU.to_string(), Quantity(r.gpus.to_string())),
        (
            "memory".to_string(),
            Quantity(format_quantity(r.memory_bytes)),
        ),
    ]);
    if r.efa > 0 {
        amounts.insert(EFA.into(), Quantity(r.efa.to_string()));
    }
    if r.hugepages_bytes > 0 {
        amounts.insert(
            HUGEPAGES_2MI.into(),
            Quantity(format_quantity(r.hugepages_bytes)),
        );
    }
    let (command, args) = command_and_args(spec, group, name);
    Container {
        name: names::CONTAINER.into(),
        image: Some(spec.image.clone()),
        image_pull_policy: spec.image_pull_policy.clone(),
        command,
        args: Some(args),
        env: Some(env),
        ports: Some(
            ports(spec)
                .map(|(name, port)| k8s_openapi::api::core::v1::ContainerPort {
                    name: Some(name.into()),
                    container_port: port.into(),
                    protocol: Some("TCP".into()),
                    ..Default::default()
                })
                .collect(),
        ),
        // Requests equal limits: Kubernetes requires it for huge pages and extended resources.
        resources: Some(ResourceRequirements {
            limits: Some(amounts.clone()),
            requests: Some(amounts),
            ..Default::default()
        }),
        security_context: container_security_context(spec, true),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        volume_mounts: Some(
            [
                VolumeMount {
                    name: "shm".into(),
                    mount_path: "/dev/shm".into(),
                    ..Default::default()
                },
                VolumeMount {
                    name: "results".into(),
                    mount_path: RESULTS_DIR.into(),
                    ..Default::default()
                },
            ]
            .into_iter()
            .chain(extra_mounts(spec))
            .collect(),
        ),
        ..Default::default()
    }
}

/// One YAML document; join them with `---` for `kubectl apply -f -`.
pub fn to_yaml<T: serde::Serialize>(object: &T) -> String {
    serde_saphyr::to_string(object).expect("Kubernetes objects serialize to YAML")
}
