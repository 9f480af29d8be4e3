//! Time per operation against size (log–log): the median (or nccl-tests' mean when no
//! per-iteration samples exist) as a line, p99 dashed, min–max shaded; out-of-place only, so
//! the tails stay readable.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::bandwidth::{baseline_series, curves};
use super::style::{self, LegendEntry, Mark, log2, time_tick};
use super::{DrawResult, PlotKind};
use crate::report::Document;
use crate::report::model::SeriesPoint;

/// The central time of a point: p50 when recorded, else the mean.
fn center(p: &SeriesPoint) -> Option<f64> {
    p.time.p50.or(Some(p.time.mean)).filter(|t| *t > 0.0)
}

pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, doc: &Document) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (chart_area, legend_area) = style::split(root);
    let all = curves(doc);
    let has_out_of_place = |op: &str| all.iter().any(|c| c.series.op == op && !c.series.in_place);
    let curves: Vec<_> = all
        .iter()
        .filter(|c| !c.series.in_place || !has_out_of_place(&c.series.op))
        .collect();
    let ops: Vec<&str> = curves.iter().map(|c| c.series.op.as_str()).collect();
    let baseline = baseline_series(doc, &ops);
    let config = doc.effective_config();
    let thresholds = style::thresholds(config.as_ref(), &ops, |t| t.max_latency_us);

    let times = curves
        .iter()
        .flat_map(|c| c.series.points.iter())
        .flat_map(|p| [center(p), p.time.min, p.time.max, p.time.p99])
        .chain(baseline.iter().flat_map(|s| s.points.iter().map(center)))
        .chain(thresholds.iter().map(|(y, _)| Some(*y)))
        .flatten()
        .filter(|t| *t > 0.0);
    let (lo, hi) = times.fold((f64::MAX, 0.0f64), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let (lo, hi) = if lo > hi {
        (1.0, 1000.0)
    } else {
        (lo / 1.5, hi * 1.5)
    };
    let x_axis = style::size_axis(
        curves
            .iter()
            .flat_map(|c| c.series.points.iter().map(|p| p.bytes)),
    );

    let mut chart = style::size_chart(
        &chart_area,
        &PlotKind::Latency.title(doc),
        &x_axis,
        (lo..hi).log_scale(),
        80,
        "time per operation (log scale)",
        &time_tick,
    )?;
    let mut legend = Vec::new();

    for s in &baseline {
        let pts: Vec<_> = s
            .points
            .iter()
            .filter(|p| p.bytes > 0)
            .filter_map(|p| Some((log2(p.bytes), center(p)?)))
            .collect();
        style::draw_baseline(&mut chart, pts)?;
    }
    if let (Some(b), false) = (&doc.baseline, baseline.is_empty()) {
        legend.push(LegendEntry::new(
            style::BASELINE,
            Mark::Dotted,
            format!("baseline: {} (median/mean)", b.label),
        ));
    }
    style::draw_thresholds(
        &mut chart,
        &thresholds,
        &mut legend,
        "gate threshold: maximum time",
    )?;

    let mut banded = false;
    for c in &curves {
        let points = &c.series.points;
        let band: Vec<_> = points
            .iter()
            .filter(|p| p.bytes > 0)
            .filter_map(|p| Some((log2(p.bytes), p.time.max?)))
            .chain(
                points
                    .iter()
                    .rev()
                    .filter(|p| p.bytes > 0)
                    .filter_map(|p| Some((log2(p.bytes), p.time.min?))),
            )
            .collect();
        if band.len() >= 2 * points.len() && !points.is_empty() {
            chart.draw_series(std::iter::once(Polygon::new(band, c.color.mix(0.15))))?;
            banded = true;
        }
        let has_p50 = points.iter().any(|p| p.time.p50.is_some());
        let pts: Vec<_> = points
            .iter()
            .filter(|p| p.bytes > 0)
            .filter_map(|p| Some((log2(p.bytes), center(p)?)))
            .collect();
        chart.draw_series(LineSeries::new(pts.clone(), c.color.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.color.filled())))?;
        let stat = if has_p50 { "p50" } else { "mean" };
        legend.push(LegendEntry::new(
            c.color,
            Mark::Solid,
            format!("{} ({stat})", c.label),
        ));
        let p99: Vec<_> = points
            .iter()
            .filter(|p| p.bytes > 0)
            .filter_map(|p| Some((log2(p.bytes), p.time.p99?)))
            .collect();
        if !p99.is_empty() {
            chart.draw_series(DashedLineSeries::new(p99, 8, 5, c.color.stroke_width(2)))?;
            legend.push(LegendEntry::new(
                c.color,
                Mark::Dashed,
                format!("{} (p99)", c.label),
            ));
        }
    }
    if banded {
        legend.push(LegendEntry::new(
            style::BASELINE,
            Mark::Band,
            "shaded: fastest to slowest iteration",
        ));
    }
    style::legend(&legend_area, &legend)
}
