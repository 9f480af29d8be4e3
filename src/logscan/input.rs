//! Opening log sources (files, `.gz` files, stdin) and reading them line by line with bounded
//! memory: a line longer than `MAX_LINE` is cut and the rest skipped, so a multi-gigabyte file
//! without newlines costs no more memory than a normal one.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::hard_wrap::{self, Decision};
use super::text_form;
use crate::error::{Error, Result};

/// Longest line kept; NCCL lines are a few hundred bytes.
pub const MAX_LINE: usize = 64 * 1024;
const BUFFER: usize = 256 * 1024;

/// Bytes read at a time. Lines are found inside a chunk, so a chunk holds whole lines.
pub const CHUNK: usize = 1024 * 1024;

/// The log text of a JSON-lines record, for logs kept as one JSON object per line: Docker's
/// json-file driver (`{"log":"...\\n","stream":"stderr","time":...}`), fluent-bit and
/// CloudWatch exports (`log`, `message`), journald's `-o json` (`MESSAGE`), Loki (`line`),
/// Cloud Logging (`textPayload`), OpenTelemetry (`body`). Where the text is not at the top,
/// it is looked for under the keys that shippers nest a record in (`json_record`:
/// Elasticsearch's `_source`, Cloud Logging's `jsonPayload`, Datadog's `content`). An object
/// may stand inside a JSON array, one per line (`  {...},`). A line of a pretty-printed
/// export (`gcloud logging read --format=json`, `aws logs filter-log-events`) that is one
/// such key and its text (`    "message": "...\\n",`) gives that text. `None` for a line
/// that is neither: it is read as it stands.
pub fn json_log_text(line: &[u8]) -> Option<String> {
    let line = line.trim_ascii_start();
    let text = match line.first() {
        Some(b'{') => {
            let record = line.strip_suffix(b",").unwrap_or(line);
            let record: json_record::TextFields = serde_json::from_slice(record).ok()?;
            record.text()?
        }
        Some(b'"') => json_record::member_text(line)?,
        _ => return None,
    };
    let end = text.trim_end_matches(['\n', '\r']).len();
    let mut text = text.into_owned();
    text.truncate(end);
    Some(text)
}

/// Whether `line` is a JSON object or a line of a pretty-printed one (`"key": ...`), which a
/// CSV export's quoted first field (`"2026-..","h:1:1 [0] NCCL INFO .."`) is not.
pub fn is_json_line(line: &[u8]) -> bool {
    let line = line.trim_ascii_start();
    match line.first() {
        Some(b'{') => true,
        Some(b'"') => after_key(line).is_some(),
        _ => false,
    }
}

/// Whether `line` is a whole JSON value or a whole member of a pretty-printed object
/// (`"key": value`, maybe with a comma after): such a line was not cut at a terminal's width,
/// however long (`hard_wrap`).
pub fn is_whole_json_line(line: &[u8]) -> bool {
    let line = line.trim_ascii();
    let line = line.strip_suffix(b",").unwrap_or(line);
    let value = match line.first() {
        Some(b'"') => after_key(line).unwrap_or(line),
        Some(b'{' | b'[') => line,
        _ => return false,
    };
    serde_json::from_slice::<serde::de::IgnoredAny>(value).is_ok()
}

/// What follows the key of a pretty-printed object's line (`"key": value` → `value`), if
/// `line` starts with a JSON string and a `:`.
fn after_key(line: &[u8]) -> Option<&[u8]> {
    let mut key = serde_json::Deserializer::from_slice(line).into_iter::<serde::de::IgnoredAny>();
    key.next()?.ok()?;
    line[key.byte_offset()..]
        .trim_ascii_start()
        .strip_prefix(b":")
}

/// Whether `line` may be a JSON record or a line of a pretty-printed one (`json_log_text`):
/// its first byte other than a blank is `{` or `"`.
pub fn may_be_json(line: &[u8]) -> bool {
    match line.first() {
        Some(b'{' | b'"') => true,
        Some(b' ' | b'\t') => matches!(line.trim_ascii_start().first(), Some(b'{' | b'"')),
        _ => false,
    }
}

/// A JSON record read for its log text alone: the string values under `TEXT_KEYS`, every
/// other value checked as strictly as a `serde_json::Value` of the whole record would be
/// (escapes included) but not built: that cost an allocation per key and value.
mod json_record {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{
        self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor,
    };

    /// The keys that hold a record's log text, in the order they are taken: then
    /// OpenTelemetry's string value (`"body": {"stringValue": "..."}`), Splunk's raw event
    /// (`_raw`), Azure Monitor's container logs (`LogEntry`, `LogMessage` in ContainerLogV2).
    pub const TEXT_KEYS: [&str; 11] = [
        "log",
        "message",
        "msg",
        "MESSAGE",
        "line",
        "textPayload",
        "body",
        "stringValue",
        "_raw",
        "LogEntry",
        "LogMessage",
    ];

    /// The keys whose object holds the record when its text is not at the top, in the order
    /// they are taken: Elasticsearch's and OpenSearch's hits (`_source`), Cloud Logging's
    /// structured entries (`jsonPayload`), Datadog's export (`content`, `attributes`),
    /// OpenTelemetry's log records (`body`), Splunk's search export (`result`).
    pub const NEST_KEYS: [&str; 6] = [
        "_source",
        "jsonPayload",
        "content",
        "attributes",
        "body",
        "result",
    ];

