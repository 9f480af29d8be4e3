//! The run: permissions → preflight → plan → for each round: create the groups, watch their
//! pods, collect logs and results, delete them → one RunRecord with a verdict per node.
//! Whatever happens (success, an error, Ctrl-C), everything the run created is deleted unless
//! `--keep` says otherwise, and what finished is written to `results.json`.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};

use super::client::{KubeClient, REQUIRED_ACCESS};
use super::collect::{self, Judged, RunSummary};
use super::manifest::{self, GroupSpec, RunSpec};
use super::names;
use super::nodes::{self, NodeInfo, PodResources, Requirements};
use super::status::Limits;
use super::watch;
use crate::error::{Error, Result};
use crate::launch::plan::{Mode, NodeVerdict, Planner, Pool, Verdict};
use crate::results::{RunRecord, RunStatus};

/// Which nodes to test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    Nodes(Vec<String>),
    Selector(String),
}

/// Everything a run needs, resolved from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    pub selection: Selection,
    pub mode: Mode,
    pub seed: Option<u64>,
    pub requirements: Requirements,
    /// `--expect`; `None`: `efa` for pools whose pods get EFA devices, no expectation elsewhere.
    pub expect: Option<String>,
    /// The namespace is the client's; the rest comes from the flags.
    pub spec: RunSpec,
    pub limits: Limits,
    /// How often the run's pods are listed.
    pub poll: Duration,
    /// How long cleanup waits for the pods to be gone.
    pub cleanup_wait: Duration,
    pub keep: bool,
    pub skip_ineligible: bool,
    /// Nodes left untested (ineligible, alone in their pool, withdrawn) do not make the run
    /// inconclusive.
    pub allow_untested: bool,
    /// A passing pair below this fraction of its pool's median peak bus bandwidth fails.
    pub slow_fraction: f64,
    pub check_access: bool,
    pub out_dir: PathBuf,
    pub quiet: bool,
}

/// What a finished run found.
#[derive(Debug, Clone)]
pub struct Report {
    pub record: RunRecord,
    pub verdicts: Vec<NodeVerdict>,
    pub link_failures: Vec<(String, String)>,
    pub results_path: PathBuf,
    /// Nodes the run was asked to test and did not (ineligible, untested), with why.
    pub untested: Vec<(String, String)>,
    pub allow_untested: bool,
}

/// The overall conclusion, which the command turns into an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    /// Every tested node and pair passed.
    Pass,
    /// A node or pair failed (exit 1).
    Fail,
    /// Nothing failed, but some groups could not be judged, or nodes asked for were not
    /// tested without `--allow-untested` (exit 4).
    Inconclusive,
}

impl Report {
    pub fn conclusion(&self) -> Conclusion {
        let failed_node = self
            .verdicts
            .iter()
            .any(|v| matches!(v.verdict, Verdict::Fail | Verdict::Suspect));
        let failed_pair = self
            .record
            .pairs
            .iter()
            .any(|p| p.status == collect::FAIL || p.status == collect::TIMEOUT);
        if failed_node || failed_pair {
            Conclusion::Fail
        } else if self
            .verdicts
            .iter()
            .any(|v| v.verdict == Verdict::Inconclusive)
            || self.record.pairs.iter().any(|p| p.status != collect::PASS)
            || (!self.untested.is_empty() && !self.allow_untested)
        {
            Conclusion::Inconclusive
        } else {
            Conclusion::Pass
        }
    }
}

/// State that outlives the run future, so cleanup and the partial record work after Ctrl-C.
#[derive(Default)]
pub(super) struct Shared {
    /// Set just before the first create call: from then on there may be something to delete.
    created: AtomicBool,
    /// This process's mark on the anchor it creates (annotation `netcheck.io/launch`): cleanup
    /// deletes only the anchor carrying it, and what that anchor owns, never another run's
    /// objects that share the run id.
    nonce: String,
    /// The token Secret's UID once created.
    secret_uid: Mutex<Option<String>>,
    pub(super) judged: Mutex<Vec<Judged>>,
    nodes: Mutex<Vec<NodeInfo>>,
}

