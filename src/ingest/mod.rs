//! nccl-tests output → RunRecords, so existing nccl-tests users get reports and gates in one
//! command.
//!
//! Two input formats, detected from the first non-blank character:
//! - `-J` JSON (`{` ...): the numbers at full precision, per-rank devices, the environment;
//!   a file cut off mid-write keeps every result that was complete (`json.rs`);
//! - the text output (`text.rs`), as users have it: behind launcher prefixes (`lines.rs`), in
//!   a docs page, several runs in one log, any layout since 2018, `NCCL_DEBUG` lines mixed in.
//!   Those log lines are handed to the log analyser.
//!
//! Both parsers produce [`Section`]s (one nccl-tests run each). `collective.rs` decides which
//! collective each measured when the output does not print it; every run becomes one
//! RunRecord.

mod collective;
mod json;
mod lines;
mod text;

use crate::error::{Error, Result};
use crate::logscan::Analysis;
use crate::results::{
    GpuInfo, HostInfo, IngestInfo, NcclInfo, RankInfo, ResultRow, RunRecord, RunStatus,
    relevant_environment,
};

pub use collective::Layout;
use collective::{Decision, Hints};

/// One input file's text and the name to use in messages.
pub struct Input {
    pub origin: String,
    pub text: String,
}

/// One nccl-tests run as the output showed it.
#[derive(Debug, Default, Clone)]
pub struct Section {
    /// Names of the collective the output gave (collective line, command line, ...).
    pub hints: Hints,
    pub layout: Layout,
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
    /// `# Avg bus bandwidth : X` and `# Out of bounds values : N`.
    pub avg_busbw: Option<f64>,
    pub out_of_bounds: Option<u64>,
    /// Rows whose cells are placeholders (`XXX.XX`) rather than numbers.
    pub placeholders: usize,
    /// Failures nccl-tests or the launcher printed (`Test NCCL failure ...`, JSON `errors`,
    /// a crash).
    pub failures: Vec<String>,
    /// Things the parser had to skip or repair, said to the user and kept in `errors`.
    pub notes: Vec<String>,
    /// Read from a `-J` file (full-precision numbers).
    pub json: bool,
    /// Ranks per process (`nThread` × `nGpus`) and the ranks a command line started.
    pub ranks_per_process: Option<u32>,
    pub command_ranks: Option<u32>,
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
    /// The `redop` cell as printed (`none`, `sum`, empty for hypercube); `None` without one.
    pub redop: Option<String>,
    pub root: Option<i64>,
    pub out_of_place: Option<Measure>,
    pub in_place: Option<Measure>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measure {
    pub time_us: crate::results::TimeStats,
    pub algbw_gbs: Option<f64>,
    pub busbw_gbs: Option<f64>,
    pub wrong: Option<u64>,
    /// The result was checked (`#wrong` a number) or not (`N/A`); `None` without the column.
    pub checked: Option<bool>,
}

/// Parses every input into its runs, one RunRecord each. `op` (`--op`) names the collective
/// of every run; `expect` is passed to the log analyser. Parts of one run in several files
/// (each rank's `-J` file of one job, or the text and the `-J` file of one run) make one
/// record; unrelated files stay apart.
pub fn ingest(inputs: &[Input], op: Option<&str>, expect: Option<&str>) -> Result<Vec<RunRecord>> {
    let mut runs: Vec<ParsedRun> = Vec::new();
    for input in inputs {
        let (sections, log_lines) = parse_input(input)?;
        let file_hint = collective::from_file_name(&input.origin);
        let analysis = (log_lines > 0)
            .then(|| analyse_mixed_log_lines(&[input], expect))
            .flatten();
        let several = sections.len() > 1;
        for (i, section) in sections.into_iter().enumerate() {
            let decision = collective::decide(&section, file_hint.as_deref(), op);
            let run = ParsedRun {
                files: vec![input.origin.clone()],
                index: if several { i as u32 + 1 } else { 0 },
                section,
                decision,
                analysis: analysis.clone(),
                file_hint: file_hint.clone(),
            };
            match runs.iter_mut().find(|r| r.same_run(&run)) {
                Some(earlier) => earlier.absorb(run),
                None => runs.push(run),
            }
        }
    }
    let several = runs.len() > 1;
    Ok(runs
        .into_iter()
        .map(|mut run| {
            if run.files.len() > 1 {
                // Decided again with every part's devices.
                run.decision = collective::decide(&run.section, run.file_hint.as_deref(), op);
            }
            let mut record = build_record(&run.section, &run.decision, &run.files, run.index);
            record.analysis = run.analysis;
            if several {
                let op = run.decision.op.as_deref().unwrap_or("unknown collective");
                let file = run.files[0].rsplit('/').next().unwrap_or(&run.files[0]);
                record.label = Some(if run.index > 0 {
                    format!("{file} run {}: {op}", run.index)
                } else {
                    format!("{file}: {op}")
                });
            }
            record
        })
        .collect())
}

/// A run on its way to a record.
struct ParsedRun {
    files: Vec<String>,
    /// Its place in a file of several runs (1-based), else 0.
    index: u32,
    section: Section,
    decision: Decision,
    /// The log analysis of its file's NCCL lines.
    analysis: Option<Analysis>,
    /// The collective its file name names.
    file_hint: Option<String>,
}

impl ParsedRun {
    /// One run's parts: each rank's `-J` file of one job (same start time and arguments), or
    /// the text and the `-J` output of one run (same collective, same sizes, counts and types,
    /// the same busbw to the text's two decimals, no contradicting device list).
    fn same_run(&self, other: &ParsedRun) -> bool {
        let (a, b) = (&self.section, &other.section);
        if a.started_at.is_some() && a.started_at == b.started_at && !a.args.is_empty() {
            return a.args == b.args;
        }
        if a.json == b.json
            || self.decision.op != other.decision.op
            || a.points.len() != b.points.len()
        {
            return false;
        }
        let processes = |s: &Section| {
            let mut p: Vec<(String, Option<u32>)> =
                s.devices.iter().map(|d| (d.host.clone(), d.pid)).collect();
            p.sort();
            p.dedup();
            p
        };
        let (pa, pb) = (processes(a), processes(b));
        if !pa.is_empty()
            && !pb.is_empty()
            && pa.iter().any(|p| !pb.contains(p))
            && pb.iter().any(|p| !pa.contains(p))
        {
            return false;
        }
        let busbw = |m: &Option<Measure>| m.as_ref().and_then(|m| m.busbw_gbs);
        let near = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => (x - y).abs() <= 0.0051 + 0.0005 * x.abs().max(y.abs()),
            (None, None) => true,
            _ => false,
        };
        a.points.iter().zip(&b.points).all(|(p, q)| {
            (p.bytes, p.count, &p.dtype) == (q.bytes, q.count, &q.dtype)
                && near(busbw(&p.out_of_place), busbw(&q.out_of_place))
                && near(busbw(&p.in_place), busbw(&q.in_place))
        })
    }

