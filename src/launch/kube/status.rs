//! Reading pod status: where each pod of a group is (not scheduled and why, starting, running,
//! exited with what), and when a group is finished. Pure: the launcher polls the pods and feeds
//! them in with the time, so every rule is unit-tested without a cluster or a clock.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

use super::names;

/// Waiting reasons that will not fix themselves: the group is finished (inconclusive).
const FATAL_WAITING: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    INIT_FAILED,
];

/// The waiting reason a pod gets here when its init container (`--netcheck-image`) failed: the
/// benchmark container never starts, and the Job controller does not retry.
pub const INIT_FAILED: &str = "Init:Error";

/// After one pod of a group fails, how long the others get to exit (the Job controller stops
/// them) before the group is closed with what is known.
pub const PEER_EXIT_GRACE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodPhase {
    /// The scheduler has not placed it; its message (e.g. `0/4 nodes are available: 1
    /// Insufficient vpc.amazonaws.com/efa`).
    Unscheduled {
        message: String,
    },
    /// Placed, container not running yet; the kubelet's waiting reason and message.
    Starting {
        reason: String,
        message: String,
    },
    Running,
    Exited {
        code: i32,
        /// `Completed`, `Error`, `OOMKilled`, ...
        reason: String,
        message: String,
    },
}

/// One pod as the launcher sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    pub name: String,
    /// Its Job completion index: the node rank.
    pub index: usize,
    pub node: Option<String>,
    pub phase: PodPhase,
}

impl PodView {
    pub fn from_pod(pod: &Pod) -> PodView {
        let meta = &pod.metadata;
        // The rank label of the rank's Job; the completion index of an Indexed Job (older runs).
        let index = meta
            .labels
            .as_ref()
            .and_then(|l| l.get(names::RANK_LABEL))
            .or_else(|| {
                meta.annotations
                    .as_ref()
                    .and_then(|a| a.get(names::COMPLETION_INDEX_ANNOTATION))
            })
            .and_then(|i| i.parse().ok())
            .unwrap_or(0);
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        PodView {
            name: meta.name.clone().unwrap_or_default(),
            index,
            node,
            phase: phase(pod),
        }
    }

    pub fn exit_code(&self) -> Option<i32> {
        match self.phase {
            PodPhase::Exited { code, .. } => Some(code),
            _ => None,
        }
    }

    /// `rank 1 (pod x on node y)`, for messages.
    pub fn describe(&self) -> String {
        match &self.node {
            Some(node) => format!("rank {} (pod {} on node {node})", self.index, self.name),
            None => format!("rank {} (pod {}, not scheduled)", self.index, self.name),
        }
    }

    /// Whether its container ever started (running, or exited from a started container).
    pub fn started(&self) -> bool {
        match &self.phase {
            PodPhase::Running => true,
            PodPhase::Exited { code, .. } => *code != -1,
            _ => false,
        }
    }
}

/// A failed or stuck init container (the one copying netcheck in), as the phase of the pod:
/// pull errors keep their reason (fatal as for the main image); an exit other than 0 is
/// [`INIT_FAILED`]. `None` while it runs or once it completed.
fn init_phase(pod: &Pod) -> Option<PodPhase> {
    let statuses = pod.status.as_ref()?.init_container_statuses.as_ref()?;
    statuses.iter().find_map(|c| {
        let state = c.state.as_ref()?;
        let who = format!("init container {} (image {})", c.name, c.image);
        if let Some(t) = state.terminated.as_ref().filter(|t| t.exit_code != 0) {
            let why = [t.reason.as_deref(), t.message.as_deref()]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(": ");
            return Some(PodPhase::Starting {
                reason: INIT_FAILED.into(),
                message: format!(
                    "{who} exited {}{}; the --netcheck-image must hold {} and sh, cp, chmod",
                    t.exit_code,
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(" ({why})")
                    },
                    super::manifest::NETCHECK_IMAGE_BINARY
                ),
            });
        }
        let w = state.waiting.as_ref()?;
        let reason = w.reason.clone().unwrap_or_default();
        FATAL_WAITING
            .contains(&reason.as_str())
            .then(|| PodPhase::Starting {
                message: format!("{who}: {}", w.message.clone().unwrap_or_default()),
                reason,
            })
    })
}

