//! `netcheck analyze [LOG...]`: which transport carried inter-node traffic, with evidence.
//! `netcheck analyze --kube ...`: the same, straight from a running job's pods
//! (`launch::kube::logs`), with what the cluster knows (`logscan::cluster`).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::parse_duration;
use crate::error::{Error, Outcome, Result};
use crate::launch::kube::logs::{self, LogOptions, Selection};
use crate::launch::kube::{Connect, KubeClient};
use crate::logscan::cluster::{self, ClusterAnalysis};
use crate::logscan::{self, Analysis, Analyzer, Options, Transport, Verdict};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// NCCL_DEBUG=INFO logs: files, .gz files, .zip and .tar(.gz) archives of logs, or `-` /
    /// nothing for stdin.
    #[arg(value_name = "LOG", conflicts_with = "kube")]
    pub logs: Vec<PathBuf>,
    /// The inter-node transport that must have been used (`nvlink`: multi-node NVLink,
    /// GB200/GB300 NVL72); anything else fails (exit 1).
    #[arg(long, value_name = "TRANSPORT", default_value = "any",
          value_parser = clap::builder::PossibleValuesParser::new(crate::config::KNOWN_TRANSPORTS))]
    pub expect: String,
    /// Output format.
    #[arg(long, default_value = "text", value_parser = ["text", "json", "markdown"])]
    pub format: String,

    /// Read the logs of pods on a Kubernetes cluster (chosen with -l, --pod or --workload)
    /// instead of files, and add what the cluster knows: each pod's node, instance type and
    /// zone, its EFA and huge-page requests, its NCCL_*/FI_* env.
    #[arg(long, help_heading = "Kubernetes")]
    pub kube: bool,
    /// Namespace of the pods (default: the kubeconfig context's).
    #[arg(long, short = 'n', requires = "kube", help_heading = "Kubernetes")]
    pub namespace: Option<String>,
    /// kubeconfig context.
    #[arg(long, requires = "kube", help_heading = "Kubernetes")]
    pub context: Option<String>,
    /// kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(
        long,
        value_name = "FILE",
        requires = "kube",
        help_heading = "Kubernetes"
    )]
    pub kubeconfig: Option<PathBuf>,
    /// Label selector of the pods, e.g. ray.io/cluster=fsdp-qwen.
    #[arg(long, short = 'l', requires = "kube", help_heading = "Kubernetes")]
    pub selector: Option<String>,
    /// A pod by name; repeatable.
    #[arg(
        long,
        value_name = "NAME",
        requires = "kube",
        help_heading = "Kubernetes"
    )]
    pub pod: Vec<String>,
    /// The pods of a workload: NAME or KIND/NAME (RayCluster, PyTorchJob, MPIJob, JobSet,
    /// LeaderWorkerSet, Job, StatefulSet...), found by its operator's labels or the pods'
    /// owner.
    #[arg(
        long,
        value_name = "NAME",
        requires = "kube",
        help_heading = "Kubernetes"
    )]
    pub workload: Option<String>,
    /// The container to read (default: kubectl's default container, else the one requesting
    /// GPUs, else the first).
    #[arg(long, short = 'c', requires = "kube", help_heading = "Kubernetes")]
    pub container: Option<String>,
    /// Only log lines newer than this (e.g. 30m).
    #[arg(
        long,
        value_name = "DURATION",
        requires = "kube",
        help_heading = "Kubernetes"
    )]
    pub since: Option<String>,
    /// The log of the previous, crashed instance of the container.
    #[arg(long, requires = "kube", help_heading = "Kubernetes")]
    pub previous: bool,
    /// For a job that is starting: wait for the pods to run and give the verdict as soon as
    /// every pod has finished NCCL init (and its first connections), or at --timeout.
    #[arg(
        long,
        requires = "kube",
        conflicts_with = "previous",
        help_heading = "Kubernetes"
    )]
    pub follow: bool,
    /// With --follow: the latest the verdict comes.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = DEFAULT_FOLLOW_TIMEOUT,
        requires = "follow",
        help_heading = "Kubernetes"
    )]
    pub timeout: String,
    /// With --follow: a pod is done this long after its last NCCL line once it printed
    /// `Init COMPLETE`.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = DEFAULT_SETTLE,
        requires = "follow",
        help_heading = "Kubernetes"
    )]
    pub settle: String,
    /// Exit 0 (on a pass or warning) even when pods that requested GPUs could not be judged
    /// (pending, no NCCL lines, still in init, unreadable); without it that is exit 4.
    #[arg(long, requires = "kube", help_heading = "Kubernetes")]
    pub allow_untested: bool,
    /// Pod logs streamed at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STREAMS, requires = "kube", allow_negative_numbers = true,
          value_parser = crate::flags::int::<u32>(1, Some(256)), help_heading = "Kubernetes")]
    pub max_streams: u32,
}

