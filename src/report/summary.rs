//! The content of the Markdown summary and the HTML bundle, as format-neutral blocks: the
//! verdict, the runs and their transport, the curves as tables, the node pairs.

use super::Document;
use super::model::{Series, nodes_of, series_of, size_label};
use super::plot::heatmap::{Cell, PairMatrix, short};
use super::plot::{PlotKind, kinds};
use crate::gate::{Outcome, num};
use crate::logscan::Severity;

pub enum Block {
    Heading(u8, String),
    Paragraph(String),
    List(Vec<String>),
    Table(Table),
    Image(PlotKind),
}

pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Most rows a table shows; the full data is in report.json.
const MAX_TABLE_ROWS: usize = 200;

pub fn blocks(doc: &Document, with_images: bool) -> Vec<Block> {
    let mut out = Vec::new();
    let title = match &doc.gate {
        Some(g) if g.verdict == Outcome::Fail => "netcheck gate: FAIL",
        Some(_) => "netcheck gate: PASS",
        None => "netcheck report",
    };
    out.push(Block::Heading(1, title.into()));
    gate(doc, &mut out);
    runs(doc, &mut out);
    stack(doc, &mut out);
    transport(doc, &mut out);
    placement(doc, &mut out);
    if with_images {
        for kind in kinds(doc) {
            out.push(Block::Image(kind));
        }
    }
    curves(doc, &mut out);
    pairs(doc, &mut out);
    out
}

fn gate(doc: &Document, out: &mut Vec<Block>) {
    let Some(g) = &doc.gate else { return };
    let mark = if g.verdict == Outcome::Fail {
        "❌"
    } else {
        "✅"
    };
    let tolerance = if doc.baseline.is_some() {
        format!(" (baseline tolerance {}%)", g.tolerance_pct)
    } else {
        String::new()
    };
    out.push(Block::Paragraph(format!(
        "{mark} **{}**: {} cases passed, {} failed, {} skipped{tolerance}.",
        if g.verdict == Outcome::Fail {
            "fail"
        } else {
            "pass"
        },
        g.passed,
        g.failed,
        g.skipped,
    )));
    out.push(Block::Paragraph(format!("Judged: {}.", g.judged.to_line())));
    if !g.judged.bandwidth {
        out.push(Block::Paragraph(
            "⚠️ No bandwidth criterion (a `min_busbw_gbs` threshold or a baseline) judged this run: the verdict says nothing about speed.".into(),
        ));
    }
    let failures: Vec<Vec<String>> = g
        .cases
        .iter()
        .flat_map(|c| {
            c.failures().map(move |f| {
                vec![
                    c.class.clone(),
                    c.name.clone(),
                    f.kind.as_str().to_string(),
                    f.message.clone(),
                ]
            })
        })
        .collect();
    if !failures.is_empty() {
        out.push(Block::Heading(2, "Failures".into()));
        out.push(table(&["class", "case", "check", "what failed"], failures));
    }
}

