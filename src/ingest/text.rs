//! nccl-tests' text output, as users have it: a terminal log, a job's output file, a docs
//! page. The format of the current version (2.19, `src/util.cu`):
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
//! Older versions print no version or `Collective test starting` line, only the columns a test
//! has (`size count type redop time algbw busbw error` before 2.13, with a max-error value in
//! `error`), and the 2018 layout `bytes N type op time algbw busbw res` timed in milliseconds.
//! The table is read by its header line, so extra columns (`-I` per-iteration statistics,
//! `-t` timestamps) parse too. Lines are read after their launcher prefixes are removed
//! ([`super::lines`]), with or without the leading `#` (docs generators strip it).
//!
//! A file holds as many runs as it shows: a new run starts at a version, `Collective test
//! starting` or `nThread` line, at a command line running an nccl-tests binary, or at a table
//! header, once the run before has results.

use std::sync::LazyLock;

use regex::Regex;

use super::collective::{Hints, Layout};
use super::lines::{
    binary_in_command, collector_timestamp, mentions, strip_prefixes, without_ansi,
};
use super::{Device, Measure, Point, Section, dtype_name, nccl_version_from_code};

static RANK_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^Rank\s+(\d+)(?:\s+Group\s+\d+)?(?:\s+Pid\s+(\d+))?\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$",
    )
    .expect("valid regex")
});

static VERSION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^nccl-tests version (\S+)(?:.*nccl-library=(\d+))?").expect("valid regex")
});

/// `NCCL version 2.16.5+cuda11.8` (NCCL's own banner) or `NCCL Tests compiled with NCCL 2.4`.
static NCCL_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"NCCL (?:version|Tests compiled with NCCL) (\d+\.\d+(?:\.\d+)?)")
        .expect("valid regex")
});

/// `Test NCCL failure all_reduce.cu:44 ...`: the test's source file names the collective.
static FAILURE_SOURCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b([a-z_]+)\.cu:\d+").expect("valid regex"));

/// What a failed or crashed run prints (nccl-tests' own checks, the launcher, the shell).
const FAILURE_MARKS: &[&str] = &[
    "Test NCCL failure",
    "Test CUDA failure",
    "Test failure",
    "Segmentation fault",
    "exited on signal",
    "killed by signal",
    "core dumped",
    "terminate called after throwing",
    "returned a non-zero exit code",
];

/// Parses a whole text output into its runs, and counts its NCCL log lines.
pub fn parse(text: &str, origin: &str) -> (Vec<Section>, usize) {
    let mut parser = Parser {
        origin: origin.to_string(),
        ..Default::default()
    };
    let mut log_lines = 0;
    let text = without_ansi(text);
    let lines: Vec<&str> = text.lines().collect();
    for (index, raw) in lines.iter().enumerate() {
        let number = index as u64 + 1;
        parser.stamp = collector_timestamp(raw).map(str::to_string);
        let line = strip_prefixes(raw);
        if line.contains("NCCL INFO") || line.contains("NCCL WARN") || line.contains("NCCL TRACE") {
            log_lines += 1;
            parser.nccl_version(line);
            // A row that NCCL's line interrupted: its first part is before the log line.
            parser.in_log_line = true;
            parser.row(line, number, false);
            parser.in_log_line = false;
            continue;
        }
        let body = line.strip_prefix('#').map_or(line, str::trim);
        if parser.nccl_tests_line(body) {
            continue;
        }
        // An unknown wrapper before a `#` line (`host | # nThread ...`), or before a line
        // whose `#` a docs generator stripped (`host | nThread ...`): try what follows the
        // first few separators.
        let after = |sep: &'static str| {
            line.match_indices(sep)
                .take(3)
                .map(move |(at, _)| line[at + sep.len()..].trim())
        };
        let mut candidates = after("# ")
            .chain(after(": "))
            .chain(after("| "))
            .chain(after("] "))
            .chain(after(") "));
        if candidates.any(|rest| {
            let rest = rest.strip_prefix('#').map_or(rest, str::trim);
            !rest.is_empty() && parser.nccl_tests_line(rest)
        }) {
            continue;
        }
        if parser.row(body, number, index + 1 == lines.len()) {
            continue;
        }
        if !line.is_empty() {
            parser.other(line, number);
        }
    }
    (parser.finish(), log_lines)
}

