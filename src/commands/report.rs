//! `netcheck report RESULTS... --out DIR`: plots, Markdown, HTML and JSON from RunRecords.

use std::path::PathBuf;

use crate::error::{Error, Outcome, Result};
use crate::report::{self, Document};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// results.json files written by `run`, `launch` or `ingest` (`-` reads one from stdin).
    #[arg(value_name = "RESULTS", required = true)]
    pub results: Vec<PathBuf>,
    /// Output folder.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A results.json to draw as the baseline (`-` reads stdin).
    #[arg(long, value_name = "RESULTS")]
    pub baseline: Option<PathBuf>,
    /// Bench config whose hardware facts, thresholds and published references to show
    /// (default: the one the first run carries, else the bundled profile of its instance type).
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub config: Option<PathBuf>,
    /// A bundled profile instead of --config: default, p5.48xlarge, p5en.48xlarge,
    /// p4d.24xlarge, g6.12xlarge, h200x2.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Width of the band drawn under the baseline, in percent (the gate's tolerance)
    /// [default: 10]; needs --baseline.
    #[arg(long, value_name = "PCT", requires = "baseline", allow_negative_numbers = true,
          value_parser = crate::flags::float(0.0, 100.0, false))]
    pub tolerance: Option<f64>,
}

pub fn run(args: Args) -> Result<Outcome> {
    let tolerance = args.tolerance.unwrap_or(DEFAULT_TOLERANCE_PCT);
    check_tolerance(tolerance)?;
    crate::output::folder_not_stdout("--out", Some(&args.out))?;
    if std::fs::metadata(&args.out).is_ok_and(|m| !m.is_dir()) {
        return Err(Error::Usage {
            message: format!(
                "--out `{}` is a file; a report is a folder of several files (plots, report.md, report.html, report.json)",
                args.out.display()
            ),
            hint: Some("give --out a folder name (it is created if needed)".into()),
        });
    }
    crate::input::at_most_one_stdin(inputs(&args))?;
    let mut runs = Vec::new();
    for path in &args.results {
        runs.extend(crate::results::load_runs(path)?);
    }
    let mut doc = Document::new(runs);
    doc.baseline = args
        .baseline
        .as_deref()
        .map(crate::results::load_baseline)
        .transpose()?;
    doc.config = crate::config::load_config(args.config.as_deref(), args.profile.as_deref())?;
    doc.tolerance_pct = tolerance;
    let exporters = report::report_exporters(&doc);
    let written: Vec<(String, PathBuf)> = exporters
        .iter()
        .map(|e| {
            let name = e.file_name();
            (format!("--out's {name}"), args.out.join(name))
        })
        .collect();
    crate::output::distinct_paths(
        inputs(&args),
        written.iter().map(|(f, p)| (f.as_str(), Some(p.as_path()))),
    )?;
    let files = report::write_all(&doc, &exporters, &args.out)?;
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    crate::say!(
        "wrote {} files to {}: {}",
        files.len(),
        args.out.display(),
        names.join(", ")
    );
    Ok(Outcome::Pass)
}

/// The files the report reads, each with the flag that names it (for the stdin and
/// output-over-input checks).
fn inputs(args: &Args) -> impl Iterator<Item = (&str, Option<&std::path::Path>)> {
    args.results
        .iter()
        .map(|p| ("RESULTS", Some(p.as_path())))
        .chain([
            ("--baseline", args.baseline.as_deref()),
            ("--config", args.config.as_deref()),
        ])
}

/// The baseline tolerance when `--tolerance` is not given, percent.
pub const DEFAULT_TOLERANCE_PCT: f64 = 10.0;

/// A tolerance is a percentage drop: 0 up to (not including) 100.
pub fn check_tolerance(pct: f64) -> Result<()> {
    if pct.is_finite() && (0.0..100.0).contains(&pct) {
        Ok(())
    } else {
        Err(Error::Usage {
            message: format!("--tolerance {pct} is not a percentage drop between 0 and 100"),
            hint: Some("e.g. --tolerance 10 allows busbw 10% below the baseline".into()),
        })
    }
}
