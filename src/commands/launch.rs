//! `netcheck launch`: benchmark pods across a Kubernetes node group, in pairs, a ring or one
//! group, and a verdict per node. The flags resolve into `launch::kube::Settings`; the work is
//! in `launch::kube`.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{BenchConfig, ByteSize, SweepFlags, parse_duration};
use crate::error::{Error, Outcome, Result};
use crate::launch::kube::launcher::Settings;
use crate::launch::kube::manifest::{Entrypoint, ImageOptions, RunSpec, Shm, nccl_net_for};
use crate::launch::kube::nodes::{
    Requirements, default_tolerations, parse_quantity, parse_toleration,
};
use crate::launch::kube::status::{Limits, PEER_EXIT_GRACE};
use crate::launch::kube::{self as kube, Conclusion, Connect, KubeClient, Selection, names};
use crate::launch::plan::{Mode, Verdict};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Namespace for the pods and services (default: the kubeconfig context's).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// kubeconfig context.
    #[arg(long)]
    pub context: Option<String>,
    /// kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Nodes to test, comma-separated, each once.
    #[arg(long, value_delimiter = ',', conflicts_with = "selector")]
    pub nodes: Option<Vec<String>>,
    /// Label selector choosing the nodes to test.
    #[arg(long, short = 'l')]
    pub selector: Option<String>,
    /// pairs: disjoint pairs in rounds; ring: every pair; full: one communicator over all nodes.
    #[arg(long, default_value = "pairs", value_parser = ["pairs", "ring", "full"])]
    pub mode: String,
    /// The image the benchmark runs in: your training image (with --netcheck-image), or one
    /// that holds netcheck on its PATH. NCCL, CUDA and libfabric come from it.
    #[arg(long)]
    pub image: Option<String>,
    /// Small image holding netcheck at /usr/local/bin/netcheck (deploy/Dockerfile.netcheck);
    /// an init container copies it into the pods, so --image needs no rebuild. Default: none,
    /// --image itself holds netcheck.
    #[arg(long, value_name = "IMAGE")]
    pub netcheck_image: Option<String>,
    /// keep: start through the image's own ENTRYPOINT (it gets netcheck's command line as
    /// arguments; AWS's DLCs set up CUDA forward compatibility there); bypass: replace it.
    #[arg(long, default_value = "keep", value_parser = ["keep", "bypass"])]
    pub entrypoint: String,
    /// GPUs per node to request (default: the node's allocatable nvidia.com/gpu).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u32>(1, None))]
    pub gpus_per_node: Option<u32>,
    /// EFA devices per node to request (default: the node's allocatable
    /// vpc.amazonaws.com/efa; 0 tests without EFA).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u32>(0, None))]
    pub efa_per_node: Option<u32>,
    /// Print the manifests as YAML and touch no cluster.
    #[arg(long)]
    pub dry_run: bool,
    /// Keep the pods and services for debugging.
    #[arg(long)]
    pub keep: bool,
    /// Deadline per pair or group once its pods run (e.g. 10m); a pair past it fails as hung.
    #[arg(long, default_value = "15m", value_name = "DURATION")]
    pub timeout: String,
    /// How long a pod may wait for the scheduler before its group is inconclusive.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub schedule_timeout: String,

    /// Collectives, comma-separated (passed to `netcheck run` in the pods).
    #[arg(long, value_delimiter = ',', help_heading = "Benchmark")]
    pub ops: Option<Vec<String>>,
    /// Smallest size, e.g. 1K.
    #[arg(long, value_name = "SIZE", help_heading = "Benchmark", allow_negative_numbers = true,
          value_parser = crate::flags::size(1, None))]
    pub min_bytes: Option<ByteSize>,
    /// Largest size, e.g. 1G.
    #[arg(long, value_name = "SIZE", help_heading = "Benchmark", allow_negative_numbers = true,
          value_parser = crate::flags::size(1, None))]
    pub max_bytes: Option<ByteSize>,
    /// Timed iterations per size.
    #[arg(long, value_name = "N", help_heading = "Benchmark", allow_negative_numbers = true,
          value_parser = crate::flags::int::<u32>(1, None))]
    pub iters: Option<u32>,
    /// Untimed iterations before timing.
    #[arg(long, value_name = "N", help_heading = "Benchmark", allow_negative_numbers = true,
          value_parser = crate::flags::int::<u32>(0, None))]
    pub warmup: Option<u32>,
    /// Data types, comma-separated.
    #[arg(long, value_delimiter = ',', help_heading = "Benchmark")]
    pub dtype: Option<Vec<String>>,
    /// The inter-node transport that must carry traffic (default: efa on nodes with EFA).
    #[arg(long, value_name = "TRANSPORT", help_heading = "Benchmark",
          value_parser = clap::builder::PossibleValuesParser::new(crate::config::KNOWN_TRANSPORTS))]
    pub expect: Option<String>,
    /// Pin NCCL_NET to the expected transport, so a fallback to TCP fails loudly.
    #[arg(long, help_heading = "Benchmark")]
    pub strict: bool,
    /// The workers' own timeout (`netcheck run --timeout`): rendezvous, init, no progress.
    #[arg(
        long,
        default_value = "5m",
        value_name = "DURATION",
        help_heading = "Benchmark"
    )]
    pub worker_timeout: String,
    /// Before NCCL, each pod runs a short libfabric ping-pong against its group's rank-0 pod
    /// over this provider (`efa` on EFA pools, `tcp` elsewhere); default: no check.
    #[arg(long, value_name = "PROVIDER", help_heading = "Benchmark")]
    pub fabric_check: Option<String>,
    /// A passing pair below this fraction of its pool's median peak bus bandwidth fails (0: off).
    #[arg(
        long,
        default_value_t = 0.5,
        value_name = "FRACTION",
        allow_negative_numbers = true,
        value_parser = crate::flags::float(0.0, 1.0, false),
        help_heading = "Benchmark"
    )]
    pub slow_fraction: f64,

    /// Memory per pod, besides /dev/shm (Kubernetes quantity).
    #[arg(
        long,
        default_value = "16Gi",
        value_name = "QUANTITY",
        help_heading = "Pods"
    )]
    pub memory: String,
    /// Size of the memory-backed /dev/shm, or `host` to mount the node's /dev/shm.
    #[arg(
        long,
        default_value = "16Gi",
        value_name = "QUANTITY",
        help_heading = "Pods"
    )]
    pub shm_size: String,
    /// hugepages-2Mi per pod (default: 5120Mi on nodes with EFA, else none).
    #[arg(long, value_name = "QUANTITY", help_heading = "Pods")]
    pub hugepages: Option<String>,
    /// Tolerate a taint, as `key[=value][:effect]`; repeatable. GPU and EFA taints are
    /// tolerated already.
    #[arg(long, value_name = "TAINT", help_heading = "Pods")]
    pub toleration: Vec<String>,
    /// Extra environment variable for the workers, `KEY=VALUE`; repeatable.
    #[arg(long, value_name = "KEY=VALUE", help_heading = "Pods")]
    pub env: Vec<String>,
    /// Do not add CAP_IPC_LOCK (for namespaces enforcing the baseline Pod Security level).
    #[arg(long, help_heading = "Pods")]
    pub no_ipc_lock: bool,
    /// Rendezvous port of rank 0.
    #[arg(long, default_value_t = 29400, help_heading = "Pods", allow_negative_numbers = true,
          value_parser = crate::flags::int::<u16>(1, Some(65535)))]
    pub port: u16,
    /// Service account for the pods (they need no API access).
    #[arg(long, help_heading = "Pods")]
    pub service_account: Option<String>,
    /// Image pull policy (Always, IfNotPresent, Never).
    #[arg(long, value_parser = ["Always", "IfNotPresent", "Never"], help_heading = "Pods")]
    pub image_pull_policy: Option<String>,
    /// Secret for pulling the images (the pods' imagePullSecrets); repeatable.
    #[arg(long, value_name = "NAME", help_heading = "Pods")]
    pub image_pull_secret: Vec<String>,
    /// Run as a non-root user: runAsNonRoot, no privilege escalation, capabilities dropped
    /// (IPC_LOCK kept unless --no-ipc-lock), the runtime's default seccomp profile. With
    /// --no-ipc-lock this meets the `restricted` Pod Security level.
    #[arg(long, help_heading = "Pods")]
    pub run_as_non_root: bool,
    /// The pods' user id (runAsUser); needed with --run-as-non-root when the image's USER is a
    /// name or root.
    #[arg(long, value_name = "UID", help_heading = "Pods")]
    pub run_as_user: Option<i64>,
    /// Read-only root filesystem for the containers (/tmp becomes an emptyDir; netcheck writes
    /// only there, in /results and /dev/shm).
    #[arg(long, help_heading = "Pods")]
    pub read_only_root_fs: bool,

    /// Shuffle round-1 pairing with this seed (default: neighbours by name).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::flags::int::<u64>(0, None))]
    pub seed: Option<u64>,
    /// Test the nodes that pass preflight and list the others, instead of stopping (exit 3).
    #[arg(long)]
    pub skip_ineligible: bool,
    /// Exit 0 even when nodes asked for were not tested (ineligible with --skip-ineligible,
    /// alone in their pool, or changed between rounds); without it such a run exits 4.
    #[arg(long)]
    pub allow_untested: bool,
    /// Name of the run in object names and labels (default: 6 random hex digits).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Output folder for results.json and the pod logs (default: reports/launch-<run>/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// How often the run's pods are listed.
    #[arg(long, default_value = "2s", value_name = "DURATION", hide = true)]
    pub poll_interval: String,
}

