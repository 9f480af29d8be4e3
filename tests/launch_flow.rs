//! `launch` flows against the fake API server (tests/launch_fake.rs): create, watch to
//! Running, logs, results, cleanup; Pending diagnosis, image pulls, OOM, hangs; cleanup after
//! errors and Ctrl-C. Every test also checks that nothing is left in the namespace.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use http::Method;
use netcheck::error::Error;
use netcheck::launch::kube::launcher::{Report, Selection, Settings};
use netcheck::launch::kube::manifest::RunSpec;
use netcheck::launch::kube::nodes::{Requirements, default_tolerations};
use netcheck::launch::kube::status::Limits;
use netcheck::launch::kube::{Conclusion, launch};
use netcheck::launch::plan::{Mode, Verdict};
use netcheck::results::{PairResult, RunRecord};
use serde_json::Value;

use crate::launch_fake::{Behavior, Fake, PodCtx, node};
use crate::util::{self, container_args};

const NS: &str = "bench";

fn settings(out: &Path, nodes: &[impl AsRef<str>]) -> Settings {
    Settings {
        selection: Selection::Nodes(nodes.iter().map(|n| n.as_ref().to_string()).collect()),
        mode: Mode::Pairs,
        seed: None,
        requirements: Requirements {
            memory_bytes: 32 << 30,
            tolerations: default_tolerations(),
            ..Default::default()
        },
        expect: None,
        spec: RunSpec {
            run: "t1".into(),
            namespace: NS.into(),
            image: "registry.example/netcheck:test".into(),
            image_pull_policy: None,
            worker_args: vec!["--timeout".into(), "5m".into()],
            strict_net: false,
            deadline_secs: 1800,
            ..util::run_spec()
        },
        limits: Limits {
            schedule: Duration::from_millis(60),
            run: Duration::from_millis(150),
            peer_exit_grace: Duration::from_millis(50),
        },
        poll: Duration::from_millis(1),
        cleanup_wait: Duration::from_millis(200),
        keep: false,
        skip_ineligible: false,
        allow_untested: false,
        slow_fraction: 0.5,
        check_access: true,
        out_dir: out.to_path_buf(),
        quiet: true,
    }
}

fn g6(n: usize) -> (Vec<Value>, Vec<String>) {
    let names: Vec<String> = (0..n).map(|i| format!("node-{i}")).collect();
    let nodes = names.iter().map(|n| node(n, "g6.12xlarge", 4, 1)).collect();
    (nodes, names)
}

/// Rank 0's log: NCCL lines, then the result line with bandwidths scaled by `scale`.
fn rank0_log(scale: f64) -> String {
    util::rank0_log(scale, "")
}

/// Every pod exits 0; rank 0 prints its result with the bandwidths scaled by `scale`.
fn passes(ctx: &PodCtx, scale: f64) -> Behavior {
    Behavior::Exit {
        code: 0,
        log: if ctx.index == 0 {
            rank0_log(scale)
        } else {
            String::new()
        },
    }
}

/// The pair record named `name` (`node-a+node-b`).
fn pair<'a>(report: &'a Report, name: &str) -> &'a PairResult {
    report
        .record
        .pairs
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no pair {name}"))
}

/// Pods pass, except in groups holding a node of `bad`: those exit 1.
fn script(bad: &'static [&'static str]) -> impl Fn(&PodCtx) -> Behavior + Send + Sync {
    move |ctx| {
        if ctx.nodes.iter().any(|n| bad.contains(&n.as_str())) {
            Behavior::Exit {
                code: 1,
                log:
                    "NCCL INFO Using network Socket\nerror: NCCL all_gather: 1234 wrong elements\n"
                        .into(),
            }
        } else if ctx.index == 0 {
            Behavior::Exit {
                code: 0,
                log: rank0_log(1.0),
            }
        } else {
            Behavior::Exit {
                code: 0,
                log: "NCCL INFO Using network AWS Libfabric\n".into(),
            }
        }
    }
}

async fn run(fake: &Fake, settings: &Settings) -> Result<Report, Error> {
    run_until(fake, settings, std::future::pending()).await
}

