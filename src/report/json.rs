//! `report.json` (`netcheck.report.v1`): what the report shows, as data: per run the curves
//! with % of line rate and the change against the baseline, the pair matrices and the slowest
//! nodes, and the gate verdict when there is one.

use serde_json::{Value, json};

use super::model::{Series, nodes_of, series_of};
use super::plot::heatmap::{Cell, PairMatrix, ops};
use super::{Document, Exporter, Run};
use crate::error::Result;

pub const REPORT_SCHEMA: &str = "netcheck.report.v1";

pub struct Json;

impl Exporter for Json {
    fn file_name(&self) -> String {
        "report.json".into()
    }

    fn render(&self, doc: &Document) -> Result<Vec<u8>> {
        let baseline: Vec<Series> = doc
            .baseline
            .as_ref()
            .map(|b| series_of(&b.record))
            .unwrap_or_default();
        let value = json!({
            "schema": REPORT_SCHEMA,
            "tool": crate::results::ToolInfo::this(),
            "generated_at": crate::results::now_rfc3339(),
            "tolerance_pct": doc.tolerance_pct,
            "runs": doc.runs.iter().map(|r| run(doc, r, &baseline)).collect::<Vec<_>>(),
            "baseline": doc.baseline.as_ref().map(|b| json!({"label": b.label, "origin": b.origin})),
            "gate": doc.gate,
        });
        let mut text = serde_json::to_string_pretty(&value).expect("report JSON serializes");
        text.push('\n');
        Ok(text.into_bytes())
    }
}

fn run(doc: &Document, run: &Run, baseline: &[Series]) -> Value {
    let r = &run.record;
    let ceiling = doc.ceiling(run);
    let series: Vec<Value> = series_of(r)
        .iter()
        .map(|s| {
            let base = baseline
                .iter()
                .find(|b| b.op == s.op && b.dtype == s.dtype && b.in_place == s.in_place);
            let points: Vec<Value> = s
                .points
                .iter()
                .map(|p| {
                    let base_busbw = base.and_then(|b| b.at(p.bytes)).and_then(|q| q.busbw);
                    json!({
                        "bytes": p.bytes,
                        "busbw_gbs": p.busbw,
                        "busbw_min_gbs": p.busbw_min,
                        "busbw_max_gbs": p.busbw_max,
                        "pct_of_line_rate": ceiling.as_ref().and_then(|c| p.busbw.map(|v| v / c.gbs * 100.0)),
                        "baseline_busbw_gbs": base_busbw,
                        "vs_baseline_pct": match (p.busbw, base_busbw) {
                            (Some(v), Some(b)) if b > 0.0 => Some((v - b) / b * 100.0),
                            _ => None,
                        },
                        "time_us": p.time,
                        "wrong": p.wrong,
                    })
                })
                .collect();
            json!({
                "op": s.op,
                "dtype": s.dtype,
                "placement": s.placement(),
                "groups": s.groups,
                "points": points,
            })
        })
        .collect();
    let pairs: Vec<Value> = ops(r)
        .iter()
        .map(|op| {
            let m = PairMatrix::of(r, op);
            let cells: Vec<Value> = m
                .cells
                .iter()
                .map(|((a, b), cell)| {
                    json!({
                        "nodes": [m.nodes[*a], m.nodes[*b]],
                        "busbw_gbs": match cell { Cell::Busbw(v) => Some(*v), Cell::Failed => None },
                        "failed": *cell == Cell::Failed || m.not_passed.contains(&(*a, *b)),
                    })
                })
                .collect();
            let slowest: Vec<Value> = m
                .node_scores()
                .iter()
                .map(|(node, score)| json!({"node": node, "median_busbw_gbs": score}))
                .collect();
            json!({"op": op, "bytes": m.bytes, "nodes": m.nodes, "cells": cells, "nodes_by_busbw": slowest})
        })
        .collect();
    json!({
        "label": run.label,
        "origin": run.origin,
        "source": r.source,
        "status": r.status,
        "started_at": r.started_at,
        "world_size": r.world_size,
        "nodes": nodes_of(r),
        "nccl": r.nccl,
        "hardware": doc.hardware(run),
        "line_rate": ceiling.map(|c| json!({"gbs": c.gbs, "label": c.label})),
        "transport": r.analysis.as_ref().map(|a| json!({
            "inter_node_transport": a.inter_node_transport,
            "socket_fallback": a.socket_fallback,
            "gdr": a.gdr,
            "verdict": a.verdict,
        })),
        "series": series,
        "pair_matrices": pairs,
        "node_verdicts": r.nodes,
        "errors": r.errors,
    })
}
