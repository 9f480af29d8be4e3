//! What the plots share: colours, the log₂ size axis, and the legend panel beside the chart.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, DefaultFormatting, KeyPointHint, ValueFormatter};
use plotters::prelude::*;

use super::{DrawResult, WIDTH};
use crate::config::{BenchConfig, Threshold};
use crate::report::model::size_label;

/// Tableau-10: distinguishable, and readable on white.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
/// The colour of the `index`-th series: Tableau-10 first, then hues spaced by the golden angle
/// (darker and lighter in turn), so 11 or more series do not repeat a colour.
pub fn series_color(index: usize) -> RGBColor {
    if index < PALETTE.len() {
        return PALETTE[index];
    }
    let k = index - PALETTE.len();
    let hue = (k as f64 * 137.507_764 + 15.0) % 360.0;
    let lightness = if k.is_multiple_of(2) { 0.38 } else { 0.55 };
    hsl(hue, 0.7, lightness)
}

fn hsl(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let to = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(to(r), to(g), to(b))
}

pub const BASELINE: RGBColor = RGBColor(90, 90, 90);
pub const THRESHOLD: RGBColor = RGBColor(200, 20, 20);
pub const CEILING: RGBColor = RGBColor(0, 0, 0);

/// Width of the legend panel on the right of every chart.
pub const LEGEND_WIDTH: u32 = 360;

pub fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Solid,
    Dashed,
    Dotted,
    /// A shaded range.
    Band,
    /// A single marker (published reference points).
    Cross,
}

#[derive(Debug, Clone)]
pub struct LegendEntry {
    pub color: RGBColor,
    pub mark: Mark,
    pub text: String,
}

impl LegendEntry {
    pub fn new(color: RGBColor, mark: Mark, text: impl Into<String>) -> LegendEntry {
        LegendEntry {
            color,
            mark,
            text: text.into(),
        }
    }
}

/// Splits the canvas into the chart (left) and the legend panel (right).
pub fn split<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    root.split_horizontally(WIDTH - LEGEND_WIDTH)
}

/// Draws the legend entries top to bottom, long texts wrapped onto a second line; entries
/// that don't fit are counted, not drawn.
pub fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (_, height) = area.dim_in_pixel();
    let line_height = 19;
    let bottom = height as i32 - 30;
    let mut y = 60;
    for (i, e) in entries.iter().enumerate() {
        let lines = wrap(&e.text, 38);
        if y + line_height * lines.len() as i32 > bottom {
            let more = format!("… {} more (see report.json)", entries.len() - i);
            area.draw(&Text::new(more, (8, y - 8), font(14)))?;
            break;
        }
        sample(area, e, y)?;
        for (k, line) in lines.iter().enumerate() {
            area.draw(&Text::new(
                line.clone(),
                (52, y - 8 + k as i32 * line_height),
                font(14),
            ))?;
        }
        y += line_height * lines.len() as i32 + 6;
    }
    Ok(())
}

/// The line, band or marker of a legend entry, centred on `y`.
fn sample<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, e: &LegendEntry, y: i32) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (x0, x1) = (8, 44);
    match e.mark {
        Mark::Solid => area.draw(&PathElement::new(
            vec![(x0, y), (x1, y)],
            e.color.stroke_width(3),
        ))?,
        Mark::Dashed | Mark::Dotted => {
            let (dash, gap) = if e.mark == Mark::Dashed {
                (8, 5)
            } else {
                (3, 4)
            };
            let mut x = x0;
            while x < x1 {
                let end = (x + dash).min(x1);
                area.draw(&PathElement::new(
                    vec![(x, y), (end, y)],
                    e.color.stroke_width(3),
                ))?;
                x += dash + gap;
            }
        }
        Mark::Band => area.draw(&Rectangle::new(
            [(x0, y - 7), (x1, y + 7)],
            e.color.mix(0.25).filled(),
        ))?,
        Mark::Cross => area.draw(&Cross::new((x0 + 18, y), 6, e.color.stroke_width(2)))?,
    }
    Ok(())
}

