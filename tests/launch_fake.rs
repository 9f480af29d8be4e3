//! A fake Kubernetes API server for the `launch` flow tests, behind kube's tower-test mock.
//!
//! It keeps objects in memory and plays the parts of the cluster the launcher relies on: the
//! Job controller (an Indexed Job creates one pod per node, fails when a pod fails and deletes
//! the others), the kubelet (pods move Pending → Running → exited, one step per pod list, as
//! the test's script says), the garbage collector (owner references cascade, background or
//! orphan as the delete asked), events, logs and SelfSubjectAccessReviews. Tests check what is
//! left afterwards: a run must leave nothing behind.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::Notify;

use netcheck::launch::kube::KubeClient;

/// What a pod of a test does.
#[derive(Debug, Clone)]
pub enum Behavior {
    /// Starts, prints `log`, exits with `code`.
    Exit { code: i32, log: String },
    /// Starts and is killed for memory.
    OomKilled,
    /// Never placed; the scheduler's message.
    Unschedulable(String),
    /// Its image cannot be pulled.
    ImagePull,
    /// Starts, prints `log`, never ends.
    Hang { log: String },
}

/// Where a pod is: its group's nodes (planning order), its node rank and its node.
pub struct PodCtx<'a> {
    pub nodes: &'a [String],
    pub index: usize,
}

type Script = dyn Fn(&PodCtx) -> Behavior + Send + Sync;

#[derive(Clone)]
pub struct Fake {
    state: Arc<Mutex<State>>,
    /// Notified the first time a pod is reported Running.
    pub running: Arc<Notify>,
}

struct Pod {
    value: Value,
    behavior: Behavior,
    ticks: u32,
    log: String,
}

struct State {
    nodes: Vec<Value>,
    /// Namespaced objects by (resource, name); pods are kept apart.
    objects: BTreeMap<(String, String), Value>,
    pods: BTreeMap<String, Pod>,
    events: Vec<Value>,
    script: Arc<Script>,
    /// (resource, verb) pairs the SelfSubjectAccessReview denies.
    denied: Vec<(String, String)>,
    /// (method, path fragment, status, times): answer matching requests with this error.
    fail: Option<(Method, String, u16, u32)>,
    /// Admission refuses every pod a Job creates, with this message.
    refuse_pods: Option<String>,
    /// GPUs requested by other workloads' pods, per node.
    busy_gpus: BTreeMap<String, u32>,
    requests: Vec<String>,
    created: Vec<(String, Value)>,
    uid: u64,
    announced_running: bool,
}

/// A node as EKS shows it: allocatable GPUs, EFA, huge pages; Ready; instance type and zone.
pub fn node(name: &str, instance_type: &str, gpus: u32, efa: u32) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": {
            "kubernetes.io/hostname": name,
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": "us-west-2a",
            "nvidia.com/gpu.product": "NVIDIA-L4",
        }},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "47", "memory": "192000000Ki", "nvidia.com/gpu": gpus.to_string(),
                            "vpc.amazonaws.com/efa": efa.to_string(), "hugepages-2Mi": "10256Mi"},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    })
}

impl Fake {
    pub fn new(
        nodes: Vec<Value>,
        script: impl Fn(&PodCtx) -> Behavior + Send + Sync + 'static,
    ) -> Fake {
        Fake {
            state: Arc::new(Mutex::new(State {
                nodes,
                objects: BTreeMap::new(),
                pods: BTreeMap::new(),
                events: vec![],
                script: Arc::new(script),
                denied: vec![],
                fail: None,
                refuse_pods: None,
                busy_gpus: BTreeMap::new(),
                requests: vec![],
                created: vec![],
                uid: 0,
                announced_running: false,
            })),
            running: Arc::new(Notify::new()),
        }
    }

    pub fn deny(&self, resource: &str, verb: &str) {
        self.state().denied.push((resource.into(), verb.into()));
    }

    /// Answers the next `times` requests matching `method` and `path_fragment` with `status`.
    pub fn fail_on(&self, method: Method, path_fragment: &str, status: u16, times: u32) {
        self.state().fail = Some((method, path_fragment.into(), status, times));
    }

    /// Jobs create no pods; each gets a FailedCreate event with `message`.
    pub fn refuse_pods(&self, message: &str) {
        self.state().refuse_pods = Some(message.into());
    }

