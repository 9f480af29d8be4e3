//! The CI gate: a RunRecord judged against thresholds, expectations and/or a baseline.
//!
//! The verdict is a list of [`Case`]s, the way a CI system shows test results: one per measured
//! op×size (every placement, threshold and baseline comparison of that point is a [`Check`] in
//! it) and one per expectation (run status, transport, correctness, node pairs and `launch`'s
//! node verdicts, thresholds that matched nothing). Any failed check fails its case; any failed case fails the gate.
//! The curve is compared size by size; nccl-tests' "Avg bus bandwidth" (an average over every
//! size of the sweep) is never used.

mod curve;
mod expect;

use serde::Serialize;

use crate::config::BenchConfig;
use crate::results::RunRecord;

pub use curve::Point;

/// What the gate is asked to judge.
pub struct GateInput<'a> {
    pub record: &'a RunRecord,
    /// Where the record came from (for messages).
    pub origin: &'a str,
    /// Thresholds and expectations; `None` when there are none.
    pub config: Option<&'a BenchConfig>,
    pub baseline: Option<&'a RunRecord>,
    /// Allowed bus-bandwidth drop against the baseline, percent.
    pub tolerance_pct: f64,
    /// Compare against the baseline only from this size up (small sizes are latency noise).
    pub baseline_min_bytes: Option<u64>,
    /// Expected inter-node transport; overrides `config.expect.transport`.
    pub expect_transport: Option<String>,
    /// Fail when nothing judged the bandwidth (no threshold matched, no baseline).
    pub require_bandwidth: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GateReport {
    pub schema: &'static str,
    pub verdict: Outcome,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub tolerance_pct: f64,
    /// What the verdict rests on: the kinds of checks that ran, and those that did not, why.
    pub judged: Judged,
    pub cases: Vec<Case>,
}

impl GateReport {
    /// The verdict of `cases`: fail when any case failed, with the counts.
    fn of(cases: Vec<Case>, tolerance_pct: f64, judged: Judged) -> GateReport {
        let count = |o: Outcome| cases.iter().filter(|c| c.outcome == o).count();
        let (passed, failed, skipped) = (
            count(Outcome::Pass),
            count(Outcome::Fail),
            count(Outcome::Skip),
        );
        GateReport {
            schema: GATE_SCHEMA,
            verdict: if failed > 0 {
                Outcome::Fail
            } else {
                Outcome::Pass
            },
            passed,
            failed,
            skipped,
            tolerance_pct,
            judged,
            cases,
        }
    }
}

