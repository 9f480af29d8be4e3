//! Finding the lines of a chunk that matter, in two modes, as grep does:
//!
//! - Dense (runs of NCCL output with a few other lines between): line by line, stopping only
//!   at `\n`, `NCCL` and ESC, which `positions` finds 64 bytes at a time. Every
//!   `NCCL INFO` / `NCCL WARN` of a line is found in that one pass, so records glued onto one
//!   line cost nothing extra. A line without `NCCL` is passed on if it mentions `nccl`,
//!   `libfabric:`, `Rank` (nccl-tests' `#  Rank` table) or `] INFO ` (NCCL 2.2's records have no `NCCL`).
//! - Gaps (after `QUIET_LINES` lines in a row without `NCCL`): one SIMD search jumps to the
//!   next `NCCL`; the lines skipped are searched for `nccl`, `libfabric:`, `Rank` and `] INFO ` (each once
//!   per chunk) and counted, so evidence keeps its line numbers.
//!
//! `batch` carries a framed chunk from the reading thread to the analysis.

use std::sync::LazyLock;

use memchr::memmem;

mod batch;
mod positions;

pub use batch::{Batch, Replay};
use positions::Positions;

use super::input::MAX_LINE;
use super::prefix::{Level, marker_at};

/// Where the lines that matter go.
pub trait Sink {
    /// A line with NCCL records: `markers` holds every `NCCL INFO` / `NCCL WARN` marker in
    /// `line` (byte offset, level), in order. `line` has no `\n` and no trailing `\r`.
    fn records(&mut self, line: &[u8], markers: &[(usize, Level)], number: u64);
    /// A line with NCCL records inside a wrapping to take off first: ANSI colour codes left
    /// of the first record (Ray, kubectl), or a JSON object (Docker's json-file, log
    /// shippers' exports: `input::json_log_text`). The records are found again once it is
    /// off.
    fn wrapped_records(&mut self, line: &[u8], number: u64);
    /// A line without records that mentions `NCCL`, `nccl`, `libfabric:` or `Rank`: the bare
    /// version line, PyTorch's NCCL errors, libfabric warnings, nccl-tests' rank table.
    fn other(&mut self, line: &[u8], number: u64);
    /// Whether the sink wants no more lines for now: the framer then stops at the next line
    /// start and returns it (`batch` keeps its memory bounded this way).
    fn is_full(&self) -> bool {
        false
    }
    /// Offered the lines of a gap (whole lines without `NCCL`; `lines_before` lines of the
    /// source precede them) before the framer scans them: `true` takes them as they are, to
    /// be scanned later with `scan_gap` (on the analysis thread: see `batch`).
    fn take_gap(&mut self, gap: &[u8], lines_before: u64) -> bool {
        let _ = (gap, lines_before);
        false
    }
}

/// Lines in a row without `NCCL` after which the scan stops looking at lines one by one and
/// skips to the next `NCCL`.
const QUIET_LINES: u32 = 8;

/// The scan of one source: counts its lines across chunks.
#[derive(Default)]
pub struct Framer {
    /// Lines of the source seen so far.
    lines: u64,
    /// The markers of the current line (reused).
    markers: Vec<(usize, Level)>,
    /// Whether one of them is still to be checked against the line's end.
    unsure: bool,
}

impl Framer {
    /// Scans one chunk of whole lines (see `input::for_each_chunk`) and returns how much of
    /// it was scanned: all of it, unless the sink filled up (then up to a line start).
    pub fn chunk(&mut self, chunk: &[u8], sink: &mut impl Sink) -> usize {
        let mut nccl = NextNccl::default();
        let mut rare = RareNeedles::default();
        let mut pos = 0;
        while pos < chunk.len() && !sink.is_full() {
            // Dense: runs of lines with `NCCL` (init output), one line at a time.
            pos = self.nccl_lines(chunk, pos, &mut rare, sink);
            if pos >= chunk.len() || sink.is_full() {
                break;
            }
            // A gap: every line up to the one with the next `NCCL`.
            let gap_end = nccl.at_or_after(chunk, pos).map_or(chunk.len(), |hit| {
                memchr::memrchr(b'\n', &chunk[pos..hit]).map_or(pos, |i| pos + i + 1)
            });
            pos = self.gap(chunk, pos, gap_end, None, &mut rare, sink);
        }
        pos.min(chunk.len())
    }

