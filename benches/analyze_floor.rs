//! The floor under any NCCL log analyzer: `cargo bench --bench analyze_floor -- LOG`.
//!
//! It does per line only what every analyzer must: read the file in 1 MiB chunks, split them
//! into lines, find the `NCCL INFO ` marker, and look up the text before it (which rank) and
//! the message after it (which kind of line) in hash tables. It decides nothing. The text
//! before the marker is first compared with the previous line's, as runs of lines from one
//! thread are most of a log. Only the last argument is read, so `bench-analyze-ab.sh` can time
//! it beside grep and `netcheck analyze` (it ignores `analyze --format json`).
//!
//! `scripts/bench-analyze.sh` times it with `FLOOR=1`; results are in docs/analyze.md (Speed).

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::io::Read;

/// The tables are keyed by a foldhash of the bytes already: no second hash.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("keys are u64")
    }
    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

type Table = HashMap<u64, u32, BuildHasherDefault<Identity>>;

const MARKER: &[u8] = b" NCCL INFO ";

fn main() -> std::io::Result<()> {
    let Some(path) = std::env::args().skip(1).last() else {
        eprintln!("usage: analyze_floor LOG");
        std::process::exit(2);
    };
    let mut file = std::fs::File::open(path)?;
    let marker = memchr::memmem::Finder::new(MARKER);
    let hasher = foldhash::fast::FixedState::with_seed(0);
    let (mut prefixes, mut messages) = (Table::default(), Table::default());
    let (mut last_prefix, mut last_rank) = (Vec::new(), 0u32);
    let (mut lines, mut records, mut checksum) = (0u64, 0u64, 0u64);
    let mut buf = vec![0u8; 1 << 20];
    let mut carried = 0;
    loop {
        if carried == buf.len() {
            // A line longer than the buffer: keep reading it.
            buf.resize(buf.len() * 2, 0);
        }
        let read = file.read(&mut buf[carried..])?;
        let end = carried + read;
        // At the end of the input the last line need not end in `\n`.
        let whole = if read == 0 {
            end
        } else {
            memchr::memrchr(b'\n', &buf[..end]).map_or(0, |at| at + 1)
        };
        let mut start = 0;
        while start < whole {
            let stop = memchr::memchr(b'\n', &buf[start..whole]).map_or(whole, |at| start + at);
            let line = &buf[start..stop];
            start = stop + 1;
            lines += 1;
            let Some(at) = marker.find(line) else {
                continue;
            };
            records += 1;
            let prefix = &line[..at];
            if prefix != last_prefix.as_slice() {
                let next = prefixes.len() as u32;
                last_rank = *prefixes.entry(hasher.hash_one(prefix)).or_insert(next);
                last_prefix.clear();
                last_prefix.extend_from_slice(prefix);
            }
            let next = messages.len() as u32;
            let kind = *messages
                .entry(hasher.hash_one(&line[at + MARKER.len()..]))
                .or_insert(next);
            checksum = checksum.wrapping_add(u64::from(last_rank ^ kind));
        }
        if read == 0 {
            break;
        }
        buf.copy_within(whole..end, 0);
        carried = end - whole;
    }
    println!(
        "{lines} lines, {records} records, {} prefixes, {} messages (checksum {checksum})",
        prefixes.len(),
        messages.len()
    );
    Ok(())
}
