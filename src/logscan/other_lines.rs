//! Lines without an NCCL record that still matter (`scan::Analyzer::other_line`): the words
//! they are searched for, and nccl-tests' rank table (`#  Rank  0 Group  0 Pid 1234 on host
//! device  0 [0x1b] NVIDIA H200`).

use std::sync::LazyLock;

use memchr::memmem::Finder;
use regex::Regex;

/// Which of `PATTERNS` occur in a line.
pub struct OtherWords {
    /// Bit `i`: `PATTERNS[i]` occurs.
    present: u32,
    /// Where `NCCL version ` first occurs.
    pub nccl_version: Option<usize>,
}

impl OtherWords {
    const PATTERNS: [&'static str; 12] = [
        "NCCL version ",
        "collective operation timeout",
        "NCCL error",
        "ncclRemoteError",
        "ncclSystemError",
        "ncclInternalError",
        "ncclInvalidUsage",
        "ncclUnhandledCudaError",
        "libfabric:",
        "warn",
        "empty list",
        "#",
    ];
    pub const TIMEOUT: u32 = 1 << 1;
    /// PyTorch's NCCL error texts.
    pub const ERRORS: u32 = 0b1111_1100;
    pub const LIBFABRIC: u32 = 1 << 8;
    /// `warn` or `empty list`.
    pub const LIBFABRIC_TROUBLE: u32 = 0b110 << 8;
    pub const HASH: u32 = 1 << 11;

    /// The patterns that occur in `text`, each searched for on its own (a SIMD substring
    /// search per word costs a fraction of one overlapping automaton pass over the line,
    /// which these lines, PyTorch errors and tracebacks among them, make long).
    pub fn find(text: &str) -> OtherWords {
        static SEARCH: LazyLock<Vec<Finder<'static>>> =
            LazyLock::new(|| OtherWords::PATTERNS.iter().map(Finder::new).collect());
        let bytes = text.as_bytes();
        let mut found = OtherWords {
            present: 0,
            nccl_version: None,
        };
        for (i, finder) in SEARCH.iter().enumerate() {
            if let Some(at) = finder.find(bytes) {
                found.present |= 1 << i;
                if i == 0 {
                    found.nccl_version = Some(at);
                }
            }
        }
        found
    }

    /// Whether any of the patterns in `mask` occurs.
    pub fn has(&self, mask: u32) -> bool {
        self.present & mask != 0
    }
}

/// One row of nccl-tests' rank table: rank, pid, host, CUDA device.
#[derive(Debug, PartialEq, Eq)]
pub struct RankRow<'a> {
    pub rank: u32,
    pub pid: u32,
    pub host: &'a str,
    pub dev: u32,
}

/// The row's pattern; `rank_row` reads ASCII lines the same way without it.
static ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)")
        .expect("valid regex")
});

/// The first rank-table row in `text`, with numbers that fit a `u32`. An ASCII line (all of
/// nccl-tests' output) is read by hand, as `ROW` reads it: a regex with captures costs
/// thousands of instructions per row. Other lines go through `ROW`, whose `\s` and `\d` are
/// Unicode's.
pub fn rank_row(text: &str) -> Option<RankRow<'_>> {
    if !text.is_ascii() {
        return by_regex(text);
    }
    // The regex's match is the one that starts leftmost; from a given `#` the row reads one
    // way only (each part ends where the next one's bytes begin).
    let [rank, pid, host, dev] =
        memchr::memchr_iter(b'#', text.as_bytes()).find_map(|at| ascii_row(text.as_bytes(), at))?;
    let number = |(start, end): Span| text[start..end].parse::<u32>().ok();
    Some(RankRow {
        rank: number(rank)?,
        pid: number(pid)?,
        host: &text[host.0..host.1],
        dev: number(dev)?,
    })
}

/// The first row in `text` as `ROW` reads it.
fn by_regex(text: &str) -> Option<RankRow<'_>> {
    let caps = ROW.captures(text)?;
    let number = |i: usize| caps[i].parse::<u32>().ok();
    Some(RankRow {
        rank: number(1)?,
        pid: number(2)?,
        host: caps.get(3)?.as_str(),
        dev: number(4)?,
    })
}

/// `start..end` in a line.
type Span = (usize, usize);