    /// Lines from `pos` on, one at a time, until `QUIET_LINES` lines in a row lack `NCCL`;
    /// returns where the first of those starts (or where the sink filled up, or the end of
    /// the chunk). Runs of fewer lines without `NCCL` between NCCL lines are handled as
    /// small gaps, cheaper than skipping ahead with a search.
    fn nccl_lines(
        &mut self,
        chunk: &[u8],
        mut pos: usize,
        rare: &mut RareNeedles,
        sink: &mut impl Sink,
    ) -> usize {
        let mut positions = Positions::new(chunk, pos);
        // Start of the current run of lines without `NCCL`, and its length.
        let mut quiet_from = pos;
        let mut quiet = 0;
        while pos < chunk.len() {
            // Where `NCCL INFO` / `NCCL WARN` may start, whether `NCCL` occurs at all, and the
            // first ESC; checked against the line once its end is known.
            self.markers.clear();
            self.unsure = false;
            let mut nccl = false;
            let mut first_esc = usize::MAX;
            let mut end = chunk.len();
            for at in positions.by_ref() {
                match chunk[at] {
                    b'\n' => {
                        end = at;
                        break;
                    }
                    b'N' => {
                        // `NC` starts here. `NCCL INFO ` with its blank, well inside the line
                        // limit, is a marker however the line ends (one comparison); a level
                        // word without the blank is decided once the line's end is known.
                        if let Some(level) = chunk.get(at + 2..at + 10).and_then(level_with_blank) {
                            nccl = true;
                            self.markers.push((at - pos, level));
                            self.unsure |= at - pos + 10 > MAX_LINE;
                        } else if chunk.get(at + 2..at + 4) == Some(b"CL") {
                            nccl = true;
                            if let Some(level) = chunk.get(at + 4..at + 9).and_then(level_word) {
                                self.markers.push((at - pos, level));
                                self.unsure = true;
                            }
                        }
                    }
                    _ => first_esc = first_esc.min(at - pos),
                }
            }
            if !nccl {
                quiet += 1;
                if quiet == QUIET_LINES {
                    return quiet_from;
                }
                pos = end + 1;
                continue;
            }
            if quiet > 0 {
                let known = Some(u64::from(quiet));
                quiet = 0;
                let stopped = self.gap(chunk, quiet_from, pos, known, rare, sink);
                if sink.is_full() {
                    return stopped;
                }
            }
            self.nccl_line(&chunk[pos..end], first_esc, sink);
            pos = end + 1;
            quiet_from = pos;
            if sink.is_full() {
                return pos;
            }
        }
        if quiet > 0 {
            return self.gap(
                chunk,
                quiet_from,
                chunk.len(),
                Some(u64::from(quiet)),
                rare,
                sink,
            );
        }
        pos
    }

    /// A line with `NCCL`; `self.markers` holds where markers may start, `first_esc` the
    /// first ESC (`usize::MAX`: none).
    fn nccl_line(&mut self, line: &[u8], first_esc: usize, sink: &mut impl Sink) {
        self.lines += 1;
        let line = &line[..line.len().min(MAX_LINE)];
        let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
        // The first marker decides on the line as read, later (glued) ones on the line
        // without its `\r`, where a record's message ends.
        if self.unsure {
            let mut found = 0;
            for i in 0..self.markers.len() {
                let at = self.markers[i].0;
                let view = if found == 0 { line } else { trimmed };
                if at < view.len() && marker_at(view, at).is_some() {
                    self.markers[found] = self.markers[i];
                    found += 1;
                }
            }
            self.markers.truncate(found);
        }
        match self.markers.first() {
            None => sink.other(trimmed, self.lines),
            Some(&(first, _))
                if first_esc < first || crate::logscan::input::may_be_json(trimmed) =>
            {
                sink.wrapped_records(trimmed, self.lines)
            }
            Some(_) => sink.records(trimmed, &self.markers, self.lines),
        }
    }

