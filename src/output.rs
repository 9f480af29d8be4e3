//! Writing data to stdout. Data (tables, JSON) goes to stdout, everything for people
//! (progress, warnings, errors) to stderr. A closed stdout (`netcheck analyze | head`) ends the
//! output quietly instead of panicking the way `println!` would.

use std::io::Write;

/// Writes `text` to stdout; a broken pipe is not an error (the reader has what it wanted).
pub fn stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
