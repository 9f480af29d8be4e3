//! The positions the dense scan stops at — each `\n`, each `NC` (where `NCCL` may start; the
//! framer checks the `CL`) and each ESC (ANSI colours) — found 64 bytes at a time as a bit
//! mask, so a line of NCCL output costs a few vector compares and about two stops instead of
//! a library call per byte class. Looking for `NC` alone halves the compares for `NCCL`, and
//! `NC` hardly occurs in log text except there.
//!
//! x86_64 uses AVX2 where the CPU has it (checked at run time) and SSE2 (part of every x86_64
//! CPU) otherwise; other targets compare eight bytes at a time in a `u64`. All give the same
//! masks (tested below).

/// Iterates over the positions of `\n`, ESC and the start of `NC` in `chunk`, in order.
pub struct Positions<'a> {
    chunk: &'a [u8],
    /// Start of the current 64-byte block.
    base: usize,
    /// Positions not yet returned in the current block, one bit per byte.
    mask: u64,
}

impl<'a> Positions<'a> {
    /// Positions at or after `from`.
    pub fn new(chunk: &'a [u8], from: usize) -> Self {
        let base = from - from % 64;
        let mask = block_mask(chunk, base) & (u64::MAX << (from % 64));
        Positions { chunk, base, mask }
    }
}

impl Iterator for Positions<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            if self.base + 64 >= self.chunk.len() {
                return None;
            }
            self.base += 64;
            self.mask = block_mask(self.chunk, self.base);
        }
        let at = self.base + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(at)
    }
}

/// Bytes a block's mask looks at: 64, and 1 more for an `NC` that starts at its end.
const SPAN: usize = 64 + 1;

