//! The shared benchmark loop (nccl-tests' `common.cu` in one place), in two passes. The timing
//! pass, for every collective, data type, size and placement: fill, warm up, time the loop with
//! CUDA events. Then the verification pass over the same points: poison the receive side, fill,
//! run once and count wrong elements. Every wait polls NCCL's async error, the rendezvous and a
//! deadline, so a dead peer or a hang ends in a report instead of a stuck process.

use std::time::{Duration, Instant};

use super::collective::{Collective, Counts};
use super::comm::{Comm, CommError};
use super::cuda::{DeviceBuffer, Event, Gpu, pieces};
use super::dtype::{DType, PATTERN_PERIOD, POISON};
use super::stats::{PointCheck, RankPoint};

/// What to measure, resolved from the bench config.
pub struct SweepPlan {
    pub ops: Vec<&'static dyn Collective>,
    pub dtypes: Vec<DType>,
    /// Requested sizes in bytes (the gathered buffer), ascending.
    pub sizes: Vec<u64>,
    pub iters: u32,
    pub warmup: u32,
    pub out_of_place: bool,
    pub in_place: bool,
    pub check: bool,
    /// How long any one step (a warm-up, a timed loop, a check) may take.
    pub step_timeout: Duration,
}

/// Extra untimed iterations before the first point of each collective and type: without them
/// the first timed loop ran 1.6–2× its p50 on 2× H200 (16–21 µs against 10 µs at 1 KiB).
const FIRST_USE_WARMUP: u32 = 50;

/// Host memory a rank holds for its send pattern: one tile, uploaded as often as the send
/// buffer needs. Building the whole largest send instead (4 GiB per rank for a 4 GiB
/// reduce-scatter) took most of a run's time, peaked at 6.6 GiB per worker, and the timed loop
/// right after it ran 2–5 µs per collective over its p50 at 1 KiB on 2× H200
/// (docs/benchmarks.md, "Host memory").
const PATTERN_TILE_BYTES: usize = 32 << 20;

/// The verification pass downloads and compares the receive buffer in pieces of this size, so
/// a check holds 64 MiB of host memory instead of the whole buffer.
const CHECK_PIECE_BYTES: usize = 64 << 20;

/// Elements in the host pattern tile for sends of up to `max_send` elements of `size` bytes: a
/// whole number of pattern periods, no more than the largest send needs.
fn tile_elements(max_send: u64, size: usize) -> usize {
    let cap = (PATTERN_TILE_BYTES / size) as u64 / PATTERN_PERIOD * PATTERN_PERIOD;
    max_send
        .div_ceil(PATTERN_PERIOD)
        .saturating_mul(PATTERN_PERIOD)
        .min(cap) as usize
}

/// The sizes nccl-tests' `-b min -e max -f factor` visits.
pub fn sizes(min: u64, max: u64, factor: u64) -> Vec<u64> {
    let mut v = vec![];
    let mut s = min.max(1);
    while s <= max {
        v.push(s);
        match s.checked_mul(factor.max(2)) {
            Some(n) => s = n,
            None => break,
        }
    }
    v
}

#[derive(Debug)]
pub struct HarnessError {
    /// What the rank was doing, e.g. `all_gather 64M float in-place: timed loop`.
    pub phase: String,
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A deadline passed.
    Timeout,
    /// Another rank died, froze or aborted (seen through the rendezvous).
    Peer,
    Nccl,
    Cuda,
}

/// Receives progress and finished points (rank 0 gathers them; others send theirs).
pub trait Observer {
    fn phase(&mut self, phase: &str);
    fn point(&mut self, point: RankPoint) -> Result<(), String>;
    /// A point's verification finished (after every point was timed).
    fn verified(&mut self, check: PointCheck) -> Result<(), String>;
}

pub struct Harness<'a> {
    pub rank: u32,
    pub nranks: u32,
    pub gpu: &'a Gpu,
    pub comm: &'a mut Comm,
    pub peer_failed: &'a dyn Fn() -> Option<String>,
    /// How long one enqueue or wait may take.
    pub step_timeout: Duration,
}

