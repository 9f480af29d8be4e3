//! `netcheck run`: NCCL all-gather / reduce-scatter sweeps on this host's GPUs.

use std::path::PathBuf;

use crate::config::{BenchConfig, ByteSize, SweepFlags, parse_duration};
use crate::error::{Error, Outcome, Result};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bench config TOML (default: the embedded bench-configs/default.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Collectives, comma-separated: all_gather, reduce_scatter, all_reduce
    /// [default: all_gather,reduce_scatter, or the config's].
    #[arg(long, value_delimiter = ',')]
    pub ops: Option<Vec<String>>,
    /// Smallest size (the gathered buffer, as nccl-tests counts it) [default: 1K, or the
    /// config's].
    #[arg(long, value_name = "SIZE", allow_negative_numbers = true, value_parser = crate::flags::size(1, None))]
    pub min_bytes: Option<ByteSize>,
    /// Largest size [default: 1G, or the config's].
    #[arg(long, value_name = "SIZE", allow_negative_numbers = true, value_parser = crate::flags::size(1, None))]
    pub max_bytes: Option<ByteSize>,
    /// Multiply the size by this between steps [default: 2, or the config's].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u64>(2, None))]
    pub step_factor: Option<u64>,
    /// Timed iterations per size [default: 20, or the config's].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u32>(1, None))]
    pub iters: Option<u32>,
    /// Untimed iterations before timing [default: 5, or the config's].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u32>(0, None))]
    pub warmup: Option<u32>,
    /// Data types, comma-separated: float32, bfloat16, float16, int8, ... [default: float32,
    /// or the config's].
    #[arg(long, value_delimiter = ',')]
    pub dtype: Option<Vec<String>>,
    /// Number of local GPUs to use (default: all).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u32>(1, None))]
    pub gpus: Option<u32>,
    /// Give ranks different NCCL_HOSTID values so NCCL treats them as N nodes and uses its
    /// network path on one host.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u32>(1, None))]
    pub simulate_nodes: Option<u32>,
    /// With --simulate-nodes: ranks per simulated node, each on local GPUs 0..G-1, so NCCL
    /// mixes intra-node P2P with inter-node NET (e.g. 2 nodes × 2 GPUs on a 2-GPU host).
    /// When nodes × G exceeds this host's GPUs, the simulated nodes share GPUs (NCCL allows
    /// it: it only refuses two ranks of one node on one GPU); bandwidth is then shared too.
    #[arg(
        long,
        value_name = "G",
        allow_negative_numbers = true,
        value_parser = crate::flags::int::<u32>(1, None),
        requires = "simulate_nodes",
        conflicts_with = "gpus"
    )]
    pub gpus_per_node: Option<u32>,
    /// Run this host's ranks as threads of one worker process, the way nccl-tests' `-g N`
    /// does, instead of one process per GPU (what training jobs do). NCCL then links the GPUs
    /// with P2P/direct pointer instead of P2P/CUMEM: for comparing with nccl-tests'
    /// single-process numbers. A failing rank takes the others of its process with it.
    #[arg(long, conflicts_with = "simulate_nodes")]
    pub one_process: bool,
    /// The inter-node transport that must carry traffic; anything else fails (exit 1).
    #[arg(long, value_name = "TRANSPORT",
          value_parser = clap::builder::PossibleValuesParser::new(crate::config::KNOWN_TRANSPORTS))]
    pub expect: Option<String>,
    /// Output folder (default: reports/<timestamp>/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Give up when one step (rendezvous, init, one timed loop) takes longer (e.g. 90s, 10m);
    /// the report names the rank, the phase and the peer; exit 124.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub timeout: String,
    /// Multi-node: the number of nodes (each runs `netcheck run` with its own --node-rank).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = crate::flags::int::<u32>(1, None),
        help_heading = "Multi-node (one `netcheck run` per node)"
    )]
    pub nnodes: u32,
    /// Multi-node: this node's index, 0 to N-1. Node 0 hosts rank 0 and writes the results.
    #[arg(
        long,
        value_name = "K",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = crate::flags::int::<u32>(0, None),
        help_heading = "Multi-node (one `netcheck run` per node)"
    )]
    pub node_rank: u32,
    /// Multi-node: node 0's HOST:PORT (node 0 listens on PORT). Every node needs the same
    /// random token in NETCHECK_RDZV_TOKEN.
    #[arg(
        long,
        value_name = "HOST:PORT",
        help_heading = "Multi-node (one `netcheck run` per node)"
    )]
    pub rendezvous: Option<String>,
    /// Multi-node: before NCCL starts, every node runs a short libfabric ping-pong against
    /// node 0 over this provider (e.g. efa, tcp); node 0 listens on the rendezvous port + 1.
    #[arg(
        long,
        value_name = "PROVIDER",
        help_heading = "Multi-node (one `netcheck run` per node)"
    )]
    pub fabric_check: Option<String>,
}

