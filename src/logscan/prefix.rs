//! Step 1 of the pipeline: find NCCL records in a physical line and take apart what surrounds
//! them.
//!
//! Launchers and log collectors prepend their own tags: mpirun `[1,3]<stdout>:`, `srun -l`
//! `3: `, pdsh `host: `, torch `[rank3]:`, Ray `(RayTrainWorker pid=.., ip=..)`,
//! `kubectl logs --prefix` `[pod/x/c] `, CloudWatch `| timestamp |` (grammar §1.3). Rather than
//! knowing every wrapper, we locate the `NCCL INFO` / `NCCL WARN` marker and parse NCCL's own
//! `host:pid:tid [dev]` immediately to its left; whatever is further left is the wrapper. Humans
//! sometimes glue several records onto one line, so every marker in a line is a record.

use std::borrow::Cow;

use memchr::memrchr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
}

/// One NCCL record: its level, its message and its place in the line. Where it came from
/// (`Place::origin`) is parsed only on demand, because most records are noise and are
/// dropped after classification. Lines are bytes (logs need not be UTF-8); only the message
/// is decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub level: Level,
    /// The message after `NCCL INFO ` / `NCCL WARN `, without trailing blanks or Ray's dedup
    /// suffix, as bytes: `text()` decodes it (the memo of known messages needs no decoding).
    pub msg: &'a [u8],
    pub place: Place<'a>,
}

/// Where a record sits in its line: enough to find its origin without the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place<'a> {
    pub line: &'a [u8],
    /// `line[region.0..region.1]` holds NCCL's prefix; `region.1` is the marker.
    pub region: (usize, usize),
    /// Records glued after the first one on a line share no wrapper.
    pub first: bool,
}

/// NCCL's `host:pid:tid [dev]` of a record and the wrapper text left of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Origin<'a> {
    pub host: Option<&'a str>,
    pub pid: Option<u32>,
    /// `host:pid` as written: the process identity, borrowed from the line.
    pub process: Option<&'a str>,
    /// The local CUDA device in NCCL's `[dev]`, not the rank.
    pub dev: Option<u32>,
    /// Text left of NCCL's prefix: wrapper tags and, for WARN lines, the timestamp.
    pub wrapper: &'a [u8],
    /// Everything from NCCL's prefix to the marker (`host:pid:tid [dev] `): equal bytes here
    /// mean the same rank, which lets the caller cache the lookup.
    pub prefix: &'a [u8],
}

impl<'a> Place<'a> {
    pub fn origin(&self) -> Origin<'a> {
        let (from, to) = self.region;
        let line = self.line;
        let prefix = parse_prefix(&line[from..to]).shifted(from);
        let text = |a: usize, b: usize| {
            let bytes = &line[a..b];
            debug_assert!(bytes.is_ascii());
            // SAFETY: host bytes pass `is_host_byte` and pid bytes are digits (`host_pid_tid`):
            // ASCII, so valid UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(bytes) })
        };
        Origin {
            host: prefix.host.and_then(|(a, b)| text(a, b)),
            pid: prefix.pid,
            process: prefix.host.and_then(|(a, _)| text(a, prefix.pid_end)),
            dev: prefix.dev,
            wrapper: if self.first {
                &line[..prefix.start]
            } else {
                b""
            },
            prefix: &line[prefix.start..to],
        }
    }

    /// The bytes between the previous record (or the line start) and the marker.
    pub fn before_marker(&self) -> &'a [u8] {
        &self.line[self.region.0..self.region.1]
    }
}

impl<'a> Record<'a> {
    /// The message as text, invalid UTF-8 replaced.
    #[cfg(test)]
    pub fn text(&self) -> Cow<'a, str> {
        decode_message(self.msg)
    }

    #[cfg(test)]
    fn origin(&self) -> Origin<'a> {
        self.place.origin()
    }
}

/// Prefixes (`host:pid:tid [dev] `) seen lately, as hashes in a small direct-mapped table:
/// a record without evidence only shows that its process exists, which needs a look the
/// first time its prefix shows up, not on each of the thousands of lines after.
pub struct SeenPrefixes {
    slots: Box<[u64; 256]>,
}

impl Default for SeenPrefixes {
    fn default() -> Self {
        SeenPrefixes {
            slots: Box::new([0; 256]),
        }
    }
}

impl SeenPrefixes {
    /// Whether `before_marker` (the text before a record's marker) is new here. Only its
    /// last 48 bytes count: NCCL's prefix is at the right, wrapper timestamps at the left.
    pub fn first_time(&mut self, before_marker: &[u8]) -> bool {
        let tail = &before_marker[before_marker.len().saturating_sub(48)..];
        // Never 0, the empty slot. A fixed seed and this hash (not `hash_bytes`): which
        // prefixes share a slot decides, in a garbled log, whether a repeated prefix shows its
        // process again (`scan::presence`), so another hash changes such output.
        let hash =
            std::hash::BuildHasher::hash_one(&foldhash::fast::FixedState::with_seed(0), tail) | 1;
        let slot = &mut self.slots[(hash >> 56) as usize];
        let new = *slot != hash;
        *slot = hash;
        new
    }
}

/// A 64-bit hash of a byte string, for the direct-mapped caches of prefixes and messages
/// (which compare the bytes on a hit, so a collision costs only a miss). The bytes alone are
/// hashed: `Hash for [u8]` would feed the length in first, a second round per call.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = foldhash::fast::FixedState::with_seed(0).build_hasher();
    hasher.write(bytes);
    hasher.finish()
}

/// `a == b`, inline: sixteen bytes at a time with SSE2 (part of every x86_64 CPU), else eight
/// at a time in a `u64`, the last block overlapping the one before. The caches compare a
/// prefix or a message of 20 to 100 bytes on every hit, where a call to libc's `memcmp` and
/// its dispatch on the length cost more than the comparison.
#[inline]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a == b;
    }
    let word = |bytes: &[u8], at: usize| {
        u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
    };
    if n <= 16 {
        return (word(a, 0) ^ word(b, 0)) | (word(a, n - 8) ^ word(b, n - 8)) == 0;
    }
    #[cfg(target_arch = "x86_64")]
    {
        same_blocks_sse2(a, b)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut differ = word(a, n - 8) ^ word(b, n - 8);
        let mut at = 0;
        while at + 8 <= n {
            differ |= word(a, at) ^ word(b, at);
            at += 8;
        }
        differ == 0
    }
}

