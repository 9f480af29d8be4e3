//! The RunRecord (`results.json`, schema `netcheck.results.v1`): what `run`, `launch` and
//! `ingest` write and what `report` and `gate` read. Rows are also appended, one JSON object per
//! line, to `results.jsonl` as they finish, so an interrupted run keeps what it measured.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::logscan::Analysis;

mod load;
pub mod rows;
pub mod stack;

pub use load::{Run, distinct_labels, load_baseline, load_run, load_runs};

pub const RESULTS_SCHEMA: &str = "netcheck.results.v1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub schema: String,
    pub tool: ToolInfo,
    /// `run`, `launch` or `ingest`.
    pub source: String,
    /// Free text naming this run in reports (profile name, cluster, ...).
    #[serde(default)]
    pub label: Option<String>,
    /// When the benchmark started; absent when the input did not say (an ingested text
    /// output without timestamps), never the time it was read.
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
    pub status: RunStatus,
    #[serde(default)]
    pub world_size: Option<u32>,
    #[serde(default)]
    pub hosts: Vec<HostInfo>,
    #[serde(default)]
    pub ranks: Vec<RankInfo>,
    #[serde(default)]
    pub nccl: Option<NcclInfo>,
    /// NCCL_*, FI_*, OFI_* and a few other variables that change what NCCL does.
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// The sweep and expectations used (a `BenchConfig` as JSON).
    #[serde(default)]
    pub config: Option<serde_json::Value>,
    #[serde(default)]
    pub rows: Vec<ResultRow>,
    /// Node pairs or groups measured by `launch` (the heatmap's input).
    #[serde(default)]
    pub pairs: Vec<PairResult>,
    /// Per-node verdicts of a `launch` run: which node is bad.
    #[serde(default)]
    pub nodes: Vec<NodeResult>,
    #[serde(default)]
    pub analysis: Option<Analysis>,
    /// `netcheck fabric` results and EFA counter deltas, where run.
    #[serde(default)]
    pub fabric: Option<serde_json::Value>,
    #[serde(default)]
    pub counters: Option<serde_json::Value>,
    /// Problems met while running that did not stop the run (a failed pair, ...).
    #[serde(default)]
    pub errors: Vec<String>,
    /// What `ingest` read from an nccl-tests output that has no other place in the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest: Option<IngestInfo>,
}

