//! nccl-tests output → RunRecord, so existing nccl-tests users get reports and gates in one
//! command.
//!
//! Two input formats, detected from the first non-blank character:
//! - `-J` JSON (`{` ...): the numbers at full precision, per-rank devices, the environment;
//!   a file cut off mid-write keeps every result that was complete (`json.rs`);
//! - the text output (`text.rs`): one or more `# Collective test starting` sections, with
//!   `NCCL_DEBUG` lines mixed in anywhere. Those log lines are handed to the log analyser.
//!
//! Both parsers produce [`Section`]s (one collective test each); [`build_record`] folds them into
//! one RunRecord.

mod json;
mod text;

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::logscan::Analysis;
use crate::results::{
    GpuInfo, HostInfo, NcclInfo, RankInfo, ResultRow, RunRecord, RunStatus, TimeStats, bus_factor,
    relevant_environment,
};

/// One input file's text and the name to use in messages.
pub struct Input {
    pub origin: String,
    pub text: String,
}

/// One collective test as nccl-tests reported it.
#[derive(Debug, Default)]
pub struct Section {
    /// netcheck's op name: `all_gather`, `reduce_scatter`, `all_reduce`, `alltoall`, ...
    pub op: Option<String>,
    pub tests_version: Option<String>,
    pub nccl_version: Option<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub iters: Option<u32>,
    pub devices: Vec<Device>,
    pub points: Vec<Point>,
    /// The output reached its end marker (footer / closed JSON).
    pub complete: bool,
    /// Failures nccl-tests printed (`Test NCCL failure ...`, JSON `errors`).
    pub failures: Vec<String>,
    /// Things the parser had to skip or repair, said to the user and kept in `errors`.
    pub notes: Vec<String>,
}

/// `#  Rank  0 Group  0 Pid 1385 on vm device  0 [0000:00:06] NVIDIA H200`
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Device {
    pub rank: u32,
    pub pid: Option<u32>,
    pub host: String,
    pub device: u32,
    pub bus_id: Option<String>,
    pub name: String,
}

/// One line of the results table: a size with its out-of-place and in-place measurements.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    pub bytes: u64,
    pub count: u64,
    pub dtype: String,
    pub redop: Option<String>,
    pub out_of_place: Option<Measure>,
    pub in_place: Option<Measure>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measure {
    pub time_us: TimeStats,
    pub algbw_gbs: Option<f64>,
    pub busbw_gbs: Option<f64>,
    pub wrong: Option<u64>,
}

/// Parses every input and folds the sections into one RunRecord. `op` names the collective
/// for outputs that don't say (old nccl-tests text without a `Collective test starting` line).
pub fn ingest(inputs: &[Input], op: Option<&str>, expect: Option<&str>) -> Result<RunRecord> {
    let mut sections = Vec::new();
    let mut with_logs = Vec::new();
    for input in inputs {
        let (mut found, log_lines) = parse_input(input)?;
        for s in &mut found {
            if s.op.is_none() {
                s.op = op
                    .map(str::to_string)
                    .or_else(|| op_from_file_name(&input.origin));
            }
            if s.op.is_none() {
                return Err(Error::BadInput {
                    what: input.origin.clone(),
                    message: "cannot tell which collective this output measured".into(),
                    hint: Some("pass it with --op, e.g. `--op all_reduce`".into()),
                });
            }
        }
        sections.extend(found);
        if log_lines > 0 {
            with_logs.push(input);
        }
    }
    let mut record = build_record(&sections);
    record.analysis = analyse_mixed_log_lines(&with_logs, expect);
    Ok(record)
}

/// Detects the format and parses one input into its sections and the number of lines that
/// are not nccl-tests' own (NCCL_DEBUG output, launcher noise). Errors name the file and, for
/// JSON, the field.
pub fn parse_input(input: &Input) -> Result<(Vec<Section>, usize)> {
    let first = input.text.trim_start().chars().next();
    let (sections, log_lines) = if first == Some('{') {
        (vec![json::parse(&input.text, &input.origin)?], 0)
    } else {
        text::parse(&input.text, &input.origin)
    };
    if sections.iter().all(|s| s.points.is_empty()) {
        return Err(Error::BadInput {
            what: input.origin.clone(),
            message: "no nccl-tests results found (neither a `#  size  count  type ...` table \
                      with rows nor a -J JSON `results` list with entries)"
                .into(),
            hint: Some(
                "pass the output of an nccl-tests binary (e.g. all_gather_perf), or its -J file"
                    .into(),
            ),
        });
    }
    Ok((sections, log_lines))
}

