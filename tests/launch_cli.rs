//! The `netcheck launch` binary: dry-run YAML, usage errors, no cluster (exit 3), an
//! unreachable API server (exit 4), and whole runs against the fake API server over loopback
//! HTTP through a kubeconfig, including Ctrl-C (SIGINT) mid-run.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::launch_fake::{Behavior, Fake, PodCtx, node};
use crate::util::{container_args, fixture, netcheck};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `netcheck launch --dry-run --nodes <nodes> --gpus-per-node 8 --image example.com/netcheck:1
/// <extra>` with no cluster configured, which must exit 0: the YAML it printed, and stderr.
fn dry_run(nodes: &str, extra: &[&str]) -> (String, String) {
    let out = netcheck()
        .args([
            "launch",
            "--dry-run",
            "--nodes",
            nodes,
            "--gpus-per-node",
            "8",
        ])
        .args(["--image", "example.com/netcheck:1"])
        .args(extra)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stderr = stderr_of(&out);
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

#[test]
fn dry_run_prints_kubectl_ready_yaml_and_touches_no_cluster() {
    let (yaml, _) = dry_run("n-a,n-b,n-c,n-d", &["--efa-per-node", "32", "-n", "gpu"]);
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&yaml).unwrap();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    // A Job per rank, then the group's Service.
    assert_eq!(
        kinds,
        [
            "ConfigMap",
            "Secret",
            "Job",
            "Job",
            "Service",
            "Job",
            "Job",
            "Service"
        ]
    );
    // The token is not printed (issue 24 item 8).
    assert!(
        docs[1]["stringData"]["token"]
            .as_str()
            .unwrap()
            .starts_with("REDACTED"),
        "{yaml}"
    );
    for d in &docs {
        assert_eq!(d["metadata"]["namespace"], "gpu");
        assert!(d["apiVersion"].is_string());
    }
    let container = &docs[2]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["resources"]["limits"]["vpc.amazonaws.com/efa"],
        "32"
    );
    let args = container_args(container);
    assert!(args.windows(2).any(|w| w == ["--nnodes", "2"]), "{args:?}");
    assert!(yaml.starts_with("# netcheck launch --dry-run"));
}

#[test]
fn dry_run_with_a_fabric_check_passes_it_to_the_pods_and_opens_its_port() {
    let (yaml, stderr) = dry_run("n-a,n-b", &["--fabric-check", "efa", "--port", "30000"]);
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&yaml).unwrap();
    let container = &docs[2]["spec"]["template"]["spec"]["containers"][0];
    let args = container_args(container);
    assert!(
        args.windows(2).any(|w| w == ["--fabric-check", "efa"]),
        "{args:?}"
    );
    assert_eq!(container["ports"][1]["name"], "fabric");
    assert_eq!(container["ports"][1]["containerPort"], 30001);
    assert_eq!(docs[4]["spec"]["ports"][1]["port"], 30001);
    // Without --efa-per-node the pods get no EFA: said, not silent (issue 24 item 8).
    assert!(stderr.contains("--efa-per-node not given"), "{stderr}");
}