fn phase(pod: &Pod) -> PodPhase {
    if let Some(init) = init_phase(pod) {
        return init;
    }
    let status = pod.status.clone().unwrap_or_default();
    let container = status
        .container_statuses
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.name == names::CONTAINER);
    if let Some(state) = container.as_ref().and_then(|c| c.state.as_ref()) {
        if let Some(t) = &state.terminated {
            return PodPhase::Exited {
                code: t.exit_code,
                reason: t.reason.clone().unwrap_or_default(),
                message: t.message.clone().unwrap_or_default(),
            };
        }
        if state.running.is_some() {
            return PodPhase::Running;
        }
        if let Some(w) = &state.waiting {
            return PodPhase::Starting {
                reason: w.reason.clone().unwrap_or_default(),
                message: w.message.clone().unwrap_or_default(),
            };
        }
    }
    let unscheduled = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    if let Some(c) = unscheduled {
        return PodPhase::Unscheduled {
            message: c.message.unwrap_or_else(|| c.reason.unwrap_or_default()),
        };
    }
    match status.phase.as_deref() {
        // Deleted or evicted before the container reported: the pod's own reason.
        Some("Failed") => PodPhase::Exited {
            code: -1,
            reason: status.reason.unwrap_or_else(|| "Failed".into()),
            message: status.message.unwrap_or_default(),
        },
        Some("Running") => PodPhase::Running,
        _ => PodPhase::Starting {
            reason: "Pending".into(),
            message: String::new(),
        },
    }
}

/// Why a group stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// Every pod exited, or one failed and the others were stopped or gave up.
    Exited,
    /// A pod was not scheduled within the scheduling timeout.
    Unschedulable { pod: PodView, message: String },
    /// A pod cannot start (image pull, bad config) or disappeared (evicted, preempted).
    Broken { pod: PodView, message: String },
    /// The Job created fewer pods than nodes within the scheduling timeout.
    MissingPods { found: usize },
    /// A rank gave up (or failed) while a peer never ran: not scheduled, never started, or
    /// never created. Nothing between the nodes was tested, whichever timeout fired first.
    PeerNeverRan {
        /// The peer as last seen (`Unscheduled`, `Starting`, or a placeholder when its pod
        /// never existed).
        peer: PodView,
        /// The rank that exited non-zero meanwhile.
        failed: PodView,
    },
    /// Running longer than the group timeout: a hang.
    TimedOut { running_for: Duration },
}

/// Limits for one group.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub schedule: Duration,
    pub run: Duration,
    pub peer_exit_grace: Duration,
}

/// What the launcher remembers about a group between polls.
#[derive(Debug, Clone)]
pub struct Tracker {
    pub expected: usize,
    pub created: Instant,
    /// When every pod had been placed and one was running.
    pub running_since: Option<Instant>,
    /// When the first pod exited non-zero.
    pub failed_at: Option<Instant>,
    /// Pods seen so far (a pod that vanishes was evicted or deleted).
    pub seen: Vec<String>,
    /// The last view of every pod seen, by name.
    pub last: BTreeMap<String, PodView>,
    /// Ranks whose container started at some point.
    pub ran: BTreeSet<usize>,
}

impl Tracker {
    pub fn new(expected: usize, created: Instant) -> Tracker {
        Tracker {
            expected,
            created,
            running_since: None,
            failed_at: None,
            seen: vec![],
            last: BTreeMap::new(),
            ran: BTreeSet::new(),
        }
    }

    /// A rank that never ran, as last seen (a placeholder when no pod of it was ever seen).
    pub fn never_ran(&self) -> Option<PodView> {
        (0..self.expected)
            .filter(|rank| !self.ran.contains(rank))
            .map(|rank| {
                // The newest view of that rank: a still-pending pod over an older one.
                self.last
                    .values()
                    .filter(|v| v.index == rank)
                    .max_by_key(|v| !matches!(v.phase, PodPhase::Exited { .. }))
                    .cloned()
                    .unwrap_or_else(|| PodView {
                        name: String::new(),
                        index: rank,
                        node: None,
                        phase: PodPhase::Starting {
                            reason: "NotCreated".into(),
                            message: "its pod was never created".into(),
                        },
                    })
            })
            .next()
    }

