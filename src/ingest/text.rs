//! nccl-tests' text output. The table is read by its header line, not by fixed positions, so
//! extra columns (per-iteration percentiles) and collectives without a reduction still parse.
//!
//! ```text
//! # nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809
//! # Collective test starting: all_gather_perf
//! # nThread 1 nGpus 2 minBytes 1024 maxBytes 4294967296 step: 4(factor) warmup iters: 5 iters: 20 ...
//! #  Rank  0 Group  0 Pid   1385 on         vm device  0 [0000:00:06] NVIDIA H200
//! #                                              out-of-place                       in-place
//! #       size         count      type   redop    root     time   algbw   busbw  #wrong     time ...
//!         1024           128     float    none      -1    20.73    0.05    0.02       0    17.55 ...
//! # Out of bounds values : 0 OK
//! # Avg bus bandwidth    : 109.953
//! # Collective test concluded: all_gather_perf
//! ```
//!
//! Every other line (`NCCL INFO`, `NCCL WARN`, launcher noise) is counted; the whole text then
//! goes to the log analyser.

use std::sync::LazyLock;

use regex::Regex;

use super::{Device, Measure, Point, Section, dtype_name, nccl_version_from_code};

/// Prefixes launchers put in front of every line: Open MPI's `--tag-output`, `kubectl logs
/// --timestamps` and `kubectl logs --prefix`.
static LAUNCHER_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\[pod/[^\]]+\] ?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)? )+",
    )
    .expect("valid regex")
});

static RANK_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$",
    )
    .expect("valid regex")
});

static VERSION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^nccl-tests version (\S+)(?:.*nccl-library=(\d+))?").expect("valid regex")
});

/// Parses a whole text output into its sections, and counts the lines that are not
/// nccl-tests' own.
pub fn parse(text: &str, origin: &str) -> (Vec<Section>, usize) {
    let mut parser = Parser {
        origin: origin.to_string(),
        ..Default::default()
    };
    let mut log_lines = 0;
    let lines: Vec<&str> = text.lines().collect();
    for (index, raw) in lines.iter().enumerate() {
        let raw = raw.trim_end_matches('\r');
        let number = index as u64 + 1;
        let line = LAUNCHER_PREFIX.replace(raw, "");
        let line = line.trim();
        if let Some(comment) = line.strip_prefix('#') {
            parser.comment(comment.trim());
        } else if parser.is_row(line) {
            let last = index + 1 == lines.len();
            parser.row(line, number, last);
        } else if !line.is_empty() {
            parser.other(line, number);
            log_lines += 1;
        }
    }
    (parser.finish(), log_lines)
}

#[derive(Default)]
struct Parser {
    origin: String,
    sections: Vec<Section>,
    current: Option<Section>,
    columns: Option<Columns>,
    /// The group-label line above the column header says which group comes first.
    in_place_first: bool,
}

/// Column names of the results table, split into the descriptors before the first `time` and
/// one group per placement.
struct Columns {
    names: Vec<String>,
    groups: Vec<std::ops::Range<usize>>,
}

impl Parser {
    fn section(&mut self) -> &mut Section {
        self.current.get_or_insert_with(Section::default)
    }

    /// A new run starts at a version or `Collective test starting` line once the current
    /// section has results or a collective of its own.
    fn start_section_if_used(&mut self) {
        let used = self
            .current
            .as_ref()
            .is_some_and(|s| !s.points.is_empty() || s.op.is_some());
        if used {
            self.sections.extend(self.current.take());
            self.columns = None;
        }
    }

    fn comment(&mut self, body: &str) {
        if let Some(c) = VERSION_LINE.captures(body) {
            self.start_section_if_used();
            let section = self.section();
            section.tests_version = Some(c[1].to_string());
            section.nccl_version = c
                .get(2)
                .and_then(|m| m.as_str().parse().ok())
                .map(nccl_version_from_code);
        } else if let Some(binary) = body.strip_prefix("Collective test starting:") {
            if self.current.as_ref().is_some_and(|s| s.op.is_some()) {
                self.start_section_if_used();
            }
            self.section().op = super::op_from_binary(binary.trim());
        } else if body.starts_with("nThread") {
            self.section().iters = timed_iters(body);
        } else if let Some(c) = RANK_LINE.captures(body) {
            let device = Device {
                rank: c[1].parse().unwrap_or_default(),
                pid: c[2].parse().ok(),
                host: c[3].to_string(),
                device: c[4].parse().unwrap_or_default(),
                bus_id: Some(c[5].to_string()).filter(|b| !b.is_empty()),
                name: c[6].trim().to_string(),
            };
            let devices = &mut self.section().devices;
            if !devices.iter().any(|d| d.rank == device.rank) {
                devices.push(device);
            }
        } else if body.contains("out-of-place") && body.contains("in-place") {
            self.in_place_first = body.find("in-place") < body.find("out-of-place");
        } else if let Some(columns) = Columns::from_header(body) {
            self.columns = Some(columns);
        } else if body.starts_with("Out of bounds values")
            || body.starts_with("Avg bus bandwidth")
            || body.starts_with("Collective test concluded")
        {
            self.section().complete = true;
        }
    }

    fn is_row(&self, line: &str) -> bool {
        self.columns.is_some()
            && line
                .split_whitespace()
                .next()
                .is_some_and(|t| t.parse::<u64>().is_ok())
    }

