//! What every exporter draws from: curves per run, op, dtype and placement (pairs folded into
//! their median with the min–max spread), the hardware ceiling, and size labels.

use std::collections::BTreeMap;

use crate::config::{BenchConfig, Hardware};
use crate::results::rows::{grouped_rows, median};
use crate::results::{ResultRow, RunRecord, TimeStats};

/// One curve: a run's op × dtype × placement over the sizes it measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub op: String,
    pub dtype: String,
    pub in_place: bool,
    /// How many rows each point aggregates at most (1 for a plain run).
    pub groups: usize,
    /// Whether those rows are node pairs or groups of `launch` (else repeated measurements of
    /// one size in one run: several files ingested together, or repeated sizes).
    pub of_pairs: bool,
    pub points: Vec<SeriesPoint>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SeriesPoint {
    pub bytes: u64,
    /// Median over the groups measuring this size.
    pub busbw: Option<f64>,
    /// Spread over the groups (equal to `busbw` for a plain run).
    pub busbw_min: Option<f64>,
    pub busbw_max: Option<f64>,
    /// Medians of each time statistic over the groups.
    pub time: TimeStats,
    pub wrong: Option<u64>,
}

impl Series {
    pub fn placement(&self) -> &'static str {
        if self.in_place {
            "in-place"
        } else {
            "out-of-place"
        }
    }

    /// What the rows aggregated into one point are: `pairs` or `samples`.
    pub fn aggregated(&self) -> &'static str {
        if self.of_pairs { "pairs" } else { "samples" }
    }

    pub fn at(&self, bytes: u64) -> Option<&SeriesPoint> {
        self.points.iter().find(|p| p.bytes == bytes)
    }
}

/// The record's curves, ordered by op, dtype, out-of-place before in-place.
pub fn series_of(record: &RunRecord) -> Vec<Series> {
    type Key = (String, String, bool);
    let mut by_curve: BTreeMap<Key, BTreeMap<u64, Vec<&ResultRow>>> = BTreeMap::new();
    let mut named: BTreeMap<Key, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for (group, row) in grouped_rows(record) {
        let key = (row.op.clone(), row.dtype.clone(), row.in_place);
        if let Some(g) = group {
            named.entry(key.clone()).or_default().insert(g);
        }
        by_curve
            .entry(key)
            .or_default()
            .entry(row.bytes)
            .or_default()
            .push(row);
    }
    by_curve
        .into_iter()
        .map(|(key, sizes)| {
            let of_pairs = named.get(&key).is_some_and(|g| g.len() > 1);
            let (op, dtype, in_place) = key;
            let groups = sizes.values().map(Vec::len).max().unwrap_or(1);
            let points = sizes
                .into_iter()
                .map(|(bytes, rows)| aggregate(bytes, &rows))
                .collect();
            Series {
                op,
                dtype,
                in_place,
                groups,
                of_pairs,
                points,
            }
        })
        .collect()
}

/// The curves a plot draws: those of the passing pairs (a failed pair's 5 GB/s would stretch
/// the min–max band of the healthy ones down to it) and, drawn apart, each failed pair's own
/// (named by the pair). A record without failed pairs is [`series_of`].
pub fn plot_series(record: &RunRecord) -> (Vec<Series>, Vec<(String, Series)>) {
    if record.pairs.iter().all(|p| p.status == "pass") {
        return (series_of(record), vec![]);
    }
    let mut passing = record.clone();
    passing.pairs.retain(|p| p.status == "pass");
    let failed = record
        .pairs
        .iter()
        .filter(|p| p.status != "pass" && !p.rows.is_empty())
        .flat_map(|p| {
            let mut own = RunRecord::new("run");
            own.rows = p.rows.clone();
            series_of(&own)
                .into_iter()
                .map(move |s| (p.name.clone(), s))
        })
        .collect();
    (series_of(&passing), failed)
}