impl Harness<'_> {
    pub fn run(
        &mut self,
        plan: &SweepPlan,
        observer: &mut dyn Observer,
    ) -> Result<(), HarnessError> {
        let max_bytes = plan.sizes.iter().copied().max().unwrap_or(0) as usize;
        let cuda = |phase: &str| {
            let phase = phase.to_string();
            move |message: String| HarnessError {
                phase,
                kind: ErrorKind::Cuda,
                message,
            }
        };
        // One input and one output region, sized for the largest point, reused throughout.
        let input = DeviceBuffer::alloc(max_bytes).map_err(cuda("allocating buffers"))?;
        let output = DeviceBuffer::alloc(max_bytes).map_err(cuda("allocating buffers"))?;
        let events: Vec<Event> = (0..=plan.iters.max(1))
            .map(|_| Event::new())
            .collect::<Result<_, _>>()
            .map_err(cuda("creating events"))?;
        let reporting = |point: &Point, message: String| HarnessError {
            phase: point.label("reporting"),
            kind: ErrorKind::Peer,
            message,
        };

        // Every point is timed before any is verified: a verification poisons the receive
        // buffer (cuMemsetD8), and on 2× H200 a timed loop that came after such a fill ran up
        // to 6% slower at 1–4 GiB, though the GPUs idling 4 s between points changed nothing
        // (docs/benchmarks.md, "Timing before verification").
        self.each_point(plan, &input, &output, &mut |h, point, first| {
            // NCCL finishes setting a collective up during its first calls; give the first
            // point of each sweep extra untimed iterations for that.
            let warmup = plan.warmup + if first { FIRST_USE_WARMUP } else { 0 };
            let measured = h.measure(point, plan, warmup, &events, observer)?;
            // Reporting goes through the rendezvous: it fails when a peer is gone.
            observer
                .point(measured)
                .map_err(|message| reporting(point, message))
        })?;
        if plan.check {
            self.each_point(plan, &input, &output, &mut |h, point, _| {
                let wrong = h.verify(point, plan, &events[0], observer)?;
                observer
                    .verified(PointCheck {
                        op: point.op.name().into(),
                        dtype: point.dtype.config_name().into(),
                        bytes: point.c.bytes,
                        in_place: point.in_place,
                        wrong,
                    })
                    .map_err(|message| reporting(point, message))
            })?;
        }
        Ok(())
    }

    /// Calls `f` for every point of the sweep, in the order rows are reported; `first` marks
    /// the first point of each collective and type.
    fn each_point(
        &mut self,
        plan: &SweepPlan,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
        f: &mut dyn FnMut(&mut Self, &Point, bool) -> Result<(), HarnessError>,
    ) -> Result<(), HarnessError> {
        for op in &plan.ops {
            for &dtype in &plan.dtypes {
                // The pattern is periodic, so one tile of it serves every size.
                let max_send = plan
                    .sizes
                    .iter()
                    .filter_map(|&s| op.counts(s, dtype.size() as u64, self.nranks))
                    .map(|c| c.send)
                    .max();
                let Some(max_send) = max_send else { continue };
                let pattern =
                    dtype.encode_pattern(self.rank, 0, tile_elements(max_send, dtype.size()));
                let mut first = true;
                for &size in &plan.sizes {
                    let Some(c) = op.counts(size, dtype.size() as u64, self.nranks) else {
                        continue;
                    };
                    for in_place in [false, true] {
                        if (in_place && !plan.in_place) || (!in_place && !plan.out_of_place) {
                            continue;
                        }
                        let point = Point {
                            op: *op,
                            dtype,
                            c,
                            in_place,
                            input,
                            output,
                            pattern: &pattern,
                        };
                        f(self, &point, first)?;
                        first = false;
                    }
                }
            }
        }
        Ok(())
    }

    fn measure(
        &mut self,
        p: &Point,
        plan: &SweepPlan,
        warmup: u32,
        events: &[Event],
        observer: &mut dyn Observer,
    ) -> Result<RankPoint, HarnessError> {
        let cuda = |phase: String| {
            move |message: String| HarnessError {
                phase,
                kind: ErrorKind::Cuda,
                message,
            }
        };

        let phase = p.label("warm-up");
        observer.phase(&phase);
        p.prepare_inputs(self.rank, false)
            .and_then(|_| self.gpu.settle())
            .map_err(cuda(phase.clone()))?;
        for _ in 0..warmup {
            self.launch(p, &phase)?;
        }
        events[0].record(self.gpu).map_err(cuda(phase.clone()))?;
        self.wait(&events[0], &phase, plan.step_timeout)?;

        // The timed loop, as nccl-tests times it: one event before and one after `iters`
        // back-to-back launches. Its mean is the reported time.
        let phase = p.label("timed loop");
        observer.phase(&phase);
        let (start, end) = (&events[0], &events[plan.iters as usize]);
        start.record(self.gpu).map_err(cuda(phase.clone()))?;
        for _ in 0..plan.iters {
            self.launch(p, &phase)?;
        }
        end.record(self.gpu).map_err(cuda(phase.clone()))?;
        self.wait(end, &phase, plan.step_timeout)?;
        let total_us = start.elapsed_ms(end).map_err(cuda(phase.clone()))? as f64 * 1000.0;

        // A second loop with an event between iterations gives the per-iteration samples
        // (p50/p99). Kept apart because each event record adds a few microseconds of GPU time
        // between kernels (measured 4–5 µs per iteration at 16–64 MiB on 2× H200).
        let phase = p.label("sampled loop");
        observer.phase(&phase);
        events[0].record(self.gpu).map_err(cuda(phase.clone()))?;
        for i in 0..plan.iters as usize {
            self.launch(p, &phase)?;
            events[i + 1]
                .record(self.gpu)
                .map_err(cuda(phase.clone()))?;
        }
        let last = &events[plan.iters as usize];
        self.wait(last, &phase, plan.step_timeout)?;
        let samples_us = (0..plan.iters as usize)
            .map(|i| {
                events[i]
                    .elapsed_ms(&events[i + 1])
                    .map(|ms| ms as f64 * 1000.0)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(cuda(phase.clone()))?;

        Ok(RankPoint {
            op: p.op.name().into(),
            dtype: p.dtype.config_name().into(),
            bytes: p.c.bytes,
            count: p.c.count,
            in_place: p.in_place,
            redop: p.op.redop().map(String::from),
            iters: plan.iters,
            total_us,
            samples_us,
            // Filled in by the verification pass, reported separately.
            wrong: None,
        })
    }

    /// Poisons the receive side, fills the send side, runs the collective once and counts the
    /// elements that differ from what every rank's pattern must produce.
    fn verify(
        &mut self,
        p: &Point,
        plan: &SweepPlan,
        done: &Event,
        observer: &mut dyn Observer,
    ) -> Result<u64, HarnessError> {
        let phase = p.label("check");
        observer.phase(&phase);
        let cuda = |message: String| HarnessError {
            phase: phase.clone(),
            kind: ErrorKind::Cuda,
            message,
        };
        p.prepare_inputs(self.rank, true)
            .and_then(|_| self.gpu.settle())
            .map_err(cuda)?;
        self.launch(p, &phase)?;
        done.record(self.gpu).map_err(cuda)?;
        self.wait(done, &phase, plan.step_timeout)?;
        p.count_wrong(self.rank, self.nranks).map_err(cuda)
    }

    fn launch(&mut self, p: &Point, phase: &str) -> Result<(), HarnessError> {
        let (send, recv) = p.pointers(self.rank);
        // SAFETY: `pointers` stays inside the regions, which hold `c.send` / `c.recv` elements.
        let rc = unsafe {
            p.op.launch(
                send,
                recv,
                &p.c,
                p.dtype.nccl(),
                self.comm.raw(),
                self.gpu.stream,
            )
        };
        self.comm
            .check_launch(p.op.name(), rc)
            .map_err(|e| comm_error(phase, e))?;
        // A non-blocking communicator may still be enqueuing (first use of a size, lazy
        // connection setup); NCCL refuses the next call until that finished.
        if rc == cudarc::nccl::sys::ncclResult_t::ncclInProgress {
            let deadline = Instant::now() + self.step_timeout;
            self.comm
                .wait_ready(phase, deadline, self.peer_failed)
                .map_err(|e| comm_error(phase, e))?;
        }
        Ok(())
    }

    /// Waits for `event`, polling NCCL's async error, the peers and the deadline.
    fn wait(&mut self, event: &Event, phase: &str, timeout: Duration) -> Result<(), HarnessError> {
        let deadline = Instant::now() + timeout;
        let mut spins = 0u64;
        loop {
            match event.done() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(message) => {
                    return Err(HarnessError {
                        phase: phase.into(),
                        kind: ErrorKind::Cuda,
                        message,
                    });
                }
            }
            spins += 1;
            if spins.is_multiple_of(64) {
                self.comm.poll().map_err(|e| comm_error(phase, e))?;
                self.comm
                    .check_watchdog(phase, deadline, self.peer_failed)
                    .map_err(|e| comm_error(phase, e))?;
            }
            if spins > 20_000 {
                std::thread::sleep(Duration::from_micros(50));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

fn comm_error(phase: &str, e: CommError) -> HarnessError {
    let kind = match e {
        CommError::Nccl(_) => ErrorKind::Nccl,
        CommError::Timeout(_) => ErrorKind::Timeout,
        CommError::Peer(_) => ErrorKind::Peer,
    };
    HarnessError {
        phase: phase.into(),
        kind,
        message: e.to_string(),
    }
}

/// One measurement point: a collective, a type, counts and placement over the two regions.
struct Point<'a> {
    op: &'static dyn Collective,
    dtype: DType,
    c: Counts,
    in_place: bool,
    input: &'a DeviceBuffer,
    output: &'a DeviceBuffer,
    /// One tile of this rank's send pattern (`tile_elements`).
    pattern: &'a [u8],
}

impl Point<'_> {
    fn label(&self, step: &str) -> String {
        let place = if self.in_place {
            "in-place"
        } else {
            "out-of-place"
        };
        format!(
            "{} {} {} {place}: {step}",
            self.op.name(),
            crate::config::format_bytes(self.c.bytes),
            self.dtype.config_name()
        )
    }

    fn elt(&self) -> u64 {
        self.dtype.size() as u64
    }

    /// Device addresses of the send and receive buffers.
    fn pointers(&self, rank: u32) -> (u64, u64) {
        if self.in_place {
            let (s, r) = self.op.in_place_offsets(rank, &self.c);
            (
                self.output.at((s * self.elt()) as usize),
                self.output.at((r * self.elt()) as usize),
            )
        } else {
            (self.input.ptr, self.output.ptr)
        }
    }

    /// Writes the pattern into the send buffer; with `poison`, first fills the receive side
    /// with bytes no correct result contains.
    fn prepare_inputs(&self, rank: u32, poison: bool) -> Result<(), String> {
        let send_bytes = (self.c.send * self.elt()) as usize;
        if self.in_place {
            let (s, r) = self.op.in_place_offsets(rank, &self.c);
            if poison {
                let extent = ((s + self.c.send).max(r + self.c.recv) * self.elt()) as usize;
                self.output.fill(0, extent, POISON)?;
            }
            self.output
                .upload_tiled((s * self.elt()) as usize, send_bytes, self.pattern)
        } else {
            if poison {
                self.output
                    .fill(0, (self.c.recv * self.elt()) as usize, POISON)?;
            }
            self.input.upload_tiled(0, send_bytes, self.pattern)
        }
    }

    fn count_wrong(&self, rank: u32, nranks: u32) -> Result<u64, String> {
        let offset = if self.in_place {
            self.op.in_place_offsets(rank, &self.c).1 * self.elt()
        } else {
            0
        } as usize;
        let elt = self.elt() as usize;
        let signed = self.dtype.signed();
        count_in_pieces(
            (self.c.recv * self.elt()) as usize,
            CHECK_PIECE_BYTES / elt * elt,
            |at, buf| self.output.download_into(offset + at, buf),
            |at, got| {
                let first = (at / elt) as u64;
                self.dtype.count_wrong(got, nranks, |k| {
                    self.op.expected(rank, nranks, &self.c, first + k, signed)
                })
            },
        )
    }
}

/// Fetches `len` bytes piece by piece (`fetch(offset, buffer)`) into one reused buffer and
/// adds up `count(offset, piece)`.
fn count_in_pieces(
    len: usize,
    piece: usize,
    mut fetch: impl FnMut(usize, &mut [u8]) -> Result<(), String>,
    count: impl Fn(usize, &[u8]) -> u64,
) -> Result<u64, String> {
    let mut buf = vec![0u8; piece.min(len)];
    let mut wrong = 0;
    for (at, n) in pieces(len, piece) {
        fetch(at, &mut buf[..n])?;
        wrong += count(at, &buf[..n]);
    }
    Ok(wrong)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_nccl_tests_b_e_f() {
        assert_eq!(sizes(1024, 8192, 2), vec![1024, 2048, 4096, 8192]);
        assert_eq!(sizes(1024, 1000, 2), Vec::<u64>::new());
        assert_eq!(sizes(8, 8, 2), vec![8]);
        assert_eq!(sizes(1, 100, 10), vec![1, 10, 100]);
        assert_eq!(sizes(1 << 62, u64::MAX, 4).len(), 1, "no overflow");
    }

    #[test]
    fn a_tiled_pattern_is_the_whole_pattern() {
        for name in [
            "float32", "bfloat16", "float16", "float64", "int8", "uint8", "int32", "uint32",
            "int64", "uint64",
        ] {
            let dtype = DType::parse(name).unwrap();
            let n = 1003; // a partial last tile
            let tile = dtype.encode_pattern(1, 0, tile_elements(17, dtype.size()));
            let mut tiled = vec![];
            for (_, len) in pieces(n * dtype.size(), tile.len()) {
                tiled.extend_from_slice(&tile[..len]);
            }
            assert_eq!(tiled, dtype.encode_pattern(1, 0, n), "{dtype:?}");
        }
    }

    #[test]
    fn the_tile_is_whole_periods_and_bounded() {
        assert_eq!(tile_elements(1, 4), 5);
        assert_eq!(tile_elements(10, 4), 10);
        let big = tile_elements(1 << 30, 4);
        assert_eq!(big as u64 % PATTERN_PERIOD, 0);
        assert!(big * 4 <= PATTERN_TILE_BYTES && big * 4 > PATTERN_TILE_BYTES - 20);
        assert_eq!(tile_elements(0, 8), 0);
    }

    #[test]
    fn a_check_in_pieces_counts_what_a_whole_check_counts() {
        let dtype = DType::F32;
        let n = 1000u64;
        let mut data = dtype.encode_pattern(0, 0, n as usize);
        for k in [0usize, 249, 250, 999] {
            data[k * 4 + 3] ^= 0x40; // wrong elements at the piece boundaries and both ends
        }
        let expected = |k: u64| crate::engine::dtype::pattern(0, k, true);
        let whole = dtype.count_wrong(&data, 2, expected);
        let mut fetched = 0;
        let pieced = count_in_pieces(
            data.len(),
            1000,
            |at, buf| {
                fetched += 1;
                buf.copy_from_slice(&data[at..at + buf.len()]);
                Ok(())
            },
            |at, got| dtype.count_wrong(got, 2, |k| expected(at as u64 / 4 + k)),
        )
        .unwrap();
        assert_eq!((whole, pieced, fetched), (4, 4, 4));
        let failing = count_in_pieces(8, 4, |_, _| Err("gone".into()), |_, _| 0);
        assert_eq!(failing, Err("gone".to_string()));
    }
}