/// `same_bytes` for two slices of one length over 16 bytes.
#[cfg(target_arch = "x86_64")]
#[inline]
fn same_blocks_sse2(a: &[u8], b: &[u8]) -> bool {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8,
    };
    let n = a.len();
    assert!(n > 16 && b.len() == n);
    let (a, b) = (a.as_ptr(), b.as_ptr());
    // SAFETY: SSE2 is part of the x86_64 baseline; every load reads 16 bytes at `at` with
    // `at + 16 <= n`, inside both slices (checked above), unaligned loads allowed.
    unsafe {
        let load = |p: *const u8, at: usize| _mm_loadu_si128(p.add(at).cast::<__m128i>());
        let mut same = _mm_cmpeq_epi8(load(a, n - 16), load(b, n - 16));
        let mut at = 0;
        while at + 16 < n {
            same = _mm_and_si128(same, _mm_cmpeq_epi8(load(a, at), load(b, at)));
            at += 16;
        }
        _mm_movemask_epi8(same) == 0xffff
    }
}

/// How far left of a marker we look for NCCL's prefix. WARN locations can be long C++
/// signatures; anything beyond this is not a prefix.
const PREFIX_WINDOW: usize = 600;

/// Calls `f` for every NCCL record in `line`, the first marker already found by
/// `find_marker`. `known(host)`: whether a process of that host was seen (see
/// `for_each_record`).
pub fn for_each_record_at<'a>(
    line: &'a [u8],
    first: (usize, Level),
    known: impl Fn(&str) -> bool,
    f: impl FnMut(Record<'a>),
) {
    for_each_record(line, first, |from| find_marker(line, from), known, f);
}

/// Calls `f` for every NCCL record in `line`, given all its markers in order (as
/// `frame::Framer` finds them; not empty). `known` as for `for_each_record_at`.
pub fn for_each_record_in<'a>(
    line: &'a [u8],
    markers: &[(usize, Level)],
    known: impl Fn(&str) -> bool,
    f: impl FnMut(Record<'a>),
) {
    let mut rest = markers.iter().copied().skip(1);
    for_each_record(line, markers[0], |_| rest.next(), known, f);
}

/// No process is known: records are split by their text alone.
pub fn none_known(_: &str) -> bool {
    false
}

/// The records of `line` from its first marker on; `next_marker(from)` finds the next
/// marker at or after `from`, where the previous record's message starts.
///
/// A record glued onto the previous one (interleaved output lost a newline) starts where
/// its own prefix starts, and the previous message ends before it, without the glued
/// record's launcher tag (Ray's `(Worker pid=12, ip=..)`, mpirun's `[1,0]<stdout>:`). Host
/// names take every letter and digit left of `:pid:`, so a message that ends in a word
/// (`Init COMPLETE`, `P2P/IPC/read`) runs into the host: when the host so read is not known
/// but ends in one that is (`known(host)`), the record starts at that one.
fn for_each_record<'a>(
    line: &'a [u8],
    first: (usize, Level),
    mut next_marker: impl FnMut(usize) -> Option<(usize, Level)>,
    known: impl Fn(&str) -> bool,
    mut f: impl FnMut(Record<'a>),
) {
    let (at, level) = first;
    let mut current = (level, (0, at), at + MARKER_LEN);
    let mut is_first = true;
    loop {
        let (level, region, msg_start) = current;
        let next = next_marker(msg_start);
        let (msg_end, next_record) = match next {
            Some((m, next_level)) => {
                let glued = parse_prefix(&line[msg_start..m]).shifted(msg_start);
                let start = known_host_start(line, &glued, &known).unwrap_or(glued.start);
                let msg_end = launcher_tag_start(&line[msg_start..start]) + msg_start;
                (msg_end, Some((next_level, (msg_end, m), m + MARKER_LEN)))
            }
            None => (line.len(), None),
        };
        f(Record {
            level,
            msg: clean_message(&line[msg_start.min(msg_end)..msg_end]),
            place: Place {
                line,
                region,
                first: is_first,
            },
        });
        is_first = false;
        match next_record {
            Some(record) => current = record,
            None => return,
        }
    }
}

/// Where a glued record really starts when its host, read greedily, ran into the end of
/// the previous message: the start of the longest known host that ends it.
fn known_host_start(line: &[u8], glued: &Prefix, known: &impl Fn(&str) -> bool) -> Option<usize> {
    let (host_start, host_end) = glued.host?;
    let host = std::str::from_utf8(&line[host_start..host_end]).ok()?;
    if known(host) {
        return None;
    }
    let at = (1..host.len().saturating_sub(1))
        .find(|&at| host.is_char_boundary(at) && known(&host[at..]))?;
    // Digits in front may as well be a torn `pid:tid` of another line as the message's last
    // number (`nranks 2` + `80356` of `803563:...`): then the host is read as before.
    let cut = &host.as_bytes()[..at];
    (!cut.iter().all(u8::is_ascii_digit)).then_some(host_start + at)
}

/// Where a launcher's tag glued at the end of `text` (the text between a message and the
/// next record's prefix) starts, or `text.len()`: Ray's `(Name pid=N, ip=A)`, the
/// bracketed tags of mpirun (`[1,0]<stdout>:`) and torchrun (`[default0]:`), and
/// `srun -l`'s `12: `.
fn launcher_tag_start(text: &[u8]) -> usize {
    let trimmed = trim_end_len(text);
    let body = &text[..trimmed];
    let open = match body.last() {
        Some(b')') => memrchr(b'(', body)
            .filter(|&open| memchr::memmem::find(&body[open..], b"pid=").is_some()),
        Some(b':') => {
            let inner = body.strip_suffix(b":").unwrap_or(body);
            let inner = inner
                .strip_suffix(b"<stdout>")
                .or_else(|| inner.strip_suffix(b"<stderr>"))
                .unwrap_or(inner);
            if inner.ends_with(b"]") {
                memrchr(b'[', inner)
            } else {
                let digits = inner
                    .iter()
                    .rev()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let start = inner.len() - digits;
                // After a blank, or glued onto a word (`Init START12:`); after a digit the
                // number may be the message's own.
                let before = start.checked_sub(1).map(|at| inner[at]);
                let tag = before.is_some_and(|b| b == b' ' || b.is_ascii_alphabetic());
                ((1..=6).contains(&digits) && tag).then_some(start)
            }
        }
        _ => None,
    };
    open.unwrap_or(text.len())
}

