//! NCCL / aws-ofi-nccl log analysis: which transport carried inter-node traffic, whether NCCL
//! fell back to TCP sockets, and why — with the log lines that show it.
//!
//! The pipeline, one module per step, in data-flow order:
//! 1. `input`  — open files / `.gz` / stdin, read 1 MiB chunks of whole lines (bytes; lines
//!    cut at 64 KiB). `frame` finds the lines that matter inside a chunk, as grep does.
//!    `scan` drives it all; for files it reads, frames and (while the analysis is busy)
//!    classifies on a second thread, one chunk ahead (`frame::batch`).
//! 2. `prefix` — find `NCCL INFO`/`NCCL WARN` records anywhere in a line and parse NCCL's
//!    `host:pid:tid [dev]` to their left, whatever wrapper (mpirun, srun, Ray, kubectl...) is
//!    further left. `rank_cache` maps the text before a marker to the record's rank, so most
//!    records skip that parse.
//! 3. `event` (+ `net_lines`) — classify each message into an event, or ignore it;
//!    `other_lines` — the words searched for in lines without a record, nccl-tests' rank table.
//! 4. `facts`  — fold events into per-process, per-rank and per-communicator facts, each with
//!    the line that showed it; every collection is capped.
//! 5. `transport` — decide `inter_node_transport`, `socket_fallback` and `gdr` exactly as
//!    DESIGN.md's Analysis contract defines them; `rules` — findings and the verdict.
//! 6. `summary` — the `Analysis` itself; `render` — text and Markdown (JSON is the
//!    `Analysis`).
//!
//! # Entry points
//!
//! - [`analyze_reader`]`(reader, source_name, &Options) -> io::Result<Analysis>`: one stream
//!   (plain or gzip). `source_name` labels the evidence (`<stdin>`, a file name, a pod name).
//! - [`Analyzer`]: several sources as one job — `Analyzer::new(options)`, then
//!   `feed(reader, name)` per rank log (what `run` does with one file per rank) or per pod log
//!   (`launch`), or `feed_path(path)`, then `analysis() -> Analysis` (more sources may follow)
//!   or `finish()`.
//! - [`analyze_paths`]`(&[PathBuf], &Options) -> Result<Analysis>`: files (`-` = stdin);
//!   a missing or unreadable file is `Error::Read` naming it (exit 2).
//! - [`render::text`] / [`render::markdown`]: human output.
//!
//! Memory stays bounded whatever the input size, and no input makes it panic: binary garbage
//! yields `inter_node_transport: unknown`.

mod analysis;
pub mod cluster;
mod event;
mod facts;
mod frame;
mod halves;
mod hard_wrap;

mod input;
mod net_lines;
mod other_lines;
mod prefix;
mod rank_cache;
pub mod render;
mod rules;
mod scan;
mod summary;
mod text_form;
mod transport;

pub use analysis::*;
pub use rules::NO_NCCL_LINES;
pub use scan::{Analyzer, Options, analyze_paths, analyze_reader};

/// Every fixture log of the project (real H200 captures and the grammar logs), one after the
/// other in name order: for tests that read the same lines two ways and compare.
#[cfg(test)]
fn fixture_logs() -> Vec<u8> {
    let mut all = Vec::new();
    for dir in ["h200", "grammar"] {
        let dir = format!("{}/tests/fixtures/logs/{dir}", env!("CARGO_MANIFEST_DIR"));
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            all.extend(std::fs::read(path).unwrap());
        }
    }
    all
}

/// Numbers below `n`, from a fixed seed (xorshift): for tests that generate many inputs,
/// the same ones on every run.
#[cfg(test)]
fn numbers(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed | 1;
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}
