//! `netcheck ingest FILE... --out results.json`: nccl-tests output → RunRecord.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Outcome, Result};
use crate::ingest::{self, Input};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// nccl-tests `-J` JSON files or their text output (NCCL_DEBUG lines may be mixed in);
    /// `.gz` files are read too, `-` reads stdin.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the RunRecord (`-` for stdout); a JSON list of records when the inputs
    /// hold several runs (several nccl-tests runs in one log, or unrelated files). A regular
    /// file is replaced atomically; a device or FIFO is written through; a symbolic link is
    /// followed.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The collective of every run, overriding what the output shows or implies (old
    /// nccl-tests text without a `Collective test starting` line is read without it).
    #[arg(long, value_name = "OP", value_parser = [
        "all_reduce", "all_gather", "reduce_scatter", "alltoall", "alltoallv", "broadcast",
        "reduce", "gather", "scatter", "sendrecv", "hypercube",
    ])]
    pub op: Option<String>,
    /// The inter-node transport that must have been used, for the analysis of the NCCL_DEBUG
    /// lines in the output (as `netcheck analyze --expect`).
    #[arg(long, value_name = "TRANSPORT",
          value_parser = clap::builder::PossibleValuesParser::new(crate::config::KNOWN_TRANSPORTS))]
    pub expect: Option<String>,
    /// A name for this run in reports (cluster, node group, ...).
    #[arg(long)]
    pub label: Option<String>,
}

pub fn run(args: Args) -> Result<Outcome> {
    crate::input::at_most_one_stdin(args.files.iter().map(|p| ("FILE", Some(p.as_path()))))?;
    crate::output::distinct_paths(
        args.files.iter().map(|p| ("FILE", Some(p.as_path()))),
        [("--out", Some(args.out.as_path()))],
    )?;
    // The same file named twice (`ingest a.txt ./a.txt`) would count its runs twice.
    let mut seen: Vec<(PathBuf, &Path)> = vec![];
    let mut files: Vec<&Path> = vec![];
    for path in &args.files {
        let real = std::fs::canonicalize(path).ok();
        match real
            .as_ref()
            .and_then(|r| seen.iter().find(|(s, _)| s == r))
        {
            Some((_, first)) => crate::say!(
                "warning: `{}` is the same file as `{}`; it is read once",
                path.display(),
                first.display()
            ),
            None => {
                if let Some(r) = real {
                    seen.push((r, path));
                }
                files.push(path);
            }
        }
    }
    let inputs = files
        .iter()
        .map(|path| read_input(path))
        .collect::<Result<Vec<_>>>()?;
    let mut records = ingest::ingest(&inputs, args.op.as_deref(), args.expect.as_deref())?;
    for record in &mut records {
        if let Some(label) = &args.label {
            record.label = Some(match record.label.take() {
                Some(run) => format!("{label} ({run})"),
                None => label.clone(),
            });
        }
        for note in &record.errors {
            crate::say!("warning: {note}");
        }
    }
    crate::results::RunRecord::save_all(&records, &args.out)?;
    if records.len() > 1 {
        let out = match args.out.to_str() {
            Some("-") => "the records to stdout".to_string(),
            _ => args.out.display().to_string(),
        };
        crate::say!("wrote {out} ({} runs)", records.len());
    }
    for record in &records {
        crate::say!("{}", ingest::summary(record, records.len() == 1, &args.out));
    }
    // With --expect, the embedded analysis judges, as in `netcheck run`: the files are written
    // either way, and a run that did not meet the expectation fails (exit 1).
    let expect = args.expect.as_deref().filter(|e| *e != "any");
    let failures = expect.map_or_else(Vec::new, |expect| expectation_failures(&records, expect));
    for reason in &failures {
        crate::say!("netcheck: FAIL: {reason}");
    }
    Ok(if failures.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail
    })
}

/// Why the runs fail `--expect`: a run without NCCL_DEBUG lines cannot show its transport, and
/// a run whose log analysis failed (the transport was not the expected one, a socket fallback,
/// an NCCL error) fails with the analysis's error findings.
fn expectation_failures(records: &[crate::results::RunRecord], expect: &str) -> Vec<String> {
    let name = |r: &crate::results::RunRecord| r.label.clone().unwrap_or_else(|| "the run".into());
    let mut reasons = vec![];
    for record in records {
        match &record.analysis {
            None => reasons.push(format!(
                "{}: --expect {expect}, but the output has no NCCL_DEBUG=INFO lines to show the transport",
                name(record)
            )),
            Some(a) if a.verdict == crate::logscan::Verdict::Fail => {
                let errors: Vec<String> = a
                    .findings
                    .iter()
                    .filter(|f| f.severity == crate::logscan::Severity::Error)
                    .map(|f| format!("{} [{}]", f.message, f.id))
                    .collect();
                reasons.push(format!(
                    "{}: inter-node transport {} (expected {expect}): {}",
                    name(record),
                    a.inter_node_transport.as_str(),
                    errors.join("; ")
                ));
            }
            Some(_) => {}
        }
    }
    reasons
}

/// Reads a file (gunzipping `.gz`) or stdin for `-`.
fn read_input(path: &Path) -> Result<Input> {
    let origin = path.display().to_string();
    let mut bytes = Vec::new();
    if origin == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::read(path, e))?;
    } else {
        bytes = std::fs::read(path).map_err(|e| Error::read(path, e))?;
    }
    if path.extension().is_some_and(|e| e == "gz") {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| Error::read(path, e))?;
        bytes = out;
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(Input {
        origin: if origin == "-" {
            "<stdin>".into()
        } else {
            origin
        },
        text,
    })
}
