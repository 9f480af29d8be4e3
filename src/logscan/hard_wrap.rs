//! Logs hard-wrapped at a terminal's width, put back together.
//!
//! A log copied out of `screen`, an old console, a web log viewer or an email arrives with a
//! newline every W columns: `... -> 8[0] [send] via NE` / `T/IB/0/GDRDMA`. Read as it stands,
//! every record longer than W loses its tail (the transport word, the `Init COMPLETE`, the
//! link layer of a port list) and its continuation is a line of its own. Wrapped at 80
//! columns, 58 of the 112 labelled public logs changed their answer.
//!
//! Such a log shows itself: its widest lines all have the same width W (every longer line
//! was cut there), and the line after one of them does not start the way the log's lines
//! start (it is the middle of a record: `T/IB/0/GDRDMA`, `3:456 [0] NCCL INFO`). A log whose
//! longest line merely repeats (one line printed by each of 16 ranks) or whose lines were cut
//! at W and the rest dropped has true line starts after its widest lines, so it is read as it
//! stands. The decision is made once per source, on its first chunk of at least
//! `SAMPLE_LINES` lines (or on all of a shorter source).
//!
//! Undoing the wrap moves each newline instead of removing it: `AAAA\nBB\nnext` becomes
//! `AAAABB\n\nnext`. The joined record keeps the number of its first line, and every later
//! line keeps its own, so evidence points where it did.

/// Lines a decision needs, unless the source is shorter, and the most it looks at.
const SAMPLE_LINES: usize = 256;
const MAX_SAMPLE: usize = 4096;
/// Narrower logs are not taken for wrapped: no terminal is that narrow.
const MIN_WIDTH: usize = 40;
/// A line's start, as runs of character classes (`shape`).
const SHAPE: usize = 8;

type Shape = [u8; SHAPE];

/// A source's hard wrap: the width its lines were cut at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HardWrap {
    width: usize,
}

/// What the first lines of a source say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Too few lines yet.
    Undecided,
    /// Read as it stands.
    Plain,
    Wrapped(HardWrap),
}

/// Decides on `head`, lines from the start of a source (`at_end`: all of it).
pub fn decide(head: &[u8], at_end: bool) -> Decision {
    let lines: Vec<&[u8]> = lines_of(head, at_end).take(MAX_SAMPLE).collect();
    if lines.len() < SAMPLE_LINES && !at_end {
        return Decision::Undecided;
    }
    let widths: Vec<usize> = lines.iter().map(|l| width(l)).collect();
    let Some(&widest) = widths.iter().max() else {
        return Decision::Plain;
    };
    if widest < MIN_WIDTH {
        return Decision::Plain;
    }
    // The lines after the widest ones: a wrapped log continues there, three times in four
    // at least; a log whose widest line repeats goes on with lines that start like it.
    let mut after_widest = 0;
    let mut continued = 0;
    for i in 1..lines.len() {
        // A whole JSON record or member of a pretty-printed export was not cut, however
        // long (`gcloud logging read --format=json`: the next line is another key).
        if widths[i - 1] == widest && !super::input::is_whole_json_line(lines[i - 1]) {
            after_widest += 1;
            continued += usize::from(continues(lines[i - 1], lines[i]));
        }
    }
    if after_widest >= 3 && continued * 4 >= after_widest * 3 {
        Decision::Wrapped(HardWrap { width: widest })
    } else {
        Decision::Plain
    }
}

/// Whether `next` is the rest of `line`, a line of the full width: it does not start the
/// way `line` does (in a log's own format: host and pid, a timestamp, a launcher's tag).
fn continues(line: &[u8], next: &[u8]) -> bool {
    shape(line) != shape(next)
}

impl HardWrap {
    /// Joins, in place, each line of `chunk` (whole lines) that continues the one before it,
    /// moving the newlines between them to after the joined line. Returns how much of the
    /// chunk is done: all of it, unless its last lines are a line of the full width and its
    /// continuations so far, which the next chunk may continue (`at_end`: it cannot); those
    /// are left as they are, for the caller to read again with the next chunk (0: the whole
    /// chunk is such a run).
    pub fn join(&self, chunk: &mut [u8], at_end: bool) -> usize {
        let mut scratch = Vec::new();
        let mut pos = 0;
        while pos < chunk.len() {
            let (first, next) = line_at(chunk, pos);
            if width(first) != self.width {
                pos = next;
                continue;
            }
            // A line of the full width, its continuations, and the line that ends it.
            let start = pos;
            let mut end = next;
            let mut open = true;
            while open && end < chunk.len() {
                let (line, after) = line_at(chunk, end);
                if !continues(first, line) {
                    break;
                }
                open = width(line) == self.width;
                end = after;
            }
            if open && !at_end && end >= chunk.len() {
                return start;
            }
            if end > next {
                join_run(&mut chunk[start..end], &mut scratch);
            }
            pos = end;
        }
        chunk.len()
    }
}