/// Splits a legend text into at most three lines of about `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest = text.trim();
    while rest.chars().count() > width && lines.len() < 2 {
        let cut = rest
            .char_indices()
            .filter(|(i, c)| *c == ' ' && rest[..*i].chars().count() <= width)
            .map(|(i, _)| i)
            .next_back()
            .unwrap_or_else(|| {
                rest.char_indices()
                    .nth(width)
                    .map_or(rest.len(), |(i, _)| i)
            });
        lines.push(rest[..cut].trim_end().to_string());
        rest = rest[cut..].trim_start();
    }
    lines.push(truncate(rest, width));
    lines
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        text.chars().take(max - 1).collect::<String>() + "…"
    }
}

/// The x position of a size on the log₂ axis. Size 0 has none (callers leave it out rather
/// than draw it at 1 byte; the tables still list it).
pub fn log2(bytes: u64) -> f64 {
    (bytes.max(1) as f64).log2()
}

/// The size axis: log₂ of bytes, labelled at measured powers of two. plotters would put its
/// labels at round numbers of the log (2^15 = 32K); these ticks follow the sweep instead
/// (1K, 16K, 256K, ... for a ×4 sweep).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeAxis {
    pub range: Range<f64>,
    pub ticks: Vec<f64>,
}

impl Ranged for SizeAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = (value - self.range.start) / (self.range.end - self.range.start);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        let every = self.ticks.len().div_ceil(hint.max_num_points().max(1));
        let mut points: Vec<f64> = self.ticks.iter().step_by(every.max(1)).copied().collect();
        // The largest size is always labelled: it is the one people look for.
        if let (Some(&last), Some(&shown)) = (self.ticks.last(), points.last())
            && last > shown
        {
            let spacing = self.ticks.get(1).map_or(1.0, |t| t - self.ticks[0]) * every as f64;
            if points.len() > 1 && last - shown < 0.5 * spacing {
                points.pop();
            }
            points.push(last);
        }
        points
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// A chart whose x axis is the message size.
pub type SizeChart<'a, DB, Y> = ChartContext<'a, DB, Cartesian2d<SizeAxis, Y>>;

/// A chart over message sizes, as the bandwidth and latency plots draw it: the caption, the
/// size axis below, `y` at the left (`y_desc`, in a label area `y_label_area` wide, labelled by
/// `y_tick`) and the grey mesh.
pub fn size_chart<'a, DB, Y>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x_axis: &SizeAxis,
    y: Y,
    y_label_area: u32,
    y_desc: &str,
    y_tick: &dyn Fn(&f64) -> String,
) -> Result<SizeChart<'a, DB, Y::CoordDescType>, Box<dyn std::error::Error>>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(caption, font(24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(x_axis.clone(), y)?;
    chart
        .configure_mesh()
        .x_labels(x_axis.ticks.len())
        .x_label_formatter(&size_tick)
        .y_label_formatter(y_tick)
        .x_desc("message size (bytes, log₂ scale)")
        .y_desc(y_desc)
        .axis_desc_style(font(16))
        .label_style(font(14))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(WHITE)
        .draw()?;
    Ok(chart)
}

