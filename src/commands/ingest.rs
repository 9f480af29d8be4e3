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
    /// Where to write the RunRecord (`-` for stdout). A regular file is replaced atomically;
    /// a device or FIFO is written through; a symbolic link is followed.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The collective, for text output that does not name it (old nccl-tests versions).
    #[arg(long, value_name = "OP")]
    pub op: Option<String>,
    /// The inter-node transport that must have been used, for the analysis of the NCCL_DEBUG
    /// lines in the output (as `netcheck analyze --expect`).
    #[arg(long, value_name = "TRANSPORT",
          value_parser = ["efa", "ib", "roce", "socket", "tcpx", "any"])]
    pub expect: Option<String>,
    /// A name for this run in reports (cluster, node group, ...).
    #[arg(long)]
    pub label: Option<String>,
}

pub fn run(args: Args) -> Result<Outcome> {
    let inputs = args
        .files
        .iter()
        .map(|path| read_input(path))
        .collect::<Result<Vec<_>>>()?;
    let mut record = ingest::ingest(&inputs, args.op.as_deref(), args.expect.as_deref())?;
    record.label = args.label;
    for note in &record.errors {
        eprintln!("warning: {note}");
    }
    record.save(&args.out)?;
    let ops: std::collections::BTreeSet<&str> = record.rows.iter().map(|r| r.op.as_str()).collect();
    let written = if crate::output::is_stdio(&args.out) {
        "the record to stdout".to_string()
    } else {
        args.out.display().to_string()
    };
    eprintln!(
        "wrote {} ({} rows: {}; {} ranks on {} hosts; status {})",
        written,
        record.rows.len(),
        ops.into_iter().collect::<Vec<_>>().join(", "),
        record.world_size.map_or("?".into(), |n| n.to_string()),
        record.hosts.len(),
        format!("{:?}", record.status).to_lowercase(),
    );
    Ok(Outcome::Pass)
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
