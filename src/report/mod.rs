//! Reports: one exporter per format behind one trait. Every exporter reads the same
//! [`Document`] (the runs, an optional baseline, the bench config with hardware facts and
//! thresholds, and the gate's verdict when there is one) and returns one file's bytes.
//!
//! `netcheck report` writes the plots (PNG + SVG), `summary.md`, `report.html` and
//! `report.json`; `netcheck gate` writes JUnit XML, a Prometheus textfile and Markdown.

mod html;
mod json;
mod junit;
mod markdown;
pub mod model;
mod plot;
mod prom;
mod summary;

use std::path::{Path, PathBuf};

use crate::config::{BenchConfig, Hardware};
use crate::error::{Error, Result};
use crate::gate::GateReport;
pub use crate::results::Run;

pub use html::Html;
pub use json::Json;
pub use junit::Junit;
pub use markdown::Markdown;
pub use plot::{Image, Plot, PlotKind};
pub use prom::Prometheus;

/// Everything a report shows.
pub struct Document {
    pub runs: Vec<Run>,
    pub baseline: Option<Run>,
    /// Hardware facts, thresholds and published references.
    pub config: Option<BenchConfig>,
    /// Baseline tolerance band, percent.
    pub tolerance_pct: f64,
    pub gate: Option<GateReport>,
    /// PNGs already rendered (the HTML bundle reuses the plot files' bytes).
    png_cache: std::cell::RefCell<Vec<(PlotKind, Vec<u8>)>>,
}

impl Document {
    pub fn new(runs: Vec<Run>) -> Document {
        let mut runs = runs;
        crate::results::distinct_labels(&mut runs);
        Document {
            runs,
            baseline: None,
            config: None,
            tolerance_pct: 10.0,
            gate: None,
            png_cache: Default::default(),
        }
    }

    /// The hardware facts for a run: the given config's, else the config the run carries, else
    /// the bundled profile for its instance type.
    pub fn hardware(&self, run: &Run) -> Option<Hardware> {
        self.config
            .as_ref()
            .and_then(|c| c.hardware.clone())
            .or_else(|| model::embedded_config(&run.record).and_then(|c| c.hardware))
            .or_else(|| {
                let instance = run
                    .record
                    .hosts
                    .iter()
                    .find_map(|h| h.instance_type.clone())?;
                crate::config::profiles::for_instance_type(&instance).and_then(|c| c.hardware)
            })
    }

    /// The run's hardware ceiling, when hardware and node count are known.
    pub fn ceiling(&self, run: &Run) -> Option<model::Ceiling> {
        model::ceiling(&self.hardware(run)?, model::nodes_of(&run.record))
    }
}

/// One output format.
pub trait Exporter {
    /// The file this exporter writes inside the report folder.
    fn file_name(&self) -> String;
    fn render(&self, doc: &Document) -> Result<Vec<u8>>;
}

/// The exporters of `netcheck report`, in writing order (plots before the HTML that embeds
/// them).
pub fn report_exporters(doc: &Document) -> Vec<Box<dyn Exporter>> {
    let mut list: Vec<Box<dyn Exporter>> = Vec::new();
    for kind in plot::kinds(doc) {
        list.push(Box::new(Plot {
            kind: kind.clone(),
            image: Image::Png,
        }));
        list.push(Box::new(Plot {
            kind,
            image: Image::Svg,
        }));
    }
    list.push(Box::new(Markdown { images: true }));
    list.push(Box::new(Html));
    list.push(Box::new(Json));
    list
}

/// Renders each exporter into `dir` (created if needed); returns the files written. Plots a
/// previous report left in `dir` that this one does not draw (a heatmap of a run no longer
/// given, say) are removed, so a reused folder never shows stale pictures.
pub fn write_all(
    doc: &Document,
    exporters: &[Box<dyn Exporter>],
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    let written: Vec<PathBuf> = exporters
        .iter()
        .map(|e| {
            let path = dir.join(e.file_name());
            crate::output::write_file(&path, &e.render(doc)?)?;
            Ok(path)
        })
        .collect::<Result<_>>()?;
    let names: std::collections::BTreeSet<String> =
        exporters.iter().map(|e| e.file_name()).collect();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_plot_file(&name) && !names.contains(&name) && entry.path().is_file() {
            std::fs::remove_file(entry.path()).map_err(|e| Error::write(entry.path(), e))?;
        }
    }
    Ok(written)
}

/// The names `netcheck report` gives its plots: `bandwidth`, `latency`, `heatmap-*`, as PNG
/// or SVG.
fn is_plot_file(name: &str) -> bool {
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    matches!(ext, "png" | "svg")
        && (stem == "bandwidth" || stem == "latency" || stem.starts_with("heatmap-"))
}

impl Document {
    /// The config whose thresholds and references the plots show: the one given, else the one
    /// the first run carries.
    pub fn effective_config(&self) -> Option<BenchConfig> {
        self.config.clone().or_else(|| {
            self.runs
                .first()
                .and_then(|r| model::embedded_config(&r.record))
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::results::{PairResult, ResultRow, RunRecord, TimeStats};

    fn row() -> impl Strategy<Value = ResultRow> {
        (
            prop::sample::select(vec![
                "all_gather",
                "reduce_scatter",
                "all_reduce",
                "sendrecv",
            ]),
            0u32..40,
            any::<bool>(),
            prop::option::of(0.0f64..1e4),
            0.0f64..1e7,
            prop::option::of(0.0f64..1e7),
            prop::option::of(0u64..5),
        )
            .prop_map(|(op, exp, in_place, busbw, mean, p99, wrong)| ResultRow {
                op: op.into(),
                dtype: "float32".into(),
                bytes: 1u64 << exp,
                count: 1,
                in_place,
                redop: None,
                iters: None,
                time_us: TimeStats {
                    mean,
                    p99,
                    ..Default::default()
                },
                algbw_gbs: busbw,
                busbw_gbs: busbw,
                wrong,
                group: None,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

        /// Whatever the rows (missing bandwidths, zero times, one size, odd ops), every
        /// exporter renders without panicking or erroring.
        #[test]
        fn every_exporter_renders_any_rows(
            rows in prop::collection::vec(row(), 1..30),
            pair_rows in prop::collection::vec(row(), 0..10),
        ) {
            let mut record = RunRecord::new("run");
            record.rows = rows;
            if !pair_rows.is_empty() {
                for (i, name) in ["a+b", "a+c", "b+c"].iter().enumerate() {
                    record.pairs.push(PairResult {
                        name: name.to_string(),
                        nodes: name.split('+').map(str::to_string).collect(),
                        status: if i == 1 { "timeout".into() } else { "pass".into() },
                        message: None,
                        rows: if i == 1 { vec![] } else { pair_rows.clone() },
                        analysis: None,
                    });
                }
            }
            let mut doc = Document::new(vec![Run::new(record.clone(), "r.json")]);
            doc.baseline = Some(Run::new(record, "b.json"));
            doc.config = Some(crate::config::profiles::by_name("h200x2").unwrap());
            let mut exporters = report_exporters(&doc);
            exporters.push(Box::new(Prometheus));
            for e in &exporters {
                prop_assert!(e.render(&doc).is_ok(), "{}", e.file_name());
            }
        }
    }
}