    /// Whole lines `chunk[from..to]`, none with `NCCL` (`known` of them, if counted already):
    /// the sink takes them as they are, or they are scanned here (`scan_gap`). Returns where
    /// it stopped: `to`, or the start of the line after the one that filled the sink.
    fn gap(
        &mut self,
        chunk: &[u8],
        from: usize,
        to: usize,
        known: Option<u64>,
        rare: &mut RareNeedles,
        sink: &mut impl Sink,
    ) -> usize {
        if sink.take_gap(&chunk[from..to], self.lines) {
            self.lines += known.unwrap_or_else(|| count_lines(&chunk[from..to]));
            return to;
        }
        let (pos, full) = scan_gap(chunk, from, to, &mut self.lines, rare, sink);
        if full {
            return pos;
        }
        if pos < to {
            self.lines += count_lines(&chunk[pos..to]);
        }
        to.max(pos)
    }
}

/// Passes on the lines of `chunk[from..to]` (whole lines, none with `NCCL`) that mention
/// `nccl`, `libfabric:` or `Rank`; `lines` counts the lines before `from` and moves to each line
/// passed on. Returns where the line after the last one passed on starts (`from` if none),
/// and whether the sink filled up there. `rare` belongs to `chunk` and only moves forward.
fn scan_gap(
    chunk: &[u8],
    from: usize,
    to: usize,
    lines: &mut u64,
    rare: &mut RareNeedles,
    sink: &mut impl Sink,
) -> (usize, bool) {
    let mut pos = from;
    while let Some(hit) = rare.next(chunk, pos, to) {
        let start = memchr::memrchr(b'\n', &chunk[pos..hit]).map_or(pos, |i| pos + i + 1);
        let end = memchr::memchr(b'\n', &chunk[hit..]).map_or(chunk.len(), |i| hit + i);
        *lines += count_newlines(&chunk[pos..start]) + 1;
        let line = &chunk[start..end.min(start + MAX_LINE)];
        sink.other(line.strip_suffix(b"\r").unwrap_or(line), *lines);
        pos = end + 1;
        if sink.is_full() {
            return (pos, true);
        }
    }
    (pos, false)
}

/// Lines in `bytes` (whole lines, the last one possibly without its `\n`: the cut head of a
/// line over 1 MiB, or the end of the input).
fn count_lines(bytes: &[u8]) -> u64 {
    count_newlines(bytes) + u64::from(bytes.last().is_some_and(|b| *b != b'\n'))
}

static UPPER_NCCL: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"NCCL"));

/// `CL INFO ` → `Info`, `CL WARN ` → `Warn` (the end of `NCCL`, the level word and a blank).
fn level_with_blank(word: &[u8]) -> Option<Level> {
    const INFO: u64 = u64::from_le_bytes(*b"CL INFO ");
    const WARN: u64 = u64::from_le_bytes(*b"CL WARN ");
    match u64::from_le_bytes(word.try_into().ok()?) {
        INFO => Some(Level::Info),
        WARN => Some(Level::Warn),
        _ => None,
    }
}

/// ` INFO` → `Info`, ` WARN` → `Warn`.
fn level_word(word: &[u8]) -> Option<Level> {
    match word {
        b" INFO" => Some(Level::Info),
        b" WARN" => Some(Level::Warn),
        _ => None,
    }
}