#[derive(Default)]
struct Parser {
    origin: String,
    sections: Vec<Section>,
    current: Section,
    /// The current run has a `nThread ...` line.
    params: bool,
    columns: Option<Columns>,
    /// The group-label line above the column header says which group comes first.
    in_place_first: bool,
    /// The first part of a row that another line interrupted.
    pending: Option<(Vec<String>, u64)>,
    /// Collectives named in prose after the current run's table: the next run's context.
    later_mentions: Vec<String>,
    /// The log collector's time on the current line.
    stamp: Option<String>,
    /// The first lines of a command continued with `\\`.
    continued: String,
    /// The line being read is an NCCL log line: only the start of a row counts in it.
    in_log_line: bool,
}

/// Column names of the results table (normalised: `size`, `count`, `type`, `redop`, `root`,
/// `time`, `algbw`, `busbw`, `wrong`, `error`, `min`, `max`, `p50`, `p99`, ...), split into
/// the descriptors before the first `time` and one group per placement.
#[derive(Clone)]
struct Columns {
    names: Vec<String>,
    groups: Vec<std::ops::Range<usize>>,
    descriptors: usize,
    /// The 2018 layout (`bytes N type op ...`).
    v1: bool,
}

/// A table cell.
#[derive(PartialEq)]
enum Cell {
    Number(f64),
    NotAvailable,
    /// `XXX.XX`: a docs template.
    Placeholder,
    Other,
}

fn cell(token: &str) -> Cell {
    if token == "N/A" {
        Cell::NotAvailable
    } else if let Ok(v) = token.parse::<f64>() {
        if v.is_finite() {
            Cell::Number(v)
        } else {
            Cell::Other
        }
    } else if !token.is_empty() && token.chars().all(|c| matches!(c, 'X' | 'x' | '.' | '-')) {
        Cell::Placeholder
    } else {
        Cell::Other
    }
}

impl Parser {
    /// The current run has measured something or ended.
    fn has_results(&self) -> bool {
        !self.current.points.is_empty() || self.current.complete || self.current.placeholders > 0
    }

    fn start_run(&mut self, inherit: bool) {
        self.flush_pending();
        let mut next = Section::default();
        if inherit {
            let c = &self.current;
            next.tests_version = c.tests_version.clone();
            next.nccl_version = c.nccl_version.clone();
            next.iters = c.iters;
            next.devices = c.devices.clone();
            next.hints = Hints {
                explicit: c.hints.explicit.clone(),
                command: c.hints.command.clone(),
                ..Default::default()
            };
        }
        next.hints.mentions = std::mem::take(&mut self.later_mentions);
        let done = std::mem::replace(&mut self.current, next);
        self.sections.push(done);
        self.params = false;
        self.columns = None;
        self.in_place_first = false;
    }

    fn nccl_version(&mut self, line: &str) {
        if self.current.nccl_version.is_none()
            && let Some(c) = NCCL_VERSION.captures(line)
        {
            self.current.nccl_version = Some(c[1].to_string());
        }
    }

    /// The run's start and end as the file tells them (collector stamps, `-t` timestamps).
    fn saw_time(&mut self, time: Option<String>) {
        if let Some(t) = time {
            if self.current.started_at.is_none() {
                self.current.started_at = Some(t.clone());
            }
            self.current.finished_at = Some(t);
        }
    }

    /// nccl-tests' own non-row lines; `false` when `body` is none of them.
    fn nccl_tests_line(&mut self, body: &str) -> bool {
        let known = self.nccl_tests_line_kind(body);
        if known {
            self.saw_time(self.stamp.clone());
        }
        known
    }