    pub fn busy(&self, node: &str, gpus: u32) {
        self.state().busy_gpus.insert(node.into(), gpus);
    }

    /// Namespaced objects and pods still there.
    pub fn left(&self) -> Vec<String> {
        let s = self.state();
        s.objects
            .keys()
            .map(|(r, n)| format!("{r}/{n}"))
            .chain(s.pods.keys().map(|n| format!("pods/{n}")))
            .collect()
    }

    /// Every request so far, as `METHOD path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.state().requests.clone()
    }

    /// Every object of one resource (e.g. `jobs`) the launcher created, deleted or not.
    pub fn created(&self, resource: &str) -> Vec<Value> {
        self.state()
            .created
            .iter()
            .filter(|(r, _)| r == resource)
            .map(|(_, v)| v.clone())
            .collect()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// A KubeClient whose every request this fake answers (through kube's tower-test mock).
    pub fn client(&self, namespace: &str) -> KubeClient {
        let (service, handle) =
            tower_test::mock::pair::<Request<kube::client::Body>, Response<kube::client::Body>>();
        let fake = self.clone();
        tokio::spawn(async move {
            let mut handle = std::pin::pin!(handle);
            while let Some((request, send)) = handle.next_request().await {
                let (parts, body) = request.into_parts();
                let bytes = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let (status, reply) = fake.respond(&parts.method, &parts.uri, &bytes);
                let response = Response::builder()
                    .status(status)
                    .body(kube::client::Body::from(reply))
                    .unwrap();
                send.send_response(response);
            }
        });
        KubeClient::new(kube::Client::new(service, namespace.to_string()), namespace)
    }

    /// Serves the fake over HTTP/1.1 on a loopback port (for the netcheck binary, through a
    /// kubeconfig), from a thread of its own.
    pub fn serve_http(&self) -> std::net::SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let fake = self.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(serve_connection(fake.clone(), stream));
                }
            });
        });
        addr
    }

    /// One request: the status and the JSON (or log text) to answer with.
    pub fn respond(&self, method: &Method, uri: &http::Uri, body: &[u8]) -> (StatusCode, Vec<u8>) {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let (status, reply) = self.handle(method, uri, body);
        let bytes = match reply {
            Reply::Json(v) => serde_json::to_vec(&v).unwrap(),
            Reply::Text(t) => t.into_bytes(),
        };
        (status, bytes)
    }

    fn handle(&self, method: &Method, uri: &http::Uri, body: Value) -> (StatusCode, Reply) {
        let path = uri.path().to_string();
        let query: BTreeMap<String, String> = uri
            .query()
            .unwrap_or("")
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), decode(v)))
            .collect();
        let mut s = self.state();
        s.requests.push(format!("{method} {}", uri));
        if let Some((m, fragment, code, times)) = &mut s.fail
            && m == method
            && path.contains(fragment.as_str())
            && *times > 0
        {
            *times -= 1;
            return error(*code, "injected failure");
        }
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (method.clone(), segments.as_slice()) {
            (
                Method::POST,
                [
                    "apis",
                    "authorization.k8s.io",
                    "v1",
                    "selfsubjectaccessreviews",
                ],
            ) => {
                let attrs = &body["spec"]["resourceAttributes"];
                let resource = attrs["resource"].as_str().unwrap_or("").to_string();
                let verb = attrs["verb"].as_str().unwrap_or("").to_string();
                let allowed = !s.denied.contains(&(resource, verb));
                let mut review = body.clone();
                review["status"] = json!({"allowed": allowed});
                (StatusCode::CREATED, Reply::Json(review))
            }
            (Method::GET, ["api", "v1", "nodes"]) => {
                let selector = query.get("labelSelector").cloned().unwrap_or_default();
                let items: Vec<Value> = s
                    .nodes
                    .iter()
                    .filter(|n| matches(n, &selector))
                    .cloned()
                    .collect();
                ok(list("NodeList", items))
            }
            (Method::GET, ["api", "v1", "nodes", name]) => {
                match s.nodes.iter().find(|n| n["metadata"]["name"] == *name) {
                    Some(n) => ok(n.clone()),
                    None => error(404, &format!("nodes \"{name}\" not found")),
                }
            }
            (Method::GET, ["api", "v1", "pods"]) => {
                let items: Vec<Value> = s
                    .busy_gpus
                    .iter()
                    .map(|(node, gpus)| other_workload(node, *gpus))
                    .collect();
                ok(list("PodList", items))
            }
            (Method::GET, ["api", "v1", "namespaces", _, "pods"]) => {
                s.tick(&self.running);
                let selector = query.get("labelSelector").cloned().unwrap_or_default();
                let items: Vec<Value> = s
                    .pods
                    .values()
                    .map(|p| p.value.clone())
                    .filter(|p| matches(p, &selector))
                    .collect();
                ok(list("PodList", items))
            }
            (Method::GET, ["api", "v1", "namespaces", _, "pods", name, "log"]) => {
                match s.pods.get(*name) {
                    Some(p) if p.ticks >= 2 => (StatusCode::OK, Reply::Text(p.log.clone())),
                    Some(_) => error(400, "container \"netcheck\" is waiting to start"),
                    None => error(404, &format!("pods \"{name}\" not found")),
                }
            }
            (Method::GET, ["api", "v1", "namespaces", _, "events"]) => {
                let fields = query.get("fieldSelector").cloned().unwrap_or_default();
                let items: Vec<Value> = s
                    .events
                    .iter()
                    .filter(|e| {
                        fields.split(',').all(|f| match f.split_once('=') {
                            Some(("involvedObject.name", v)) => e["involvedObject"]["name"] == v,
                            Some(("involvedObject.kind", v)) => e["involvedObject"]["kind"] == v,
                            Some(("type", v)) => e["type"] == v,
                            _ => true,
                        })
                    })
                    .cloned()
                    .collect();
                ok(list("EventList", items))
            }
            (Method::POST, ["api", "v1", "namespaces", ns, resource])
            | (Method::POST, ["apis", "batch", "v1", "namespaces", ns, resource]) => {
                s.create(ns, resource, body)
            }
            (Method::GET, ["api", "v1", "namespaces", _, resource])
            | (Method::GET, ["apis", "batch", "v1", "namespaces", _, resource]) => {
                let selector = query.get("labelSelector").cloned().unwrap_or_default();
                let items: Vec<Value> = s
                    .objects
                    .iter()
                    .filter(|((r, _), v)| r == resource && matches(v, &selector))
                    .map(|(_, v)| v.clone())
                    .collect();
                ok(list("List", items))
            }
            (Method::DELETE, ["api", "v1", "namespaces", _, resource, name])
            | (Method::DELETE, ["apis", "batch", "v1", "namespaces", _, resource, name]) => {
                let background = body["propagationPolicy"] == "Background"
                    || (body["propagationPolicy"].is_null() && *resource != "jobs");
                s.delete(resource, name, background)
            }
            _ => error(404, &format!("the fake does not serve {method} {path}")),
        }
    }
}