/// The next `NCCL` in a chunk, searched once and reused until the scan passes it.
#[derive(Default)]
struct NextNccl {
    /// (position found, searched from); `None` before the first search.
    last: Option<(Option<usize>, usize)>,
}

impl NextNccl {
    fn at_or_after(&mut self, chunk: &[u8], from: usize) -> Option<usize> {
        if let Some((found, searched_from)) = self.last
            && searched_from <= from
            && found.is_none_or(|at| at >= from)
        {
            return found;
        }
        let from = from.min(chunk.len());
        let found = UPPER_NCCL.find(&chunk[from..]).map(|at| from + at);
        self.last = Some((found, from));
        found
    }
}

/// The next `nccl`, `libfabric:`, `Rank` or `] INFO ` in the gaps of a chunk, all four in one
/// pass (`GAP_WORDS`). Each search covers only the gap asked about: `nccl` and `Rank` also
/// stand in many NCCL lines (`ncclTopoGetCpuAffinity`, `nRanks`), and searching on past the
/// gap found those, so that every later gap searched again through the NCCL lines up to the
/// next one. What a search found, or that it found nothing up to the gap's end, answers the
/// next questions until the scan passes it. Positions asked about only grow.
#[derive(Default)]
struct RareNeedles {
    known: Option<Searched>,
}

/// The words a line without `NCCL` is passed on for: `nccl` (PyTorch's errors), `libfabric:`,
/// `Rank` (nccl-tests' rank table, `#  Rank  0 Group  0 Pid 100 on host device 0 ...`, is
/// the only `#` line the analysis reads: searching for `Rank` instead of every `#` keeps
/// comment-heavy logs from costing a call per line) and `] INFO ` (NCCL 2.2's records,
/// `host:pid:tid [dev] INFO msg`, lack the word `NCCL`). One search for all four: a log with
/// a few lines of training output after each NCCL line hands over a gap of a few hundred
/// bytes per NCCL line, and a search per word cost four calls' setup per gap (a quarter of
/// the analysis thread's work on such a log).
static GAP_WORDS: LazyLock<aho_corasick::AhoCorasick> = LazyLock::new(|| {
    aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostFirst)
        .build(["nccl", "libfabric:", "Rank", "] INFO "])
        .expect("four fixed words")
});

/// A search of `chunk[from..until]`: the first place a needle starts there, if any.
#[derive(Clone, Copy)]
struct Searched {
    from: usize,
    until: usize,
    at: Option<usize>,
}

impl Searched {
    /// The answer for `[from, to)`, if this search knows it.
    fn answers(self, from: usize, to: usize) -> Option<Option<usize>> {
        if self.from > from {
            return None;
        }
        match self.at {
            Some(at) if at >= from => Some((at < to).then_some(at)),
            None if self.until >= to => Some(None),
            _ => None,
        }
    }
}

impl RareNeedles {
    /// The first occurrence of any of the needles in `chunk[from..to]`.
    #[inline]
    fn next(&mut self, chunk: &[u8], from: usize, to: usize) -> Option<usize> {
        let to = to.min(chunk.len());
        if let Some(answer) = self.known.and_then(|s| s.answers(from, to)) {
            return answer;
        }
        let searched = Self::search(chunk, from, to);
        self.known = Some(searched);
        searched.at
    }

    #[inline(never)]
    fn search(chunk: &[u8], from: usize, to: usize) -> Searched {
        let hay = &chunk[from.min(to)..to];
        Searched {
            from,
            until: to,
            at: GAP_WORDS.find(hay).map(|found| from + found.start()),
        }
    }
}

