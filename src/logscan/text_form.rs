//! Logs whose text went through a web page or a log viewer on its way here:
//!
//! - saved from its HTML source (a CI console's page, a forum thread fetched with `curl`),
//!   where `<`, `>` and `&` stand as entities: `0[0] -&gt; 8[0] [send] via NET/IB/0`,
//!   `eth0:10.0.0.1&lt;0&gt;`. Read as they stand, the connection lines name no ranks and
//!   interface lists no addresses.
//! - copied from a rendered page or a chat (Confluence, Slack, Outlook), where blanks come
//!   as no-break spaces (U+00A0), every one or those of a run: `NCCL INFO` with one is no
//!   record at all.
//! - exported as CSV from a log viewer (Kibana, CloudWatch Logs Insights, Datadog, Grafana):
//!   `2026-12-06T05:00:00Z,"host:1:2 [0] NCCL INFO Using network IB"`, quotes inside doubled.
//!   The closing quote ran into every message (`Using network IB"`).
//! - copied with its line numbers (`cat -n`, `nl`, `grep -n`, a viewer's or a paste site's
//!   numbered lines): `12  [4] NCCL INFO ...`. Where NCCL's `host:pid` was cut away too, the
//!   number was read as the wrapper's tag, and every line made a rank of its own.
//!
//! NCCL prints neither an entity nor a no-break space, so a source whose NCCL lines hold
//! `&gt;`, `&lt;`, `&amp;` or `&quot;`, or a no-break space, has that form; one whose NCCL
//! lines have the same number of CSV fields (two or more, three lines in four at least)
//! and stand inside a quoted field at least once, or before another field, is such an
//! export. A source whose lines (three in four at least, eight or more) start with a number
//! that grows from line to line, by one in three steps in four at least, is numbered: a
//! launcher's rank (`srun -l`'s `3: `) repeats, and nccl-tests' sizes double. So is a short
//! excerpt whose every line is numbered, from 1 on by one (ranks count from 0). Its text is
//! turned
//! back into what NCCL printed: for an export, each line's longest field (the message; a
//! time stamp or a stream name is shorter than any NCCL line); for a numbered source, each
//! line without its number.

use memchr::memmem;

/// The entities a page escapes text with, and what they stand for.
const ENTITIES: [(&[u8], u8); 8] = [
    (b"&gt;", b'>'),
    (b"&lt;", b'<'),
    (b"&amp;", b'&'),
    (b"&quot;", b'"'),
    (b"&#39;", b'\''),
    (b"&#x27;", b'\''),
    (b"&apos;", b'\''),
    (b"&nbsp;", b' '),
];
/// Entities looked at when deciding: those an NCCL line needs.
const TELLING: usize = 4;
/// Lines with `NCCL` the decision looks at.
const NCCL_LINES: usize = 256;

/// U+00A0 in UTF-8.
const NBSP: &[u8] = b"\xc2\xa0";

/// What a source's text went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Form {
    /// `<`, `>`, `&` ... as HTML entities.
    pub entities: bool,
    /// Blanks as no-break spaces.
    pub nbsp: bool,
    /// Each line a CSV record, the message one of its fields.
    pub csv: bool,
    /// Each line starts with its line number.
    pub numbered: bool,
}

impl Form {
    /// As NCCL printed it: nothing to undo.
    pub fn plain(self) -> bool {
        self == Form::default()
    }
}