#[test]
fn usage_errors_say_what_to_pass() {
    let cases: &[(&[&str], &str)] = &[
        (&["launch", "--image", "x"], "--nodes a,b,... or --selector"),
        (&["launch", "--nodes", "a,b"], "--netcheck-image"),
        (
            &["launch", "--nodes", "a", "--image", "x"],
            "at least two nodes",
        ),
        (
            &["launch", "--selector", "x=y", "--image", "x", "--dry-run"],
            "--dry-run needs --nodes",
        ),
        (
            &["launch", "--nodes", "a,b", "--image", "x", "--dry-run"],
            "--gpus-per-node",
        ),
        (
            &[
                "launch",
                "--nodes",
                "a,b",
                "--image",
                "x",
                "--timeout",
                "soon",
            ],
            "--timeout",
        ),
        (
            &[
                "launch", "--nodes", "a,b", "--image", "x", "--memory", "lots",
            ],
            "--memory",
        ),
        (
            &[
                "launch",
                "--nodes",
                "a,b",
                "--image",
                "x",
                "--toleration",
                "k:Maybe",
            ],
            "--toleration",
        ),
        (
            &[
                "launch", "--nodes", "a,b", "--image", "x", "--env", "NOEQUALS",
            ],
            "KEY=VALUE",
        ),
        (
            &[
                "launch", "--nodes", "a,b", "--image", "x", "--strict", "--expect", "tcpx",
            ],
            "--strict",
        ),
        (
            &[
                "launch",
                "--nodes",
                "a,b",
                "--image",
                "x",
                "--fabric-check",
                "efa",
                "--port",
                "65535",
            ],
            "pick a lower --port",
        ),
        (
            &[
                "launch", "--nodes", "a,b", "--image", "x", "--run-id", "Bad_Id",
            ],
            "--run-id",
        ),
    ];
    for (args, needle) in cases {
        let out = netcheck().args(*args).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `netcheck launch --nodes a,b --image x`, the cluster left to the caller.
fn launch_two_nodes() -> assert_cmd::Command {
    let mut cmd = netcheck();
    cmd.args(["launch", "--nodes", "a,b", "--image", "x"]);
    cmd
}

#[test]
fn no_kubeconfig_and_no_cluster_is_exit_3_with_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let out = launch_two_nodes()
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no Kubernetes configuration"), "{err}");
    assert!(
        err.contains("hint: pass --kubeconfig FILE or set KUBECONFIG"),
        "{err}"
    );

    let out = launch_two_nodes()
        .args(["--kubeconfig", "/nonexistent/config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("cannot read kubeconfig `/nonexistent/config`"));
}

fn kubeconfig(dir: &Path, server: &str, context: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {server}\n\
         users:\n- name: tester\n  user: {{}}\ncontexts:\n- name: {context}\n  context:\n    cluster: fake\n    user: tester\n    namespace: bench\n\
         current-context: {context}\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_unreachable_api_server_is_exit_4_and_a_wrong_context_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1 on loopback: connection refused at once.
    let config = kubeconfig(dir.path(), "http://127.0.0.1:1", "fake");
    let out = launch_two_nodes()
        .arg("--kubeconfig")
        .arg(&config)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("cannot reach http://127.0.0.1:1"), "{err}");

    let out = launch_two_nodes()
        .args(["--context", "prod", "--kubeconfig"])
        .arg(&config)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("kubectl config get-contexts"), "{err}");
}

/// A malformed selector is refused before the cluster is asked (issue 24 item 8): exit 2,
/// naming the flag, with an API server that does not answer (before: exit 4, "cannot reach").
/// For `launch --selector`, `check --kube --selector` and `analyze --kube -l`.
#[test]
fn a_malformed_selector_is_exit_2_before_the_cluster_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), "http://127.0.0.1:1", "fake");
    let config = config.to_str().unwrap();
    for selector in ["a=b=c", "!!", "a in (b", "x/y/z=1"] {
        let commands: [&[&str]; 3] = [
            &[
                "launch",
                "--image",
                "x",
                "--kubeconfig",
                config,
                "--selector",
                selector,
            ],
            &[
                "check",
                "--kube",
                "--image",
                "x",
                "--kubeconfig",
                config,
                "--selector",
                selector,
            ],
            &["analyze", "--kube", "--kubeconfig", config, "-l", selector],
        ];
        for args in commands {
            let out = netcheck().args(args).output().unwrap();
            let err = stderr_of(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&format!(
                    "--selector `{selector}` is not a valid label selector"
                )),
                "{args:?}: {err}"
            );
            assert!(!err.contains("cannot reach"), "{args:?}: {err}");
        }
    }
}

/// `--selector ""` is a valid selector that matches every node: `launch` (and `check --kube`)
/// refuse it rather than test the whole cluster because a shell variable was unset.
#[test]
fn an_empty_selector_is_refused_before_the_cluster_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), "http://127.0.0.1:1", "fake");
    let config = config.to_str().unwrap();
    for selector in ["", "  "] {
        for command in [&["launch"][..], &["check", "--kube"][..]] {
            let out = netcheck()
                .args(command)
                .args([
                    "--image",
                    "x",
                    "--kubeconfig",
                    config,
                    "--selector",
                    selector,
                ])
                .output()
                .unwrap();
            let err = stderr_of(&out);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command:?} {selector:?}: {err}"
            );
            assert!(
                err.contains("--selector is empty"),
                "{command:?} {selector:?}: {err}"
            );
            assert!(!err.contains("cannot reach"), "{command:?}: {err}");
        }
    }
}

