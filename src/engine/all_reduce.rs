//! All-reduce (sum): every rank contributes and receives `count` elements.

use cudarc::nccl::sys;

use super::collective::{Collective, Counts, Nccl, pattern_sum};

pub struct AllReduce;

impl Collective for AllReduce {
    fn name(&self) -> &'static str {
        "all_reduce"
    }

    fn counts(&self, bytes: u64, elt: u64, _nranks: u32) -> Option<Counts> {
        let count = bytes / elt;
        (count > 0).then(|| Counts {
            count,
            send: count,
            recv: count,
            bytes: count * elt,
        })
    }

    fn in_place_offsets(&self, _rank: u32, _c: &Counts) -> (u64, u64) {
        (0, 0)
    }

    fn expected(&self, _rank: u32, nranks: u32, _c: &Counts, k: u64, signed: bool) -> i64 {
        pattern_sum(nranks, k, signed)
    }

    fn nccl(&self) -> Nccl {
        Nccl::Sum(sys::ncclAllReduce)
    }
}
