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
//!
//! NCCL prints neither an entity nor a no-break space, so a source whose NCCL lines hold
//! `&gt;`, `&lt;`, `&amp;` or `&quot;`, or a no-break space, has that form; one whose NCCL
//! lines have the same number of CSV fields (two or more, three lines in four at least)
//! and stand inside a quoted field at least once, or before another field, is such an
//! export. Its text is turned
//! back into what NCCL printed: for an export, each line's longest field (the message; a
//! time stamp or a stream name is shorter than any NCCL line).

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
        // A JSON object's commas and quotes are no CSV (`{"log":"…","stream":"stderr"}`:
        // `input::json_log_text` reads it).
        let json = line.trim_ascii_start().starts_with(b"{");
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
    form
}

/// Turns `bytes` (whole lines) back into what NCCL printed, in place, as `form` says: each
/// CSV record into its longest field, entities into their characters, no-break spaces into
/// blanks. Returns the new length (the text only shrinks).
pub fn undo(bytes: &mut [u8], form: Form) -> usize {
    let len = match form.csv {
        true => csv_messages(bytes),
        false => bytes.len(),
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
            csv: false,
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
