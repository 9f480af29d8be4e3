//! One case per expectation: the run finished, the expected transport carried the traffic
//! without a socket fallback, the log analysis did not fail, no wrong elements, every node pair
//! passed, and every threshold matched something that was measured.

use super::curve::{applies, judged_rows};
use super::{Case, Check, CheckKind, GateInput, expected_transport};
use crate::logscan::{Analysis, Severity, Verdict};
use crate::results::RunStatus;

const CLASS: &str = "expect";

pub fn cases(input: &GateInput) -> Vec<Case> {
    let record = input.record;
    let mut cases = vec![status(input)];
    cases.push(transport(
        "transport",
        record.analysis.as_ref(),
        input,
        record.pairs.is_empty(),
    ));
    cases.push(analysis("log analysis", record.analysis.as_ref()));
    for pair in &record.pairs {
        let ok = pair.status == "pass";
        let message = match &pair.message {
            Some(m) => format!("{}: {} ({m})", pair.nodes.join(" + "), pair.status),
            None => format!("{}: {}", pair.nodes.join(" + "), pair.status),
        };
        let check = if ok {
            Check::pass(CheckKind::Pair, message)
        } else {
            Check::fail(CheckKind::Pair, message)
        };
        cases.push(Case::new(CLASS, format!("pair {}", pair.name), vec![check]));
        // A pair that never measured has failed above; its missing analysis says nothing new.
        let measured = ok || !pair.rows.is_empty();
        cases.push(transport(
            &format!("pair {} transport", pair.name),
            pair.analysis.as_ref(),
            input,
            measured,
        ));
    }
    cases.extend(node_verdicts(input));
    cases.push(correctness(input));
    cases.extend(unused_thresholds(input));
    cases.extend(stack_versions(input));
    cases
}

/// `min_nccl` and `min_ofi_plugin`: every host's loaded NCCL and aws-ofi-nccl are at least
/// that version. Hosts without a recorded stack fall back to the record's NCCL version (and
/// the log analysis's); a plugin version exists only in a recorded stack.
fn stack_versions(input: &GateInput) -> Vec<Case> {
    use crate::results::stack::{at_least, version_parts};
    let Some(expect) = input.config.map(|c| &c.expect) else {
        return vec![];
    };
    let kind = CheckKind::Stack;
    let record = input.record;
    let stacks: Vec<(&str, &crate::results::stack::StackInfo)> = record
        .hosts
        .iter()
        .filter_map(|h| h.stack.as_ref().map(|s| (h.hostname.as_str(), s)))
        .collect();
    let judge = |what: &str, min: &str, who: &str, have: Option<&str>| -> Check {
        let Some(want) = version_parts(min) else {
            return Check::fail(
                kind,
                format!("the required {what} version `{min}` is not a version number"),
            );
        };
        match have.map(|h| (h, version_parts(h))) {
            Some((h, Some(parts))) if at_least(&parts, &want) => {
                Check::pass(kind, format!("{who}: {what} {h} (at least {min})"))
            }
            Some((h, Some(_))) => Check::fail(
                kind,
                format!("{who}: {what} {h} is older than the required {min}"),
            ),
            Some((h, None)) => Check::fail(
                kind,
                format!(
                    "{who}: {what} version `{h}` cannot be compared with {min} (an untagged build?)"
                ),
            ),
            None => Check::fail(
                kind,
                format!("{who}: no {what} version recorded (required: at least {min})"),
            ),
        }
    };
    let mut cases = vec![];
    if let Some(min) = &expect.min_nccl {
        let mut checks: Vec<Check> = stacks
            .iter()
            .map(|(host, s)| {
                judge(
                    "NCCL",
                    min,
                    host,
                    s.nccl.as_ref().and_then(|n| n.version.as_deref()),
                )
            })
            .collect();
        if checks.is_empty() {
            let mut versions: Vec<&str> = record
                .nccl
                .iter()
                .map(|n| n.version.as_str())
                .chain(
                    record
                        .analysis
                        .iter()
                        .flat_map(|a| a.nccl_versions.iter().map(String::as_str)),
                )
                .filter(|v| !v.is_empty())
                .collect();
            versions.sort_unstable();
            versions.dedup();
            checks = versions
                .iter()
                .map(|v| judge("NCCL", min, "the run", Some(v)))
                .collect();
            if checks.is_empty() {
                checks.push(judge("NCCL", min, "the run", None));
            }
        }
        cases.push(Case::new(CLASS, "NCCL version", checks));
    }
    if let Some(min) = &expect.min_ofi_plugin {
        let mut checks: Vec<Check> = stacks
            .iter()
            .map(|(host, s)| match &s.net_plugin {
                Some(p) => judge("aws-ofi-nccl", min, host, p.version.as_deref()),
                None => Check::fail(
                    kind,
                    format!(
                        "{host}: NCCL loaded no net plugin (required: aws-ofi-nccl {min} or newer)"
                    ),
                ),
            })
            .collect();
        if checks.is_empty() {
            checks.push(Check::fail(
                kind,
                format!("the results record no loaded stack, so no plugin version (required: aws-ofi-nccl {min} or newer); `netcheck run` and `launch` record it"),
            ));
        }
        cases.push(Case::new(CLASS, "OFI plugin version", checks));
    }
    cases
}

