//! `netcheck gate RESULTS`: thresholds and baseline comparison → pass/fail exit code.

use std::path::PathBuf;

use crate::config::ByteSize;
use crate::error::{Outcome, Result};
use crate::gate::{self, GateInput};
use crate::report::{self, Document, Exporter};
use crate::results;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The results.json to judge (every run in it, when `ingest` wrote several; `-` reads stdin).
    #[arg(value_name = "RESULTS")]
    pub results: PathBuf,
    /// Bench config with thresholds and expectations (default: the one the run carries).
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub config: Option<PathBuf>,
    /// A bundled profile instead of --config: default, p5.48xlarge, p5en.48xlarge,
    /// p4d.24xlarge, g6.12xlarge, h200x2.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Compare size by size against this results.json (`-` reads stdin).
    #[arg(long, value_name = "RESULTS")]
    pub baseline: Option<PathBuf>,
    /// Allowed bus-bandwidth drop against the baseline, in percent [default: 10]; needs
    /// --baseline.
    #[arg(long, value_name = "PCT", requires = "baseline")]
    pub tolerance: Option<f64>,
    /// Compare against the baseline only from this size up (small sizes are latency noise);
    /// needs --baseline.
    #[arg(long, value_name = "SIZE", requires = "baseline")]
    pub baseline_from: Option<ByteSize>,
    /// Fail (exit 1) when nothing judged the bandwidth: no `min_busbw_gbs` threshold matched a
    /// measured point and no --baseline was given. Without it such a gate passes with a notice.
    #[arg(long)]
    pub require_bandwidth: bool,
    /// The inter-node transport that must have been used (overrides the config's).
    #[arg(long, value_name = "TRANSPORT",
          value_parser = ["efa", "ib", "roce", "socket", "tcpx", "any"])]
    pub expect: Option<String>,
    /// Fail unless every host loaded NCCL of at least this version (e.g. 2.27; overrides the
    /// config's `expect.min_nccl`).
    #[arg(long, value_name = "VERSION", value_parser = parse_min_version)]
    pub min_nccl: Option<String>,
    /// Fail unless every host loaded the aws-ofi-nccl net plugin of at least this version
    /// (e.g. 1.14; overrides the config's `expect.min_ofi_plugin`).
    #[arg(long, value_name = "VERSION", value_parser = parse_min_version)]
    pub min_ofi_plugin: Option<String>,
    /// Write a JUnit XML file (a testcase per op×size and per expectation; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write a Prometheus textfile (for node_exporter's textfile collector; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub prom: Option<PathBuf>,
    /// Write a Markdown summary (`-` for stdout, e.g. `>> "$GITHUB_STEP_SUMMARY"`).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the verdict as JSON (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// What goes to stdout, as in the other commands: `text` (nothing: the verdict is on
    /// stderr) or `json` (the verdict JSON, the same as `--json -`).
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

