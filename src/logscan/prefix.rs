//! Step 1 of the pipeline: find NCCL records in a physical line and take apart what surrounds
//! them.
//!
//! Launchers and log collectors prepend their own tags: mpirun `[1,3]<stdout>:`, `srun -l`
//! `3: `, pdsh `host: `, torch `[rank3]:`, Ray `(RayTrainWorker pid=.., ip=..)`,
//! `kubectl logs --prefix` `[pod/x/c] `, CloudWatch `| timestamp |` (grammar §1.3). Rather than
//! knowing every wrapper, we locate the `NCCL INFO` / `NCCL WARN` marker and parse NCCL's own
//! `host:pid:tid [dev]` immediately to its left; whatever is further left is the wrapper. Humans
//! sometimes glue several records onto one line, so every marker in a line is a record.

use std::sync::LazyLock;

use memchr::{memmem, memrchr};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
}

/// One NCCL record: the parsed prefix and the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub level: Level,
    pub host: Option<&'a str>,
    pub pid: Option<u32>,
    /// `host:pid` as written: the process identity, borrowed from the line.
    pub process: Option<&'a str>,
    /// The local CUDA device in NCCL's `[dev]`, not the rank.
    pub dev: Option<u32>,
    /// Text left of NCCL's prefix: wrapper tags and, for WARN lines, the timestamp.
    pub wrapper: &'a str,
    /// The message after `NCCL INFO ` / `NCCL WARN `, without trailing blanks or Ray's dedup
    /// suffix.
    pub msg: &'a str,
}

static NCCL_MARKER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"NCCL "));

/// How far left of a marker we look for NCCL's prefix. WARN locations can be long C++
/// signatures; anything beyond this is not a prefix.
const PREFIX_WINDOW: usize = 600;

/// Calls `f` for every NCCL record in `line`; returns whether there was any.
pub fn for_each_record<'a>(line: &'a str, mut f: impl FnMut(Record<'a>)) -> bool {
    let bytes = line.as_bytes();
    let Some((first, level)) = find_marker(bytes, 0) else {
        return false;
    };
    let prefix = parse_prefix(&bytes[..first]);
    let wrapper = &line[..prefix.start];
    let mut current = (level, prefix, first + MARKER_LEN);
    loop {
        let (level, prefix, msg_start) = current;
        let next = find_marker(bytes, msg_start);
        // A glued record starts where the next marker's own prefix starts.
        let (msg_end, next_record) = match next {
            Some((m, next_level)) => {
                let next_prefix = parse_prefix(&bytes[msg_start..m]).shifted(msg_start);
                (
                    next_prefix.start,
                    Some((next_level, next_prefix, m + MARKER_LEN)),
                )
            }
            None => (bytes.len(), None),
        };
        f(Record {
            level,
            host: prefix.host.map(|(a, b)| &line[a..b]),
            pid: prefix.pid,
            process: prefix.host.map(|(a, _)| &line[a..prefix.pid_end]),
            dev: prefix.dev,
            wrapper,
            msg: clean_message(&line[msg_start.min(msg_end)..msg_end]),
        });
        match next_record {
            Some(record) => current = record,
            None => return true,
        }
    }
}

/// `NCCL INFO ` and `NCCL WARN ` are both this long.
const MARKER_LEN: usize = 10;

fn find_marker(bytes: &[u8], from: usize) -> Option<(usize, Level)> {
    let mut pos = from;
    while pos < bytes.len() {
        let at = pos + NCCL_MARKER.find(&bytes[pos..])?;
        let tail = &bytes[at + 5..];
        let level = if tail.starts_with(b"INFO") {
            Some(Level::Info)
        } else if tail.starts_with(b"WARN") {
            Some(Level::Warn)
        } else {
            None
        };
        // "NCCL INFO" must end the line or be followed by a blank.
        if let Some(level) = level
            && tail.get(4).is_none_or(|b| *b == b' ')
        {
            return Some((at, level));
        }
        pos = at + 5;
    }
    None
}

/// Strips what wrappers append to a message: trailing blanks and Ray's
/// ` [repeated 3x across cluster]`.
fn clean_message(msg: &str) -> &str {
    let msg = msg.trim();
    if msg.ends_with("across cluster]")
        && let Some(at) = msg.rfind(" [repeated ")
    {
        return msg[..at].trim_end();
    }
    msg
}

/// NCCL's `host:pid:tid [dev]` found left of a marker; `start` is where it begins (the end of
/// the wrapper). Byte offsets into the line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Prefix {
    start: usize,
    host: Option<(usize, usize)>,
    pid_end: usize,
    pid: Option<u32>,
    dev: Option<u32>,
}