/// The form of `head`, lines from the start of a source: escaped when a line with `NCCL`
/// holds one of the entities an escaped NCCL line shows, with no-break spaces when one
/// holds such a space.
pub fn form(head: &[u8]) -> Form {
    let mut form = Form::default();
    let mut pos = 0;
    // NCCL lines, those inside a quoted field, and per number of fields, how many have it
    // and how many of those have more fields after the one with `NCCL`.
    let (mut lines, mut quoted) = (0, 0);
    let mut by_fields = [(0usize, 0usize); 16];
    for _ in 0..NCCL_LINES {
        let Some(at) = memmem::find(&head[pos..], b"NCCL").map(|i| pos + i) else {
            break;
        };
        let start = memchr::memrchr(b'\n', &head[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', &head[at..]).map_or(head.len(), |i| at + i);
        let line = &head[start..end];
        form.entities |= memchr::memchr_iter(b'&', line).any(|i| {
            ENTITIES[..TELLING]
                .iter()
                .any(|(e, _)| line[i..].starts_with(e))
        });
        form.nbsp |= memmem::find(line, NBSP).is_some();
        lines += 1;
        // The field with `NCCL`, and whether one follows it as a column does (no blank after
        // the comma: a message's own commas have one, `(create 0.1, send 0.2)`).
        let (mut fields, mut nccl_field, mut column_after) = (0, None, false);
        // A JSON object's commas and quotes are no CSV (`{"log":"…","stream":"stderr"}`, a
        // pretty-printed export's `"message": "…",`: `input::json_log_text` reads them).
        let json = super::input::is_json_line(line);
        for field in csv_fields(line).take_while(|_| !json) {
            if nccl_field.map(|f| f + 1) == Some(fields) {
                column_after = !matches!(line.get(field.start), Some(b' ' | b'\t'));
            }
            if (field.start..field.end).contains(&(at - start)) {
                nccl_field = Some(fields);
                quoted += usize::from(field.quoted);
            }
            fields += 1;
        }
        let count = &mut by_fields[fields.min(15)];
        count.0 += 1;
        count.1 += usize::from(column_after);
        pos = end;
    }
    // A CSV export has the same number of fields, two or more, on every line, and quotes
    // the message where it needs to (a comma in it; some exporters quote every field) or
    // has columns after it (`,stdout`). A launcher's tag with a comma (`[1,0]<stdout>:`,
    // Ray's `(Worker pid=1, ip=..)`) makes two fields too, but quotes none and ends with
    // the message; a run of one message with commas (`Bootstrap timings total 0.8 (create
    // 0.1, send 0.2, ...)`) has a blank after each.
    let (&(most, before_more), fields) = by_fields.iter().zip(0..).max().unwrap_or((&(0, 0), 0));
    form.csv = (2..15).contains(&fields)
        && most * 4 >= lines * 3
        && (quoted > 0 || before_more * 4 >= lines * 3);
    form.numbered = numbered(head);
    form
}

/// Lines `numbered` looks at.
const NUMBERED_LINES: usize = 256;

/// Whether the lines of `head` carry their line numbers: most start with a number
/// (`line_number`), each larger than the one before, mostly by one.
fn numbered(head: &[u8]) -> bool {
    let (mut lines, mut numbered, mut by_one) = (0, 0, 0);
    let (mut first, mut last) = (None, None);
    for line in head.split(|&b| b == b'\n').take(NUMBERED_LINES) {
        if line.is_empty() {
            continue;
        }
        lines += 1;
        let Some((number, _)) = line_number(line) else {
            continue;
        };
        if last.is_some_and(|last| number <= last) {
            return false;
        }
        by_one += usize::from(last.map(|last| last + 1) == Some(number));
        numbered += 1;
        first.get_or_insert(number);
        last = Some(number);
    }
    // A short excerpt: every line, numbered from 1 on (a launcher counts its ranks from 0).
    let excerpt = numbered >= 3 && numbered == lines && first == Some(1) && by_one + 1 == numbered;
    excerpt || (numbered >= 8 && numbered * 4 >= lines * 3 && by_one * 4 >= (numbered - 1) * 3)
}

/// The number a line starts with and where its text starts: blanks, up to nine digits, then
/// blanks, or one `:` or `|` between blanks (`     12\t`, `12:`, `12 | `, `12  `).
fn line_number(line: &[u8]) -> Option<(u64, usize)> {
    let blank = |b: &u8| matches!(b, b' ' | b'\t');
    let start = line.iter().take_while(|b| blank(b)).count();
    let digits = line[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if !(1..=9).contains(&digits) {
        return None;
    }
    let mut at = start + digits;
    let before = line[at..].iter().take_while(|b| blank(b)).count();
    at += before;
    let mark = matches!(line.get(at), Some(b':' | b'|'));
    if !mark && before == 0 {
        return None;
    }
    at += usize::from(mark);
    at += line[at..].iter().take_while(|b| blank(b)).count();
    let number = super::prefix::parse_u32(&line[start..start + digits])?;
    Some((u64::from(number), at))
}

/// Each line of `bytes` (whole lines) without the line number it starts with, in place.
/// Returns the new length.
fn without_line_numbers(bytes: &mut [u8]) -> usize {
    let mut read = 0;
    let mut write = 0;
    while read < bytes.len() {
        let next = memchr::memchr(b'\n', &bytes[read..]).map_or(bytes.len(), |i| read + i + 1);
        let from = read + line_number(&bytes[read..next]).map_or(0, |(_, at)| at);
        bytes.copy_within(from..next, write);
        write += next - from;
        read = next;
    }
    write
}

/// Turns `bytes` (whole lines) back into what NCCL printed, in place, as `form` says: each
/// CSV record into its longest field, entities into their characters, no-break spaces into
/// blanks. Returns the new length (the text only shrinks).
pub fn undo(bytes: &mut [u8], form: Form) -> usize {
    let len = match form.numbered {
        true => without_line_numbers(bytes),
        false => bytes.len(),
    };
    let len = match form.csv {
        true => csv_messages(&mut bytes[..len]),
        false => len,
    };
    unescape(&mut bytes[..len], form)
}

/// One field of a CSV record: its text is `line[start..end]`, with `""` for each `"` when
/// quoted.
struct Field {
    start: usize,
    end: usize,
    quoted: bool,
}

/// The fields of a CSV record (RFC 4180, one line).
fn csv_fields(line: &[u8]) -> impl Iterator<Item = Field> + '_ {
    let mut pos = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let field = if line.get(pos) == Some(&b'"') {
            // Up to the quote that is not doubled.
            let start = pos + 1;
            let mut end = start;
            loop {
                match memchr::memchr(b'"', &line[end..]) {
                    Some(i) if line.get(end + i + 1) == Some(&b'"') => end += i + 2,
                    Some(i) => break end += i,
                    None => break end = line.len(),
                }
            }
            pos = end + 1;
            Field {
                start,
                end,
                quoted: true,
            }
        } else {
            let end =
                memchr::memchr(b',', &line[pos.min(line.len())..]).map_or(line.len(), |i| pos + i);
            let field = Field {
                start: pos.min(line.len()),
                end,
                quoted: false,
            };
            pos = end;
            field
        };
        // On to the next comma (text after a closing quote is not CSV: skipped).
        match memchr::memchr(b',', &line[pos.min(line.len())..]) {
            Some(i) => pos += i + 1,
            None => done = true,
        }
        Some(field)
    })
}