/// What a verdict rests on, so a PASS on correctness alone is not read as "the network is fast".
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Judged {
    /// Per kind of check (`bandwidth`, `baseline`, `correctness`, ...): how many ran (passed
    /// or failed; skipped ones are not counted).
    pub checks: std::collections::BTreeMap<String, usize>,
    /// The criteria that judged nothing, each with the reason (`baseline`: "no --baseline").
    pub not_judged: Vec<NotJudged>,
    /// Whether any bandwidth criterion (a `min_busbw_gbs` threshold or a baseline) judged a
    /// point. Without one, a PASS says nothing about speed.
    pub bandwidth: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NotJudged {
    pub criterion: &'static str,
    pub reason: String,
}

impl Judged {
    /// Several runs' together: checks added up; a criterion is "not judged" only when it
    /// judged nothing in any run (the first run's reason is kept).
    fn merge<'a>(all: impl Iterator<Item = &'a Judged>) -> Judged {
        let all: Vec<&Judged> = all.collect();
        let mut merged = Judged::default();
        for j in &all {
            for (kind, n) in &j.checks {
                *merged.checks.entry(kind.clone()).or_insert(0) += n;
            }
            merged.bandwidth |= j.bandwidth;
        }
        if let Some(first) = all.first() {
            merged.not_judged = first
                .not_judged
                .iter()
                .filter(|n| {
                    all.iter().all(|j| {
                        j.not_judged.iter().any(|m| {
                            m.criterion == n.criterion
                                && (n.criterion != "threshold" || m.reason == n.reason)
                        })
                    })
                })
                .cloned()
                .collect();
        }
        merged
    }

    fn of(cases: &[Case], input: &GateInput) -> Judged {
        let mut checks = std::collections::BTreeMap::new();
        for c in cases.iter().flat_map(|c| &c.checks) {
            if c.outcome != Outcome::Skip {
                *checks.entry(c.kind.as_str().to_string()).or_insert(0) += 1;
            }
        }
        let ran = |k: CheckKind| checks.get(k.as_str()).copied().unwrap_or(0) > 0;
        let thresholds = input.config.map_or(&[][..], |c| &c.thresholds[..]);
        let mut not_judged = vec![];
        let mut missing =
            |criterion, reason: String| not_judged.push(NotJudged { criterion, reason });
        if !ran(CheckKind::Bandwidth) {
            missing(
                "bandwidth",
                if thresholds.iter().any(|t| t.min_busbw_gbs.is_some()) {
                    "no min_busbw_gbs threshold matched a measured point".into()
                } else {
                    "no min_busbw_gbs threshold in the config".into()
                },
            );
        }
        let rows = curve::judged_rows(input.record);
        for (i, t) in thresholds.iter().enumerate() {
            if let Some(op) = t.op.as_deref()
                && !rows.iter().any(|(_, r)| r.op == op)
            {
                missing(
                    "threshold",
                    format!(
                        "threshold[{i}] ({}): {op} not measured",
                        expect::threshold_range(t)
                    ),
                );
            }
        }
        if !ran(CheckKind::Latency) {
            missing(
                "latency",
                if thresholds.iter().any(|t| t.max_latency_us.is_some()) {
                    "no max_latency_us threshold matched a recorded time".into()
                } else {
                    "no max_latency_us threshold".into()
                },
            );
        }
        if !ran(CheckKind::Baseline) {
            missing(
                "baseline",
                if input.baseline.is_some() {
                    "no point of the baseline matched a measured one (op, dtype, size, placement)"
                        .into()
                } else {
                    "no --baseline".into()
                },
            );
        }
        if !ran(CheckKind::Transport) {
            missing(
                "transport",
                "no expected transport (--expect or expect.transport)".into(),
            );
        }
        Judged {
            bandwidth: ran(CheckKind::Bandwidth) || ran(CheckKind::Baseline),
            checks,
            not_judged,
        }
    }

    /// `correctness 46, bandwidth 40; not judged: baseline (no --baseline), ...`.
    pub fn to_line(&self) -> String {
        let ran: Vec<String> = self
            .checks
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let mut line = if ran.is_empty() {
            "nothing".to_string()
        } else {
            ran.join(", ")
        };
        if !self.not_judged.is_empty() {
            let missing: Vec<String> = self
                .not_judged
                .iter()
                .map(|n| format!("{} ({})", n.criterion, n.reason))
                .collect();
            line.push_str(&format!("; not judged: {}", missing.join(", ")));
        }
        line
    }
}

pub const GATE_SCHEMA: &str = "netcheck.gate.v1";

/// One test case: an op×size point or an expectation.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Case {
    /// `curve.<op>` or `expect`: the JUnit classname and Prometheus grouping.
    pub class: String,
    /// e.g. `float32 1M` or `transport`; prefixed with the pair for multi-pair results.
    pub name: String,
    pub outcome: Outcome,
    pub checks: Vec<Check>,
    /// The measured point, for curve cases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point: Option<Point>,
    /// The run the case belongs to, when one results file held several (see [`combine`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Check {
    pub kind: CheckKind,
    pub outcome: Outcome,
    /// What was checked and, on failure, by how much it missed.
    pub message: String,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Skip,
    Fail,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    Bandwidth,
    Latency,
    Baseline,
    Correctness,
    Transport,
    Analysis,
    Status,
    Pair,
    Coverage,
    /// The versions of the stack the hosts loaded (`--min-nccl`, `--min-ofi-plugin`).
    Stack,
}

