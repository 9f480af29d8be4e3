//! What differs between collectives, in nccl-tests' terms. The harness owns everything else.
//!
//! Buffers: the harness allocates `input` and `output` regions; out-of-place runs send from
//! `input` and receive into `output`; in-place runs use `output` alone, at the offsets below.

use std::ffi::c_void;

use cudarc::driver::sys::{CUdeviceptr, CUstream};
use cudarc::nccl::sys::{cudaStream_t, ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclResult_t};

use super::{all_gather::AllGather, all_reduce::AllReduce, reduce_scatter::ReduceScatter};

/// Element counts of one measurement point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// nccl-tests' `count` column.
    pub count: u64,
    pub send: u64,
    pub recv: u64,
    /// nccl-tests' `size` column: the larger buffer, in bytes.
    pub bytes: u64,
}

pub trait Collective: Sync {
    /// `all_gather`, `reduce_scatter`, `all_reduce`.
    fn name(&self) -> &'static str;

    /// Counts for a requested size of `bytes` (nccl-tests rounds down to whole elements per
    /// rank); `None` when not even one element per rank fits.
    fn counts(&self, bytes: u64, elt: u64, nranks: u32) -> Option<Counts>;

    /// Element offsets of (send, recv) inside the output region when run in place.
    fn in_place_offsets(&self, rank: u32, c: &Counts) -> (u64, u64);

    /// The NCCL function that runs it.
    fn nccl(&self) -> Nccl;

    /// nccl-tests' `redop` column: `sum` for the reductions, none for a plain call.
    fn redop(&self) -> Option<&'static str> {
        match self.nccl() {
            Nccl::Plain(_) => None,
            Nccl::Sum(_) => Some("sum"),
        }
    }

    /// The exact integer expected at receive element `k` on `rank`, for inputs filled with
    /// `dtype::pattern`.
    fn expected(&self, rank: u32, nranks: u32, c: &Counts, k: u64, signed: bool) -> i64;

    /// Enqueues one collective on `stream`.
    ///
    /// # Safety
    /// `send` and `recv` must point to device memory holding `c.send` / `c.recv` elements.
    unsafe fn launch(
        &self,
        send: CUdeviceptr,
        recv: CUdeviceptr,
        c: &Counts,
        dtype: ncclDataType_t,
        comm: ncclComm_t,
        stream: CUstream,
    ) -> ncclResult_t {
        let (send, recv, count) = (send as *const c_void, recv as *mut c_void, c.count as usize);
        let stream = stream as cudaStream_t;
        // SAFETY: the caller's contract, passed on unchanged.
        unsafe {
            match self.nccl() {
                Nccl::Plain(call) => call(send, recv, count, dtype, comm, stream),
                Nccl::Sum(call) => {
                    call(send, recv, count, dtype, ncclRedOp_t::ncclSum, comm, stream)
                }
            }
        }
    }
}

/// An NCCL collective call: `(send, recv, count, datatype, [op,] comm, stream)`.
#[derive(Clone, Copy)]
pub enum Nccl {
    /// Without a reduction: `ncclAllGather`.
    Plain(
        unsafe fn(
            *const c_void,
            *mut c_void,
            usize,
            ncclDataType_t,
            ncclComm_t,
            cudaStream_t,
        ) -> ncclResult_t,
    ),
    /// Summing: `ncclAllReduce`, `ncclReduceScatter`.
    Sum(
        unsafe fn(
            *const c_void,
            *mut c_void,
            usize,
            ncclDataType_t,
            ncclRedOp_t,
            ncclComm_t,
            cudaStream_t,
        ) -> ncclResult_t,
    ),
}

/// Looks a collective up by its config name.
pub fn by_name(name: &str) -> Option<&'static dyn Collective> {
    match name {
        "all_gather" => Some(&AllGather),
        "reduce_scatter" => Some(&ReduceScatter),
        "all_reduce" => Some(&AllReduce),
        _ => None,
    }
}

/// `sum over ranks q < nranks of pattern(q, i)`, exactly, in O(1): the pattern depends on the
/// rank only through `q % 5`, so count the ranks in each residue class.
pub fn pattern_sum(nranks: u32, i: u64, signed: bool) -> i64 {
    (0..5u32.min(nranks))
        .map(|j| {
            let ranks_with_residue = (nranks / 5 + u32::from(j < nranks % 5)) as i64;
            ranks_with_residue * super::dtype::pattern(j, i, signed)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_sum_matches_the_plain_sum() {
        for n in [1, 2, 3, 5, 7, 16, 64, 1000] {
            for i in 0..12 {
                let plain: i64 = (0..n)
                    .map(|q| super::super::dtype::pattern(q, i, true))
                    .sum();
                assert_eq!(pattern_sum(n, i, true), plain, "n={n} i={i}");
            }
        }
    }

    #[test]
    fn counts_follow_nccl_tests() {
        let ag = by_name("all_gather").unwrap();
        let c = ag.counts(1024, 4, 2).unwrap();
        assert_eq!((c.count, c.send, c.recv, c.bytes), (128, 128, 256, 1024));
        let rs = by_name("reduce_scatter").unwrap();
        let c = rs.counts(1000, 4, 3).unwrap();
        assert_eq!((c.count, c.send, c.recv, c.bytes), (83, 249, 83, 996));
        let ar = by_name("all_reduce").unwrap();
        let c = ar.counts(1024, 2, 8).unwrap();
        assert_eq!((c.count, c.send, c.recv, c.bytes), (512, 512, 512, 1024));
        assert!(
            ag.counts(4, 4, 2).is_none(),
            "less than one element per rank"
        );
        assert!(by_name("broadcast").is_none());
    }

    #[test]
    fn the_redop_column_is_sum_for_the_reductions_only() {
        for (name, redop) in [
            ("all_gather", None),
            ("all_reduce", Some("sum")),
            ("reduce_scatter", Some("sum")),
        ] {
            assert_eq!(by_name(name).unwrap().redop(), redop, "{name}");
        }
    }
}
