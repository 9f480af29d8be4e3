//! All-gather: every rank contributes `count` elements; every rank receives all `count·n`.

use cudarc::nccl::sys;

use super::collective::{Collective, Counts, Nccl};
use super::dtype::pattern;

pub struct AllGather;

impl Collective for AllGather {
    fn name(&self) -> &'static str {
        "all_gather"
    }

    fn counts(&self, bytes: u64, elt: u64, nranks: u32) -> Option<Counts> {
        let count = bytes / elt / nranks as u64;
        (count > 0).then(|| Counts {
            count,
            send: count,
            recv: count * nranks as u64,
            bytes: count * nranks as u64 * elt,
        })
    }

    fn in_place_offsets(&self, rank: u32, c: &Counts) -> (u64, u64) {
        (rank as u64 * c.count, 0)
    }

    fn expected(&self, _rank: u32, _nranks: u32, c: &Counts, k: u64, signed: bool) -> i64 {
        pattern((k / c.count) as u32, k % c.count, signed)
    }

    fn nccl(&self) -> Nccl {
        Nccl::Plain(sys::ncclAllGather)
    }
}