impl CheckKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::Bandwidth => "bandwidth",
            CheckKind::Latency => "latency",
            CheckKind::Baseline => "baseline",
            CheckKind::Correctness => "correctness",
            CheckKind::Transport => "transport",
            CheckKind::Analysis => "analysis",
            CheckKind::Status => "status",
            CheckKind::Pair => "pair",
            CheckKind::Coverage => "coverage",
            CheckKind::Stack => "stack",
        }
    }
}

impl Check {
    pub fn pass(kind: CheckKind, message: impl Into<String>) -> Check {
        Check {
            kind,
            outcome: Outcome::Pass,
            message: message.into(),
        }
    }
    pub fn fail(kind: CheckKind, message: impl Into<String>) -> Check {
        Check {
            kind,
            outcome: Outcome::Fail,
            message: message.into(),
        }
    }
    pub fn skip(kind: CheckKind, message: impl Into<String>) -> Check {
        Check {
            kind,
            outcome: Outcome::Skip,
            message: message.into(),
        }
    }
}

impl Case {
    pub fn new(class: impl Into<String>, name: impl Into<String>, checks: Vec<Check>) -> Case {
        let outcome = if checks.iter().any(|c| c.outcome == Outcome::Fail) {
            Outcome::Fail
        } else if checks.iter().any(|c| c.outcome == Outcome::Pass) {
            Outcome::Pass
        } else {
            Outcome::Skip
        };
        Case {
            class: class.into(),
            name: name.into(),
            outcome,
            checks,
            point: None,
            run: None,
        }
    }

    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.outcome == Outcome::Fail)
    }
}

/// Judges the record. Pure: no I/O, so every rule is unit-testable.
pub fn evaluate(input: &GateInput) -> GateReport {
    let mut cases = curve::cases(input);
    cases.extend(expect::cases(input));
    let judged = Judged::of(&cases, input);
    if input.require_bandwidth {
        cases.push(Case::new(
            "expect",
            "bandwidth criterion",
            vec![if judged.bandwidth {
                Check::pass(
                    CheckKind::Coverage,
                    "a min_busbw_gbs threshold or the baseline judged the bandwidth",
                )
            } else {
                Check::fail(
                    CheckKind::Coverage,
                    "nothing judged the bandwidth: no min_busbw_gbs threshold matched a point and no baseline was given (--require-bandwidth)",
                )
            }],
        ));
    }
    GateReport::of(cases, input.tolerance_pct, judged)
}

/// The part of a baseline that run `index` of several (one results file) is compared with:
/// the collectives that run measured. Collectives no run measured stay with the first run, so
/// their absence is reported once, not once per run.
pub fn baseline_share(baseline: &RunRecord, runs: &[&RunRecord], index: usize) -> RunRecord {
    let ops = |r: &RunRecord| -> std::collections::BTreeSet<String> {
        crate::results::rows::all_rows(r)
            .map(|row| row.op.clone())
            .collect()
    };
    let mine = ops(runs[index]);
    let anyone: std::collections::BTreeSet<String> = runs.iter().flat_map(|r| ops(r)).collect();
    let keep = |op: &str| mine.contains(op) || (index == 0 && !anyone.contains(op));
    let mut share = baseline.clone();
    share.rows.retain(|r| keep(&r.op));
    for pair in &mut share.pairs {
        pair.rows.retain(|r| keep(&r.op));
    }
    share
}

/// One verdict for several runs of one results file (e.g. the runs `ingest` found in one
/// nccl-tests log): every run's cases, named after their run, and fail if any run fails.
pub fn combine(reports: Vec<(String, GateReport)>) -> GateReport {
    if reports.len() == 1 {
        return reports.into_iter().next().expect("one report").1;
    }
    let tolerance_pct = reports.first().map_or(10.0, |(_, r)| r.tolerance_pct);
    let judged = Judged::merge(reports.iter().map(|(_, r)| &r.judged));
    let cases: Vec<Case> = reports
        .into_iter()
        .flat_map(|(label, report)| {
            report.cases.into_iter().map(move |mut case| {
                case.name = format!("{label}: {}", case.name);
                case.run = Some(label.clone());
                case
            })
        })
        .collect();
    GateReport::of(cases, tolerance_pct, judged)
}