    fn row(&mut self, line: &str, number: u64, last_line: bool) {
        let columns = self.columns.as_ref().expect("is_row checked the header");
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.len() != columns.names.len() {
            let why = if last_line {
                "the file ends inside it (truncated output?)"
            } else {
                "it does not match the table header"
            };
            let note = format!(
                "{}: line {number}: skipped a results row with {} of {} columns: {why}",
                self.origin,
                tokens.len(),
                columns.names.len()
            );
            self.section().notes.push(note);
            return;
        }
        let point = columns.point(&tokens, self.in_place_first);
        self.section().points.push(point);
    }

    fn other(&mut self, line: &str, number: u64) {
        // nccl-tests' own failure reports: `Test NCCL failure common.cu:1234 'unhandled ...'`.
        if line.contains("Test NCCL failure")
            || line.contains("Test CUDA failure")
            || line.contains("Test failure")
        {
            let failure = format!("{}: line {number}: {line}", self.origin);
            self.section().failures.push(failure);
        }
    }

    fn finish(mut self) -> Vec<Section> {
        self.sections.extend(self.current.take());
        self.sections
    }
}

impl Columns {
    fn from_header(body: &str) -> Option<Columns> {
        let names: Vec<String> = body.split_whitespace().map(str::to_string).collect();
        if names.first().map(String::as_str) != Some("size") || !names.iter().any(|n| n == "time") {
            return None;
        }
        let starts: Vec<usize> = (0..names.len()).filter(|&i| names[i] == "time").collect();
        let groups = starts
            .iter()
            .enumerate()
            .map(|(k, &start)| start..starts.get(k + 1).copied().unwrap_or(names.len()))
            .collect();
        Some(Columns { names, groups })
    }

    fn value(&self, tokens: &[&str], name: &str) -> Option<String> {
        let first_group = self.groups.first().map_or(self.names.len(), |g| g.start);
        (0..first_group)
            .find(|&i| self.names[i] == name)
            .map(|i| tokens[i].to_string())
    }

    fn point(&self, tokens: &[&str], in_place_first: bool) -> Point {
        let measures: Vec<Measure> = self
            .groups
            .iter()
            .map(|g| measure(&self.names[g.clone()], &tokens[g.clone()]))
            .collect();
        let (mut oop, mut ip) = (measures.first().cloned(), measures.get(1).cloned());
        if in_place_first {
            std::mem::swap(&mut oop, &mut ip);
        }
        Point {
            bytes: tokens[0].parse().unwrap_or_default(),
            count: self
                .value(tokens, "count")
                .and_then(|c| c.parse().ok())
                .unwrap_or_default(),
            dtype: self
                .value(tokens, "type")
                .map(|t| dtype_name(&t))
                .unwrap_or_default(),
            redop: self.value(tokens, "redop").filter(|r| r != "none"),
            out_of_place: oop,
            in_place: ip,
        }
    }
}

fn measure(names: &[String], tokens: &[&str]) -> Measure {
    let mut m = Measure::default();
    for (name, token) in names.iter().zip(tokens) {
        let value = token.parse::<f64>().ok().filter(|v| v.is_finite());
        match name.as_str() {
            "time" => m.time_us.mean = value.unwrap_or(f64::NAN),
            "algbw" => m.algbw_gbs = value,
            "busbw" => m.busbw_gbs = value,
            "#wrong" => m.wrong = value.map(|v| v as u64),
            "min" => m.time_us.min = value,
            "max" => m.time_us.max = value,
            "p50" => m.time_us.p50 = value,
            "p99" => m.time_us.p99 = value,
            _ => {}
        }
    }
    if m.time_us.mean.is_nan() {
        // `N/A` time: nothing was measured; keep the row so the gate can say so.
        m.time_us.mean = 0.0;
        m.algbw_gbs = None;
        m.busbw_gbs = None;
    }
    m
}

/// `... warmup iters: 5 iters: 20 agg iters: 1 ...` → 20.
fn timed_iters(body: &str) -> Option<u32> {
    let tokens: Vec<&str> = body.split_whitespace().collect();
    tokens.windows(3).find_map(|w| {
        (w[1] == "iters:" && w[0] != "warmup" && w[0] != "agg")
            .then(|| w[2].parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_iters_skips_warmup_and_agg() {
        let line = "nThread 1 nGpus 2 minBytes 1024 maxBytes 4096 step: 4(factor) warmup iters: 5 \
                    iters: 20 agg iters: 1 validation: 1 graph: 0";
        assert_eq!(timed_iters(line), Some(20));
    }

    #[test]
    fn launcher_prefixes_are_removed() {
        for line in [
            "[1,0]<stdout>:#  Rank  0 Group  0 Pid 1 on a device  0 [0000:00:06] GPU",
            "2026-11-30T02:26:05.123456789Z #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "[pod/nccl-0/worker] #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
        ] {
            assert!(
                LAUNCHER_PREFIX.replace(line, "").starts_with("#  Rank"),
                "{line}"
            );
        }
    }

    #[test]
    fn rank_lines_with_and_without_group_parse() {
        let c = RANK_LINE
            .captures(
                "Rank  3 Group  0 Pid  77 on node-b device  1 [0000:53:00] NVIDIA H100 80GB HBM3",
            )
            .unwrap();
        assert_eq!((&c[1], &c[3], &c[4]), ("3", "node-b", "1"));
        assert_eq!(&c[6], "NVIDIA H100 80GB HBM3");
        let c = RANK_LINE
            .captures("Rank  0 Pid  12 on host device  0 [0x1b] Tesla V100-SXM2-16GB")
            .unwrap();
        assert_eq!(&c[5], "0x1b");
    }
}
