//! Node × node heatmap of a multi-pair run: each cell is the pair's busbw at the largest size
//! most pairs measured (out-of-place). Failed pairs are red, unmeasured ones grey, and the panel
//! lists the nodes whose pairs are slowest, which is the question an SRE asks first.

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::DrawResult;
use super::style::{self, font};
use crate::report::Document;
use crate::report::model::size_label;
use crate::results::RunRecord;
use crate::results::rows::median;

const FAILED: RGBColor = RGBColor(200, 30, 30);
const MISSING: RGBColor = RGBColor(235, 235, 235);

/// The ops a heatmap can be drawn for: those measured by at least two node pairs.
pub fn ops(record: &RunRecord) -> Vec<String> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for pair in record.pairs.iter().filter(|p| p.nodes.len() == 2) {
        let mut seen: Vec<&str> = pair.rows.iter().map(|r| r.op.as_str()).collect();
        seen.dedup();
        for op in seen {
            *count.entry(op).or_default() += 1;
        }
    }
    let failed_pairs = record.pairs.iter().filter(|p| p.rows.is_empty()).count();
    count
        .into_iter()
        .filter(|(_, n)| n + failed_pairs >= 2)
        .map(|(op, _)| op.to_string())
        .collect()
}

/// The matrix behind the picture (also used by the Markdown and JSON exporters).
#[derive(Debug, Clone, PartialEq)]
pub struct PairMatrix {
    pub nodes: Vec<String>,
    pub bytes: u64,
    /// busbw per node pair (i < j); absent when the pair was not measured.
    pub cells: BTreeMap<(usize, usize), Cell>,
    /// Pairs that measured but did not pass (e.g. the transport check failed).
    pub not_passed: std::collections::BTreeSet<(usize, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell {
    Busbw(f64),
    Failed,
}

impl PairMatrix {
    pub fn of(record: &RunRecord, op: &str) -> PairMatrix {
        let mut nodes: Vec<String> = record
            .pairs
            .iter()
            .flat_map(|p| p.nodes.iter().cloned())
            .collect();
        nodes.sort();
        nodes.dedup();
        let mut by_size: BTreeMap<u64, usize> = BTreeMap::new();
        for pair in &record.pairs {
            for r in pair.rows.iter().filter(|r| r.op == op && !r.in_place) {
                *by_size.entry(r.bytes).or_default() += 1;
            }
        }
        let bytes = by_size
            .iter()
            .max_by_key(|(bytes, n)| (**n, **bytes))
            .map_or(0, |(b, _)| *b);
        let index = |n: &str| nodes.iter().position(|x| x == n).unwrap_or(0);
        let mut cells = BTreeMap::new();
        let mut not_passed = std::collections::BTreeSet::new();
        for pair in record.pairs.iter().filter(|p| p.nodes.len() == 2) {
            let (a, b) = (index(&pair.nodes[0]), index(&pair.nodes[1]));
            let key = (a.min(b), a.max(b));
            let busbw = pair
                .rows
                .iter()
                .find(|r| r.op == op && !r.in_place && r.bytes == bytes)
                .and_then(|r| r.busbw_gbs);
            let cell = match busbw {
                Some(v) if pair.status == "pass" || pair.status == "fail" => Cell::Busbw(v),
                _ => Cell::Failed,
            };
            if pair.status != "pass" && matches!(cell, Cell::Busbw(_)) {
                not_passed.insert(key);
            }
            cells.insert(key, cell);
        }
        PairMatrix {
            nodes,
            bytes,
            cells,
            not_passed,
        }
    }

    pub fn get(&self, i: usize, j: usize) -> Option<Cell> {
        self.cells.get(&(i.min(j), i.max(j))).copied()
    }

    /// Each node's median busbw over its measured pairs, slowest first; nodes in a failed pair
    /// count that pair as 0.
    pub fn node_scores(&self) -> Vec<(String, f64)> {
        let mut scores: Vec<(String, f64)> = (0..self.nodes.len())
            .filter_map(|i| {
                let values: Vec<f64> = (0..self.nodes.len())
                    .filter_map(|j| match self.get(i, j)? {
                        Cell::Busbw(v) => Some(v),
                        Cell::Failed => Some(0.0),
                    })
                    .collect();
                Some((self.nodes[i].clone(), median(values)?))
            })
            .collect();
        scores.sort_by(|a, b| a.1.total_cmp(&b.1));
        scores
    }

    pub fn max(&self) -> f64 {
        self.cells
            .values()
            .filter_map(|c| match c {
                Cell::Busbw(v) => Some(*v),
                Cell::Failed => None,
            })
            .fold(0.0, f64::max)
    }
}

/// Viridis, five stops: dark (slow) to yellow (fast).
fn color(fraction: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let f = fraction.clamp(0.0, 1.0) * 4.0;
    let i = (f.floor() as usize).min(3);
    let t = f - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    doc: &Document,
    run: usize,
    op: &str,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let record = &doc.runs[run].record;
    let m = PairMatrix::of(record, op);
    let (chart, panel) = style::split(root);
    let title = format!(
        "{op} busbw by node pair at {} (out-of-place)",
        size_label(m.bytes)
    );
    chart.draw(&Text::new(title, (16, 12), font(22)))?;

    let n = m.nodes.len().max(1);
    let named = n <= 32;
    let label_width = if named { 190 } else { 40 };
    let (width, height) = chart.dim_in_pixel();
    let side = (width as i32 - label_width - 30).min(height as i32 - 90);
    let cell = (side / n as i32).max(1);
    let (x0, y0) = (label_width + 10, 60);
    let max = m.max().max(1e-9);
    let label_every = n.div_ceil(32);
    let small = (cell - 2).clamp(9, 14) as u32;

    for i in 0..n {
        for j in 0..n {
            let fill = match (i == j, m.get(i, j)) {
                (true, _) => WHITE,
                (_, Some(Cell::Busbw(v))) => color(v / max),
                (_, Some(Cell::Failed)) => FAILED,
                (_, None) => MISSING,
            };
            let (x, y) = (x0 + j as i32 * cell, y0 + i as i32 * cell);
            chart.draw(&Rectangle::new(
                [(x, y), (x + cell - 1, y + cell - 1)],
                fill.filled(),
            ))?;
            if m.not_passed.contains(&(i.min(j), i.max(j))) {
                let inset = (cell / 8).clamp(1, 3);
                chart.draw(&Rectangle::new(
                    [
                        (x + inset, y + inset),
                        (x + cell - 1 - inset, y + cell - 1 - inset),
                    ],
                    FAILED.stroke_width(inset as u32 + 1),
                ))?;
            }
            if n <= 12
                && let Some(Cell::Busbw(v)) = m.get(i, j)
                && i != j
            {
                let ink = if v / max > 0.6 { BLACK } else { WHITE };
                chart.draw(&Text::new(
                    format!("{v:.0}"),
                    (x + 8, y + cell / 2 - 7),
                    ("sans-serif", 13).into_font().color(&ink),
                ))?;
            }
        }
        if i % label_every == 0 {
            let y = y0 + i as i32 * cell + cell / 2 - small as i32 / 2;
            let label = if named {
                format!("{} {}", i + 1, short(&m.nodes[i], 20))
            } else {
                format!("{}", i + 1)
            };
            chart.draw(&Text::new(label, (8, y), font(small)))?;
            let x = x0 + i as i32 * cell + cell / 2 - 4;
            chart.draw(&Text::new(
                format!("{}", i + 1),
                (x, y0 - small as i32 - 4),
                font(small.min(12)),
            ))?;
        }
    }

    // Colour bar and the slowest nodes.
    let (bx, by, bh) = (12, 60, 240);
    for k in 0..bh {
        let f = 1.0 - k as f64 / bh as f64;
        panel.draw(&Rectangle::new(
            [(bx, by + k), (bx + 22, by + k + 1)],
            color(f).filled(),
        ))?;
    }
    panel.draw(&Text::new(
        format!("{max:.1} GB/s"),
        (bx + 30, by - 6),
        font(14),
    ))?;
    panel.draw(&Text::new("0 GB/s", (bx + 30, by + bh - 10), font(14)))?;
    let mut y = by + bh + 20;
    for (fill, text) in [
        (FAILED, "pair failed, no result"),
        (MISSING, "not measured"),
    ] {
        panel.draw(&Rectangle::new([(bx, y), (bx + 22, y + 14)], fill.filled()))?;
        panel.draw(&Text::new(text, (bx + 30, y), font(14)))?;
        y += 22;
    }
    panel.draw(&Rectangle::new(
        [(bx, y), (bx + 22, y + 14)],
        FAILED.stroke_width(3),
    ))?;
    panel.draw(&Text::new(
        "measured, but the pair failed",
        (bx + 30, y),
        font(14),
    ))?;
    y += 22;
    y += 10;
    panel.draw(&Text::new(
        "slowest nodes (median of pairs):",
        (bx, y),
        font(14),
    ))?;
    for (node, score) in m.node_scores().iter().take(8) {
        y += 20;
        let line = format!("{} {score:.1} GB/s", short(node, 26));
        panel.draw(&Text::new(line, (bx + 6, y), font(13)))?;
    }
    Ok(())
}

/// The host part of a node name (before the first dot), cut to `max` characters.
pub fn short(name: &str, max: usize) -> String {
    let host = name.split('.').next().unwrap_or(name);
    if host.chars().count() <= max {
        host.to_string()
    } else {
        host.chars().take(max - 1).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_run_from_dark_to_yellow() {
        assert_eq!(color(0.0), RGBColor(68, 1, 84));
        assert_eq!(color(1.0), RGBColor(253, 231, 37));
        assert_eq!(color(2.0), color(1.0));
    }

    #[test]
    fn node_names_keep_their_host_part() {
        assert_eq!(short("ip-10-0-1-23.ec2.internal", 20), "ip-10-0-1-23");
        assert_eq!(short("gpu-node-with-a-long-name", 8), "gpu-nod…");
        assert_eq!(short("node-a", 12), "node-a");
    }
}