pub fn run(args: Args) -> Result<Outcome> {
    let (settings, connect) = resolve(&args)?;
    if args.dry_run {
        return dry_run(&args, &settings);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::missing(
                format!("cannot start the async runtime: {e}"),
                "check the process limits",
            )
        })?;
    runtime.block_on(async move {
        let client = KubeClient::connect(&connect).await?;
        let mut settings = settings;
        settings.spec.namespace = client.namespace().to_string();
        let report = kube::launch(&client, &settings, shutdown_signal()).await?;
        print_summary(&report)?;
        crate::say!("results: {}", report.results_path.display());
        if !report.untested.is_empty() {
            let list: Vec<String> = report
                .untested
                .iter()
                .map(|(node, why)| format!("{node} ({why})"))
                .collect();
            crate::say!(
                "untested: {} node(s) were asked for and not tested: {}{}",
                list.len(),
                list.join(", "),
                if report.allow_untested {
                    " (accepted with --allow-untested)"
                } else {
                    "; exit 4 unless --allow-untested"
                }
            );
        }
        match report.conclusion() {
            Conclusion::Pass => Ok(Outcome::Pass),
            Conclusion::Fail => Ok(Outcome::Fail),
            Conclusion::Inconclusive => Err(Error::Infrastructure {
                what: if report.record.pairs.iter().all(|p| p.status == "pass")
                    && report.verdicts.iter().all(|v| !matches!(v.verdict, Verdict::Inconclusive))
                {
                    "inconclusive: every tested pair passed, but not every node asked for was tested (see `untested` above)".into()
                } else {
                    "inconclusive: some groups could not be judged (not scheduled, not started, a peer that never ran, or no result)".into()
                },
                hint: Some(format!("see the messages above and {}", report.results_path.display())),
            }),
        }
    })
}

