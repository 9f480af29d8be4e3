//! Data types NCCL reduces, with the test pattern written into send buffers and the check that
//! counts wrong elements afterwards.
//!
//! Element `i` of rank `r`'s send buffer holds a small integer `v(r, i)` in [-2, 2] (signed and
//! float types) or [0, 4] (unsigned), so every sum NCCL computes is exact in float types up to
//! dozens of ranks and wraps the same way as NCCL's integer arithmetic does. Receive buffers are
//! poisoned with 0x5A bytes first, which decode to values the pattern never produces, so an
//! element NCCL did not write counts as wrong.

use cudarc::nccl::sys::ncclDataType_t;
use half::{bf16, f16};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    BF16,
    F64,
    I8,
    U8,
    I32,
    U32,
    I64,
    U64,
}

pub const POISON: u8 = 0x5A;

/// Below this many elements per thread, splitting a compare costs more than it saves.
const MIN_ELEMENTS_PER_THREAD: usize = 1 << 20;
/// Every rank of a host checks at the same time, so one rank takes a share, not the machine.
const MAX_CHECK_THREADS: usize = 8;

/// The pattern repeats every this many elements, so any whole number of periods of it can be
/// tiled over a buffer of any length.
pub const PATTERN_PERIOD: u64 = 5;

/// The pattern value of element `i` of rank `rank`'s input; periodic in `i` with period 5.
pub fn pattern(rank: u32, i: u64, signed: bool) -> i64 {
    let v = ((rank as u64 % 5) * 31 + (i % PATTERN_PERIOD) * 7 + 3) % 5;
    v as i64 - if signed { 2 } else { 0 }
}

impl DType {
    pub fn parse(name: &str) -> Option<DType> {
        Some(match name {
            "float32" | "float" | "f32" => DType::F32,
            "float16" | "half" | "f16" => DType::F16,
            "bfloat16" | "bf16" => DType::BF16,
            "float64" | "double" | "f64" => DType::F64,
            "int8" | "i8" => DType::I8,
            "uint8" | "u8" => DType::U8,
            "int32" | "int" | "i32" => DType::I32,
            "uint32" | "u32" => DType::U32,
            "int64" | "i64" => DType::I64,
            "uint64" | "u64" => DType::U64,
            _ => return None,
        })
    }