async fn run_until(
    fake: &Fake,
    settings: &Settings,
    shutdown: impl Future<Output = ()>,
) -> Result<Report, Error> {
    let client = fake.client(NS);
    tokio::time::timeout(Duration::from_secs(20), launch(&client, settings, shutdown))
        .await
        .expect("the launch finished in time")
}

fn verdict(report: &Report, node: &str) -> Verdict {
    report
        .verdicts
        .iter()
        .find(|v| v.node == node)
        .unwrap()
        .verdict
}

#[tokio::test]
async fn a_healthy_group_passes_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(4);
    let fake = Fake::new(nodes, script(&[]));
    let report = run(&fake, &settings(dir.path(), &names)).await.unwrap();

    assert_eq!(report.conclusion(), Conclusion::Pass);
    assert!(report.verdicts.iter().all(|v| v.verdict == Verdict::Pass));
    let pairs: Vec<&str> = report
        .record
        .pairs
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(pairs, ["node-0+node-1", "node-2+node-3"]);
    let pair = &report.record.pairs[0];
    assert_eq!(pair.status, "pass");
    assert_eq!(pair.rows.len(), 3);
    assert_eq!(
        pair.analysis
            .as_ref()
            .unwrap()
            .inter_node_transport
            .as_str(),
        "efa"
    );
    assert!(report.record.rows.iter().all(|r| r.group.is_some()));
    assert_eq!(report.record.nodes.len(), 4);

    // results.json and the pods' logs are on disk.
    let saved = RunRecord::load(&dir.path().join("results.json")).unwrap();
    assert_eq!(saved.pairs.len(), 2);
    assert_eq!(saved.source, "launch");
    let log = std::fs::read_to_string(dir.path().join("pods/g1/rank0-node-0.log")).unwrap();
    assert!(log.contains("NETCHECK_RESULT {"), "{log}");
    assert!(dir.path().join("pods/g1/rank1-node-1.log").exists());

    assert_eq!(fake.left(), Vec::<String>::new());
    // Jobs are deleted with propagation Background (the fake orphans pods otherwise, which
    // `left()` would show); the Services explicitly too.
    let deletes = fake
        .requests()
        .iter()
        .filter(|r| r.starts_with("DELETE"))
        .count();
    assert!(deletes >= 4, "{:?}", fake.requests());
}

#[tokio::test]
async fn the_objects_follow_the_worker_contract() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(2);
    let fake = Fake::new(nodes, script(&[]));
    run(&fake, &settings(dir.path(), &names)).await.unwrap();

    let anchor = &fake.created("configmaps")[0];
    let secret = &fake.created("secrets")[0];
    let job = &fake.created("jobs")[0];
    let service = &fake.created("services")[0];
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["uid"],
        anchor["metadata"]["uid"]
    );
    assert_eq!(
        job["metadata"]["ownerReferences"][0]["uid"],
        anchor["metadata"]["uid"]
    );
    assert_eq!(
        service["metadata"]["ownerReferences"][0]["uid"],
        job["metadata"]["uid"]
    );
    assert_eq!(service["spec"]["publishNotReadyAddresses"], true);
    assert_eq!(service["spec"]["clusterIP"], "None");

    // One Job per rank (issue 24 item 2): each pod pinned to its own node.
    assert_eq!(fake.created("jobs").len(), 2);
    assert_eq!(job["metadata"]["name"], "netcheck-t1-g1-0");
    assert_eq!(job["spec"]["backoffLimit"], 0);
    assert!(job["spec"]["completionMode"].is_null());
    assert_eq!(job["spec"]["completions"], 1);
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["subdomain"], "netcheck-t1-g1");
    assert_eq!(pod["hostname"], "netcheck-t1-g1-0");
    let c = &pod["containers"][0];
    // Through the image's entrypoint (the default): no command, netcheck leads the args.
    assert!(c.get("command").is_none(), "{c}");
    let args = container_args(c);
    assert_eq!(
        args[..12],
        [
            "netcheck",
            "run",
            "--nnodes",
            "2",
            "--node-rank",
            "$(NODE_RANK)",
            "--rendezvous",
            "netcheck-t1-g1-0.netcheck-t1-g1.bench.svc:29400",
            "--out",
            "/results",
            "--gpus",
            "4"
        ]
    );
    // Nodes with EFA: the worker must see EFA carry the traffic.
    assert!(
        args.windows(2).any(|w| w == ["--expect", "efa"]),
        "{args:?}"
    );
    let env = c["env"].as_array().unwrap();
    let var = |name: &str| env.iter().find(|e| e["name"] == name).cloned().unwrap();
    assert_eq!(var("NCCL_DEBUG")["value"], "INFO");
    assert_eq!(
        var("NETCHECK_RDZV_TOKEN")["valueFrom"]["secretKeyRef"]["name"],
        "netcheck-t1"
    );
    assert_eq!(secret["stringData"]["token"].as_str().unwrap().len(), 32);
    // Requests are the nodes' allocatable counts, plus huge pages for EFA.
    let limits = &c["resources"]["limits"];
    assert_eq!(limits["nvidia.com/gpu"], "4");
    assert_eq!(limits["vpc.amazonaws.com/efa"], "1");
    assert_eq!(limits["hugepages-2Mi"], "5Gi");
    assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
    let pinned = &pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    // Rank 0's node only (one value: the API server allows one per `metadata.name` field
    // selector); rank 1's Job pins its pod to node-1.
    assert_eq!(
        pinned["nodeSelectorTerms"],
        serde_json::json!([
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-0"]}]},
        ])
    );
    let rank1 = &fake.created("jobs")[1];
    assert_eq!(
        rank1["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchFields"][0]["values"],
        serde_json::json!(["node-1"])
    );
    let rank_env = |j: &serde_json::Value| {
        j["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "NODE_RANK")
            .unwrap()["value"]
            .clone()
    };
    assert_eq!((rank_env(job), rank_env(rank1)), ("0".into(), "1".into()));
}