/// A minimal HTTP/1.1 keep-alive loop: request line, headers, a Content-Length body.
async fn serve_connection(fake: Fake, stream: tokio::net::TcpStream) -> std::io::Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::io::BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if stream.read_line(&mut request_line).await? == 0 {
            return Ok(());
        }
        let mut length = 0;
        loop {
            let mut line = String::new();
            stream.read_line(&mut line).await?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        stream.read_exact(&mut body).await?;
        let mut parts = request_line.split_whitespace();
        let method: Method = parts.next().unwrap_or("GET").parse().unwrap();
        let uri: http::Uri = parts.next().unwrap_or("/").parse().unwrap();
        let (status, reply) = fake.respond(&method, &uri, &body);
        let head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or("Unknown"),
            reply.len()
        );
        let out = stream.get_mut();
        out.write_all(head.as_bytes()).await?;
        out.write_all(&reply).await?;
        out.flush().await?;
    }
}

enum Reply {
    Json(Value),
    Text(String),
}

fn ok(v: Value) -> (StatusCode, Reply) {
    (StatusCode::OK, Reply::Json(v))
}

fn error(code: u16, message: &str) -> (StatusCode, Reply) {
    let reason = match code {
        404 => "NotFound",
        403 => "Forbidden",
        409 => "AlreadyExists",
        _ => "InternalError",
    };
    (
        StatusCode::from_u16(code).unwrap(),
        Reply::Json(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": message, "reason": reason, "code": code}),
        ),
    )
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "1"}, "items": items})
}