impl Prefix {
    fn shifted(self, by: usize) -> Prefix {
        Prefix {
            start: self.start + by,
            host: self.host.map(|(a, b)| (a + by, b + by)),
            pid_end: self.pid_end + by,
            ..self
        }
    }
}

/// Parses the prefix at the right end of `left` (the text before a marker).
///
/// INFO: `host:pid:tid [dev] `. WARN: `host:pid:tid [dev] location:line `, where the location
/// may be a C++ signature with blanks, so we search leftwards for a `[digits]` preceded by
/// `host:pid:tid`. Pasted logs may keep only `[dev] `, or nothing at all.
fn parse_prefix(left: &[u8]) -> Prefix {
    let floor = left.len().saturating_sub(PREFIX_WINDOW);
    let mut end = left.len();
    while let Some(open) = memrchr(b'[', &left[floor..end]).map(|i| i + floor) {
        if let Some((dev, after)) = bracketed_number(left, open) {
            if open > 0
                && left[open - 1] == b' '
                && let Some((host_start, host_end, pid_end, pid)) = host_pid_tid(&left[..open - 1])
            {
                return Prefix {
                    start: host_start,
                    host: Some((host_start, host_end)),
                    pid_end,
                    pid: Some(pid),
                    dev: Some(dev),
                };
            }
            if left[after..].iter().all(|b| *b == b' ') {
                return Prefix {
                    start: open,
                    dev: Some(dev),
                    ..Prefix::default()
                };
            }
        }
        end = open;
    }
    Prefix {
        start: trim_end_len(left),
        ..Prefix::default()
    }
}

fn trim_end_len(bytes: &[u8]) -> usize {
    bytes.len() - bytes.iter().rev().take_while(|b| **b == b' ').count()
}

/// `[123]` at `open` → (123, index after `]`).
fn bracketed_number(bytes: &[u8], open: usize) -> Option<(u32, usize)> {
    let digits = bytes[open + 1..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let close = open + 1 + digits;
    if digits == 0 || digits > 6 || bytes.get(close) != Some(&b']') {
        return None;
    }
    Some((parse_u32(&bytes[open + 1..close])?, close + 1))
}

/// `...host:pid:tid` at the end of `bytes` → (host start, host end, pid end, pid).
fn host_pid_tid(bytes: &[u8]) -> Option<(usize, usize, usize, u32)> {
    let tid_start = digits_before(bytes, bytes.len())?;
    let pid_end = tid_start.checked_sub(1).filter(|i| bytes[*i] == b':')?;
    let pid_start = digits_before(bytes, pid_end)?;
    let host_end = pid_start.checked_sub(1).filter(|i| bytes[*i] == b':')?;
    let host_len = bytes[..host_end]
        .iter()
        .rev()
        .take_while(|b| is_host_byte(**b))
        .count();
    if host_len == 0 {
        return None;
    }
    let pid = parse_u32(&bytes[pid_start..pid_end])?;
    Some((host_end - host_len, host_end, pid_end, pid))
}

/// Start of the run of (at most 10) digits ending at `end`.
fn digits_before(bytes: &[u8], end: usize) -> Option<usize> {
    let n = bytes[..end]
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    (1..=10).contains(&n).then(|| end - n)
}

fn is_host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')
}

pub fn parse_u32(digits: &[u8]) -> Option<u32> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// A stable name for the wrapper's identity tag (mpirun `[1,3]`, srun `3`, torch `[rank3]`,
/// Ray `(RayTrainWorker pid=1, ip=..)`, a pdsh/kubectl host), used to tell ranks apart when
/// NCCL's own `host:pid` was cut away. Timestamps are dropped: they change on every line.
pub fn wrapper_tag(wrapper: &str) -> Option<String> {
    // CloudWatch: `  | 2024-..Z | `; keep what is left of the first bar.
    let mut tag = wrapper.split('|').next().unwrap_or("").trim();
    // A NCCL 2.26+ WARN timestamp `[2025-01-02 10:24:27]`.
    if tag.starts_with("[20") && tag.len() >= 21 && tag.as_bytes()[20] == b']' {
        tag = tag[21..].trim();
    }
    let tag = tag
        .trim_end_matches(':')
        .trim_end_matches("<stdout>")
        .trim_end_matches("<stderr>")
        .trim_end_matches(':')
        .trim();
    (!tag.is_empty()).then(|| tag.chars().take(80).collect())
}