/// Runs the whole launch; `shutdown` resolving (Ctrl-C, SIGTERM) stops it with
/// `Error::Interrupted` after cleaning up.
pub async fn launch(
    client: &KubeClient,
    settings: &Settings,
    shutdown: impl Future<Output = ()>,
) -> Result<Report> {
    let shared = Shared {
        nonce: names::new_token().unwrap_or_else(|_| names::new_run_id()),
        ..Default::default()
    };
    let started_at = crate::results::now_rfc3339();
    let result = tokio::select! {
        r = run(client, settings, &shared, &started_at) => r,
        () = shutdown => {
            say(settings, "interrupted");
            Err(Error::Interrupted)
        }
    };
    if shared.created.load(Ordering::SeqCst) {
        if settings.keep {
            say(
                settings,
                &format!(
                    "kept the run's objects (--keep); remove them with: kubectl delete -n {} configmap,secret,job,service -l {}",
                    client.namespace(),
                    names::run_selector(&settings.spec.run)
                ),
            );
        } else {
            let secret = shared.secret_uid.lock().expect("not poisoned").clone();
            cleanup(client, settings, &shared.nonce, secret).await;
        }
    }
    if let Err(e) = &result {
        // Keep what finished: the pairs judged before the error or the interruption.
        let judged = shared.judged.lock().expect("not poisoned").clone();
        if !judged.is_empty() {
            let status = match e {
                Error::Interrupted => RunStatus::Interrupted,
                Error::Timeout { .. } => RunStatus::Timeout,
                _ => RunStatus::Failed,
            };
            let nodes = shared.nodes.lock().expect("not poisoned").clone();
            let record = collect::merge(
                RunSummary {
                    started_at,
                    status,
                    label: label(settings, nodes.len()),
                    nodes: &nodes,
                    verdicts: &[],
                    ineligible: &[],
                    environment: settings.spec.env.iter().cloned().collect(),
                    errors: vec![e.to_string()],
                },
                &judged,
            );
            let path = settings.out_dir.join("results.json");
            if save(&record, &settings.out_dir).is_ok() {
                say(settings, &format!("partial results: {}", path.display()));
            }
        }
    }
    result
}