/// Every check of the flags that needs no cluster, for `check --kube` to run before anything
/// else (so a missing --image is a usage error alone, with nothing written).
pub fn check_flags(args: &Args) -> Result<()> {
    resolve(args).map(|_| ())
}

/// Flags → settings, with every check that needs no cluster.
fn resolve(args: &Args) -> Result<(Settings, Connect)> {
    let selection = match (&args.nodes, &args.selector) {
        (Some(nodes), None) => {
            let mut unique: Vec<String> = nodes
                .iter()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect();
            unique.sort();
            if let Some(twice) = unique.windows(2).find(|w| w[0] == w[1]) {
                return Err(usage(
                    &format!("--nodes names `{}` more than once", twice[0]),
                    "name each node once",
                ));
            }
            if unique.len() < 2 {
                return Err(usage(
                    "--nodes needs at least two nodes",
                    "name two or more nodes: --nodes a,b",
                ));
            }
            Selection::Nodes(unique)
        }
        // Valid for the API server, and it selects every node: an unset shell variable
        // (`--selector "$POOL"`) must not launch on the whole cluster.
        (None, Some(selector)) if selector.trim().is_empty() => {
            return Err(usage(
                "--selector is empty: it would select every node of the cluster",
                "name the node group: --selector node.kubernetes.io/instance-type=p5.48xlarge \
                 (an unset shell variable gives an empty selector)",
            ));
        }
        (None, Some(selector)) => {
            kube::selector::check_flag(selector)?;
            Selection::Selector(selector.clone())
        }
        _ => {
            return Err(usage(
                "say which nodes to test",
                "pass --nodes a,b,... or --selector LABEL (e.g. node.kubernetes.io/instance-type=p5.48xlarge)",
            ));
        }
    };
    if let Some(ns) = &args.namespace
        && !names::is_dns1123_label(ns)
    {
        return Err(usage(
            &format!(
                "--namespace `{ns}` is not a valid namespace name (lowercase letters, digits \
                 and `-`, starting and ending with a letter or digit, at most 63 characters)"
            ),
            "e.g. -n netcheck",
        ));
    }
    if args.port == 0 {
        return Err(usage(
            "--port 0 is not a port rank 0 can listen on for its peers",
            "pick a fixed port, e.g. --port 29400 (the default)",
        ));
    }
    // The pods run `netcheck run` with these flags: check them exactly as it will, before a
    // single pod is scheduled to find out.
    SweepFlags {
        ops: args.ops.clone(),
        min_bytes: args.min_bytes,
        max_bytes: args.max_bytes,
        step_factor: None,
        iters: args.iters,
        warmup: args.warmup,
        dtypes: args.dtype.clone(),
        expect: args.expect.clone(),
    }
    .apply(
        &mut BenchConfig::embedded_default(),
        "command-line flags for the pods' `netcheck run`",
    )?;
    let image = args.image.clone().ok_or_else(|| {
        usage(
            "--image is required: the image the benchmark runs in (your training image)",
            "pass --image REF, and --netcheck-image REF to bring netcheck into it \
             (deploy/Dockerfile.netcheck builds that small image; docs/launch.md)",
        )
    })?;
    let image_opts = image_options(args)?;
    let mode = Mode::parse(&args.mode).expect("clap checked the mode");
    let duration = |flag: &str, value: &str| {
        parse_duration(value).map_err(|e| usage(&format!("--{flag}: {e}"), "e.g. 90s, 10m, 1h"))
    };
    let group_timeout = duration("timeout", &args.timeout)?;
    let schedule_timeout = duration("schedule-timeout", &args.schedule_timeout)?;
    let poll = duration("poll-interval", &args.poll_interval)?;
    duration("worker-timeout", &args.worker_timeout)?;
    let quantity = |flag: &str, value: &str| {
        parse_quantity(value).filter(|&b| b > 0).ok_or_else(|| {
            usage(
                &format!("--{flag}: `{value}` is not a Kubernetes quantity"),
                "e.g. 16Gi, 5120Mi",
            )
        })
    };
    let memory = quantity("memory", &args.memory)?;
    let shm = if args.shm_size == "host" {
        Shm::Host
    } else {
        Shm::Memory {
            bytes: quantity("shm-size", &args.shm_size)?,
        }
    };
    let hugepages_bytes = match &args.hugepages {
        Some(h) if h == "0" => Some(0),
        Some(h) => Some(quantity("hugepages", h)?),
        None if args.efa_per_node == Some(0) => Some(0),
        None => None,
    };
    let mut tolerations = default_tolerations();
    for t in &args.toleration {
        tolerations.push(
            parse_toleration(t)
                .map_err(|e| usage(&format!("--toleration {e}"), "write key[=value][:effect]"))?,
        );
    }
    if args.strict
        && let Some(e) = args.expect.as_deref()
        && nccl_net_for(e).is_none()
    {
        return Err(usage(
            &format!("--strict cannot pin NCCL to `{e}`"),
            "use --strict with --expect efa, ib, roce or socket",
        ));
    }
    if !(0.0..1.0).contains(&args.slow_fraction) {
        return Err(usage(
            "--slow-fraction must be at least 0 and below 1",
            "e.g. 0.5; 0 turns the check off",
        ));
    }
    if args.fabric_check.is_some() && args.port == u16::MAX {
        return Err(usage(
            "--fabric-check listens on --port + 1, and --port is already 65535",
            "pick a lower --port",
        ));
    }
    let run = match &args.run_id {
        Some(id) if names::valid_run_id(id) => id.clone(),
        Some(id) => {
            return Err(usage(
                &format!("--run-id `{id}` must be 1 to 12 lowercase letters or digits"),
                "e.g. --run-id nightly1",
            ));
        }
        None => names::new_run_id(),
    };
    let mut env = vec![("NCCL_DEBUG".to_string(), "INFO".to_string())];
    for kv in &args.env {
        let Some((k, v)) = kv.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(usage(
                &format!("--env `{kv}` is not KEY=VALUE"),
                "e.g. --env NCCL_SOCKET_IFNAME=^lo,docker",
            ));
        };
        env.retain(|(existing, _)| existing != k);
        env.push((k.to_string(), v.to_string()));
    }
    let mut worker_args = vec![];
    if let Some(ops) = &args.ops {
        worker_args.extend(["--ops".to_string(), ops.join(",")]);
    }
    if let Some(b) = args.min_bytes {
        worker_args.extend(["--min-bytes".to_string(), b.to_string()]);
    }
    if let Some(b) = args.max_bytes {
        worker_args.extend(["--max-bytes".to_string(), b.to_string()]);
    }
    if let Some(n) = args.iters {
        worker_args.extend(["--iters".to_string(), n.to_string()]);
    }
    if let Some(n) = args.warmup {
        worker_args.extend(["--warmup".to_string(), n.to_string()]);
    }
    if let Some(d) = &args.dtype {
        worker_args.extend(["--dtype".to_string(), d.join(",")]);
    }
    worker_args.extend(["--timeout".to_string(), args.worker_timeout.clone()]);
    let shm_bytes = match shm {
        Shm::Memory { bytes } => bytes,
        Shm::Host => 0,
    };
    // The Job's own deadline is the safety net if the launcher dies: later than ours.
    let deadline = schedule_timeout + group_timeout + Duration::from_secs(120);
    let settings = Settings {
        selection,
        mode,
        seed: args.seed,
        requirements: Requirements {
            gpus: args.gpus_per_node,
            efa: args.efa_per_node,
            hugepages_bytes,
            // A memory-backed /dev/shm counts against the pod's memory limit.
            memory_bytes: memory + shm_bytes,
            tolerations: tolerations.clone(),
        },
        expect: args.expect.clone(),
        spec: RunSpec {
            run: run.clone(),
            namespace: args.namespace.clone().unwrap_or_else(|| "default".into()),
            image,
            image_pull_policy: args.image_pull_policy.clone(),
            port: args.port,
            worker_args,
            fabric_check: args.fabric_check.clone(),
            env,
            tolerations,
            strict_net: args.strict,
            ipc_lock: !args.no_ipc_lock,
            shm,
            deadline_secs: deadline.as_secs() as i64,
            ttl_secs: (!args.keep).then_some(600),
            service_account: args.service_account.clone(),
            image_opts,
        },
        limits: Limits {
            schedule: schedule_timeout,
            run: group_timeout,
            peer_exit_grace: PEER_EXIT_GRACE,
        },
        poll,
        cleanup_wait: Duration::from_secs(30),
        keep: args.keep,
        skip_ineligible: args.skip_ineligible,
        allow_untested: args.allow_untested,
        slow_fraction: args.slow_fraction,
        check_access: true,
        out_dir: args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("reports/launch-{run}"))),
        quiet: false,
    };
    let connect = Connect {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        namespace: args.namespace.clone(),
    };
    Ok((settings, connect))
}