    /// The value under each of `TEXT_KEYS`, if it is a string, and the text found in the
    /// object under each of `NEST_KEYS`, if it is one that holds a text (for a repeated key,
    /// its last value, as a `serde_json::Value` keeps it).
    pub struct TextFields<'a> {
        texts: [Option<Cow<'a, str>>; TEXT_KEYS.len()],
        nested: [Option<Cow<'a, str>>; NEST_KEYS.len()],
    }

    impl<'a> TextFields<'a> {
        /// The first text at the top, else the first found in a nested object.
        pub fn text(self) -> Option<Cow<'a, str>> {
            let mut all = self.texts.into_iter().chain(self.nested);
            all.find_map(|text| text)
        }
    }

    impl<'de> Deserialize<'de> for TextFields<'de> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_map(FieldsVisitor)
        }
    }

    struct FieldsVisitor;

    impl<'de> Visitor<'de> for FieldsVisitor {
        type Value = TextFields<'de>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut fields = TextFields {
                texts: Default::default(),
                nested: Default::default(),
            };
            while let Some(Key { text, nest }) = map.next_key()? {
                let Text {
                    text: value,
                    nested,
                } = map.next_value_seed(Wanted(nest.is_some()))?;
                if let Some(i) = text {
                    fields.texts[i] = value;
                }
                if let Some(i) = nest {
                    fields.nested[i] = nested;
                }
            }
            Ok(fields)
        }
    }

    /// The text of a pretty-printed record's line that is one of `TEXT_KEYS` and its string,
    /// maybe followed by a comma: `    "message": "h:1:1 [0] NCCL INFO ...\\n",`.
    pub fn member_text(line: &[u8]) -> Option<Cow<'_, str>> {
        let mut key = serde_json::Deserializer::from_slice(line).into_iter::<Cow<str>>();
        let name = key.next()?.ok()?;
        if !TEXT_KEYS.contains(&&*name) {
            return None;
        }
        let rest = line[key.byte_offset()..].trim_ascii_start();
        let rest = rest.strip_prefix(b":")?.trim_ascii_start();
        let mut value = serde_json::Deserializer::from_slice(rest).into_iter::<Cow<str>>();
        let text = value.next()?.ok()?;
        let tail = rest[value.byte_offset()..].trim_ascii();
        matches!(tail, b"" | b",").then_some(text)
    }

    /// A key: its place in `TEXT_KEYS` and in `NEST_KEYS`, if it is one.
    struct Key {
        text: Option<usize>,
        nest: Option<usize>,
    }

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct KeyVisitor;
            impl Visitor<'_> for KeyVisitor {
                type Value = Key;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a key")
                }
                fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                    Ok(Key {
                        text: TEXT_KEYS.iter().position(|k| *k == key),
                        nest: NEST_KEYS.iter().position(|k| *k == key),
                    })
                }
            }
            deserializer.deserialize_str(KeyVisitor)
        }
    }

    /// A value: the text, if it is a string (borrowed from the line unless it has escapes),
    /// and, for an object under one of `NEST_KEYS`, the text it holds; any other value is
    /// checked and skipped, its keys and strings decoded in serde_json's buffer.
    #[derive(Default)]
    struct Text<'a> {
        text: Option<Cow<'a, str>>,
        nested: Option<Cow<'a, str>>,
    }

    impl<'de> Deserialize<'de> for Text<'de> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(TextVisitor { nest: false })
        }
    }

    /// Reads a value, looking inside it for a text if it is an object under a key of
    /// `NEST_KEYS` (`true`).
    struct Wanted(bool);

    impl<'de> DeserializeSeed<'de> for Wanted {
        type Value = Text<'de>;

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Text<'de>, D::Error> {
            deserializer.deserialize_any(TextVisitor { nest: self.0 })
        }
    }

    struct TextVisitor {
        nest: bool,
    }

    impl<'de> Visitor<'de> for TextVisitor {
        type Value = Text<'de>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
            Ok(Text {
                text: Some(Cow::Borrowed(text)),
                nested: None,
            })
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
            self.visit_string(text.to_string())
        }
        fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
            Ok(Text {
                text: Some(Cow::Owned(text)),
                nested: None,
            })
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Text::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Text::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Text::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Text::default())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Text::default())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<Text>()?.is_some() {}
            Ok(Text::default())
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            if self.nest {
                let fields = FieldsVisitor.visit_map(map)?;
                return Ok(Text {
                    text: None,
                    nested: fields.text(),
                });
            }
            let mut map = map;
            while map.next_entry::<Key, Text>()?.is_some() {}
            Ok(Text::default())
        }
    }
}

/// Reads `reader` in chunks of whole lines and calls `f` with each: every line in a chunk
/// ends with `\n` except, possibly, the last line of the input. A line longer than the
/// buffer is cut at `MAX_LINE` bytes (passed as a chunk of its own) and the rest skipped, so
/// memory stays at one buffer whatever the input.
pub fn for_each_chunk(
    reader: &mut impl Read,
    buf: &mut Vec<u8>,
    mut f: impl FnMut(&[u8]),
) -> io::Result<()> {
    let mut chunks = Chunks::new(reader);
    while let Some(len) = chunks.next_into(buf)? {
        f(&buf[..len]);
    }
    Ok(())
}