/// The facts of an ingested nccl-tests output: where it came from, what the file printed
/// beside the table, and how the collective was determined.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IngestInfo {
    /// The input file(s) and, for a file holding several runs, which one (1-based).
    pub files: Vec<String>,
    #[serde(default)]
    pub run_in_file: Option<u32>,
    /// `nccl-tests version 2.17.6`, when printed.
    #[serde(default)]
    pub nccl_tests_version: Option<String>,
    /// The collective, and what decided it: `--op`, `collective-line`, `json-args`,
    /// `command-line`, `failure-location`, `file-name`, `table`, `text-mention`, or
    /// `table-ambiguous` (the first of `candidates`, with a warning).
    #[serde(default)]
    pub collective: Option<String>,
    #[serde(default)]
    pub collective_basis: Vec<String>,
    /// Every collective the table is consistent with, when more than one is.
    #[serde(default)]
    pub candidates: Vec<String>,
    #[serde(default)]
    pub dtypes: Vec<String>,
    #[serde(default)]
    pub redops: Vec<String>,
    /// The footer: `# Avg bus bandwidth : X` and `# Out of bounds values : N OK|FAILED`.
    #[serde(default)]
    pub avg_busbw_gbs: Option<f64>,
    #[serde(default)]
    pub out_of_bounds: Option<u64>,
    /// Ranks shown in the device list, and the rank count the table implies (they differ
    /// when the list is cut or a process drives several GPUs).
    #[serde(default)]
    pub listed_ranks: u32,
    #[serde(default)]
    pub ranks_basis: Option<String>,
    /// What the reader noticed (repaired rows, ambiguities, contradictions).
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl ToolInfo {
    pub fn this() -> ToolInfo {
        ToolInfo {
            name: "netcheck".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Complete,
    /// Stopped by Ctrl-C; rows hold what finished.
    Interrupted,
    /// A rank hung or a deadline passed; rows hold what finished.
    Timeout,
    /// An error stopped the run; rows hold what finished.
    Failed,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostInfo {
    pub hostname: String,
    #[serde(default)]
    pub gpus: Vec<GpuInfo>,
    #[serde(default)]
    pub cuda_driver: Option<String>,
    /// Kubernetes node name / instance type when run by `launch`.
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub instance_type: Option<String>,
    /// The stack this host's ranks loaded (`netcheck.stack.v1`), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<stack::StackInfo>,
    /// The pod's image as the spec named it, and the digest the kubelet pulled
    /// (`containerStatuses[].imageID`), when `launch` ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GpuInfo {
    pub index: u32,
    pub name: String,
    #[serde(default)]
    pub pci_bus_id: Option<String>,
    #[serde(default)]
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RankInfo {
    pub rank: u32,
    pub host: String,
    pub gpu: u32,
    #[serde(default)]
    pub pid: Option<u32>,
    /// Path of this rank's captured NCCL_DEBUG log, relative to the output folder.
    #[serde(default)]
    pub log: Option<String>,
    /// The node the launcher put this rank on (real or simulated) and its index there:
    /// rank = node × ranks per node + local rank.
    #[serde(default)]
    pub node: Option<u32>,
    #[serde(default)]
    pub local_rank: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NcclInfo {
    pub version: String,
    #[serde(default)]
    pub library_path: Option<String>,
}

/// One measured point, in nccl-tests' terms: `bytes` is the larger (gathered) buffer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResultRow {
    pub op: String,
    pub dtype: String,
    pub bytes: u64,
    /// Elements per rank as nccl-tests prints it (`count` column).
    pub count: u64,
    pub in_place: bool,
    #[serde(default)]
    pub redop: Option<String>,
    #[serde(default)]
    pub iters: Option<u32>,
    pub time_us: TimeStats,
    /// GB/s (1e9 bytes per second). `None` when the time was not measurable.
    pub algbw_gbs: Option<f64>,
    pub busbw_gbs: Option<f64>,
    /// Wrong elements found by the check; `None` when not checked.
    pub wrong: Option<u64>,
    /// The pair or group this row belongs to, for multi-pair runs.
    #[serde(default)]
    pub group: Option<String>,
}

/// Per-iteration time statistics in microseconds. `mean` is the mean over the timed loop,
/// which is what nccl-tests prints; p50/p99 come from per-iteration CUDA-event samples.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TimeStats {
    pub mean: f64,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub p50: Option<f64>,
    #[serde(default)]
    pub p99: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairResult {
    /// Name of the pair or group, e.g. `node-a+node-b`.
    pub name: String,
    pub nodes: Vec<String>,
    /// `pass`, `fail`, `error`, `timeout` or `unschedulable`.
    pub status: String,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub rows: Vec<ResultRow>,
    #[serde(default)]
    pub analysis: Option<Analysis>,
}

/// What `launch` concluded about one node from the groups it was in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeResult {
    pub name: String,
    /// The pool it was grouped in (instance type and zone).
    #[serde(default)]
    pub pool: Option<String>,
    /// `pass`, `fail` (failed with a known-good peer), `suspect` (in a failing group, fault not
    /// placed), `inconclusive`, `untested` or `ineligible` (left out by preflight).
    pub verdict: String,
    #[serde(default)]
    pub reason: Option<String>,
}

/// Bus bandwidth factor, nccl-tests' definitions (PERFORMANCE.md).
pub fn bus_factor(op: &str, nranks: u32) -> f64 {
    let n = nranks as f64;
    match op {
        "all_reduce" => 2.0 * (n - 1.0) / n,
        "all_gather" | "reduce_scatter" | "alltoall" | "alltoallv" | "gather" | "scatter" => {
            (n - 1.0) / n
        }
        _ => 1.0,
    }
}

/// GB/s from bytes and microseconds; `None` for zero or non-finite times.
pub fn gbs(bytes: u64, time_us: f64) -> Option<f64> {
    let v = bytes as f64 / (time_us * 1e-6) / 1e9;
    (time_us > 0.0 && v.is_finite()).then_some(v)
}

#[cfg(test)]
impl ResultRow {
    /// A float32 out-of-place-or-in-place row for unit tests: 20 iterations, no wrong
    /// elements, `mean_us` per operation, algbw from it and no busbw; callers override the rest.
    pub(crate) fn for_test(op: &str, bytes: u64, in_place: bool, mean_us: f64) -> Self {
        ResultRow {
            op: op.into(),
            dtype: "float32".into(),
            bytes,
            count: bytes / 8,
            in_place,
            redop: None,
            iters: Some(20),
            time_us: TimeStats {
                mean: mean_us,
                ..Default::default()
            },
            algbw_gbs: gbs(bytes, mean_us),
            busbw_gbs: None,
            wrong: Some(0),
            group: None,
        }
    }
}

/// Two ranks joined by NCCL connections, the lower rank first.
pub type RankPair = (u32, u32);

/// What another netcheck JSON file is, by its schema, and the command that writes it: a gate
/// verdict passed to `gate` is a verdict, not results.
fn other_netcheck_file(schema: &str) -> Option<(&'static str, &'static str)> {
    Some(match schema {
        "netcheck.gate.v1" => ("a gate verdict", "netcheck gate --json"),
        "netcheck.analysis.v1" => ("a log analysis", "netcheck analyze --format json"),
        "netcheck.report.v1" => ("a report's JSON", "netcheck report"),
        "netcheck.doctor.v1" => ("a doctor report", "netcheck doctor --format json"),
        "netcheck.fabric.v1" => ("a fabric measurement", "netcheck fabric --format json"),
        "netcheck.fabric.providers.v1" => (
            "a libfabric provider listing",
            "netcheck fabric --list --format json",
        ),
        _ => return None,
    })
}

impl RunRecord {
    /// The links between this run's ranks that their NCCL logs show, each with the transports
    /// that carried it. Both ends count: NCCL prints P2P and SHM lines on the sending side
    /// only, so a rank that only receives over NVLink has no P2P line of its own.
    pub fn rank_links(&self) -> BTreeMap<RankPair, Vec<String>> {
        let mut links: BTreeMap<RankPair, Vec<String>> = BTreeMap::new();
        for info in &self.ranks {
            let Some(seen) = self.analysis_of(info) else {
                continue;
            };
            for conn in &seen.connections {
                for &peer in &conn.peers {
                    let kinds = links
                        .entry((info.rank.min(peer), info.rank.max(peer)))
                        .or_default();
                    if !kinds.contains(&conn.transport) {
                        kinds.push(conn.transport.clone());
                        kinds.sort();
                    }
                }
            }
        }
        links
    }

    /// What this run's NCCL logs say about one of its ranks (same NCCL rank, same process).
    pub fn analysis_of(&self, info: &RankInfo) -> Option<&crate::logscan::RankSummary> {
        self.analysis
            .as_ref()?
            .per_rank
            .iter()
            .find(|r| r.rank == Some(info.rank) && (info.pid.is_none() || r.pid == info.pid))
    }

    /// `NET/Socket with 3; P2P/CUMEM with 1`: how `rank` reached each peer, from `links`.
    pub fn links_of(links: &BTreeMap<RankPair, Vec<String>>, rank: u32) -> String {
        let mut by_kind: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for ((a, b), kinds) in links {
            let peer = match rank {
                r if r == *a => *b,
                r if r == *b => *a,
                _ => continue,
            };
            for kind in kinds {
                by_kind.entry(kind).or_default().push(peer.to_string());
            }
        }
        let text: Vec<String> = by_kind
            .iter()
            .map(|(kind, peers)| format!("{kind} with {}", peers.join(",")))
            .collect();
        if text.is_empty() {
            "no connection lines".to_string()
        } else {
            text.join("; ")
        }
    }

    pub fn new(source: &str) -> RunRecord {
        RunRecord {
            schema: RESULTS_SCHEMA.into(),
            tool: ToolInfo::this(),
            source: source.into(),
            label: None,
            started_at: Some(now_rfc3339()),
            finished_at: None,
            status: RunStatus::Complete,
            world_size: None,
            hosts: vec![],
            ranks: vec![],
            nccl: None,
            environment: relevant_environment(std::env::vars()),
            config: None,
            rows: vec![],
            pairs: vec![],
            nodes: vec![],
            analysis: None,
            fabric: None,
            counters: None,
            errors: vec![],
            ingest: None,
        }
    }

    /// Reads and checks a results file; errors name the file and the field.
    pub fn load(path: &Path) -> Result<RunRecord> {
        let text = crate::input::read_to_string(path)?;
        Self::parse(&text, &crate::input::origin(path))
    }

    /// The records of a results file: one object, or a list of them (several runs).
    pub fn parse_all(text: &str, origin: &str) -> Result<Vec<RunRecord>> {
        if text.trim_start().starts_with('[') {
            let values: Vec<serde_json::Value> =
                serde_json::from_str(text).map_err(|e| Error::BadInput {
                    what: origin.into(),
                    message: format!("not valid JSON ({e})"),
                    hint: Some(
                        "pass a results.json written by `netcheck run`, `launch` or `ingest`"
                            .into(),
                    ),
                })?;
            return values
                .iter()
                .enumerate()
                .map(|(i, v)| Self::parse(&v.to_string(), &format!("{origin}[{i}]")))
                .collect();
        }
        Self::parse(text, origin).map(|r| vec![r])
    }

    /// Parses one record; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<RunRecord> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| Error::BadInput {
            what: origin.into(),
            message: format!("not valid JSON ({e})"),
            hint: Some(
                "pass a results.json written by `netcheck run`, `launch` or `ingest`".into(),
            ),
        })?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(RESULTS_SCHEMA) => {}
            Some(other) if other_netcheck_file(other).is_some() => {
                let (what, from) = other_netcheck_file(other).expect("matched");
                return Err(Error::BadInput {
                    what: origin.into(),
                    message: format!("is {what} (`{other}`, from `{from}`), not a results file"),
                    hint: Some(
                        "pass the results.json written by `netcheck run`, `launch` or `ingest`"
                            .into(),
                    ),
                });
            }
            Some(other) => {
                return Err(Error::BadInput {
                    what: format!("{origin}: schema"),
                    message: format!("`{other}` is not supported (this netcheck reads `{RESULTS_SCHEMA}`)"),
                    hint: Some("re-create the file with this version of netcheck, or use the netcheck that wrote it".into()),
                });
            }
            None => {
                return Err(Error::BadInput {
                    what: format!("{origin}: schema"),
                    message: "missing; this is not a netcheck results file".into(),
                    hint: Some("convert nccl-tests output first: `netcheck ingest FILE --out results.json`".into()),
                });
            }
        }
        serde_json::from_value(value).map_err(|e| Error::bad_input(origin, format!("{e}")))
    }

    /// Writes `results.json` through `crate::output::write_file`: atomically for a regular
    /// file, through for a device or FIFO, `-` for stdout.
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("RunRecord serializes");
        crate::output::write_file(path, (text + "\n").as_bytes())
    }

    /// Writes several runs: one record as a plain object (what every reader expects), more
    /// as a JSON list of records.
    pub fn save_all(records: &[RunRecord], path: &Path) -> Result<()> {
        match records {
            [one] => one.save(path),
            many => {
                let text = serde_json::to_string_pretty(many).expect("RunRecord serializes");
                crate::output::write_file(path, (text + "\n").as_bytes())
            }
        }
    }
}