    /// Looks at the group's pods at time `now`; `Some` when the group is finished.
    pub fn update(&mut self, pods: &[PodView], now: Instant, limits: &Limits) -> Option<Finish> {
        for p in pods {
            if !self.seen.contains(&p.name) {
                self.seen.push(p.name.clone());
            }
            if p.started() {
                self.ran.insert(p.index);
            }
            self.last.insert(p.name.clone(), p.clone());
        }
        if let Some(p) = pods.iter().find(|p| {
            matches!(&p.phase, PodPhase::Starting { reason, .. } if FATAL_WAITING.contains(&reason.as_str()))
        }) {
            let PodPhase::Starting { reason, message } = &p.phase else { unreachable!() };
            return Some(Finish::Broken {
                pod: p.clone(),
                message: format!("{reason}: {message}"),
            });
        }
        let exited = pods.iter().filter(|p| p.exit_code().is_some()).count();
        if pods.len() == self.expected && exited == self.expected {
            return Some(Finish::Exited);
        }
        if let Some(failed) = pods.iter().find(|p| p.exit_code().is_some_and(|c| c != 0)) {
            let since = *self.failed_at.get_or_insert(now);
            let grace_over = now.duration_since(since) >= limits.peer_exit_grace;
            // A peer that never ran: the failure (rank 0 giving up on the rendezvous, most
            // often) says nothing about either node, whichever timeout fired. A peer the
            // scheduler refused is decided at once; one bound to its node (or not created
            // yet) gets the grace to start, so a node failing fast is still blamed.
            if let Some(peer) = self.never_ran() {
                if grace_over || matches!(peer.phase, PodPhase::Unscheduled { .. }) {
                    return Some(Finish::PeerNeverRan {
                        peer,
                        failed: failed.clone(),
                    });
                }
                return None;
            }
            // The launcher stops the peers of a failed pod: gone counts as stopped.
            if exited == pods.len() || grace_over {
                return Some(Finish::Exited);
            }
            return None;
        }
        let vanished = self
            .seen
            .iter()
            .find(|name| !pods.iter().any(|p| &p.name == *name));
        if let Some(name) = vanished {
            let pod = self.last.get(name).cloned().unwrap_or_else(|| PodView {
                name: name.clone(),
                index: 0,
                node: None,
                phase: PodPhase::Starting {
                    reason: "Deleted".into(),
                    message: String::new(),
                },
            });
            let place = match &pod.node {
                Some(node) => format!(" on node {node}"),
                None => String::new(),
            };
            return Some(Finish::Broken {
                message: format!("pod `{name}`{place} disappeared (evicted, preempted or deleted)"),
                pod,
            });
        }
        let waited = now.duration_since(self.created);
        if let Some(p) = pods
            .iter()
            .find(|p| matches!(p.phase, PodPhase::Unscheduled { .. }))
            && waited >= limits.schedule
        {
            let PodPhase::Unscheduled { message } = &p.phase else {
                unreachable!()
            };
            return Some(Finish::Unschedulable {
                pod: p.clone(),
                message: message.clone(),
            });
        }
        if pods.len() < self.expected {
            return (waited >= limits.schedule)
                .then_some(Finish::MissingPods { found: pods.len() });
        }
        // The run clock starts once every pod has started: a pod bound to its node but not
        // started (volume, CNI or device-plugin trouble, a slow pull) is not a hang.
        let all_started = pods.iter().all(|p| p.started() || p.exit_code().is_some());
        if self.running_since.is_none() && all_started {
            self.running_since = Some(now);
        }
        if let Some(since) = self.running_since {
            return (now.duration_since(since) >= limits.run).then(|| Finish::TimedOut {
                running_for: now.duration_since(since),
            });
        }
        // Placed but not started within the scheduling and run budgets together (a large
        // image takes minutes to pull): inconclusive, with the kubelet's reason.
        let start_budget = limits.schedule + limits.run;
        if waited >= start_budget
            && let Some(p) = pods
                .iter()
                .find(|p| matches!(p.phase, PodPhase::Starting { .. }))
        {
            let PodPhase::Starting { reason, message } = &p.phase else {
                unreachable!()
            };
            let message = if message.is_empty() {
                reason.clone()
            } else {
                format!("{reason}: {message}")
            };
            return Some(Finish::Broken {
                pod: p.clone(),
                message: format!(
                    "its container did not start within {}s (still {message})",
                    start_budget.as_secs()
                ),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(name: &str, index: usize, phase: PodPhase) -> PodView {
        PodView {
            name: name.into(),
            index,
            node: Some(format!("node-{index}")),
            phase,
        }
    }

    /// Rank 0 (`a`) and rank 1 (`b`) in these phases.
    fn pair(a: PodPhase, b: PodPhase) -> [PodView; 2] {
        [view("a", 0, a), view("b", 1, b)]
    }

    fn starting(reason: &str, message: &str) -> PodPhase {
        PodPhase::Starting {
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn exited(code: i32) -> PodPhase {
        PodPhase::Exited {
            code,
            reason: if code == 0 { "Completed" } else { "Error" }.into(),
            message: String::new(),
        }
    }

    const LIMITS: Limits = Limits {
        schedule: Duration::from_secs(60),
        run: Duration::from_secs(100),
        peer_exit_grace: Duration::from_secs(10),
    };

    #[test]
    fn finishes_when_every_pod_exited() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, t0);
        let running = pair(PodPhase::Running, PodPhase::Running);
        assert_eq!(t.update(&running, t0, &LIMITS), None);
        let done = pair(exited(0), exited(0));
        assert_eq!(
            t.update(&done, t0 + Duration::from_secs(5), &LIMITS),
            Some(Finish::Exited)
        );
    }

    #[test]
    fn a_failed_pod_waits_briefly_for_its_peer() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, t0);
        let half = pair(PodPhase::Running, exited(1));
        assert_eq!(t.update(&half, t0, &LIMITS), None);
        assert_eq!(
            t.update(&half, t0 + Duration::from_secs(11), &LIMITS),
            Some(Finish::Exited)
        );
        // The Job controller deleted the peer: finished at once.
        let mut t = Tracker::new(2, t0);
        assert_eq!(t.update(&half, t0, &LIMITS), None);
        assert_eq!(t.update(&half[1..], t0, &LIMITS), Some(Finish::Exited));
    }

    #[test]
    fn unscheduled_pods_get_the_scheduling_timeout() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, t0);
        let pending = pair(
            PodPhase::Unscheduled {
                message: "0/3 nodes are available: 1 Insufficient vpc.amazonaws.com/efa.".into(),
            },
            PodPhase::Running,
        );
        assert_eq!(
            t.update(&pending, t0 + Duration::from_secs(59), &LIMITS),
            None
        );
        match t.update(&pending, t0 + Duration::from_secs(60), &LIMITS) {
            Some(Finish::Unschedulable { message, pod }) => {
                assert!(message.contains("Insufficient vpc.amazonaws.com/efa"));
                assert_eq!(pod.index, 0);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn image_pull_errors_end_the_group_at_once() {
        let mut t = Tracker::new(1, Instant::now());
        let pods = [view(
            "a",
            0,
            starting("ImagePullBackOff", "Back-off pulling image \"x\""),
        )];
        assert!(matches!(
            t.update(&pods, Instant::now(), &LIMITS),
            Some(Finish::Broken { .. })
        ));
    }

    #[test]
    fn running_too_long_is_a_timeout() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, t0);
        let running = pair(PodPhase::Running, PodPhase::Running);
        assert_eq!(
            t.update(&running, t0 + Duration::from_secs(30), &LIMITS),
            None
        );
        assert!(matches!(
            t.update(&running, t0 + Duration::from_secs(131), &LIMITS),
            Some(Finish::TimedOut { .. })
        ));
    }

    #[test]
    fn a_vanished_pod_breaks_the_group() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, t0);
        let running = pair(PodPhase::Running, PodPhase::Running);
        t.update(&running, t0, &LIMITS);
        assert!(matches!(
            t.update(&running[..1], t0, &LIMITS),
            Some(Finish::Broken { .. })
        ));
    }

    /// Rank 0 gives up on the rendezvous (exit 124, its worker timeout) while rank 1 is
    /// still not scheduled: nothing between the nodes ran, whichever timeout fired first.
    #[test]
    fn a_failure_while_a_peer_never_ran_blames_no_node() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, t0);
        let pending = PodPhase::Unscheduled {
            message: "0/4 nodes are available: 1 Insufficient nvidia.com/gpu.".into(),
        };
        let mut p1 = view("b", 1, pending.clone());
        p1.node = None;
        assert_eq!(
            t.update(&[view("a", 0, PodPhase::Running), p1.clone()], t0, &LIMITS),
            None
        );
        match t.update(&[view("a", 0, exited(124)), p1.clone()], t0, &LIMITS) {
            Some(Finish::PeerNeverRan { peer, failed }) => {
                assert_eq!(peer.index, 1);
                assert_eq!(peer.phase, pending);
                assert_eq!(failed.exit_code(), Some(124));
            }
            other => panic!("{other:?}"),
        }
        // A peer bound to its node but not started yet gets the grace to start: a node that
        // fails fast is still judged with its peer.
        let mut t = Tracker::new(2, t0);
        let half = pair(exited(1), starting("ContainerCreating", ""));
        assert_eq!(t.update(&half, t0, &LIMITS), None);
        let both = pair(exited(1), PodPhase::Running);
        assert_eq!(t.update(&both, t0 + Duration::from_secs(1), &LIMITS), None);
        assert_eq!(
            t.update(&both[..1], t0 + Duration::from_secs(2), &LIMITS),
            Some(Finish::Exited)
        );
        let mut t = Tracker::new(2, t0);
        assert_eq!(t.update(&half, t0, &LIMITS), None);
        assert!(matches!(
            t.update(&half, t0 + Duration::from_secs(11), &LIMITS),
            Some(Finish::PeerNeverRan { .. })
        ));
    }

    /// Bound to its node, never started (volume, CNI, device plugin): inconclusive with the
    /// kubelet's reason once the scheduling and run budgets are spent, never a hang.
    #[test]
    fn a_pod_that_never_starts_is_not_a_hang() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, t0);
        let pods = pair(
            PodPhase::Running,
            starting("ContainerCreating", "MountVolume.SetUp failed"),
        );
        assert_eq!(
            t.update(&pods, t0 + Duration::from_secs(159), &LIMITS),
            None
        );
        match t.update(&pods, t0 + Duration::from_secs(160), &LIMITS) {
            Some(Finish::Broken { pod, message }) => {
                assert_eq!(pod.index, 1);
                assert_eq!(pod.node.as_deref(), Some("node-1"));
                assert!(
                    message.contains("did not start within 160s")
                        && message.contains("ContainerCreating: MountVolume.SetUp failed"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        // Well past the run timeout too: still not a hang.
        let mut t = Tracker::new(2, t0);
        assert!(matches!(
            t.update(&pods, t0 + Duration::from_secs(500), &LIMITS),
            Some(Finish::Broken { .. })
        ));
    }

    #[test]
    fn a_vanished_pod_is_named_with_its_node() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, t0);
        let running = pair(PodPhase::Running, PodPhase::Running);
        t.update(&running, t0, &LIMITS);
        match t.update(&running[..1], t0, &LIMITS) {
            Some(Finish::Broken { pod, message }) => {
                assert_eq!(pod.index, 1);
                assert!(
                    message.contains("`b` on node node-1 disappeared"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failed_init_container_breaks_the_group_and_says_why() {
        let pod = |init: serde_json::Value| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "annotations": {"batch.kubernetes.io/job-completion-index": "0"}},
                "spec": {"nodeName": "n0", "containers": []},
                "status": {"phase": "Pending",
                    "initContainerStatuses": [{
                        "name": "netcheck-install", "image": "reg/netcheck:1", "imageID": "",
                        "ready": false, "restartCount": 0, "state": init}],
                    "containerStatuses": [{
                        "name": "netcheck", "image": "train:1", "imageID": "", "ready": false,
                        "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]}
            }))
            .unwrap()
        };
        // The copy failed (a netcheck image without /usr/local/bin/netcheck).
        let failed = PodView::from_pod(&pod(serde_json::json!(
            {"terminated": {"exitCode": 1, "reason": "Error",
                            "message": "cp: can't stat '/usr/local/bin/netcheck'"}})));
        let PodPhase::Starting { reason, message } = &failed.phase else {
            panic!("{failed:?}")
        };
        assert_eq!(reason, INIT_FAILED);
        assert!(
            message.contains("netcheck-install (image reg/netcheck:1) exited 1"),
            "{message}"
        );
        assert!(message.contains("can't stat"), "{message}");
        let mut t = Tracker::new(1, Instant::now());
        assert!(matches!(
            t.update(&[failed], Instant::now(), &LIMITS),
            Some(Finish::Broken { .. })
        ));
        // Its image cannot be pulled: the pull error, naming the init container.
        let pull = PodView::from_pod(&pod(serde_json::json!(
            {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}})));
        assert!(
            matches!(&pull.phase, PodPhase::Starting { reason, message }
                if reason == "ImagePullBackOff" && message.starts_with("init container netcheck-install")),
            "{pull:?}"
        );
        // Still copying, or done: the benchmark container's own state counts.
        let running = PodView::from_pod(&pod(serde_json::json!({"running": {}})));
        assert!(
            matches!(&running.phase, PodPhase::Starting { reason, .. } if reason == "PodInitializing")
        );
        let done = PodView::from_pod(&pod(serde_json::json!(
            {"terminated": {"exitCode": 0, "reason": "Completed"}})));
        assert!(
            matches!(&done.phase, PodPhase::Starting { reason, .. } if reason == "PodInitializing")
        );
    }

    #[test]
    fn reads_the_kubelet_status() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "annotations": {"batch.kubernetes.io/job-completion-index": "1"}},
            "spec": {"nodeName": "n1", "containers": []},
            "status": {"phase": "Failed", "containerStatuses": [{
                "name": "netcheck", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}
        }))
        .unwrap();
        let v = PodView::from_pod(&pod);
        assert_eq!(v.index, 1);
        assert_eq!(v.node.as_deref(), Some("n1"));
        assert_eq!(
            v.phase,
            PodPhase::Exited {
                code: 137,
                reason: "OOMKilled".into(),
                message: String::new()
            }
        );
    }
}