/// A baseline's curve: dashed, in the baseline's colour.
pub fn draw_baseline<DB, Y>(chart: &mut SizeChart<'_, DB, Y>, points: Vec<(f64, f64)>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64>,
{
    chart.draw_series(DashedLineSeries::new(
        points,
        3,
        4,
        BASELINE.stroke_width(2),
    ))?;
    Ok(())
}

/// The axis for these sizes: padded a little, labelled at most 11 times, every k-th multiple
/// of the sweep's own step, starting at its smallest size.
pub fn size_axis(sizes: impl Iterator<Item = u64>) -> SizeAxis {
    let exponents: Vec<f64> = sizes.filter(|b| *b > 0).map(log2).collect();
    let (mut lo, mut hi) = exponents
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), e| (lo.min(*e), hi.max(*e)));
    if lo > hi {
        (lo, hi) = (10.0, 30.0);
    }
    // The largest measured size, a power of two or not (`-e 12G`, 1.5× sizes).
    let largest = exponents.iter().copied().fold(f64::MIN, f64::max);
    if hi - lo < 2.0 {
        (lo, hi) = (lo - 1.0, hi + 1.0);
    }
    // The sweep's step in powers of two (2 for ×4), from the whole powers it measured.
    let mut whole: Vec<i64> = exponents
        .iter()
        .filter(|e| (*e - e.round()).abs() < 1e-9)
        .map(|e| e.round() as i64)
        .collect();
    whole.sort_unstable();
    whole.dedup();
    let step = whole
        .windows(2)
        .map(|w| w[1] - w[0])
        .reduce(gcd)
        .unwrap_or(1)
        .max(1);
    let first = whole.first().map_or(lo.ceil(), |e| *e as f64);
    let span = hi - first;
    let mut stride = step as f64;
    while span / stride > 10.0 {
        stride += step as f64;
    }
    let mut ticks = Vec::new();
    let mut t = first;
    while t <= hi + 1e-9 {
        ticks.push(t);
        t += stride;
    }
    // The largest measured size gets a label even when the stride steps past it; it replaces
    // the previous one when the two would crowd each other.
    if let Some(&top) = Some(largest).filter(|t| *t > f64::MIN).as_ref()
        && ticks.last().is_some_and(|l| top > *l + 1e-9)
    {
        if ticks.len() > 1 && top - ticks[ticks.len() - 1] < stride / 2.0 {
            ticks.pop();
        }
        ticks.push(top);
    }
    SizeAxis {
        range: (lo - 0.3)..(hi + 0.3),
        ticks,
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// The thresholds of `config` that set `value` for one of the plotted `ops`, with that value.
pub fn thresholds<'a>(
    config: Option<&'a BenchConfig>,
    ops: &[&str],
    value: fn(&Threshold) -> Option<f64>,
) -> Vec<(f64, &'a Threshold)> {
    config
        .iter()
        .flat_map(|c| c.thresholds.iter())
        .filter(|t| t.op.as_deref().is_none_or(|op| ops.contains(&op)))
        .filter_map(|t| Some((value(t)?, t)))
        .collect()
}

/// Draws each threshold as a red segment over its size range, with one legend entry.
pub fn draw_thresholds<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<SizeAxis, Y>>,
    lines: &[(f64, &Threshold)],
    legend: &mut Vec<LegendEntry>,
    text: &str,
) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64>,
{
    let axis = chart.x_range();
    for (y, t) in lines {
        let (x0, x1) = threshold_span(t, &axis);
        chart.draw_series(LineSeries::new(
            vec![(x0, *y), (x1, *y)],
            THRESHOLD.stroke_width(3),
        ))?;
    }
    if !lines.is_empty() {
        legend.push(LegendEntry::new(THRESHOLD, Mark::Solid, text));
    }
    Ok(())
}

/// The x extent (log₂) of a threshold's size range; a single size gets a short segment.
fn threshold_span(t: &Threshold, axis: &Range<f64>) -> (f64, f64) {
    let x0 = t.min_bytes.map_or(axis.start, |b| log2(b.0));
    let x1 = t.max_bytes.map_or(axis.end, |b| log2(b.0));
    if x1 - x0 < 0.6 {
        (x0 - 0.35, x1 + 0.35)
    } else {
        (x0, x1)
    }
}

