//! `netcheck launch` against a real control plane (tests/kube_env.rs): the real API server's
//! validation, RBAC and garbage collector, the real Job controller and scheduler, kwok's fake
//! GPU nodes and pods, pod logs through `pods/log`. Skipped (with the reason) where the control
//! plane is not built; a failure under `CI=true`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use netcheck::results::RunRecord;
use serde_json::Value;

use crate::kube_env::{Act, FakeNode, PodCtx, TestNs, cluster};
use crate::util::fixture;

const IMAGE: &str = "registry.example.com/netcheck:test";

/// What a `launch` run left.
struct Launched {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    out: PathBuf,
    elapsed: Duration,
    _dir: tempfile::TempDir,
}

impl Launched {
    fn results(&self) -> Value {
        let text = std::fs::read_to_string(self.out.join("results.json"))
            .unwrap_or_else(|e| panic!("results.json: {e}\n{}", self.stderr));
        serde_json::from_str(&text).unwrap()
    }

    /// The verdict column of the node's line on stdout.
    fn verdict(&self, node: &str) -> &str {
        self.stdout
            .lines()
            .find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some(node)).then(|| words.next().unwrap_or(""))
            })
            .unwrap_or_else(|| panic!("no line for {node} in:\n{}", self.stdout))
    }
}

impl std::fmt::Display for Launched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn netcheck_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("netcheck")
}

/// `netcheck launch` as a user runs it, with the test's namespace, nodes and kubeconfig.
fn launch_cmd(
    ns: &TestNs,
    kubeconfig: &Path,
    out: &Path,
    extra: &[&str],
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(netcheck_bin());
    cmd.args(["launch", "--kubeconfig"])
        .arg(kubeconfig)
        .args(["-n", &ns.name, "--image", IMAGE, "--out"])
        .arg(out)
        .args([
            "--poll-interval",
            "200ms",
            "--schedule-timeout",
            "20s",
            "--timeout",
            "40s",
        ])
        .args(extra)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if !extra.contains(&"--nodes") {
        cmd.args(["--selector", &ns.selector()]);
    }
    cmd
}

async fn launch(ns: &TestNs, kubeconfig: &Path, extra: &[&str]) -> Launched {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let t0 = Instant::now();
    let output = launch_cmd(ns, kubeconfig, &out, extra)
        .output()
        .await
        .expect("run netcheck launch");
    Launched {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        out,
        elapsed: t0.elapsed(),
        _dir: dir,
    }
}

/// The run's objects must all be gone (the API server lists none carrying its label).
async fn assert_nothing_left(ns: &TestNs, launched: &Launched) {
    let left = ns.labelled("netcheck.io/run").await;
    assert!(left.is_empty(), "left behind: {left:?}\n{launched}");
}

/// Rank 0's log as `netcheck run` prints it on an EFA pair: NCCL's lines (NCCL_DEBUG=INFO),
/// then its RunRecord after `NETCHECK_RESULT `, bandwidths scaled by `scale`.
fn rank0_efa_log(scale: f64) -> String {
    let nccl = std::fs::read_to_string(fixture("kube/worker-nccl.log")).unwrap();
    let mut record = RunRecord::load(&fixture("kube/worker-result.json")).unwrap();
    for row in &mut record.rows {
        row.busbw_gbs = row.busbw_gbs.map(|b| b * scale);
        row.algbw_gbs = row.algbw_gbs.map(|b| b * scale);
    }
    format!(
        "{nccl}netcheck: peak bus bandwidth 18.8 GB/s\nNETCHECK_RESULT {}\n",
        serde_json::to_string(&record).unwrap()
    )
}

/// Every pod passes: rank 0 prints a result, the others NCCL lines.
fn all_pass(ctx: &PodCtx) -> Act {
    if ctx.index == 0 {
        Act::exit(0, rank0_efa_log(1.0))
    } else {
        Act::exit(0, "NCCL INFO Using network AWS Libfabric\n")
    }
}

fn p5_nodes(n: usize) -> Vec<FakeNode> {
    (0..n).map(|i| FakeNode::p5(&format!("gpu-{i}"))).collect()
}