async fn run(
    client: &KubeClient,
    settings: &Settings,
    shared: &Shared,
    started_at: &str,
) -> Result<Report> {
    let spec = &settings.spec;
    if settings.check_access {
        let denied = client.denied(REQUIRED_ACCESS).await?;
        if !denied.is_empty() {
            // Nodes are cluster-scoped: said as such, not as part of the namespace.
            let list = |namespaced: bool| -> Vec<String> {
                denied
                    .iter()
                    .filter(|a| a.namespaced == namespaced)
                    .map(|a| a.to_string())
                    .collect()
            };
            let mut parts = vec![];
            let (here, everywhere) = (list(true), list(false));
            if !here.is_empty() {
                parts.push(format!(
                    "in namespace `{}`: {}",
                    client.namespace(),
                    here.join(", ")
                ));
            }
            if !everywhere.is_empty() {
                parts.push(format!("cluster-wide: {}", everywhere.join(", ")));
            }
            return Err(Error::missing(
                format!("missing permissions {}", parts.join("; ")),
                "apply deploy/rbac.yaml (its Role in the namespace, its ClusterRole for nodes), \
                 or ask a cluster admin to",
            ));
        }
    }

    // Before preflight: a run with this id holds its nodes' GPUs, and the answer (exit 2)
    // does not depend on the nodes.
    refuse_taken_run_id(client, &spec.run).await?;
    let candidates = fetch_nodes(client, &settings.selection).await?;
    let in_use = client.gpus_in_use().await?;
    if in_use.is_none() {
        say(
            settings,
            "warning: cannot list pods cluster-wide, so GPUs used by other pods are not checked",
        );
    }
    let preflight = nodes::assess(
        &candidates,
        &settings.requirements,
        &in_use.unwrap_or_default(),
    );
    let ineligible: Vec<(String, String)> = preflight
        .problems
        .iter()
        .map(|p| (p.node.clone(), p.message.clone()))
        .collect();
    for (node, why) in &ineligible {
        say(settings, &format!("node {node}: {why}"));
    }
    if !ineligible.is_empty() && !settings.skip_ineligible {
        let mut bad: Vec<&str> = ineligible.iter().map(|(n, _)| n.as_str()).collect();
        bad.dedup();
        return Err(Error::missing(
            format!("{} node(s) cannot be tested: {}", bad.len(), bad.join(", ")),
            "fix what is listed above, or pass --skip-ineligible to test the other nodes",
        ));
    }
    if !preflight.pools.iter().any(|(p, _)| p.nodes.len() >= 2) {
        return Err(Error::missing(
            format!(
                "no two eligible nodes share an instance type and zone (eligible: {})",
                preflight.eligible.len()
            ),
            "select at least two nodes of the same instance type and zone",
        ));
    }
    *shared.nodes.lock().expect("not poisoned") = preflight.eligible.clone();
    let pools: Vec<(Pool, PodResources)> = preflight.pools.clone();
    let mut planner = Planner::new(
        settings.mode,
        pools.iter().map(|(p, _)| p.clone()).collect(),
        settings.seed,
    );
    say(
        settings,
        &format!(
            "run {} in namespace {}: {} nodes in {} pool(s), mode {}",
            spec.run,
            client.namespace(),
            preflight.eligible.len(),
            pools.len(),
            settings.mode.as_str()
        ),
    );

    let token = names::new_token().map_err(|e| {
        Error::missing(
            format!("no random source for the run token: {e}"),
            "check /dev/urandom",
        )
    })?;
    shared.created.store(true, Ordering::SeqCst);
    let mut anchor_map = manifest::anchor_config_map(spec, plan_json(settings, &pools));
    anchor_map
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(LAUNCH_ANNOTATION.into(), shared.nonce.clone());
    let anchor = match client.create(&anchor_map).await {
        Ok(a) => a,
        // Another launch took the run id between the check and the create: not ours to
        // touch, so nothing to clean up either.
        Err(e) if e.to_string().contains("already exists") => {
            shared.created.store(false, Ordering::SeqCst);
            refuse_taken_run_id(client, &spec.run).await?;
            // No run carries the id, yet a ConfigMap has the anchor's name (one without the
            // run label, made by someone else): the id is taken all the same.
            let name = names::anchor(&spec.run);
            return Err(match client.named::<ConfigMap>(&name).await? {
                Some(other) => Error::Usage {
                    message: format!(
                        "run id `{}` is taken in namespace `{}`: ConfigMap {name} (created {}) \
                         is there, and is not a netcheck run's (no {} label); it is left as it is",
                        spec.run,
                        client.namespace(),
                        other
                            .metadata
                            .creation_timestamp
                            .as_ref()
                            .map_or_else(|| "at an unknown time".into(), |t| t.0.to_string()),
                        names::RUN_LABEL,
                    ),
                    hint: Some("pick another --run-id (or none, for a fresh one)".into()),
                },
                None => e,
            });
        }
        Err(e) => return Err(e),
    };
    let owner = manifest::owner_reference("v1", "ConfigMap", &anchor.metadata);
    let secret = client
        .create(&manifest::token_secret(spec, &token, owner.clone()))
        .await?;
    *shared.secret_uid.lock().expect("not poisoned") = secret.metadata.uid;

    let mut seq = 0;
    let mut finished: Vec<(String, Judged)> = vec![];
    let mut withdrawn: Vec<(String, String)> = vec![];
    let mut rounds = 0;
    loop {
        // What changed since the last round: a node deleted, cordoned, NotReady or newly
        // tainted is not paired again. Only when a round follows: after the last one there is
        // nothing to keep it out of.
        if rounds > 0 && planner.has_next_round() {
            for (node, why) in recheck(client, settings, &preflight.eligible, &withdrawn).await? {
                say(
                    settings,
                    &format!("node {node} changed since round {rounds}: {why}; not paired again"),
                );
                planner.withdraw(&node, &format!("{why} after round {rounds}"));
                withdrawn.push((node, why));
            }
        }
        let Some(round) = planner.next_round() else {
            break;
        };
        rounds = round.number;
        let nodes: usize = round.groups.iter().map(|g| g.nodes.len()).sum();
        say(
            settings,
            &format!(
                "round {} ({}): {} group(s) on {nodes} nodes",
                round.number,
                round.purpose,
                round.groups.len()
            ),
        );
        let pool_list: Vec<Pool> = pools.iter().map(|(p, _)| p.clone()).collect();
        for line in round.sitting_out_lines(&pool_list) {
            say(settings, &format!("  {line}"));
        }
        let mut groups = vec![];
        for g in &round.groups {
            seq += 1;
            let (pool, resources) = &pools[g.pool];
            let spec_g = GroupSpec {
                seq,
                round: round.number,
                pool: pool.name.clone(),
                nodes: g.nodes.clone(),
                resources: resources.clone(),
                expect: expectation(settings, resources),
            };
            let mut job_owner = None;
            for job in manifest::group_jobs(spec, &spec_g, owner.clone()) {
                let job = client.create(&job).await?;
                // Rank 0's Job owns the Service.
                if job_owner.is_none() {
                    job_owner = manifest::owner_reference("batch/v1", "Job", &job.metadata);
                }
            }
            client
                .create(&manifest::group_service(spec, &spec_g, job_owner))
                .await?;
            groups.push((g.clone(), spec_g));
        }
        let mut judged = watch::watch_round(client, settings, &groups, shared).await?;
        let reference: Vec<(String, crate::results::PairResult)> = finished
            .iter()
            .chain(judged.iter())
            .map(|(pool, j)| (pool.clone(), j.pair.clone()))
            .collect();
        let before: Vec<String> = judged.iter().map(|(_, j)| j.pair.status.clone()).collect();
        collect::mark_slow(&mut judged, &reference, settings.slow_fraction);
        for ((group, _), ((_, j), old)) in groups.iter().zip(judged.iter().zip(before)) {
            if j.pair.status != old {
                say(
                    settings,
                    &format!(
                        "  {}: {}",
                        j.pair.name,
                        j.pair.message.clone().unwrap_or_default()
                    ),
                );
            }
            planner.record(group, j.outcome);
        }
        finished.extend(judged);
    }

    let verdicts = planner.verdicts();
    let link_failures = planner.link_failures();
    let mut errors = vec![];
    for (pool, _) in &pools {
        let in_pool: Vec<&Judged> = finished
            .iter()
            .filter(|(p, _)| *p == pool.name)
            .map(|(_, j)| j)
            .collect();
        if in_pool.len() >= 2 && in_pool.iter().all(|j| j.pair.status != collect::PASS) {
            let note = format!(
                "no pair of pool {} passed: a common cause (image, EFA or security-group setup, \
                 NCCL configuration) is more likely than bad nodes; see the first pair's message",
                pool.name
            );
            say(settings, &format!("note: {note}"));
            errors.push(note);
        }
    }
    for (a, b) in &link_failures {
        errors.push(format!(
            "pair {a}+{b} failed although both nodes passed with other peers: the link between them, or a flaky run"
        ));
    }
    let all: Vec<Judged> = finished.into_iter().map(|(_, j)| j).collect();
    // collect::merge records it in errors[]; said here as it is found.
    if let Some(finding) = collect::image_finding(&all) {
        say(settings, &format!("note: {finding}"));
    }
    let record = collect::merge(
        RunSummary {
            started_at: started_at.to_string(),
            status: RunStatus::Complete,
            label: label(settings, preflight.eligible.len()),
            nodes: &preflight.eligible,
            verdicts: &verdicts,
            ineligible: &ineligible,
            environment: spec.env.iter().cloned().collect(),
            errors,
        },
        &all,
    );
    let results_path = save(&record, &settings.out_dir)?;
    // One entry per node (preflight may have said several things about one).
    let mut untested: Vec<(String, String)> = vec![];
    let not_run = verdicts
        .iter()
        .filter(|v| v.verdict == Verdict::Untested)
        .map(|v| (v.node.clone(), v.reason.clone()));
    for (node, why) in ineligible.iter().cloned().chain(not_run) {
        match untested.iter_mut().find(|(n, _)| *n == node) {
            Some((_, said)) => {
                said.push_str("; ");
                said.push_str(&why);
            }
            None => untested.push((node, why)),
        }
    }
    Ok(Report {
        record,
        verdicts,
        link_failures,
        results_path,
        untested,
        allow_untested: settings.allow_untested,
    })
}