fn status(input: &GateInput) -> Case {
    let kind = CheckKind::Status;
    let record = input.record;
    let check = match record.status {
        RunStatus::Complete => Check::pass(kind, "the run completed"),
        other => {
            let mut message = format!(
                "the run ended {}: its rows hold only what finished",
                match other {
                    RunStatus::Interrupted => "early (interrupted or truncated output)",
                    RunStatus::Timeout => "in a timeout",
                    _ => "with an error",
                }
            );
            if let Some(first) = record.errors.first() {
                message += &format!("; first error: {first}");
            }
            Check::fail(kind, message)
        }
    };
    Case::new(CLASS, "run status", vec![check])
}

/// The expected transport and the absence of a socket fallback. `required`: fail when the
/// expectation exists but no analysis does (for the top level of multi-pair results the pairs
/// carry the analyses, so a missing top-level one is not a failure).
fn transport(name: &str, analysis: Option<&Analysis>, input: &GateInput, required: bool) -> Case {
    let kind = CheckKind::Transport;
    let expected = expected_transport(input);
    let mut checks = Vec::new();
    match (analysis, &expected) {
        (Some(a), Some(want)) => {
            let got = a.inter_node_transport.as_str();
            checks.push(if got == want {
                Check::pass(kind, format!("inter-node traffic used {got}, as expected"))
            } else {
                Check::fail(
                    kind,
                    format!("inter-node traffic used {got}; expected {want}"),
                )
            });
        }
        (None, Some(want)) if required => checks.push(Check::fail(
            kind,
            format!(
                "expected {want}, but the results carry no log analysis to prove it \
                 (run with NCCL_DEBUG=INFO, or ingest output that includes the NCCL lines)"
            ),
        )),
        _ => {}
    }
    match analysis.map(|a| a.socket_fallback) {
        Some(Some(true)) => checks.push(Check::fail(
            kind,
            "NCCL fell back to TCP sockets although an RDMA path was expected or present",
        )),
        Some(Some(false)) => checks.push(Check::pass(kind, "no socket fallback")),
        _ => {}
    }
    if checks.is_empty() {
        let why = match (&expected, required) {
            (Some(_), false) => "checked per pair",
            _ => "no transport expectation and no log analysis",
        };
        checks.push(Check::skip(kind, why));
    }
    Case::new(CLASS, name, checks)
}

fn analysis(name: &str, analysis: Option<&Analysis>) -> Case {
    let kind = CheckKind::Analysis;
    let Some(a) = analysis else {
        return Case::new(
            CLASS,
            name,
            vec![Check::skip(kind, "the results carry no log analysis")],
        );
    };
    let errors: Vec<&str> = a
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.message.as_str())
        .collect();
    let check = match a.verdict {
        Verdict::Fail => Check::fail(
            kind,
            format!("the log analysis failed: {}", errors.join("; ")),
        ),
        Verdict::Warn => {
            let warnings: Vec<&str> = a
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Warn)
                .map(|f| f.message.as_str())
                .collect();
            Check::pass(
                kind,
                format!("passed with warnings: {}", warnings.join("; ")),
            )
        }
        Verdict::Pass => Check::pass(kind, "the log analysis passed"),
    };
    Case::new(CLASS, name, vec![check])
}