#[tokio::test]
async fn a_bad_node_is_named_by_re_pairing_it_with_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(6);
    let fake = Fake::new(nodes, script(&["node-3"]));
    let report = run(&fake, &settings(dir.path(), &names)).await.unwrap();

    assert_eq!(report.conclusion(), Conclusion::Fail);
    assert_eq!(verdict(&report, "node-3"), Verdict::Fail);
    for good in ["node-0", "node-1", "node-2", "node-4", "node-5"] {
        assert_eq!(verdict(&report, good), Verdict::Pass, "{good}");
    }
    let failed = pair(&report, "node-2+node-3");
    assert_eq!(failed.status, "fail");
    assert!(
        failed.message.as_ref().unwrap().contains("wrong elements"),
        "{failed:?}"
    );
    assert_eq!(
        report
            .record
            .nodes
            .iter()
            .find(|n| n.name == "node-3")
            .unwrap()
            .verdict,
        "fail"
    );
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[tokio::test]
async fn a_pending_pod_reports_the_schedulers_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(2);
    let reason = "0/5 nodes are available: 1 Insufficient vpc.amazonaws.com/efa, 4 node(s) didn't match Pod's node affinity/selector.";
    let fake = Fake::new(nodes, move |ctx: &PodCtx| {
        if ctx.index == 1 {
            Behavior::Unschedulable(reason.into())
        } else {
            Behavior::Hang { log: String::new() }
        }
    });
    let report = run(&fake, &settings(dir.path(), &names)).await.unwrap();

    assert_eq!(report.conclusion(), Conclusion::Inconclusive);
    let pair = &report.record.pairs[0];
    assert_eq!(pair.status, "unschedulable");
    let message = pair.message.as_ref().unwrap();
    assert!(
        message.contains("Insufficient vpc.amazonaws.com/efa"),
        "{message}"
    );
    // The event repeats the condition's words: said once (issue 24 item 8).
    assert_eq!(
        message
            .matches("Insufficient vpc.amazonaws.com/efa")
            .count(),
        1,
        "{message}"
    );
    assert!(
        report
            .verdicts
            .iter()
            .all(|v| v.verdict == Verdict::Inconclusive)
    );
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[tokio::test]
async fn image_pull_errors_and_oom_are_inconclusive_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(2);
    let fake = Fake::new(nodes.clone(), |_: &PodCtx| Behavior::ImagePull);
    let report = run(&fake, &settings(dir.path(), &names)).await.unwrap();
    let message = report.record.pairs[0].message.clone().unwrap();
    assert_eq!(report.record.pairs[0].status, "error");
    assert!(message.contains("ImagePullBackOff"), "{message}");
    assert_eq!(report.conclusion(), Conclusion::Inconclusive);
    assert_eq!(fake.left(), Vec::<String>::new());

    let fake = Fake::new(nodes, |ctx: &PodCtx| {
        if ctx.index == 0 {
            Behavior::OomKilled
        } else {
            Behavior::Hang { log: String::new() }
        }
    });
    let report = run(&fake, &settings(dir.path(), &names)).await.unwrap();
    let message = report.record.pairs[0].message.clone().unwrap();
    assert!(
        message.contains("OOMKilled") && message.contains("--memory"),
        "{message}"
    );
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[tokio::test]
async fn a_hanging_pair_times_out_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(4);
    let fake = Fake::new(nodes, |ctx: &PodCtx| {
        if ctx.nodes.iter().any(|n| n == "node-1") {
            Behavior::Hang {
                log: "NCCL INFO ncclCommInitRankConfig ... Init START\n".into(),
            }
        } else {
            passes(ctx, 1.0)
        }
    });
    let report = run(&fake, &settings(dir.path(), &names)).await.unwrap();

    assert_eq!(pair(&report, "node-0+node-1").status, "timeout");
    assert_eq!(pair(&report, "node-2+node-3").status, "pass");
    assert_eq!(verdict(&report, "node-1"), Verdict::Fail);
    assert_eq!(verdict(&report, "node-0"), Verdict::Pass);
    // The hung pods' logs were collected before they were deleted.
    let log = std::fs::read_to_string(dir.path().join("pods/g1/rank1-node-1.log")).unwrap();
    assert!(log.contains("Init START"));
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[tokio::test]
async fn ctrl_c_deletes_everything_created() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(4);
    let fake = Fake::new(nodes, |_: &PodCtx| Behavior::Hang { log: String::new() });
    let mut s = settings(dir.path(), &names);
    s.limits.run = Duration::from_secs(60);
    let running = fake.running.clone();
    let result = run_until(&fake, &s, async move { running.notified().await }).await;

    let err = result.unwrap_err();
    assert!(matches!(err, Error::Interrupted), "{err}");
    assert_eq!(err.exit_code(), 130);
    assert!(
        !fake.created("jobs").is_empty(),
        "the run got as far as creating Jobs"
    );
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[tokio::test]
async fn keep_leaves_the_objects_for_debugging() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(2);
    let fake = Fake::new(nodes, script(&[]));
    let mut s = settings(dir.path(), &names);
    s.keep = true;
    run(&fake, &s).await.unwrap();
    let left = fake.left();
    for kind in [
        "configmaps/netcheck-t1",
        "secrets/netcheck-t1",
        "jobs/netcheck-t1-g1-0",
        "jobs/netcheck-t1-g1-1",
        "services/netcheck-t1-g1",
    ] {
        assert!(left.contains(&kind.to_string()), "{kind} kept: {left:?}");
    }
}