/// `--netcheck-image`, `--entrypoint`, `--image-pull-secret` and the non-root flags.
fn image_options(args: &Args) -> Result<ImageOptions> {
    if let Some(image) = &args.netcheck_image
        && image.trim().is_empty()
    {
        return Err(usage(
            "--netcheck-image is empty",
            "name the image holding netcheck, e.g. --netcheck-image REGISTRY/netcheck:0.1.0",
        ));
    }
    for secret in &args.image_pull_secret {
        if !names::is_dns1123_subdomain(secret) {
            return Err(usage(
                &format!("--image-pull-secret `{secret}` is not a valid Secret name"),
                "lowercase letters, digits, `-` and `.`, e.g. --image-pull-secret regcred",
            ));
        }
    }
    if let Some(uid) = args.run_as_user
        && !(0..=i64::from(i32::MAX)).contains(&uid)
    {
        return Err(usage(
            &format!("--run-as-user {uid} is not a user id"),
            "e.g. --run-as-user 1000",
        ));
    }
    if args.run_as_non_root && args.run_as_user == Some(0) {
        return Err(usage(
            "--run-as-non-root with --run-as-user 0: user 0 is root",
            "pick a non-zero user id, e.g. --run-as-user 1000",
        ));
    }
    Ok(ImageOptions {
        netcheck_image: args.netcheck_image.clone(),
        entrypoint: Entrypoint::parse(&args.entrypoint).expect("clap checked --entrypoint"),
        pull_secrets: args.image_pull_secret.clone(),
        run_as_non_root: args.run_as_non_root,
        run_as_user: args.run_as_user,
        read_only_root: args.read_only_root_fs,
    })
}