/// `launch`'s verdict per node: `fail` (failed with a node that passed elsewhere) and
/// `suspect` (in a failing group, fault not placed) fail; nodes that could not be judged
/// (`inconclusive`, `untested`, `ineligible`) are skipped with the reason.
fn node_verdicts(input: &GateInput) -> Vec<Case> {
    input
        .record
        .nodes
        .iter()
        .map(|node| {
            let kind = CheckKind::Pair;
            let message = match &node.reason {
                Some(r) if !r.is_empty() => format!("{}: {r}", node.verdict),
                _ => node.verdict.clone(),
            };
            let check = match node.verdict.as_str() {
                "pass" => Check::pass(kind, message),
                "fail" | "suspect" => Check::fail(kind, message),
                _ => Check::skip(kind, message),
            };
            Case::new(CLASS, format!("node {}", node.name), vec![check])
        })
        .collect()
}

fn correctness(input: &GateInput) -> Case {
    let kind = CheckKind::Correctness;
    let max_wrong = input.config.and_then(|c| c.expect.max_wrong).unwrap_or(0);
    let rows = judged_rows(input.record);
    let checked: Vec<_> = rows
        .iter()
        .filter_map(|(_, r)| r.wrong.map(|w| (r, w)))
        .collect();
    let bad: Vec<_> = checked.iter().filter(|(_, w)| *w > max_wrong).collect();
    // nccl-tests' own verdict, for outputs whose rows carry no counts (the `error` column of
    // versions before 2.10 holds a maximum error, not a count).
    let out_of_bounds = input
        .record
        .ingest
        .as_ref()
        .and_then(|i| i.out_of_bounds)
        .filter(|n| *n > 0);
    let check = if let Some(n) = out_of_bounds.filter(|_| bad.is_empty()) {
        Check::fail(
            kind,
            format!(
                "nccl-tests reported {n} out-of-bounds values (`# Out of bounds values : {n} FAILED`)"
            ),
        )
    } else if checked.is_empty() {
        Check::skip(kind, "results were not checked for correctness")
    } else if bad.is_empty() {
        Check::pass(
            kind,
            format!(
                "{} of {} rows checked, none with more than {max_wrong} wrong elements",
                checked.len(),
                rows.len()
            ),
        )
    } else {
        let total: u64 = bad.iter().map(|(_, w)| *w).sum();
        Check::fail(
            kind,
            format!(
                "{} rows with wrong elements ({total} in all; allowed {max_wrong} per row)",
                bad.len()
            ),
        )
    };
    Case::new(CLASS, "correctness", vec![check])
}

/// A threshold that covers nothing measured. For an op the run measured, its sizes missed the
/// threshold's range: a configuration or sweep mistake, and passing it silently would gate on
/// nothing, so it fails. For an op the run did not measure at all (p5's all_reduce floor
/// against `run`'s default all_gather + reduce_scatter), it is listed as not judged (a skipped
/// case) and fails only with `--require-bandwidth`, which asks for every bandwidth criterion to
/// have been judged.
fn unused_thresholds(input: &GateInput) -> Vec<Case> {
    let Some(config) = input.config else {
        return vec![];
    };
    let rows = judged_rows(input.record);
    config
        .thresholds
        .iter()
        .enumerate()
        .filter(|(_, t)| !rows.iter().any(|(_, r)| applies(t, r)))
        .map(|(i, t)| {
            let range = threshold_range(t);
            let measured =
                t.op.as_deref()
                    .is_none_or(|op| rows.iter().any(|(_, r)| r.op == op));
            let check = if measured {
                Check::fail(
                    CheckKind::Coverage,
                    format!("threshold[{i}] ({range}) matches no measured row"),
                )
            } else {
                let op = t.op.as_deref().unwrap_or_default();
                let message = format!(
                    "threshold[{i}] ({range}) not judged: {op} was not measured in this run"
                );
                if input.require_bandwidth {
                    Check::fail(
                        CheckKind::Coverage,
                        format!("{message} (--require-bandwidth)"),
                    )
                } else {
                    Check::skip(CheckKind::Coverage, message)
                }
            };
            Case::new(CLASS, format!("threshold[{i}]"), vec![check])
        })
        .collect()
}