fn decode(v: &str) -> String {
    let mut out = Vec::new();
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// Equality (`k=v`), inequality (`k!=v`) and existence (`k`) selectors, comma-joined.
fn matches(object: &Value, selector: &str) -> bool {
    let labels = &object["metadata"]["labels"];
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        if let Some((k, v)) = term.split_once("!=") {
            labels[k] != v
        } else if let Some((k, v)) = term.split_once('=') {
            labels[k] == v
        } else {
            !labels[term].is_null()
        }
    })
}

fn other_workload(node: &str, gpus: u32) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": format!("training-{node}"), "namespace": "ml"},
           "spec": {"nodeName": node, "containers": [{"name": "t", "resources": {
               "requests": {"nvidia.com/gpu": gpus.to_string()}}}]},
           "status": {"phase": "Running"}})
}

impl State {
    fn next_uid(&mut self) -> String {
        self.uid += 1;
        format!("uid-{}", self.uid)
    }

    fn create(&mut self, ns: &str, resource: &str, mut body: Value) -> (StatusCode, Reply) {
        let name = body["metadata"]["name"].as_str().unwrap_or("").to_string();
        if self
            .objects
            .contains_key(&(resource.to_string(), name.clone()))
        {
            return error(409, &format!("{resource} \"{name}\" already exists"));
        }
        let uid = self.next_uid();
        body["metadata"]["uid"] = json!(uid);
        body["metadata"]["namespace"] = json!(ns);
        body["metadata"]["resourceVersion"] = json!("1");
        if resource == "jobs" {
            self.start_job(ns, &body);
        }
        self.created.push((resource.to_string(), body.clone()));
        self.objects
            .insert((resource.to_string(), name), body.clone());
        (StatusCode::CREATED, Reply::Json(body))
    }