/// The chunks of `for_each_chunk`, each read into a buffer the caller owns, so a chunk can
/// be handed to another thread while the next one is read. The start of a line that crosses
/// the end of a chunk is kept here and put first into the next buffer.
pub struct Chunks<R> {
    reader: R,
    /// The start of a line that did not fit into the last chunk.
    carry: Vec<u8>,
    /// Inside an over-long line whose head was already passed on.
    skipping: bool,
    done: bool,
    /// Whether the source is hard-wrapped at a terminal's width (`hard_wrap`); decided on
    /// the first lines, as is `form`.
    wrap: Decision,
    /// What a web page or a log viewer did to the source's text (`text_form`).
    form: text_form::Form,
    /// Bytes at the start of `carry` that `next_into` gave out already (and `unread` gave
    /// back), so their entities are not turned back twice.
    held: usize,
}

impl<R: Read> Chunks<R> {
    pub fn new(reader: R) -> Self {
        Chunks {
            reader,
            carry: Vec::new(),
            skipping: false,
            done: false,
            wrap: Decision::Undecided,
            form: text_form::Form::default(),
            held: 0,
        }
    }

    /// Reads the next chunk into `buf[..len]` and returns `len`; `None` at the end. A source
    /// hard-wrapped at a terminal's width has its lines joined again (`hard_wrap`), each
    /// chunk's last line held back while the next chunk may continue it.
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
        loop {
            let Some(len) = self.next_lines_into(buf)? else {
                return Ok(None);
            };
            // The cut head of an over-long line is no wrapped line.
            if self.skipping {
                return Ok(Some(len));
            }
            let at_end = self.done && self.carry.is_empty();
            let held = std::mem::take(&mut self.held).min(len);
            if self.wrap == Decision::Undecided {
                self.form = text_form::form(&buf[..len]);
                let sample = match self.form.plain() {
                    true => Cow::Borrowed(&buf[..len]),
                    false => {
                        let mut text = buf[..len].to_vec();
                        let len = text_form::undo(&mut text, self.form);
                        Cow::Owned(text[..len].to_vec())
                    }
                };
                self.wrap = hard_wrap::decide(&sample, at_end || len >= CHUNK / 2);
                if self.wrap == Decision::Undecided {
                    // Too few lines to tell yet (a pipe gives what it has): read on.
                    self.carry.splice(0..0, buf[..len].iter().copied());
                    continue;
                }
            }
            let len = match self.form.plain() {
                true => len,
                false => held + text_form::undo(&mut buf[held..len], self.form),
            };
            if let Decision::Wrapped(wrap) = &self.wrap {
                let mut done = wrap.join(&mut buf[..len], at_end);
                if done == 0 && len < CHUNK / 2 {
                    // One record's pieces so far: read on for the rest.
                    let head = buf[..len].to_vec();
                    self.unread(&head);
                    continue;
                }
                if done == 0 {
                    // Half a chunk of one record's pieces: joined as far as they go.
                    done = wrap.join(&mut buf[..len], true);
                }
                if done < len {
                    let rest = buf[done..len].to_vec();
                    self.unread(&rest);
                    return Ok(Some(done));
                }
            }
            return Ok(Some(len));
        }
    }

    /// Reads the next chunk of whole lines as they stand into `buf[..len]` and returns `len`;
    /// `None` at the end. `buf` is sized to `CHUNK` once and keeps that size.
    fn next_lines_into(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
        buf.resize(CHUNK, 0);
        let mut filled = self.carry.len();
        buf[..filled].copy_from_slice(&self.carry);
        self.carry.clear();
        if self.done {
            // Only what `unread` gave back is left.
            return Ok((filled > 0).then_some(filled));
        }
        loop {
            let n = match self.reader.read(&mut buf[filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.done = true;
                return Ok((filled > 0 && !self.skipping).then_some(filled));
            }
            filled += n;
            let mut start = 0;
            if self.skipping {
                match memchr::memchr(b'\n', &buf[..filled]) {
                    Some(at) => {
                        start = at + 1;
                        self.skipping = false;
                    }
                    None => {
                        filled = 0;
                        continue;
                    }
                }
            }
            match memchr::memrchr(b'\n', &buf[start..filled]) {
                Some(at) => {
                    let end = start + at + 1;
                    self.carry.extend_from_slice(&buf[end..filled]);
                    if start > 0 {
                        buf.copy_within(start..end, 0);
                    }
                    return Ok(Some(end - start));
                }
                None if filled - start == buf.len() => {
                    // One line fills the whole buffer: keep its head, drop the rest.
                    self.skipping = true;
                    return Ok(Some(MAX_LINE));
                }
                None => {
                    buf.copy_within(start..filled, 0);
                    filled -= start;
                }
            }
        }
    }

    /// Puts the end of the last chunk back (whole lines it did not use): the next chunk
    /// starts with it.
    pub fn unread(&mut self, rest: &[u8]) {
        self.carry.splice(0..0, rest.iter().copied());
        self.held += rest.len();
    }
}