/// Scenario 3: what `launch --dry-run` prints passes the real API server's validation
/// (`kubectl apply --dry-run=server`), for each mode and the options that change the pods, with
/// node names as EKS writes them. (The first real API server rejected every Job: a
/// `metadata.name` field selector may hold one value only.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_output_passes_server_side_validation() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("dryrun").await;
    let nodes = "ip-10-0-1-17.us-east-2.compute.internal,ip-10-0-1-18.us-east-2.compute.internal,\
                 ip-10-0-1-19.us-east-2.compute.internal";
    let variants: &[&[&str]] = &[
        &["--gpus-per-node", "8", "--efa-per-node", "32"],
        &[
            "--gpus-per-node",
            "8",
            "--efa-per-node",
            "32",
            "--mode",
            "full",
            "--fabric-check",
            "efa",
        ],
        &[
            "--gpus-per-node",
            "4",
            "--efa-per-node",
            "0",
            "--mode",
            "ring",
            "--shm-size",
            "host",
        ],
        &[
            "--gpus-per-node",
            "8",
            "--toleration",
            "dedicated=gpu:NoSchedule",
            "--no-ipc-lock",
            "--env",
            "NCCL_SOCKET_IFNAME=^lo,docker",
            "--strict",
            "--expect",
            "efa",
            "--service-account",
            "default",
            "--image-pull-policy",
            "IfNotPresent",
        ],
    ];
    for extra in variants {
        let out = std::process::Command::new(netcheck_bin())
            .args([
                "launch",
                "--dry-run",
                "--nodes",
                nodes,
                "--image",
                IMAGE,
                "-n",
                &ns.name,
            ])
            .args(*extra)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let yaml = String::from_utf8(out.stdout).unwrap();
        // Three nodes in pairs: the odd one is named.
        if !extra.contains(&"full") && !extra.contains(&"ring") {
            assert!(
                yaml.contains("ip-10-0-1-19.us-east-2.compute.internal sits out round 1"),
                "{yaml}"
            );
        }
        let mut apply = cluster
            .kubectl()
            .args(["apply", "--dry-run=server", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        apply
            .stdin
            .take()
            .unwrap()
            .write_all(yaml.as_bytes())
            .unwrap();
        let applied = apply.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&applied.stdout);
        assert!(
            applied.status.success(),
            "{extra:?} rejected by the API server:\n{}\n{yaml}",
            String::from_utf8_lossy(&applied.stderr)
        );
        assert!(
            said.contains("job.batch/netcheck-") && said.contains("(server dry run)"),
            "{said}"
        );
    }
    // Server dry run stores nothing.
    assert!(ns.labelled("netcheck.io/run").await.is_empty());
}

/// Scenarios 3 and 4: a real run on two fake p5.48xlarge nodes. Every object is accepted, the
/// real scheduler places one pod per node with the nodes' GPUs, EFA devices and huge pages,
/// the result comes from rank 0's log through `pods/log`, and nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_pair_passes_through_the_real_api_server() {
    let Some(cluster) = cluster() else { return };
    let ns = cluster.namespace("pass").await;
    let nodes = ns.add_nodes(&p5_nodes(2)).await;
    let pods = ns.run_pods(all_pass);
    let run = launch(&ns, &cluster.kubeconfig, &["--run-id", "pass1"]).await;
    assert_eq!(run.code, Some(0), "{run}");
    for n in &nodes {
        assert_eq!(run.verdict(n), "pass", "{run}");
    }
    // The scheduler put rank 0 and rank 1 on different nodes of the pair.
    let seen = pods.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let placed: BTreeMap<usize, &str> = seen.iter().map(|p| (p.index, p.node.as_str())).collect();
    assert_eq!(placed.len(), 2);
    assert_ne!(placed[&0], placed[&1]);
    let results = run.results();
    assert_eq!(results["pairs"][0]["status"], "pass", "{results}");
    assert!(!results["rows"].as_array().unwrap().is_empty());
    assert_nothing_left(&ns, &run).await;
}
