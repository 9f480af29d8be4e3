//! Bus bandwidth against size: one line per run × op (solid out-of-place, dashed in-place),
//! the spread over pairs, the baseline with its tolerance band, the thresholds, the hardware
//! ceiling and published reference points.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{self, LegendEntry, Mark, log2};
use super::{DrawResult, PlotKind};
use crate::report::Document;
use crate::report::model::{Series, plot_series, series_of, size_label};

/// A curve to draw, with its colour and legend text.
pub(super) struct Curve {
    pub color: RGBColor,
    pub series: Series,
    pub label: String,
}

pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, doc: &Document) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (chart_area, legend_area) = style::split(root);
    let curves = curves(doc);
    let config = doc.effective_config();
    let ops: Vec<&str> = curves.iter().map(|c| c.series.op.as_str()).collect();
    let baseline = baseline_series(doc, &ops);
    let references: Vec<_> = config
        .iter()
        .flat_map(|c| c.references.iter())
        .filter(|r| ops.contains(&r.op.as_str()))
        .collect();
    let thresholds = style::thresholds(config.as_ref(), &ops, |t| t.min_busbw_gbs);

    let sizes = curves
        .iter()
        .flat_map(|c| c.series.points.iter().map(|p| p.bytes))
        .chain(references.iter().map(|r| r.bytes.0));
    let x_axis = style::size_axis(sizes);
    let data_max = curves
        .iter()
        .flat_map(|c| c.series.points.iter())
        .filter_map(|p| p.busbw_max.or(p.busbw))
        .chain(
            baseline
                .iter()
                .flat_map(|s| s.points.iter().filter_map(|p| p.busbw)),
        )
        .chain(thresholds.iter().map(|(y, _)| *y))
        .chain(references.iter().map(|r| r.busbw_gbs))
        .fold(0.0f64, f64::max);
    let mut ceilings = Vec::new();
    for run in &doc.runs {
        if let Some(c) = doc.ceiling(run)
            && !ceilings.contains(&c)
        {
            ceilings.push(c);
        }
    }
    // A ceiling far above the data would flatten every curve; name it instead of drawing it.
    let (drawn, off_chart): (Vec<_>, Vec<_>) = ceilings
        .into_iter()
        .partition(|c| c.gbs <= 3.0 * data_max.max(1e-9));
    let y_max = drawn
        .iter()
        .map(|c| c.gbs)
        .fold(data_max, f64::max)
        .max(1e-3)
        * 1.08;

    let gbs_label = style::gbs_tick(y_max);
    let mut chart = style::size_chart(
        &chart_area,
        &PlotKind::Bandwidth.title(doc),
        &x_axis,
        0f64..y_max,
        72,
        "bus bandwidth (GB/s)",
        &gbs_label,
    )?;
    let mut legend = Vec::new();

    let tolerance = doc.tolerance_pct / 100.0;
    for s in &baseline {
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.bytes > 0)
            .filter_map(|p| Some((log2(p.bytes), p.busbw?)))
            .collect();
        let band = pts
            .iter()
            .map(|&(x, y)| (x, y))
            .chain(pts.iter().rev().map(|&(x, y)| (x, y * (1.0 - tolerance))))
            .collect::<Vec<_>>();
        chart.draw_series(std::iter::once(Polygon::new(
            band,
            style::BASELINE.mix(0.18),
        )))?;
        style::draw_baseline(&mut chart, pts)?;
    }
    if let Some(b) = &doc.baseline
        && !baseline.is_empty()
    {
        legend.push(LegendEntry::new(
            style::BASELINE,
            Mark::Dotted,
            format!("baseline: {}", b.label),
        ));
        legend.push(LegendEntry::new(
            style::BASELINE,
            Mark::Band,
            format!("baseline − {}% (gate tolerance)", doc.tolerance_pct),
        ));
    }

    style::draw_thresholds(
        &mut chart,
        &thresholds,
        &mut legend,
        "gate threshold: minimum busbw",
    )?;

    for c in &drawn {
        chart.draw_series(DashedLineSeries::new(
            vec![(x_axis.range.start, c.gbs), (x_axis.range.end, c.gbs)],
            10,
            6,
            style::CEILING.stroke_width(2),
        ))?;
        legend.push(LegendEntry::new(style::CEILING, Mark::Dashed, &c.label));
    }
    for c in &off_chart {
        legend.push(LegendEntry::new(
            style::CEILING,
            Mark::Dashed,
            format!(
                "{} (off the chart: peak is {:.1}% of it)",
                c.label,
                data_max / c.gbs * 100.0
            ),
        ));
    }

    for c in &curves {
        let pts: Vec<(f64, f64)> = c
            .series
            .points
            .iter()
            .filter(|p| p.bytes > 0)
            .filter_map(|p| Some((log2(p.bytes), p.busbw?)))
            .collect();
        if c.series.groups > 1 {
            let band: Vec<(f64, f64)> = c
                .series
                .points
                .iter()
                .filter(|p| p.bytes > 0)
                .filter_map(|p| Some((log2(p.bytes), p.busbw_max?)))
                .chain(
                    c.series
                        .points
                        .iter()
                        .rev()
                        .filter(|p| p.bytes > 0)
                        .filter_map(|p| Some((log2(p.bytes), p.busbw_min?))),
                )
                .collect();
            chart.draw_series(std::iter::once(Polygon::new(band, c.color.mix(0.15))))?;
        }
        let line = c.color.stroke_width(2);
        if c.series.in_place {
            chart.draw_series(DashedLineSeries::new(pts.clone(), 8, 5, line))?;
        } else {
            chart.draw_series(LineSeries::new(pts.clone(), line))?;
        }
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.color.filled())))?;
        let mark = if c.series.in_place {
            Mark::Dashed
        } else {
            Mark::Solid
        };
        legend.push(LegendEntry::new(c.color, mark, &c.label));
    }
    if let Some(series) = curves
        .iter()
        .map(|c| &c.series)
        .filter(|s| s.groups > 1)
        .max_by_key(|s| s.groups)
    {
        legend.push(LegendEntry::new(
            style::BASELINE,
            Mark::Band,
            format!(
                "shaded: min–max over up to {} {}; line: their median",
                series.groups,
                series.aggregated()
            ),
        ));
    }

    for (i, r) in references.iter().enumerate() {
        // Each reference its own colour, so the legend tells the crosses apart.
        let color = REFERENCE_COLORS[i % REFERENCE_COLORS.len()];
        chart.draw_series(std::iter::once(Cross::new(
            (log2(r.bytes.0), r.busbw_gbs),
            7,
            color.stroke_width(2),
        )))?;
        let nodes = r.nodes.map_or(String::new(), |n| format!(", {n} node(s)"));
        legend.push(LegendEntry::new(
            color,
            Mark::Cross,
            format!(
                "published: {} {}{nodes}: {:.0} GB/s",
                r.op,
                size_label(r.bytes.0),
                r.busbw_gbs
            ),
        ));
    }
    style::legend(&legend_area, &legend)
}