/// Wraps a reader, decompressing it when it starts with the gzip magic bytes (whatever the
/// file is called).
pub fn maybe_gzip<'a, R: BufRead + 'a>(mut reader: R) -> io::Result<Box<dyn BufRead + 'a>> {
    Ok(match sniff(&mut reader)? {
        Start::Gzip => Box::new(BufReader::with_capacity(BUFFER, Gunzip::new(reader))),
        Start::Plain => Box::new(reader),
        Start::Bom => Box::new(BufReader::with_capacity(BUFFER, decode_bom(reader))),
        Start::Empty => Box::new(io::empty()),
        // Inside an archive or a stream: not unpacked again.
        Start::Zip => Box::new(reader),
        Start::Packed(tool) => return Err(packed(tool)),
    })
}

/// Compressions netcheck does not unpack, by their magic bytes, each named as the tool that
/// unpacks it.
const PACKED: [(&[u8], &str); 4] = [
    (b"\xfd7zXZ\0", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"BZh", "bzip2"),
];

/// A gzip stream unpacked, its errors saying that it is gzip that broke: flate2's own
/// ("unexpected end of file", "incomplete deflate stream") do not, and a log cut short while
/// it was copied or still being written is common.
struct Gunzip<R: BufRead>(MultiGzDecoder<R>);

impl<R: BufRead> Gunzip<R> {
    fn new(reader: R) -> Self {
        Gunzip(MultiGzDecoder::new(reader))
    }
}

impl<R: BufRead> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(gzip_error)
    }
}

/// `e` from the gzip decoder, said as what happened to the gzip stream and what to do; an
/// error of the reader below (a disk's) stays as it is.
fn gzip_error(e: io::Error) -> io::Error {
    let what = match e.kind() {
        io::ErrorKind::UnexpectedEof => "ends early: the file was cut short",
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => "is damaged",
        _ => return e,
    };
    io::Error::new(
        e.kind(),
        format!(
            "the gzip stream {what} ({e}); `zcat FILE | netcheck analyze -` reads the lines \
             before the break"
        ),
    )
}

/// The error for a stream in a compression that is not unpacked here: what it is and how to
/// read it anyway.
fn packed(tool: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{tool}-compressed: analyze reads plain text, gzip, zip and tar; unpack it first \
             (`{tool} -dc FILE | netcheck analyze -`)"
        ),
    )
}

/// Transcodes a stream that starts with a byte-order mark (UTF-16 LE/BE, e.g. PowerShell's
/// `kubectl logs > x.log`, or UTF-8 with a BOM) to UTF-8 without the mark.
fn decode_bom<R: Read>(reader: R) -> impl Read {
    encoding_rs_io::DecodeReaderBytesBuilder::new()
        .bom_sniffing(true)
        .strip_bom(true)
        .utf8_passthru(true)
        .build(reader)
}

