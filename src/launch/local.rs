//! The local launcher: one `netcheck worker` process per GPU of this host, their events turned
//! into a live table, `results.jsonl` rows as they finish, and `results.json` at the end — also
//! when a rank dies, hangs or the user presses Ctrl-C (rows already measured are kept).
//!
//! The same launcher is one node of a multi-node run (`--nnodes N --node-rank K`): node 0 hosts
//! rank 0 and its rendezvous; the other nodes only run their ranks.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use crate::config::BenchConfig;
use crate::console::TablePrinter;
use crate::engine::harness::ErrorKind;
use crate::engine::{gpu, library};
use crate::error::{Error, Outcome, Result};
use crate::launch::layout::Layout;
use crate::logscan::{Analysis, Analyzer, Options, Severity, Transport};
use crate::probe::counters;
use crate::rendezvous::{TOKEN_ENV, random_hex};
use crate::results::{
    HostInfo, NcclInfo, RankInfo, RankPair, RowSink, RunRecord, RunStatus, now_rfc3339,
};
use crate::worker::{EVENT_PREFIX, Event, RankReport};

pub struct LocalOptions {
    pub config: BenchConfig,
    /// GPUs of this host to use (default: all).
    pub gpus: Option<u32>,
    /// Give ranks different NCCL_HOSTID values so NCCL sees this many nodes.
    pub simulate_nodes: Option<u32>,
    /// Ranks per simulated node (they share this host's GPUs when needed).
    pub gpus_per_node: Option<u32>,
    /// All ranks of this host as threads of one worker process (nccl-tests' `-g N` layout).
    pub one_process: bool,
    pub nnodes: u32,
    pub node_rank: u32,
    /// Rank 0's `HOST:PORT` for multi-node runs.
    pub rendezvous: Option<String>,
    pub out: PathBuf,
    /// Longest time any step may take without progress.
    pub timeout: Duration,
    /// Echo the ranks' NCCL log lines to stderr (so `kubectl logs` carries them).
    pub echo_logs: bool,
    /// Print the final RunRecord as one `NETCHECK_RESULT {json}` line on stdout.
    pub print_record: bool,
    /// What `--fabric-check` did on this node, for `RunRecord.fabric`.
    pub fabric: Option<serde_json::Value>,
}

/// What the workers told us, folded as events arrive.
#[derive(Default)]
struct Progress {
    last_phase: BTreeMap<u32, String>,
    failures: Vec<Failure>,
    timed_out: bool,
    done: Option<Vec<RankReport>>,
    listening: Option<u16>,
    /// Points whose verification came back (it runs after the timed sweep).
    verified: usize,
}

/// Why the run cannot complete.
struct Failure {
    /// The rank it is about, if one.
    rank: Option<u32>,
    /// A rank that died, hung or lost a peer (exit 124), rather than an error (exit 4).
    hang: bool,
    message: String,
}

enum Msg {
    Event(Box<Event>),
    Text(u32, String),
    Closed(u32),
}