/// Counts newlines. Counting into a `u8` per 64-byte block lets the compiler use full-width
/// SIMD compares; a `usize` counter per byte would not.
fn count_newlines(bytes: &[u8]) -> u64 {
    let blocks = bytes.chunks_exact(64);
    let tail = blocks.remainder();
    let mut total = 0u64;
    for block in blocks {
        let mut n = 0u8;
        for &b in block {
            n += u8::from(b == b'\n');
        }
        total += u64::from(n);
    }
    total + tail.iter().filter(|b| **b == b'\n').count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a sink was told, as text.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl Sink for Log {
        fn records(&mut self, line: &[u8], markers: &[(usize, Level)], number: u64) {
            let at: Vec<usize> = markers.iter().map(|m| m.0).collect();
            let line = String::from_utf8_lossy(line);
            self.0.push(format!("{number} records {at:?} {line}"));
        }
        fn wrapped_records(&mut self, line: &[u8], number: u64) {
            let line = String::from_utf8_lossy(line);
            self.0.push(format!("{number} wrapped {line}"));
        }
        fn other(&mut self, line: &[u8], number: u64) {
            let line = String::from_utf8_lossy(line);
            self.0.push(format!("{number} other {line}"));
        }
    }

    fn scan(chunks: &[&str]) -> Vec<String> {
        let mut framer = Framer::default();
        let mut log = Log::default();
        for chunk in chunks {
            framer.chunk(chunk.as_bytes(), &mut log);
        }
        log.0
    }

    #[test]
    fn lines_that_matter_keep_their_numbers() {
        let got = scan(&[
            "train step 1\nh:1:1 [0] NCCL INFO a\r\nloss 0.5\n# Rank 0 Pid 1 on h device 0\n",
            "x\nNCCL version 2.11.4+cuda11.4\nlibfabric:1:efa warn\ntorch nccl thing\nend",
        ]);
        assert_eq!(
            got,
            [
                "2 records [10] h:1:1 [0] NCCL INFO a",
                "4 other # Rank 0 Pid 1 on h device 0",
                "6 other NCCL version 2.11.4+cuda11.4",
                "7 other libfabric:1:efa warn",
                "8 other torch nccl thing",
            ]
        );
    }

    /// `nccl` and `Rank` also stand in NCCL lines (`ncclCommInitRank`, `nRanks`): a hit
    /// there must neither hide nor stand for one in the gaps around it.
    #[test]
    fn needles_in_nccl_lines_do_not_hide_gap_lines() {
        let got = scan(&[concat!(
            "step 1\n",
            "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nRanks 2 - Init START\n",
            "torch nccl warning\n",
            "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1\n",
            "step 2\n",
            "#  Rank  0 Group  0 Pid 1 on h device 0\n",
            "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 - Init COMPLETE\n",
            "libfabric:1:efa:core:warn oops\n",
        )]);
        let others: Vec<&String> = got.iter().filter(|l| l.contains(" other ")).collect();
        assert_eq!(
            others,
            [
                "3 other torch nccl warning",
                "6 other #  Rank  0 Group  0 Pid 1 on h device 0",
                "8 other libfabric:1:efa:core:warn oops",
            ],
            "{got:?}"
        );
    }

    /// One search for all four words finds what a search per word found first, whatever
    /// the words overlap with, and the remembered answers agree with a fresh search.
    #[test]
    fn the_gap_words_are_found_where_a_search_per_word_finds_the_first() {
        let pieces = [
            "nccl",
            "Rank",
            "libfabric:",
            "] INFO ",
            "ncc",
            "Ran",
            "] INF",
            "libfabric",
            "x",
            "\n",
            " ",
        ];
        let words: [&[u8]; 4] = [b"nccl", b"libfabric:", b"Rank", b"] INFO "];
        let mut next = crate::logscan::numbers(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let text: String = (0..next(40)).map(|_| pieces[next(pieces.len())]).collect();
            let chunk = text.as_bytes();
            let mut rare = RareNeedles::default();
            let (mut from, mut to) = (0, 0);
            // Growing windows, as the scan asks.
            while from < chunk.len() {
                from += next(4);
                to = (to.max(from) + next(12)).min(chunk.len());
                let expected = (words.iter())
                    .filter_map(|w| memmem::find(&chunk[from.min(to)..to], w).map(|at| from + at))
                    .min();
                assert_eq!(
                    rare.next(chunk, from, to),
                    expected,
                    "{text:?} {from}..{to}"
                );
            }
        }
    }

    #[test]
    fn short_and_long_gaps_between_nccl_lines() {
        // Gaps shorter and longer than QUIET_LINES, with lines worth a look at every depth.
        let mut text = String::new();
        let mut want = Vec::new();
        let mut number = 0;
        for gap in [0, 1, 3, 7, 8, 9, 30] {
            number += 1;
            text.push_str("h:1:1 [0] NCCL INFO x\n");
            want.push(format!("{number} records [10] h:1:1 [0] NCCL INFO x"));
            for i in 0..gap {
                number += 1;
                if i % 3 == 2 {
                    text.push_str("# nccl-tests header\n");
                    want.push(format!("{number} other # nccl-tests header"));
                } else {
                    text.push_str("step 1 loss 0.5\n");
                }
            }
        }
        assert_eq!(scan(&[&text]), want);
    }

    #[test]
    fn glued_records_and_lookalikes() {
        let got = scan(&[concat!(
            "a:1:1 [0] NCCL INFO NCCL version 2.1 b:2:2 [1] NCCL WARN x\n",
            "NCCL INFOx NCCL NCCL INFO y\n",
            "h:1:1 [0] NCCL INFO z NCCL INFO\r\n",
            "\u{1b}[36m(w)\u{1b}[0m h:1:1 [0] NCCL INFO c\n",
            "h:1:1 [0] NCCL INFO c \u{1b}[0m\n",
        )]);
        assert_eq!(
            got,
            [
                "1 records [10, 47] a:1:1 [0] NCCL INFO NCCL version 2.1 b:2:2 [1] NCCL WARN x",
                "2 records [16] NCCL INFOx NCCL NCCL INFO y",
                // The glued marker before `\r` counts once the `\r` is gone.
                "3 records [10, 22] h:1:1 [0] NCCL INFO z NCCL INFO",
                "4 wrapped \u{1b}[36m(w)\u{1b}[0m h:1:1 [0] NCCL INFO c",
                "5 records [10] h:1:1 [0] NCCL INFO c \u{1b}[0m",
            ]
        );
    }

    #[test]
    fn colour_left_of_the_first_record_is_told_apart() {
        // Moved from `prefix::tests::ansi_codes_are_removed` with `find_first_marker`.
        assert_eq!(
            scan(&["\u{1b}[36m(w)\u{1b}[0m h:1:1 [0] NCCL INFO x"]),
            ["1 wrapped \u{1b}[36m(w)\u{1b}[0m h:1:1 [0] NCCL INFO x"]
        );
        assert_eq!(
            scan(&["h:1:1 [0] NCCL INFO x"]),
            ["1 records [10] h:1:1 [0] NCCL INFO x"]
        );
    }

    #[test]
    fn a_marker_beyond_the_line_limit_is_not_a_record() {
        let line = format!(
            "{} NCCL INFO x\nh:1:1 [0] NCCL INFO y\n",
            "z".repeat(MAX_LINE)
        );
        let got = scan(&[&line]);
        assert_eq!(got.len(), 2);
        assert!(got[0].starts_with("1 other zzz"));
        assert_eq!(got[1], "2 records [10] h:1:1 [0] NCCL INFO y");
    }

    #[test]
    fn counts_newlines_in_blocks_and_tails() {
        let text: Vec<u8> = (0..1000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        assert_eq!(count_newlines(&text), 1000);
        assert_eq!(
            count_newlines(&text[..63]),
            text[..63].iter().filter(|b| **b == b'\n').count() as u64
        );
        assert_eq!(count_newlines(&[b'\n'; 300]), 300);
        assert_eq!(count_newlines(b""), 0);
    }
}