/// Runs the log analyser over the text inputs that carry `NCCL_DEBUG` lines (the whole text,
/// so evidence line numbers are the file's and the `# Rank` header lines count), with
/// `expect` as `--expect`. `None` when no input has log lines: nothing analysed is not
/// "unknown transport".
pub fn analyse_mixed_log_lines(inputs: &[&Input], expect: Option<&str>) -> Option<Analysis> {
    if inputs.is_empty() {
        return None;
    }
    let expect = expect
        .filter(|e| *e != "any")
        .and_then(|e| e.parse::<crate::logscan::Transport>().ok());
    let mut analyzer = crate::logscan::Analyzer::new(crate::logscan::Options { expect });
    for input in inputs {
        // Reading from memory cannot fail.
        analyzer.feed(input.text.as_bytes(), &input.origin).ok()?;
    }
    Some(analyzer.finish())
}

/// Folds parsed sections into one RunRecord (`source: "ingest"`).
pub fn build_record(sections: &[Section]) -> RunRecord {
    let mut record = RunRecord::new("ingest");
    // The environment is the one nccl-tests ran with (JSON), not ours.
    record.environment = BTreeMap::new();
    let first = sections.first();
    if let Some(started) = first.and_then(|s| s.started_at.clone()) {
        record.started_at = started;
    }
    record.finished_at = sections.iter().rev().find_map(|s| s.finished_at.clone());
    record.nccl = sections
        .iter()
        .find_map(|s| s.nccl_version.clone())
        .map(|version| NcclInfo {
            version,
            library_path: None,
        });
    for s in sections {
        record
            .environment
            .extend(relevant_environment(s.env.iter().cloned()));
    }
    let devices = sections
        .iter()
        .max_by_key(|s| s.devices.len())
        .map(|s| s.devices.clone())
        .unwrap_or_default();
    record.hosts = hosts_of(&devices);
    record.ranks = devices
        .iter()
        .map(|d| RankInfo {
            rank: d.rank,
            host: d.host.clone(),
            gpu: d.device,
            pid: d.pid,
            log: None,
            node: None,
            local_rank: None,
        })
        .collect();
    record.world_size = sections
        .iter()
        .filter_map(world_size)
        .max()
        .or((!devices.is_empty()).then_some(devices.len() as u32));
    for s in sections {
        let op = s.op.clone().unwrap_or_default();
        for p in &s.points {
            for (in_place, m) in [(false, &p.out_of_place), (true, &p.in_place)] {
                if let Some(m) = m {
                    record.rows.push(row(&op, p, in_place, m, s.iters));
                }
            }
        }
        record.errors.extend(s.failures.iter().cloned());
        record.errors.extend(s.notes.iter().cloned());
    }
    record.status = if sections.iter().any(|s| !s.failures.is_empty()) {
        RunStatus::Failed
    } else if sections.iter().any(|s| !s.complete) {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    record
}

fn row(op: &str, p: &Point, in_place: bool, m: &Measure, iters: Option<u32>) -> ResultRow {
    ResultRow {
        op: op.to_string(),
        dtype: p.dtype.clone(),
        bytes: p.bytes,
        count: p.count,
        in_place,
        redop: p.redop.clone(),
        iters,
        time_us: m.time_us.clone(),
        algbw_gbs: m.algbw_gbs,
        busbw_gbs: m.busbw_gbs,
        wrong: m.wrong,
        group: None,
    }
}

fn hosts_of(devices: &[Device]) -> Vec<HostInfo> {
    let mut hosts: Vec<HostInfo> = Vec::new();
    for d in devices {
        let gpu = GpuInfo {
            index: d.device,
            name: d.name.clone(),
            pci_bus_id: d.bus_id.clone(),
            memory_bytes: None,
        };
        match hosts.iter_mut().find(|h| h.hostname == d.host) {
            Some(h) if !h.gpus.iter().any(|g| g.index == d.device) => h.gpus.push(gpu),
            Some(_) => {}
            None => hosts.push(HostInfo {
                hostname: d.host.clone(),
                gpus: vec![gpu],
                ..Default::default()
            }),
        }
    }
    hosts
}

/// The number of ranks. nccl-tests' JSON lists one device per process, so a single process
/// driving several GPUs (`-g 2`) shows one device; the bus/alg bandwidth ratio of the largest
/// measured size gives the true count for collectives whose factor depends on it.
fn world_size(s: &Section) -> Option<u32> {
    let listed = (!s.devices.is_empty()).then_some(s.devices.len() as u32);
    let op = s.op.as_deref()?;
    let best = s
        .points
        .iter()
        .filter_map(|p| p.out_of_place.as_ref().or(p.in_place.as_ref()))
        .filter(|m| m.algbw_gbs.is_some_and(|a| a > 0.0))
        .max_by(|a, b| a.algbw_gbs.partial_cmp(&b.algbw_gbs).unwrap())?;
    let ratio = best.busbw_gbs? / best.algbw_gbs?;
    let per_rank = match op {
        "all_gather" | "reduce_scatter" | "alltoall" => ratio,
        "all_reduce" => ratio / 2.0,
        _ => return listed,
    };
    // (n-1)/n = r  →  n = 1/(1-r); rounding in text output (two decimals) makes small sizes
    // useless, hence the largest size; accept the estimate only when it is close to an integer.
    if !(0.0..0.999).contains(&per_rank) {
        return listed;
    }
    let n = 1.0 / (1.0 - per_rank);
    let rounded = n.round();
    let consistent = rounded >= 2.0 && (n - rounded).abs() < 0.05 * rounded;
    let matches = |count: u32| {
        let factor = bus_factor(op, count) / if op == "all_reduce" { 2.0 } else { 1.0 };
        (factor - per_rank).abs() < 0.01
    };
    match listed {
        Some(count) if matches(count) => Some(count),
        _ if consistent => Some(rounded as u32),
        other => other,
    }
}

/// `all_gather_perf` → `all_gather`.
pub fn op_from_binary(name: &str) -> Option<String> {
    let base = name.rsplit('/').next()?;
    let op = base.strip_suffix("_perf").unwrap_or(base);
    KNOWN_NCCL_TESTS_OPS.contains(&op).then(|| op.to_string())
}

/// The collective named in a file name such as `all_reduce-2nodes.txt`, if exactly one is.
fn op_from_file_name(origin: &str) -> Option<String> {
    let base = origin.rsplit('/').next().unwrap_or(origin);
    let mut found = KNOWN_NCCL_TESTS_OPS
        .iter()
        .filter(|op| base.contains(*op))
        .collect::<Vec<_>>();
    // `reduce` is part of `all_reduce` and `reduce_scatter`: keep the longest match only.
    found.sort_by_key(|op| std::cmp::Reverse(op.len()));
    found.first().map(|op| op.to_string())
}

const KNOWN_NCCL_TESTS_OPS: &[&str] = &[
    "all_gather",
    "reduce_scatter",
    "all_reduce",
    "alltoall",
    "alltoallv",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "sendrecv",
    "hypercube",
];

/// nccl-tests' type names → netcheck's (`float` → `float32`, ...); unknown names are kept.
pub fn dtype_name(nccl_tests: &str) -> String {
    match nccl_tests {
        "float" => "float32",
        "half" => "float16",
        "double" => "float64",
        "bfloat16" => "bfloat16",
        other => other,
    }
    .to_string()
}

/// `NCCL_VERSION_CODE` → `2.28.9`. Since NCCL 2.9 the code is major·10000 + minor·100 + patch;
/// before that it was major·1000 + minor·100 + patch.
pub fn nccl_version_from_code(code: u64) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A -J file cut off anywhere gives its complete results or a clear error, never a panic.
    #[test]
    fn json_cut_at_any_point_never_panics() {
        let full = include_str!("../../tests/fixtures/nccl-tests/reduce_scatter_2nodes.json");
        let mut kept = Vec::new();
        for cut in (1..full.len()).step_by(37) {
            let input = Input {
                origin: "cut.json".into(),
                text: full[..cut].to_string(),
            };
            match ingest(&[input], None, None) {
                Ok(record) => {
                    assert_eq!(record.status, crate::results::RunStatus::Interrupted);
                    kept.push(record.rows.len());
                }
                Err(e) => assert_eq!(e.exit_code(), crate::exit::BAD_INPUT, "{e}"),
            }
        }
        assert!(
            kept.windows(2).all(|w| w[0] <= w[1]),
            "longer prefixes keep more"
        );
        assert!(kept.last().copied().unwrap_or(0) >= 20);
    }

    proptest::proptest! {
        /// Arbitrary text built from table-like pieces parses or is refused, never panics.
        #[test]
        fn any_text_parses_or_is_refused(lines in proptest::collection::vec(
            proptest::sample::select(vec![
                "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong",
                "        1024           128     float    none      -1    20.73    0.05    0.02       0    17.55    0.06    0.03       0",
                "        2048           256     float    none      -1      N/A     N/A     N/A     N/A",
                "# Collective test starting: all_gather_perf",
                "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809",
                "#  Rank  0 Group  0 Pid   1385 on         vm device  0 [0000:00:06] NVIDIA H200",
                "vm:1:1 [0] NCCL INFO Using network Socket",
                "# Out of bounds values : 0 OK",
                "99999999999999999999999 1 2",
                "",
            ]),
            0..40,
        )) {
            let input = Input { origin: "p.txt".into(), text: lines.join("\n") };
            if let Err(e) = ingest(&[input], Some("all_gather"), None) {
                proptest::prop_assert_eq!(e.exit_code(), crate::exit::BAD_INPUT);
            }
        }
    }

    #[test]
    fn version_codes_decode() {
        assert_eq!(nccl_version_from_code(22809), "2.28.9");
        assert_eq!(nccl_version_from_code(21905), "2.19.5");
        assert_eq!(nccl_version_from_code(2708), "2.7.8");
    }

    #[test]
    fn ops_come_from_binaries_and_file_names() {
        assert_eq!(
            op_from_binary("./build/all_gather_perf").as_deref(),
            Some("all_gather")
        );
        assert_eq!(op_from_binary("./build/mystery_perf"), None);
        assert_eq!(
            op_from_file_name("logs/all_reduce-2nodes.txt").as_deref(),
            Some("all_reduce")
        );
        assert_eq!(
            op_from_file_name("reduce_scatter.log").as_deref(),
            Some("reduce_scatter")
        );
        assert_eq!(op_from_file_name("out.txt"), None);
    }

    fn section(op: &str, devices: usize, algbw: f64, busbw: f64) -> Section {
        Section {
            op: Some(op.into()),
            devices: (0..devices as u32)
                .map(|rank| Device {
                    rank,
                    ..Default::default()
                })
                .collect(),
            points: vec![Point {
                out_of_place: Some(Measure {
                    algbw_gbs: Some(algbw),
                    busbw_gbs: Some(busbw),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn world_size_comes_from_the_bandwidth_ratio_when_devices_are_incomplete() {
        // One listed device (one process, -g 2), busbw = algbw/2 → 2 ranks.
        assert_eq!(world_size(&section("all_gather", 1, 584.4, 292.2)), Some(2));
        // 16 ranks listed and consistent with 15/16.
        assert_eq!(
            world_size(&section("all_gather", 16, 160.0, 150.0)),
            Some(16)
        );
        // all_reduce: 2(n-1)/n = 1.75 → 8.
        assert_eq!(world_size(&section("all_reduce", 0, 100.0, 175.0)), Some(8));
        // broadcast: factor 1 says nothing; keep the listed devices.
        assert_eq!(world_size(&section("broadcast", 4, 10.0, 10.0)), Some(4));
    }
}
