//! Watching one round: list the run's pods every poll, follow each pod's log once it runs,
//! and when a group is finished collect its logs, judge it and delete its Job and Service.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

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
    /// Last view of every pod seen, by name (pods deleted by the Job controller stay here).
    known: BTreeMap<String, PodView>,
    followers: HashMap<String, Follower>,
    done: Option<Judged>,
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
            known: BTreeMap::new(),
            followers: HashMap::new(),
            done: None,
        })
        .collect();
    let selector = names::run_selector(&settings.spec.run);
    loop {
        let pods = client.pods(&selector).await?;
        let now = Instant::now();
        for group in active.iter_mut().filter(|a| a.done.is_none()) {
            let seq = group.spec.seq.to_string();
            let views: Vec<PodView> = pods
                .iter()
                .filter(|p| {
                    p.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(names::GROUP_LABEL))
                        == Some(&seq)
                })
                .map(PodView::from_pod)
                .collect();
            for v in &views {
                let started = matches!(v.phase, PodPhase::Running | PodPhase::Exited { .. });
                if started && !group.followers.contains_key(&v.name) {
                    group
                        .followers
                        .insert(v.name.clone(), Follower::start(client, &v.name));
                }
                group.known.insert(v.name.clone(), v.clone());
            }
            if let Some(finish) = group.tracker.update(&views, now, &settings.limits) {
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
        Finish::Unschedulable { pod, .. } | Finish::Broken { pod, .. } => {
            client.warnings("Pod", &pod.name).await.unwrap_or_default()
        }
        Finish::MissingPods { .. } => client
            .warnings("Job", &group.name)
            .await
            .unwrap_or_default(),
        _ => vec![],
    };
    let views: Vec<PodView> = group.known.values().cloned().collect();
    let judged = collect::judge(&group.spec.nodes, finish, &views, &logs, &warnings);
    if !settings.keep {
        client.delete::<Job>(&group.name).await?;
        client.delete::<Service>(&group.name).await?;
    }
    Ok(judged)
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