pub fn run(mut args: Args) -> Result<Outcome> {
    if args.format == "json" {
        match &args.json {
            None => args.json = Some(PathBuf::from("-")),
            Some(p) if crate::output::is_stdio(p) => {}
            Some(_) => {
                return Err(crate::error::Error::usage(
                    "--format json writes the verdict to stdout; with --json FILE as well, leave one out",
                ));
            }
        }
    }
    let tolerance = args
        .tolerance
        .unwrap_or(super::report::DEFAULT_TOLERANCE_PCT);
    super::report::check_tolerance(tolerance)?;
    crate::output::at_most_one_stdout([
        ("--junit", args.junit.as_deref()),
        ("--prom", args.prom.as_deref()),
        ("--markdown", args.markdown.as_deref()),
        ("--json", args.json.as_deref()),
    ])?;
    crate::input::at_most_one_stdin([
        ("RESULTS", Some(args.results.as_path())),
        ("--baseline", args.baseline.as_deref()),
        ("--config", args.config.as_deref()),
    ])?;
    let mut runs = results::load_runs(&args.results)?;
    results::distinct_labels(&mut runs);
    let baseline = args
        .baseline
        .as_deref()
        .map(results::load_baseline)
        .transpose()?;
    let mut config = report::load_config(args.config.as_deref(), args.profile.as_deref())?;
    if config.is_none()
        && let Some(carried) = runs
            .first()
            .and_then(|r| report::model::embedded_config(&r.record))
    {
        eprintln!(
            "gate: using the thresholds and expectations {} was run with",
            runs[0].origin
        );
        config = Some(carried);
    }
    if args.min_nccl.is_some() || args.min_ofi_plugin.is_some() {
        let c = config.get_or_insert_with(crate::config::BenchConfig::default);
        if let Some(v) = &args.min_nccl {
            c.expect.min_nccl = Some(v.clone());
        }
        if let Some(v) = &args.min_ofi_plugin {
            c.expect.min_ofi_plugin = Some(v.clone());
        }
    }
    let records: Vec<&crate::results::RunRecord> = runs.iter().map(|r| &r.record).collect();
    let verdict = gate::combine(
        runs.iter()
            .enumerate()
            .map(|(i, run)| {
                let share = baseline.as_ref().map(|b| match runs.len() {
                    1 => b.record.clone(),
                    _ => gate::baseline_share(&b.record, &records, i),
                });
                let verdict = gate::evaluate(&GateInput {
                    record: &run.record,
                    origin: &run.origin,
                    config: config.as_ref(),
                    baseline: share.as_ref(),
                    tolerance_pct: tolerance,
                    baseline_min_bytes: args.baseline_from.map(|b| b.0),
                    expect_transport: args.expect.clone(),
                    require_bandwidth: args.require_bandwidth,
                });
                (run.label.clone(), verdict)
            })
            .collect(),
    );
    print_summary(&verdict);
    let outcome = match verdict.verdict {
        gate::Outcome::Fail => Outcome::Fail,
        _ => Outcome::Pass,
    };
    let mut doc = Document::new(runs);
    doc.baseline = baseline;
    doc.config = config;
    doc.tolerance_pct = tolerance;
    doc.gate = Some(verdict);
    let outputs: [(Option<PathBuf>, Box<dyn Exporter>); 4] = [
        (args.junit, Box::new(report::Junit)),
        (args.prom, Box::new(report::Prometheus)),
        (args.markdown, Box::new(report::Markdown { images: false })),
        (args.json, Box::new(GateJson)),
    ];
    for (path, exporter) in outputs {
        if let Some(path) = path {
            report::write_file(&path, &exporter.render(&doc)?)?;
        }
    }
    Ok(outcome)
}

/// A version to require: `2.27`, `2.27.7`, `1.14` (numbers and dots).
fn parse_min_version(v: &str) -> std::result::Result<String, String> {
    let ok = !v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if ok {
        Ok(v.to_string())
    } else {
        Err(format!("`{v}` is not a version such as 2.27 or 1.14.0"))
    }
}

/// The verdict alone as JSON (`netcheck.gate.v1`).
struct GateJson;

impl Exporter for GateJson {
    fn file_name(&self) -> String {
        "gate.json".into()
    }
    fn render(&self, doc: &Document) -> Result<Vec<u8>> {
        let mut text = serde_json::to_string_pretty(&doc.gate).expect("gate verdict serializes");
        text.push('\n');
        Ok(text.into_bytes())
    }
}

/// One line with the verdict, then each failed check (for people, on stderr).
fn print_summary(verdict: &gate::GateReport) {
    let word = if verdict.verdict == gate::Outcome::Fail {
        "FAIL"
    } else {
        "PASS"
    };
    eprintln!(
        "gate: {word}: {} cases passed, {} failed, {} skipped",
        verdict.passed, verdict.failed, verdict.skipped
    );
    let failures: Vec<String> = verdict
        .cases
        .iter()
        .flat_map(|c| {
            c.failures()
                .map(move |f| format!("  {} {}: {}", c.class, c.name, f.message))
        })
        .collect();
    eprintln!("gate: judged: {}", verdict.judged.to_line());
    if !verdict.judged.bandwidth {
        eprintln!(
            "gate: notice: no bandwidth criterion judged this run, so the verdict says nothing about speed; give --profile/--config thresholds or --baseline (--require-bandwidth makes this a failure)"
        );
    }
    for line in failures.iter().take(20) {
        eprintln!("{line}");
    }
    if failures.len() > 20 {
        eprintln!(
            "  … {} more (see --junit or --markdown)",
            failures.len() - 20
        );
    }
}