/// Removes ANSI colour sequences (`ESC [ ... m`) that survive in Ray and kubectl output.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(line: &str) -> Vec<Record<'_>> {
        let mut out = Vec::new();
        for_each_record(line, |r| out.push(r));
        out
    }

    fn one(line: &str) -> Record<'_> {
        let recs = records(line);
        assert_eq!(recs.len(), 1, "{line}: {recs:?}");
        recs[0]
    }

    #[test]
    fn plain_info_line() {
        let r = one("vm:1643:1643 [0] NCCL INFO Using network Socket");
        assert_eq!(r.level, Level::Info);
        assert_eq!((r.host, r.pid, r.dev), (Some("vm"), Some(1643), Some(0)));
        assert_eq!(r.process, Some("vm:1643"));
        assert_eq!((r.wrapper, r.msg), ("", "Using network Socket"));
    }

    #[test]
    fn wrapper_prefixes_are_left_of_the_host() {
        for (line, wrapper, host) in [
            (
                "[1,10]<stdout>:nccl-tests-efa-worker-1:27:27 [2] NCCL INFO x",
                "[1,10]<stdout>:",
                "nccl-tests-efa-worker-1",
            ),
            (
                "1: p5-dy-gpu-3:47930:47930 [0] NCCL INFO x",
                "1: ",
                "p5-dy-gpu-3",
            ),
            (
                "(RayTrainWorker pid=1234, ip=10.0.0.2) node-a:4711:4790 [3] NCCL INFO x",
                "(RayTrainWorker pid=1234, ip=10.0.0.2) ",
                "node-a",
            ),
            (
                "[pod/w-0/main] w-0:53:53 [0] NCCL INFO x",
                "[pod/w-0/main] ",
                "w-0",
            ),
            (
                "  | 2024-05-01T10:00:00.000Z | ip-10-1-2-3:77:77 [7] NCCL INFO x",
                "  | 2024-05-01T10:00:00.000Z | ",
                "ip-10-1-2-3",
            ),
        ] {
            let r = one(line);
            assert_eq!(
                (r.wrapper, r.host, r.msg),
                (wrapper, Some(host), "x"),
                "{line}"
            );
        }
    }

    #[test]
    fn warn_with_timestamp_and_cpp_signature() {
        let line = "[2026-01-02 10:24:27] ip-172-31-3-153:35115:35469 [2] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):208 NCCL WARN NET/OFI Failed to initialize sendrecv protocol";
        let r = one(line);
        assert_eq!(r.level, Level::Warn);
        assert_eq!(
            (r.host, r.pid, r.dev),
            (Some("ip-172-31-3-153"), Some(35115), Some(2))
        );
        assert_eq!(r.msg, "NET/OFI Failed to initialize sendrecv protocol");
        assert_eq!(wrapper_tag(r.wrapper), None);
    }

    #[test]
    fn pasted_records_without_host() {
        let r = one("[3] NCCL INFO Using network IB");
        assert_eq!((r.host, r.dev, r.msg), (None, Some(3), "Using network IB"));
        let r = one("NCCL INFO Using network IB\r");
        assert_eq!((r.host, r.dev, r.msg), (None, None, "Using network IB"));
    }

    #[test]
    fn glued_records_are_split() {
        let line =
            "a:1:1 [0] NCCL INFO Using network IB        b:2:2 [1] NCCL INFO Using network Socket";
        let recs = records(line);
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].host, recs[0].msg), (Some("a"), "Using network IB"));
        assert_eq!(
            (recs[1].host, recs[1].msg),
            (Some("b"), "Using network Socket")
        );
    }

    #[test]
    fn ray_dedup_suffix_is_dropped() {
        let r = one(
            "(RayTrainWorker pid=9, ip=10.0.0.1) h:9:9 [0] NCCL INFO Using network Libfabric [repeated 7x across cluster]",
        );
        assert_eq!(r.msg, "Using network Libfabric");
    }

    #[test]
    fn lines_without_a_marker() {
        assert!(records("NCCL version 2.11.4+cuda11.4").is_empty());
        assert!(records("torch NCCL error in: x").is_empty());
        assert!(records("NCCL INFOx").is_empty());
        assert_eq!(one("h:1:1 [0] NCCL INFO").msg, "");
    }

    #[test]
    fn wrapper_tags() {
        assert_eq!(wrapper_tag("[1,3]<stdout>:").as_deref(), Some("[1,3]"));
        assert_eq!(wrapper_tag("3: ").as_deref(), Some("3"));
        assert_eq!(wrapper_tag("[rank3]:").as_deref(), Some("[rank3]"));
        assert_eq!(wrapper_tag("  | 2024-05-01T10:00:00Z | "), None);
        assert_eq!(wrapper_tag(""), None);
    }

    #[test]
    fn ansi_codes_are_removed() {
        assert_eq!(
            strip_ansi("\u{1b}[36m(RayTrainWorker pid=1)\u{1b}[0m x"),
            "(RayTrainWorker pid=1) x"
        );
    }
}