fn runs(doc: &Document, out: &mut Vec<Block>) {
    out.push(Block::Heading(2, "Runs".into()));
    let mut rows = Vec::new();
    let all = doc
        .runs
        .iter()
        .map(|r| (r, ""))
        .chain(doc.baseline.iter().map(|b| (b, " (baseline)")));
    for (run, role) in all {
        let r = &run.record;
        let gpus: Vec<String> = {
            let mut names: Vec<String> = r
                .hosts
                .iter()
                .flat_map(|h| h.gpus.iter().map(|g| g.name.clone()))
                .collect();
            names.sort();
            names.dedup();
            names
        };
        rows.push(vec![
            format!("{}{role}", run.label),
            r.source.clone(),
            format!("{:?}", r.status).to_lowercase(),
            r.started_at.clone().unwrap_or_else(|| "?".into()),
            r.world_size.map_or("?".into(), |n| n.to_string()),
            nodes_label(r),
            gpus.join(", "),
            r.nccl.as_ref().map_or("?".into(), |n| n.version.clone()),
            doc.ceiling(run).map_or("unknown".into(), |c| c.label),
        ]);
    }
    out.push(table(
        &[
            "run",
            "source",
            "status",
            "started",
            "ranks",
            "nodes",
            "GPUs",
            "NCCL",
            "line rate",
        ],
        rows,
    ));
    let single: Vec<&str> = doc
        .runs
        .iter()
        .filter(|r| r.record.world_size == Some(1))
        .map(|r| r.label.as_str())
        .collect();
    if !single.is_empty() {
        out.push(Block::Paragraph(format!(
            "{}: one rank, so NCCL moved nothing between GPUs and bus bandwidth is 0 by definition; the times are NCCL's per-call cost on one GPU (out-of-place: a device copy; in-place: nothing to do). Two ranks or more measure the GPU network.",
            single.join(", ")
        )));
    }
    let errors: Vec<String> = doc
        .runs
        .iter()
        .flat_map(|r| {
            r.record
                .errors
                .iter()
                .map(move |e| format!("{}: {e}", r.label))
        })
        .collect();
    if !errors.is_empty() {
        out.push(Block::Paragraph(
            "Problems recorded during the runs:".into(),
        ));
        out.push(Block::List(errors.into_iter().take(50).collect()));
    }
}

/// The stack each group of nodes loaded (image, NCCL, plugin, libfabric, FI_PROVIDER), and
/// what differs between nodes; only for runs that recorded it.
fn stack(doc: &Document, out: &mut Vec<Block>) {
    let mut lines = Vec::new();
    let mut differ = Vec::new();
    for run in &doc.runs {
        let groups = crate::results::stack::groups(&run.record);
        let prefix = if doc.runs.len() > 1 {
            format!("{}: ", run.label)
        } else {
            String::new()
        };
        lines.extend(groups.iter().map(|g| format!("{prefix}{}", g.text())));
        differ.extend(
            crate::results::stack::differences(&run.record)
                .into_iter()
                .map(|d| format!("{prefix}⚠️ {d}")),
        );
    }
    if lines.is_empty() {
        return;
    }
    out.push(Block::Heading(2, "Stack (what each node loaded)".into()));
    out.push(Block::List(lines.into_iter().take(50).collect()));
    if !differ.is_empty() {
        out.push(Block::Paragraph(
            "Nodes whose stacks differ (a common cause of one slow or falling-back node):".into(),
        ));
        out.push(Block::List(differ.into_iter().take(50).collect()));
    }
}