/// `ROW` matched at `text[at]` (a `#`) of an ASCII line: the spans of its four captures.
fn ascii_row(text: &[u8], at: usize) -> Option<[Span; 4]> {
    let mut cur = Cursor { text, at: at + 1 };
    cur.blanks(0)?;
    cur.word(b"Rank")?;
    cur.blanks(1)?;
    let rank = cur.run(|b| b.is_ascii_digit())?;
    cur.blanks(1)?;
    // `(?:Group\s+\d+\s+)?`: taken when it is there (else `Pid` cannot follow).
    let before_group = cur.at;
    let group = cur.word(b"Group").is_some()
        && cur.blanks(1).is_some()
        && cur.run(|b| b.is_ascii_digit()).is_some()
        && cur.blanks(1).is_some();
    if !group {
        cur.at = before_group;
    }
    cur.word(b"Pid")?;
    cur.blanks(1)?;
    let pid = cur.run(|b| b.is_ascii_digit())?;
    cur.blanks(1)?;
    cur.word(b"on")?;
    cur.blanks(1)?;
    let host = cur.run(|b| !is_blank(b))?;
    cur.blanks(1)?;
    cur.word(b"device")?;
    cur.blanks(1)?;
    let dev = cur.run(|b| b.is_ascii_digit())?;
    Some([rank, pid, host, dev])
}

/// `\s` on ASCII: Unicode's White_Space among the ASCII bytes.
fn is_blank(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// At least `min` blanks, as many as there are.
    fn blanks(&mut self, min: usize) -> Option<()> {
        let start = self.at;
        while self.text.get(self.at).is_some_and(|&b| is_blank(b)) {
            self.at += 1;
        }
        (self.at - start >= min).then_some(())
    }

    fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.text.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// One or more bytes of `class`, as many as there are: their span.
    fn run(&mut self, class: impl Fn(u8) -> bool) -> Option<Span> {
        let start = self.at;
        while self.text.get(self.at).is_some_and(|&b| class(b)) {
            self.at += 1;
        }
        (self.at > start).then_some((start, self.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_rows_read_by_hand_are_what_the_regex_reads() {
        let logs = String::from_utf8_lossy(&crate::logscan::fixture_logs()).into_owned();
        let mut lines: Vec<String> = logs
            .lines()
            .filter(|l| l.contains('#'))
            .map(str::to_string)
            .collect();
        let rows = lines.iter().filter(|l| by_regex(l).is_some()).count();
        assert!(rows >= 2, "{rows}");
        lines.extend(
            [
                "#  Rank  0 Group  0 Pid  4242 on node-a device  0 [0x1b] NVIDIA H200",
                "#Rank 3 Pid 7 on h device 1",
                "[1,0]<stdout>:#   Rank  1 Pid 99 on ip-10-0-0-1 device  1",
                "# Rank 1 Group Pid 5 on h device 0",
                "# Rank 1 Group 2 Pid 5 on h device",
                "# Rank 99999999999 Pid 5 on h device 0",
                "# Rank 1 Pid 5 on  device 0",
                "# Rank x # Rank 2 Pid 3 on h device 4",
                "# Rank\t2\x0bPid\x0c3 on\rh device 4",
                "#\u{a0}Rank 2 Pid 3 on h device 4",
                "# Rank 2 Pid 3 on h\u{2003}device 4",
                "# Rank ٣ Pid 3 on h device 4 # Rank 5 Pid 6 on g device 7",
                "##",
                "#",
                "# Rank 1 Pid 5 on h devices 0",
            ]
            .map(str::to_string),
        );
        // Each line cut at every byte, and with every byte dropped in turn.
        let mut cases = Vec::new();
        for line in &lines {
            for at in 0..=line.len() {
                if line.is_char_boundary(at) {
                    cases.push(line[..at].to_string());
                    let mut dropped = line.clone();
                    if at < line.len() {
                        dropped.remove(at);
                        cases.push(dropped);
                    }
                }
            }
        }
        for case in cases.iter().chain(&lines) {
            assert_eq!(rank_row(case), by_regex(case), "{case:?}");
        }
    }

    #[test]
    fn the_words_are_those_an_overlapping_search_finds() {
        let search = aho_corasick::AhoCorasick::new(OtherWords::PATTERNS).unwrap();
        let logs = String::from_utf8_lossy(&crate::logscan::fixture_logs()).into_owned();
        let extra = [
            "ncclInvalidUsagempty list",
            "NCCL errorwarn#",
            "x NCCL version 2.3 NCCL version 2.4",
            "",
        ];
        for line in logs.lines().chain(extra) {
            let found = OtherWords::find(line);
            let mut present = 0u32;
            let mut first = None;
            for m in search.find_overlapping_iter(line) {
                present |= 1 << m.pattern().as_u32();
                if m.pattern().as_u32() == 0 && first.is_none() {
                    first = Some(m.start());
                }
            }
            assert_eq!(
                (found.present, found.nccl_version),
                (present, first),
                "{line:?}"
            );
        }
    }
}