/// Annotation on the anchor: which launch process created it.
const LAUNCH_ANNOTATION: &str = "netcheck.io/launch";

/// Exit 2 when the run id is in use in the namespace (its anchor exists), naming that run.
async fn refuse_taken_run_id(client: &KubeClient, run: &str) -> Result<()> {
    let anchors: Vec<ConfigMap> = client.labelled(&names::run_selector(run)).await?;
    let Some(taken) = anchors.first() else {
        return Ok(());
    };
    let plan: serde_json::Value = taken
        .data
        .as_ref()
        .and_then(|d| d.get("plan.json"))
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or_default();
    let since = plan["started_at"]
        .as_str()
        .map(str::to_string)
        .or_else(|| {
            taken
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string())
        })
        .unwrap_or_else(|| "an unknown time".into());
    let what = match (plan["mode"].as_str(), plan["image"].as_str()) {
        (Some(mode), Some(image)) => format!(", mode {mode}, image {image}"),
        _ => String::new(),
    };
    Err(Error::Usage {
        message: format!(
            "run id `{run}` is taken in namespace `{}`: run {run} (ConfigMap {}, started {since}{what}) is there",
            client.namespace(),
            taken.metadata.name.as_deref().unwrap_or("?"),
        ),
        hint: Some(format!(
            "pick another --run-id (or none, for a fresh one); if run {run} is over, remove it with \
             kubectl delete -n {} configmap,secret,job,service -l {}",
            client.namespace(),
            names::run_selector(run)
        )),
    })
}