pub fn run(args: Args) -> Result<Outcome> {
    let mut config = match &args.config {
        Some(path) => BenchConfig::load(path)?,
        None => BenchConfig::embedded_default(),
    };
    apply_flags(&mut config, &args)?;
    crate::output::folder_not_stdout("--out", args.out.as_deref())?;
    let timeout = parse_duration(&args.timeout).map_err(|m| Error::bad_input("--timeout", m))?;
    if args.nnodes == 0 || args.node_rank >= args.nnodes {
        return Err(Error::usage(format!(
            "--node-rank {} must be below --nnodes {}",
            args.node_rank, args.nnodes
        )));
    }
    if args.nnodes > 1 && args.rendezvous.is_none() {
        return Err(Error::usage(
            "--nnodes > 1 needs --rendezvous HOST:PORT (node 0's address)",
        ));
    }
    let multi_node = args.nnodes > 1;
    if multi_node && args.one_process {
        return Err(Error::usage(
            "--one-process runs on one host; for several nodes leave it out (one process per GPU)",
        ));
    }
    if multi_node && args.simulate_nodes.is_some() {
        return Err(Error::usage(
            "--simulate-nodes splits one host; it cannot be combined with --nnodes",
        ));
    }
    let fabric = match &args.fabric_check {
        Some(provider) => match fabric_check(provider, &args, timeout)? {
            Some(record) => Some(record),
            None => return Ok(Outcome::Fail),
        },
        None => None,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports").join(chrono::Utc::now().format("%Y-%m-%dT%H-%M-%SZ").to_string())
    });
    crate::launch::local::run(crate::launch::local::LocalOptions {
        config,
        gpus: args.gpus,
        simulate_nodes: args.simulate_nodes,
        gpus_per_node: args.gpus_per_node,
        one_process: args.one_process,
        nnodes: args.nnodes,
        node_rank: args.node_rank,
        rendezvous: args.rendezvous,
        out,
        timeout,
        echo_logs: multi_node,
        print_record: multi_node,
        fabric,
    })
}

/// Checks the flags and the config they name the way [`run`] does, without running anything
/// (so `check` can refuse a typo before its doctor runs).
pub fn check_flags(args: &Args) -> Result<()> {
    let mut config = match &args.config {
        Some(path) => BenchConfig::load(path)?,
        None => BenchConfig::embedded_default(),
    };
    apply_flags(&mut config, args)?;
    parse_duration(&args.timeout).map_err(|m| Error::bad_input("--timeout", m))?;
    Ok(())
}

/// `--fabric-check`: this node's part of the pre-check, before any GPU work. `Ok(None)`: the
/// check ran but failed (payloads came back wrong), so the run stops with exit 1.
fn fabric_check(
    provider: &str,
    args: &Args,
    timeout: std::time::Duration,
) -> Result<Option<serde_json::Value>> {
    use crate::launch::fabric_check::{self, Checked, FABRIC_PREFIX, FabricCheck};
    let (Some(rendezvous), true) = (&args.rendezvous, args.nnodes > 1) else {
        return Err(Error::Usage {
            message: "--fabric-check runs between nodes: it needs --nnodes N (N > 1) and --rendezvous HOST:PORT".into(),
            hint: Some(format!(
                "on one host, use `netcheck fabric --local --provider {provider}`"
            )),
        });
    };
    let token = match std::env::var(crate::rendezvous::TOKEN_ENV) {
        Ok(t) if !t.is_empty() => t,
        _ => {
            return Err(Error::usage(format!(
                "a multi-node run needs the same random token in {} on every node",
                crate::rendezvous::TOKEN_ENV
            )));
        }
    };
    let check = FabricCheck {
        provider: provider.to_string(),
        nnodes: args.nnodes,
        node_rank: args.node_rank,
        rendezvous: rendezvous.clone(),
        token,
        timeout,
    };
    let checked = fabric_check::run(&check)?;
    if let Checked::Measured(report) = &checked {
        crate::output::stderr_text(&report.to_text());
        let line = serde_json::to_string(report).expect("fabric reports serialize");
        crate::output::stdout(&format!("{FABRIC_PREFIX}{line}\n"))
            .map_err(|e| Error::write("<stdout>", e))?;
    }
    if let Some(reason) = checked.failure(&check) {
        crate::say!("netcheck: FAIL: {reason}");
        return Ok(None);
    }
    Ok(Some(checked.to_record()))
}

/// Flags override the matching config fields; the result is validated like a config file.
fn apply_flags(config: &mut BenchConfig, args: &Args) -> Result<()> {
    SweepFlags {
        ops: args.ops.clone(),
        min_bytes: args.min_bytes,
        max_bytes: args.max_bytes,
        step_factor: args.step_factor,
        iters: args.iters,
        warmup: args.warmup,
        dtypes: args.dtype.clone(),
        expect: args.expect.clone(),
    }
    .apply(config, "command-line flags and config")
}