    /// Takes in another part of the same run: the `-J` numbers (full precision) win, the
    /// text's NCCL log analysis and device lines are kept.
    fn absorb(&mut self, other: ParsedRun) {
        self.files.extend(other.files);
        let mut other_section = other.section;
        if other_section.json && !self.section.json {
            std::mem::swap(&mut self.section, &mut other_section);
            self.decision = other.decision;
        }
        for d in &other_section.devices {
            if !self.section.devices.contains(d) {
                self.section.devices.push(d.clone());
            }
        }
        if self.section.nccl_version.is_none() {
            self.section.nccl_version = other_section.nccl_version;
        }
        if self.section.tests_version.is_none() {
            self.section.tests_version = other_section.tests_version;
        }
        self.analysis = self.analysis.take().or(other.analysis);
        self.index = self.index.max(other.index);
    }
}

/// `wrote r.json (14 rows: all_gather; 16 ranks on 2 hosts; status interrupted)` for one
/// record, `  run 2: ...` for each of several.
pub fn summary(record: &RunRecord, only: bool, out: &std::path::Path) -> String {
    let mut ops: std::collections::BTreeSet<&str> =
        record.rows.iter().map(|r| r.op.as_str()).collect();
    if let Some(op) = record.ingest.as_ref().and_then(|i| i.collective.as_deref()) {
        ops.insert(op);
    }
    let hosts = match record.hosts.len() {
        0 => "hosts not shown".to_string(),
        1 => "1 host".to_string(),
        n => format!("{n} hosts"),
    };
    let what = format!(
        "{} rows: {}; {} on {hosts}; status {}",
        record.rows.len(),
        ops.into_iter().collect::<Vec<_>>().join(", "),
        match record.world_size {
            Some(1) => "1 rank".to_string(),
            Some(n) => format!("{n} ranks"),
            None => "? ranks".to_string(),
        },
        format!("{:?}", record.status).to_lowercase(),
    );
    if only {
        let out = match out.to_str() {
            Some("-") => "the record to stdout".to_string(),
            _ => out.display().to_string(),
        };
        format!("wrote {out} ({what})")
    } else {
        format!("  {}: {what}", record.label.as_deref().unwrap_or("run"))
    }
}

