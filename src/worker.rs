//! One rank of a benchmark: a process per GPU, started by a launcher (`launch::local` on this
//! host, a pod on Kubernetes). It joins the rendezvous, builds the NCCL communicator, runs the
//! harness, and reports to its launcher through `NETCHECK_EVENT {json}` lines on stdout.
//! Rank 0 also gathers every rank's measurements and turns them into result rows.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::Sweep;
use crate::engine::comm::{self, Comm};
use crate::engine::cuda::Gpu;
use crate::engine::harness::{ErrorKind, Harness, Observer, SweepPlan, sizes};
use crate::engine::stats::{PointCheck, RankPoint, combine, combine_checks};
use crate::engine::{collective, dtype::DType, gpu, library};
use crate::error::{Error, Outcome, Result};
use crate::rendezvous::{Client, Group, RdzvError, Server, TOKEN_ENV};
use crate::results::{GpuInfo, ResultRow};

/// Prefix of the lines a worker writes for its launcher; everything else is for people.
pub const EVENT_PREFIX: &str = "NETCHECK_EVENT ";

/// Largest share of a rank's NCCL log sent to rank 0 (head and tail are kept).
const LOG_SHARE_LIMIT: usize = 6 << 20;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Rank 0's rendezvous is listening on `port`.
    Listening { port: u16 },
    /// `rank` started `phase` (the launcher keeps the last one per rank for hang reports).
    Phase { rank: u32, phase: String },
    /// Rank 0 finished timing a point, folded over all ranks (`wrong` still unknown).
    Row { row: ResultRow },
    /// Rank 0 finished verifying a point, the wrong elements of all ranks added up.
    Verified { check: PointCheck },
    /// Rank 0: the sweep is complete; who ran where.
    Done { ranks: Vec<RankReport> },
    /// This rank stopped.
    Failed {
        rank: u32,
        phase: String,
        kind: ErrorKind,
        message: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankReport {
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    pub gpu: Option<GpuInfo>,
    pub cuda_driver: Option<String>,
    pub nccl_version: Option<String>,
    pub nccl_library: Option<String>,
    /// Path of this rank's NCCL log in rank 0's output folder.
    pub log: Option<String>,
    /// What this rank loaded: NCCL, net plugin, libfabric, CUDA (absent from older workers).
    #[serde(default)]
    pub stack: Option<crate::results::stack::StackInfo>,
}

pub struct WorkerOptions {
    pub rank: u32,
    pub world_size: u32,
    pub local_gpu: u32,
    /// Rank 0: the address to listen on; others: rank 0's address.
    pub rendezvous: String,
    pub out: PathBuf,
    pub sweep: Sweep,
    pub timeout: Duration,
    /// Only test the rendezvous path (no GPU, no NCCL).
    pub rendezvous_only: bool,
    /// With `rendezvous_only`: stay joined this long between two barriers (tests kill a rank
    /// meanwhile to check that the others notice).
    pub hold: Duration,
    /// Rank 0 in a process of several ranks: where to tell the others its port.
    pub listening: Option<std::sync::mpsc::Sender<u16>>,
    /// Send this process's NCCL log to rank 0 (only the first rank of a process does: the
    /// others' lines are in the same file).
    pub share_log: bool,
}

/// Several ranks in this one process, one thread each (`netcheck run --one-process`, as
/// nccl-tests' `-g N` does): NCCL then connects them with `P2P/direct pointer` instead of the
/// cross-process `P2P/CUMEM`. `first` is the lowest rank's options; rank `first.rank + i` runs
/// on GPU `first.local_gpu + i`. When this process hosts rank 0, the others join at the port
/// it actually bound.
pub fn run_threads(first: WorkerOptions, ranks: u32) -> Result<Outcome> {
    if ranks <= 1 {
        return run(first);
    }
    let options = |i: u32, rendezvous: String| WorkerOptions {
        rank: first.rank + i,
        world_size: first.world_size,
        local_gpu: first.local_gpu + i,
        rendezvous,
        out: first.out.clone(),
        sweep: first.sweep.clone(),
        timeout: first.timeout,
        rendezvous_only: first.rendezvous_only,
        hold: first.hold,
        listening: None,
        share_log: i == 0,
    };
    let mut threads = vec![];
    let rendezvous = if first.rank == 0 {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut zero = options(0, first.rendezvous.clone());
        zero.listening = Some(tx);
        threads.push(std::thread::spawn(move || run(zero)));
        match rx.recv_timeout(first.timeout) {
            Ok(port) => format!("127.0.0.1:{port}"),
            // Rank 0 failed before listening and said why; its error is the result.
            Err(_) => {
                return threads
                    .pop()
                    .expect("rank 0")
                    .join()
                    .expect("rank 0 thread");
            }
        }
    } else {
        first.rendezvous.clone()
    };
    let start = if first.rank == 0 { 1 } else { 0 };
    for i in start..ranks {
        let opts = options(i, rendezvous.clone());
        threads.push(std::thread::spawn(move || run(opts)));
    }
    // Every rank's result; the first error (by rank) is the process's.
    let results: Vec<Result<Outcome>> = threads
        .into_iter()
        .map(|t| {
            t.join()
                .unwrap_or_else(|_| Err(Error::infra("a rank thread panicked")))
        })
        .collect();
    results
        .into_iter()
        .find(|r| r.is_err())
        .unwrap_or(Ok(Outcome::Pass))
}

pub fn emit(event: &Event) {
    let line = format!(
        "{EVENT_PREFIX}{}\n",
        serde_json::to_string(event).expect("events serialize")
    );
    let mut out = std::io::stdout().lock();
    // If the launcher is gone there is nobody to tell; the rank ends on its next check.
    let _ = out.write_all(line.as_bytes()).and_then(|_| out.flush());
}

pub fn run(opts: WorkerOptions) -> Result<Outcome> {
    let rank = opts.rank;
    let fail = |phase: &str, kind: ErrorKind, message: String| {
        emit(&Event::Failed {
            rank,
            phase: phase.into(),
            kind,
            message: message.clone(),
        });
        let what = format!("rank {rank}: {phase}: {message}");
        match kind {
            ErrorKind::Timeout | ErrorKind::Peer => Error::Timeout { what, hint: None },
            _ => Error::infra(what),
        }
    };
    let token = std::env::var(TOKEN_ENV)
        .map_err(|_| Error::usage(format!("the worker needs the run token in {TOKEN_ENV}")))?;
    let host = crate::host::hostname();
    let join_deadline = Instant::now() + opts.timeout;

    if !opts.rendezvous_only && !unsafe { cudarc::nccl::sys::is_culib_present() } {
        return Err(fail(
            "loading NCCL",
            ErrorKind::Nccl,
            "libnccl.so not loadable (the launcher sets LD_LIBRARY_PATH)".into(),
        ));
    }

    emit(&Event::Phase {
        rank,
        phase: "rendezvous".into(),
    });
    let group: Box<dyn Group> = if rank == 0 {
        let id = if opts.rendezvous_only {
            let mut id = [0u8; 128];
            getrandom::fill(&mut id).expect("the OS random source works");
            id
        } else {
            comm::get_unique_id()
                .map_err(|m| fail("creating the NCCL unique id", ErrorKind::Nccl, m))?
        };
        let bind = listen_addr(&opts.rendezvous)?;
        let server = Server::start(bind, opts.world_size, token, id).map_err(|e| {
            fail(
                "rendezvous",
                ErrorKind::Peer,
                format!("cannot listen on {bind}: {e}"),
            )
        })?;
        emit(&Event::Listening {
            port: server.local_addr().port(),
        });
        if let Some(tx) = &opts.listening {
            let _ = tx.send(server.local_addr().port());
        }
        server
            .wait_joined(join_deadline)
            .map_err(|e| rdzv_fail(&fail, "rendezvous", e))?;
        Box::new(server)
    } else {
        let client = Client::connect(
            &opts.rendezvous,
            rank,
            opts.world_size,
            &token,
            &host,
            join_deadline,
        )
        .map_err(|e| rdzv_fail(&fail, "rendezvous", e))?;
        Box::new(client)
    };

    if opts.rendezvous_only {
        let deadline = Instant::now() + opts.timeout;
        group
            .barrier(1, deadline)
            .map_err(|e| rdzv_fail(&fail, "barrier", e))?;
        if !opts.hold.is_zero() {
            emit(&Event::Phase {
                rank,
                phase: "holding".into(),
            });
            let until = Instant::now() + opts.hold;
            while Instant::now() < until {
                if let Some(why) = group.failure() {
                    return Err(fail("holding", ErrorKind::Peer, why));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            group
                .barrier(2, Instant::now() + opts.timeout)
                .map_err(|e| rdzv_fail(&fail, "barrier", e))?;
        }
        let me = RankReport {
            rank,
            host,
            pid: std::process::id(),
            gpu: None,
            cuda_driver: None,
            nccl_version: None,
            nccl_library: None,
            log: None,
            stack: None,
        };
        finish(group.as_ref(), me, &opts, &fail)?;
        return Ok(Outcome::Pass);
    }

    let inventory = gpu::detect_gpus()
        .inspect_err(|_| group.abort(&format!("rank {rank} has no usable GPU")))?;
    let gpu_info = inventory.gpus.get(opts.local_gpu as usize).cloned();
    let gpu = Gpu::open(opts.local_gpu).map_err(|m| {
        let e = fail("opening the GPU", ErrorKind::Cuda, m);
        group.abort(&e.to_string());
        e
    })?;
    let peer_failed = || group.failure();
    emit(&Event::Phase {
        rank,
        phase: "communicator init".into(),
    });
    let mut comm = Comm::init(
        group.unique_id(),
        rank,
        opts.world_size,
        Instant::now() + opts.timeout,
        &peer_failed,
    )
    .map_err(|e| {
        let kind = match e {
            comm::CommError::Nccl(_) => ErrorKind::Nccl,
            comm::CommError::Timeout(_) => ErrorKind::Timeout,
            comm::CommError::Peer(_) => ErrorKind::Peer,
        };
        let err = fail("communicator init", kind, e.to_string());
        group.abort(&err.to_string());
        err
    })?;

    let plan = plan(&opts.sweep, opts.timeout)?;
    let mut observer = Reporter {
        group: group.as_ref(),
        rank,
        nranks: opts.world_size,
        seq: 0,
        timeout: opts.timeout,
    };
    let mut harness = Harness {
        rank,
        nranks: opts.world_size,
        gpu: &gpu,
        comm: &mut comm,
        peer_failed: &peer_failed,
        step_timeout: opts.timeout,
    };
    if let Err(e) = harness.run(&plan, &mut observer) {
        let err = fail(&e.phase, e.kind, e.message);
        group.abort(&err.to_string());
        return Err(err);
    }
    emit(&Event::Phase {
        rank,
        phase: "finishing".into(),
    });
    let _ = gpu.synchronize();
    let nccl_version = comm::version().map(library::format_version);
    let stack = crate::probe::loaded::collect(
        nccl_version.clone(),
        Some(inventory.cuda_driver.clone()),
        crate::probe::gpu::kernel_driver_version(&crate::probe::HostPaths::default()),
    );
    let me = RankReport {
        rank,
        host,
        pid: std::process::id(),
        gpu: gpu_info,
        cuda_driver: Some(inventory.cuda_driver),
        nccl_version,
        nccl_library: library::loaded_library_path().map(|p| p.display().to_string()),
        log: None,
        stack: Some(stack),
    };
    finish(group.as_ref(), me, &opts, &fail)?;
    let _ = comm.close(Instant::now() + Duration::from_secs(30));
    Ok(Outcome::Pass)
}

/// Sends this rank's report (and, from other hosts, its NCCL log) to rank 0, which writes the
/// logs it lacks into its output folder and announces `Done`.
fn finish(
    group: &dyn Group,
    me: RankReport,
    opts: &WorkerOptions,
    fail: &dyn Fn(&str, ErrorKind, String) -> Error,
) -> Result<()> {
    let log_text = (opts.rank != 0 && opts.share_log).then(own_log).flatten();
    let data = serde_json::json!({ "report": me, "log": log_text });
    let deadline = Instant::now() + opts.timeout;
    let gathered = group
        .gather(u64::MAX, data, deadline)
        .map_err(|e| rdzv_fail(fail, "collecting reports", e))?;
    if let Some(all) = gathered {
        let mut reports = vec![];
        for v in all {
            let Ok(mut r) = serde_json::from_value::<RankReport>(v["report"].clone()) else {
                continue;
            };
            let rel = format!("logs/rank-{}.log", r.rank);
            let path = opts.out.join(&rel);
            if let Some(text) = v["log"].as_str()
                && !path.exists()
            {
                let _ = std::fs::write(&path, text);
            }
            if path.exists() {
                r.log = Some(rel);
            }
            reports.push(r);
        }
        emit(&Event::Done { ranks: reports });
    }
    group.close();
    Ok(())
}

/// This rank's NCCL log (NCCL_DEBUG_FILE, set by the launcher), capped: head and tail.
fn own_log() -> Option<String> {
    let path = std::env::var("NCCL_DEBUG_FILE")
        .ok()
        .filter(|p| !p.contains('%'))?;
    let bytes = std::fs::read(path).ok()?;
    let text = if bytes.len() <= LOG_SHARE_LIMIT {
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        let half = LOG_SHARE_LIMIT / 2;
        format!(
            "{}\n[netcheck: {} bytes of this log left out]\n{}",
            String::from_utf8_lossy(&bytes[..half]),
            bytes.len() - 2 * half,
            String::from_utf8_lossy(&bytes[bytes.len() - half..])
        )
    };
    Some(text)
}

fn rdzv_fail(fail: &dyn Fn(&str, ErrorKind, String) -> Error, phase: &str, e: RdzvError) -> Error {
    let kind = match e {
        RdzvError::Timeout { .. } => ErrorKind::Timeout,
        RdzvError::Failed(_) => ErrorKind::Peer,
    };
    fail(phase, kind, e.to_string())
}

/// Rank 0 listens on every interface at the port of `HOST:PORT` (port 0: any free port).
fn listen_addr(rendezvous: &str) -> Result<SocketAddr> {
    let port = rendezvous
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .ok_or_else(|| Error::usage(format!("--rendezvous `{rendezvous}` is not HOST:PORT")))?;
    Ok(SocketAddr::from(([0, 0, 0, 0], port)))
}

/// The harness plan from the sweep settings.
pub fn plan(sweep: &Sweep, step_timeout: Duration) -> Result<SweepPlan> {
    let ops = sweep
        .ops
        .iter()
        .map(|o| {
            collective::by_name(o).ok_or_else(|| Error::usage(format!("unknown collective `{o}`")))
        })
        .collect::<Result<Vec<_>>>()?;
    let dtypes = sweep
        .dtypes
        .iter()
        .map(|d| DType::parse(d).ok_or_else(|| Error::usage(format!("unknown data type `{d}`"))))
        .collect::<Result<Vec<_>>>()?;
    Ok(SweepPlan {
        ops,
        dtypes,
        sizes: sizes(sweep.min_bytes.0, sweep.max_bytes.0, sweep.step_factor),
        iters: sweep.iters,
        warmup: sweep.warmup,
        out_of_place: sweep.out_of_place,
        in_place: sweep.in_place,
        check: sweep.check,
        step_timeout,
    })
}

/// Sends each finished point to rank 0; rank 0 folds them into rows for the launcher.
struct Reporter<'a> {
    group: &'a dyn Group,
    rank: u32,
    nranks: u32,
    seq: u64,
    timeout: Duration,
}

impl Observer for Reporter<'_> {
    fn phase(&mut self, phase: &str) {
        emit(&Event::Phase {
            rank: self.rank,
            phase: phase.to_string(),
        });
    }

    fn point(&mut self, point: RankPoint) -> std::result::Result<(), String> {
        if let Some(points) = self.gather(&point)? {
            emit(&Event::Row {
                row: combine(&points, self.nranks),
            });
        }
        Ok(())
    }

    fn verified(&mut self, check: PointCheck) -> std::result::Result<(), String> {
        if let Some(checks) = self.gather(&check)? {
            emit(&Event::Verified {
                check: combine_checks(&checks),
            });
        }
        Ok(())
    }
}

impl Reporter<'_> {
    /// Sends this rank's part to rank 0; rank 0 gets every rank's, in rank order.
    fn gather<T: Serialize + serde::de::DeserializeOwned>(
        &mut self,
        mine: &T,
    ) -> std::result::Result<Option<Vec<T>>, String> {
        self.seq += 1;
        let data = serde_json::to_value(mine).expect("results serialize");
        let gathered = self
            .group
            .gather(self.seq, data, Instant::now() + self.timeout)
            .map_err(|e| e.to_string())?;
        gathered
            .map(|all| {
                all.into_iter()
                    .map(serde_json::from_value)
                    .collect::<std::result::Result<Vec<T>, _>>()
                    .map_err(|e| format!("a rank sent a malformed result: {e}"))
            })
            .transpose()
    }
}