/// The expected transport: the flag, else the config's, ignoring `any`.
fn expected_transport(input: &GateInput) -> Option<String> {
    input
        .expect_transport
        .clone()
        .or_else(|| input.config.and_then(|c| c.expect.transport.clone()))
        .filter(|t| t != "any")
}

/// `12.3%` with one decimal.
fn pct(x: f64) -> String {
    format!("{x:.1}%")
}

/// A bandwidth or time with sensible precision.
pub fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ByteSize, Threshold};
    use crate::results::{PairResult, ResultRow, RunStatus};

    fn row(op: &str, bytes: u64, in_place: bool, busbw: f64) -> ResultRow {
        ResultRow {
            algbw_gbs: Some(busbw * 2.0),
            busbw_gbs: Some(busbw),
            ..ResultRow::for_test(op, bytes, in_place, 20.0)
        }
    }

    fn record(rows: Vec<ResultRow>) -> RunRecord {
        let mut r = RunRecord::new("run");
        r.rows = rows;
        r
    }

    fn input<'a>(
        record: &'a RunRecord,
        config: Option<&'a BenchConfig>,
        baseline: Option<&'a RunRecord>,
    ) -> GateInput<'a> {
        GateInput {
            record,
            origin: "r.json",
            config,
            baseline,
            tolerance_pct: 10.0,
            baseline_min_bytes: None,
            expect_transport: None,
            require_bandwidth: false,
        }
    }

    fn failures(report: &GateReport) -> Vec<String> {
        report
            .cases
            .iter()
            .flat_map(|c| {
                c.failures()
                    .map(|f| format!("{} {}: {}", c.class, c.name, f.message))
            })
            .collect()
    }

    fn threshold(op: &str, bytes: u64, min_busbw: Option<f64>, max_us: Option<f64>) -> Threshold {
        Threshold {
            op: Some(op.into()),
            min_bytes: Some(ByteSize(bytes)),
            max_bytes: Some(ByteSize(bytes)),
            min_busbw_gbs: min_busbw,
            max_latency_us: max_us,
            latency_stat: None,
        }
    }

    #[test]
    fn thresholds_fail_with_the_shortfall() {
        let r = record(vec![row("all_gather", 1 << 30, false, 180.0)]);
        let config = BenchConfig {
            thresholds: vec![threshold("all_gather", 1 << 30, Some(200.0), None)],
            ..Default::default()
        };
        let report = evaluate(&input(&r, Some(&config), None));
        assert_eq!(report.verdict, Outcome::Fail);
        let f = failures(&report);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("curve.all_gather float32 1G"), "{f:?}");
        assert!(
            f[0].contains("180 GB/s is 10.0% below the 200 GB/s minimum"),
            "{f:?}"
        );
    }

    #[test]
    fn latency_thresholds_use_the_named_statistic() {
        let mut r = record(vec![row("all_gather", 1024, false, 0.05)]);
        r.rows[0].time_us.p99 = Some(50.0);
        let mut t = threshold("all_gather", 1024, None, Some(30.0));
        let mean_ok = BenchConfig {
            thresholds: vec![t.clone()],
            ..Default::default()
        };
        assert_eq!(
            evaluate(&input(&r, Some(&mean_ok), None)).verdict,
            Outcome::Pass
        );
        t.latency_stat = Some("p99".into());
        let p99 = BenchConfig {
            thresholds: vec![t.clone()],
            ..Default::default()
        };
        let f = failures(&evaluate(&input(&r, Some(&p99), None)));
        assert!(
            f[0].contains("p99 time 50.0 µs exceeds the 30.0 µs maximum by 66.7%"),
            "{f:?}"
        );
        t.latency_stat = Some("p50".into());
        let p50 = BenchConfig {
            thresholds: vec![t],
            ..Default::default()
        };
        let f = failures(&evaluate(&input(&r, Some(&p50), None)));
        assert!(f[0].contains("p50 time was not recorded"), "{f:?}");
    }

    #[test]
    fn baseline_is_compared_size_by_size_within_the_tolerance() {
        let base = record(vec![
            row("all_gather", 1 << 20, false, 100.0),
            row("all_gather", 1 << 30, false, 300.0),
            row("all_gather", 1 << 30, true, 300.0),
        ]);
        // 1M: −9% (within 10%), 1G: −20%; the 1G in-place point is missing.
        let r = record(vec![
            row("all_gather", 1 << 20, false, 91.0),
            row("all_gather", 1 << 30, false, 240.0),
        ]);
        let report = evaluate(&input(&r, None, Some(&base)));
        let f = failures(&report);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(
            f.iter().any(|m| m.contains(
                "1G: out-of-place busbw 240 GB/s is 20.0% below the baseline's 300 GB/s"
            )),
            "{f:?}"
        );
        assert!(
            f.iter()
                .any(|m| m.contains("in-place measured in the baseline but missing")),
            "{f:?}"
        );
        // From 1G up only, and with a looser tolerance, the same run passes apart from coverage.
        let mut loose = input(&r, None, Some(&base));
        loose.tolerance_pct = 25.0;
        loose.baseline_min_bytes = Some(1 << 30);
        let f = failures(&evaluate(&loose));
        assert_eq!(f.len(), 1, "{f:?}");
    }

    #[test]
    fn pairs_are_compared_with_the_median_of_the_baselines_pairs() {
        let pair = |name: &str, busbw: f64| PairResult {
            name: name.into(),
            nodes: name.split('+').map(str::to_string).collect(),
            status: "pass".into(),
            message: None,
            rows: vec![row("all_gather", 1 << 30, false, busbw)],
            analysis: None,
        };
        let mut base = record(vec![]);
        base.pairs = vec![pair("a+b", 100.0), pair("c+d", 200.0), pair("e+f", 210.0)];
        let mut r = record(vec![]);
        r.pairs = vec![pair("x+y", 185.0), pair("y+z", 150.0)];
        let f = failures(&evaluate(&input(&r, None, Some(&base))));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].contains("y+z float32 1G") && f[0].contains("below the baseline's 200 GB/s"),
            "{f:?}"
        );
    }

    #[test]
    fn expectations_fail_on_status_wrong_elements_and_unused_thresholds() {
        let mut r = record(vec![row("all_gather", 1024, false, 1.0)]);
        r.rows[0].wrong = Some(2);
        r.status = RunStatus::Interrupted;
        let config = BenchConfig {
            thresholds: vec![threshold("all_reduce", 8 << 30, Some(300.0), None)],
            ..Default::default()
        };
        let f = failures(&evaluate(&input(&r, Some(&config), None)));
        assert!(
            f.iter()
                .any(|m| m.contains("out-of-place: 2 wrong elements (allowed 0)")),
            "{f:?}"
        );
        assert!(
            f.iter()
                .any(|m| m.contains("run status") && m.contains("ended early")),
            "{f:?}"
        );
        assert!(
            f.iter()
                .any(|m| m.contains("expect correctness")
                    && m.contains("1 rows with wrong elements")),
            "{f:?}"
        );
        // all_reduce was not measured: listed as not judged, not failed ...
        assert!(!f.iter().any(|m| m.contains("threshold[0]")), "{f:?}");
        let report = evaluate(&input(&r, Some(&config), None));
        let case = report
            .cases
            .iter()
            .find(|c| c.name == "threshold[0]")
            .unwrap();
        assert_eq!(case.outcome, Outcome::Skip);
        assert!(
            case.checks[0]
                .message
                .contains("all_reduce was not measured"),
            "{case:?}"
        );
        assert!(
            report.judged.to_line().contains("all_reduce not measured"),
            "{}",
            report.judged.to_line()
        );
        // ... unless every bandwidth criterion must judge.
        let mut strict = input(&r, Some(&config), None);
        strict.require_bandwidth = true;
        let f = failures(&evaluate(&strict));
        assert!(
            f.iter()
                .any(|m| m.contains("threshold[0]") && m.contains("--require-bandwidth")),
            "{f:?}"
        );
        // A measured op whose sizes miss the threshold's range still fails (the sweep was
        // too short for what the config gates on).
        let config = BenchConfig {
            thresholds: vec![threshold("all_gather", 8 << 30, Some(300.0), None)],
            ..Default::default()
        };
        let f = failures(&evaluate(&input(&r, Some(&config), None)));
        assert!(
            f.iter()
                .any(|m| m.contains("threshold[0] (all_gather 8G–8G) matches no measured row")),
            "{f:?}"
        );
    }

    #[test]
    fn expected_transport_needs_evidence() {
        let r = record(vec![row("all_gather", 1024, false, 1.0)]);
        let mut i = input(&r, None, None);
        i.expect_transport = Some("efa".into());
        let f = failures(&evaluate(&i));
        assert!(
            f[0].contains("expected efa, but the results carry no log analysis"),
            "{f:?}"
        );
        i.expect_transport = Some("any".into());
        assert_eq!(evaluate(&i).verdict, Outcome::Pass);
    }

    #[test]
    fn a_point_with_nothing_to_check_is_skipped_not_passed() {
        let mut r = record(vec![row("all_gather", 1024, false, 1.0)]);
        r.rows[0].wrong = None;
        let report = evaluate(&input(&r, None, None));
        let case = report
            .cases
            .iter()
            .find(|c| c.class == "curve.all_gather")
            .unwrap();
        assert_eq!(case.outcome, Outcome::Skip);
        assert_eq!(report.verdict, Outcome::Pass);
    }
}