/// Detects the format and parses one input into its runs (runs with rows, or failed runs
/// without) and the number of NCCL log lines. Bad input says what was found.
pub fn parse_input(input: &Input) -> Result<(Vec<Section>, usize)> {
    let first = input.text.trim_start().chars().next();
    let (sections, log_lines) = if first == Some('{') {
        (vec![json::parse(&input.text, &input.origin)?], 0)
    } else {
        text::parse(&input.text, &input.origin)
    };
    let runs: Vec<Section> = sections
        .iter()
        .filter(|s| !s.points.is_empty() || !s.failures.is_empty() && s.placeholders == 0)
        .cloned()
        .collect();
    if runs.is_empty() {
        return Err(Error::BadInput {
            what: input.origin.clone(),
            message: what_was_found(&sections, log_lines),
            hint: Some(
                "pass the output of an nccl-tests binary (e.g. all_gather_perf), or its -J file"
                    .into(),
            ),
        });
    }
    Ok((runs, log_lines))
}

/// Why an input holds no nccl-tests results, in the user's terms.
fn what_was_found(sections: &[Section], log_lines: usize) -> String {
    let placeholders: usize = sections.iter().map(|s| s.placeholders).sum();
    if placeholders > 0 {
        return format!(
            "no nccl-tests results: the table's {placeholders} rows hold placeholders such as \
             `XXX.XX` instead of measurements (a documentation template?)"
        );
    }
    if let Some(json) = sections.iter().find(|s| s.json) {
        return if json.complete {
            "an nccl-tests -J JSON file whose `results` list is empty".into()
        } else {
            "an nccl-tests -J JSON file with no complete result (cut off before its first result?)"
                .into()
        };
    }
    let header = sections.iter().any(|s| s.layout != Layout::default());
    let preamble = sections
        .iter()
        .any(|s| !s.devices.is_empty() || s.tests_version.is_some() || s.iters.is_some());
    let mut found = Vec::new();
    if header {
        found.push("an nccl-tests table header without result rows".to_string());
    } else if preamble {
        found.push(
            "nccl-tests header lines (version, parameters or devices) but no results table"
                .to_string(),
        );
    }
    if log_lines > 0 {
        found.push(format!("{log_lines} NCCL log lines"));
    }
    if found.is_empty() {
        "no nccl-tests results found (neither a `#  size  count  type ...` table with rows nor \
         a -J JSON `results` list with entries)"
            .into()
    } else {
        format!("no nccl-tests results found, only {}", found.join(" and "))
    }
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
    let mut analyzer = crate::logscan::Analyzer::new(crate::logscan::Options {
        expect,
        ..Default::default()
    });
    for input in inputs {
        // Reading from memory cannot fail.
        analyzer.feed(input.text.as_bytes(), &input.origin).ok()?;
    }
    Some(analyzer.finish())
}