/// The eligible nodes that changed since preflight (deleted, cordoned, NotReady, newly
/// tainted), with how; those already withdrawn are not repeated.
async fn recheck(
    client: &KubeClient,
    settings: &Settings,
    eligible: &[NodeInfo],
    withdrawn: &[(String, String)],
) -> Result<Vec<(String, String)>> {
    let current: Vec<k8s_openapi::api::core::v1::Node> = match &settings.selection {
        Selection::Nodes(names) => {
            let mut found = vec![];
            for name in names {
                if let Some(node) = client.node(name).await? {
                    found.push(node);
                }
            }
            found
        }
        Selection::Selector(selector) => client.nodes(selector).await?,
    };
    let mut changed = vec![];
    for info in eligible {
        if withdrawn.iter().any(|(n, _)| *n == info.name) {
            continue;
        }
        let node = current
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(info.name.as_str()));
        let why = match node {
            None if matches!(settings.selection, Selection::Selector(_)) => {
                "deleted (or no longer matches the selector)".to_string()
            }
            None => "deleted".to_string(),
            Some(node) => {
                let problems = nodes::node_problems(node, &settings.requirements.tolerations);
                if problems.is_empty() {
                    continue;
                }
                problems.join("; ")
            }
        };
        changed.push((info.name.clone(), why));
    }
    Ok(changed)
}

fn label(settings: &Settings, nodes: usize) -> String {
    format!(
        "launch {} on {nodes} nodes (run {})",
        settings.mode.as_str(),
        settings.spec.run
    )
}

/// `--expect` where given (`any`: none); else `efa` where the pods get EFA devices.
fn expectation(settings: &Settings, resources: &PodResources) -> Option<String> {
    match settings.expect.as_deref() {
        Some("any") => None,
        Some(e) => Some(e.to_string()),
        None if resources.efa > 0 => Some("efa".into()),
        None => None,
    }
}

async fn fetch_nodes(
    client: &KubeClient,
    selection: &Selection,
) -> Result<Vec<k8s_openapi::api::core::v1::Node>> {
    match selection {
        Selection::Nodes(names) => {
            let mut found = vec![];
            let mut missing = vec![];
            for name in names {
                match client.node(name).await? {
                    Some(node) => found.push(node),
                    None => missing.push(name.as_str()),
                }
            }
            if !missing.is_empty() {
                return Err(Error::missing(
                    format!("node(s) not found: {}", missing.join(", ")),
                    "check the names with `kubectl get nodes`",
                ));
            }
            Ok(found)
        }
        Selection::Selector(selector) => {
            let found = client.nodes(selector).await?;
            if found.is_empty() {
                return Err(Error::missing(
                    format!("no node matches the selector `{selector}`"),
                    format!("check it with `kubectl get nodes -l '{selector}'`"),
                ));
            }
            Ok(found)
        }
    }
}

/// What the anchor ConfigMap records about the run.
fn plan_json(settings: &Settings, pools: &[(Pool, PodResources)]) -> String {
    let pools: Vec<serde_json::Value> = pools
        .iter()
        .map(|(p, r)| {
            serde_json::json!({
                "pool": p.name, "nodes": p.nodes, "gpus": r.gpus, "efa": r.efa,
                "hugepages_bytes": r.hugepages_bytes, "memory_bytes": r.memory_bytes,
            })
        })
        .collect();
    serde_json::json!({
        "run": settings.spec.run,
        "mode": settings.mode.as_str(),
        "seed": settings.seed,
        "image": settings.spec.image,
        "netcheck_image": settings.spec.image_opts.netcheck_image,
        "entrypoint": settings.spec.image_opts.entrypoint.as_str(),
        "started_at": crate::results::now_rfc3339(),
        "pools": pools,
    })
    .to_string()
}

