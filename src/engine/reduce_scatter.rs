//! Reduce-scatter (sum): every rank contributes `count·n` elements; rank `r` receives the sum
//! of everyone's `r`-th block of `count`.

use cudarc::driver::sys::{CUdeviceptr, CUstream};
use cudarc::nccl::sys::{self, ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclResult_t};

use super::collective::{Collective, Counts, pattern_sum};

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

    unsafe fn launch(
        &self,
        send: CUdeviceptr,
        recv: CUdeviceptr,
        c: &Counts,
        dtype: ncclDataType_t,
        comm: ncclComm_t,
        stream: CUstream,
    ) -> ncclResult_t {
        unsafe {
            sys::ncclReduceScatter(
                send as _,
                recv as _,
                c.count as usize,
                dtype,
                ncclRedOp_t::ncclSum,
                comm,
                stream as _,
            )
        }
    }
}
