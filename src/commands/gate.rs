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
    #[arg(long, value_name = "PCT", requires = "baseline", allow_negative_numbers = true,
          value_parser = crate::flags::float(0.0, 100.0, false))]
    pub tolerance: Option<f64>,
    /// Compare against the baseline only from this size up (small sizes are latency noise);
    /// needs --baseline.
    #[arg(long, value_name = "SIZE", requires = "baseline", allow_negative_numbers = true,
          value_parser = crate::flags::size(0, None))]
    pub baseline_from: Option<ByteSize>,
    /// Fail (exit 1) when nothing judged the bandwidth (no `min_busbw_gbs` threshold matched a
    /// measured point and no --baseline was given), and when a threshold's op was not measured
    /// at all. Without it such a gate passes with a notice, the threshold listed as not judged.
    #[arg(long)]
    pub require_bandwidth: bool,
    /// The inter-node transport that must have been used (overrides the config's).
    #[arg(long, value_name = "TRANSPORT",
          value_parser = clap::builder::PossibleValuesParser::new(crate::config::KNOWN_TRANSPORTS))]
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
    crate::output::distinct_paths(
        [
            ("RESULTS", Some(args.results.as_path())),
            ("--baseline", args.baseline.as_deref()),
            ("--config", args.config.as_deref()),
        ],
        [
            ("--junit", args.junit.as_deref()),
            ("--prom", args.prom.as_deref()),
            ("--markdown", args.markdown.as_deref()),
            ("--json", args.json.as_deref()),
        ],
    )?;
    for (flag, path) in [
        ("--junit", &args.junit),
        ("--prom", &args.prom),
        ("--markdown", &args.markdown),
        ("--json", &args.json),
    ] {
        if let Some(path) = path {
            crate::output::check_writable(flag, path)?;
        }
    }
    let mut runs = results::load_runs(&args.results)?;
    results::distinct_labels(&mut runs);
    let baseline = args
        .baseline
        .as_deref()
        .map(results::load_baseline)
        .transpose()?;
    let mut config = crate::config::load_config(args.config.as_deref(), args.profile.as_deref())?;
    if config.is_none()
        && let Some(carried) = runs
            .first()
            .and_then(|r| report::model::embedded_config(&r.record))
    {
        crate::say!(
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
    print_summary(&verdict, &args, config.is_some());
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
    // Every output is attempted: one that fails (a full disk) must not cost the others, nor
    // hide the verdict. A failed gate stays exit 1 with the failed writes named; a passed one
    // with a failed write is exit 2 (the write error), since CI would miss the file.
    let mut failed_writes = vec![];
    for (path, exporter) in outputs {
        if let Some(path) = path
            && let Err(e) = exporter
                .render(&doc)
                .and_then(|bytes| crate::output::write_file(&path, &bytes))
        {
            failed_writes.push(e);
        }
    }
    match (failed_writes.len(), outcome) {
        (0, _) => Ok(outcome),
        (_, Outcome::Fail) => {
            for e in &failed_writes {
                e.print();
            }
            crate::say!(
                "gate: FAIL stands (exit 1); {} output(s) could not be written, see above",
                failed_writes.len()
            );
            Ok(Outcome::Fail)
        }
        _ => {
            let last = failed_writes.pop().expect("one failed write");
            for e in &failed_writes {
                e.print();
            }
            Err(last)
        }
    }
}

/// What to say when nothing judged the bandwidth, suggesting only what was not given.
fn bandwidth_notice(args: &Args, has_config: bool) -> String {
    let mut give = vec![];
    if has_config {
        let which = match (&args.profile, &args.config) {
            (Some(p), _) => format!("--profile {p}"),
            (_, Some(c)) => format!("--config {}", c.display()),
            _ => "the run's config".into(),
        };
        give.push(format!(
            "{which} has no min_busbw_gbs threshold for a measured point; add one"
        ));
    } else {
        give.push("give --profile/--config thresholds".into());
    }
    if args.baseline.is_none() {
        give.push("or --baseline".into());
    }
    let mut line = format!(
        "gate: notice: no bandwidth criterion judged this run, so the verdict says nothing about speed; {}",
        give.join(" ")
    );
    if args.baseline.is_some() {
        line.push_str(" (the baseline matched no measured point)");
    }
    if !args.require_bandwidth {
        line.push_str(" (--require-bandwidth makes this a failure)");
    }
    line
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

/// One line with the verdict, then each failed check (for people, on stderr). The notice
/// about an unjudged bandwidth suggests only what was not given already.
fn print_summary(verdict: &gate::GateReport, args: &Args, has_config: bool) {
    let word = if verdict.verdict == gate::Outcome::Fail {
        "FAIL"
    } else {
        "PASS"
    };
    crate::say!(
        "gate: {word}: {} cases passed, {} failed, {} skipped",
        verdict.passed,
        verdict.failed,
        verdict.skipped
    );
    let failures: Vec<String> = verdict
        .cases
        .iter()
        .flat_map(|c| {
            c.failures()
                .map(move |f| format!("  {} {}: {}", c.class, c.name, f.message))
        })
        .collect();
    crate::say!("gate: judged: {}", verdict.judged.to_line());
    if !verdict.judged.bandwidth {
        crate::say!("{}", bandwidth_notice(args, has_config));
    }
    for line in failures.iter().take(20) {
        crate::say!("{line}");
    }
    if failures.len() > 20 {
        crate::say!(
            "  … {} more (see --junit or --markdown)",
            failures.len() - 20
        );
    }
}
