//! The one type that talks to the Kubernetes API. Every call the launcher makes is a method
//! here, so tests can put a fake API server behind it (a tower-test mock, or a real API server
//! started by the test suite) and exercise the same code paths.

use std::collections::HashMap;
use std::path::PathBuf;

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt, stream::BoxStream};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod, Secret, Service};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::names;
use super::nodes::{GPU, GpuUse, parse_quantity};
use crate::error::{Error, Result};

/// Where the client configuration comes from (`--kubeconfig`, `--context`, `--namespace`).
#[derive(Debug, Clone, Default)]
pub struct Connect {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub namespace: Option<String>,
}

const CONFIG_HINT: &str = "pass --kubeconfig FILE or set KUBECONFIG; on EKS: \
     `aws eks update-kubeconfig --name CLUSTER`";

#[derive(Clone)]
pub struct KubeClient {
    client: kube::Client,
    namespace: String,
    /// For messages: the API server this client talks to.
    server: String,
}

/// One permission the launcher needs, checked with a SelfSubjectAccessReview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub group: &'static str,
    pub resource: &'static str,
    pub subresource: Option<&'static str>,
    pub verb: &'static str,
    /// Checked in the run's namespace (false: cluster-wide).
    pub namespaced: bool,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            self.group
        };
        let sub = self
            .subresource
            .map(|s| format!("/{s}"))
            .unwrap_or_default();
        write!(f, "{} {}{sub} ({group})", self.verb, self.resource)
    }
}

/// What `netcheck launch` does with the API; deploy/rbac.yaml grants exactly this (plus the
/// optional cluster-wide `list pods`, which only sharpens preflight).
pub const REQUIRED_ACCESS: &[Access] = &[
    access("", "nodes", None, "list", false),
    access("", "nodes", None, "get", false),
    access("", "configmaps", None, "create", true),
    access("", "configmaps", None, "delete", true),
    access("", "configmaps", None, "list", true),
    access("", "secrets", None, "create", true),
    access("", "secrets", None, "delete", true),
    access("batch", "jobs", None, "create", true),
    access("batch", "jobs", None, "delete", true),
    access("batch", "jobs", None, "list", true),
    access("", "services", None, "create", true),
    access("", "services", None, "delete", true),
    access("", "services", None, "list", true),
    access("", "pods", None, "list", true),
    access("", "pods", Some("log"), "get", true),
    access("", "events", None, "list", true),
];

const fn access(
    group: &'static str,
    resource: &'static str,
    subresource: Option<&'static str>,
    verb: &'static str,
    namespaced: bool,
) -> Access {
    Access {
        group,
        resource,
        subresource,
        verb,
        namespaced,
    }
}