pub fn run(opts: LocalOptions) -> Result<Outcome> {
    let inventory = gpu::detect_gpus()?;
    let lib = library::choose_nccl_library()?;
    let shim = library::shim_dir(&lib.path)?;
    let layout = Layout::new(
        inventory.gpus.len() as u32,
        opts.gpus,
        opts.simulate_nodes,
        opts.gpus_per_node,
        opts.nnodes,
        opts.node_rank,
    )
    .map_err(Error::usage)?;
    let world = layout.world;
    let multi_node = opts.nnodes > 1;
    let token = match std::env::var(TOKEN_ENV) {
        Ok(t) if !t.is_empty() => t,
        _ if multi_node => {
            return Err(Error::usage(format!(
                "a multi-node run needs the same random token in {TOKEN_ENV} on every node"
            )));
        }
        _ => random_hex(),
    };
    let hosts_rank0 = opts.node_rank == 0;
    let logs = opts.out.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| Error::write(&logs, e))?;
    let jsonl = opts.out.join("results.jsonl");
    let results_path = opts.out.join("results.json");
    let _ = std::fs::remove_file(&jsonl);

    let mut record = RunRecord::new("run");
    record.label = opts.config.name.clone();
    record.world_size = Some(world);
    record.fabric = opts.fabric.clone();
    record.config = Some(serde_json::to_value(&opts.config).expect("configs serialize"));
    record.nccl = Some(NcclInfo {
        version: lib.version.clone().unwrap_or_default(),
        library_path: Some(lib.path.display().to_string()),
    });
    let sweep_json = serde_json::to_string(&opts.config.sweep).expect("sweeps serialize");
    if layout.shares_gpus() {
        crate::say!(
            "netcheck: warning: the simulated nodes share GPUs: ranks on one GPU take turns (CUDA time-slices their contexts), so times carry milliseconds of switching; this layout checks transports and rank placement, not speed"
        );
    }
    if world == 1 {
        crate::say!(
            "netcheck: note: 1 rank: NCCL moves no data between GPUs, so bus bandwidth is 0 by definition; the table times NCCL's per-call cost on one GPU"
        );
    }
    crate::say!(
        "netcheck: {}, NCCL {} ({}), output in {}",
        layout.describe(opts.nnodes),
        lib.version.as_deref().unwrap_or("?"),
        lib.path.display(),
        opts.out.display()
    );

    // RDMA hardware counters before and after: the proof that bytes crossed each EFA/IB device.
    let sysfs = std::env::var_os("NETCHECK_SYSFS_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/sys"));
    let counters_before = counters::snapshot(&sysfs)
        .ok()
        .filter(|s| !s.devices.is_empty());

    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, interrupted.clone());
    }

    let (tx, rx) = mpsc::channel::<Msg>();
    // Ranks per worker process: one, or all of this host's (--one-process).
    let per_process = if opts.one_process { layout.local } else { 1 };
    let spawn = |rank: u32, local_gpu: u32, rdzv: &str| -> Result<Child> {
        let mut cmd = Command::new(
            std::env::current_exe()
                .map_err(|e| Error::infra(format!("cannot find the netcheck binary: {e}")))?,
        );
        cmd.args([
            "worker",
            "--rank",
            &rank.to_string(),
            "--world-size",
            &world.to_string(),
            "--ranks",
            &per_process.to_string(),
        ])
        .args(["--local-gpu", &local_gpu.to_string(), "--rendezvous", rdzv])
        .arg("--out")
        .arg(&opts.out)
        .args([
            "--sweep",
            &sweep_json,
            "--timeout",
            &format!("{}s", opts.timeout.as_secs_f64()),
        ])
        .env(TOKEN_ENV, &token)
        .env(
            "LD_LIBRARY_PATH",
            prepend_path(&shim, std::env::var_os("LD_LIBRARY_PATH")),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if std::env::var_os("NCCL_DEBUG").is_none() {
            cmd.env("NCCL_DEBUG", "INFO");
        }
        if std::env::var_os("NCCL_DEBUG_FILE").is_none() {
            let name = match per_process {
                1 => format!("rank-{rank}.log"),
                n => format!("ranks-{rank}-{}.log", rank + n - 1),
            };
            cmd.env("NCCL_DEBUG_FILE", logs.join(name));
        }
        if layout.simulated_nodes().is_some() {
            cmd.env(
                "NCCL_HOSTID",
                format!("netcheck-simulated-node-{}", layout.place(rank).node),
            );
        }
        // SAFETY: only async-signal-safe calls between fork and exec. Workers get their own
        // process group (Ctrl-C reaches only us; we stop them in order) and die with us.
        unsafe {
            cmd.pre_exec(|| {
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::infra(format!("cannot start worker rank {rank}: {e}")))?;
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let t = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                let msg = match line
                    .strip_prefix(EVENT_PREFIX)
                    .and_then(|j| serde_json::from_str(j).ok())
                {
                    Some(ev) => Msg::Event(Box::new(ev)),
                    None => Msg::Text(rank, line),
                };
                if t.send(msg).is_err() {
                    break;
                }
            }
            let _ = t.send(Msg::Closed(rank));
        });
        let t = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
                let _ = t.send(Msg::Text(rank, line));
            }
        });
        Ok(child)
    };

    // Rank 0 first: its rendezvous must listen before the others connect (locally it picks a
    // free port and tells us which).
    let mut children: BTreeMap<u32, Child> = BTreeMap::new();
    let mut progress = Progress::default();
    let rdzv_for_others = if hosts_rank0 {
        let bind = match &opts.rendezvous {
            Some(addr) => addr.clone(),
            None => "127.0.0.1:0".to_string(),
        };
        children.insert(0, spawn(0, 0, &bind)?);
        let deadline = Instant::now() + opts.timeout;
        while progress.listening.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(Msg::Event(ev)) => handle_event(*ev, &mut progress, None, None, &mut record),
                Ok(Msg::Text(r, line)) => crate::say!("[rank {r}] {line}"),
                Ok(Msg::Closed(_)) => break,
                Err(_) if left.is_zero() || interrupted.load(Ordering::Relaxed) => break,
                Err(_) => {}
            }
        }
        let Some(port) = progress.listening else {
            stop_all(&mut children);
            let why = progress
                .failures
                .first()
                .map(|f| f.message.clone())
                .unwrap_or_else(|| "rank 0 did not start its rendezvous".into());
            return Err(Error::infra(why));
        };
        // Ranks on this node reach rank 0 over loopback, at the port it actually bound.
        format!("127.0.0.1:{port}")
    } else {
        opts.rendezvous
            .clone()
            .ok_or_else(|| Error::usage("--node-rank > 0 needs --rendezvous HOST:PORT of node 0"))?
    };
    for place in layout.here().step_by(per_process as usize) {
        if place.rank != 0 {
            children.insert(place.rank, spawn(place.rank, place.gpu, &rdzv_for_others)?);
        }
    }
    drop(tx);

    let mut sink = if hosts_rank0 {
        Some(RowSink::create(&jsonl)?)
    } else {
        None
    };
    let sweep = &opts.config.sweep;
    let mut table = TablePrinter::new(sweep.out_of_place, sweep.in_place, sweep.check);
    let bar = progress_bar(&opts.config, world);
    let tail = opts
        .echo_logs
        .then(|| LogTail::new(&logs, layout.first_rank..layout.first_rank + layout.local));
    let mut last_progress = Instant::now();
    let watchdog = opts.timeout + Duration::from_secs(10);
    let mut open: usize = children.len();
    let mut status = RunStatus::Complete;
    // Once a rank failed, the others get a few seconds to notice and report, then we stop
    // them: a frozen rank would otherwise hold the run until the watchdog.
    const FAILURE_GRACE: Duration = Duration::from_secs(5);
    let mut first_failure: Option<Instant> = None;

    while open > 0 {
        if interrupted.load(Ordering::Relaxed) {
            status = RunStatus::Interrupted;
            crate::say!(
                "netcheck: interrupted; stopping the workers and keeping the rows measured so far"
            );
            break;
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Event(ev)) => {
                last_progress = Instant::now();
                handle_event(
                    *ev,
                    &mut progress,
                    sink.as_mut(),
                    Some((&mut table, &bar)),
                    &mut record,
                );
            }
            Ok(Msg::Text(r, line)) => bar.suspend(|| crate::say!("[rank {r}] {line}")),
            Ok(Msg::Closed(r)) => {
                open -= 1;
                let code = children.get_mut(&r).and_then(|c| c.wait().ok());
                if let Some(code) = code.filter(|c| !c.success()) {
                    let phase = progress
                        .last_phase
                        .get(&r)
                        .cloned()
                        .unwrap_or_else(|| "start-up".into());
                    let signal = std::os::unix::process::ExitStatusExt::signal(&code);
                    let how = match signal {
                        Some(sig) => format!("was killed by signal {sig}"),
                        None => format!("exited with code {}", code.code().unwrap_or(-1)),
                    };
                    // A rank that vanished leaves the others waiting on it: that is a hang.
                    if !progress.failures.iter().any(|f| f.rank == Some(r)) {
                        progress.failures.push(Failure {
                            rank: Some(r),
                            hang: signal.is_some(),
                            message: format!("rank {r} {how} during {phase}"),
                        });
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(t) = &tail {
            t.poll(&bar);
        }
        if first_failure.is_none() && !progress.failures.is_empty() {
            first_failure = Some(Instant::now());
        }
        if first_failure.is_some_and(|t| t.elapsed() > FAILURE_GRACE) {
            break;
        }
        if last_progress.elapsed() > watchdog {
            progress.timed_out = true;
            status = RunStatus::Timeout;
            let phases: Vec<String> = progress
                .last_phase
                .iter()
                .map(|(r, p)| format!("rank {r}: {p}"))
                .collect();
            progress.failures.push(Failure {
                rank: None,
                hang: true,
                message: format!("no progress for {:?} ({})", watchdog, phases.join("; ")),
            });
            break;
        }
    }
    stop_all(&mut children);
    if let Some(t) = &tail {
        t.poll(&bar);
    }
    bar.finish_and_clear();
    for line in table.flush() {
        print_line(&line);
    }
    if opts.config.sweep.check && hosts_rank0 && !record.rows.is_empty() {
        let wrong: u64 = record.rows.iter().filter_map(|r| r.wrong).sum();
        print_line(&format!(
            "# Checked after the timed sweep: {} of {} points, {wrong} wrong element(s)",
            progress.verified,
            record.rows.len()
        ));
    }

    // Work out how the run ended.
    let failed = !progress.failures.is_empty();
    if status == RunStatus::Complete && failed {
        status = ended_as(&progress.failures);
    }
    record.status = status;
    record.finished_at = Some(now_rfc3339());
    record.errors = progress
        .failures
        .iter()
        .map(|f| f.message.clone())
        .collect();
    if let Some(ranks) = &progress.done {
        fill_topology(&mut record, ranks, &inventory.cuda_driver, &layout);
    }
    let counter_delta = counters_before.as_ref().and_then(|before| {
        counters::snapshot(&sysfs)
            .ok()
            .map(|after| before.delta(&after))
    });
    if let Some(delta) = &counter_delta {
        record.counters = Some(serde_json::to_value(delta).expect("deltas serialize"));
    }
    if !hosts_rank0 {
        // Rank 0's node writes the results; this node only ran its ranks. Its counter delta
        // goes to stdout, for the multi-node launcher to collect.
        if let Some(delta) = &counter_delta {
            print_line(&format!(
                "NETCHECK_COUNTERS {}",
                serde_json::to_string(delta).expect("deltas serialize")
            ));
        }
        // Rank 0's node writes the results; this node only ran its ranks.
        return match (status, failed) {
            (RunStatus::Complete, false) => Ok(Outcome::Pass),
            _ => Err(run_error(status, &progress)),
        };
    }
    record.analysis = analyse_logs(
        &opts.out,
        &opts.config,
        &record.environment,
        layout.simulated_nodes().is_some(),
    );
    let mut verdict = judge(&opts.config, &record);
    // Several nodes: does NCCL see them as launched? (On one node, NCCL counting more nodes
    // means P2P and SHM are off; the log rules say so without failing the run.)
    let nodes_expected = layout.simulated_nodes().unwrap_or(opts.nnodes);
    record.save(&results_path)?;
    // A communicator that never formed placed no rank: there is no layout to check.
    let formed = !record.rows.is_empty() || !failed;
    if nodes_expected > 1 && formed {
        let disagreements = layout_disagreements(&record, &layout, nodes_expected);
        let layout_checked = disagreements.is_empty() && record.analysis.is_some();
        verdict.extend(disagreements);
        let links = record.rank_links();
        verdict.extend(misrouted_links(&links, &layout));
        print_layout(
            &record,
            &links,
            &layout,
            layout_checked.then_some(nodes_expected),
        );
    }
    summarize(&record, &verdict, &results_path);
    if opts.print_record {
        print_line(&format!(
            "NETCHECK_RESULT {}",
            serde_json::to_string(&record).expect("records serialize")
        ));
    }
    match status {
        RunStatus::Complete if !failed => Ok(if verdict.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Fail
        }),
        // A network NCCL could not initialise (`NCCL_NET` pinned to a plugin that found no
        // provider, say) stops every rank in communicator init: that is the transport check
        // failing, whichever rank noticed first, not a hang or an infrastructure error.
        RunStatus::Failed | RunStatus::Timeout if network_failed(&record) => {
            crate::say!("netcheck: {}", run_error(status, &progress));
            Ok(Outcome::Fail)
        }
        _ => Err(run_error(status, &progress)),
    }
}

/// How a run with failures ended. A rank that stopped on an error of its own leaves its peers
/// waiting on it: their "peer gone" reports follow from it, so the run failed (4) rather than
/// hung (124). Only hangs with no such error (a rank killed or frozen) are a timeout.
fn ended_as(failures: &[Failure]) -> RunStatus {
    let own_error = failures.iter().any(|f| !f.hang && f.rank.is_some());
    if failures.iter().any(|f| f.hang) && !own_error {
        RunStatus::Timeout
    } else {
        RunStatus::Failed
    }
}

/// The logs say NCCL could not initialise any network (`no-net-plugin`).
pub fn network_failed(record: &RunRecord) -> bool {
    record
        .analysis
        .as_ref()
        .is_some_and(|a| a.findings.iter().any(|f| f.id == "no-net-plugin"))
}

fn handle_event(
    ev: Event,
    progress: &mut Progress,
    sink: Option<&mut RowSink>,
    table: Option<(&mut TablePrinter, &indicatif::ProgressBar)>,
    record: &mut RunRecord,
) {
    match ev {
        Event::Listening { port } => progress.listening = Some(port),
        Event::Phase { rank, phase } => {
            progress.last_phase.insert(rank, phase);
        }
        Event::Row { row } => {
            if let Some(sink) = sink
                && let Err(e) = sink.append(&row)
            {
                crate::say!("netcheck: warning: {e}");
            }
            if let Some((table, bar)) = table {
                bar.inc(1);
                for line in table.push(row.clone()) {
                    bar.suspend(|| print_line(&line));
                }
            }
            record.rows.push(row);
        }
        Event::Verified { check } => {
            if let Some((table, bar)) = table {
                if progress.verified == 0 {
                    // The timed sweep is over: print a row still waiting for its twin.
                    for line in table.flush() {
                        bar.suspend(|| print_line(&line));
                    }
                    bar.set_message("verifying");
                }
                bar.inc(1);
                if check.wrong > 0 {
                    let line = format!(
                        "# check failed: {} {} {} {}: {} wrong element(s)",
                        check.op,
                        crate::config::format_bytes(check.bytes),
                        check.dtype,
                        if check.in_place {
                            "in-place"
                        } else {
                            "out-of-place"
                        },
                        check.wrong
                    );
                    bar.suspend(|| print_line(&line));
                }
            }
            progress.verified += 1;
            if let Some(row) = record.rows.iter_mut().find(|r| check.is_for(r)) {
                row.wrong = Some(check.wrong);
                // The completed row again: a later line for the same point replaces the first.
                if let Some(sink) = sink
                    && let Err(e) = sink.append(row)
                {
                    crate::say!("netcheck: warning: {e}");
                }
            }
        }
        Event::Done { ranks } => progress.done = Some(ranks),
        Event::Failed {
            rank: r,
            phase,
            kind,
            message,
        } => {
            progress.last_phase.insert(r, phase.clone());
            progress.failures.push(Failure {
                rank: Some(r),
                hang: matches!(kind, ErrorKind::Timeout | ErrorKind::Peer),
                message: format!("rank {r} failed during {phase}: {message}"),
            });
        }
    }
}

fn run_error(status: RunStatus, progress: &Progress) -> Error {
    let what = progress
        .failures
        .iter()
        .map(|f| f.message.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    match status {
        RunStatus::Interrupted => Error::Interrupted,
        RunStatus::Timeout => Error::Timeout {
            what,
            hint: Some(
                "rows measured before the failure are in results.json; rank logs are under logs/"
                    .into(),
            ),
        },
        _ => Error::Infrastructure {
            what: if what.is_empty() {
                "the workers stopped without finishing".into()
            } else {
                what
            },
            hint: Some("see the rank logs under logs/ in the output folder".into()),
        },
    }
}

/// Hosts, ranks and GPUs from the workers' final reports.
fn fill_topology(record: &mut RunRecord, ranks: &[RankReport], cuda_driver: &str, layout: &Layout) {
    let mut hosts: BTreeMap<String, HostInfo> = BTreeMap::new();
    for r in ranks {
        let host = hosts.entry(r.host.clone()).or_insert_with(|| HostInfo {
            hostname: r.host.clone(),
            cuda_driver: r
                .cuda_driver
                .clone()
                .or_else(|| Some(cuda_driver.to_string())),
            ..Default::default()
        });
        if host.stack.is_none() {
            host.stack = r.stack.clone();
        }
        if let Some(g) = &r.gpu
            && !host.gpus.iter().any(|x| x.index == g.index)
        {
            host.gpus.push(g.clone());
        }
        record.ranks.push(RankInfo {
            rank: r.rank,
            host: r.host.clone(),
            gpu: r.gpu.as_ref().map(|g| g.index).unwrap_or(0),
            pid: Some(r.pid),
            log: r.log.clone(),
            node: Some(layout.place(r.rank).node),
            local_rank: Some(layout.place(r.rank).local_rank),
        });
    }
    record.ranks.sort_by_key(|r| r.rank);
    record.hosts = hosts.into_values().collect();
    if let (Some(nccl), Some(first)) = (&mut record.nccl, ranks.iter().find(|r| r.rank == 0)) {
        if let Some(v) = &first.nccl_version {
            nccl.version = v.clone();
        }
        if let Some(p) = &first.nccl_library {
            nccl.library_path = Some(p.clone());
        }
    }
}

/// The transport analysis of every rank's NCCL log (`logs/rank-N.log`), as one job, knowing
/// the environment the workers ran in (an `FI_PROVIDER=efa` followed by TCP is a fallback).
fn analyse_logs(
    out: &Path,
    config: &BenchConfig,
    environment: &BTreeMap<String, String>,
    simulated_nodes: bool,
) -> Option<Analysis> {
    let expect = config
        .expect
        .transport
        .as_deref()
        .filter(|t| *t != "any")
        .and_then(|t| t.parse::<Transport>().ok());
    let mut logs: Vec<PathBuf> = std::fs::read_dir(out.join("logs"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    if logs.is_empty() {
        return None;
    }
    let environment = environment
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut analyzer = Analyzer::new(Options {
        expect,
        environment,
        simulated_nodes,
    });
    for log in &logs {
        if let Err(e) = analyzer.feed_path(log) {
            crate::say!("netcheck: warning: {e}");
        }
    }
    Some(analyzer.finish())
}

/// Reasons the run fails its expectations (empty: pass).
pub fn judge(config: &BenchConfig, record: &RunRecord) -> Vec<String> {
    let mut reasons = vec![];
    let max_wrong = config.expect.max_wrong.unwrap_or(0);
    let wrong: u64 = record.rows.iter().filter_map(|r| r.wrong).sum();
    if wrong > max_wrong {
        let bad: Vec<String> = record
            .rows
            .iter()
            .filter(|r| r.wrong.unwrap_or(0) > 0)
            .take(5)
            .map(|r| {
                format!(
                    "{} {} {}: {} wrong",
                    r.op,
                    crate::config::format_bytes(r.bytes),
                    if r.in_place {
                        "in-place"
                    } else {
                        "out-of-place"
                    },
                    r.wrong.unwrap_or(0)
                )
            })
            .collect();
        reasons.push(format!(
            "{wrong} wrong element(s) (allowed {max_wrong}): {}",
            bad.join(", ")
        ));
    }
    if let Some(expect) = config.expect.transport.as_deref().filter(|t| *t != "any") {
        match &record.analysis {
            None => reasons.push(format!(
                "expected inter-node transport `{expect}`, but the NCCL logs could not be analysed"
            )),
            Some(a) => {
                let got = a.inter_node_transport;
                if got.as_str() != expect {
                    let detail = if got == Transport::None {
                        " (no traffic crossed nodes)".to_string()
                    } else {
                        String::new()
                    };
                    reasons.push(format!(
                        "expected inter-node transport `{expect}`, NCCL used `{}`{detail}",
                        got.as_str()
                    ));
                }
            }
        }
    }
    // Everything else the log analysis calls an error (a TCP fallback, a failed plugin on a
    // multi-node run, an NCCL error) fails the run too.
    if let Some(a) = &record.analysis {
        for f in &a.findings {
            if f.severity == Severity::Error && f.id != "expectation-not-met" {
                reasons.push(format!("{} [{}]", f.message, f.id));
            }
        }
    }
    reasons
}

/// Does NCCL see the nodes the launcher made? Each rank's `localRank`/`localRanks` and the
/// node count in its log against the launch layout (rank = node × ranks per node + local
/// rank). A disagreement means the job NCCL ran is not the one that was asked for, e.g. an
/// `NCCL_HOSTID` from the environment merged simulated nodes.
fn layout_disagreements(record: &RunRecord, layout: &Layout, nodes_expected: u32) -> Vec<String> {
    let Some(a) = &record.analysis else {
        return vec![];
    };
    let mut out = vec![];
    if let Some(seen) = a.nodes
        && seen != nodes_expected
    {
        out.push(format!(
            "NCCL counted {seen} node(s), the launcher made {nodes_expected} [layout]"
        ));
    }
    for info in &record.ranks {
        let Some(seen) = record.analysis_of(info) else {
            continue;
        };
        let place = layout.place(info.rank);
        let on_node = layout.ranks_on_node_of(info.rank);
        if let (Some(local_rank), Some(local_ranks)) = (seen.local_rank, seen.local_ranks)
            && (local_rank, local_ranks) != (place.local_rank, on_node)
        {
            out.push(format!(
                "NCCL placed rank {} as local rank {local_rank} of {local_ranks}; the launcher put it on node {} as local rank {} of {on_node} [layout]",
                info.rank, place.node, place.local_rank
            ));
        }
    }
    out
}

/// Links that crossed the network between ranks of one node, or stayed off it between
/// nodes: either way NCCL did not route the job the way it was launched.
fn misrouted_links(links: &BTreeMap<RankPair, Vec<String>>, layout: &Layout) -> Vec<String> {
    let mut wrong = vec![];
    for ((a, b), kinds) in links {
        let (node_a, node_b) = (layout.place(*a).node, layout.place(*b).node);
        for kind in kinds {
            let network = kind.starts_with("NET/") || kind.starts_with("COLLNET/");
            if node_a == node_b && network {
                wrong.push(format!(
                    "ranks {a} and {b} share node {node_a} but NCCL connected them over {kind} (P2P and SHM disabled or unusable?) [layout]"
                ));
            } else if node_a != node_b && !network && kind != "P2P/MNNVL" {
                wrong.push(format!(
                    "ranks {a} (node {node_a}) and {b} (node {node_b}) were connected over {kind}: NCCL does not see the nodes as launched [layout]"
                ));
            }
        }
    }
    wrong
}

/// Per rank of a multi-node (or simulated) run: its place and how it reached each peer, then
/// the links grouped by inside/between nodes, e.g. `inter-node links over NET/Socket: 0-3, 1-2`.
fn print_layout(
    record: &RunRecord,
    links: &BTreeMap<RankPair, Vec<String>>,
    layout: &Layout,
    layout_agrees: Option<u32>,
) {
    const LISTED: usize = 16;
    const SHOWN: usize = 8;
    if let Some(nodes) = layout_agrees {
        crate::say!(
            "netcheck: layout: NCCL sees the {nodes} nodes as launched (rank = node × ranks per node + local rank)"
        );
    }
    if record.ranks.len() <= LISTED {
        for info in &record.ranks {
            crate::say!(
                "netcheck: rank {} (node {}, local rank {}, GPU {}): {}",
                info.rank,
                info.node.map_or("-".into(), |n| n.to_string()),
                info.local_rank.map_or("-".into(), |n| n.to_string()),
                info.gpu,
                RunRecord::links_of(links, info.rank)
            );
        }
    }
    let mut groups: BTreeMap<(bool, &str), Vec<String>> = BTreeMap::new();
    for ((a, b), kinds) in links {
        let same_node = layout.place(*a).node == layout.place(*b).node;
        for kind in kinds {
            groups
                .entry((same_node, kind))
                .or_default()
                .push(format!("{a}-{b}"));
        }
    }
    for ((same_node, kind), pairs) in &groups {
        let more = pairs.len().saturating_sub(SHOWN);
        crate::say!(
            "netcheck: {} links over {kind}: {}{}",
            if *same_node {
                "intra-node"
            } else {
                "inter-node"
            },
            pairs[..pairs.len().min(SHOWN)].join(", "),
            if more > 0 {
                format!(" (+{more})")
            } else {
                String::new()
            }
        );
    }
}

/// `all_gather 9.8 µs (1K) to 2.11 ms (1G)`: per-call time (mean over the timed loop) at the
/// smallest and largest size of each collective, out-of-place; what one rank measures.
pub fn one_gpu_times(rows: &[crate::results::ResultRow]) -> Option<String> {
    let mut ops: Vec<&str> = vec![];
    for r in rows {
        if !ops.contains(&r.op.as_str()) {
            ops.push(&r.op);
        }
    }
    let fmt = |us: f64| {
        if us >= 1000.0 {
            format!("{:.2} ms", us / 1000.0)
        } else {
            format!("{us:.1} µs")
        }
    };
    let parts: Vec<String> = ops
        .iter()
        .filter_map(|op| {
            let mine = || rows.iter().filter(|r| r.op == *op && !r.in_place);
            let lo = mine().min_by_key(|r| r.bytes)?;
            let hi = mine().max_by_key(|r| r.bytes)?;
            let size = crate::config::format_bytes;
            Some(format!(
                "{op} {} ({}) to {} ({})",
                fmt(lo.time_us.mean),
                size(lo.bytes),
                fmt(hi.time_us.mean),
                size(hi.bytes)
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// What a one-GPU run ends with: it measured nothing between GPUs, and what would.
const ONE_GPU_ADVICE: &str = "one GPU measures nothing between GPUs. For NCCL's network path on this host, run `netcheck run --simulate-nodes 2 --gpus-per-node 1` (two simulated nodes share the GPU); for the network itself, run on several nodes (`netcheck launch`, or `netcheck run --nnodes N` on each)";

fn summarize(record: &RunRecord, reasons: &[String], path: &Path) {
    if let Some(a) = &record.analysis {
        let networks = if a.networks.is_empty() {
            "-".to_string()
        } else {
            a.networks.join(", ")
        };
        crate::say!(
            "netcheck: inter-node transport: {} (NCCL network module: {networks}){}",
            a.inter_node_transport.as_str(),
            match a.socket_fallback {
                Some(true) => "; TCP socket fallback!",
                _ => "",
            }
        );
        for f in a.findings.iter().filter(|f| f.severity == Severity::Warn) {
            crate::say!("netcheck: warning: {} [{}]", f.message, f.id);
        }
    }
    for g in crate::results::stack::groups(record) {
        crate::say!("netcheck: stack: {}", g.text());
    }
    for d in crate::results::stack::differences(record) {
        crate::say!("netcheck: warning: {d}");
    }
    if record.world_size == Some(1) {
        if let Some(span) = one_gpu_times(&record.rows) {
            crate::say!("netcheck: time per call on 1 GPU: {span}");
        }
        crate::say!("netcheck: {ONE_GPU_ADVICE}");
    }
    let best = record
        .rows
        .iter()
        .filter_map(|r| r.busbw_gbs.map(|b| (b, r)))
        .filter(|(b, _)| *b > 0.0)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((bw, r)) = best {
        crate::say!(
            "netcheck: peak bus bandwidth {bw:.1} GB/s ({} {})",
            r.op,
            crate::config::format_bytes(r.bytes)
        );
    }
    for reason in reasons {
        crate::say!("netcheck: FAIL: {reason}");
    }
    crate::say!("netcheck: results: {}", path.display());
}

fn print_line(line: &str) {
    let _ = crate::output::stdout(&format!("{line}\n"));
}

fn stop_all(children: &mut BTreeMap<u32, Child>) {
    for child in children.values_mut() {
        if let Ok(None) = child.try_wait() {
            // SAFETY: signalling our own child's process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) };
        }
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    for child in children.values_mut() {
        while let Ok(None) = child.try_wait() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn prepend_path(dir: &Path, old: Option<std::ffi::OsString>) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(old) = old {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).expect("paths without ':'")
}

/// A progress bar on stderr, only for a terminal outside CI.
fn progress_bar(config: &BenchConfig, world: u32) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    let s = &config.sweep;
    let sizes =
        crate::engine::harness::sizes(s.min_bytes.0, s.max_bytes.0, s.step_factor).len() as u64;
    let variants = s.in_place as u64 + s.out_of_place as u64;
    let points = s.ops.len() as u64 * s.dtypes.len() as u64 * sizes * variants;
    // Every point is timed, then (with the check on) verified in a second pass.
    let total = points * (1 + s.check as u64);
    let visible = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none() && world > 0;
    if !visible {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} steps ({msg})",
        )
        .expect("valid template"),
    );
    bar.set_message("timing");
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Follows the ranks' NCCL log files and echoes new lines to stderr.
struct LogTail {
    files: Vec<(u32, PathBuf, std::cell::Cell<u64>)>,
}

impl LogTail {
    fn new(dir: &Path, ranks: std::ops::Range<u32>) -> LogTail {
        LogTail {
            files: ranks
                .map(|r| {
                    (
                        r,
                        dir.join(format!("rank-{r}.log")),
                        std::cell::Cell::new(0),
                    )
                })
                .collect(),
        }
    }

    fn poll(&self, bar: &indicatif::ProgressBar) {
        use std::io::{Read, Seek, SeekFrom};
        for (rank, path, pos) in &self.files {
            let Ok(mut f) = std::fs::File::open(path) else {
                continue;
            };
            if f.seek(SeekFrom::Start(pos.get())).is_err() {
                continue;
            }
            let mut buf = Vec::new();
            if f.read_to_end(&mut buf).is_err() {
                continue;
            }
            // Only whole lines; the rest waits for the next poll.
            let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
                continue;
            };
            pos.set(pos.get() + end as u64 + 1);
            bar.suspend(|| {
                for line in String::from_utf8_lossy(&buf[..end]).lines() {
                    crate::say!("[rank {rank}] {line}");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_peer_gone_after_a_ranks_own_error_is_a_failure_not_a_hang() {
        let f = |rank, hang| super::Failure {
            rank: Some(rank),
            hang,
            message: String::new(),
        };
        // The aws-ofi-nccl matrix's pinned network: rank 0's NCCL error, rank 1 lost it.
        assert_eq!(
            super::ended_as(&[f(0, false), f(1, true)]),
            super::RunStatus::Failed
        );
        assert_eq!(
            super::ended_as(&[f(1, true), f(0, false)]),
            super::RunStatus::Failed
        );
        // A rank killed by a signal, its peer waiting: a hang.
        assert_eq!(
            super::ended_as(&[f(1, true), f(0, true)]),
            super::RunStatus::Timeout
        );
        assert_eq!(super::ended_as(&[f(0, false)]), super::RunStatus::Failed);
    }

    use super::*;

    fn out_with_log(fixture: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/logs/h200")
            .join(fixture);
        std::fs::copy(src, dir.path().join("logs/rank-0.log")).unwrap();
        dir
    }

    #[test]
    fn one_rank_runs_report_the_time_per_call_at_both_ends_of_the_sweep() {
        // `netcheck run` on a one-GPU H200 (2026-12-01).
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/one-gpu.json");
        let record = RunRecord::load(&path).unwrap();
        assert_eq!(
            one_gpu_times(&record.rows).as_deref(),
            Some(
                "all_gather 5.2 µs (1K) to 503.1 µs (1G), reduce_scatter 5.1 µs (1K) to 503.1 µs (1G)"
            )
        );
        assert_eq!(one_gpu_times(&[]), None);
    }

    #[test]
    fn rank_logs_are_analysed_and_an_unmet_expectation_fails_the_run() {
        let dir = out_with_log("fakehosts-socket.log");
        let mut config = BenchConfig::embedded_default();
        config.expect.transport = Some("efa".into());
        let mut record = RunRecord::new("run");
        record.analysis = analyse_logs(dir.path(), &config, &record.environment, false);
        let a = record.analysis.as_ref().expect("logs were analysed");
        assert_eq!(a.inter_node_transport, Transport::Socket);
        let reasons = judge(&config, &record);
        assert!(
            reasons
                .iter()
                .any(|r| r.contains("expected inter-node transport `efa`, NCCL used `socket`")),
            "{reasons:?}"
        );
    }

    /// The real 2 simulated nodes × 2 GPUs run (`tests/fixtures/logs/h200/sim-2x2`) with the
    /// ranks as `layout` placed them.
    fn sim_2x2_record(layout: &Layout) -> RunRecord {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs/h200/sim-2x2");
        for rank in 0..4 {
            let name = format!("rank-{rank}.log");
            std::fs::copy(fixtures.join(&name), dir.path().join("logs").join(&name)).unwrap();
        }
        let mut record = RunRecord::new("run");
        record.analysis = analyse_logs(
            dir.path(),
            &BenchConfig::embedded_default(),
            &record.environment,
            true,
        );
        let pids = [783, 789, 792, 795];
        for (rank, pid) in pids.into_iter().enumerate() {
            let place = layout.place(rank as u32);
            record.ranks.push(RankInfo {
                rank: rank as u32,
                host: "vm".into(),
                gpu: place.gpu,
                pid: Some(pid),
                log: None,
                node: Some(place.node),
                local_rank: Some(place.local_rank),
            });
        }
        record
    }

    #[test]
    fn the_2x2_run_is_routed_as_launched() {
        let layout = Layout::new(2, None, Some(2), Some(2), 1, 0).unwrap();
        let record = sim_2x2_record(&layout);
        assert_eq!(
            layout_disagreements(&record, &layout, 2),
            Vec::<String>::new()
        );
        let links = record.rank_links();
        // NCCL prints P2P lines on the sender only: the receiving end still gets the link.
        let expected: BTreeMap<(u32, u32), Vec<String>> = [
            ((0, 1), "P2P/CUMEM"),
            ((0, 3), "NET/Socket"),
            ((1, 2), "NET/Socket"),
            ((2, 3), "P2P/CUMEM"),
        ]
        .into_iter()
        .map(|(k, v)| (k, vec![v.to_string()]))
        .collect();
        assert_eq!(links, expected);
        assert_eq!(misrouted_links(&links, &layout), Vec::<String>::new());
    }

    #[test]
    fn a_layout_nccl_did_not_follow_is_named() {
        // Had the launcher meant 4 nodes of one rank, NCCL's 2 × 2 and its P2P links disagree.
        let meant = Layout::new(4, None, Some(4), None, 1, 0).unwrap();
        let record = sim_2x2_record(&meant);
        let disagreements = layout_disagreements(&record, &meant, 4);
        assert!(disagreements[0].contains("NCCL counted 2 node(s), the launcher made 4"));
        assert!(
            disagreements
                .iter()
                .any(|d| d.contains("NCCL placed rank 1 as local rank 1 of 2"))
        );
        let misrouted = misrouted_links(&record.rank_links(), &meant);
        assert!(
            misrouted.iter().any(
                |m| m.contains("ranks 0 (node 0) and 1 (node 1) were connected over P2P/CUMEM")
            ),
            "{misrouted:?}"
        );
        // Had it meant one node of 4, the NET links are the complaint.
        let one_node = Layout::new(4, None, None, None, 1, 0).unwrap();
        let misrouted = misrouted_links(&record.rank_links(), &one_node);
        assert!(
            misrouted.iter().any(|m| m
                .contains("ranks 0 and 3 share node 0 but NCCL connected them over NET/Socket")),
            "{misrouted:?}"
        );
    }

    #[test]
    fn a_single_node_nvlink_run_passes_with_any() {
        let dir = out_with_log("nvlink.log");
        let config = BenchConfig::embedded_default();
        let mut record = RunRecord::new("run");
        record.analysis = analyse_logs(dir.path(), &config, &record.environment, false);
        assert_eq!(
            record.analysis.as_ref().unwrap().inter_node_transport,
            Transport::None
        );
        assert!(judge(&config, &record).is_empty());
    }

    #[test]
    fn a_verification_fills_in_its_row_and_fails_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("results.jsonl");
        let mut sink = RowSink::create(&jsonl).unwrap();
        let mut progress = Progress::default();
        let mut record = RunRecord::new("run");
        let timed = |in_place: bool| crate::worker::Event::Row {
            row: serde_json::from_value(serde_json::json!({
                "op": "all_gather", "dtype": "float32", "bytes": 1048576, "count": 131072,
                "in_place": in_place, "time_us": {"mean": 13.0}, "algbw_gbs": 80.0,
                "busbw_gbs": 40.0, "wrong": null
            }))
            .unwrap(),
        };
        for ev in [timed(false), timed(true)] {
            handle_event(ev, &mut progress, Some(&mut sink), None, &mut record);
        }
        let config = BenchConfig::embedded_default();
        assert!(judge(&config, &record).is_empty(), "not yet checked");

        let check = crate::engine::stats::PointCheck {
            op: "all_gather".into(),
            dtype: "float32".into(),
            bytes: 1048576,
            in_place: true,
            wrong: 5,
        };
        let verified = crate::worker::Event::Verified { check };
        handle_event(verified, &mut progress, Some(&mut sink), None, &mut record);
        assert_eq!(progress.verified, 1);
        assert_eq!(
            record.rows[0].wrong, None,
            "the out-of-place twin is untouched"
        );
        assert_eq!(record.rows[1].wrong, Some(5));
        let reasons = judge(&config, &record);
        assert!(reasons[0].contains("5 wrong element(s)"), "{reasons:?}");
        // results.jsonl: two timed rows, then the in-place row again with its count.
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2]["in_place"], true);
        assert_eq!(lines[2]["wrong"], 5);
    }

    #[test]
    fn wrong_elements_fail_the_run() {
        let config = BenchConfig::embedded_default();
        let mut record = RunRecord::new("run");
        let row: crate::results::ResultRow = serde_json::from_value(serde_json::json!({
            "op": "reduce_scatter", "dtype": "float32", "bytes": 1048576, "count": 131072,
            "in_place": true, "time_us": {"mean": 13.0}, "algbw_gbs": 80.0, "busbw_gbs": 40.0, "wrong": 7
        }))
        .unwrap();
        record.rows.push(row);
        let reasons = judge(&config, &record);
        assert!(
            reasons[0].contains("7 wrong element(s)")
                && reasons[0].contains("reduce_scatter 1M in-place"),
            "{reasons:?}"
        );
    }
}
