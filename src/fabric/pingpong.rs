//! The measurement: for each message size, a ping-pong (round-trip latency, p50/p99 through an
//! HDR histogram) and a windowed stream (bandwidth), between a driver and a responder.
//!
//! Both sides run the same plan in lockstep, so no message needs a header to say what it is:
//! - ping-pong: the driver sends, the responder echoes; `warmup` untimed rounds, `iters` timed
//!   rounds, then one round whose whole payload the responder copies back and the driver checks.
//!   Every round carries its round number in its first bytes, checked on return.
//! - stream: the driver sends `window` messages, the responder acknowledges the window with a
//!   small message; one untimed window, then `batches` timed windows. Bandwidth is bytes sent
//!   divided by the time from the first send to the last acknowledgement.

use std::time::Instant;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::transfer::{Buffer, Transfers};
use crate::error::{Error, Result};

/// What to measure. Sent by the driver to the responder, so both run the same plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    pub sizes: Vec<u64>,
    /// Timed ping-pong round trips per size.
    pub iters: u32,
    /// Untimed round trips before timing.
    pub warmup: u32,
    /// Messages in flight per stream window.
    pub window: u32,
    /// Timed stream windows per size.
    pub batches: u32,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            sizes: vec![8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20],
            iters: 1000,
            warmup: 100,
            window: 64,
            batches: 16,
        }
    }
}

/// Limits that keep a mistyped flag from running for hours or allocating gigabytes.
pub const MAX_SIZE: u64 = 64 << 20;
pub const MAX_ITERS: u32 = 1_000_000;
pub const MAX_WINDOW: u32 = 1024;
pub const MAX_BATCHES: u32 = 10_000;
const ACK_BYTES: usize = 8;

impl Plan {
    /// Checks the bounds; `max_msg_size` is the provider's limit.
    pub fn validate(&self, max_msg_size: u64) -> Result<()> {
        let bad = |m: String| Err(Error::usage(m));
        if self.sizes.is_empty() {
            return bad("--sizes needs at least one size".into());
        }
        let limit = MAX_SIZE.min(max_msg_size.max(1));
        if let Some(s) = self.sizes.iter().find(|&&s| s == 0 || s > limit) {
            return bad(format!(
                "message size {s} is outside 1..={limit} bytes (provider limit and netcheck's 64M cap)"
            ));
        }
        if self.iters == 0 || self.iters > MAX_ITERS {
            return bad(format!("--iters must be 1..={MAX_ITERS}"));
        }
        if self.warmup > MAX_ITERS {
            return bad(format!("--warmup must be at most {MAX_ITERS}"));
        }
        if self.window == 0 || self.window > MAX_WINDOW {
            return bad(format!("--window must be 1..={MAX_WINDOW}"));
        }
        if self.batches == 0 || self.batches > MAX_BATCHES {
            return bad(format!("--batches must be 1..={MAX_BATCHES}"));
        }
        Ok(())
    }

    /// Operations in flight at most on either side: a window whose completions are still
    /// being read, the next window, the acknowledgement, and slack.
    pub fn max_in_flight(&self) -> usize {
        2 * self.window as usize + 8
    }
}

