//! Watching one round: list the run's pods every poll, follow each pod's log once it runs,
//! and when a group is finished collect its logs, judge it and delete its Job and Service.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Service;

use super::client::KubeClient;
use super::collect::{self, Judged};
use super::launcher::{Settings, Shared, say, write_file};
use super::manifest::GroupSpec;
use super::names;
use super::status::{Finish, PodPhase, PodView, Tracker};
use crate::error::Result;
use crate::launch::plan::Group;

/// Log streams followed at once: each holds an HTTP connection (and a file descriptor) open.
/// Pods beyond this are read once their group is finished; only a pod deleted by the Job
/// controller before that (the peer of a failed pod) then loses its log.
const MAX_FOLLOWERS: usize = 256;

/// Consecutive failed pod listings tolerated before the run gives up.
const MAX_LIST_ERRORS: u32 = 5;

/// A pod's log as it is written, kept in memory: the only copy once the Job controller
/// deletes a pod whose peer failed. Stops following when dropped.
struct Follower {
    lines: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Follower {
    fn start(client: &KubeClient, pod: &str) -> Follower {
        let lines = Arc::new(Mutex::new(vec![]));
        let (client, pod, sink) = (client.clone(), pod.to_string(), lines.clone());
        let task = tokio::spawn(async move {
            let Ok(mut stream) = client.follow_log(&pod).await else {
                return;
            };
            while let Some(Ok(line)) = stream.next().await {
                sink.lock().expect("not poisoned").push(line);
            }
        });
        Follower { lines, task }
    }

    fn text(&self) -> String {
        let lines = self.lines.lock().expect("not poisoned");
        let mut text = lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        text
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One group being watched.
struct Active {
    spec: GroupSpec,
    name: String,
    tracker: Tracker,
    /// When the Job's events were last read while it had no pods.
    events_checked: Option<Instant>,
    /// Last view of every pod seen, by name (pods deleted by the Job controller stay here).
    known: BTreeMap<String, PodView>,
    followers: HashMap<String, Follower>,
    /// Set once the other ranks' Jobs were deleted after a rank failed.
    peers_stopped: bool,
    done: Option<Judged>,
    /// Each pod's image and pulled digest, by pod name (kept once the digest is known).
    images: BTreeMap<String, collect::PodImage>,
}

/// Polls the run's pods until every group of the round is finished; judges each group as it
/// finishes (logs collected, then its Job and Service deleted).
pub(super) async fn watch_round(
    client: &KubeClient,
    settings: &Settings,
    groups: &[(Group, GroupSpec)],
    shared: &Shared,
) -> Result<Vec<(String, Judged)>> {
    let started = Instant::now();
    let mut active: Vec<Active> = groups
        .iter()
        .map(|(_, g)| Active {
            name: g.name(&settings.spec.run),
            spec: g.clone(),
            tracker: Tracker::new(g.nodes.len(), started),
            events_checked: None,
            known: BTreeMap::new(),
            followers: HashMap::new(),
            peers_stopped: false,
            done: None,
            images: BTreeMap::new(),
        })
        .collect();
    let selector = names::run_selector(&settings.spec.run);
    // A Job whose pods are refused (Pod Security, quota, webhook) says so in its events long
    // before the scheduling timeout; look after a tenth of it (at most every 5 s).
    let events_after = (settings.limits.schedule / 10).min(Duration::from_secs(5));
    let mut list_errors = 0;
    loop {
        let pods = match client.pods(&selector).await {
            Ok(pods) => {
                list_errors = 0;
                pods
            }
            Err(e) if list_errors < MAX_LIST_ERRORS => {
                list_errors += 1;
                // Back off from the poll interval: 2, 4, 8, 10, 10 s by default.
                let wait = (settings.poll * 2u32.pow(list_errors)).min(Duration::from_secs(10));
                say(
                    settings,
                    &format!("warning: {e}; retrying in {}s", wait.as_secs()),
                );
                tokio::time::sleep(wait).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let now = Instant::now();
        let mut following: usize = active.iter().map(|a| a.followers.len()).sum();
        for group in active.iter_mut().filter(|a| a.done.is_none()) {
            let seq = group.spec.seq.to_string();
            let mine: Vec<&k8s_openapi::api::core::v1::Pod> = pods
                .iter()
                .filter(|p| {
                    p.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(names::GROUP_LABEL))
                        == Some(&seq)
                })
                .collect();
            note_images(&mut group.images, &mine);
            let views: Vec<PodView> = mine.iter().map(|p| PodView::from_pod(p)).collect();
            for v in &views {
                let started = matches!(v.phase, PodPhase::Running | PodPhase::Exited { .. });
                if started && !group.followers.contains_key(&v.name) && following < MAX_FOLLOWERS {
                    following += 1;
                    group
                        .followers
                        .insert(v.name.clone(), Follower::start(client, &v.name));
                }
                group.known.insert(v.name.clone(), v.clone());
            }
            let mut finish = group.tracker.update(&views, now, &settings.limits);
            // A rank failed and every peer ran: stop the others (each rank has its own Job,
            // so no Job controller does it), as the Job controller of one Job would.
            if finish.is_none()
                && !group.peers_stopped
                && group.tracker.failed_at.is_some()
                && group.tracker.never_ran().is_none()
            {
                group.peers_stopped = true;
                for v in views.iter().filter(|v| v.exit_code().is_none()) {
                    let job = names::rank_job(&group.name, v.index);
                    if let Err(e) = client.delete::<Job>(&job).await {
                        say(settings, &format!("warning: {e}"));
                    }
                }
            }
            if finish.is_none()
                && views.len() < group.spec.nodes.len()
                && now.duration_since(started) >= events_after
                && group
                    .events_checked
                    .is_none_or(|t| now.duration_since(t) >= events_after)
            {
                group.events_checked = Some(now);
                let refused = job_warnings(client, &group.name, group.spec.nodes.len()).await;
                if refused.iter().any(|w| w.starts_with("FailedCreate")) {
                    finish = Some(Finish::MissingPods { found: views.len() });
                }
            }
            if let Some(finish) = finish {
                let judged = finish_group(client, settings, group, &finish).await?;
                say(settings, &progress_line(&judged));
                shared
                    .judged
                    .lock()
                    .expect("not poisoned")
                    .push(judged.clone());
                group.done = Some(judged);
            }
        }
        if active.iter().all(|a| a.done.is_some()) {
            break;
        }
        tokio::time::sleep(settings.poll).await;
    }
    Ok(active
        .into_iter()
        .map(|a| (a.spec.pool, a.done.expect("every group is done")))
        .collect())
}

/// Collects the group's logs (written to `<out>/pods/g<seq>/`), reads why it failed from the
/// events, judges it and deletes its Job and Service.
async fn finish_group(
    client: &KubeClient,
    settings: &Settings,
    group: &mut Active,
    finish: &Finish,
) -> Result<Judged> {
    let dir = settings
        .out_dir
        .join("pods")
        .join(format!("g{}", group.spec.seq));
    let mut logs = BTreeMap::new();
    for view in group.known.values() {
        let followed = group.followers.remove(&view.name);
        if !matches!(view.phase, PodPhase::Running | PodPhase::Exited { .. }) {
            continue;
        }
        // The full log while the pod exists; what was followed once it is gone.
        let text = match client.log(&view.name).await {
            Ok(text) => text,
            Err(_) => followed.as_ref().map(Follower::text).unwrap_or_default(),
        };
        if text.is_empty() {
            continue;
        }
        let node = view.node.as_deref().unwrap_or("unscheduled");
        write_file(&dir.join(format!("rank{}-{node}.log", view.index)), &text)?;
        logs.insert(view.index, text);
    }
    let warnings = match finish {
        Finish::Unschedulable { pod, .. }
        | Finish::Broken { pod, .. }
        | Finish::PeerNeverRan { peer: pod, .. }
            if !pod.name.is_empty() =>
        {
            client.warnings("Pod", &pod.name).await.unwrap_or_default()
        }
        Finish::MissingPods { .. } | Finish::PeerNeverRan { .. } => {
            job_warnings(client, &group.name, group.spec.nodes.len()).await
        }
        _ => vec![],
    };
    let views: Vec<PodView> = group.known.values().cloned().collect();
    let mut judged = collect::judge(&group.spec.nodes, finish, &views, &logs, &warnings);
    judged.images = views
        .iter()
        .filter_map(|v| Some((v.node.clone()?, group.images.get(&v.name)?.clone())))
        .collect();
    if !settings.keep {
        for rank in 0..group.spec.nodes.len() {
            client
                .delete::<Job>(&names::rank_job(&group.name, rank))
                .await?;
        }
        client.delete::<Service>(&group.name).await?;
    }
    Ok(judged)
}

/// Keeps each pod's image; a digest once seen is not lost to a later status without one.
fn note_images(
    images: &mut BTreeMap<String, collect::PodImage>,
    pods: &[&k8s_openapi::api::core::v1::Pod],
) {
    for pod in pods {
        let (Some(name), Some(image)) = (pod.metadata.name.clone(), collect::pod_image(pod)) else {
            continue;
        };
        let known = images.get(&name).is_some_and(|i| i.image_id.is_some());
        if image.image_id.is_some() || !known {
            images.insert(name, image);
        }
    }
}

/// The warning events of a group's rank Jobs (why a Job created no pod), oldest first.
async fn job_warnings(client: &KubeClient, group: &str, ranks: usize) -> Vec<String> {
    let mut all = vec![];
    for rank in 0..ranks {
        all.extend(
            client
                .warnings("Job", &names::rank_job(group, rank))
                .await
                .unwrap_or_default(),
        );
    }
    all
}

fn progress_line(j: &Judged) -> String {
    let peak = collect::peak_busbw(&j.pair)
        .map(|bw| format!(", peak busbw {bw:.1} GB/s"))
        .unwrap_or_default();
    let transport = j
        .pair
        .analysis
        .as_ref()
        .map(|a| format!(", transport {}", a.inter_node_transport.as_str()))
        .unwrap_or_default();
    let message = j
        .pair
        .message
        .as_ref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    format!(
        "  {} {}{peak}{transport}{message}",
        j.pair.name, j.pair.status
    )
}