    fn nccl_tests_line_kind(&mut self, body: &str) -> bool {
        if let Some(c) = VERSION_LINE.captures(body) {
            let started = self.current.tests_version.is_some()
                || self.current.hints.explicit.is_some()
                || self.params;
            if self.has_results() || started || self.columns.is_some() {
                self.start_run(false);
            }
            self.current.tests_version = Some(c[1].to_string());
            if let Some(code) = c.get(2).and_then(|m| m.as_str().parse().ok()) {
                self.current.nccl_version = Some(nccl_version_from_code(code));
            }
        } else if let Some(binary) = body.strip_prefix("Collective test starting:") {
            if self.has_results()
                || self.current.hints.explicit.is_some()
                || self.params
                || self.columns.is_some()
            {
                self.start_run(false);
            }
            self.current.hints.explicit =
                super::op_from_binary(binary.trim()).map(|op| (op, "collective-line"));
        } else if body.starts_with("Collective test concluded") {
            self.current.complete = true;
        } else if (body.starts_with("nThread") || body.starts_with("nGpus"))
            && body.contains("minBytes")
        {
            if self.has_results() || self.columns.is_some() {
                self.start_run(false);
            }
            self.params = true;
            self.current.iters = timed_iters(body);
            let number = |key: &str| {
                let tokens: Vec<&str> = body.split_whitespace().collect();
                tokens
                    .windows(2)
                    .find(|w| w[0] == key)
                    .and_then(|w| w[1].parse::<u32>().ok())
            };
            let per_process = number("nThread").unwrap_or(1)
                * number("nGpus")
                    .or_else(|| number("nGpus(perProc)"))
                    .unwrap_or(1);
            self.current.ranks_per_process = Some(per_process);
        } else if let Some(c) = RANK_LINE.captures(body) {
            let device = Device {
                rank: c[1].parse().unwrap_or_default(),
                pid: c.get(2).and_then(|m| m.as_str().parse().ok()),
                host: c[3].to_string(),
                device: c[4].parse().unwrap_or_default(),
                bus_id: Some(c[5].to_string()).filter(|b| !b.is_empty()),
                name: c[6].trim().to_string(),
            };
            if !self.current.devices.contains(&device) {
                self.current.devices.push(device);
            }
        } else if body.contains("out-of-place") && body.contains("in-place") {
            self.in_place_first = body.find("in-place") < body.find("out-of-place");
        } else if let Some(columns) = Columns::from_header(body) {
            if self.has_results() {
                self.start_run(true);
            } else if self.columns.is_some() && !self.current.failures.is_empty() {
                // The run before failed inside its table: this table is another run's.
                self.start_run(false);
            }
            self.flush_pending();
            self.current.layout = columns.layout();
            self.columns = Some(columns);
        } else if let Some(rest) = body.strip_prefix("Out of bounds values") {
            self.current.complete = true;
            self.current.out_of_bounds = rest
                .trim_start_matches([' ', ':'])
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok());
        } else if let Some(rest) = body.strip_prefix("Avg bus bandwidth") {
            self.current.complete = true;
            let value = rest
                .trim_start_matches([' ', ':'])
                .split_whitespace()
                .next();
            self.current.avg_busbw = value.and_then(|v| v.parse().ok());
            if rest.trim_end().ends_with("FAILED") {
                let note = format!(
                    "{}: nccl-tests' own average-bandwidth check failed (`Avg bus bandwidth{rest}`)",
                    self.origin
                );
                self.current.notes.push(note);
            }
        } else if body.starts_with("(B)")
            || body.starts_with("Using devices")
            || body.starts_with("Reducing maxBytes")
            || body.starts_with("Writing JSON output")
            || body.starts_with("GPU memory usage")
            || body.starts_with("Blocking Enabled")
            || body.starts_with("Per-Iteration Report")
            || body.starts_with("Parallel Init Enabled")
        {
        } else if let Some(message) = body.strip_prefix("error:") {
            let note = format!("{}: nccl-tests reported: {}", self.origin, message.trim());
            self.current.notes.push(note);
        } else {
            return false;
        }
        true
    }

    /// A results row, a row's continuation, or a fragment; `false` when `line` is none.
    fn row(&mut self, line: &str, number: u64, last_line: bool) -> bool {
        let Some(columns) = self.columns.clone() else {
            return false;
        };
        let tokens: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if tokens.is_empty() {
            return false;
        }
        let numeric = tokens
            .iter()
            .all(|t| matches!(cell(t), Cell::Number(_) | Cell::NotAvailable));
        // Behind a wrapper nobody listed, a row still shows as size, count and a type name.
        let tokens =
            match (1..tokens.len().min(8)).find(|&i| columns.starts_typed_row(&tokens[i..])) {
                Some(i) if !columns.starts_row(&tokens) => tokens[i..].to_vec(),
                _ => tokens,
            };
        let starts_row = columns.starts_row(&tokens);
        if self.in_log_line && !starts_row {
            return false;
        }
        let is_value = |t: &String| matches!(cell(t), Cell::Number(_) | Cell::NotAvailable);
        // The rest of a cut row behind a wrapper: the values that complete it, at the end.
        let rest = self.pending.as_ref().and_then(|(head, _)| {
            let need = columns.names.len().checked_sub(head.len())?;
            let tail = tokens.len().checked_sub(need)?;
            (need > 0 && tail > 0 && tokens[tail..].iter().all(is_value))
                .then(|| tokens[tail..].to_vec())
        });
        if !starts_row
            && !numeric
            && let (Some(rest), Some((mut head, _))) = (rest, self.pending.take())
        {
            head.extend(rest);
            self.push_row(&columns, &head, number);
            return true;
        }
        if !starts_row {
            if !numeric {
                return false;
            }
            // The rest of a row that an interleaved line interrupted, or a fragment.
            match self.pending.take() {
                Some((mut head, _)) if head.len() + tokens.len() == columns.names.len() => {
                    head.extend(tokens);
                    self.push_row(&columns, &head, number);
                }
                other => {
                    self.pending = other;
                    let note = format!(
                        "{}: line {number}: skipped a fragment of a results row ({} values, no size)",
                        self.origin,
                        tokens.len()
                    );
                    self.current.notes.push(note);
                }
            }
            return true;
        }
        self.flush_pending();
        let tokens = columns.fit(tokens);
        let valid = columns.valid_prefix(&tokens);
        if valid >= columns.names.len() {
            if tokens.len() > columns.names.len() {
                let note = format!(
                    "{}: line {number}: ignored text after a results row",
                    self.origin
                );
                self.current.notes.push(note);
            }
            self.push_row(&columns, &tokens[..columns.names.len()], number);
        } else if tokens[..valid].iter().any(|t| cell(t) == Cell::Placeholder)
            || tokens
                .iter()
                .skip(columns.descriptors)
                .any(|t| cell(t) == Cell::Placeholder)
        {
            self.current.placeholders += 1;
        } else if last_line {
            let note = format!(
                "{}: line {number}: skipped a results row with {} of {} columns: the file ends \
                 inside it (truncated output?)",
                self.origin,
                tokens.len(),
                columns.names.len()
            );
            self.current.notes.push(note);
        } else {
            self.pending = Some((tokens[..valid].to_vec(), number));
        }
        true
    }

    fn push_row(&mut self, columns: &Columns, tokens: &[String], _number: u64) {
        if tokens
            .iter()
            .skip(columns.descriptors)
            .any(|t| cell(t) == Cell::Placeholder)
        {
            self.current.placeholders += 1;
            return;
        }
        let point = columns.point(tokens, self.in_place_first);
        self.current.points.push(point);
        let printed = columns
            .index_of_all("timestamp")
            .and_then(|i| tokens.get(i))
            .filter(|t| t.len() == 19)
            .map(|t| t.replacen(' ', "T", 1));
        self.saw_time(printed.or_else(|| self.stamp.clone()));
    }

    fn flush_pending(&mut self) {
        if let Some((head, number)) = self.pending.take() {
            let note = format!(
                "{}: line {number}: skipped a results row cut after {} values (the rest never \
                 came)",
                self.origin,
                head.len()
            );
            self.current.notes.push(note);
        }
    }

    /// Launcher, shell and prose lines: command lines, failures, mentions.
    fn other(&mut self, line: &str, number: u64) {
        if FAILURE_MARKS.iter().any(|m| line.contains(m)) {
            let failure = format!("{}: line {number}: {line}", self.origin);
            self.current.failures.push(failure);
            if self.current.hints.failure.is_none() {
                self.current.hints.failure = FAILURE_SOURCE
                    .captures_iter(line)
                    .find_map(|c| super::op_from_binary(&c[1]));
            }
            return;
        }
        // A command continued over several lines (`mpirun -np 2 \`, `>   ./build/x_perf`).
        let part = line.strip_prefix("> ").unwrap_or(line);
        let command = format!("{}{}", self.continued, part);
        match part.strip_suffix('\\') {
            Some(head) => self.continued.push_str(&format!("{head} ")),
            None => self.continued.clear(),
        }
        if let Some(op) = binary_in_command(&command) {
            if self.has_results() {
                self.start_run(false);
            }
            self.current.hints.command = Some(op.to_string());
            self.current.command_ranks = ranks_in_command(&command);
        }
        self.nccl_version(line);
        let named = mentions(line).into_iter().map(str::to_string);
        if self.has_results() {
            self.later_mentions.extend(named);
        } else {
            self.current.hints.mentions.extend(named);
        }
    }

    fn finish(mut self) -> Vec<Section> {
        self.flush_pending();
        let later = std::mem::take(&mut self.later_mentions);
        self.current.hints.mentions.extend(later);
        self.sections.push(self.current);
        for s in &mut self.sections {
            milliseconds_to_micros(s);
        }
        self.sections
    }
}