/// `NCCL INFO ` and `NCCL WARN ` are both this long.
pub const MARKER_LEN: usize = 10;

/// The next `NCCL INFO` / `NCCL WARN` marker at or after `from`. A byte search for `N` is
/// cheaper than a substring search on lines this short.
pub fn find_marker(bytes: &[u8], from: usize) -> Option<(usize, Level)> {
    let haystack = bytes.get(from..)?;
    memchr::memchr_iter(b'N', haystack)
        .find_map(|at| marker_at(haystack, at))
        .map(|(at, level)| (from + at, level))
}

/// The marker starting at `bytes[at]`, if there is one.
pub fn marker_at(bytes: &[u8], at: usize) -> Option<(usize, Level)> {
    let tail = &bytes[at..];
    if tail.len() < 9 || &tail[..5] != b"NCCL " {
        return None;
    }
    let level = match &tail[5..9] {
        b"INFO" => Level::Info,
        b"WARN" => Level::Warn,
        _ => return None,
    };
    // "NCCL INFO" must end the line or be followed by a blank.
    tail.get(9)
        .is_none_or(|b| *b == b' ')
        .then_some((at, level))
}

/// A message's bytes as text, invalid UTF-8 replaced.
pub fn decode_message(msg: &[u8]) -> Cow<'_, str> {
    // NCCL messages are ASCII: a word-at-a-time ASCII check is cheaper than UTF-8
    // validation of such short strings.
    if msg.is_ascii() {
        // SAFETY: every ASCII byte sequence is valid UTF-8.
        return Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(msg) });
    }
    match std::str::from_utf8(msg) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(msg),
    }
}

/// Strips what wrappers append to a message: trailing blanks, Ray's
/// ` [repeated 3x across cluster]`.
fn clean_message(msg: &[u8]) -> &[u8] {
    // Nearly every message starts and ends with a printable byte that is not `]`.
    if let (Some(&first), Some(&last)) = (msg.first(), msg.last())
        && first.is_ascii_graphic()
        && last.is_ascii_graphic()
        && last != b']'
    {
        return msg;
    }
    let mut msg = msg.trim_ascii();
    if msg.last() == Some(&b']')
        && msg.ends_with(b"across cluster]")
        && let Some(at) = memchr::memmem::rfind(msg, b" [repeated ")
    {
        msg = msg[..at].trim_ascii_end();
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
            // The device alone (`[0] `), maybe with a WARN's source location after it.
            let location = || {
                std::str::from_utf8(&left[after..])
                    .is_ok_and(|rest| without_warn_location(rest).trim().is_empty())
            };
            if left[after..].iter().all(|b| *b == b' ') || location() {
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
    let mut host_start = host_end;
    while host_start > 0 && is_host_byte(bytes[host_start - 1]) {
        host_start -= 1;
    }
    let host_len = host_end - host_start;
    if host_len == 0 || is_clock_time(&bytes[host_start..]) {
        return None;
    }
    let pid = parse_u32(&bytes[pid_start..pid_end])?;
    Some((host_end - host_len, host_end, pid_end, pid))
}

/// Whether `host:pid:tid` is a collector's time of day instead (`22:10:15`,
/// `2026-12-06T22:10:15`): a record whose NCCL prefix was cut away, timestamped
/// (`22:10:15 [0] NCCL INFO`). A host named with two digits whose pid and thread id are two
/// digits each, all in a clock's range, is not a real one.
fn is_clock_time(text: &[u8]) -> bool {
    let Some(time) = std::str::from_utf8(text).ok().filter(|t| is_timestamp(t)) else {
        return false;
    };
    // It ends with the thread id's digits: `HH:MM:SS`, without a fraction or a zone.
    let b = &time.as_bytes()[time.len() - 8..];
    let digits = [0, 1, 3, 4, 6, 7].iter().all(|&at| b[at].is_ascii_digit());
    let two = |at: usize| (b[at] - b'0') * 10 + (b[at + 1] - b'0');
    digits && two(0) < 24 && two(3) < 60 && two(6) <= 60
}

/// Start of the run of (at most 10) digits ending at `end`.
fn digits_before(bytes: &[u8], end: usize) -> Option<usize> {
    let mut start = end;
    while start > 0 && bytes[start - 1].is_ascii_digit() {
        start -= 1;
    }
    (1..=10).contains(&(end - start)).then_some(start)
}

pub fn is_host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')
}

pub fn parse_u32(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 10 {
        return None;
    }
    let mut value: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + u64::from(b - b'0');
    }
    u32::try_from(value).ok()
}

/// A stable name for the wrapper's identity tag (mpirun `[1,3]`, srun `3`, torch `[rank3]`,
/// Ray `(RayTrainWorker pid=1, ip=..)`, a pdsh/kubectl host), used to tell ranks apart when
/// NCCL's own `host:pid` was cut away. Timestamps are dropped: they change on every line
/// (`timestamp_words`).
pub fn wrapper_tag(wrapper: &[u8]) -> Option<Cow<'_, str>> {
    let wrapper = String::from_utf8_lossy(wrapper);
    // Columns between bars: CloudWatch's `  | 2024-..Z | `, docker compose's `trainer-1  | `
    // before the process's own wrapper. Those left empty once timestamps are out are
    // dropped; the others are kept, in order.
    let bars = wrapper
        .contains('|')
        .then(|| without_empty_columns(&wrapper));
    let tag = bars.as_deref().unwrap_or(&wrapper).trim();
    let dated = without_timestamps(tag);
    let tag = without_warn_location(dated.as_deref().unwrap_or(tag));
    let tag = trim_end_all(tag, ":");
    let tag = trim_end_all(tag, "<stdout>");
    let tag = trim_end_all(tag, "<stderr>");
    let tag = trim_end_all(tag, ":").trim();
    if tag.is_empty() {
        return None;
    }
    // At most 80 characters; borrowed when the wrapper was valid UTF-8 and held no timestamp
    // between other words (this runs per record of wrapped lines whose prefix is not
    // cached).
    let end = tag.char_indices().nth(80).map_or(tag.len(), |(at, _)| at);
    Some(match (&wrapper, &bars, &dated) {
        (Cow::Borrowed(whole), None | Some(Cow::Borrowed(_)), None | Some(Cow::Borrowed(_))) => {
            let start = tag.as_ptr() as usize - whole.as_ptr() as usize;
            Cow::Borrowed(&whole[start..start + end])
        }
        _ => Cow::Owned(tag[..end].to_string()),
    })
}

