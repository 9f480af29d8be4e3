//! Reduce-scatter (sum): every rank contributes `count·n` elements; rank `r` receives the sum
//! of everyone's `r`-th block of `count`.

use cudarc::nccl::sys;

use super::collective::{Collective, Counts, Nccl, pattern_sum};

pub struct ReduceScatter;

impl Collective for ReduceScatter {
    fn name(&self) -> &'static str {
        "reduce_scatter"
    }

    fn counts(&self, bytes: u64, elt: u64, nranks: u32) -> Option<Counts> {
        let count = bytes / elt / nranks as u64;
        (count > 0).then(|| Counts {
            count,
            send: count * nranks as u64,
            recv: count,
            bytes: count * nranks as u64 * elt,
        })
    }

    fn in_place_offsets(&self, rank: u32, c: &Counts) -> (u64, u64) {
        (0, rank as u64 * c.count)
    }

    fn expected(&self, rank: u32, nranks: u32, c: &Counts, k: u64, signed: bool) -> i64 {
        pattern_sum(nranks, rank as u64 * c.count + k, signed)
    }

    fn nccl(&self) -> Nccl {
        Nccl::Sum(sys::ncclReduceScatter)
    }
}