impl KubeClient {
    /// From `--kubeconfig`, else KUBECONFIG or ~/.kube/config, else the in-cluster service
    /// account. No configuration at all is exit 3 with what to do.
    pub async fn connect(c: &Connect) -> Result<KubeClient> {
        let options = KubeConfigOptions {
            context: c.context.clone(),
            ..Default::default()
        };
        let config = match &c.kubeconfig {
            Some(path) => {
                let kubeconfig = Kubeconfig::read_from(path).map_err(|e| {
                    Error::missing(
                        format!("cannot read kubeconfig `{}`: {e}", path.display()),
                        CONFIG_HINT,
                    )
                })?;
                from_kubeconfig(kubeconfig, &options).await?
            }
            None => match Kubeconfig::read() {
                Ok(kubeconfig) => from_kubeconfig(kubeconfig, &options).await?,
                Err(read_error) if c.context.is_some() => {
                    return Err(Error::missing(
                        format!("--context given but no kubeconfig could be read: {read_error}"),
                        CONFIG_HINT,
                    ));
                }
                Err(read_error) => kube::Config::incluster().map_err(|_| {
                    Error::missing(
                        format!(
                            "no Kubernetes configuration: no kubeconfig ({read_error}) \
                             and not running in a pod"
                        ),
                        CONFIG_HINT,
                    )
                })?,
            },
        };
        let namespace = c
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config).map_err(|e| Error::Infrastructure {
            what: format!("cannot set up a client for the API server at {server}: {e}"),
            hint: Some("check the cluster's certificate data in the kubeconfig".into()),
        })?;
        Ok(KubeClient {
            client,
            namespace,
            server,
        })
    }

    /// Wraps any kube client (tests: a mock service or a local API server).
    pub fn new(client: kube::Client, namespace: impl Into<String>) -> KubeClient {
        KubeClient {
            client,
            namespace: namespace.into(),
            server: "the API server".into(),
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The permissions of `checks` the current user lacks.
    pub async fn denied(&self, checks: &[Access]) -> Result<Vec<Access>> {
        let api: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let mut denied = vec![];
        for check in checks {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        group: Some(check.group.into()),
                        resource: Some(check.resource.into()),
                        subresource: check.subresource.map(str::to_string),
                        verb: Some(check.verb.into()),
                        namespace: check.namespaced.then(|| self.namespace.clone()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            };
            let answer = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| self.error("cannot check permissions", e))?;
            if !answer.status.is_some_and(|s| s.allowed) {
                denied.push(check.clone());
            }
        }
        Ok(denied)
    }

    pub async fn node(&self, name: &str) -> Result<Option<Node>> {
        Api::<Node>::all(self.client.clone())
            .get_opt(name)
            .await
            .map_err(|e| self.error(&format!("cannot read node `{name}`"), e))
    }

    pub async fn nodes(&self, selector: &str) -> Result<Vec<Node>> {
        let list = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| match e {
                kube::Error::Api(s) if s.code == 400 => bad_selector(selector, &s.message),
                e => self.error(&format!("cannot list nodes matching `{selector}`"), e),
            })?;
        Ok(list.items)
    }

    /// GPUs requested by pods bound to each node and not finished, cluster-wide, and which
    /// pods. `None` when the user may not list pods outside the namespace (the check is then
    /// skipped).
    pub async fn gpus_in_use(&self) -> Result<Option<HashMap<String, GpuUse>>> {
        let lp = ListParams::default().fields("status.phase!=Succeeded,status.phase!=Failed");
        let pods = match Api::<Pod>::all(self.client.clone()).list(&lp).await {
            Ok(list) => list.items,
            Err(kube::Error::Api(s)) if s.code == 403 => return Ok(None),
            Err(e) => return Err(self.error("cannot list pods to count GPUs in use", e)),
        };
        let mut used: HashMap<String, GpuUse> = HashMap::new();
        for pod in pods {
            let Some(spec) = &pod.spec else { continue };
            let Some(node) = &spec.node_name else {
                continue;
            };
            let gpus: u64 = spec
                .containers
                .iter()
                .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get(GPU))
                .filter_map(|q| parse_quantity(&q.0))
                .sum();
            if gpus > 0 {
                let meta = &pod.metadata;
                let leftover = meta
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(names::RUN_LABEL))
                    .map(|run| format!(", of netcheck run {run} (running, or a leftover)"))
                    .unwrap_or_default();
                let entry = used.entry(node.clone()).or_default();
                entry.gpus += gpus as u32;
                entry.pods.push(format!(
                    "{}/{}: {gpus} GPU(s){leftover}",
                    meta.namespace.as_deref().unwrap_or("?"),
                    meta.name.as_deref().unwrap_or("?")
                ));
            }
        }
        Ok(Some(used))
    }

    /// Creates a namespaced object and returns what the server stored (with its uid).
    pub async fn create<K>(&self, object: &K) -> Result<K>
    where
        K: Namespaced + Serialize,
    {
        let kind = K::kind(&Default::default()).to_string();
        let name = object.meta().name.clone().unwrap_or_default();
        self.api::<K>()
            .create(&PostParams::default(), object)
            .await
            .map_err(|e| self.error(&format!("cannot create {kind} `{name}`"), e))
    }

    /// Deletes an object, its dependents in the background; already gone is fine.
    pub async fn delete<K>(&self, name: &str) -> Result<()>
    where
        K: Namespaced,
    {
        // Background, never the default: deleting a batch/v1 Job orphans its pods otherwise.
        self.delete_with::<K>(name, &DeleteParams::background(), &[404])
            .await
    }

    /// Deletes an object only if it is still the one with `uid` (a precondition the API server
    /// checks): never another run's object of the same name. Gone, or replaced, is fine.
    pub async fn delete_uid<K>(&self, name: &str, uid: &str) -> Result<()>
    where
        K: Namespaced,
    {
        let mut dp = DeleteParams::background();
        dp.preconditions = Some(kube::api::Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        });
        // 404: gone already; 409: the name now belongs to another object.
        self.delete_with::<K>(name, &dp, &[404, 409]).await
    }

    /// Deletes `name` with `dp`; an API answer with one of the `fine` codes is not an error.
    async fn delete_with<K>(&self, name: &str, dp: &DeleteParams, fine: &[u16]) -> Result<()>
    where
        K: Namespaced,
    {
        match self.api::<K>().delete(name, dp).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if fine.contains(&s.code) => Ok(()),
            Err(e) => {
                let kind = K::kind(&Default::default()).to_string();
                Err(self.error(&format!("cannot delete {kind} `{name}`"), e))
            }
        }
    }

    /// Objects of one kind carrying a label selector.
    pub async fn labelled<K>(&self, selector: &str) -> Result<Vec<K>>
    where
        K: Namespaced,
    {
        let kind = K::kind(&Default::default()).to_string();
        self.api::<K>()
            .list(&ListParams::default().labels(selector))
            .await
            .map(|l| l.items)
            .map_err(|e| self.error(&format!("cannot list {kind}s matching `{selector}`"), e))
    }

    /// The object of one kind with this name, if any, through `list` (a field selector on the
    /// name): the launcher's role may list ConfigMaps but not get them.
    pub async fn named<K>(&self, name: &str) -> Result<Option<K>>
    where
        K: Namespaced,
    {
        let kind = K::kind(&Default::default()).to_string();
        self.api::<K>()
            .list(&ListParams::default().fields(&format!("metadata.name={name}")))
            .await
            .map(|l| l.items.into_iter().next())
            .map_err(|e| self.error(&format!("cannot list {kind} `{name}`"), e))
    }

    pub async fn pods(&self, selector: &str) -> Result<Vec<Pod>> {
        self.api::<Pod>()
            .list(&ListParams::default().labels(selector))
            .await
            .map(|l| l.items)
            .map_err(|e| self.error("cannot list the run's pods", e))
    }

    /// The log so far (the container's stdout and stderr).
    pub async fn log(&self, pod: &str) -> Result<String> {
        let lp = LogParams {
            container: Some(names::CONTAINER.into()),
            ..Default::default()
        };
        self.api::<Pod>()
            .logs(pod, &lp)
            .await
            .map_err(|e| self.error(&format!("cannot read the log of pod `{pod}`"), e))
    }

    /// The log line by line as it is written, until the container ends.
    pub async fn follow_log(&self, pod: &str) -> Result<BoxStream<'static, Result<String>>> {
        let lp = LogParams {
            container: Some(names::CONTAINER.into()),
            follow: true,
            ..Default::default()
        };
        let reader = self
            .api::<Pod>()
            .log_stream(pod, &lp)
            .await
            .map_err(|e| self.error(&format!("cannot follow the log of pod `{pod}`"), e))?;
        let pod = pod.to_string();
        Ok(reader
            .lines()
            .map_err(move |e| Error::infra(format!("log of pod `{pod}` broke off: {e}")))
            .boxed())
    }

    /// Pods of the namespace matching a label selector (all pods for `None`), for
    /// `analyze --kube`.
    pub async fn list_pods(&self, selector: Option<&str>) -> Result<Vec<Pod>> {
        let mut lp = ListParams::default();
        if let Some(selector) = selector {
            lp = lp.labels(selector);
        }
        let what = match selector {
            Some(s) => format!(
                "cannot list pods matching `{s}` in namespace `{}`",
                self.namespace
            ),
            None => format!("cannot list pods in namespace `{}`", self.namespace),
        };
        self.api::<Pod>()
            .list(&lp)
            .await
            .map(|l| l.items)
            .map_err(|e| match (e, selector) {
                (kube::Error::Api(s), Some(selector)) if s.code == 400 => {
                    bad_selector(selector, &s.message)
                }
                (e, _) => self.error(&what, e),
            })
    }

    /// One pod of the namespace; `None` when there is none of that name.
    pub async fn pod(&self, name: &str) -> Result<Option<Pod>> {
        self.api::<Pod>()
            .get_opt(name)
            .await
            .map_err(|e| self.error(&format!("cannot read pod `{name}`"), e))
    }

    /// Any container's log as a byte stream (`params` says which container, since when,
    /// the previous instance, whether to follow). API errors stay kube errors, so the
    /// caller can tell a container that is still starting (400) from a denial.
    pub async fn log_reader(
        &self,
        pod: &str,
        params: &LogParams,
    ) -> std::result::Result<impl futures::AsyncBufRead + Send + Unpin + 'static, kube::Error> {
        self.api::<Pod>().log_stream(pod, params).await
    }

    /// Our error for a kube error (what we were doing, what the server said, what to do).
    pub fn describe(&self, what: &str, e: kube::Error) -> Error {
        self.error(what, e)
    }

    /// Warning events about one object, oldest first: why a pod is not scheduled, cannot
    /// pull its image, or why a Job created no pods.
    pub async fn warnings(&self, kind: &str, name: &str) -> Result<Vec<String>> {
        let lp = ListParams::default().fields(&format!(
            "involvedObject.kind={kind},involvedObject.name={name},type=Warning"
        ));
        let mut events = self
            .api::<Event>()
            .list(&lp)
            .await
            .map_err(|e| self.error(&format!("cannot read the events of {kind} `{name}`"), e))?
            .items;
        events.sort_by(|a, b| {
            let t = |e: &Event| e.last_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
        });
        Ok(events
            .into_iter()
            .map(|e| {
                let reason = e.reason.unwrap_or_default();
                let message = e.message.unwrap_or_default();
                format!("{reason}: {}", message.trim())
            })
            .collect())
    }

    /// Deletes every object of the run, also those whose create call was cut short by Ctrl-C
    /// (found by label; the Secret by its name), and returns how many were listed.
    pub async fn delete_run(&self, run: &str) -> Result<usize> {
        let selector = names::run_selector(run);
        let mut deleted = 0;
        deleted += self.delete_labelled::<Job>(&selector).await?;
        deleted += self.delete_labelled::<Service>(&selector).await?;
        // By name, not by listing: `list secrets` would read every Secret in the namespace.
        self.delete::<Secret>(&names::anchor(run)).await?;
        deleted += self.delete_labelled::<ConfigMap>(&selector).await?;
        Ok(deleted)
    }

    async fn delete_labelled<K>(&self, selector: &str) -> Result<usize>
    where
        K: Namespaced,
    {
        let kind = K::kind(&Default::default()).to_string();
        let items = self
            .api::<K>()
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| self.error(&format!("cannot list {kind}s to clean up"), e))?
            .items;
        for item in &items {
            if let Some(name) = &item.meta().name {
                self.delete::<K>(name).await?;
            }
        }
        Ok(items.len())
    }

    /// Turns a kube error into ours: what we were doing, what the server said, what to do.
    fn error(&self, what: &str, e: kube::Error) -> Error {
        match e {
            kube::Error::Api(s) if s.code == 401 => Error::missing(
                format!("{what}: not authenticated ({})", s.message),
                "refresh your credentials; on EKS: `aws eks update-kubeconfig --name CLUSTER`",
            ),
            kube::Error::Api(s) if s.code == 403 => Error::missing(
                format!("{what}: forbidden ({})", s.message),
                "grant the permissions in deploy/rbac.yaml to your user or service account",
            ),
            kube::Error::Api(s) if s.code == 404 && s.message.contains("namespaces") => {
                Error::missing(
                    format!("{what}: {}", s.message),
                    format!(
                        "create the namespace (`kubectl create namespace {}`) or pass --namespace",
                        self.namespace
                    ),
                )
            }
            kube::Error::Api(s) => Error::Infrastructure {
                what: format!("{what}: {} ({} {})", s.message, s.code, s.reason),
                hint: None,
            },
            kube::Error::Auth(e) => Error::missing(
                format!("{what}: cannot authenticate: {e}"),
                "check the credentials of the kubeconfig user (e.g. `aws sts get-caller-identity`)",
            ),
            // Configured but not answering (refused, DNS, TLS, timeout): infrastructure,
            // exit 4 (docs/launch.md's table); no configuration at all is exit 3.
            other => Error::Infrastructure {
                what: format!("{what}: cannot reach {}: {other}", self.server),
                hint: Some("check that the cluster is reachable: `kubectl get nodes`".into()),
            },
        }
    }
}

/// A label selector the API server cannot parse (one `selector::check` let through): the
/// user's input (exit 2).
fn bad_selector(selector: &str, said: &str) -> Error {
    super::selector::invalid(selector, &format!("the API server says: {said}"))
}

/// A namespaced object kind the client creates, lists and deletes (every namespaced
/// k8s-openapi type).
pub trait Namespaced:
    kube::Resource<Scope = NamespaceResourceScope, DynamicType: Default>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> Namespaced for K where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType: Default>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
{
}

async fn from_kubeconfig(
    kubeconfig: Kubeconfig,
    options: &KubeConfigOptions,
) -> Result<kube::Config> {
    kube::Config::from_custom_kubeconfig(kubeconfig, options)
        .await
        .map_err(|e| {
            Error::missing(
                format!("cannot use the kubeconfig: {e}"),
                "list the contexts with `kubectl config get-contexts` and pick one with --context",
            )
        })
}