/// `wrapper`'s columns between `|` bars without those that are blank or only a timestamp,
/// joined by a blank; borrowed when one column is left.
fn without_empty_columns(wrapper: &str) -> Cow<'_, str> {
    let kept: Vec<&str> = wrapper
        .split('|')
        .map(str::trim)
        .filter(|column| {
            !column.is_empty() && without_timestamps(column).is_none_or(|t| !t.is_empty())
        })
        .collect();
    match kept[..] {
        [] => Cow::Borrowed(""),
        [one] => Cow::Borrowed(one),
        _ => Cow::Owned(kept.join(" ")),
    }
}

/// `tag` without the source location that NCCL prints before `NCCL WARN` (`init.cc:123`,
/// `misc/ibvwrap.cc:212`, 2.30's `init.cc:123 (ncclCommInitRank)`, aws-ofi-nccl's C
/// function `nccl_net_ofi_init:123` up to 1.14): part of the record, not of a wrapper, and
/// all that is left of the prefix once a person cut `host:pid:tid [dev]` away (with the
/// device alone, `[0] init.cc:123`, the device stays).
fn without_warn_location(tag: &str) -> &str {
    let mut rest = tag.trim_end();
    if let Some(open) = rest.rfind(" (")
        && rest.ends_with(')')
        && rest[open + 2..rest.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && warn_location_at_end(rest[..open].trim_end()).is_some()
    {
        rest = rest[..open].trim_end();
    }
    match warn_location_at_end(rest) {
        Some(start) => rest[..start].trim_end(),
        None => tag,
    }
}

/// Where a WARN's source location that ends `text` starts: `file.cc:123`, `dir/file.h:12`,
/// `nccl_net_ofi_init:123` (a C or C++ source file, or a C function name with an
/// underscore, then `:` and a line number), also glued onto a tag (`[default0]:init.cc:12`).
fn warn_location_at_end(text: &str) -> Option<usize> {
    let (name, line) = text.rsplit_once(':')?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let path_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/');
    let start = name.len() - name.bytes().rev().take_while(|&b| path_byte(b)).count();
    let name = &name[start..];
    let source = [".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".hh"]
        .iter()
        .any(|ext| name.len() > ext.len() && name.ends_with(ext));
    let function = name.contains('_')
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    (source || function).then_some(start)
}

/// `tag` without the words that are a timestamp (`timestamp_words`), or `None` when it has
/// none. Those at either end are cut off in place (`kubectl logs --timestamps`, Docker's
/// and journald's ISO times come first); only a timestamp between other words makes a new
/// string.
fn without_timestamps(tag: &str) -> Option<Cow<'_, str>> {
    // Every form has a `:` (the time), a `-` or `/` (the date) or a `.` (seconds with a
    // fraction), or starts with a digit (seconds since the epoch): most tags have none of
    // these (torch's, mpirun's), and are not split into words at all.
    if !tag.starts_with(|c: char| c.is_ascii_digit())
        && !tag.bytes().any(|b| matches!(b, b':' | b'-' | b'/' | b'.'))
    {
        return None;
    }
    let mut words: Vec<&str> = Vec::new();
    for word in tag.split_whitespace() {
        // OpenMPI's `--timestamp-output` glues `ctime`'s year onto its tag:
        // `Mon Dec  7 00:10:15 2026[1,0]<stdout>:`.
        let after_time = words.last().is_some_and(|w| is_time_of_day(w));
        match word.as_bytes() {
            [y0, y1, y2, y3, b'[' | b'<', ..]
                if after_time && [y0, y1, y2, y3].iter().all(|b| b.is_ascii_digit()) =>
            {
                words.extend([&word[..4], &word[4..]]);
            }
            _ => words.push(word),
        }
    }
    let dated = timestamp_words(&words);
    if !dated.contains(&true) {
        return None;
    }
    let kept: Vec<usize> = (0..words.len()).filter(|&i| !dated[i]).collect();
    let (Some(&first), Some(&last)) = (kept.first(), kept.last()) else {
        return Some(Cow::Borrowed(""));
    };
    if kept.len() == last - first + 1 {
        // One run of words: the text from the first to the end of the last, as it stands.
        let start = words[first].as_ptr() as usize - tag.as_ptr() as usize;
        let end = words[last].as_ptr() as usize - tag.as_ptr() as usize + words[last].len();
        return Some(Cow::Borrowed(&tag[start..end]));
    }
    Some(Cow::Owned(
        kept.iter().map(|&i| words[i]).collect::<Vec<_>>().join(" "),
    ))
}

/// Which of a wrapper's words are a timestamp, as log collectors and loggers write them:
/// an ISO 8601 date with or without its time (`2026-12-06T22:00:00.163715123Z`,
/// `2026-12-06`, `2026/12/06`), a time of day with optional fraction and zone (`22:00:00`,
/// `22:00:00,123`, `22:00:00.5+01:00`), each maybe in brackets (`[2025-01-02 10:24:27]`,
/// NCCL 2.26+'s WARN time), and the words around such a time: syslog's and `date`'s
/// (`Dec  6 22:00:00`, `Sun Dec  6 22:00:00 2026`) and the stream and tag of the CRI log
/// format, which a node keeps under `/var/log/pods` (`2026-12-06T22:00:00.1Z stdout F`).
/// Seconds count too (`is_seconds`), with the bracket the kernel's log opens before them
/// (`[   12.345678]`). A small bare number stays: `srun -l` tags lines with the rank (`12: `).
fn timestamp_words(words: &[&str]) -> Vec<bool> {
    let mut dated: Vec<bool> = words.iter().map(|w| is_timestamp(w)).collect();
    for at in 1..words.len() {
        if words[at - 1] == "[" && dated[at] && words[at].ends_with(']') {
            dated[at - 1] = true;
        }
    }
    for at in 0..words.len() {
        let word = words[at].trim_matches(['[', ']', '(', ')', ',']);
        let time = is_time_of_day(word);
        if !(time || dated[at]) {
            continue;
        }
        let day = |w: &str| w.len() <= 2 && w.bytes().all(|b| b.is_ascii_digit());
        if time && at >= 2 && day(words[at - 1]) && is_month(words[at - 2]) {
            dated[at - 1] = true;
            dated[at - 2] = true;
            if at >= 3 && is_weekday(words[at - 3]) {
                dated[at - 3] = true;
            }
        }
        match words.get(at + 1..at + 3) {
            Some([stream, tag])
                if matches!(*stream, "stdout" | "stderr") && matches!(*tag, "F" | "P") =>
            {
                dated[at + 1] = true;
                dated[at + 2] = true;
            }
            _ => {}
        }
        if let Some(year) = words.get(at + 1)
            && time
            && year.len() == 4
            && (year.starts_with("19") || year.starts_with("20"))
            && year.bytes().all(|b| b.is_ascii_digit())
        {
            dated[at + 1] = true;
        }
    }
    dated
}

fn is_timestamp(word: &str) -> bool {
    let word = word.trim_matches(['[', ']', '(', ')', ',']);
    let b = word.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    if b.len() >= 10
        && digits(0..4)
        && matches!(b[4], b'-' | b'/')
        && digits(5..7)
        && b[7] == b[4]
        && digits(8..10)
    {
        return b.len() == 10 || (matches!(b[10], b'T' | b'_') && is_time_of_day(&word[11..]));
    }
    is_time_of_day(word) || is_seconds(word)
}

/// Seconds as loggers count them: with a fraction (`1765058400.123456` since the epoch:
/// `ts '%.s'`, `journalctl -o short-unix`, a `%s` time format; `12.345678` since boot: the
/// kernel's log, `ts -s`), or whole seconds, milli-, micro- or nanoseconds since the epoch
/// (10, 13, 16 or 19 digits from 2001 on; JSON loggers' `ts`). A launcher's rank is a whole
/// number, and a short one.
fn is_seconds(word: &str) -> bool {
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    match word.split_once('.') {
        Some((whole, fraction)) => digits(whole) && digits(fraction),
        None => digits(word) && matches!(word.len(), 10 | 13 | 16 | 19) && word.starts_with('1'),
    }
}

/// `HH:MM:SS`, then an optional fraction (`.` or `,`) and zone (`Z`, `+01:00`, `-0500`,
/// `+01`).
fn is_time_of_day(word: &str) -> bool {
    let b = word.as_bytes();
    let two = |at: usize| b.len() >= at + 2 && b[at].is_ascii_digit() && b[at + 1].is_ascii_digit();
    if !(two(0) && b.get(2) == Some(&b':') && two(3) && b.get(5) == Some(&b':') && two(6)) {
        return false;
    }
    let mut rest = &b[8..];
    if let [b'.' | b',', tail @ ..] = rest {
        let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &tail[n..];
    }
    match rest {
        [] | [b'Z'] => true,
        [b'+' | b'-', zone @ ..] => {
            let digits = zone.iter().filter(|c| c.is_ascii_digit()).count();
            let colons = zone.len() - digits;
            matches!((digits, colons), (2, 0) | (4, 0))
                || (zone.len() == 5 && zone[2] == b':' && digits == 4)
        }
        _ => false,
    }
}

fn is_weekday(word: &str) -> bool {
    ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains(&word)
}

fn is_month(word: &str) -> bool {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS.contains(&word)
}

/// `text` without every `suffix` at its end, as `trim_end_matches` does, without building a
/// substring searcher per call (this runs per wrapped record whose prefix is not cached).
fn trim_end_all<'t>(mut text: &'t str, suffix: &str) -> &'t str {
    while let Some(rest) = text.strip_suffix(suffix) {
        text = rest;
    }
    text
}