/// The mask of the block at `base`; bytes past the end of `chunk` never match.
#[inline]
fn block_mask(chunk: &[u8], base: usize) -> u64 {
    match chunk.get(base..base + SPAN) {
        Some(block) => mask(block.try_into().expect("SPAN bytes")),
        None => {
            let mut block = [0u8; SPAN];
            let rest = chunk.get(base..).unwrap_or_default();
            block[..rest.len()].copy_from_slice(rest);
            mask(&block)
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn mask(block: &[u8; SPAN]) -> u64 {
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above; the answer is cached).
        unsafe { mask_avx2(block) }
    } else {
        // SAFETY: SSE2 is part of the x86_64 baseline, so the target feature is always present.
        unsafe { mask_sse2(block) }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn mask_avx2(block: &[u8; SPAN]) -> u64 {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };
    let splat = |byte: u8| _mm256_set1_epi8(byte as i8);
    let (newline, esc, n, c) = (splat(b'\n'), splat(0x1b), splat(b'N'), splat(b'C'));
    let mut mask = 0u64;
    for i in 0..2 {
        // SAFETY: 32 bytes at 32 * i + k, k <= 1, end at most at 65 = SPAN: inside the block.
        let load = |k: usize| unsafe {
            _mm256_loadu_si256(block.as_ptr().add(32 * i + k).cast::<__m256i>())
        };
        let bytes = load(0);
        let nc = _mm256_and_si256(_mm256_cmpeq_epi8(bytes, n), _mm256_cmpeq_epi8(load(1), c));
        let hits = _mm256_or_si256(
            _mm256_or_si256(
                _mm256_cmpeq_epi8(bytes, newline),
                _mm256_cmpeq_epi8(bytes, esc),
            ),
            nc,
        );
        mask |= u64::from(_mm256_movemask_epi8(hits) as u32) << (32 * i);
    }
    mask
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn mask(block: &[u8; SPAN]) -> u64 {
    mask_words(block)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn mask_sse2(block: &[u8; SPAN]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let splat = |byte: u8| _mm_set1_epi8(byte as i8);
    let (newline, esc, n, c) = (splat(b'\n'), splat(0x1b), splat(b'N'), splat(b'C'));
    let mut mask = 0u64;
    for i in 0..4 {
        // SAFETY: 16 bytes at 16 * i + k, k <= 1, end at most at 65 = SPAN: inside the block.
        let load =
            |k: usize| unsafe { _mm_loadu_si128(block.as_ptr().add(16 * i + k).cast::<__m128i>()) };
        let bytes = load(0);
        let nc = _mm_and_si128(_mm_cmpeq_epi8(bytes, n), _mm_cmpeq_epi8(load(1), c));
        let hits = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(bytes, newline), _mm_cmpeq_epi8(bytes, esc)),
            nc,
        );
        mask |= u64::from(_mm_movemask_epi8(hits) as u16) << (16 * i);
    }
    mask
}

/// Eight bytes at a time in a `u64` (any target).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn mask_words(block: &[u8; SPAN]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const ONES: u64 = 0x0101_0101_0101_0101;
    // High bit of each byte of `word` that equals `byte`, without carries between bytes.
    let equal = |word: u64, byte: u8| {
        let x = word ^ (ONES * u64::from(byte));
        !(((x & LOW7) + LOW7) | x | LOW7)
    };
    let word = |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes"));
    let mut mask = 0u64;
    for i in 0..8 {
        let bytes = word(8 * i);
        let nc = equal(bytes, b'N') & equal(word(8 * i + 1), b'C');
        let high = equal(bytes, b'\n') | equal(bytes, 0x1b) | nc;
        // Gather the eight high bits into one byte, lowest address first.
        let bits = ((high >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56;
        mask |= bits << (8 * i);
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(chunk: &[u8]) -> impl Iterator<Item = usize> + '_ {
        (0..chunk.len())
            .filter(|&i| matches!(chunk[i], b'\n' | 0x1b) || chunk[i..].starts_with(b"NC"))
    }

    #[test]
    fn finds_every_position_from_any_start() {
        let mut chunk: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        chunk.extend_from_slice(b"h:1:1 [0] NCCL INFO x\n\x1b[0mNCNCCLNCC\nNCCL");
        for from in [
            0,
            1,
            63,
            64,
            65,
            500,
            1000,
            1030,
            chunk.len() - 1,
            chunk.len(),
        ] {
            assert_eq!(
                Positions::new(&chunk, from).collect::<Vec<_>>(),
                stops(&chunk).filter(|&i| i >= from).collect::<Vec<_>>(),
                "from {from}"
            );
        }
        assert_eq!(Positions::new(b"", 0).count(), 0);
        // `NC` across a block boundary, and cut by the end of the chunk.
        for at in 60..66 {
            let mut chunk = vec![b'x'; 70];
            chunk[at..at + 4].copy_from_slice(b"NCCL");
            assert_eq!(Positions::new(&chunk, 0).collect::<Vec<_>>(), [at]);
            assert_eq!(Positions::new(&chunk[..at + 1], 0).count(), 0);
        }
    }

    #[test]
    fn word_masks_match_vector_masks() {
        let tokens: [&[u8]; 10] = [
            b"NCCL", b"NCC", b"CCL", b"N", b"C", b"L", b"\n", b"\x1b", b"x", b"\xce",
        ];
        let mut block = [0u8; SPAN];
        let mut x = 1u64;
        for _ in 0..20_000 {
            let mut filled = 0;
            while filled < SPAN {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let token = tokens[(x >> 59) as usize % tokens.len()];
                let n = token.len().min(SPAN - filled);
                block[filled..filled + n].copy_from_slice(&token[..n]);
                filled += n;
            }
            let want = stops(&block)
                .filter(|&i| i < 64)
                .fold(0u64, |m, i| m | 1 << i);
            assert_eq!(mask_words(&block), want);
            assert_eq!(mask(&block), want);
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SSE2 is part of the x86_64 baseline.
            assert_eq!(unsafe { mask_sse2(&block) }, want);
        }
    }
}