/// How a stream starts.
enum Start {
    Gzip,
    Plain,
    /// A byte-order mark: UTF-16 (LE or BE) or UTF-8 with a BOM; transcoded to UTF-8.
    Bom,
    /// It ended before its first byte. Not read again: on a terminal the Ctrl-D that ended
    /// it is used up, and another read would wait for a second one.
    Empty,
    /// A zip archive (`PK\x03\x04`): its entries are read one by one from a file
    /// (`zip_archive`); a stream cannot be.
    Zip,
    /// Another compression (`PACKED`): an error that says how to unpack it, not binary
    /// noise read as a log without NCCL lines.
    Packed(&'static str),
}

/// Looks at the first bytes for a compression's or an archive's magic (nothing is consumed).
fn sniff(reader: &mut impl BufRead) -> io::Result<Start> {
    loop {
        match reader.fill_buf() {
            Ok([]) => return Ok(Start::Empty),
            Ok([0x1f, 0x8b, ..]) => return Ok(Start::Gzip),
            Ok([0xff, 0xfe, ..] | [0xfe, 0xff, ..] | [0xef, 0xbb, 0xbf, ..]) => {
                return Ok(Start::Bom);
            }
            Ok([b'P', b'K', 3, 4, ..] | [b'P', b'K', 5, 6, ..]) => return Ok(Start::Zip),
            Ok(start) => {
                // bzip2's `BZh` is followed by the block size, 1-9, and a block's magic.
                let packed = PACKED.iter().find(|(magic, tool)| {
                    start.starts_with(magic)
                        && (*tool != "bzip2"
                            || start.get(3..10).is_some_and(|rest| {
                                rest[0].is_ascii_digit() && &rest[1..] == b"1AY&SY"
                            }))
                });
                return Ok(packed.map_or(Start::Plain, |&(_, tool)| Start::Packed(tool)));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// How a source is named in evidence: the path as given, `<stdin>` for `-`.
pub fn source_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// Opens a path (`-` is stdin) for reading, decompressing gzip. Errors name the file. The
/// reader can move to another thread (see `Analyzer::feed_path`).
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if path == Path::new("-") {
        Box::new(io::stdin())
    } else {
        let file = File::open(path).map_err(|e| Error::read(path, e))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            let e = io::Error::other("is a directory");
            return Err(Error::read(path, e));
        }
        Box::new(file)
    };
    let mut reader = BufReader::with_capacity(BUFFER, raw);
    Ok(
        match sniff(&mut reader).map_err(|e| Error::read(path, e))? {
            Start::Gzip => Box::new(BufReader::with_capacity(BUFFER, Gunzip::new(reader))),
            Start::Plain => Box::new(reader),
            Start::Bom => Box::new(BufReader::with_capacity(BUFFER, decode_bom(reader))),
            Start::Empty => Box::new(io::empty()),
            Start::Packed(tool) => return Err(Error::read(path, packed(tool))),
            Start::Zip => {
                let e = io::Error::other(
                    "a zip archive can be read from a file, not from a stream: pass its path, \
                     or unzip it and pass the logs",
                );
                return Err(Error::read(path, e));
            }
        },
    )
}

/// The archive at `path` when it is a zip file (by content, whatever it is called): each
/// entry is a log of its own (GitHub issues take attachments as `.zip`). `None` for any
/// other file and for stdin; a damaged archive is an error naming it.
pub fn zip_archive(path: &Path) -> Result<Option<zip::ZipArchive<File>>> {
    if path == Path::new("-") {
        return Ok(None);
    }
    let mut magic = [0; 4];
    let Ok(mut file) = File::open(path) else {
        // `open` says why.
        return Ok(None);
    };
    if file.read_exact(&mut magic).is_err() || !matches!(magic, [b'P', b'K', 3 | 5, 4 | 6]) {
        return Ok(None);
    }
    let archive = zip::ZipArchive::new(file).map_err(|e| Error::read(path, io::Error::other(e)))?;
    Ok(Some(archive))
}

/// A stream that turned out to be a tar archive (`.tar`, or `.tar.gz` / `.tgz` once
/// `open` has unpacked the gzip), or a log.
pub enum Unpacked<R: Read> {
    Log(R),
    Tar(tar::Archive<R>),
}

/// Where the magic of a tar header lies: `ustar` at byte 257 of the first 512-byte block
/// (POSIX and GNU tar both write it; the 1979 format without it is not recognised).
const TAR_MAGIC_AT: usize = 257;

/// Looks at the first block of `reader` for a tar header; nothing is consumed. Where the
/// reader's buffer holds less than the header's magic (a pipe), the block is read ahead and
/// put in front of the rest; a stream that ends before that is not read again (on a
/// terminal the Ctrl-D that ended it is used up).
pub fn tar_or_log<'a>(
    mut reader: Box<dyn BufRead + Send + 'a>,
) -> io::Result<Unpacked<Box<dyn BufRead + Send + 'a>>> {
    const MAGIC: std::ops::Range<usize> = TAR_MAGIC_AT..TAR_MAGIC_AT + 5;
    let buffered = loop {
        match reader.fill_buf() {
            Ok(buffered) => break buffered,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    let (reader, is_tar): (Box<dyn BufRead + Send + 'a>, bool) = if buffered.is_empty() {
        (reader, false)
    } else if buffered.len() >= MAGIC.end {
        let is_tar = &buffered[MAGIC] == b"ustar";
        (reader, is_tar)
    } else {
        let mut head = Vec::with_capacity(512);
        let ended = (&mut reader).take(512).read_to_end(&mut head)? < 512;
        let is_tar = head.get(MAGIC) == Some(b"ustar");
        match ended {
            true => (Box::new(io::Cursor::new(head)), is_tar),
            false => (Box::new(io::Cursor::new(head).chain(reader)), is_tar),
        }
    };
    Ok(match is_tar {
        true => Unpacked::Tar(tar::Archive::new(reader)),
        false => Unpacked::Log(reader),
    })
}

/// Whether an archive's entry is a log to read: not a folder, not macOS's `__MACOSX/`
/// resource forks.
pub fn is_log_entry(name: &str, is_dir: bool) -> bool {
    !is_dir
        && !name.starts_with("__MACOSX/")
        && !name.rsplit('/').next().is_some_and(|f| f.starts_with("._"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_give_their_log_text() {
        let line = "h:1:1 [0] NCCL INFO Using network IB";
        for (json, text) in [
            // Docker's json-file, with the newline it keeps.
            (
                format!(r#"{{"log":"{line}\n","stream":"stderr","time":"2026-12-06T03:33:30Z"}}"#),
                Some(line),
            ),
            // CloudWatch's export, journald's `-o json`, Loki.
            (
                format!(r#"{{"timestamp":1733456010123,"message":"{line}"}}"#),
                Some(line),
            ),
            (
                format!(r#"{{"_PID":"1","MESSAGE":"{line}","_HOSTNAME":"x"}}"#),
                Some(line),
            ),
            (format!(r#"{{"line":"{line}\r\n"}}"#), Some(line)),
            // Escapes decoded: Ray's colours survive as ESC for the caller to strip.
            (
                r#"{"log":"\u001b[36m(w pid=1)\u001b[0m h:1:1 [0] NCCL INFO x\n"}"#.to_string(),
                Some("\u{1b}[36m(w pid=1)\u{1b}[0m h:1:1 [0] NCCL INFO x"),
            ),
            // Not such a record: read as it stands.
            (line.to_string(), None),
            (r#"{"level":"info","ts":1}"#.to_string(), None),
            (r#"{"log": 12}"#.to_string(), None),
            // The first key in order that holds a string; a repeated key's last value counts.
            (
                format!(r#"{{"log":{{"a":[1,null]}},"body":"x","message":"{line}"}}"#),
                Some(line),
            ),
            (format!(r#"{{"log":"x","log":"{line}"}}"#), Some(line)),
            (
                format!(r#"{{"log":"{line}","log":false,"msg":"y"}}"#),
                Some("y"),
            ),
            // Escaped keys are their text; other values of any shape are skipped.
            (
                format!(r#"{{"t":[{{"k":1.5e3}},true],"l\u006fg":"{line}"}}"#),
                Some(line),
            ),
            (r#"{"log":"x"} trailing"#.to_string(), None),
            // Nested past serde_json's depth limit: not read, and no stack overflow.
            (format!(r#"{{"a":{}"#, "[".repeat(100_000)), None),
            (r#"{"log":"x","log"}"#.to_string(), None),
            (r#"{"log":"h:1:1 [0] NCCL INFO cut"#.to_string(), None),
            ("{'rank': 0} NCCL INFO x".to_string(), None),
            // Nested where shippers keep the record: Elasticsearch's `_source`, Cloud
            // Logging's `jsonPayload`, Datadog's `content`, OpenTelemetry's `body`; a text at
            // the top comes first.
            (
                format!(r#"{{"_index":"l","_source":{{"@timestamp":"t","message":"{line}"}}}}"#),
                Some(line),
            ),
            (
                format!(r#"{{"jsonPayload":{{"message":"{line}\n"}},"severity":"INFO"}}"#),
                Some(line),
            ),
            (
                format!(r#"{{"content":{{"attributes":{{"msg":"{line}"}}}}}}"#),
                Some(line),
            ),
            (
                format!(r#"{{"body":{{"stringValue":"{line}"}}}}"#),
                Some(line),
            ),
            // Splunk's search export, Azure Monitor's ContainerLog and ContainerLogV2.
            (
                format!(r#"{{"preview":false,"result":{{"_raw":"{line}","host":"h"}}}}"#),
                Some(line),
            ),
            (
                format!(r#"{{"LogEntry":"{line}","Computer":"n"}}"#),
                Some(line),
            ),
            (
                format!(r#"{{"LogMessage":"{line}","PodName":"p"}}"#),
                Some(line),
            ),
            (
                format!(r#"{{"_source":{{"message":"x"}},"log":"{line}"}}"#),
                Some(line),
            ),
            // Not a nesting key: not looked into.
            (format!(r#"{{"meta":{{"message":"{line}"}}}}"#), None),
            // One object of a JSON array per line.
            (format!(r#"  {{"message":"{line}"}},"#), Some(line)),
            // Lines of a pretty-printed export: a text key and its string, nothing else.
            (format!(r#"      "message": "{line}\n","#), Some(line)),
            (format!(r#""textPayload":"{line}""#), Some(line)),
            (format!(r#"  "logStreamName": "{line}","#), None),
            (format!(r#"  "message": "{line}", "x": 1"#), None),
            (r#"  "message": 12,"#.to_string(), None),
            (r#"  "message": "cut"#.to_string(), None),
        ] {
            assert_eq!(json_log_text(json.as_bytes()).as_deref(), text, "{json}");
        }
    }

    /// `json_log_text`'s rule for a record, through a whole `serde_json::Value`: the first
    /// of the text keys at the top that holds a string, else the first text found in an
    /// object under one of the nesting keys.
    fn json_log_text_by_value(line: &[u8]) -> Option<String> {
        let line = line.trim_ascii_start();
        if line.first() != Some(&b'{') {
            return None;
        }
        let line = line.strip_suffix(b",").unwrap_or(line);
        let value: serde_json::Value = serde_json::from_slice(line).ok()?;
        fn text_of(object: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
            let keys = json_record::TEXT_KEYS.iter();
            keys.filter_map(|key| object.get(*key)?.as_str())
                .next()
                .or_else(|| {
                    let mut nests = json_record::NEST_KEYS.iter();
                    nests.find_map(|key| text_of(object.get(*key)?.as_object()?))
                })
        }
        text_of(value.as_object()?).map(|text| text.trim_end_matches(['\n', '\r']).to_string())
    }

    #[test]
    fn a_record_reads_as_a_serde_json_value_would() {
        let keys = [
            r#""log""#,
            r#""message""#,
            r#""msg""#,
            r#""MESSAGE""#,
            r#""line""#,
            r#""textPayload""#,
            r#""body""#,
            r#""stream""#,
            r#""time""#,
            r#""l\u006fg""#,
            r#""Log""#,
            r#""_source""#,
            r#""jsonPayload""#,
            r#""content""#,
            r#""attributes""#,
            r#""stringValue""#,
            r#""_raw""#,
            r#""result""#,
        ];
        let values = [
            r#""h:1:1 [0] NCCL INFO Using network IB\n""#,
            r#""a\"b\\c\r\n""#,
            r#""""#,
            r#""\u001b[36m(w)\u001b[0m x""#,
            r#""\ud83d\ude00""#,
            "12",
            "-1.5e300",
            "true",
            "null",
            "[]",
            r#"[1,"x",{"log":"y"}]"#,
            r#"{"log":"inner"}"#,
            r#"{"_source":{"message":"deep"},"x":1}"#,
            r#"{"stringValue":"otel","log":7}"#,
            r#""ÿ é""#,
        ];
        // A small deterministic generator: records of 0 to 5 fields, keys repeated.
        let mut next = crate::logscan::numbers(0x2545_f491_4f6c_dd1d);
        for _ in 0..4000 {
            let fields: Vec<String> = (0..next(6))
                .map(|_| format!("{}:{}", keys[next(keys.len())], values[next(values.len())]))
                .collect();
            // Now and then one of a JSON array's lines: a blank before, a comma after.
            let record = match next(4) {
                0 => format!("  {{{}}},", fields.join(",")),
                _ => format!("{{{}}}", fields.join(",")),
            };
            let expected = json_log_text_by_value(record.as_bytes());
            assert_eq!(json_log_text(record.as_bytes()), expected, "{record}");
            // Cut anywhere, or with a byte dropped: still the same answer as the old reading.
            let at = next(record.len());
            let cut = &record.as_bytes()[..at];
            assert_eq!(
                json_log_text(cut),
                json_log_text_by_value(cut),
                "{record} cut at {at}"
            );
            let mut dropped = record.clone().into_bytes();
            dropped.remove(at);
            let answer = json_log_text_by_value(&dropped);
            assert_eq!(
                json_log_text(&dropped),
                answer,
                "{record} without byte {at}"
            );
        }
    }

    fn lines(input: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut reader = input;
        for_each_chunk(&mut reader, &mut Vec::new(), |chunk| {
            let chunk = chunk.strip_suffix(b"\n").unwrap_or(chunk);
            out.extend(chunk.split(|b| *b == b'\n').map(<[u8]>::to_vec));
        })
        .unwrap();
        out
    }

    #[test]
    fn chunks_hold_whole_lines_and_keep_a_last_line_without_newline() {
        assert_eq!(
            lines(b"a\nb\r\n\nc"),
            vec![b"a".to_vec(), b"b\r".to_vec(), vec![], b"c".to_vec()]
        );
        assert!(lines(b"").is_empty());
        // Lines that cross chunk boundaries arrive whole.
        let text: Vec<u8> = (0..200_000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let got = lines(&text);
        assert_eq!(got.len(), 200_000);
        assert_eq!(got[123_456], b"line 123456");
    }

    /// A pipe: gives at most `step` bytes a read.
    struct Trickle<'a> {
        rest: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.rest.len().min(self.step).min(buf.len());
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_tar_is_told_from_a_log_however_the_pipe_delivers_it_and_nothing_is_lost() {
        let mut tar = tar::Builder::new(Vec::new());
        let log = b"h:1:1 [0] NCCL INFO Using network Socket\n";
        let mut header = tar::Header::new_ustar();
        header.set_size(log.len() as u64);
        tar.append_data(&mut header, "rank0.log", &log[..]).unwrap();
        let tar = tar.into_inner().unwrap();
        let plain = log.repeat(40);
        // A pipe that gives `step` bytes a read, behind a buffer as `open` makes.
        fn trickle(rest: &[u8], step: usize) -> Box<dyn BufRead + Send + '_> {
            Box::new(BufReader::with_capacity(BUFFER, Trickle { rest, step }))
        }
        for step in [1, 7, 300, 512, 1 << 20] {
            let Unpacked::Tar(mut archive) = tar_or_log(trickle(&tar, step)).unwrap() else {
                panic!("a tar read {step} bytes at a time was taken for a log");
            };
            let mut entry = archive.entries().unwrap().next().unwrap().unwrap();
            let mut text = Vec::new();
            entry.read_to_end(&mut text).unwrap();
            assert_eq!(text, log);
            for bytes in [&plain[..], &plain[..100], b""] {
                let Unpacked::Log(mut reader) = tar_or_log(trickle(bytes, step)).unwrap() else {
                    panic!("a log read {step} bytes at a time was taken for a tar");
                };
                let mut text = Vec::new();
                reader.read_to_end(&mut text).unwrap();
                assert_eq!(text, bytes, "step {step}");
            }
        }
    }

    #[test]
    fn a_hard_wrapped_source_is_joined_across_chunks_and_pipe_reads() {
        // 40 000 records of 150 characters, wrapped at 100: 80 000 lines, 6 MB.
        let records: Vec<String> = (0..40_000)
            .map(|i| format!("node{}:{i}:{i} [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA {}", i % 7, "x".repeat(60)))
            .map(|r| r.chars().take(150).collect())
            .collect();
        let mut wrapped = Vec::new();
        for record in &records {
            for piece in record.as_bytes().chunks(100) {
                wrapped.extend_from_slice(piece);
                wrapped.push(b'\n');
            }
        }
        for step in [usize::MAX, 4096, 100] {
            let mut reader = Trickle {
                rest: &wrapped,
                step,
            };
            let mut got = Vec::new();
            for_each_chunk(&mut reader, &mut Vec::new(), |chunk| {
                got.extend_from_slice(chunk)
            })
            .unwrap();
            // Each record whole on the line of its first piece, an empty line after it.
            let got: Vec<&[u8]> = got.split(|b| *b == b'\n').collect();
            assert_eq!(got.len(), wrapped.split(|b| *b == b'\n').count(), "{step}");
            for (i, record) in records.iter().enumerate() {
                assert_eq!(got[2 * i], record.as_bytes(), "{step}: record {i}");
                assert!(got[2 * i + 1].is_empty());
            }
        }
    }

    #[test]
    fn an_escaped_source_is_unescaped_once_across_chunks_and_held_back_lines() {
        // A web page's text of a wrapped log: `&amp;lt;` is the page's way of showing `&lt;`,
        // which must stay `&lt;` however often a line goes back to be read again.
        let records: Vec<String> = (0..40_000)
            .map(|i| format!("node{}:{i}:{i} [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0 &lt;x&gt; {}", i % 7, "y".repeat(60)))
            .map(|r| r.chars().take(150).collect())
            .collect();
        let page = |r: &str| {
            r.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        let mut input = Vec::new();
        for record in &records {
            // Wrapped as shown (150 characters at 100), then escaped.
            let chars: Vec<char> = record.chars().collect();
            for piece in chars.chunks(100) {
                input.extend_from_slice(page(&piece.iter().collect::<String>()).as_bytes());
                input.push(b'\n');
            }
        }
        for step in [usize::MAX, 4096] {
            let mut reader = Trickle { rest: &input, step };
            let mut chunks = Chunks::new(&mut reader);
            let mut buf = Vec::new();
            let mut got = Vec::new();
            let mut turn = 0;
            while let Some(len) = chunks.next_into(&mut buf).unwrap() {
                // As a batch does: now and then the last lines go back.
                let keep = match turn % 3 {
                    0 => buf[..len / 2]
                        .iter()
                        .rposition(|&b| b == b'\n')
                        .map_or(len, |i| i + 1),
                    _ => len,
                };
                turn += 1;
                got.extend_from_slice(&buf[..keep]);
                chunks.unread(&buf[keep..len]);
            }
            let got: Vec<&[u8]> = got.split(|b| *b == b'\n').collect();
            for (i, record) in records.iter().enumerate() {
                assert_eq!(got[2 * i], record.as_bytes(), "{step}: record {i}");
            }
        }
    }

    #[test]
    fn an_archives_logs_are_its_files_but_folders_and_resource_forks() {
        assert!(is_log_entry("run/rank0.log", false));
        assert!(is_log_entry("rank0.log.gz", false));
        assert!(!is_log_entry("run/", true));
        assert!(!is_log_entry("__MACOSX/run/._rank0.log", false));
        assert!(!is_log_entry("run/._rank0.log", false));
    }

    #[test]
    fn long_lines_are_cut_and_the_rest_skipped() {
        let mut input = vec![b'x'; CHUNK * 3 + 17];
        input.extend_from_slice(b"\nnext\n");
        let got = lines(&input);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), MAX_LINE);
        assert_eq!(got[1], b"next");
    }

    /// A terminal after Ctrl-D on an empty line: one read returns 0, the next would wait
    /// for more typing (here: fails).
    struct Terminal {
        ended: bool,
    }

    impl Read for Terminal {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            if std::mem::replace(&mut self.ended, true) {
                return Err(io::Error::other(
                    "read again after Ctrl-D: a second one needed",
                ));
            }
            Ok(0)
        }
    }

    #[test]
    fn one_ctrl_d_ends_an_empty_input() {
        let reader = BufReader::new(Terminal { ended: false });
        let mut rest = Vec::new();
        maybe_gzip(reader).unwrap().read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        let options = crate::logscan::Options::default();
        let a = crate::logscan::analyze_reader(Terminal { ended: false }, "<stdin>", &options);
        assert!(a.is_ok(), "{a:?}");
    }

    #[test]
    fn gzip_is_detected_by_content() {
        use flate2::{Compression, write::GzEncoder};
        use std::io::Write;
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(b"hello\nworld\n").unwrap();
        let data = gz.finish().unwrap();
        let mut reader = maybe_gzip(&data[..]).unwrap();
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        assert_eq!(text, "hello\nworld\n");
        let mut plain = maybe_gzip(&b"plain"[..]).unwrap();
        text.clear();
        plain.read_to_string(&mut text).unwrap();
        assert_eq!(text, "plain");
    }

    #[test]
    fn a_utf16_log_is_read_as_text() {
        let text = "host:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n";
        let le: Vec<u8> = [0xff, 0xfe]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xfe, 0xff]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        let utf8_bom: Vec<u8> = [0xef, 0xbb, 0xbf].into_iter().chain(text.bytes()).collect();
        for bytes in [le, be, utf8_bom] {
            let mut got = String::new();
            maybe_gzip(&bytes[..])
                .unwrap()
                .read_to_string(&mut got)
                .unwrap();
            assert_eq!(got, text);
        }
    }
}