impl Columns {
    fn from_header(body: &str) -> Option<Columns> {
        let v1 = body.split_whitespace().next() == Some("bytes");
        let names: Vec<String> = body
            .split_whitespace()
            .map(|n| {
                match n {
                    "bytes" => "size",
                    "N" => "count",
                    "op" => "redop",
                    "cputime" => "time",
                    "#wrong" => "wrong",
                    "res" => "error",
                    "i_min" => "min",
                    "i_max" => "max",
                    "i_p99" => "p99",
                    "i_cv%" => "cv",
                    other => other,
                }
                .to_string()
            })
            .collect();
        let has = |n: &str| names.iter().any(|c| c == n);
        if names.first().map(String::as_str) != Some("size")
            || !has("time")
            || !has("busbw")
            || !has("count")
        {
            return None;
        }
        let starts: Vec<usize> = (0..names.len()).filter(|&i| names[i] == "time").collect();
        let end = if names.last().map(String::as_str) == Some("timestamp") {
            names.len() - 1
        } else {
            names.len()
        };
        let groups = starts
            .iter()
            .enumerate()
            .map(|(k, &start)| start..starts.get(k + 1).copied().unwrap_or(end))
            .collect();
        Some(Columns {
            v1,
            descriptors: starts[0],
            names,
            groups,
        })
    }