fn rank0_log() -> String {
    let record = std::fs::read_to_string(fixture("kube/worker-result.json")).unwrap();
    let compact: Value = serde_json::from_str(&record).unwrap();
    format!("NCCL INFO Using network AWS Libfabric\nNETCHECK_RESULT {compact}\n")
}

fn four_nodes() -> Vec<Value> {
    (0..4)
        .map(|i| node(&format!("node-{i}"), "g6.12xlarge", 4, 1))
        .collect()
}

fn launch_args(config: &Path, out: &Path) -> Vec<String> {
    [
        "launch",
        "--nodes",
        "node-0,node-1,node-2,node-3",
        "--image",
        "registry.example/netcheck:t",
        "--poll-interval",
        "5ms",
        "--schedule-timeout",
        "5s",
        "--timeout",
        "30s",
        "--run-id",
        "cli1",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        "--kubeconfig".into(),
        config.display().to_string(),
        "--out".into(),
        out.display().to_string(),
    ])
    .collect()
}

#[test]
fn a_run_against_the_api_server_names_the_bad_node_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(four_nodes(), |ctx: &PodCtx| {
        if ctx.nodes.iter().any(|n| n == "node-2") {
            Behavior::Exit {
                code: 1,
                log: "error: expected efa, NCCL used socket\n".into(),
            }
        } else if ctx.index == 0 {
            Behavior::Exit {
                code: 0,
                log: rank0_log(),
            }
        } else {
            Behavior::Exit {
                code: 0,
                log: String::new(),
            }
        }
    });
    let addr = fake.serve_http();
    let config = kubeconfig(dir.path(), &format!("http://{addr}"), "fake");
    let out_dir = dir.path().join("out");
    let out = netcheck()
        .args(launch_args(&config, &out_dir))
        .output()
        .unwrap();
    let (stdout, err) = (String::from_utf8_lossy(&out.stdout), stderr_of(&out));
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{err}"
    );
    assert!(stdout.contains("bad node(s): node-2"), "{stdout}");
    assert!(err.contains("round 2 (isolation)"), "{err}");
    assert!(out_dir.join("results.json").exists());
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.starts_with("GET /api/v1/namespaces/bench/pods"))
    );
    assert_eq!(fake.left(), Vec::<String>::new());
}

/// Ctrl-C (SIGINT) or SIGTERM mid-run: everything deleted, exit 130 (docs/launch.md: one
/// code for an interruption, so SIGTERM is not 143).
fn interrupted_mid_run_deletes_everything_and_exits_130(signal: i32) {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(four_nodes(), |_: &PodCtx| Behavior::Hang {
        log: "NCCL INFO Init START\n".into(),
    });
    let addr = fake.serve_http();
    let config = kubeconfig(dir.path(), &format!("http://{addr}"), "fake");
    let bin = assert_cmd::cargo::cargo_bin("netcheck");
    let child = std::process::Command::new(bin)
        .args(launch_args(&config, &dir.path().join("out")))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the pods run, then interrupt.
    let start = Instant::now();
    while !fake.requests().iter().any(|r| r.contains("/log")) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "pods never ran: {:?}",
            fake.requests()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!fake.left().is_empty());
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(130), "signal {signal}: {err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(fake.left(), Vec::<String>::new());
}

#[test]
fn sigint_mid_run_deletes_everything_and_exits_130() {
    interrupted_mid_run_deletes_everything_and_exits_130(libc::SIGINT);
}

#[test]
fn sigterm_mid_run_deletes_everything_and_exits_130() {
    interrupted_mid_run_deletes_everything_and_exits_130(libc::SIGTERM);
}