fn transport(doc: &Document, out: &mut Vec<Block>) {
    out.push(Block::Heading(2, "Transport (from the NCCL logs)".into()));
    let mut rows: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut findings = Vec::new();
    for run in &doc.runs {
        let analyses = run
            .record
            .analysis
            .iter()
            .map(|a| (run.label.clone(), a))
            .chain(run.record.pairs.iter().filter_map(|p| {
                p.analysis
                    .as_ref()
                    .map(|a| (format!("{} {}", run.label, p.name), a))
            }));
        let mut any = false;
        for (name, a) in analyses {
            any = true;
            let fallback = match a.socket_fallback {
                Some(true) => "**yes**",
                Some(false) => "no",
                None => "unknown",
            };
            let facts = vec![
                a.inter_node_transport.as_str().to_string(),
                fallback.to_string(),
                a.gdr.map_or(
                    "unknown".into(),
                    |g| if g { "yes".into() } else { "no".into() },
                ),
                a.networks.join(", "),
                a.ofi_provider.clone().unwrap_or_else(|| "-".into()),
                format!("{:?}", a.verdict).to_lowercase(),
            ];
            // Pairs that agree share one row, so 60 healthy pairs are one line.
            match rows.iter_mut().find(|(f, _)| *f == facts) {
                Some((_, names)) => names.push(name.clone()),
                None => rows.push((facts, vec![name.clone()])),
            }
            for f in a.findings.iter().filter(|f| f.severity >= Severity::Warn) {
                let hint = f
                    .hint
                    .as_deref()
                    .map_or(String::new(), |h| format!(" (hint: {h})"));
                let severity = format!("{:?}", f.severity).to_lowercase();
                findings.push(format!("{name}: {severity} {}: {}{hint}", f.id, f.message));
            }
        }
        if !any {
            let unknown = ["not analysed", "unknown", "unknown", "-", "-", "-"];
            rows.push((unknown.map(String::from).to_vec(), vec![run.label.clone()]));
        }
    }
    let rows = rows
        .into_iter()
        .map(|(facts, names)| {
            let who = match names.len() {
                1 => names[0].clone(),
                n if n <= 3 => names.join(", "),
                n => format!("{n} pairs, e.g. {}", names[0]),
            };
            std::iter::once(who).chain(facts).collect()
        })
        .collect();
    out.push(table(
        &[
            "run",
            "inter-node transport",
            "socket fallback",
            "GPUDirect RDMA",
            "networks",
            "OFI provider",
            "verdict",
        ],
        rows,
    ));
    if !findings.is_empty() {
        out.push(Block::List(findings.into_iter().take(50).collect()));
    }
}

/// Runs over several (real or simulated) nodes: where each rank ran, NCCL's own view of it,
/// and how it reached its peers — which links stayed inside a node and which crossed the
/// network.
fn placement(doc: &Document, out: &mut Vec<Block>) {
    const MAX_RANKS: usize = 64;
    let mut rows = Vec::new();
    let mut more = 0;
    for run in &doc.runs {
        let r = &run.record;
        if nodes_of(r).is_none_or(|n| n < 2) || r.ranks.iter().all(|i| i.node.is_none()) {
            continue;
        }
        let links = r.rank_links();
        let nccl_view = |rank: &crate::results::RankInfo| match r
            .analysis_of(rank)
            .map(|p| (p.local_rank, p.local_ranks))
        {
            Some((Some(l), Some(n))) => format!("{l} of {n}"),
            _ => "-".into(),
        };
        more += r.ranks.len().saturating_sub(MAX_RANKS);
        for info in r.ranks.iter().take(MAX_RANKS) {
            let dash = |v: Option<u32>| v.map_or("-".to_string(), |n| n.to_string());
            rows.push(vec![
                run.label.clone(),
                info.rank.to_string(),
                info.host.clone(),
                dash(info.node),
                dash(info.local_rank),
                info.gpu.to_string(),
                nccl_view(info),
                crate::results::RunRecord::links_of(&links, info.rank),
            ]);
        }
    }
    if rows.is_empty() {
        return;
    }
    out.push(Block::Heading(2, "Ranks and links".into()));
    out.push(Block::Paragraph(
        "Where each rank ran (rank = node × ranks per node + local rank), NCCL's own `localRank` of `localRanks`, and the transport of every link the NCCL logs show.".into(),
    ));
    out.push(table(
        &[
            "run",
            "rank",
            "host",
            "node",
            "local rank",
            "GPU",
            "NCCL local rank",
            "links",
        ],
        rows,
    ));
    if more > 0 {
        out.push(Block::Paragraph(format!(
            "{more} more ranks: see the runs' results.json."
        )));
    }
}