/// The global rank a launcher's tag carries: mpirun `[1,12]`, torch `[rank12]`, `[12]`,
/// `srun -l`'s `12`. Names without a number (`[default0]` of torchrun's workers is a local
/// index, Ray's `(pid=.., ip=..)`) carry none.
pub fn launcher_rank(tag: &str) -> Option<u32> {
    // The launcher's own tag comes last when another wrapper stands before it (docker
    // compose's service name: `trainer-1 [1,3]`).
    if let Some((_, last)) = tag.rsplit_once(' ')
        && let Some(rank) = launcher_rank_of(last)
    {
        return Some(rank);
    }
    launcher_rank_of(tag)
}

fn launcher_rank_of(tag: &str) -> Option<u32> {
    let inner = tag.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
    let number = match inner {
        Some(inner) => match inner.split_once(',') {
            Some((job, rank)) if parse_u32(job.as_bytes()).is_some() => rank,
            Some(_) => return None,
            None => inner
                .strip_prefix("rank")
                .or_else(|| inner.strip_prefix("Rank "))
                .unwrap_or(inner),
        },
        None => tag,
    };
    parse_u32(number.trim().as_bytes())
}

/// Copies `line` into `out` without ANSI colour sequences (`ESC [ ... letter`), which survive
/// in Ray and kubectl output.
pub fn strip_ansi(line: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut rest = 0;
    while let Some(at) = memchr::memchr(0x1b, &line[rest..]).map(|i| i + rest) {
        out.extend_from_slice(&line[rest..at]);
        let mut end = at + 1;
        if line.get(end) == Some(&b'[') {
            end += 1;
            while end < line.len() && !line[end].is_ascii_alphabetic() {
                end += 1;
            }
            end = (end + 1).min(line.len());
        }
        rest = end;
    }
    out.extend_from_slice(&line[rest..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The caches pick a set from the hash's low bits: messages that differ in one digit
    /// anywhere (channel, rank, address) must spread over the sets as random ones would, or
    /// they push each other out and are classified again on every line.
    #[test]
    fn hash_bytes_spreads_messages_that_differ_in_one_place() {
        let mut texts = Vec::new();
        for c in 0..32 {
            for r in 0..16 {
                texts.push(format!(
                    "Channel {c:02}/0 : {r}[{r}] -> {}[{}] via P2P/IPC",
                    r + 1,
                    r % 8
                ));
                texts.push(format!(
                    "node-{c:03}:{}:{} [{}] ",
                    4000 + r,
                    4100 + r,
                    r % 8
                ));
                texts.push(format!("NET/Socket : Using [0]eth0:10.0.{c}.{r}<0>"));
            }
        }
        // And each byte of a long line changed in turn.
        let long = "comm 0x55d5c2a0 rank 3 nRanks 16 nNodes 2 localRanks 8 localRank 3 MNNVL 0";
        for at in 0..long.len() {
            let mut bytes = long.as_bytes().to_vec();
            bytes[at] ^= 1;
            texts.push(String::from_utf8(bytes).unwrap());
        }
        for bits in [8u32, 10] {
            let sets = 1usize << bits;
            let mut per_set = vec![0usize; sets];
            for text in &texts {
                per_set[hash_bytes(text.as_bytes()) as usize % sets] += 1;
            }
            let mean = texts.len() as f64 / sets as f64;
            let worst = *per_set.iter().max().unwrap() as f64;
            // Random hashing puts at most about mean + 4 sqrt(mean) + 4 in the fullest set.
            assert!(
                worst <= mean + 4.0 * mean.sqrt() + 4.0,
                "{bits} bits: {worst} in one set, mean {mean}"
            );
        }
        // Short keys and every length up to two words hash apart from their neighbours.
        let all: std::collections::HashSet<u64> = (0..=16)
            .map(|n| hash_bytes(&b"abcdefghijklmnop"[..n]))
            .collect();
        assert_eq!(all.len(), 17);
    }

    #[test]
    fn same_bytes_is_slice_equality() {
        let text: Vec<u8> = (0..100u8).map(|i| b'a' + i % 26).collect();
        for len in 0..=text.len() {
            let a = &text[..len];
            let mut b = a.to_vec();
            assert!(same_bytes(a, &b), "{len}");
            for at in 0..len {
                b[at] ^= 0x20;
                assert!(!same_bytes(a, &b), "{len} {at}");
                b[at] ^= 0x20;
            }
            // Other lengths, the same bytes as far as they go.
            assert!(!same_bytes(a, &text[..len.saturating_sub(1)]) || len == 0);
            assert!(len == text.len() || !same_bytes(a, &text[..len + 1]));
        }
    }

    #[test]
    fn trimming_suffixes_is_trim_end_matches() {
        for text in [
            "[1,3]<stdout>:",
            "x<stdout><stdout>::",
            "<stderr>",
            "::",
            "",
            "a:b:",
        ] {
            for suffix in [":", "<stdout>", "<stderr>"] {
                assert_eq!(trim_end_all(text, suffix), text.trim_end_matches(suffix));
            }
        }
    }

    #[test]
    fn launcher_rank_numbers() {
        for (tag, rank) in [
            ("[1,12]", Some(12)),
            ("[rank12]", Some(12)),
            ("[12]", Some(12)),
            ("12", Some(12)),
            ("[default0]", None),
            ("(RayTrainWorker pid=1, ip=10.0.0.1)", None),
            ("[pod/train-0/main]", None),
            // Behind another wrapper's words (docker compose's service).
            ("trainer-1 [1,3]", Some(3)),
            ("[rank 3]", Some(3)),
            ("node-3 train[812]", None),
        ] {
            assert_eq!(launcher_rank(tag), rank, "{tag}");
        }
    }

    fn records(line: &str) -> Vec<Record<'_>> {
        let mut out = Vec::new();
        if let Some(first) = find_marker(line.as_bytes(), 0) {
            for_each_record_at(line.as_bytes(), first, none_known, |r| out.push(r));
        }
        out
    }

    fn one(line: &str) -> (Record<'_>, Origin<'_>) {
        let recs = records(line);
        assert_eq!(recs.len(), 1, "{line}: {recs:?}");
        let origin = recs[0].origin();
        (recs.into_iter().next().unwrap(), origin)
    }

    /// A WARN pasted without `host:pid:tid`: the source location NCCL prints before the
    /// marker is no wrapper, and the device before it is read.
    #[test]
    fn a_warn_without_its_host_keeps_its_device_and_no_wrapper() {
        let (_, o) = one("[0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed");
        assert_eq!((o.dev, o.host), (Some(0), None));
        assert_eq!(wrapper_tag(o.wrapper), None);
        let (_, o) = one("[3] init.cc:1450 (ncclCommInitRank) NCCL WARN x");
        assert_eq!(o.dev, Some(3));
        let (_, o) = one("transport/net_ib.cc:148 NCCL WARN NET/IB : Unable to open device x");
        assert_eq!((o.dev, wrapper_tag(o.wrapper)), (None, None));
        // Anything else after the device is still no prefix.
        let (_, o) = one("[0] some words NCCL WARN x");
        assert_eq!(o.dev, None);
    }

    #[test]
    fn plain_info_line() {
        let (r, o) = one("vm:1643:1643 [0] NCCL INFO Using network Socket");
        assert_eq!(r.level, Level::Info);
        assert_eq!((o.host, o.pid, o.dev), (Some("vm"), Some(1643), Some(0)));
        assert_eq!(o.process, Some("vm:1643"));
        assert_eq!(
            (o.wrapper, r.text().as_ref()),
            (&b""[..], "Using network Socket")
        );
        assert_eq!(o.prefix, b"vm:1643:1643 [0] ");
    }

    /// A collector's time before a record whose NCCL prefix was cut away reads like
    /// `host:pid:tid`; a clock's digits are not a process.
    #[test]
    fn a_time_of_day_before_the_device_is_no_process() {
        for line in [
            "22:10:15 [0] NCCL INFO x",
            "2026-12-06T22:10:15 [0] NCCL INFO x",
            "[1,3]<stdout>: 08:00:59 [0] NCCL INFO x",
        ] {
            let (_, o) = one(line);
            assert_eq!((o.host, o.pid, o.dev), (None, None, Some(0)), "{line}");
            let tag = line.starts_with('[').then_some("[1,3]");
            assert_eq!(wrapper_tag(o.wrapper).as_deref(), tag, "{line}");
        }
        // Out of a clock's range, or a named host: a process.
        for (line, host) in [
            ("24:10:15 [0] NCCL INFO x", "24"),
            ("12:61:15 [0] NCCL INFO x", "12"),
            ("gpu-1:10:15 [0] NCCL INFO x", "gpu-1"),
            ("12:345:15 [0] NCCL INFO x", "12"),
        ] {
            let (_, o) = one(line);
            assert_eq!(o.host, Some(host), "{line}");
        }
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
            let (r, o) = one(line);
            assert_eq!(
                (o.wrapper, o.host, r.text().as_ref()),
                (wrapper.as_bytes(), Some(host), "x"),
                "{line}"
            );
        }
    }

    #[test]
    fn warn_with_timestamp_and_cpp_signature() {
        let line = "[2026-01-02 10:24:27] ip-172-31-3-153:35115:35469 [2] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):208 NCCL WARN NET/OFI Failed to initialize sendrecv protocol";
        let (r, o) = one(line);
        assert_eq!(r.level, Level::Warn);
        assert_eq!(
            (o.host, o.pid, o.dev),
            (Some("ip-172-31-3-153"), Some(35115), Some(2))
        );
        assert_eq!(r.text(), "NET/OFI Failed to initialize sendrecv protocol");
        assert_eq!(wrapper_tag(o.wrapper), None);
    }

    #[test]
    fn pasted_records_without_host() {
        let (r, o) = one("[3] NCCL INFO Using network IB");
        assert_eq!(
            (o.host, o.dev, r.text().as_ref()),
            (None, Some(3), "Using network IB")
        );
        let (r, o) = one("NCCL INFO Using network IB\r");
        assert_eq!(
            (o.host, o.dev, r.text().as_ref()),
            (None, None, "Using network IB")
        );
    }

    #[test]
    fn glued_records_are_split() {
        let line =
            "a:1:1 [0] NCCL INFO Using network IB        b:2:2 [1] NCCL INFO Using network Socket";
        let recs = records(line);
        assert_eq!(recs.len(), 2);
        assert_eq!(
            (recs[0].origin().host, recs[0].text().as_ref()),
            (Some("a"), "Using network IB")
        );
        assert_eq!(
            (recs[1].origin().host, recs[1].text().as_ref()),
            (Some("b"), "Using network Socket")
        );
        assert_eq!(recs[1].origin().wrapper, b"");
    }

    /// The records of `line` and the hosts of each, `known` naming the hosts seen before.
    fn glued<'l>(line: &'l str, known: &[&str]) -> Vec<(Option<&'l str>, String)> {
        let mut out = Vec::new();
        let first = find_marker(line.as_bytes(), 0).expect("a marker");
        let known = |host: &str| known.contains(&host);
        for_each_record_at(line.as_bytes(), first, known, |r| {
            out.push((r.origin().host, r.text().into_owned()))
        });
        out
    }

    #[test]
    fn a_glued_record_does_not_take_the_end_of_the_message_before_it() {
        // The host read greedily ran into the previous message's last word.
        let line = "x3c0:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 - Init COMPLETEx3c0:1:2 [0] NCCL INFO Connected all rings";
        assert_eq!(
            glued(line, &["x3c0"]),
            [
                (
                    Some("x3c0"),
                    "comm 0x5 rank 0 nranks 2 cudaDev 0 - Init COMPLETE".into()
                ),
                (Some("x3c0"), "Connected all rings".into()),
            ]
        );
        // Unknown hosts: read as before (the word stays with the host).
        assert_eq!(glued(line, &[])[1].0, Some("COMPLETEx3c0"));
        // A host that is known as read is kept whole.
        let line = "a:1:1 [0] NCCL INFO via P2P/IPC/readip-1:2:2 [1] NCCL INFO Connected all rings";
        assert_eq!(glued(line, &["readip-1", "ip-1"])[1].0, Some("readip-1"));
        assert_eq!(glued(line, &["ip-1"])[0].1, "via P2P/IPC/read");
        // Digits in front may be a torn pid: no cut.
        let line = "ljm:1:1 [0] NCCL INFO comm 0x9 rank 0 nranks 280356ljm:2:1 [1] NCCL INFO Connected all rings";
        assert_eq!(glued(line, &["ljm"])[1].0, Some("280356ljm"));
    }

    #[test]
    fn a_glued_records_launcher_tag_is_not_part_of_the_message_before_it() {
        for (tag, message) in [
            (
                "(RayWorkerWrapper pid=655, ip=10.0.0.2) ",
                "Using network IB",
            ),
            ("[1,3]<stdout>:", "Using network IB"),
            ("[default3]:", "Using network IB"),
            (" 12: ", "Using network IB"),
            ("12: ", "Using network IB"),
        ] {
            let line = format!(
                "h:1:1 [0] NCCL INFO Using network IB{tag}h:2:2 [3] NCCL INFO Connected all rings"
            );
            assert_eq!(glued(&line, &[])[0].1, message, "{tag:?}");
        }
        // With Ray's dedup tail in between.
        let line = "h:1:1 [0] NCCL INFO Using network IB [repeated 6x across cluster](RayWorkerWrapper pid=655) h:2:2 [3] NCCL INFO Connected all rings";
        assert_eq!(glued(line, &[])[0].1, "Using network IB");
        // A number and a colon after a blank is srun's tag, even where the message ended in
        // a number (`nranks 2` + `12: `): no NCCL message ends in a colon, and the number is
        // lost rather than misread.
        let line = "h:1:1 [0] NCCL INFO nranks 212: h:2:2 [3] NCCL INFO x";
        assert_eq!(glued(line, &[])[0].1, "nranks");
        // Text that only looks like a tag stays: a number after another sign, brackets
        // without a colon, parentheses without a pid.
        for (line, message) in [
            (
                "h:1:1 [0] NCCL INFO via NET/IB/012: h:2:2 [3] NCCL INFO x",
                "via NET/IB/012:",
            ),
            (
                "h:1:1 [0] NCCL INFO Using [0]mlx5_0:1/IB [1] h:2:2 [3] NCCL INFO x",
                "Using [0]mlx5_0:1/IB [1]",
            ),
            (
                "h:1:1 [0] NCCL INFO Selected provider is efa (found 4 nics) h:2:2 [3] NCCL INFO x",
                "Selected provider is efa (found 4 nics)",
            ),
        ] {
            assert_eq!(glued(line, &[])[0].1, message, "{line}");
        }
    }

    #[test]
    fn ray_dedup_suffix_is_dropped() {
        let (r, _) = one(
            "(RayTrainWorker pid=9, ip=10.0.0.1) h:9:9 [0] NCCL INFO Using network Libfabric [repeated 7x across cluster]",
        );
        assert_eq!(r.text(), "Using network Libfabric");
    }

    #[test]
    fn lines_without_a_marker() {
        assert!(records("NCCL version 2.11.4+cuda11.4").is_empty());
        assert!(records("torch NCCL error in: x").is_empty());
        assert!(records("NCCL INFOx").is_empty());
        assert_eq!(one("h:1:1 [0] NCCL INFO").0.text(), "");
    }

    #[test]
    fn wrapper_tags() {
        assert_eq!(wrapper_tag(b"[1,3]<stdout>:").as_deref(), Some("[1,3]"));
        assert_eq!(wrapper_tag(b"3: ").as_deref(), Some("3"));
        assert_eq!(wrapper_tag(b"[rank3]:").as_deref(), Some("[rank3]"));
        assert_eq!(wrapper_tag(b"  | 2024-05-01T10:00:00Z | "), None);
        assert_eq!(wrapper_tag(b""), None);
        // Cut at 80 characters, multi-byte ones too; invalid UTF-8 replaced.
        let long = "é".repeat(100) + ":";
        assert_eq!(
            wrapper_tag(long.as_bytes()).as_deref(),
            Some(&*"é".repeat(80))
        );
        assert_eq!(wrapper_tag(b"[w\xff]:").as_deref(), Some("[w\u{fffd}]"));
    }

    /// Timestamps change on every line: as a tag each line would be a rank of its own.
    #[test]
    fn timestamps_are_no_part_of_a_wrapper_tag() {
        for (wrapper, tag) in [
            // `kubectl logs --timestamps`, `docker logs -t`.
            (&b"2026-12-06T22:00:00.163715123Z "[..], None),
            (b"2026-12-06T22:00:00Z [1,3]<stdout>:", Some("[1,3]")),
            (
                b"[pod/train-0/worker] 2026-12-06T22:00:00.5+01:00 ",
                Some("[pod/train-0/worker]"),
            ),
            // NCCL 2.26+'s WARN time, Python's logging, journald, syslog.
            (b"[2025-01-02 10:24:27] ", None),
            (b"2026-12-06 22:00:00,123 INFO ", Some("INFO")),
            (
                b"2026-12-06T22:00:00+0000 node-3 train[812]: ",
                Some("node-3 train[812]"),
            ),
            (
                b"Dec  6 22:00:00 node-3 train[812]: ",
                Some("node-3 train[812]"),
            ),
            (b"Sun Dec  6 22:00:00 2026 [1,3]<stdout>:", Some("[1,3]")),
            // OpenMPI's `--timestamp-output`, with and without `--tag-output`: `ctime`'s year
            // glued onto the tag. A number glued onto a tag elsewhere stays.
            (b"Mon Dec  7 00:10:15 2026[1,3]<stdout>:", Some("[1,3]")),
            (b"Mon Dec  7 00:10:15 2026<stderr>:", None),
            (b"node-3 2026[1,3]<stdout>:", Some("node-3 2026[1,3]")),
            // CRI, as under /var/log/pods: time, stream, full or partial line.
            (b"2026-12-06T22:00:00.1Z stdout F ", None),
            (b"2026-12-06T22:00:00.1Z stderr P [rank3]:", Some("[rank3]")),
            (b"stdout F ", Some("stdout F")),
            // Seconds: since the epoch (with a fraction, or in milliseconds), since boot in
            // the kernel's brackets. Whole short numbers are `srun -l`'s ranks; an address
            // is a host.
            (b"1765058400.123456 ", None),
            (b"1765058400123 [1,3]<stdout>:", Some("[1,3]")),
            (b"[   12.345678] ", None),
            (b"[12.345678] node-3: ", Some("node-3")),
            (b"12: ", Some("12")),
            (b"10.0.0.2: ", Some("10.0.0.2")),
            (b"(w pid=7, ip=10.0.0.2) ", Some("(w pid=7, ip=10.0.0.2)")),
            // A WARN's source location with the prefix cut away is no wrapper either.
            (b"misc/ibvwrap.cc:212 ", None),
            (
                b"[2025-01-02 10:24:27] init.cc:1450 (ncclCommInitRank) ",
                None,
            ),
            (b"[1,3]<stdout>: transport/net_ib.cc:148 ", Some("[1,3]")),
            (b"[1,3]<stdout>: nccl_net_ofi_init:123 ", Some("[1,3]")),
            (b"node-3:812 ", Some("node-3:812")),
            (b"(w pid=7) ", Some("(w pid=7)")),
            (b"[default0]:misc/ibvwrap.cc:212 ", Some("[default0]")),
            (b"[1,0]<stderr>:nccl_net_ofi_init:88 ", Some("[1,0]")),
            // Columns between bars: blank and timestamp ones go.
            (b"  | 2024-05-01T10:00:00Z | ", None),
            (b"trainer-1  | [1,3]<stdout>:", Some("trainer-1 [1,3]")),
            (b"  | 2024-05-01T10:00:00Z | 12: ", Some("12")),
            (b"12: 2026/12/06 22:00:00 ", Some("12")),
            // A time between other words.
            (
                b"[1,3]<stdout>: 22:00:00.001 (w pid=7)",
                Some("[1,3]<stdout>: (w pid=7)"),
            ),
            // Not timestamps: numbers and words that look a little like them.
            (b"12: ", Some("12")),
            (b"[12:00] ", Some("[12:00]")),
            (b"2026-12-06x ", Some("2026-12-06x")),
            (b"22:00:00.Z ", Some("22:00:00.Z")),
            (b"Dec 6 ", Some("Dec 6")),
        ] {
            assert_eq!(
                wrapper_tag(wrapper).as_deref(),
                tag,
                "{:?}",
                String::from_utf8_lossy(wrapper)
            );
        }
        let tag = wrapper_tag(b"2026-12-06T22:00:00Z [1,3]<stdout>:");
        assert_eq!(tag.as_deref().and_then(launcher_rank), Some(3));
        // Cut off at the ends in place, without a copy.
        assert!(matches!(
            wrapper_tag(b"2026-12-06T22:00:00Z [1,3]:"),
            Some(Cow::Borrowed(_))
        ));
    }

    #[test]
    fn ansi_codes_are_removed() {
        let strip = |line: &[u8]| {
            let mut out = Vec::new();
            strip_ansi(line, &mut out);
            out
        };
        assert_eq!(
            strip("\u{1b}[36m(RayTrainWorker pid=1)\u{1b}[0m x".as_bytes()),
            b"(RayTrainWorker pid=1) x"
        );
        // A cut sequence at the end, and a lone ESC.
        assert_eq!(strip(b"a\x1b[3"), b"a");
        assert_eq!(strip(b"a\x1bb"), b"ab");
        // Whether a line is coloured left of its first record: `frame` tests.
    }
}
