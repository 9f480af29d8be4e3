//! Opening log sources (files, `.gz` files, stdin) and reading them line by line with bounded
//! memory: a line longer than `MAX_LINE` is cut and the rest skipped, so a multi-gigabyte file
//! without newlines costs no more memory than a normal one.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::error::{Error, Result};

/// Longest line kept; NCCL lines are a few hundred bytes.
pub const MAX_LINE: usize = 64 * 1024;
const BUFFER: usize = 256 * 1024;

/// Reads the next line into `buf` (without the newline), at most `MAX_LINE` bytes of it.
/// Returns `false` at the end of the input.
pub fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<bool> {
    buf.clear();
    let mut any = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(any);
        }
        any = true;
        let (chunk, used, done) = match memchr::memchr(b'\n', available) {
            Some(at) => (&available[..at], at + 1, true),
            None => (available, available.len(), false),
        };
        let room = MAX_LINE.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        reader.consume(used);
        if done {
            return Ok(true);
        }
    }
}

/// Wraps a reader, decompressing it when it starts with the gzip magic bytes (whatever the
/// file is called).
pub fn maybe_gzip<'a, R: BufRead + 'a>(mut reader: R) -> io::Result<Box<dyn BufRead + 'a>> {
    let head = loop {
        match reader.fill_buf() {
            Ok(bytes) => break bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::with_capacity(
            BUFFER,
            MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(Box::new(reader))
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

/// Opens a path (`-` is stdin) for reading, decompressing gzip. Errors name the file.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let raw: Box<dyn Read> = if path == Path::new("-") {
        Box::new(io::stdin())
    } else {
        let file = File::open(path).map_err(|e| Error::read(path, e))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            let e = io::Error::other("is a directory");
            return Err(Error::read(path, e));
        }
        Box::new(file)
    };
    maybe_gzip(BufReader::with_capacity(BUFFER, raw)).map_err(|e| Error::read(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<Vec<u8>> {
        let mut reader = input;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while read_line(&mut reader, &mut buf).unwrap() {
            out.push(buf.clone());
        }
        out
    }

    #[test]
    fn splits_lines_and_keeps_a_last_line_without_newline() {
        assert_eq!(
            lines(b"a\nb\r\n\nc"),
            vec![b"a".to_vec(), b"b\r".to_vec(), vec![], b"c".to_vec()]
        );
        assert!(lines(b"").is_empty());
    }

    #[test]
    fn long_lines_are_cut_and_the_rest_skipped() {
        let mut input = vec![b'x'; MAX_LINE * 3];
        input.extend_from_slice(b"\nnext\n");
        let got = lines(&input);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), MAX_LINE);
        assert_eq!(got[1], b"next");
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
}