/// One message size's numbers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SizeResult {
    pub bytes: u64,
    pub iters: u32,
    /// Round-trip times in microseconds.
    pub rtt_us: LatencyStats,
    /// Half the median round trip: the one-way latency fi_pingpong and osu_latency report.
    pub one_way_us: f64,
    pub stream: StreamResult,
    /// Round numbers came back in order and the checked round's payload was intact.
    pub payload_ok: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LatencyStats {
    pub min: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StreamResult {
    pub messages: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// 1e9 bytes per second, as everywhere in netcheck.
    pub gbs: Option<f64>,
}

/// The driver's side of one size: measures and checks.
pub fn drive_size(t: &mut Transfers, plan: &Plan, size: usize) -> Result<SizeResult> {
    let mut send = t.buffer(size)?;
    let recv = t.buffer(size)?;
    let ack = t.buffer(ACK_BYTES)?;
    fill_pattern(send.as_mut_slice(), size as u64);

    // 1 ns .. 1 h at 3 significant digits; anything slower is clamped, not dropped.
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
    let mut in_order = true;
    let rounds = plan.warmup as u64 + plan.iters as u64 + 1;
    let what = format!("ping-pong at {size} bytes");
    for round in 0..rounds {
        t.wait_sends(&what)?; // the send buffer is about to change
        write_round(send.as_mut_slice(), round);
        t.recv(&recv, size, &what)?;
        let start = Instant::now();
        t.send(&send, size, &what)?;
        t.wait_recvs(1, &what)?;
        let elapsed = start.elapsed();
        if round >= plan.warmup as u64 && round < rounds - 1 {
            hist.saturating_record(elapsed.as_nanos().max(1) as u64);
        }
        in_order &= read_round(recv.as_slice()) == round_bytes(round, size);
    }
    // The last round came back whole: compare everything after the round number.
    let payload_intact =
        recv.as_slice()[ROUND_BYTES.min(size)..] == send.as_slice()[ROUND_BYTES.min(size)..];

    let stream = drive_stream(t, plan, &send, size, &ack)?;
    t.wait_sends(&what)?;
    drop(recv);
    Ok(SizeResult {
        bytes: size as u64,
        iters: plan.iters,
        rtt_us: stats(&hist),
        one_way_us: hist.value_at_quantile(0.5) as f64 / 2e3,
        stream,
        payload_ok: in_order && payload_intact,
    })
}

fn drive_stream(
    t: &mut Transfers,
    plan: &Plan,
    send: &Buffer,
    size: usize,
    ack: &Buffer,
) -> Result<StreamResult> {
    let what = format!("streaming {size}-byte messages");
    let mut start = Instant::now();
    for batch in 0..=plan.batches {
        if batch == 1 {
            start = Instant::now(); // batch 0 is the warm-up window
        }
        t.recv(ack, ACK_BYTES, &what)?;
        for _ in 0..plan.window {
            t.send(send, size, &what)?;
        }
        t.wait_recvs(1, &what)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let messages = plan.window as u64 * plan.batches as u64;
    let bytes = messages * size as u64;
    let gbs = bytes as f64 / seconds / 1e9;
    Ok(StreamResult {
        messages,
        bytes,
        seconds,
        gbs: (seconds > 0.0 && gbs.is_finite()).then_some(gbs),
    })
}

/// The responder's side of one size: echoes, then absorbs the stream.
pub fn respond_size(t: &mut Transfers, plan: &Plan, size: usize) -> Result<()> {
    let recv = t.buffer(size)?;
    let mut reply = t.buffer(size)?;
    let ack = t.buffer(ACK_BYTES)?;
    let rounds = plan.warmup as u64 + plan.iters as u64 + 1;
    let what = format!("echoing {size}-byte messages");
    t.recv(&recv, size, &what)?;
    for round in 0..rounds {
        t.wait_recvs(1, &what)?;
        t.wait_sends(&what)?; // the reply buffer is about to change
        let n = if round == rounds - 1 {
            size
        } else {
            ROUND_BYTES.min(size)
        };
        reply.as_mut_slice()[..n].copy_from_slice(&recv.as_slice()[..n]);
        if round + 1 < rounds {
            t.recv(&recv, size, &what)?;
        }
        t.send(&reply, size, &what)?;
    }

    let what = format!("receiving {size}-byte messages");
    // All stream messages land in one buffer: only their arrival is measured.
    let post_window = |t: &mut Transfers| -> Result<()> {
        for _ in 0..plan.window {
            t.recv(&recv, size, &what)?;
        }
        Ok(())
    };
    post_window(t)?;
    for batch in 0..=plan.batches {
        t.wait_recvs(plan.window as usize, &what)?;
        if batch < plan.batches {
            post_window(t)?;
        }
        t.wait_sends(&what)?;
        t.send(&ack, ACK_BYTES, &what)?;
    }
    t.wait_sends(&what)?;
    Ok(())
}

const ROUND_BYTES: usize = 8;

/// The round number as it travels: its first `min(8, size)` little-endian bytes.
fn round_bytes(round: u64, size: usize) -> Vec<u8> {
    round.to_le_bytes()[..ROUND_BYTES.min(size)].to_vec()
}

fn write_round(buf: &mut [u8], round: u64) {
    let n = ROUND_BYTES.min(buf.len());
    buf[..n].copy_from_slice(&round.to_le_bytes()[..n]);
}

fn read_round(buf: &[u8]) -> Vec<u8> {
    buf[..ROUND_BYTES.min(buf.len())].to_vec()
}

/// A size-dependent byte pattern, so a payload from another size or a zeroed buffer differs.
pub fn fill_pattern(buf: &mut [u8], seed: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i as u64)
            .wrapping_mul(31)
            .wrapping_add(seed)
            .wrapping_add(7) as u8;
    }
}

