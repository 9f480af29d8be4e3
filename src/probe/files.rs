//! Small helpers for reading what is installed: searching inside binaries for embedded version
//! strings, `ldconfig -p`, and running a helper command with a deadline.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The first match of `re` in the file's first `limit` bytes, as its capture groups.
pub fn scan_file(path: &Path, re: &regex::bytes::Regex, limit: u64) -> Option<Vec<Option<String>>> {
    scan_chunks(path, re, limit, 8 << 20, 256)
}

/// `scan_file` with explicit chunk sizes; `overlap` bytes of each chunk are kept for the next,
/// so a match is found even when it crosses a chunk boundary (`overlap` must be at least the
/// longest possible match).
fn scan_chunks(
    path: &Path,
    re: &regex::bytes::Regex,
    limit: u64,
    chunk_len: usize,
    overlap: usize,
) -> Option<Vec<Option<String>>> {
    let mut file = std::fs::File::open(path).ok()?.take(limit);
    let mut buf: Vec<u8> = Vec::with_capacity(chunk_len + overlap);
    let mut chunk = vec![0u8; chunk_len];
    loop {
        let n = file.read(&mut chunk).ok()?;
        let eof = n == 0;
        buf.extend_from_slice(&chunk[..n]);
        let mut keep_from = buf.len().saturating_sub(overlap);
        if let Some(c) = re.captures(&buf) {
            let whole = c.get(0).expect("group 0 always matches");
            // A match touching the end of what was read may continue in the next chunk.
            if eof || whole.end() + overlap <= buf.len() {
                return Some(
                    (1..c.len())
                        .map(|i| {
                            c.get(i)
                                .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
                        })
                        .collect(),
                );
            }
            keep_from = keep_from.min(whole.start());
        }
        if eof {
            return None;
        }
        buf.drain(..keep_from);
    }
}

/// Paths `ldconfig -p` lists for libraries whose name starts with `prefix`.
pub fn ldconfig_paths(prefix: &str) -> Vec<PathBuf> {
    let out = ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|cmd| run_with_timeout(cmd, &["-p"], Duration::from_secs(10)));
    out.map(|text| parse_ldconfig(&text, prefix))
        .unwrap_or_default()
}

/// `\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2` → the path.
pub fn parse_ldconfig(text: &str, prefix: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| {
            let (name, path) = line.trim().split_once(" => ")?;
            name.starts_with(prefix).then(|| PathBuf::from(path.trim()))
        })
        .collect()
}

/// A command's stdout, or `None` when it is missing, fails or takes too long.
pub fn run_with_timeout(cmd: &str, args: &[&str], timeout: Duration) -> Option<String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let text = reader.join().ok()?;
    status.success().then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_string_across_a_chunk_boundary_is_found_whole() {
        let re =
            regex::bytes::Regex::new(r"NCCL version (\d+\.\d+\.\d+)(?:\+cuda(\d+\.\d+))?").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        for offset in 0..100 {
            let path = tmp.path().join("lib");
            let mut bytes = vec![b'x'; 100];
            bytes.splice(
                offset..offset,
                b"NCCL version 2.28.9+cuda13.0\0".iter().copied(),
            );
            std::fs::write(&path, &bytes).unwrap();
            let caps = scan_chunks(&path, &re, 1 << 20, 50, 40).unwrap();
            assert_eq!(caps[0].as_deref(), Some("2.28.9"), "offset {offset}");
            assert_eq!(caps[1].as_deref(), Some("13.0"), "offset {offset}");
        }
    }

    #[test]
    fn ldconfig_lines_give_paths() {
        let text = "1234 libs found in cache `/etc/ld.so.cache'\n\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2\n\tlibnccl-net.so (libc6,x86-64) => /opt/x/libnccl-net.so\n\tlibm.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libm.so.6\n";
        assert_eq!(
            parse_ldconfig(text, "libnccl.so"),
            vec![PathBuf::from("/lib/x86_64-linux-gnu/libnccl.so.2")]
        );
        assert_eq!(
            parse_ldconfig(text, "libnccl-net"),
            vec![PathBuf::from("/opt/x/libnccl-net.so")]
        );
    }
}