    fn layout(&self) -> Layout {
        let has = |n: &str| self.names[..self.descriptors].iter().any(|c| c == n);
        Layout {
            has_redop: has("redop"),
            has_root: has("root"),
            v1: self.v1,
        }
    }

    fn index_of_all(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|c| c == name)
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.names[..self.descriptors]
            .iter()
            .position(|c| c == name)
    }

    /// The line begins like a row of this table: a size, a count and (when the table has
    /// one) a type name.
    fn starts_row(&self, tokens: &[String]) -> bool {
        let int = |i: usize| tokens.get(i).is_some_and(|t| t.parse::<u64>().is_ok());
        let type_ok = self.index("type").is_none_or(|i| {
            tokens
                .get(i)
                .is_some_and(|t| t.chars().next().is_some_and(|c| c.is_ascii_alphabetic()))
        });
        int(0) && int(1) && type_ok
    }

    /// Like [`Self::starts_row`], with a type name nccl-tests knows: safe to look for in the
    /// middle of a line.
    fn starts_typed_row(&self, tokens: &[String]) -> bool {
        self.index("type") == Some(2)
            && self.starts_row(tokens)
            && tokens
                .get(2)
                .is_some_and(|t| super::collective::type_size(t).is_some())
    }

    /// Adapts a row to the header: an empty `redop` cell (hypercube; alltoall, sendrecv and
    /// broadcast-style rows of some releases, before 2.13 too) is one token fewer, `-t`
    /// appends a date and time.
    fn fit(&self, mut tokens: Vec<String>) -> Vec<String> {
        let n = self.names.len();
        if let Some(r) = self.index("redop")
            && tokens.len() + 1 == n
            // An operator name is never a number: a number there is the next column's (the
            // root since 2.13, the time before).
            && tokens.get(r).is_some_and(|t| t.parse::<f64>().is_ok())
        {
            tokens.insert(r, String::new());
        }
        if self.names.last().map(String::as_str) == Some("timestamp") && tokens.len() > n {
            let stamp = tokens[n - 1..].join(" ");
            tokens.truncate(n - 1);
            tokens.push(stamp);
        }
        tokens
    }

    /// How many leading tokens are well-formed cells of this table.
    fn valid_prefix(&self, tokens: &[String]) -> usize {
        let mut valid = 0;
        for (i, t) in tokens.iter().enumerate().take(self.names.len()) {
            let ok = if i < self.descriptors {
                match self.names[i].as_str() {
                    "size" | "count" => t.parse::<u64>().is_ok(),
                    "root" => t.parse::<i64>().is_ok(),
                    _ => true,
                }
            } else {
                self.names[i] == "timestamp"
                    || matches!(cell(t), Cell::Number(_) | Cell::NotAvailable)
            };
            if !ok {
                break;
            }
            valid = i + 1;
        }
        valid
    }

    fn value<'a>(&self, tokens: &'a [String], name: &str) -> Option<&'a str> {
        self.index(name).map(|i| tokens[i].as_str())
    }

    fn point(&self, tokens: &[String], in_place_first: bool) -> Point {
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
                .map(dtype_name)
                .unwrap_or_default(),
            redop: self.value(tokens, "redop").map(str::to_string),
            root: self.value(tokens, "root").and_then(|r| r.parse().ok()),
            out_of_place: oop,
            in_place: ip,
        }
    }
}