/// `p1 s1 p2 s2 ... pk sk` (pieces and their line ends) → `p1 p2 ... pk s1 s2 ... sk`.
fn join_run(run: &mut [u8], scratch: &mut Vec<u8>) {
    scratch.clear();
    let mut ends = Vec::new();
    let mut pos = 0;
    while pos < run.len() {
        let (line, next) = line_at(run, pos);
        scratch.extend_from_slice(line);
        ends.extend_from_slice(&run[pos + line.len()..next]);
        pos = next;
    }
    scratch.extend_from_slice(&ends);
    run.copy_from_slice(scratch);
}

/// The line starting at `pos` without its `\r\n` / `\n`, and where the next one starts.
fn line_at(bytes: &[u8], pos: usize) -> (&[u8], usize) {
    let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
    let line = &bytes[pos..end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    (line, (end + 1).min(bytes.len()))
}

/// The lines of `bytes` without their `\r\n` / `\n`: those that end in `\n`, and at the
/// end of the source also a last one without.
fn lines_of(bytes: &[u8], at_end: bool) -> impl Iterator<Item = &[u8]> {
    let whole = match memchr::memrchr(b'\n', bytes) {
        _ if at_end => bytes.strip_suffix(b"\n").unwrap_or(bytes),
        Some(at) => &bytes[..at],
        None => &[],
    };
    whole
        .split(|&b| b == b'\n')
        .filter(move |_| !whole.is_empty())
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// Columns a terminal gives `line`: a character each, colour codes none.
fn width(line: &[u8]) -> usize {
    if line.is_ascii() && memchr::memchr(0x1b, line).is_none() {
        return line.len();
    }
    let mut columns = 0;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            // `ESC [ params final`: a colour or cursor code.
            0x1b if line.get(i + 1) == Some(&b'[') => {
                i += 2;
                while i < line.len() && !(0x40..=0x7e).contains(&line[i]) {
                    i += 1;
                }
            }
            // A UTF-8 continuation byte.
            b if b & 0xc0 == 0x80 => {}
            _ => columns += 1,
        }
        i += 1;
    }
    columns
}