const DEFAULT_FOLLOW_TIMEOUT: &str = "10m";
const DEFAULT_SETTLE: &str = "5s";
const DEFAULT_MAX_STREAMS: u32 = 8;

pub fn run(args: Args) -> Result<Outcome> {
    let expect = match args.expect.as_str() {
        "any" => None,
        name => Some(name.parse::<Transport>().map_err(Error::usage)?),
    };
    if args.kube {
        return run_kube(args, expect);
    }
    // clap's `requires = "kube"` does not see a `--kube` that was left out (a flag defaults to
    // false, which counts as present): refuse the mix here, never ignore it.
    let kube_only: Vec<&str> = [
        ("--namespace/-n", args.namespace.is_some()),
        ("--context", args.context.is_some()),
        ("--kubeconfig", args.kubeconfig.is_some()),
        ("--selector/-l", args.selector.is_some()),
        ("--pod", !args.pod.is_empty()),
        ("--workload", args.workload.is_some()),
        ("--container/-c", args.container.is_some()),
        ("--since", args.since.is_some()),
        ("--previous", args.previous),
        ("--follow", args.follow),
        ("--timeout", args.timeout != DEFAULT_FOLLOW_TIMEOUT),
        ("--settle", args.settle != DEFAULT_SETTLE),
        ("--max-streams", args.max_streams != DEFAULT_MAX_STREAMS),
    ]
    .into_iter()
    .filter_map(|(flag, given)| given.then_some(flag))
    .collect();
    if !kube_only.is_empty() {
        return Err(Error::Usage {
            message: format!(
                "{} read pods on a cluster and need --kube; they cannot apply to log files",
                kube_only.join(", ")
            ),
            hint: Some(
                "add --kube to read the pods' logs instead of files, or leave those flags out"
                    .into(),
            ),
        });
    }
    let logs = if args.logs.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.logs
    };
    if logs.iter().any(|l| l.as_os_str() == "-")
        && std::io::IsTerminal::is_terminal(&std::io::stdin())
    {
        crate::say!("reading NCCL log from stdin (Ctrl-D to end)");
    }
    let mut analyzer = Analyzer::new(Options {
        expect,
        ..Default::default()
    });
    for log in &logs {
        analyzer.feed_path(log)?;
    }
    let analysis = analyzer.analysis();
    // The process ends right after printing: freeing the per-rank state of a large log one
    // allocation at a time would cost several percent of the run for nothing.
    std::mem::forget(analyzer);
    let verdict = verdict_of(&analysis);
    match args.format.as_str() {
        // Streamed: the JSON of a large job (one row per rank) runs to megabytes, and
        // building it in memory first costs several percent of a 256 MiB run.
        "json" => {
            let mut analysis = analysis;
            crate::output::stdout_with(|out| logscan::render::json(out, &mut analysis))
                .map_err(|e| Error::write("<stdout>", e))?;
            // As for the analyzer: not worth freeing row by row.
            std::mem::forget(analysis);
            Ok(outcome(verdict))
        }
        "markdown" => print(&logscan::render::markdown(&analysis), verdict),
        _ => print(&logscan::render::text(&analysis), verdict),
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    let mut json = serde_json::to_string_pretty(value)
        .map_err(|e| Error::infra(format!("cannot encode the analysis as JSON: {e}")))?;
    json.push('\n');
    Ok(json)
}

fn print(rendered: &str, verdict: Judged) -> Result<Outcome> {
    crate::output::stdout(rendered).map_err(|e| Error::write("<stdout>", e))?;
    Ok(outcome(verdict))
}