fn aggregate(bytes: u64, rows: &[&ResultRow]) -> SeriesPoint {
    let busbw: Vec<f64> = rows.iter().filter_map(|r| r.busbw_gbs).collect();
    let stat = |f: &dyn Fn(&TimeStats) -> Option<f64>| {
        median(rows.iter().filter_map(|r| f(&r.time_us)).collect())
    };
    SeriesPoint {
        bytes,
        busbw: median(busbw.clone()),
        busbw_min: busbw.iter().copied().reduce(f64::min),
        busbw_max: busbw.iter().copied().reduce(f64::max),
        time: TimeStats {
            mean: stat(&|t| Some(t.mean).filter(|m| *m > 0.0)).unwrap_or(0.0),
            min: stat(&|t| t.min),
            p50: stat(&|t| t.p50),
            p99: stat(&|t| t.p99),
            max: stat(&|t| t.max),
        },
        wrong: rows.iter().filter_map(|r| r.wrong).reduce(|a, b| a + b),
    }
}

/// How many nodes took part: the log analysis says, else the distinct hosts, else the largest
/// pair or group.
pub fn nodes_of(record: &RunRecord) -> Option<u32> {
    let from_analysis = record.analysis.as_ref().and_then(|a| a.nodes);
    let hosts = record.hosts.len() as u32;
    let pair = record.pairs.iter().map(|p| p.nodes.len() as u32).max();
    from_analysis.or((hosts > 0).then_some(hosts)).or(pair)
}

/// The bench config the record was run with, when it carries one.
pub fn embedded_config(record: &RunRecord) -> Option<BenchConfig> {
    serde_json::from_value(record.config.clone()?).ok()
}

/// The fastest busbw the hardware allows for this run, and what that number is.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    pub gbs: f64,
    pub label: String,
}

/// Between nodes, ring all-gather/reduce-scatter/all-reduce move each node's share through its
/// network interfaces, so busbw cannot exceed the node's aggregate EFA rate; within one node
/// it cannot exceed one GPU's one-way NVLink rate. Tree/NVLS all-reduce can beat the network
/// bound, which is why the line is labelled as a line rate, not a limit.
pub fn ceiling(hw: &Hardware, nodes: Option<u32>) -> Option<Ceiling> {
    match nodes? {
        0 => None,
        1 => {
            let gbs = hw.nvlink_gbs?;
            let link = hw.nvlink.as_deref().unwrap_or("NVLink");
            Some(Ceiling {
                gbs,
                label: format!("{link}: {gbs:.0} GB/s per GPU, one direction"),
            })
        }
        _ => {
            let (count, gbps) = (hw.efa_count?, hw.efa_gbps?);
            let gbs = count as f64 * gbps / 8.0;
            Some(Ceiling {
                gbs,
                label: format!(
                    "EFA line rate: {count}×{gbps:.0} Gb/s = {} GB/s per node",
                    crate::gate::num(gbs)
                ),
            })
        }
    }
}

/// `1K`, `64M`, `1G` for powers of two; `1.5M` otherwise.
pub fn size_label(bytes: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        let unit_bytes = 1u64 << shift;
        if bytes >= unit_bytes {
            let v = bytes as f64 / unit_bytes as f64;
            return if bytes.is_multiple_of(unit_bytes) {
                format!("{}{unit}", bytes / unit_bytes)
            } else {
                format!("{v:.1}{unit}")
            };
        }
    }
    format!("{bytes}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_labels() {
        assert_eq!(size_label(1024), "1K");
        assert_eq!(size_label(1 << 30), "1G");
        assert_eq!(size_label(3 << 19), "1.5M");
        assert_eq!(size_label(8), "8");
    }

    #[test]
    fn pairs_fold_into_one_curve_whether_or_not_launch_copied_their_rows() {
        let mut r = crate::results::rows::tests::pairs_record();
        assert_eq!(series_of(&r)[0].groups, 2);
        r.rows = r.pairs.iter().flat_map(|p| p.rows.clone()).collect();
        assert_eq!(series_of(&r)[0].groups, 2);
    }

    #[test]
    fn ceilings_follow_the_node_count() {
        let hw = Hardware {
            nvlink: Some("NVLink4".into()),
            nvlink_gbs: Some(450.0),
            efa_count: Some(32),
            efa_gbps: Some(100.0),
            ..Default::default()
        };
        assert_eq!(ceiling(&hw, Some(1)).unwrap().gbs, 450.0);
        assert_eq!(ceiling(&hw, Some(2)).unwrap().gbs, 400.0);
        assert!(ceiling(&hw, None).is_none());
    }
}