/// How a line starts: its first `SHAPE` runs of character classes (letters `a`, digits `9`,
/// blanks ` `, bytes past ASCII `u`, other ASCII as it is; `\0` past the end), so
/// `node9:41:90 [0]` and `node10:7:8 [1]` start alike, and `P2P/IPC` does not.
fn shape(line: &[u8]) -> Shape {
    let mut shape = [0; SHAPE];
    let mut runs = 0;
    for &b in line {
        let class = match b {
            b'0'..=b'9' => b'9',
            b'a'..=b'z' | b'A'..=b'Z' => b'a',
            b' ' | b'\t' => b' ',
            0..0x80 => b,
            _ => b'u',
        };
        if runs > 0 && shape[runs - 1] == class && matches!(class, b'9' | b'a' | b' ' | b'u') {
            continue;
        }
        if runs == SHAPE {
            break;
        }
        shape[runs] = class;
        runs += 1;
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` hard-wrapped at `width` columns (a character each), as a terminal's copy
    /// gives it.
    fn wrapped(text: &str, width: usize) -> String {
        let mut out = String::new();
        for line in text.lines() {
            let chars: Vec<char> = line.chars().collect();
            if chars.is_empty() {
                out.push('\n');
            }
            for piece in chars.chunks(width) {
                out.extend(piece);
                out.push('\n');
            }
        }
        out
    }

    fn unwrapped(text: &str) -> (Decision, String) {
        let decision = decide(text.as_bytes(), true);
        let mut bytes = text.as_bytes().to_vec();
        if let Decision::Wrapped(wrap) = &decision {
            assert_eq!(wrap.join(&mut bytes, true), bytes.len());
        }
        (decision, String::from_utf8(bytes).unwrap())
    }

    /// The project's fixture logs as a terminal shows them (a copy carries no colour codes).
    fn log() -> String {
        let log = crate::logscan::fixture_logs();
        let mut plain = Vec::new();
        crate::logscan::prefix::strip_ansi(&log, &mut plain);
        String::from_utf8_lossy(&plain).into_owned()
    }

    #[test]
    fn a_wrapped_log_is_joined_and_keeps_its_line_numbers() {
        let plain = log();
        for width in [80, 120, 200] {
            let text = wrapped(&plain, width);
            let (decision, joined) = unwrapped(&text);
            assert!(matches!(decision, Decision::Wrapped(_)), "{width}");
            assert_eq!(joined.lines().count(), text.lines().count());
            // Every NCCL line of the log stands whole at the number of its first piece (a
            // piece of prose may look like a line's start: `was written by`).
            let mut number = 0;
            let joined: Vec<&str> = joined.lines().collect();
            for line in plain.lines() {
                if line.contains("NCCL INFO") || line.contains("NCCL WARN") {
                    assert_eq!(joined[number], line, "{width}: line {}", number + 1);
                }
                number += line.chars().count().div_ceil(width).max(1);
            }
        }
    }

    #[test]
    fn a_log_whose_widest_line_repeats_is_not_wrapped() {
        // Sixteen ranks print the same longest line, each followed by a line of their own.
        let mut text = String::new();
        for rank in 0..16 {
            text += &format!(
                "node-{}:{}:{} [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1 [2] 1/-1/-1->0->-1\n",
                rank / 8,
                100 + rank,
                100 + rank
            );
            text += &format!(
                "node-{}:{}:{} [0] NCCL INFO P2P Chunksize set to 131072\n",
                rank / 8,
                100 + rank,
                100 + rank
            );
        }
        assert_eq!(decide(text.as_bytes(), true), Decision::Plain);
    }

    #[test]
    fn a_log_cut_at_a_width_is_not_wrapped() {
        // A viewer that cuts lines at 120 columns and drops the rest.
        let text: String = log()
            .lines()
            .map(|l| l.chars().take(120).collect::<String>() + "\n")
            .collect();
        assert_eq!(decide(text.as_bytes(), true), Decision::Plain);
        // Nor is the log as it stands.
        assert_eq!(decide(log().as_bytes(), true), Decision::Plain);
    }

    #[test]
    fn a_pretty_printed_json_export_is_not_wrapped() {
        // `gcloud logging read --format=json`: the widest lines are whole members, and the
        // line after each is another key. Cut at a width, a member's string is open: wrapped.
        let mut text = String::from("[\n");
        for rank in 0..16 {
            let record = format!(
                "h-{rank}:{}:1 [0] NCCL INFO comm 0x5 rank {rank} nranks 16 - Init COMPLETE",
                100 + rank
            );
            let object = serde_json::json!({"textPayload": record, "resource": {"type": "k8s"}});
            text += &serde_json::to_string_pretty(&object).unwrap();
            text += ",\n";
        }
        assert_eq!(decide(text.as_bytes(), true), Decision::Plain);
        let cut = wrapped(&text, 60);
        assert!(matches!(decide(cut.as_bytes(), true), Decision::Wrapped(_)));
        for (line, whole) in [
            (&br#"  "message": "x\n","#[..], true),
            (br#"{"log":"x"}"#, true),
            (br#"  "resource": {"#, false),
            (br#"  "message": "x"#, false),
            (br#""a","b""#, false),
            (br#""key""#, true),
        ] {
            assert_eq!(
                crate::logscan::input::is_whole_json_line(line),
                whole,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn short_logs_wait_for_enough_lines_unless_they_end() {
        let text = wrapped(&log().lines().take(40).collect::<Vec<_>>().join("\n"), 80);
        assert_eq!(decide(text.as_bytes(), false), Decision::Undecided);
        assert!(matches!(
            decide(text.as_bytes(), true),
            Decision::Wrapped(_)
        ));
    }

    #[test]
    fn a_run_that_may_go_on_in_the_next_chunk_is_left_for_it() {
        let text = wrapped(&log(), 80);
        let Decision::Wrapped(wrap) = decide(text.as_bytes(), true) else {
            panic!("not wrapped")
        };
        // A chunk ending inside a wrapped record: the record's pieces go back.
        let first_piece = text
            .find("train-0:42:96 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0]")
            .unwrap();
        let first_piece = text[..first_piece].rfind('\n').unwrap() + 1;
        let cut = first_piece + text[first_piece..].find('\n').unwrap() + 1;
        assert_eq!(cut - first_piece, 81);
        let mut chunk = text.as_bytes()[..cut].to_vec();
        let done = wrap.join(&mut chunk, false);
        assert_eq!(done, first_piece);
        assert_eq!(&chunk[done..], &text.as_bytes()[done..cut]);
        // At the end of the source it is joined with what there is.
        assert_eq!(wrap.join(&mut text.as_bytes()[..cut].to_vec(), true), cut);
    }

    #[test]
    fn crlf_and_colour_codes_are_measured_as_a_terminal_shows_them() {
        assert_eq!(width(b"\x1b[36m(pid=1)\x1b[0m ab"), 10);
        assert_eq!(width("héllo".as_bytes()), 5);
        let text = wrapped(&log(), 100).replace('\n', "\r\n");
        let (decision, joined) = unwrapped(&text);
        assert!(matches!(decision, Decision::Wrapped(_)));
        assert!(joined.contains("via NET/Socket/0"), "joined");
    }

    #[test]
    fn any_bytes_are_safe() {
        for text in [
            &b""[..],
            b"\n\n\n",
            b"\xff\xfe\x1b[",
            b"\x1b[\n\x1b[\n\x1b[\n",
        ] {
            if let Decision::Wrapped(wrap) = decide(text, true) {
                wrap.join(&mut text.to_vec(), true);
            }
        }
    }
}
