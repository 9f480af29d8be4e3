//! Verification speed: `cargo bench --bench check_speed [-- ELEMENTS]`.
//!
//! The verification pass compares every received element on the host. At 4 GiB that is 10⁹
//! elements per rank. This bench builds a correct 2-rank all_gather result in float32, as the
//! harness downloads it (default 2²⁷ elements = 512 MiB). It then counts wrong elements with
//! the serial compare and with the default split over cores, alternately, three times each, and
//! prints the median and the slowest of each. Results are recorded in docs/benchmarks.md.

use std::time::{Duration, Instant};

use netcheck::engine::dtype::{DType, pattern};

fn main() {
    let elements: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1 << 27);
    let dt = DType::F32;
    let per_rank = (elements / 2) as u64;
    let mut got = dt.encode_pattern(0, 0, per_rank as usize);
    got.extend(dt.encode_pattern(1, 0, per_rank as usize));
    let expected = |k: u64| pattern((k / per_rank) as u32, k % per_rank, true);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "check_speed: {} float32 elements ({} MiB), {cores} cores",
        2 * per_rank,
        got.len() >> 20
    );

    let mut serial = vec![];
    let mut split = vec![];
    for _ in 0..3 {
        serial.push(time(|| dt.count_wrong_on(1, &got, 2, &expected)));
        split.push(time(|| dt.count_wrong(&got, 2, expected)));
    }
    report("serial", &mut serial, got.len());
    report("split over cores", &mut split, got.len());
}

fn time(f: impl FnOnce() -> u64) -> Duration {
    let start = Instant::now();
    let wrong = f();
    let took = start.elapsed();
    assert_eq!(wrong, 0, "the bench's own data must check clean");
    took
}

fn report(what: &str, runs: &mut [Duration], bytes: usize) {
    runs.sort();
    let median = runs[runs.len() / 2];
    println!(
        "  {what:<17} median {:>7.1} ms ({:.2} GB/s), slowest {:>7.1} ms",
        median.as_secs_f64() * 1e3,
        bytes as f64 / median.as_secs_f64() / 1e9,
        runs[runs.len() - 1].as_secs_f64() * 1e3
    );
}