/// Each line of `bytes` (whole lines) replaced, in place, by its longest CSV field, quotes
/// undone; its line end kept. Returns the new length.
fn csv_messages(bytes: &mut [u8]) -> usize {
    let mut read = 0;
    let mut write = 0;
    while read < bytes.len() {
        let next = memchr::memchr(b'\n', &bytes[read..]).map_or(bytes.len(), |i| read + i);
        let text_end = match bytes[read..next].last() {
            Some(b'\r') => next - 1,
            _ => next,
        };
        let line = &bytes[read..text_end];
        let none = Field {
            start: 0,
            end: 0,
            quoted: false,
        };
        let field = csv_fields(line)
            .max_by_key(|f| f.end - f.start)
            .unwrap_or(none);
        let (start, end) = (read + field.start, read + field.end);
        let mut at = start;
        while at < end {
            bytes[write] = bytes[at];
            write += 1;
            at += if field.quoted && bytes[at] == b'"' {
                2
            } else {
                1
            };
        }
        // The line end: `\r\n`, `\n`, or none at the end.
        for at in text_end..(next + 1).min(bytes.len()) {
            bytes[write] = bytes[at];
            write += 1;
        }
        read = next + 1;
    }
    write
}

/// Entities into their characters and no-break spaces into blanks, as `form` says.
fn unescape(bytes: &mut [u8], form: Form) -> usize {
    let first = match (form.entities, form.nbsp) {
        (true, true) => memchr::memchr2(b'&', NBSP[0], bytes),
        (true, false) => memchr::memchr(b'&', bytes),
        (false, true) => memchr::memchr(NBSP[0], bytes),
        (false, false) => None,
    };
    let Some(first) = first else {
        return bytes.len();
    };
    let mut read = first;
    let mut write = first;
    while read < bytes.len() {
        let rest = &bytes[read..];
        let found = match rest[0] {
            b'&' if form.entities => ENTITIES
                .iter()
                .find(|(e, _)| rest.starts_with(e))
                .map(|&(e, char)| (e.len(), char)),
            0xc2 if form.nbsp && rest.starts_with(NBSP) => Some((NBSP.len(), b' ')),
            _ => None,
        };
        let (taken, char) = found.unwrap_or((1, rest[0]));
        bytes[write] = char;
        write += 1;
        read += taken;
    }
    write
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unescaped(text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        let all = Form {
            entities: true,
            nbsp: true,
            ..Form::default()
        };
        let len = unescape(&mut bytes, all);
        String::from_utf8(bytes[..len].to_vec()).unwrap()
    }

    fn escaped(text: &[u8]) -> bool {
        form(text).entities
    }

    #[test]
    fn entities_turn_back_into_characters() {
        assert_eq!(
            unescaped("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -&gt; 8[0] [send] via NET/IB/0"),
            "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0"
        );
        assert_eq!(
            unescaped("NET/Socket : Using [0]eth0:10.0.0.1&lt;0&gt; &amp;&quot;&#39;&#x27;&nbsp;"),
            "NET/Socket : Using [0]eth0:10.0.0.1<0> &\"'' "
        );
        // Not an entity: as it stands.
        assert_eq!(unescaped("a & b &g; &"), "a & b &g; &");
        assert_eq!(unescaped(""), "");
        assert_eq!(
            unescaped("h:1:1\u{a0}[0]\u{a0}NCCL\u{a0}INFO Ring 00 :\u{a0}\u{a0} 0 é"),
            "h:1:1 [0] NCCL INFO Ring 00 :   0 é"
        );
        // One form undone, the other left.
        let mut text = b"&gt;\xc2\xa0".to_vec();
        let only_nbsp = Form {
            nbsp: true,
            ..Form::default()
        };
        let len = unescape(&mut text, only_nbsp);
        assert_eq!(&text[..len], b"&gt; ");
    }

    #[test]
    fn a_csv_export_is_told_from_launcher_tags_and_messages_with_commas() {
        let csv = |text: &str| form(text.as_bytes()).csv;
        let line = "h:1:2 [0] NCCL INFO Using network IB";
        let comma = "h:1:2 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1";
        // Every field quoted; quoted where needed with a column after; the message last.
        assert!(csv(&format!(
            "time,message\n\"t1\",\"{line}\"\n\"t2\",\"{comma}\"\n"
        )));
        assert!(csv(&format!("t1,{line},stdout\nt2,\"{comma}\",stdout\n")));
        assert!(csv(&format!("t1,{line},stdout\nt2,{line},stdout\n")));
        assert!(csv(&format!("t1,\"{comma}\"\nt2,{line}\n")));
        // Not exports: launcher tags with a comma, a run of one message with commas, a
        // plain log, a message with a comma but no column after it.
        assert!(!csv(&format!(
            "[1,0]<stdout>:{line}\n[1,1]<stdout>:{comma}\n"
        )));
        assert!(!csv(&format!(
            "(Worker pid=1, ip=10.0.0.1) {line}\n(Worker pid=2, ip=10.0.0.2) {line}\n"
        )));
        let timings =
            "h:1:2 [0] NCCL INFO Bootstrap timings total 0.8 (create 0.1, send 0.2, recv 0.3)";
        assert!(!csv(&format!("{timings}\n{timings}\n{timings}\n")));
        assert!(!csv(&format!("{line}\n{comma}\n{line}\n")));
        assert!(!csv(&format!("t1,{line}\nt2,{line}\n")));
        // JSON lines, as serde_json and Docker write them (no blank after a comma).
        let json = format!("{{\"log\":\"{line}\\n\",\"stream\":\"stderr\",\"time\":\"t\"}}\n");
        assert!(!csv(&json.repeat(3)));
        // A pretty-printed export's lines (`aws logs filter-log-events`, `gcloud logging
        // read --format=json`): a key, then the text, then a comma; a launcher tag's comma
        // inside.
        let member = format!("        \"message\": \"[1,3]<stdout>:{line}\\n\",\n");
        assert!(!csv(&member.repeat(3)));
    }

    #[test]
    fn each_csv_record_becomes_its_message() {
        let undone = |text: &str| {
            let mut bytes = text.as_bytes().to_vec();
            let csv = Form {
                csv: true,
                ..Form::default()
            };
            let len = undo(&mut bytes, csv);
            String::from_utf8(bytes[..len].to_vec()).unwrap()
        };
        assert_eq!(
            undone(
                "timestamp,message\r\n\"2026-12-06T05:00:00Z\",\"h:1:2 [0] NCCL INFO Setting NCCL_PROTO to \"\"simple\"\"\",\"stdout\"\r\nt,h:1:2 [0] NCCL INFO Using network IB,stdout\n\nlast,\"a, b\""
            ),
            "timestamp\r\nh:1:2 [0] NCCL INFO Setting NCCL_PROTO to \"simple\"\r\nh:1:2 [0] NCCL INFO Using network IB\n\na, b"
        );
        // A quote never closed: the rest of the line.
        assert_eq!(
            undone("t,\"h:1:2 [0] NCCL INFO x, y\n"),
            "h:1:2 [0] NCCL INFO x, y\n"
        );
    }

    #[test]
    fn a_source_with_its_line_numbers_is_told_and_read_without_them() {
        let record = |n: usize| format!("[{}] NCCL INFO Channel {n:02}/0 : 0[0] -> 1[1]", n % 8);
        let told = |number: &dyn Fn(usize) -> String, step: usize| {
            (1..40)
                .map(|n| format!("{}{}\n", number(n * step), record(n)))
                .collect::<String>()
        };
        // `cat -n`, `nl`, `grep -n`, a paste site's, a viewer's column.
        for (number, numbered) in [
            (&(|n| format!("{n:6}\t")) as &dyn Fn(usize) -> String, true),
            (&|n| format!("{n}:"), true),
            (&|n| format!("{n}  "), true),
            (&|n| format!("{n:>4} | "), true),
            // A launcher's rank repeats; a bare number glued to the text is no column.
            (&|n| format!("{}: ", n % 4), false),
            (&|n| format!("{n}"), false),
        ] {
            let text = told(number, 1);
            let form = form(text.as_bytes());
            assert_eq!(form.numbered, numbered, "{text}");
            if numbered {
                let mut bytes = text.clone().into_bytes();
                let len = undo(&mut bytes, form);
                let want: String = (1..40).map(|n| record(n) + "\n").collect();
                assert_eq!(String::from_utf8_lossy(&bytes[..len]), want);
            }
        }
        // Numbers that grow by more than one mostly: nccl-tests' sizes, `grep -n` of a few
        // scattered lines.
        assert!(!form(told(&|n| format!("{}  ", 8usize << n), 1).as_bytes()).numbered);
        assert!(!form(told(&|n| format!("{n}:"), 7).as_bytes()).numbered);
        // A short excerpt: every line, from 1 on; else too few lines to tell (a launcher's
        // ranks count from 0). Numbered from 0 when long enough.
        assert!(form(b"1  a\n2  b\n3  c\n").numbered);
        assert!(!form(b"0: a\n1: b\n2: c\n").numbered);
        assert!(!form(b"1  a\n2  b\nc\n").numbered);
        assert!(!form(b"1  a\n2  b\n").numbered);
        assert!(form(told(&|n| format!("{}  ", n - 1), 1).as_bytes()).numbered);
        // A line without a number stays as it is.
        let mut bytes = b"1\tx\n\n  y\n2: z".to_vec();
        let len = without_line_numbers(&mut bytes);
        assert_eq!(&bytes[..len], b"x\n\n  y\nz");
    }

    #[test]
    fn a_source_has_no_break_spaces_when_its_nccl_lines_hold_one() {
        let nbsp = |text: &str| form(text.as_bytes()).nbsp;
        assert!(nbsp("x\nh:1:1 [0] NCCL\u{a0}INFO Using network IB\n"));
        assert!(!nbsp(
            "caf\u{e9}\u{a0}ok\nh:1:1 [0] NCCL INFO Using network IB\n"
        ));
        assert!(form(b"h:1:1 [0] NCCL INFO Using network IB\n").plain());
    }

    #[test]
    fn a_source_is_escaped_when_its_nccl_lines_hold_entities() {
        assert!(escaped(
            b"step 1\nh:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -&gt; 8[0] via NET/IB/0\n"
        ));
        assert!(escaped(
            b"h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1&lt;0&gt;"
        ));
        // Entities elsewhere (a page's own text) or none: not escaped.
        assert!(!escaped(
            b"Tom &amp; Jerry\nh:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0]\n"
        ));
        assert!(!escaped(b"h:1:1 [0] NCCL INFO a & b\n"));
        assert!(!escaped(b""));
    }
}
