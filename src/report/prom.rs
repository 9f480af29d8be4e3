//! `--prom FILE`: a Prometheus textfile (node_exporter's textfile collector reads
//! `*.prom`): the gate verdict, busbw and time per point, wrong elements and the transport.
//! Every family is written once with its HELP and TYPE, label sets are unique, and the file
//! is replaced atomically by the caller.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{Document, Exporter};
use crate::error::Result;
use crate::gate::Outcome;
use crate::results::ResultRow;
use crate::results::rows::all_rows;

pub struct Prometheus;

impl Exporter for Prometheus {
    fn file_name(&self) -> String {
        "netcheck.prom".into()
    }

    fn render(&self, doc: &Document) -> Result<Vec<u8>> {
        let mut out = String::new();
        if let Some(g) = &doc.gate {
            // One series per run: a results file with several runs (`ingest` of a log with
            // several nccl-tests runs) has its cases tagged with their run; a single run's
            // cases are all its own.
            let runs: Vec<&str> = doc.runs.iter().map(|r| r.label.as_str()).collect();
            let per_run: Vec<(&str, Vec<&crate::gate::Case>)> = match runs.len() {
                0 | 1 => vec![(
                    runs.first().copied().unwrap_or(""),
                    g.cases.iter().collect(),
                )],
                _ => runs
                    .iter()
                    .map(|run| {
                        let cases = g
                            .cases
                            .iter()
                            .filter(|c| c.run.as_deref() == Some(*run))
                            .collect();
                        (*run, cases)
                    })
                    .collect(),
            };
            family(
                &mut out,
                "netcheck_gate_passed",
                "1 when the gate passed the run, 0 when it failed.",
            );
            for (run, cases) in &per_run {
                let failed = cases.iter().any(|c| c.outcome == Outcome::Fail);
                sample(
                    &mut out,
                    "netcheck_gate_passed",
                    &[("run", *run)],
                    f64::from(u8::from(!failed)),
                );
            }
            family(&mut out, "netcheck_gate_cases", "Gate cases by outcome.");
            for (run, cases) in &per_run {
                for outcome in [Outcome::Pass, Outcome::Fail, Outcome::Skip] {
                    let n = cases.iter().filter(|c| c.outcome == outcome).count();
                    let name = match outcome {
                        Outcome::Pass => "pass",
                        Outcome::Fail => "fail",
                        Outcome::Skip => "skip",
                    };
                    sample(
                        &mut out,
                        "netcheck_gate_cases",
                        &[("run", *run), ("outcome", name)],
                        n as f64,
                    );
                }
            }
        }
        let points = unique_points(doc);
        family(
            &mut out,
            "netcheck_busbw_gbytes_per_second",
            "Bus bandwidth (nccl-tests definition) per op, dtype, size and placement, in GB/s.",
        );
        for (run, r) in &points {
            if let Some(v) = r.busbw_gbs {
                sample(
                    &mut out,
                    "netcheck_busbw_gbytes_per_second",
                    &labels(run, r),
                    v,
                );
            }
        }
        family(
            &mut out,
            "netcheck_time_seconds",
            "Time per operation by statistic, in seconds.",
        );
        for (run, r) in &points {
            let t = &r.time_us;
            for (stat, v) in [
                ("mean", Some(t.mean).filter(|m| *m > 0.0)),
                ("p50", t.p50),
                ("p99", t.p99),
                ("min", t.min),
                ("max", t.max),
            ] {
                if let Some(v) = v {
                    let mut l = labels(run, r);
                    l.push(("stat", stat.to_string()));
                    sample(&mut out, "netcheck_time_seconds", &l, v / 1e6);
                }
            }
        }
        family(
            &mut out,
            "netcheck_wrong_elements",
            "Wrong elements found by the correctness check.",
        );
        for (run, r) in &points {
            if let Some(w) = r.wrong {
                sample(
                    &mut out,
                    "netcheck_wrong_elements",
                    &labels(run, r),
                    w as f64,
                );
            }
        }
        family(
            &mut out,
            "netcheck_inter_node_transport_info",
            "1 for the transport NCCL used between nodes, from its logs.",
        );
        for run in &doc.runs {
            if let Some(a) = &run.record.analysis {
                let fallback = a
                    .socket_fallback
                    .map_or("unknown", |f| if f { "true" } else { "false" });
                let l = [
                    ("run", run.label.as_str()),
                    ("transport", a.inter_node_transport.as_str()),
                    ("socket_fallback", fallback),
                ];
                sample(&mut out, "netcheck_inter_node_transport_info", &l, 1.0);
            }
        }
        if doc.runs.iter().any(|r| !r.record.nodes.is_empty()) {
            family(
                &mut out,
                "netcheck_node_passed",
                "1 when launch judged the node good (verdict pass), else 0; verdict says why.",
            );
            for run in &doc.runs {
                let mut seen = BTreeSet::new();
                for node in &run.record.nodes {
                    if !seen.insert(node.name.as_str()) {
                        continue; // one sample per node: a duplicate would make the file invalid
                    }
                    sample(
                        &mut out,
                        "netcheck_node_passed",
                        &[
                            ("run", run.label.as_str()),
                            ("node", node.name.as_str()),
                            ("verdict", node.verdict.as_str()),
                        ],
                        f64::from(u8::from(node.verdict == "pass")),
                    );
                }
            }
        }
        family(
            &mut out,
            "netcheck_run_timestamp_seconds",
            "Start of the run, Unix time (a start time without a timezone is taken as UTC).",
        );
        for run in &doc.runs {
            if let Some(t) = run.record.started_at.as_deref().and_then(unix_time) {
                sample(
                    &mut out,
                    "netcheck_run_timestamp_seconds",
                    &[("run", run.label.as_str())],
                    t as f64,
                );
            }
        }
        Ok(out.into_bytes())
    }
}

