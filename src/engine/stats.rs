//! Per-rank measurements of one point, and how rank 0 folds them into one result row the way
//! nccl-tests does: the time is the mean over ranks of each rank's mean over the timed loop;
//! percentiles come from every rank's per-iteration samples.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::results::{ResultRow, TimeStats, bus_factor, gbs};

/// What one rank measured at one point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankPoint {
    pub op: String,
    pub dtype: String,
    pub bytes: u64,
    pub count: u64,
    pub in_place: bool,
    pub redop: Option<String>,
    pub iters: u32,
    /// The whole timed loop, first event to last.
    pub total_us: f64,
    /// Per-iteration times (between consecutive events).
    pub samples_us: Vec<f64>,
    pub wrong: Option<u64>,
}

/// One point's verification on one rank (after the timed sweep), or folded over all ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PointCheck {
    pub op: String,
    pub dtype: String,
    pub bytes: u64,
    pub in_place: bool,
    pub wrong: u64,
}

impl PointCheck {
    /// Whether this check belongs to `row` (same collective, type, size and placement).
    pub fn is_for(&self, row: &ResultRow) -> bool {
        self.op == row.op
            && self.dtype == row.dtype
            && self.bytes == row.bytes
            && self.in_place == row.in_place
    }
}

/// Folds every rank's check of one point: the wrong elements of all ranks together.
pub fn combine_checks(checks: &[PointCheck]) -> PointCheck {
    PointCheck {
        wrong: checks.iter().map(|c| c.wrong).sum(),
        ..checks[0].clone()
    }
}

/// Folds every rank's point into the row rank 0 reports.
pub fn combine(points: &[RankPoint], nranks: u32) -> ResultRow {
    let first = &points[0];
    let mean = points
        .iter()
        .map(|p| p.total_us / p.iters.max(1) as f64)
        .sum::<f64>()
        / points.len() as f64;
    // 1 ns to 1 hour at 3 significant figures; `saturating_record` clamps instead of failing.
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
    for s in points.iter().flat_map(|p| &p.samples_us) {
        hist.saturating_record((s * 1000.0).round().max(1.0) as u64);
    }
    let ns = |q: f64| (!hist.is_empty()).then(|| hist.value_at_quantile(q) as f64 / 1000.0);
    let algbw = gbs(first.bytes, mean);
    let wrong = points.iter().map(|p| p.wrong).sum::<Option<u64>>();
    ResultRow {
        op: first.op.clone(),
        dtype: first.dtype.clone(),
        bytes: first.bytes,
        count: first.count,
        in_place: first.in_place,
        redop: first.redop.clone(),
        iters: Some(first.iters),
        time_us: TimeStats {
            mean,
            min: (!hist.is_empty()).then(|| hist.min() as f64 / 1000.0),
            p50: ns(0.5),
            p99: ns(0.99),
            max: (!hist.is_empty()).then(|| hist.max() as f64 / 1000.0),
        },
        algbw_gbs: algbw,
        busbw_gbs: algbw.map(|a| a * bus_factor(&first.op, nranks)),
        wrong,
        group: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(total_us: f64, samples: &[f64], wrong: Option<u64>) -> RankPoint {
        RankPoint {
            op: "all_gather".into(),
            dtype: "float32".into(),
            bytes: 1 << 20,
            count: 131072,
            in_place: false,
            redop: None,
            iters: samples.len() as u32,
            total_us,
            samples_us: samples.to_vec(),
            wrong,
        }
    }

    #[test]
    fn time_is_the_mean_over_ranks_and_busbw_uses_nccl_tests_factor() {
        let a = point(100.0, &[9.0, 10.0, 11.0, 70.0], Some(0));
        let b = point(60.0, &[15.0, 15.0, 15.0, 15.0], Some(2));
        let row = combine(&[a, b], 2);
        assert!((row.time_us.mean - 20.0).abs() < 1e-9, "(25 + 15) / 2");
        let algbw = (1u64 << 20) as f64 / 20e-6 / 1e9;
        assert!((row.algbw_gbs.unwrap() - algbw).abs() < 1e-9);
        assert!((row.busbw_gbs.unwrap() - algbw * 0.5).abs() < 1e-9);
        assert_eq!(row.wrong, Some(2));
        assert!(
            (row.time_us.max.unwrap() - 70.0).abs() < 0.1,
            "{:?}",
            row.time_us
        );
        assert!((row.time_us.min.unwrap() - 9.0).abs() < 0.01);
        assert!((row.time_us.p50.unwrap() - 15.0).abs() < 0.02);
    }

    #[test]
    fn checks_add_up_over_ranks_and_match_their_row() {
        let check = |wrong| PointCheck {
            op: "all_gather".into(),
            dtype: "float32".into(),
            bytes: 1 << 20,
            in_place: false,
            wrong,
        };
        let all = combine_checks(&[check(0), check(3), check(4)]);
        assert_eq!(all.wrong, 7);
        let row = combine(&[point(20.0, &[1.0], None)], 2);
        assert!(all.is_for(&row));
        let mut twin = row.clone();
        twin.in_place = true;
        assert!(!all.is_for(&twin), "placement tells twins apart");
    }

    #[test]
    fn an_unchecked_rank_makes_wrong_unknown() {
        let row = combine(
            &[point(10.0, &[10.0], Some(0)), point(10.0, &[10.0], None)],
            2,
        );
        assert_eq!(row.wrong, None);
    }
}