#[tokio::test]
async fn an_api_error_mid_run_cleans_up_what_was_created() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(2);
    let fake = Fake::new(nodes, script(&[]));
    fake.fail_on(Method::POST, "/services", 500, u32::MAX);
    let err = run(&fake, &settings(dir.path(), &names)).await.unwrap_err();

    assert_eq!(err.exit_code(), 4, "{err}");
    assert!(
        err.to_string()
            .contains("cannot create Service `netcheck-t1-g1`"),
        "{err}"
    );
    assert_eq!(
        fake.created("jobs").len(),
        2,
        "the rank Jobs were created before the Service failed"
    );
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[tokio::test]
async fn missing_permissions_stop_the_run_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(2);
    let fake = Fake::new(nodes, script(&[]));
    fake.deny("jobs", "create");
    let err = run(&fake, &settings(dir.path(), &names)).await.unwrap_err();

    assert_eq!(err.exit_code(), 3);
    assert!(err.to_string().contains("create jobs (batch)"), "{err}");
    assert!(err.hint().unwrap().contains("deploy/rbac.yaml"));
    assert!(
        !fake
            .requests()
            .iter()
            .any(|r| r.starts_with("POST /api/v1/namespaces"))
    );
}

#[tokio::test]
async fn preflight_names_the_nodes_that_cannot_be_tested() {
    let dir = tempfile::tempdir().unwrap();
    let mut cordoned = node("p5-a", "p5.48xlarge", 8, 32);
    cordoned["spec"]["unschedulable"] = true.into();
    let mut tainted = node("p5-b", "p5.48xlarge", 8, 32);
    tainted["spec"]["taints"] =
        serde_json::json!([{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]);
    let nodes = vec![
        cordoned,
        tainted,
        node("p5-c", "p5.48xlarge", 8, 0), // EFA device plugin not running
        node("p5-d", "p5.48xlarge", 8, 32),
        node("p5-e", "p5.48xlarge", 8, 32),
    ];
    let names = ["p5-a", "p5-b", "p5-c", "p5-d", "p5-e"];
    let fake = Fake::new(nodes.clone(), script(&[]));
    fake.busy("p5-e", 8);
    let err = run(&fake, &settings(dir.path(), &names)).await.unwrap_err();
    assert_eq!(err.exit_code(), 3);
    let message = err.to_string();
    assert!(
        message.contains("4 node(s) cannot be tested: p5-a, p5-b, p5-c, p5-e"),
        "{message}"
    );
    assert!(
        !fake
            .requests()
            .iter()
            .any(|r| r.starts_with("POST /api/v1/namespaces"))
    );

    // With --skip-ineligible the others are tested and the left-out ones are listed.
    let six: Vec<_> = nodes
        .into_iter()
        .chain([node("p5-f", "p5.48xlarge", 8, 32)])
        .collect();
    let fake = Fake::new(six.clone(), script(&[]));
    fake.busy("p5-e", 8);
    let mut s = settings(
        dir.path(),
        &["p5-a", "p5-b", "p5-c", "p5-d", "p5-e", "p5-f"],
    );
    s.skip_ineligible = true;
    let report = run(&fake, &s).await.unwrap();
    // Untested is not passed (issue 24 item 6) unless accepted.
    assert_eq!(report.conclusion(), Conclusion::Inconclusive);
    assert_eq!(report.untested.len(), 4, "{:?}", report.untested);
    s.allow_untested = true;
    let fake = Fake::new(six, script(&[]));
    fake.busy("p5-e", 8);
    let report = run(&fake, &s).await.unwrap();
    assert_eq!(report.conclusion(), Conclusion::Pass);
    let reasons: Vec<(String, String)> = report
        .record
        .nodes
        .iter()
        .filter(|n| n.verdict == "ineligible")
        .map(|n| (n.name.clone(), n.reason.clone().unwrap()))
        .collect();
    let why = |node: &str| {
        reasons
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, r)| r.clone())
            .unwrap()
    };
    assert!(why("p5-a").contains("cordoned"));
    assert!(why("p5-b").contains("--toleration dedicated=training:NoSchedule"));
    assert!(
        why("p5-c")
            .contains("0 allocatable vpc.amazonaws.com/efa, 32 expected: a p5.48xlarge has 32")
    );
    assert!(why("p5-e").contains("requested by other pods"));
    assert_eq!(report.record.pairs[0].name, "p5-d+p5-f");
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[tokio::test]
async fn missing_nodes_and_empty_selectors_are_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, _) = g6(2);
    let fake = Fake::new(nodes, script(&[]));
    let err = run(&fake, &settings(dir.path(), &["node-0", "node-9"]))
        .await
        .unwrap_err();
    assert_eq!(err.exit_code(), 3);
    assert!(
        err.to_string().contains("node(s) not found: node-9"),
        "{err}"
    );

    let mut s = settings(dir.path(), &[] as &[&str]);
    s.selection = Selection::Selector("node.kubernetes.io/instance-type=p5.48xlarge".into());
    let err = run(&fake, &s).await.unwrap_err();
    assert!(err.to_string().contains("no node matches"), "{err}");

    s.selection = Selection::Selector("node.kubernetes.io/instance-type=g6.12xlarge".into());
    let report = run(&fake, &s).await.unwrap();
    assert_eq!(report.record.pairs.len(), 1);
}