fn stats(hist: &Histogram<u64>) -> LatencyStats {
    let us = |ns: u64| ns as f64 / 1e3;
    LatencyStats {
        min: us(hist.min()),
        p50: us(hist.value_at_quantile(0.5)),
        p99: us(hist.value_at_quantile(0.99)),
        max: us(hist.max()),
        mean: hist.mean() / 1e3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_is_valid_and_bounds_are_enforced() {
        let plan = Plan::default();
        plan.validate(u64::MAX).unwrap();
        assert!(
            Plan {
                sizes: vec![],
                ..plan.clone()
            }
            .validate(u64::MAX)
            .is_err()
        );
        assert!(
            Plan {
                sizes: vec![0],
                ..plan.clone()
            }
            .validate(u64::MAX)
            .is_err()
        );
        assert!(
            Plan {
                sizes: vec![MAX_SIZE + 1],
                ..plan.clone()
            }
            .validate(u64::MAX)
            .is_err()
        );
        // The provider's own limit applies too.
        let err = Plan {
            sizes: vec![4096],
            ..plan.clone()
        }
        .validate(1024)
        .unwrap_err();
        assert!(err.to_string().contains("1..=1024"), "{err}");
        assert!(
            Plan {
                iters: 0,
                ..plan.clone()
            }
            .validate(u64::MAX)
            .is_err()
        );
        assert!(
            Plan {
                window: MAX_WINDOW + 1,
                ..plan.clone()
            }
            .validate(u64::MAX)
            .is_err()
        );
        assert!(Plan { batches: 0, ..plan }.validate(u64::MAX).is_err());
    }

    #[test]
    fn round_numbers_fit_small_messages() {
        let mut buf = [0u8; 3];
        write_round(&mut buf, 0x0102_0304);
        assert_eq!(read_round(&buf), round_bytes(0x0102_0304, 3));
        assert_eq!(buf, [4, 3, 2]);
        let mut one = [0u8; 1];
        write_round(&mut one, 257);
        assert_eq!(read_round(&one), vec![1]);
    }

    #[test]
    fn patterns_differ_by_size() {
        let mut a = vec![0u8; 64];
        let mut b = vec![0u8; 64];
        fill_pattern(&mut a, 64);
        fill_pattern(&mut b, 65);
        assert_ne!(a, b);
        assert!(a.iter().any(|&x| x != 0));
    }

    #[test]
    fn latency_stats_come_from_the_histogram_in_microseconds() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for ns in [10_000u64, 20_000, 30_000, 40_000, 1_000_000] {
            h.record(ns).unwrap();
        }
        let s = stats(&h);
        assert!((s.min - 10.0).abs() < 0.1, "{s:?}");
        assert!((s.p50 - 30.0).abs() < 0.1, "{s:?}");
        assert!((s.max - 1000.0).abs() < 1.0, "{s:?}");
    }
}