/// Axis label for a log₂ coordinate: only whole powers of two are labelled.
pub fn size_tick(x: &f64) -> String {
    if (x - x.round()).abs() > 1e-6 {
        // A measured size that is not a power of two (the largest one gets a tick): `12G`,
        // `1.5K`.
        return size_label(2f64.powf(*x).round() as u64);
    }
    size_label(2f64.powf(x.round()).round() as u64)
}

/// Bandwidth axis labels: whole numbers, or one decimal on small scales.
pub fn gbs_tick(max: f64) -> impl Fn(&f64) -> String {
    move |v: &f64| {
        if max < 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.0}")
        }
    }
}

/// `5 µs`, `250 µs`, `1.5 ms`, `2 s`.
pub fn time_tick(us: &f64) -> String {
    let us = *us;
    if us >= 1e6 {
        format!("{} s", trim(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", trim(us / 1e3))
    } else {
        format!("{} µs", trim(us))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_axis_labels_follow_the_sweep() {
        let labels = |sizes: Vec<u64>| -> Vec<String> {
            size_axis(sizes.into_iter())
                .ticks
                .iter()
                .map(size_tick)
                .collect()
        };
        // ×2 sweep 1K..1G: every second power.
        let doubling = labels((10..=30).map(|e| 1u64 << e).collect());
        assert_eq!(doubling.len(), 11, "{doubling:?}");
        assert_eq!((doubling[0].as_str(), doubling[10].as_str()), ("1K", "1G"));
        // ×4 sweep 1K..4G: only measured sizes are labelled.
        let quadrupling = labels((0..12).map(|k| 1u64 << (10 + 2 * k)).collect());
        // The largest size, 4G, is labelled although the stride of 2 sizes ends at 1G.
        assert_eq!(quadrupling, ["1K", "16K", "256K", "4M", "64M", "1G", "4G"]);
        let axis = size_axis([1u64 << 10, 1 << 30].into_iter());
        assert!(axis.range.start < 10.0 && axis.range.end > 30.0);
        // ×2 sweep 1K..2G: the stride of 2 powers would end at 1G; 2G is labelled too.
        let odd = labels((10..=31).map(|e| 1u64 << e).collect());
        assert_eq!(odd.last().map(String::as_str), Some("2G"), "{odd:?}");
        // Sizes that are not powers of two: the largest (12G) still gets its labelled tick.
        let half = labels((10..=33).map(|e| (1u64 << e) / 2 * 3).collect());
        assert_eq!(half.last().map(String::as_str), Some("12G"), "{half:?}");
        // Size 0 is not drawn at 1 byte: the axis starts at the smallest real size.
        let with_zero = size_axis([0u64, 1 << 10, 1 << 20].into_iter());
        assert!(with_zero.range.start > 9.0, "{with_zero:?}");
    }

    #[test]
    fn series_colours_do_not_repeat_past_ten() {
        let colours: Vec<RGBColor> = (0..40).map(series_color).collect();
        for (i, a) in colours.iter().enumerate() {
            for b in &colours[..i] {
                let d = (a.0 as i32 - b.0 as i32).abs()
                    + (a.1 as i32 - b.1 as i32).abs()
                    + (a.2 as i32 - b.2 as i32).abs();
                assert!(d > 0, "colour {i} repeats: {a:?}");
            }
        }
        assert_eq!(series_color(0), PALETTE[0]);
    }

    #[test]
    fn legend_texts_wrap_at_spaces() {
        assert_eq!(wrap("short", 10), ["short"]);
        assert_eq!(
            wrap("NVLink4 (NV18): 450 GB/s per GPU, one direction", 20),
            ["NVLink4 (NV18): 450", "GB/s per GPU, one", "direction"]
        );
        assert_eq!(wrap("a b c d e f g h i j k l m n o p", 4).len(), 3);
    }

    #[test]
    fn time_ticks_have_units() {
        assert_eq!(time_tick(&20.0), "20 µs");
        assert_eq!(time_tick(&1500.0), "1.5 ms");
        assert_eq!(time_tick(&2e6), "2 s");
    }
}