#[tokio::test]
async fn a_slow_pair_fails_and_isolation_finds_the_slow_node() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(8);
    let fake = Fake::new(nodes, |ctx: &PodCtx| {
        let slow = ctx.nodes.iter().any(|n| n == "node-5");
        passes(ctx, if slow { 0.2 } else { 1.0 })
    });
    let report = run(&fake, &settings(dir.path(), &names)).await.unwrap();

    let slow = pair(&report, "node-4+node-5");
    assert_eq!(slow.status, "fail");
    assert!(
        slow.message.as_ref().unwrap().starts_with("slow:"),
        "{slow:?}"
    );
    assert_eq!(verdict(&report, "node-5"), Verdict::Fail);
    assert_eq!(verdict(&report, "node-4"), Verdict::Pass);
}

#[tokio::test]
async fn ring_and_full_modes() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(4);

    let fake = Fake::new(nodes.clone(), script(&[]));
    let mut s = settings(dir.path(), &names);
    s.mode = Mode::Ring;
    let report = run(&fake, &s).await.unwrap();
    assert_eq!(report.record.pairs.len(), 6, "every pair of 4 nodes");
    assert_eq!(fake.created("jobs").len(), 12, "one Job per rank");
    assert_eq!(fake.left(), Vec::<String>::new());

    let fake = Fake::new(nodes, script(&[]));
    s.mode = Mode::Full;
    let report = run(&fake, &s).await.unwrap();
    assert_eq!(report.record.pairs.len(), 1);
    assert_eq!(report.record.pairs[0].nodes.len(), 4);
    assert_eq!(fake.created("jobs").len(), 4, "one Job per rank");
    let job = &fake.created("jobs")[0];
    let args = job["spec"]["template"]["spec"]["containers"][0]["args"].clone();
    assert_eq!(args[3], "4", "--nnodes 4");
    assert_eq!(report.conclusion(), Conclusion::Pass);
}