fn curves(doc: &Document, out: &mut Vec<Block>) {
    out.push(Block::Heading(2, "Bus bandwidth and time by size".into()));
    let baseline: Vec<Series> = doc
        .baseline
        .as_ref()
        .map(|b| series_of(&b.record))
        .unwrap_or_default();
    for run in &doc.runs {
        let series = series_of(&run.record);
        let ceiling = doc.ceiling(run);
        let out_of_place = series.iter().filter(|s| !s.in_place);
        for s in out_of_place {
            let in_place = series
                .iter()
                .find(|x| x.in_place && x.op == s.op && x.dtype == s.dtype);
            let base = baseline
                .iter()
                .find(|b| !b.in_place && b.op == s.op && b.dtype == s.dtype);
            let has = |f: &dyn Fn(&super::model::SeriesPoint) -> bool| s.points.iter().any(f);
            let (p50, p99) = (
                has(&|p| p.time.p50.is_some()),
                has(&|p| p.time.p99.is_some()),
            );
            let mut headers = vec![
                "size",
                "busbw out-of-place (GB/s)",
                "busbw in-place (GB/s)",
                "time (mean)",
            ];
            if p50 {
                headers.push("p50");
            }
            if p99 {
                headers.push("p99");
            }
            headers.push("wrong");
            if base.is_some() {
                headers.extend(["baseline (GB/s)", "vs baseline"]);
            }
            if ceiling.is_some() {
                headers.push("% of line rate");
            }
            let rows = s
                .points
                .iter()
                .map(|p| {
                    let gbs = |v: Option<f64>| v.map_or("-".into(), num);
                    let us = |v: Option<f64>| v.map_or("-".into(), time);
                    let mut row = vec![
                        size_label(p.bytes),
                        gbs(p.busbw),
                        gbs(in_place.and_then(|ip| ip.at(p.bytes)).and_then(|q| q.busbw)),
                        us(Some(p.time.mean).filter(|t| *t > 0.0)),
                    ];
                    if p50 {
                        row.push(us(p.time.p50));
                    }
                    if p99 {
                        row.push(us(p.time.p99));
                    }
                    row.push(p.wrong.map_or("-".into(), |w| w.to_string()));
                    if let Some(b) = base {
                        let bv = b.at(p.bytes).and_then(|q| q.busbw);
                        row.push(gbs(bv));
                        row.push(match (p.busbw, bv) {
                            (Some(v), Some(b)) if b > 0.0 => {
                                format!("{:+.1}%", (v - b) / b * 100.0)
                            }
                            _ => "-".into(),
                        });
                    }
                    if let Some(c) = &ceiling {
                        row.push(
                            p.busbw
                                .map_or("-".into(), |v| format!("{:.0}%", v / c.gbs * 100.0)),
                        );
                    }
                    row
                })
                .collect();
            let groups = if s.groups > 1 {
                format!(" (median over up to {} {})", s.groups, s.aggregated())
            } else {
                String::new()
            };
            out.push(Block::Heading(
                3,
                format!("{}: {} {}{groups}", run.label, s.op, s.dtype),
            ));
            out.push(table(&headers, rows));
        }
    }
}

/// The run's node count: for a `launch` run the nodes over all its pairs (`8, 2 per pair`),
/// else the nodes one measurement spanned.
fn nodes_label(r: &crate::results::RunRecord) -> String {
    if r.pairs.is_empty() && r.nodes.is_empty() {
        return nodes_of(r).map_or("?".into(), |n| n.to_string());
    }
    let mut names: std::collections::BTreeSet<&str> = r
        .pairs
        .iter()
        .flat_map(|p| p.nodes.iter().map(String::as_str))
        .collect();
    names.extend(r.nodes.iter().map(|n| n.name.as_str()));
    match r.pairs.iter().map(|p| p.nodes.len()).max() {
        Some(per) => format!("{}, {per} per pair", names.len()),
        None => names.len().to_string(),
    }
}