/// `all_reduce 8G–8G`: a threshold's op and size range.
pub fn threshold_range(t: &crate::config::Threshold) -> String {
    format!(
        "{} {}–{}",
        t.op.as_deref().unwrap_or("any op"),
        t.min_bytes.map_or("0".into(), |b| b.to_string()),
        t.max_bytes.map_or("∞".into(), |b| b.to_string()),
    )
}

#[cfg(test)]
mod stack_tests {
    use crate::config::BenchConfig;
    use crate::gate::{GateInput, evaluate};
    use crate::results::stack::tests::stack;
    use crate::results::{HostInfo, NcclInfo, RunRecord};

    fn with_hosts(stacks: &[(&str, crate::results::stack::StackInfo)]) -> RunRecord {
        let mut r = RunRecord::new("launch");
        r.hosts = stacks
            .iter()
            .map(|(name, s)| HostInfo {
                hostname: name.to_string(),
                stack: Some(s.clone()),
                ..Default::default()
            })
            .collect();
        r
    }

    fn stack_failures(r: &RunRecord, min_nccl: Option<&str>, min_ofi: Option<&str>) -> Vec<String> {
        let mut config = BenchConfig::default();
        config.expect.min_nccl = min_nccl.map(str::to_string);
        config.expect.min_ofi_plugin = min_ofi.map(str::to_string);
        let report = evaluate(&GateInput {
            record: r,
            origin: "r.json",
            config: Some(&config),
            baseline: None,
            tolerance_pct: 10.0,
            baseline_min_bytes: None,
            expect_transport: None,
            require_bandwidth: false,
        });
        let names: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
        if min_nccl.is_some() {
            assert!(names.contains(&"NCCL version"), "{names:?}");
        }
        report
            .cases
            .iter()
            .filter(|c| c.name.ends_with("version"))
            .flat_map(|c| c.failures().map(|f| f.message.clone()))
            .collect()
    }

    #[test]
    fn every_host_must_have_loaded_at_least_the_required_versions() {
        let r = with_hosts(&[
            ("a", stack("2.29.7", Some("1.21.1"), "580.65.06")),
            ("b", stack("2.26.2", Some("1.13.2-aws"), "580.65.06")),
            ("c", stack("2.29.7", None, "580.65.06")),
        ]);
        let f = stack_failures(&r, Some("2.27"), Some("1.14"));
        assert_eq!(
            f,
            [
                "b: NCCL 2.26.2 is older than the required 2.27",
                "b: aws-ofi-nccl 1.13.2-aws is older than the required 1.14",
                "c: NCCL loaded no net plugin (required: aws-ofi-nccl 1.14 or newer)",
            ]
        );
        // Without requirements there is no such case.
        assert!(stack_failures(&r, None, None).is_empty());
        let ok = with_hosts(&[("a", stack("2.29.7", Some("1.21.1"), "580.65.06"))]);
        assert!(stack_failures(&ok, Some("2.27"), Some("1.14")).is_empty());
    }

    #[test]
    fn without_a_recorded_stack_the_records_nccl_is_judged_and_the_plugin_fails() {
        let mut r = RunRecord::new("ingest");
        r.nccl = Some(NcclInfo {
            version: "2.23.4".into(),
            library_path: None,
        });
        let f = stack_failures(&r, Some("2.27.3"), Some("1.14"));
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(
            f[0],
            "the run: NCCL 2.23.4 is older than the required 2.27.3"
        );
        assert!(f[1].contains("record no loaded stack"), "{f:?}");
        r.nccl = None;
        let f = stack_failures(&r, Some("2.27"), None);
        assert_eq!(
            f,
            ["the run: no NCCL version recorded (required: at least 2.27)"]
        );
    }
}