#[tokio::test]
async fn refused_pods_are_reported_from_the_jobs_events_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(2);
    let fake = Fake::new(nodes, script(&[]));
    let refusal = "Error creating: pods \"netcheck-t1-g1-0-x\" is forbidden: violates PodSecurity \"baseline:latest\": non-default capabilities (container \"netcheck\" must not include \"IPC_LOCK\" in securityContext.capabilities.add)";
    fake.refuse_pods(refusal);
    let mut s = settings(dir.path(), &names);
    // The events are read after a tenth of the scheduling timeout.
    s.limits.schedule = Duration::from_secs(3);
    let started = std::time::Instant::now();
    let report = run(&fake, &s).await.unwrap();

    assert!(
        started.elapsed() < Duration::from_secs(2),
        "did not wait for the scheduling timeout"
    );
    let pair = &report.record.pairs[0];
    assert_eq!(pair.status, "error");
    let message = pair.message.as_ref().unwrap();
    assert!(
        message.starts_with("the Job created 0 of 2 pods [event FailedCreate: Error creating"),
        "{message}"
    );
    assert!(message.contains("IPC_LOCK"), "{message}");
    assert_eq!(report.conclusion(), Conclusion::Inconclusive);
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[tokio::test]
async fn a_few_failed_pod_listings_do_not_end_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, names) = g6(2);
    let fake = Fake::new(nodes, script(&[]));
    fake.fail_on(Method::GET, "/namespaces/bench/pods", 503, 3);
    // The fake's pods only move when the pods are listed: limits long enough for the retries.
    let mut s = settings(dir.path(), &names);
    s.limits.schedule = Duration::from_secs(20);
    s.limits.run = Duration::from_secs(20);
    let report = run(&fake, &s).await.unwrap();
    assert_eq!(
        report.conclusion(),
        Conclusion::Pass,
        "{:?}",
        report.record.pairs
    );
    let failed_lists = fake
        .requests()
        .iter()
        .filter(|r| r.starts_with("GET /api/v1/namespaces/bench/pods?"))
        .count();
    assert!(failed_lists >= 4, "the listing was retried");
    assert_eq!(fake.left(), Vec::<String>::new());
}