    /// The Job controller: one pod per completion index, named and labelled as it names them.
    fn start_job(&mut self, ns: &str, job: &Value) {
        let job_name = job["metadata"]["name"].as_str().unwrap();
        let nodes: Vec<String> = job["metadata"]["annotations"]["netcheck.io/nodes"]
            .as_str()
            .unwrap()
            .split(',')
            .map(str::to_string)
            .collect();
        if let Some(message) = &self.refuse_pods {
            let mut e = event(job_name, "FailedCreate", message);
            e["involvedObject"]["kind"] = json!("Job");
            self.events.push(e);
            return;
        }
        let template = &job["spec"]["template"];
        // One Job per rank: its one pod is that rank's.
        let rank: Option<usize> = job["metadata"]["labels"]["netcheck.io/rank"]
            .as_str()
            .and_then(|r| r.parse().ok());
        for (index, node) in nodes.iter().enumerate() {
            if rank.is_some_and(|r| r != index) {
                continue;
            }
            let behavior = (self.script)(&PodCtx {
                nodes: &nodes,
                index,
            });
            let name = format!("{job_name}-{index}-x{}", self.uid);
            let mut labels = template["metadata"]["labels"].clone();
            labels["batch.kubernetes.io/job-name"] = json!(job_name);
            let mut annotations = template["metadata"]["annotations"].clone();
            annotations["batch.kubernetes.io/job-completion-index"] = json!(index.to_string());
            let mut spec = template["spec"].clone();
            if !matches!(behavior, Behavior::Unschedulable(_)) {
                spec["nodeName"] = json!(node);
            }
            if spec["hostname"].is_null() {
                spec["hostname"] = json!(format!("{job_name}-{index}"));
            }
            let uid = self.next_uid();
            let value = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns, "uid": uid, "labels": labels,
                             "annotations": annotations,
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                                  "name": job_name, "uid": job["metadata"]["uid"]}]},
                "spec": spec,
                "status": {"phase": "Pending"}
            });
            let log = match &behavior {
                Behavior::Exit { log, .. } | Behavior::Hang { log } => log.clone(),
                _ => String::new(),
            };
            self.pods.insert(
                name,
                Pod {
                    value,
                    behavior,
                    ticks: 0,
                    log,
                },
            );
        }
    }

    /// One kubelet step for every pod, then the Job controller's reaction to failures.
    fn tick(&mut self, running: &Notify) {
        let mut new_events = vec![];
        let mut any_running = false;
        for (name, pod) in self.pods.iter_mut() {
            pod.ticks += 1;
            let t = pod.ticks;
            let status = match &pod.behavior {
                Behavior::Unschedulable(message) => {
                    if t == 1 {
                        new_events.push(event(name, "FailedScheduling", message));
                    }
                    json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                           "reason": "Unschedulable", "message": message}]})
                }
                Behavior::ImagePull => {
                    if t == 2 {
                        new_events.push(event(
                            name,
                            "Failed",
                            "Failed to pull image \"registry.invalid/netcheck:1\": not found",
                        ));
                    }
                    if t == 1 {
                        container("waiting", json!({"reason": "ContainerCreating"}))
                    } else {
                        container(
                            "waiting",
                            json!({"reason": "ImagePullBackOff", "message": "Back-off pulling image \"registry.invalid/netcheck:1\""}),
                        )
                    }
                }
                Behavior::Exit { code, .. } if t >= 3 => container(
                    "terminated",
                    json!({
                    "exitCode": code, "reason": if *code == 0 { "Completed" } else { "Error" }}),
                ),
                Behavior::OomKilled if t >= 3 => container(
                    "terminated",
                    json!({"exitCode": 137, "reason": "OOMKilled"}),
                ),
                _ if t >= 2 => {
                    any_running = true;
                    container("running", json!({"startedAt": "2026-11-30T12:00:00Z"}))
                }
                _ => container("waiting", json!({"reason": "ContainerCreating"})),
            };
            pod.value["status"] = status;
        }
        self.events.extend(new_events);
        if any_running && !self.announced_running {
            self.announced_running = true;
            running.notify_one();
        }
        // backoffLimit 0: a failed pod fails its Job, which deletes the Job's other active pods.
        let failed_jobs: Vec<String> = self
            .pods
            .values()
            .filter(|p| {
                p.value["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]
                    .as_i64()
                    .is_some_and(|c| c != 0)
            })
            .map(|p| {
                p.value["metadata"]["labels"]["batch.kubernetes.io/job-name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        self.pods.retain(|_, p| {
            let job = p.value["metadata"]["labels"]["batch.kubernetes.io/job-name"]
                .as_str()
                .unwrap_or("");
            let done = !p.value["status"]["containerStatuses"][0]["state"]["terminated"].is_null();
            done || !failed_jobs.iter().any(|j| j == job)
        });
    }

    fn delete(&mut self, resource: &str, name: &str, background: bool) -> (StatusCode, Reply) {
        let removed = if resource == "pods" {
            self.pods.remove(name).map(|p| p.value)
        } else {
            self.objects
                .remove(&(resource.to_string(), name.to_string()))
        };
        let Some(object) = removed else {
            return error(404, &format!("{resource} \"{name}\" not found"));
        };
        let uid = object["metadata"]["uid"].clone();
        if background {
            self.collect_garbage();
        } else {
            // Orphan: dependents lose the owner reference and stay.
            for pod in self.pods.values_mut() {
                if let Some(refs) = pod.value["metadata"]["ownerReferences"].as_array_mut() {
                    refs.retain(|r| r["uid"] != uid);
                }
            }
        }
        ok(json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "metadata": {}}))
    }

    /// Removes every object whose owner is gone, until nothing changes.
    fn collect_garbage(&mut self) {
        loop {
            let uids: Vec<Value> = self
                .objects
                .values()
                .map(|o| o["metadata"]["uid"].clone())
                .chain(
                    self.pods
                        .values()
                        .map(|p| p.value["metadata"]["uid"].clone()),
                )
                .collect();
            let orphaned = |o: &Value| {
                o["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|refs| {
                        !refs.is_empty() && refs.iter().all(|r| !uids.contains(&r["uid"]))
                    })
            };
            let before = self.objects.len() + self.pods.len();
            self.objects.retain(|_, o| !orphaned(o));
            self.pods.retain(|_, p| !orphaned(&p.value));
            if self.objects.len() + self.pods.len() == before {
                return;
            }
        }
    }
}

fn container(state: &str, detail: Value) -> Value {
    let phase = match state {
        "running" => "Running",
        "terminated" if detail["exitCode"] == 0 => "Succeeded",
        "terminated" => "Failed",
        _ => "Pending",
    };
    json!({"phase": phase, "containerStatuses": [{"name": "netcheck", "image": "netcheck", "imageID": "",
           "ready": state == "running", "restartCount": 0, "state": {state: detail}}]})
}

fn event(pod: &str, reason: &str, message: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": format!("{pod}.{reason}"), "namespace": "bench"},
           "involvedObject": {"kind": "Pod", "name": pod},
           "reason": reason, "message": message, "type": "Warning",
           "lastTimestamp": "2026-11-30T12:00:00Z"})
}