/// The command line each pod runs is one `netcheck run` accepts: it gets past argument parsing
/// to the fabric check, whose node rank 1 gives up on the unresolvable rank-0 host after its
/// 2 s timeout (exit 124; exit 3 where libfabric is missing). Exit 2 would mean the launcher
/// and the worker disagree.
#[test]
fn the_pod_command_line_is_accepted_by_netcheck_run() {
    use netcheck::launch::kube::manifest::{self, GroupSpec, RunSpec, Shm};
    use netcheck::launch::kube::nodes::PodResources;
    let spec = RunSpec {
        run: "contract".into(),
        namespace: "ns".into(),
        image: "x".into(),
        image_pull_policy: None,
        worker_args: [
            "--ops",
            "all_gather,reduce_scatter",
            "--min-bytes",
            "1K",
            "--max-bytes",
            "1M",
        ]
        .into_iter()
        .chain([
            "--iters",
            "5",
            "--warmup",
            "1",
            "--dtype",
            "float32",
            "--timeout",
            "2s",
        ])
        .map(str::to_string)
        .collect(),
        fabric_check: Some("tcp".into()),
        env: vec![],
        shm: Shm::Memory { bytes: 1 << 30 },
        deadline_secs: 60,
        ttl_secs: None,
        ..crate::util::run_spec()
    };
    let group = GroupSpec {
        seq: 1,
        round: 1,
        pool: "p".into(),
        nodes: vec!["a".into(), "b".into()],
        resources: PodResources {
            gpus: 1,
            efa: 1,
            hugepages_bytes: 0,
            memory_bytes: 1 << 30,
        },
        expect: Some("efa".into()),
    };
    let job = manifest::rank_job(&spec, &group, 1, None);
    let container = &job.spec.unwrap().template.spec.unwrap().containers[0];
    // Through the image's entrypoint (the default): no command, netcheck first in the args.
    assert_eq!(container.command, None);
    let argv = container.args.clone().unwrap();
    assert_eq!(argv[0], "netcheck");
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = argv[1..]
        .iter()
        .cloned()
        .map(|a| match a.as_str() {
            "$(NODE_RANK)" => "1".to_string(),
            "/results" => dir.path().display().to_string(),
            _ => a,
        })
        .collect();
    let out = netcheck()
        .args(&args)
        .env("NETCHECK_RDZV_TOKEN", "0123456789abcdef")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_ne!(
        out.status.code(),
        Some(2),
        "netcheck run rejected the pod's arguments {args:?}: {err}"
    );
    assert!(!err.contains("unexpected argument"), "{err}");
    assert!(
        err.contains("fabric check on node 1 (provider tcp)"),
        "the pre-check ran first: {err}"
    );
}

/// Everything the pods' `netcheck run` would reject is rejected before a cluster is read
/// (exit 2), the way `run` rejects it; so are names the API server would refuse.
#[test]
fn bad_flags_are_exit_2_before_any_cluster_is_read() {
    let base = [
        "launch",
        "--nodes",
        "n-a,n-b",
        "--image",
        "example.com/netcheck:1",
    ];
    let cases: &[(&[&str], &str)] = &[
        (&["--ops", "allgather"], "unknown collective `allgather`"),
        (&["--dtype", "fp32"], "unknown data type `fp32`"),
        (&["--iters", "0"], "iters"),
        (
            &["--min-bytes", "1G", "--max-bytes", "1K"],
            "smaller than min_bytes",
        ),
        (&["-n", "Bad_NS"], "not a valid namespace name"),
        (
            &["--port", "0"],
            "'0' for '--port <PORT>': 0 is out of range; allowed: 1 to 65535",
        ),
    ];
    for (extra, said) in cases {
        // KUBECONFIG points nowhere: reading the cluster would be exit 3, not 2.
        let out = netcheck()
            .args(base)
            .args(*extra)
            .env("KUBECONFIG", "/nonexistent/kubeconfig")
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(said), "{extra:?}: {err}");
    }
    // The same flags `run` rejects the same way.
    let out = netcheck()
        .args(["run", "--ops", "allgather"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("unknown collective `allgather`"));
    let out = netcheck()
        .args(["launch", "--nodes", "n-a,n-b,n-a", "--image", "x"])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("`n-a` more than once"),
        "{}",
        stderr_of(&out)
    );
}

/// With an odd number of nodes, the one left out of round 1 is named, with when it is tested.
#[test]
fn the_node_sitting_out_an_odd_round_is_named() {
    let (yaml, _) = dry_run("n-a,n-b,n-c", &["-n", "gpu"]);
    assert!(
        yaml.contains("# n-c sits out round 1 (odd number of nodes in its pool); it is paired with a node that passed in round 2"),
        "{yaml}"
    );
}