/// The colours of published reference markers, one per reference (black first).
pub(super) const REFERENCE_COLORS: [RGBColor; 5] = [
    RGBColor(0, 0, 0),
    RGBColor(150, 40, 40),
    RGBColor(30, 110, 50),
    RGBColor(110, 50, 140),
    RGBColor(160, 110, 0),
];

/// The baseline's out-of-place series of the plotted ops (none without a baseline).
pub(super) fn baseline_series(doc: &Document, ops: &[&str]) -> Vec<Series> {
    doc.baseline
        .as_ref()
        .map(|b| series_of(&b.record))
        .unwrap_or_default()
        .into_iter()
        .filter(|s| !s.in_place && ops.contains(&s.op.as_str()))
        .collect()
}

/// The runs' curves with colours: one colour per run × op × dtype, shared by both placements.
pub(super) fn curves(doc: &Document) -> Vec<Curve> {
    let several_runs = doc.runs.len() > 1;
    let mut all: Vec<(usize, Series)> = vec![];
    let mut failed: Vec<(usize, String, Series)> = vec![];
    for (i, r) in doc.runs.iter().enumerate() {
        let (passing, failing) = plot_series(&r.record);
        all.extend(passing.into_iter().map(|s| (i, s)));
        failed.extend(failing.into_iter().map(|(pair, s)| (i, pair, s)));
    }
    if all.is_empty() && failed.is_empty() {
        return vec![];
    }
    let first_dtype = all
        .first()
        .map(|(_, s)| &s.dtype)
        .or(failed.first().map(|(_, _, s)| &s.dtype))
        .cloned()
        .unwrap_or_default();
    let several_dtypes = all
        .iter()
        .map(|(_, s)| &s.dtype)
        .chain(failed.iter().map(|(_, _, s)| &s.dtype))
        .any(|d| *d != first_dtype);
    let mut keys: Vec<(usize, String, String)> = Vec::new();
    let mut list: Vec<Curve> = all
        .into_iter()
        .map(|(run, series)| {
            let key = (run, series.op.clone(), series.dtype.clone());
            let index = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                keys.len() - 1
            });
            // A run named after its collective (`ingest`'s `file: all_gather`) is not followed
            // by the op again.
            let run_label = several_runs.then(|| doc.runs[run].label.as_str());
            let mut label = match run_label {
                Some(l) if l.ends_with(series.op.as_str()) => l.to_string(),
                Some(l) => format!("{l}: {}", series.op),
                None => series.op.clone(),
            };
            if several_dtypes {
                label = format!("{label} {}", series.dtype);
            }
            label = format!("{label}, {}", series.placement());
            Curve {
                color: style::series_color(index),
                series,
                label,
            }
        })
        .collect();
    // Failed pairs apart, in the threshold's red, each named.
    for (run, pair, series) in failed {
        let mut label = format!("FAILED pair {pair}: {}", series.op);
        if several_dtypes {
            label = format!("{label} {}", series.dtype);
        }
        if several_runs {
            label = format!("{}: {label}", doc.runs[run].label);
        }
        label = format!("{label}, {}", series.placement());
        list.push(Curve {
            color: style::THRESHOLD,
            series,
            label,
        });
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{ResultRow, Run, RunRecord};

    fn run(label: &str, op: &str) -> Run {
        let mut r = RunRecord::new("ingest");
        r.label = Some(label.into());
        r.rows = vec![ResultRow {
            count: 1 << 18,
            algbw_gbs: Some(1.0),
            busbw_gbs: Some(1.0),
            ..ResultRow::for_test(op, 1 << 20, false, 10.0)
        }];
        Run::new(r, "r.json")
    }

    #[test]
    fn a_run_named_after_its_op_does_not_repeat_it_in_the_legend() {
        let doc = Document::new(vec![
            run("two_runs.log run 1: all_gather", "all_gather"),
            run("nightly", "reduce_scatter"),
        ]);
        let labels: Vec<String> = curves(&doc).into_iter().map(|c| c.label).collect();
        assert_eq!(
            labels,
            [
                "two_runs.log run 1: all_gather, out-of-place",
                "nightly: reduce_scatter, out-of-place"
            ]
        );
    }

    #[test]
    fn a_failed_pair_is_drawn_apart_not_in_the_band() {
        let pair = |name: &str, status: &str, busbw: f64| {
            let mut rows = run("x", "all_gather").record.rows;
            rows[0].busbw_gbs = Some(busbw);
            crate::results::PairResult {
                name: name.into(),
                nodes: name.split('+').map(str::to_string).collect(),
                status: status.into(),
                message: None,
                rows,
                analysis: None,
            }
        };
        let mut record = RunRecord::new("launch");
        record.pairs = vec![
            pair("a+b", "pass", 180.0),
            pair("c+d", "pass", 190.0),
            pair("e+f", "fail", 5.0),
        ];
        let doc = Document::new(vec![Run::new(record, "r.json")]);
        let curves = curves(&doc);
        assert_eq!(
            curves.len(),
            2,
            "{:?}",
            curves.iter().map(|c| &c.label).collect::<Vec<_>>()
        );
        let band = &curves[0].series.points[0];
        assert_eq!((band.busbw_min, band.busbw_max), (Some(180.0), Some(190.0)));
        assert_eq!(curves[1].label, "FAILED pair e+f: all_gather, out-of-place");
        assert_eq!(curves[1].series.points[0].busbw, Some(5.0));
    }
}