/// Appends rows to `results.jsonl` as they finish and flushes each one.
pub struct RowSink {
    path: PathBuf,
    file: std::fs::File,
}

impl RowSink {
    pub fn create(path: &Path) -> Result<RowSink> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::write(path, e))?;
        Ok(RowSink {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn append(&mut self, row: &ResultRow) -> Result<()> {
        let mut line = serde_json::to_vec(row).expect("ResultRow serializes");
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|_| self.file.flush())
            .map_err(|e| Error::write(&self.path, e))
    }
}

/// The variables that change what NCCL, libfabric and the OFI plugin do.
pub fn relevant_environment(
    vars: impl Iterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    const PREFIXES: &[&str] = &["NCCL_", "FI_", "OFI_", "RDMAV_", "CUDA_VISIBLE_DEVICES"];
    const EXACT: &[&str] = &["LD_LIBRARY_PATH", "LD_PRELOAD"];
    vars.filter(|(k, _)| PREFIXES.iter().any(|p| k.starts_with(p)) || EXACT.contains(&k.as_str()))
        .collect()
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_factors_match_nccl_tests() {
        assert_eq!(bus_factor("all_gather", 2), 0.5);
        assert_eq!(bus_factor("reduce_scatter", 8), 7.0 / 8.0);
        assert_eq!(bus_factor("all_reduce", 8), 2.0 * 7.0 / 8.0);
        assert_eq!(bus_factor("all_reduce", 1), 0.0);
    }

    #[test]
    fn gbs_refuses_zero_time() {
        assert_eq!(gbs(1_000_000_000, 1_000_000.0), Some(1.0));
        assert_eq!(gbs(1, 0.0), None);
    }

    #[test]
    fn record_round_trips_and_rejects_other_schemas() {
        let mut r = RunRecord::new("run");
        r.rows
            .push(ResultRow::for_test("all_gather", 1 << 20, false, 30.0));
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(RunRecord::parse(&text, "r.json").unwrap(), r);
        let other = text.replace(RESULTS_SCHEMA, "netcheck.results.v9");
        let e = RunRecord::parse(&other, "r.json").unwrap_err();
        assert!(e.to_string().contains("r.json: schema"), "{e}");
        let e = RunRecord::parse("{\"rows\": []}", "x.json").unwrap_err();
        assert!(e.to_string().contains("schema"), "{e}");
        assert_eq!(e.exit_code(), crate::exit::BAD_INPUT);
    }
}