fn pairs(doc: &Document, out: &mut Vec<Block>) {
    for (index, run) in doc.runs.iter().enumerate() {
        let record = &run.record;
        if record.pairs.is_empty() && record.nodes.is_empty() {
            continue;
        }
        out.push(Block::Heading(2, format!("Node pairs: {}", run.label)));
        let failed: Vec<String> = record
            .pairs
            .iter()
            .filter(|p| p.status != "pass")
            .map(|p| {
                let why = p
                    .message
                    .as_deref()
                    .map_or(String::new(), |m| format!(": {m}"));
                format!("{} ({}){why}", p.name, p.status)
            })
            .collect();
        let mut verdicts: Vec<&crate::results::NodeResult> = record.nodes.iter().collect();
        verdicts.sort_by_key(|n| (verdict_rank(&n.verdict), n.name.clone()));
        if verdicts.iter().any(|n| n.verdict != "pass") {
            let rows = verdicts
                .iter()
                .filter(|n| n.verdict != "pass")
                .map(|n| {
                    vec![
                        n.name.clone(),
                        n.verdict.clone(),
                        n.pool.clone().unwrap_or_default(),
                        n.reason.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            let passed = verdicts.iter().filter(|n| n.verdict == "pass").count();
            out.push(Block::Paragraph(format!(
                "Node verdicts: {passed} of {} nodes passed; the others:",
                verdicts.len()
            )));
            out.push(table(&["node", "verdict", "pool", "why"], rows));
        }
        out.push(Block::Paragraph(format!(
            "{} pairs over {} nodes; {} did not pass.",
            record.pairs.len(),
            PairMatrix::of(record, "").nodes.len(),
            failed.len()
        )));
        if !failed.is_empty() {
            out.push(Block::List(failed));
        }
        for kind in kinds(doc) {
            let PlotKind::Heatmap { run, op } = &kind else {
                continue;
            };
            if *run != index {
                continue;
            }
            let m = PairMatrix::of(record, op);
            let rows = m
                .node_scores()
                .iter()
                .take(10)
                .map(|(node, score)| {
                    let i = m.nodes.iter().position(|n| n == node).unwrap_or(0);
                    let worst = (0..m.nodes.len())
                        .filter_map(|j| match m.get(i, j)? {
                            Cell::Busbw(v) => Some((j, v)),
                            // Below every measured pair; shown as failed, not as 0 GB/s.
                            Cell::Failed => Some((j, f64::NEG_INFINITY)),
                        })
                        .min_by(|a, b| a.1.total_cmp(&b.1))
                        .map_or("-".into(), |(j, v)| {
                            if v.is_finite() {
                                format!("{} ({} GB/s)", short(&m.nodes[j], 30), num(v))
                            } else {
                                format!("{} (did not pass)", short(&m.nodes[j], 30))
                            }
                        });
                    vec![format!("{} {node}", i + 1), num(*score), worst]
                })
                .collect();
            out.push(Block::Heading(
                3,
                format!("Slowest nodes, {op} at {}", size_label(m.bytes)),
            ));
            out.push(table(
                &[
                    "node",
                    "median busbw of its pairs (GB/s)",
                    "its slowest pair",
                ],
                rows,
            ));
        }
    }
}

/// Worst first: nodes that failed, then those that could not be cleared.
fn verdict_rank(verdict: &str) -> u8 {
    match verdict {
        "fail" => 0,
        "suspect" => 1,
        "inconclusive" => 2,
        "ineligible" => 3,
        "untested" => 4,
        "pass" => 6,
        _ => 5,
    }
}

/// `14.2 µs`, `1.69 ms`, `25.9 ms`.
fn time(us: f64) -> String {
    if us >= 1000.0 {
        format!("{} ms", num(us / 1000.0))
    } else {
        format!("{} µs", num(us))
    }
}

fn table(headers: &[&str], mut rows: Vec<Vec<String>>) -> Block {
    let total = rows.len();
    if total > MAX_TABLE_ROWS {
        rows.truncate(MAX_TABLE_ROWS);
        let mut note = vec![format!(
            "… {} more rows in report.json",
            total - MAX_TABLE_ROWS
        )];
        note.resize(headers.len(), String::new());
        rows.push(note);
    }
    Block::Table(Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    })
}
