//! One case per measured op×size: correctness, thresholds and the baseline, for the
//! out-of-place and in-place rows of that point.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::{Case, Check, CheckKind, GateInput, num, pct};
use crate::config::{Threshold, format_bytes};
use crate::results::rows::median;
use crate::results::{ResultRow, RunRecord, TimeStats};

/// The measured point a curve case is about.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Point {
    /// The pair or group, for multi-pair results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub op: String,
    pub dtype: String,
    pub bytes: u64,
}

impl Point {
    fn of(group: Option<&str>, row: &ResultRow) -> Point {
        Point {
            group: group.map(str::to_string),
            op: row.op.clone(),
            dtype: row.dtype.clone(),
            bytes: row.bytes,
        }
    }

    pub fn case_name(&self) -> String {
        let name = format!("{} {}", self.dtype, format_bytes(self.bytes));
        match &self.group {
            Some(g) => format!("{g} {name}"),
            None => name,
        }
    }
}

/// Every row the gate judges, with its pair or group: the record's own rows and each pair's,
/// once.
pub fn judged_rows(record: &RunRecord) -> Vec<(Option<&str>, &ResultRow)> {
    crate::results::rows::grouped_rows(record)
}

pub fn cases(input: &GateInput) -> Vec<Case> {
    let mut points: BTreeMap<Point, Vec<&ResultRow>> = BTreeMap::new();
    for (group, row) in judged_rows(input.record) {
        points.entry(Point::of(group, row)).or_default().push(row);
    }
    let thresholds: &[Threshold] = input.config.map_or(&[], |c| &c.thresholds);
    let max_wrong = input.config.and_then(|c| c.expect.max_wrong).unwrap_or(0);
    let baseline = input.baseline.map(BaselineIndex::new);
    let mut cases = Vec::new();
    for (point, mut rows) in points {
        rows.sort_by_key(|r| r.in_place);
        let mut checks = Vec::new();
        for row in rows {
            let place = placement(row);
            checks.extend(correctness(row, place, max_wrong));
            for (i, t) in thresholds.iter().enumerate() {
                if applies(t, row) {
                    checks.extend(threshold_checks(i, t, row, place));
                }
            }
            if let Some(index) = &baseline
                && input.baseline_min_bytes.is_none_or(|min| row.bytes >= min)
            {
                checks.push(baseline_check(
                    index,
                    &point,
                    row,
                    place,
                    input.tolerance_pct,
                ));
            }
        }
        if checks.is_empty() {
            checks.push(Check::skip(
                CheckKind::Bandwidth,
                "nothing to check: no threshold or baseline covers this size and correctness \
                 was not checked",
            ));
        }
        let mut case = Case::new(format!("curve.{}", point.op), point.case_name(), checks);
        case.point = Some(point);
        cases.push(case);
    }
    if let Some(index) = &baseline {
        cases.extend(missing_points(input, index));
    }
    cases
}

fn placement(row: &ResultRow) -> &'static str {
    if row.in_place {
        "in-place"
    } else {
        "out-of-place"
    }
}

fn correctness(row: &ResultRow, place: &str, max_wrong: u64) -> Option<Check> {
    let kind = CheckKind::Correctness;
    Some(match row.wrong? {
        0 if max_wrong == 0 => Check::pass(kind, format!("{place}: 0 wrong elements")),
        w if w <= max_wrong => Check::pass(
            kind,
            format!("{place}: {w} wrong elements (allowed {max_wrong})"),
        ),
        w => Check::fail(
            kind,
            format!("{place}: {w} wrong elements (allowed {max_wrong})"),
        ),
    })
}

/// Whether threshold `t` covers this row's op and size.
pub fn applies(t: &Threshold, row: &ResultRow) -> bool {
    t.op.as_deref().is_none_or(|op| op == row.op)
        && t.min_bytes.is_none_or(|m| row.bytes >= m.0)
        && t.max_bytes.is_none_or(|m| row.bytes <= m.0)
}

fn threshold_checks(i: usize, t: &Threshold, row: &ResultRow, place: &str) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(min) = t.min_busbw_gbs {
        let kind = CheckKind::Bandwidth;
        checks.push(match row.busbw_gbs {
            Some(b) if b >= min => Check::pass(
                kind,
                format!(
                    "{place} busbw {} GB/s ≥ {} GB/s (threshold[{i}])",
                    num(b),
                    num(min)
                ),
            ),
            Some(b) => Check::fail(
                kind,
                format!(
                    "{place} busbw {} GB/s is {} below the {} GB/s minimum (threshold[{i}])",
                    num(b),
                    pct((min - b) / min * 100.0),
                    num(min)
                ),
            ),
            None => Check::fail(
                kind,
                format!("{place} busbw was not measurable (threshold[{i}] needs it)"),
            ),
        });
    }
    if let Some(max) = t.max_latency_us {
        let stat = t.latency_stat.as_deref().unwrap_or("mean");
        let kind = CheckKind::Latency;
        checks.push(match time_stat(&row.time_us, stat) {
            Some(v) if v <= max => Check::pass(
                kind,
                format!(
                    "{place} {stat} time {} µs ≤ {} µs (threshold[{i}])",
                    num(v),
                    num(max)
                ),
            ),
            Some(v) => Check::fail(
                kind,
                format!(
                    "{place} {stat} time {} µs exceeds the {} µs maximum by {} (threshold[{i}])",
                    num(v),
                    num(max),
                    pct((v - max) / max * 100.0)
                ),
            ),
            None => Check::fail(
                kind,
                format!(
                    "{place} {stat} time was not recorded, so threshold[{i}] cannot be checked \
                     (nccl-tests records percentiles only with -I)"
                ),
            ),
        });
    }
    checks
}