/// The verdict, or that there was nothing to judge (no NCCL line at all).
#[derive(Clone, Copy)]
enum Judged {
    Verdict(Verdict),
    Nothing,
}

fn verdict_of(analysis: &Analysis) -> Judged {
    if analysis
        .findings
        .iter()
        .any(|f| f.id == logscan::NO_NCCL_LINES)
    {
        Judged::Nothing
    } else {
        Judged::Verdict(analysis.verdict)
    }
}

fn outcome(verdict: Judged) -> Outcome {
    match verdict {
        Judged::Nothing => Outcome::NothingToJudge,
        Judged::Verdict(Verdict::Fail) => Outcome::Fail,
        Judged::Verdict(Verdict::Pass | Verdict::Warn) => Outcome::Pass,
    }
}

fn duration(flag: &str, value: &str) -> Result<Duration> {
    parse_duration(value).map_err(|e| Error::usage(format!("{flag}: {e}")))
}

fn run_kube(args: Args, expect: Option<Transport>) -> Result<Outcome> {
    if args.selector.is_none() && args.pod.is_empty() && args.workload.is_none() {
        return Err(Error::Usage {
            message: "--kube needs the pods to read: -l SELECTOR, --pod NAME or --workload NAME"
                .into(),
            hint: Some(
                "e.g. `netcheck analyze --kube -n ml -l ray.io/cluster=fsdp-qwen --expect efa`"
                    .into(),
            ),
        });
    }
    if let Some(selector) = &args.selector {
        crate::launch::kube::selector::check_flag(selector)?;
    }
    let opts = LogOptions {
        container: args.container.clone(),
        since: args
            .since
            .as_deref()
            .map(|s| duration("--since", s))
            .transpose()?,
        previous: args.previous,
        follow: if args.follow {
            Some(duration("--timeout", &args.timeout)?)
        } else {
            None
        },
        settle: duration("--settle", &args.settle)?,
        concurrency: args.max_streams as usize,
    };
    let selection = Selection {
        selector: args.selector.clone(),
        pods: args.pod.clone(),
        workload: args.workload.clone(),
    };
    let connect = Connect {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        namespace: args.namespace.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::infra(format!("cannot start the async runtime: {e}")))?;
    let result: ClusterAnalysis = runtime.block_on(async move {
        let client = KubeClient::connect(&connect).await?;
        let pods = logs::select(&client, &selection).await?;
        logs::analyze(
            &client,
            pods,
            &opts,
            Options {
                expect,
                ..Default::default()
            },
        )
        .await
    })?;
    let rendered = match args.format.as_str() {
        "json" => json(&result)?,
        "markdown" => {
            let shown: Analysis = cluster::with_nodes_in_evidence(&result);
            logscan::render::markdown(&shown) + &cluster::markdown(&result)
        }
        _ => {
            let shown: Analysis = cluster::with_nodes_in_evidence(&result);
            logscan::render::text(&shown) + &cluster::text(&result)
        }
    };
    let outcome = print(&rendered, verdict_of(&result.analysis))?;
    // Untested is not passed: a GPU pod whose log said nothing is a hole in the verdict.
    let unjudged: Vec<String> = result
        .pods
        .iter()
        .filter(|p| p.status != cluster::PodStatus::Analyzed && p.facts.gpus > 0)
        .map(|p| format!("{} ({})", p.facts.pod, p.status.as_str()))
        .collect();
    if outcome == Outcome::Pass && !unjudged.is_empty() {
        if args.allow_untested {
            crate::say!(
                "untested: {} GPU pod(s) not judged: {} (accepted with --allow-untested)",
                unjudged.len(),
                unjudged.join(", ")
            );
        } else {
            return Err(Error::Infrastructure {
                what: format!(
                    "untested: {} GPU pod(s) not judged: {}; the verdict covers only the others",
                    unjudged.len(),
                    unjudged.join(", ")
                ),
                hint: Some(
                    "wait for the pods (--follow), or pass --allow-untested to accept it (exit 0)"
                        .into(),
                ),
            });
        }
    }
    Ok(outcome)
}