fn measure(names: &[String], tokens: &[String]) -> Measure {
    let mut m = Measure::default();
    let mut time = None;
    for (name, token) in names.iter().zip(tokens) {
        let value = match cell(token) {
            Cell::Number(v) => Some(v),
            _ => None,
        };
        match name.as_str() {
            "time" => time = value,
            "algbw" => m.algbw_gbs = value,
            "busbw" => m.busbw_gbs = value,
            "wrong" => {
                m.wrong = value.filter(|v| *v >= 0.0).map(|v| v as u64);
                m.checked = Some(value.is_some());
            }
            // A maximum error before nccl-tests 2.10, not a count.
            "error" => m.checked = Some(value.is_some()),
            "min" => m.time_us.min = value,
            "max" => m.time_us.max = value,
            "p50" => m.time_us.p50 = value,
            "p99" => m.time_us.p99 = value,
            _ => {}
        }
    }
    match time {
        Some(t) => m.time_us.mean = t,
        None => {
            // `N/A` time: nothing was measured; keep the row so the gate can say so.
            m.algbw_gbs = None;
            m.busbw_gbs = None;
        }
    }
    m
}

/// The 2018 layout timed in milliseconds: algbw = size / time tells the unit. Converts a
/// run's times to microseconds when they are milliseconds.
fn milliseconds_to_micros(s: &mut Section) {
    let ratio = s
        .points
        .iter()
        .filter_map(|p| {
            let m = p.out_of_place.as_ref()?;
            let alg = m.algbw_gbs.filter(|a| *a > 0.0)?;
            (m.time_us.mean > 0.0 && p.bytes > 0)
                .then(|| (alg, alg * m.time_us.mean * 1e3 / p.bytes as f64))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, r)| r);
    if !ratio.is_some_and(|r| (2e-4..5e-3).contains(&r)) {
        return;
    }
    for p in &mut s.points {
        for m in [&mut p.out_of_place, &mut p.in_place].into_iter().flatten() {
            let t = &mut m.time_us;
            t.mean *= 1e3;
            for v in [&mut t.min, &mut t.p50, &mut t.p99, &mut t.max]
                .into_iter()
                .flatten()
            {
                *v *= 1e3;
            }
        }
    }
    s.notes
        .push("times are in milliseconds (nccl-tests of 2018); converted to microseconds".into());
}

