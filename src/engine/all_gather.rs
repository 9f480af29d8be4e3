//! All-gather: every rank contributes `count` elements; every rank receives all `count·n`.

use cudarc::driver::sys::{CUdeviceptr, CUstream};
use cudarc::nccl::sys::{self, ncclComm_t, ncclDataType_t, ncclResult_t};

use super::collective::{Collective, Counts};
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

    fn redop(&self) -> Option<&'static str> {
        None
    }

    fn expected(&self, _rank: u32, _nranks: u32, c: &Counts, k: u64, signed: bool) -> i64 {
        pattern((k / c.count) as u32, k % c.count, signed)
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
            sys::ncclAllGather(
                send as _,
                recv as _,
                c.count as usize,
                dtype,
                comm,
                stream as _,
            )
        }
    }
}