/// One run → one RunRecord (`source: "ingest"`).
pub fn build_record(s: &Section, d: &Decision, files: &[String], run_in_file: u32) -> RunRecord {
    let mut record = RunRecord::new("ingest");
    // The environment and times are the ones nccl-tests ran with, not ours.
    record.environment = relevant_environment(s.env.iter().cloned());
    record.started_at = s.started_at.clone();
    record.finished_at = s.finished_at.clone();
    record.nccl = s.nccl_version.clone().map(|version| NcclInfo {
        version,
        library_path: None,
    });
    record.hosts = hosts_of(&s.devices);
    record.ranks = s
        .devices
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
    let mut listed: Vec<u32> = s.devices.iter().map(|d| d.rank).collect();
    listed.sort_unstable();
    listed.dedup();
    let (world, ranks_basis) = match (d.ranks, d.ranks_basis) {
        (Some(n), basis) => (Some(n), basis.unwrap_or("table")),
        (None, _) if !listed.is_empty() => (listed.last().map(|r| r + 1), "device-list"),
        (None, _) => (None, "unknown"),
    };
    record.world_size = world;
    let op = d.op.clone().unwrap_or_else(|| "unknown".into());
    for p in &s.points {
        for (in_place, m) in [(false, &p.out_of_place), (true, &p.in_place)] {
            if let Some(m) = m {
                record.rows.push(row(&op, p, in_place, m, s.iters));
            }
        }
    }
    record.errors.extend(s.failures.iter().cloned());
    if let Some(n) = s.out_of_bounds.filter(|n| *n > 0) {
        record.errors.push(format!(
            "nccl-tests reported {n} out-of-bounds values (# Out of bounds values : {n} FAILED)"
        ));
    }
    record.errors.extend(s.notes.iter().cloned());
    record.errors.extend(d.warnings.iter().cloned());
    record.status = if !s.failures.is_empty() {
        RunStatus::Failed
    } else if !s.complete {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let distinct = |f: &dyn Fn(&Point) -> Option<String>| {
        let mut v: Vec<String> = s.points.iter().filter_map(f).collect();
        v.sort();
        v.dedup();
        v
    };
    record.ingest = Some(IngestInfo {
        files: files.to_vec(),
        run_in_file: (run_in_file > 0).then_some(run_in_file),
        nccl_tests_version: s.tests_version.clone(),
        collective: d.op.clone(),
        collective_basis: d.basis.clone(),
        candidates: d.candidates.clone(),
        dtypes: distinct(&|p| Some(p.dtype.clone()).filter(|t| !t.is_empty())),
        redops: distinct(&|p| p.redop.clone().filter(|r| !r.is_empty() && r != "none")),
        avg_busbw_gbs: s.avg_busbw,
        out_of_bounds: s.out_of_bounds,
        listed_ranks: listed.len() as u32,
        ranks_basis: Some(ranks_basis.into()),
        warnings: d.warnings.clone(),
    });
    record
}

fn row(op: &str, p: &Point, in_place: bool, m: &Measure, iters: Option<u32>) -> ResultRow {
    ResultRow {
        op: op.to_string(),
        dtype: p.dtype.clone(),
        bytes: p.bytes,
        count: p.count,
        in_place,
        redop: p.redop.clone().filter(|r| !r.is_empty() && r != "none"),
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

/// `all_gather_perf` → `all_gather`.
pub fn op_from_binary(name: &str) -> Option<String> {
    let base = name.rsplit('/').next()?;
    let op = base
        .strip_suffix("_perf_mpi")
        .or_else(|| base.strip_suffix("_perf"))
        .unwrap_or(base);
    KNOWN_NCCL_TESTS_OPS.contains(&op).then(|| op.to_string())
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
                Ok(records) => {
                    assert_eq!(records.len(), 1);
                    assert_eq!(records[0].status, RunStatus::Interrupted);
                    kept.push(records[0].rows.len());
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
                "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res",
                "        1024           128     float    none      -1    20.73    0.05    0.02       0    17.55    0.06    0.03       0",
                "        2048           256     float    none      -1      N/A     N/A     N/A     N/A",
                "        4096           512     float              -1    20.73    0.05    0.02       0    17.55    0.06    0.03       0",
                "    579.3    0.00    0.00      0    137.0    0.00    0.00      0",
                "   268435456       4194304     float    none      -1    XXXXX  XXX.XX  XXX.XX    N/A",
                "# Collective test starting: all_gather_perf",
                "Collective test starting: mystery_perf",
                "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809",
                "#  Rank  0 Group  0 Pid   1385 on         vm device  0 [0000:00:06] NVIDIA H200",
                "#  Rank  0 Group  0 Pid   1386 on         vm device  0 [0000:00:06] NVIDIA H200",
                " 0: # nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20",
                "$ ./build/alltoall_perf -b 8 -e 1G",
                "vm:1:1 [0] NCCL INFO Using network Socket",
                "vm: Test NCCL failure all_reduce.cu:44 'unhandled cuda error'",
                "# Out of bounds values : 0 OK",
                "# Avg bus bandwidth    : 1e308",
                "99999999999999999999999 1 2",
                "0 0 float sum -1 0 0 0 0 0 0 0 0",
                "",
            ]),
            0..40,
        )) {
            let input = Input { origin: "p.txt".into(), text: lines.join("\n") };
            for op in [None, Some("all_gather")] {
                let inputs = [Input { origin: input.origin.clone(), text: input.text.clone() }];
                if let Err(e) = ingest(&inputs, op, None) {
                    proptest::prop_assert_eq!(e.exit_code(), crate::exit::BAD_INPUT);
                }
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
        assert_eq!(
            op_from_binary("alltoall_perf_mpi").as_deref(),
            Some("alltoall")
        );
        assert_eq!(op_from_binary("./build/mystery_perf"), None);
        let from_name = collective::from_file_name;
        assert_eq!(
            from_name("logs/all_reduce-2nodes.txt").as_deref(),
            Some("all_reduce")
        );
        assert_eq!(
            from_name("reduce_scatter.log").as_deref(),
            Some("reduce_scatter")
        );
        assert_eq!(
            from_name("nccl_allgather.log").as_deref(),
            Some("all_gather")
        );
        assert_eq!(
            from_name("alltoall_output.dat.1").as_deref(),
            Some("alltoall")
        );
        assert_eq!(from_name("all_reduce_vs_all_gather.txt"), None);
        assert_eq!(from_name("out.txt"), None);
    }

    #[test]
    fn the_text_and_the_json_of_one_run_are_one_record() {
        let text = "# Collective test starting: all_gather_perf\n\
            #  Rank  0 Group  0 Pid 11 on node-a device  0 [0x01] GPU\n\
            #  Rank  1 Group  0 Pid 11 on node-a device  1 [0x02] GPU\n\
            #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
            \x20    1048576        131072     float    none      -1    100.0   10.49    5.24      0    100.0   10.49    5.24      0\n\
            node-a:11:11 [0] NCCL INFO Using network Socket\n\
            # Out of bounds values : 0 OK\n";
        let json = r#"{"version": 3, "start_time": "2026-12-01 08:00:00",
            "args": ["./build/all_gather_perf", "-g", "2"], "nccl_version": 22809,
            "config": {"devices": [{"rank": 0, "pid": 11, "hostname": "node-a", "device": 0}]},
            "results": [{"size": 1048576, "count": 131072, "type": "float", "redop": "none",
              "root": "    -1",
              "out_of_place": {"time": 100.0, "alg_bw": 10.48576, "bus_bw": 5.24288, "nwrong": 0.0},
              "in_place": {"time": 100.0, "alg_bw": 10.48576, "bus_bw": 5.24288, "nwrong": 0.0}}],
            "end_time": "2026-12-01 08:00:01"}"#;
        let inputs = [
            Input {
                origin: "ag.txt".into(),
                text: text.into(),
            },
            Input {
                origin: "ag.json".into(),
                text: json.into(),
            },
        ];
        let records = ingest(&inputs, None, None).unwrap();
        assert_eq!(records.len(), 1, "one run printed twice");
        let r = &records[0];
        assert_eq!(r.rows[0].busbw_gbs, Some(5.24288), "the JSON's precision");
        assert!(r.analysis.is_some(), "the text's NCCL lines");
        assert_eq!(r.world_size, Some(2));
        assert_eq!(r.started_at.as_deref(), Some("2026-12-01T08:00:00"));
        assert_eq!(r.ingest.as_ref().unwrap().files, vec!["ag.txt", "ag.json"]);
        // A different run of the same collective stays apart.
        let other = text.replace("5.24", "5.31");
        let inputs = [
            Input {
                origin: "ag.txt".into(),
                text: other,
            },
            Input {
                origin: "ag.json".into(),
                text: json.into(),
            },
        ];
        assert_eq!(ingest(&inputs, None, None).unwrap().len(), 2);
    }

    #[test]
    fn each_ranks_json_of_one_job_is_one_record() {
        let json = |rank: u32, host: &str| {
            format!(
                r#"{{"version": 3, "start_time": "2026-12-01 08:00:00",
                "args": ["./build/broadcast_perf", "-b", "1M"], "nccl_version": 22809,
                "config": {{"devices": [{{"rank": {rank}, "pid": 7, "hostname": "{host}", "device": 0}}]}},
                "results": [{{"size": 1048576, "count": 262144, "type": "float", "redop": "none",
                  "root": "     0",
                  "out_of_place": {{"time": 100.0, "alg_bw": 10.48576, "bus_bw": 10.48576, "nwrong": 0.0}},
                  "in_place": {{"time": 100.0, "alg_bw": 10.48576, "bus_bw": 10.48576, "nwrong": 0.0}}}}],
                "end_time": "2026-12-01 08:00:01"}}"#
            )
        };
        let inputs = [
            Input {
                origin: "r0.json".into(),
                text: json(0, "node-a"),
            },
            Input {
                origin: "r1.json".into(),
                text: json(1, "node-b"),
            },
        ];
        let records = ingest(&inputs, None, None).unwrap();
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!(r.hosts.len(), 2);
        assert_eq!(r.world_size, Some(2), "from the merged device list");
        assert_eq!(r.rows.len(), 2, "the results once, not per file");
        assert_eq!(
            r.ingest.as_ref().unwrap().collective_basis,
            vec!["json-args", "table"]
        );
    }

    #[test]
    fn unrelated_inputs_are_separate_runs() {
        let text = |host: &str| {
            format!(
                "# Collective test starting: broadcast_perf\n\
                 #  Rank  0 Group  0 Pid 1 on {host} device  0 [0x01] GPU\n\
                 #  Rank  1 Group  0 Pid 2 on {host} device  1 [0x02] GPU\n\
                 #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
                 \x20    1048576        262144     float    none       0    100.0   10.49   10.49      0    100.0   10.49   10.49      0\n\
                 # Out of bounds values : 0 OK\n"
            )
        };
        let inputs = [
            Input {
                origin: "a.txt".into(),
                text: text("node-a"),
            },
            Input {
                origin: "b.txt".into(),
                text: text("node-b"),
            },
        ];
        let records = ingest(&inputs, None, None).unwrap();
        assert_eq!(records.len(), 2);
        for (r, host) in records.iter().zip(["node-a", "node-b"]) {
            assert_eq!(r.world_size, Some(2));
            assert_eq!(r.hosts.len(), 1);
            assert_eq!(r.hosts[0].hostname, host);
            assert_eq!(
                r.started_at, None,
                "no time in the file, none in the record"
            );
        }
    }
}