fn dry_run(args: &Args, settings: &Settings) -> Result<Outcome> {
    let Selection::Nodes(nodes) = &settings.selection else {
        return Err(usage(
            "--dry-run needs --nodes: it does not read the cluster, so it cannot resolve a selector",
            "name the nodes: --nodes a,b,...",
        ));
    };
    let gpus = args.gpus_per_node.ok_or_else(|| {
        usage(
            "--dry-run needs --gpus-per-node: it does not read the nodes' allocatable GPUs",
            "e.g. --gpus-per-node 8 (and --efa-per-node 32 on p5.48xlarge)",
        )
    })?;
    // Printed YAML lands in terminals, CI logs and tickets: never a real token.
    let token = "REDACTED-replace-with-a-random-value";
    if args.efa_per_node.is_none() {
        crate::say!(
            "note: --efa-per-node not given: the pods request no EFA devices and no huge pages \
             and expect no transport (on EFA nodes pass --efa-per-node, e.g. 32 on p5.48xlarge)"
        );
    }
    let yaml = kube::dry_run::render(settings, nodes, gpus, args.efa_per_node.unwrap_or(0), token);
    crate::output::stdout(&yaml).map_err(|e| Error::write("<stdout>", e))?;
    Ok(Outcome::Pass)
}

/// One line per node: the verdict and why. Data, so stdout.
fn print_summary(report: &kube::Report) -> Result<()> {
    let width = report
        .verdicts
        .iter()
        .map(|v| v.node.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!("{:width$}  {:12}  REASON\n", "NODE", "VERDICT");
    for v in &report.verdicts {
        out.push_str(&format!(
            "{:width$}  {:12}  {}\n",
            v.node,
            v.verdict.as_str(),
            v.reason
        ));
    }
    for n in report
        .record
        .nodes
        .iter()
        .filter(|n| n.verdict == "ineligible")
    {
        out.push_str(&format!(
            "{:width$}  {:12}  {}\n",
            n.name,
            "ineligible",
            n.reason.clone().unwrap_or_default()
        ));
    }
    for (a, b) in &report.link_failures {
        out.push_str(&format!(
            "pair {a}+{b} failed although both nodes passed elsewhere: suspect the link\n"
        ));
    }
    let bad: Vec<&str> = report
        .verdicts
        .iter()
        .filter(|v| v.verdict == Verdict::Fail)
        .map(|v| v.node.as_str())
        .collect();
    if !bad.is_empty() {
        out.push_str(&format!("bad node(s): {}\n", bad.join(", ")));
    }
    crate::output::stdout(&out).map_err(|e| Error::write("<stdout>", e))
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

fn usage(message: &str, hint: &str) -> Error {
    Error::Usage {
        message: message.into(),
        hint: Some(hint.into()),
    }
}