/// Unix seconds of an RFC 3339 time, or of one without a timezone (`2026-12-01T08:00:00`, as
/// nccl-tests' `-J` files give it), taken as UTC.
fn unix_time(text: &str) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp());
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(text, f).ok())
        .map(|t| t.and_utc().timestamp())
}

/// Rows with distinct label sets (a duplicated row would make the file invalid).
fn unique_points(doc: &Document) -> Vec<(String, ResultRow)> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for run in &doc.runs {
        let own = run.record.rows.iter().cloned();
        let pairs = run.record.pairs.iter().flat_map(|p| {
            p.rows.iter().map(move |r| ResultRow {
                group: Some(p.name.clone()),
                ..r.clone()
            })
        });
        for row in own.chain(pairs) {
            let key = (
                run.label.clone(),
                row.op.clone(),
                row.dtype.clone(),
                row.bytes,
                row.in_place,
                row.group.clone(),
            );
            if seen.insert(key) {
                out.push((run.label.clone(), row));
            }
        }
    }
    debug_assert!(out.len() <= doc.runs.iter().map(|r| all_rows(&r.record).count()).sum());
    out
}

fn labels(run: &str, r: &ResultRow) -> Vec<(&'static str, String)> {
    vec![
        ("run", run.to_string()),
        ("op", r.op.clone()),
        ("dtype", r.dtype.clone()),
        ("bytes", r.bytes.to_string()),
        (
            "placement",
            if r.in_place {
                "in_place"
            } else {
                "out_of_place"
            }
            .to_string(),
        ),
        ("group", r.group.clone().unwrap_or_default()),
    ]
}

fn family(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
}

fn sample<K: AsRef<str>, V: AsRef<str>>(
    out: &mut String,
    name: &str,
    labels: &[(K, V)],
    value: f64,
) {
    let labels: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{}=\"{}\"", k.as_ref(), escape(v.as_ref())))
        .collect();
    let _ = writeln!(out, "{name}{{{}}} {value}", labels.join(","));
}

/// Label-value escaping of the exposition format: backslash, double quote, newline.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