/// The ranks a command line starts: processes (`mpirun -np P`, none without a launcher) ×
/// threads (`-t T`) × GPUs per thread (`-g G`), as nccl-tests counts them. `None` when a
/// launcher does not say how many processes.
fn ranks_in_command(command: &str) -> Option<u32> {
    let tokens: Vec<&str> = command.split_whitespace().collect();
    let binary = tokens.iter().position(|t| binary_in_command(t).is_some())?;
    let value = |from: usize, to: usize, keys: &[&str]| {
        tokens[from..to].windows(2).find_map(|w| {
            keys.contains(&w[0])
                .then(|| w[1].parse::<u32>().ok())
                .flatten()
        })
    };
    let launcher = tokens[..binary].iter().any(|t| {
        let base = t.rsplit('/').next().unwrap_or(t);
        matches!(
            base,
            "mpirun" | "mpiexec" | "srun" | "orterun" | "prun" | "jsrun" | "aprun"
        )
    });
    let processes = if launcher {
        value(0, binary, &["-np", "-n", "--np", "--ntasks"])?
    } else {
        1
    };
    let threads = value(binary, tokens.len(), &["-t", "--nthreads"]).unwrap_or(1);
    let gpus = value(binary, tokens.len(), &["-g", "--ngpus"]).unwrap_or(1);
    Some(processes * threads * gpus)
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
    fn rank_lines_of_every_era_parse() {
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
        let c = RANK_LINE
            .captures("Rank  1 on       node device  1 [0x06] GeForce GTX 1080")
            .unwrap();
        assert_eq!((c.get(2), &c[3]), (None, "node"));
    }

    #[test]
    fn ranks_from_command_lines() {
        assert_eq!(
            ranks_in_command("./build/sendrecv_perf -b 128M -g 8"),
            Some(8)
        );
        assert_eq!(
            ranks_in_command("mpirun -np 2 -H a:1,b:1 ./build/all_gather_perf -b 8 -g 1"),
            Some(2)
        );
        assert_eq!(
            ranks_in_command("mpirun -np 2 all_reduce_perf -t 2 -g 2"),
            Some(8)
        );
        assert_eq!(ranks_in_command("srun -N2 all_reduce_perf -b 1M"), None);
    }

    #[test]
    fn placeholder_cells_are_not_numbers() {
        assert!(cell("XXX.XX") == Cell::Placeholder);
        assert!(cell("N/A") == Cell::NotAvailable);
        assert!(cell("1e+00") == Cell::Number(1.0));
        assert!(cell("0host:1") == Cell::Other);
    }
}
