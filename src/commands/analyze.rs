//! `netcheck analyze [LOG...]`: which transport carried inter-node traffic, with evidence.

use std::path::PathBuf;

use crate::error::{Error, Outcome, Result};
use crate::logscan::{self, Analyzer, Options, Transport, Verdict};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// NCCL_DEBUG=INFO logs: files, .gz files, or `-` / nothing for stdin.
    #[arg(value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    /// The inter-node transport that must have been used (`nvlink`: multi-node NVLink,
    /// GB200/GB300 NVL72); anything else fails (exit 1).
    #[arg(long, value_name = "TRANSPORT", default_value = "any",
          value_parser = ["efa", "ib", "roce", "socket", "tcpx", "nvlink", "any"])]
    pub expect: String,
    /// Output format.
    #[arg(long, default_value = "text", value_parser = ["text", "json", "markdown"])]
    pub format: String,
}

pub fn run(args: Args) -> Result<Outcome> {
    let expect = match args.expect.as_str() {
        "any" => None,
        name => Some(name.parse::<Transport>().map_err(Error::usage)?),
    };
    let logs = if args.logs.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.logs
    };
    if logs.iter().any(|l| l.as_os_str() == "-")
        && std::io::IsTerminal::is_terminal(&std::io::stdin())
    {
        eprintln!("reading NCCL log from stdin (Ctrl-D to end)");
    }
    let mut analyzer = Analyzer::new(Options { expect });
    for log in &logs {
        analyzer.feed_path(log)?;
    }
    let analysis = analyzer.analysis();
    // The process ends right after printing: freeing the per-rank state of a large log one
    // allocation at a time would cost several percent of the run for nothing.
    std::mem::forget(analyzer);
    let rendered = match args.format.as_str() {
        "json" => {
            let mut json = serde_json::to_string_pretty(&analysis)
                .map_err(|e| Error::infra(format!("cannot encode the analysis as JSON: {e}")))?;
            json.push('\n');
            json
        }
        "markdown" => logscan::render::markdown(&analysis),
        _ => logscan::render::text(&analysis),
    };
    crate::output::stdout(&rendered).map_err(|e| Error::write("<stdout>", e))?;
    Ok(match analysis.verdict {
        Verdict::Fail => Outcome::Fail,
        Verdict::Pass | Verdict::Warn => Outcome::Pass,
    })
}