pub fn time_stat(t: &TimeStats, stat: &str) -> Option<f64> {
    match stat {
        "mean" => (t.mean > 0.0).then_some(t.mean),
        "p50" => t.p50,
        "p99" => t.p99,
        "min" => t.min,
        "max" => t.max,
        _ => None,
    }
}

fn baseline_check(
    index: &BaselineIndex,
    point: &Point,
    row: &ResultRow,
    place: &str,
    tolerance_pct: f64,
) -> Check {
    let kind = CheckKind::Baseline;
    let Some(base) = index.get(point, row.in_place) else {
        return Check::skip(kind, format!("{place}: not in the baseline"));
    };
    let Some(busbw) = row.busbw_gbs else {
        return Check::fail(
            kind,
            format!(
                "{place} busbw was not measurable (baseline {} GB/s)",
                num(base)
            ),
        );
    };
    let change = (busbw - base) / base * 100.0;
    if -change > tolerance_pct {
        Check::fail(
            kind,
            format!(
                "{place} busbw {} GB/s is {} below the baseline's {} GB/s (tolerance {})",
                num(busbw),
                pct(-change),
                num(base),
                pct(tolerance_pct)
            ),
        )
    } else {
        Check::pass(
            kind,
            format!(
                "{place} busbw {} GB/s vs baseline {} GB/s ({:+.1}%)",
                num(busbw),
                num(base),
                change
            ),
        )
    }
}

/// Sizes the baseline measured that these results lack: a shortened or interrupted sweep must
/// not pass by leaving out the sizes that would fail.
fn missing_points(input: &GateInput, index: &BaselineIndex) -> Vec<Case> {
    let measured: BTreeSet<(String, String, u64, bool)> = judged_rows(input.record)
        .into_iter()
        .map(|(_, r)| (r.op.clone(), r.dtype.clone(), r.bytes, r.in_place))
        .collect();
    let mut missing: BTreeMap<Point, Vec<&'static str>> = BTreeMap::new();
    for key in index.pooled.keys() {
        let (op, dtype, bytes, in_place) = key;
        if measured.contains(key) || input.baseline_min_bytes.is_some_and(|m| *bytes < m) {
            continue;
        }
        let point = Point {
            group: None,
            op: op.clone(),
            dtype: dtype.clone(),
            bytes: *bytes,
        };
        let place = if *in_place {
            "in-place"
        } else {
            "out-of-place"
        };
        missing.entry(point).or_default().push(place);
    }
    missing
        .into_iter()
        .map(|(point, places)| {
            let check = Check::fail(
                CheckKind::Coverage,
                format!(
                    "{} measured in the baseline but missing from these results",
                    places.join(" and ")
                ),
            );
            let mut case = Case::new(
                format!("curve.{}", point.op),
                point.case_name(),
                vec![check],
            );
            case.point = Some(point);
            case
        })
        .collect()
}

type PooledKey = (String, String, u64, bool);

/// The baseline's busbw per point. A point is looked up by its pair first; otherwise by op,
/// dtype, size and placement among the baseline's own rows, or the median over its pairs.
struct BaselineIndex {
    exact: HashMap<(Option<String>, PooledKey), f64>,
    pooled: BTreeMap<PooledKey, f64>,
}

impl BaselineIndex {
    fn new(baseline: &RunRecord) -> BaselineIndex {
        let mut exact = HashMap::new();
        let mut own: BTreeMap<PooledKey, f64> = BTreeMap::new();
        let mut from_pairs: BTreeMap<PooledKey, Vec<f64>> = BTreeMap::new();
        for (group, row) in judged_rows(baseline) {
            let Some(busbw) = row.busbw_gbs else { continue };
            let key = (row.op.clone(), row.dtype.clone(), row.bytes, row.in_place);
            exact.insert((group.map(str::to_string), key.clone()), busbw);
            if group.is_none() {
                own.insert(key, busbw);
            } else {
                from_pairs.entry(key).or_default().push(busbw);
            }
        }
        let mut pooled = own;
        for (key, values) in from_pairs {
            if let Some(m) = median(values) {
                pooled.entry(key).or_insert(m);
            }
        }
        BaselineIndex { exact, pooled }
    }

    fn get(&self, point: &Point, in_place: bool) -> Option<f64> {
        let key = (point.op.clone(), point.dtype.clone(), point.bytes, in_place);
        self.exact
            .get(&(point.group.clone(), key.clone()))
            .or_else(|| self.pooled.get(&key))
            .copied()
            .filter(|b| *b > 0.0)
    }
}