/// Every bundled profile against what `netcheck run` measures by default (issue 26: the
/// headline gate must judge the headline run).
#[cfg(test)]
mod profile_tests {
    use crate::config::profiles::{PROFILES, by_name};

    /// What `netcheck run` measures with no flags: all_gather and reduce_scatter, 1K to 1G,
    /// out-of-place and in-place, checked; fast enough for every profile.
    fn default_run(busbw: f64) -> crate::results::RunRecord {
        let mut r = crate::results::RunRecord::new("run");
        for op in ["all_gather", "reduce_scatter"] {
            for shift in 10..=30 {
                for in_place in [false, true] {
                    r.rows.push(crate::results::ResultRow {
                        op: op.into(),
                        dtype: "float32".into(),
                        bytes: 1 << shift,
                        count: (1 << shift) / 4,
                        in_place,
                        redop: None,
                        iters: Some(20),
                        time_us: crate::results::TimeStats {
                            mean: 10.0,
                            ..Default::default()
                        },
                        algbw_gbs: Some(busbw),
                        busbw_gbs: Some(busbw),
                        wrong: Some(0),
                        group: None,
                    });
                }
            }
        }
        r
    }

    #[test]
    fn every_profile_judges_the_default_run_and_passes_a_fast_one() {
        for (name, _) in PROFILES {
            let config = by_name(name).unwrap();
            let record = default_run(1000.0);
            let judge = |record: &crate::results::RunRecord| {
                crate::gate::evaluate(&crate::gate::GateInput {
                    record,
                    origin: "r.json",
                    config: Some(&config),
                    baseline: None,
                    tolerance_pct: 10.0,
                    baseline_min_bytes: None,
                    // The transport is judged from logs, which these rows have none of.
                    expect_transport: Some("any".into()),
                    require_bandwidth: false,
                })
            };
            let report = judge(&record);
            let failed: Vec<String> = report
                .cases
                .iter()
                .filter(|c| c.outcome == crate::gate::Outcome::Fail)
                .map(|c| format!("{} {}: {:?}", c.class, c.name, c.checks))
                .collect();
            assert!(failed.is_empty(), "{name}: {failed:#?}");
            if *name == "default" {
                continue;
            }
            assert!(
                report.judged.checks.get("bandwidth").copied().unwrap_or(0) >= 4,
                "{name}: the default run's bandwidth is judged: {}",
                report.judged.to_line()
            );
            // And a run at socket speed fails the floors.
            let slow = judge(&default_run(0.5));
            assert_eq!(slow.verdict, crate::gate::Outcome::Fail, "{name}");
        }
    }
}