/// Deletes what this process created, and only that: the anchor carrying its mark (by UID),
/// the Jobs that anchor owns, the Services those Jobs own, the Secret (owned by the anchor),
/// found by label and checked by owner UID, so a create cut short by Ctrl-C is found too and
/// another run with the same id is never touched. Then waits (bounded) for the pods to go, so
/// the nodes are free when the command returns. Problems are reported, not raised: the run's
/// own outcome matters more, and the message says how to finish by hand.
async fn cleanup(client: &KubeClient, settings: &Settings, nonce: &str, secret: Option<String>) {
    let run = &settings.spec.run;
    let selector = names::run_selector(run);
    let by_hand = format!(
        "kubectl delete -n {} configmap,secret,job,service,pod -l {}",
        client.namespace(),
        selector
    );
    let result: Result<Vec<String>> = async {
        let anchors: Vec<ConfigMap> = client.labelled(&selector).await?;
        let Some(anchor) = anchors.into_iter().find(|a| {
            a.metadata
                .annotations
                .as_ref()
                .and_then(|m| m.get(LAUNCH_ANNOTATION))
                .map(String::as_str)
                == Some(nonce)
        }) else {
            return Ok(vec![]);
        };
        let anchor_uid = anchor.metadata.uid.clone().unwrap_or_default();
        let owned_by = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                        uids: &[String]| {
            meta.owner_references
                .iter()
                .flatten()
                .any(|o| uids.contains(&o.uid))
        };
        // The Jobs and Services first, then the anchor: if we are cut short, the garbage
        // collector removes what the anchor owns.
        let jobs: Vec<Job> = client.labelled(&selector).await?;
        let mut job_uids = vec![];
        for job in jobs
            .iter()
            .filter(|j| owned_by(&j.metadata, std::slice::from_ref(&anchor_uid)))
        {
            let (Some(name), Some(uid)) = (&job.metadata.name, &job.metadata.uid) else {
                continue;
            };
            client.delete_uid::<Job>(name, uid).await?;
            job_uids.push(uid.clone());
        }
        let mut owners = job_uids.clone();
        owners.push(anchor_uid.clone());
        let services: Vec<Service> = client.labelled(&selector).await?;
        for svc in services.iter().filter(|s| owned_by(&s.metadata, &owners)) {
            if let (Some(name), Some(uid)) = (&svc.metadata.name, &svc.metadata.uid) {
                client.delete_uid::<Service>(name, uid).await?;
            }
        }
        let name = anchor.metadata.name.clone().unwrap_or_default();
        client.delete_uid::<ConfigMap>(&name, &anchor_uid).await?;
        // By name and UID, not by listing (`list secrets` would read every Secret in the
        // namespace); one whose create was cut short goes with the anchor it is owned by.
        if let Some(uid) = &secret {
            client
                .delete_uid::<k8s_openapi::api::core::v1::Secret>(&names::anchor(run), uid)
                .await?;
        }
        Ok(job_uids)
    }
    .await;
    let job_uids = match result {
        Ok(uids) => uids,
        Err(e) => {
            say(
                settings,
                &format!("warning: cleanup failed ({e}); finish it with: {by_hand}"),
            );
            return;
        }
    };
    let ours = |pod: &k8s_openapi::api::core::v1::Pod| {
        pod.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| job_uids.contains(&o.uid))
    };
    let deadline = Instant::now() + settings.cleanup_wait;
    loop {
        match client.pods(&selector).await {
            Ok(pods) if !pods.iter().any(ours) => return,
            Ok(pods) if Instant::now() >= deadline => {
                say(
                    settings,
                    &format!(
                        "warning: {} pod(s) still terminating; check with: kubectl get pods -n {} -l {}",
                        pods.iter().filter(|p| ours(p)).count(),
                        client.namespace(),
                        selector
                    ),
                );
                return;
            }
            Ok(_) => tokio::time::sleep(settings.poll).await,
            Err(e) => {
                say(
                    settings,
                    &format!("warning: cannot check that the pods are gone ({e}); see: {by_hand}"),
                );
                return;
            }
        }
    }
}

/// A file under the run's output folder (created as needed), written as every output is.
pub(super) fn write_file(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    }
    crate::output::write_file(path, text.as_bytes())
}

fn save(record: &RunRecord, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    let path = dir.join("results.json");
    record.save(&path)?;
    Ok(path)
}

pub(super) fn say(settings: &Settings, message: &str) {
    if !settings.quiet {
        crate::say!("{message}");
    }
}