    /// The name nccl-tests prints in its `type` column.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::F16 => "half",
            DType::BF16 => "bfloat16",
            DType::F64 => "double",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::I64 => "int64",
            DType::U64 => "uint64",
        }
    }

    /// The name used in configs and results (`float32`, `bfloat16`, ...).
    pub fn config_name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::F64 => "float64",
            other => other.name(),
        }
    }

    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    pub fn nccl(self) -> ncclDataType_t {
        match self {
            DType::F32 => ncclDataType_t::ncclFloat32,
            DType::F16 => ncclDataType_t::ncclFloat16,
            DType::BF16 => ncclDataType_t::ncclBfloat16,
            DType::F64 => ncclDataType_t::ncclFloat64,
            DType::I8 => ncclDataType_t::ncclInt8,
            DType::U8 => ncclDataType_t::ncclUint8,
            DType::I32 => ncclDataType_t::ncclInt32,
            DType::U32 => ncclDataType_t::ncclUint32,
            DType::I64 => ncclDataType_t::ncclInt64,
            DType::U64 => ncclDataType_t::ncclUint64,
        }
    }

    pub fn signed(self) -> bool {
        !matches!(self, DType::U8 | DType::U32 | DType::U64)
    }

    /// Host bytes of `pattern(rank, start + k)` for `k` in `0..n`.
    pub fn encode_pattern(self, rank: u32, start: u64, n: usize) -> Vec<u8> {
        let signed = self.signed();
        let mut out = Vec::with_capacity(n * self.size());
        // Encode one period and tile it.
        let period: Vec<Vec<u8>> = (0..PATTERN_PERIOD)
            .map(|k| self.encode(pattern(rank, start + k, signed)))
            .collect();
        for k in 0..n {
            out.extend_from_slice(&period[k % PATTERN_PERIOD as usize]);
        }
        out
    }

    fn encode(self, v: i64) -> Vec<u8> {
        match self {
            DType::F32 => (v as f32).to_le_bytes().to_vec(),
            DType::F16 => f16::from_f64(v as f64).to_le_bytes().to_vec(),
            DType::BF16 => bf16::from_f64(v as f64).to_le_bytes().to_vec(),
            DType::F64 => (v as f64).to_le_bytes().to_vec(),
            DType::I8 => (v as i8).to_le_bytes().to_vec(),
            DType::U8 => (v as u8).to_le_bytes().to_vec(),
            DType::I32 => (v as i32).to_le_bytes().to_vec(),
            DType::U32 => (v as u32).to_le_bytes().to_vec(),
            DType::I64 => v.to_le_bytes().to_vec(),
            DType::U64 => (v as u64).to_le_bytes().to_vec(),
        }
    }

    /// Counts elements of `got` (little-endian bytes) that differ from `expected(k)`, an exact
    /// integer result; integer types compare after wrapping it to the type's width, float types
    /// allow the rounding that long sums of many ranks can add (`nranks` bounds it). Large
    /// buffers are split over this host's cores: a 4 GiB point is 10⁹ elements per rank.
    pub fn count_wrong<F: Fn(u64) -> i64 + Sync>(
        self,
        got: &[u8],
        nranks: u32,
        expected: F,
    ) -> u64 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.count_wrong_on(cores.min(MAX_CHECK_THREADS), got, nranks, &expected)
    }

    /// `count_wrong` on at most `threads` threads (the benchmark compares 1 with the default).
    pub fn count_wrong_on<F: Fn(u64) -> i64 + Sync>(
        self,
        threads: usize,
        got: &[u8],
        nranks: u32,
        expected: &F,
    ) -> u64 {
        let elements = got.len() / self.size();
        let per_thread = elements
            .div_ceil(threads.max(1))
            .max(MIN_ELEMENTS_PER_THREAD);
        if per_thread >= elements {
            return self.count_wrong_from(0, got, nranks, expected);
        }
        std::thread::scope(|s| {
            let parts: Vec<_> = got
                .chunks(per_thread * self.size())
                .enumerate()
                .map(|(i, part)| {
                    let first = (i * per_thread) as u64;
                    s.spawn(move || self.count_wrong_from(first, part, nranks, expected))
                })
                .collect();
            parts
                .into_iter()
                .map(|t| t.join().expect("a check thread panicked"))
                .sum()
        })
    }

    /// The serial compare of `got`, whose first element is element `first` of the buffer.
    fn count_wrong_from<F: Fn(u64) -> i64>(
        self,
        first: u64,
        got: &[u8],
        nranks: u32,
        expected: &F,
    ) -> u64 {
        let tol = self.tolerance(nranks);
        let mut wrong = 0u64;
        macro_rules! ints {
            ($t:ty) => {{
                for (k, c) in got.chunks_exact(std::mem::size_of::<$t>()).enumerate() {
                    let g = <$t>::from_le_bytes(c.try_into().unwrap());
                    wrong += (g != expected(first + k as u64) as $t) as u64;
                }
            }};
        }
        macro_rules! floats {
            ($t:ty, $to:expr) => {{
                for (k, c) in got.chunks_exact(std::mem::size_of::<$t>()).enumerate() {
                    let g: f64 = $to(<$t>::from_le_bytes(c.try_into().unwrap()));
                    let e = expected(first + k as u64) as f64;
                    // NaN fails the comparison, so it counts as wrong.
                    wrong += u64::from(!matches!(
                        (g - e).abs().partial_cmp(&tol),
                        Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
                    ));
                }
            }};
        }
        match self {
            DType::F32 => floats!(f32, |x: f32| x as f64),
            DType::F16 => floats!(f16, |x: f16| x.to_f64()),
            DType::BF16 => floats!(bf16, |x: bf16| x.to_f64()),
            DType::F64 => floats!(f64, |x: f64| x),
            DType::I8 => ints!(i8),
            DType::U8 => ints!(u8),
            DType::I32 => ints!(i32),
            DType::U32 => ints!(u32),
            DType::I64 => ints!(i64),
            DType::U64 => ints!(u64),
        }
        wrong
    }

    /// Sums of up to `2·nranks` in magnitude are exact while they fit the mantissa; beyond
    /// that, allow a rounding error per addition.
    fn tolerance(self, nranks: u32) -> f64 {
        let bound = 4.0 * nranks as f64;
        let (exact_up_to, eps) = match self {
            DType::BF16 => (256.0, 2f64.powi(-7)),
            DType::F16 => (2048.0, 2f64.powi(-10)),
            DType::F32 => (16_777_216.0, 2f64.powi(-23)),
            _ => (f64::MAX, 0.0),
        };
        if bound <= exact_up_to {
            0.0
        } else {
            bound * bound * eps
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [DType; 10] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I8,
        DType::U8,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
    ];

    #[test]
    fn pattern_is_small_varied_and_not_all_zero() {
        let vals: Vec<i64> = (0..10).map(|i| pattern(1, i, true)).collect();
        assert!(vals.iter().all(|v| (-2..=2).contains(v)));
        assert!(vals.iter().any(|v| *v != 0));
        assert_ne!(pattern(0, 0, true), pattern(1, 0, true), "rank-dependent");
        assert!((0..10).all(|i| (0..=4).contains(&pattern(3, i, false))));
    }

    #[test]
    fn encoded_pattern_checks_clean_and_poison_counts_as_wrong() {
        for dt in ALL {
            let bytes = dt.encode_pattern(1, 7, 1000);
            assert_eq!(bytes.len(), 1000 * dt.size());
            let wrong = dt.count_wrong(&bytes, 2, |k| pattern(1, 7 + k, dt.signed()));
            assert_eq!(wrong, 0, "{dt:?}");
            let poison = vec![POISON; 1000 * dt.size()];
            let wrong = dt.count_wrong(&poison, 2, |k| pattern(1, 7 + k, dt.signed()));
            assert_eq!(wrong, 1000, "{dt:?}: poison must never look like data");
        }
    }

    #[test]
    fn one_flipped_element_is_counted() {
        let dt = DType::BF16;
        let mut bytes = dt.encode_pattern(0, 0, 64);
        bytes[10] ^= 0x40;
        assert_eq!(dt.count_wrong(&bytes, 2, |k| pattern(0, k, true)), 1);
    }

    #[test]
    fn a_split_compare_counts_the_same_wrong_elements_as_a_serial_one() {
        // 2.5 × the split threshold, so the last part is shorter; wrong elements near the
        // part boundaries and at both ends.
        let n = MIN_ELEMENTS_PER_THREAD * 5 / 2;
        for dt in [DType::F32, DType::I8, DType::BF16] {
            let mut bytes = dt.encode_pattern(1, 0, n);
            let size = dt.size();
            for k in [
                0,
                MIN_ELEMENTS_PER_THREAD - 1,
                MIN_ELEMENTS_PER_THREAD,
                2 * MIN_ELEMENTS_PER_THREAD + 3,
                n - 1,
            ] {
                bytes[k * size] ^= 0x40;
            }
            let expected = |k| pattern(1, k, dt.signed());
            assert_eq!(
                dt.count_wrong_on(1, &bytes, 2, &expected),
                5,
                "{dt:?} serial"
            );
            for threads in [2, 3, 8] {
                assert_eq!(
                    dt.count_wrong_on(threads, &bytes, 2, &expected),
                    5,
                    "{dt:?} on {threads}"
                );
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for dt in ALL {
            assert_eq!(DType::parse(dt.config_name()), Some(dt));
            assert_eq!(DType::parse(dt.name()), Some(dt));
        }
        assert_eq!(DType::parse("complex64"), None);
    }
}
