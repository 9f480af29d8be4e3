//! The CI gate: a RunRecord judged against thresholds, expectations and/or a baseline.
//!
//! The verdict is a list of [`Case`]s, the way a CI system shows test results: one per measured
//! op×size (every placement, threshold and baseline comparison of that point is a [`Check`] in
//! it) and one per expectation (run status, transport, correctness, node pairs, thresholds
//! that matched nothing). Any failed check fails its case; any failed case fails the gate.
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
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GateReport {
    pub schema: &'static str,
    pub verdict: Outcome,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub tolerance_pct: f64,
    pub cases: Vec<Case>,
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
        tolerance_pct: input.tolerance_pct,
        cases,
    }
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
