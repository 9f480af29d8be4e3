//! Writing what netcheck produces: to stdout, or to a file named on the command line. Data
//! (tables, JSON) goes to stdout, everything for people (progress, warnings, errors) to stderr.
//! A closed stdout (`netcheck analyze | head`) ends the output quietly instead of panicking the
//! way `println!` would; messages to a closed or full stderr (`2>&1 | head -1`, `2>/dev/full`)
//! are dropped the same way (see [`say!`](crate::say)), so the command still finishes, writes
//! its files and exits with its real code. `eprintln!` would panic there (exit 101): the crate
//! denies it (`clippy::print_stderr`).
//!
//! Every command writes its output files through [`write_file`], so they all treat a path the
//! same way:
//!
//! - `-` is stdout;
//! - a regular file (or a path that does not exist yet) is replaced atomically: the bytes go to
//!   a temporary file in the same folder, which is then renamed over it, so a reader such as
//!   node_exporter's textfile collector never sees half a file;
//! - anything else that exists — a character device such as `/dev/null` or `/dev/stdout`, a
//!   FIFO, a socket — is opened and written through, never replaced; a failed write (ENOSPC
//!   from `/dev/full`) is an error;
//! - a symbolic link is followed: the file it points to is written (atomically when that is a
//!   regular file) and the link stays; a link to a device or pipe (`/dev/stdout` →
//!   `/proc/self/fd/1`) is opened by its name; a link to nothing is refused;
//! - a folder is refused.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The name of stdout (and stdin) on the command line.
pub const STDIO: &str = "-";

/// Whether `path` is `-`.
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == STDIO
}

/// Prints a line for people on stderr, like `eprintln!`, but a stderr that cannot be written
/// (a closed pipe, `/dev/full`) drops the message instead of panicking: what the command
/// writes to files and its exit code matter more than a progress line nobody can read.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::stderr_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// What [`say!`](crate::say) calls: writes to stderr, ignoring any error.
pub fn stderr_fmt(args: std::fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Writes `text` to stderr as it is (no newline added), ignoring any error, like
/// [`say!`](crate::say).
pub fn stderr_text(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Writes `text` to stdout; a broken pipe is not an error (the reader has what it wanted).
pub fn stdout(text: &str) -> std::io::Result<()> {
    stdout_bytes(text.as_bytes())
}

fn stdout_bytes(bytes: &[u8]) -> std::io::Result<()> {
    stdout_with(|out| out.write_all(bytes))
}

/// Writes to stdout through `write` (buffered), as `stdout` does: for output too large to
/// build in memory first. A broken pipe is not an error.
pub fn stdout_with(
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, std::io::stdout().lock());
    match write(&mut out).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// How a path named for output will be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `-`.
    Stdout,
    /// A regular file, or nothing yet: replaced atomically. The path is the link's target
    /// when the name was a symbolic link.
    Replace(PathBuf),
    /// A device, FIFO or socket: written through.
    WriteThrough(PathBuf),
}

/// Decides how `path` is written (see the module doc), without writing anything.
pub fn target(path: &Path) -> Result<Target> {
    if is_stdio(path) {
        return Ok(Target::Stdout);
    }
    let link = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta.file_type().is_symlink(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target::Replace(path.to_path_buf()));
        }
        Err(e) => return Err(Error::write(path, e)),
    };
    // The kind of what the name leads to, following links (`/dev/stdout` → `/proc/self/fd/1`
    // → a pipe or a terminal).
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if link && e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Usage {
                message: format!(
                    "cannot write `{}`: it is a symbolic link to {}, which does not exist",
                    path.display(),
                    std::fs::read_link(path)
                        .map(|t| format!("`{}`", t.display()))
                        .unwrap_or_else(|_| "a file".into()),
                ),
                hint: Some("create the target first, or remove the link and name a file".into()),
            });
        }
        Err(e) => return Err(Error::write(path, e)),
    };
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err(Error::Usage {
            message: format!("cannot write `{}`: it is a folder", path.display()),
            hint: Some("name a file inside it".into()),
        });
    }
    if !kind.is_file() {
        // Opened by the name given: a link such as /dev/stdout resolves only when opened.
        return Ok(Target::WriteThrough(path.to_path_buf()));
    }
    if link {
        // The file the link points to is replaced; the link stays.
        let real = std::fs::canonicalize(path).map_err(|e| Error::write(path, e))?;
        return Ok(Target::Replace(real));
    }
    Ok(Target::Replace(path.to_path_buf()))
}

/// Writes `bytes` to `path` as the module doc says. Errors name the path the user gave.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    match target(path)? {
        Target::Stdout => stdout_bytes(bytes).map_err(|e| Error::write("<stdout>", e)),
        Target::WriteThrough(real) => std::fs::OpenOptions::new()
            .write(true)
            .open(&real)
            .and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush()))
            .map_err(|e| Error::write(path, e)),
        Target::Replace(real) => replace(&real, bytes).map_err(|e| Error::write(path, e)),
    }
}

/// Writes a temporary file beside `path` and renames it over `path`; an existing file's
/// permissions are kept. The temporary file is removed when anything fails.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    use std::os::unix::fs::PermissionsExt;
    // An existing file keeps its permissions; a new one gets the usual 0666 less the umask
    // (not tempfile's 0600).
    let mode = std::fs::metadata(path).map_or(0o666, |m| m.permissions().mode() & 0o7777);
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    if mode != 0o666 {
        // The umask may have narrowed an existing file's mode at creation.
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Refuses `-` for a flag that names a folder (a report, a run's outputs): many files cannot
/// go to stdout.
pub fn folder_not_stdout(flag: &str, path: Option<&Path>) -> Result<()> {
    if path.is_some_and(is_stdio) {
        return Err(Error::Usage {
            message: format!("{flag} names a folder of several files; it cannot be `-` (stdout)"),
            hint: Some(format!("give {flag} a folder name")),
        });
    }
    Ok(())
}

/// Refuses two outputs on stdout at once (their bytes would interleave): `outputs` are the
/// flag names and the paths given to them.
pub fn at_most_one_stdout<'a>(
    outputs: impl IntoIterator<Item = (&'a str, Option<&'a Path>)>,
) -> Result<()> {
    let on_stdout: Vec<&str> = outputs
        .into_iter()
        .filter(|(_, p)| p.is_some_and(is_stdio))
        .map(|(flag, _)| flag)
        .collect();
    if on_stdout.len() > 1 {
        return Err(Error::Usage {
            message: format!(
                "{} all write to stdout (`-`); only one output can",
                on_stdout.join(", ")
            ),
            hint: Some("give the others a file name".into()),
        });
    }
    Ok(())
}

/// Checks, before any work is done, that `path` can be written: what [`target`] refuses (a
/// folder, a dangling link), a folder that does not exist, or one (or a device) this user may
/// not write. A command that judges something checks its outputs first, so a typo in an
/// output path is a usage error up front, not an error that hides the verdict afterwards.
pub fn check_writable(flag: &str, path: &Path) -> Result<()> {
    let writable = |p: &Path| {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok();
        // SAFETY: a valid NUL-terminated path; access() only reads it.
        c.is_some_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
    };
    let refuse = |why: String| Error::Usage {
        message: format!("{flag} `{}`: {why}", path.display()),
        hint: Some(format!(
            "give {flag} a path in a folder that exists and can be written"
        )),
    };
    match target(path)? {
        Target::Stdout => Ok(()),
        Target::WriteThrough(p) => match writable(&p) {
            true => Ok(()),
            false => Err(refuse("it cannot be written by this user".into())),
        },
        Target::Replace(p) => {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if !dir.is_dir() {
                return Err(refuse(format!(
                    "the folder `{}` does not exist",
                    dir.display()
                )));
            }
            if !writable(dir) {
                return Err(refuse(format!(
                    "the folder `{}` cannot be written by this user",
                    dir.display()
                )));
            }
            Ok(())
        }
    }
}

/// Where writing `path` would land, for comparing paths: the file itself, links followed and
/// the folder made absolute; `None` for `-` and for devices, FIFOs and sockets (written
/// through, never replaced: `--junit /dev/null --prom /dev/null` is fine).
fn landing(path: &Path) -> Option<PathBuf> {
    if is_stdio(path) {
        return None;
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => std::fs::canonicalize(path).ok(),
        Ok(_) => None,
        Err(_) => {
            // Not there yet (or a dangling link, refused when written): its folder, resolved,
            // and its name.
            let name = path.file_name()?;
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            Some(dir.join(name))
        }
    }
}

/// Refuses an output that would overwrite an input (`gate r.json --json r.json`, `ingest
/// in.log --out in.log`) or another output (`--junit x --prom x` would keep only the last):
/// paths are compared where they land, following symbolic links and `..`, so `./r.json`, an
/// absolute path and a link to the same file are one file. Hard links count too. `inputs` and
/// `outputs` are the flag names and the paths given to them.
pub fn distinct_paths<'a>(
    inputs: impl IntoIterator<Item = (&'a str, Option<&'a Path>)>,
    outputs: impl IntoIterator<Item = (&'a str, Option<&'a Path>)>,
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| (m.dev(), m.ino()))
    };
    let inputs: Vec<(&str, &Path)> = inputs
        .into_iter()
        .filter_map(|(flag, p)| p.map(|p| (flag, p)))
        .collect();
    let mut seen: Vec<(&str, &Path, PathBuf)> = vec![];
    for (flag, path) in outputs.into_iter().filter_map(|(f, p)| p.map(|p| (f, p))) {
        let Some(land) = landing(path) else { continue };
        let same = |other: &Path| {
            landing(other).is_some_and(|l| l == land)
                || id(other).is_some_and(|i| id(path) == Some(i))
        };
        if let Some((input, _)) = inputs.iter().find(|(_, p)| same(p)) {
            return Err(Error::Usage {
                message: format!(
                    "{flag} `{}` is the same file as the input {input}; writing it would replace what is being read",
                    path.display()
                ),
                hint: Some(format!("give {flag} another file name")),
            });
        }
        if let Some((other, _, _)) = seen.iter().find(|(_, p, l)| *l == land || same(p)) {
            return Err(Error::Usage {
                message: format!(
                    "{other} and {flag} both name `{}`; the second would replace the first",
                    path.display()
                ),
                hint: Some("give each output its own file name".into()),
            });
        }
        seen.push((flag, path, land));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_and_a_regular_file_are_replaced_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        write_file(&path, b"one").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        write_file(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn an_existing_files_permissions_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.prom");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_file(&path, b"new").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    fn a_symlink_is_followed_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.xml");
        let link = dir.path().join("link.xml");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_file(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
    }

    #[test]
    fn a_dangling_symlink_is_refused_with_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link.xml");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        let e = write_file(&link, b"x").unwrap_err();
        assert!(e.to_string().contains("nowhere"), "{e}");
        assert_eq!(e.exit_code(), crate::exit::BAD_INPUT);
        assert!(!dir.path().join("nowhere").exists());
    }

    #[test]
    fn a_fifo_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_file(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }

    #[test]
    fn dev_null_is_written_through_and_stays_a_device() {
        write_file(Path::new("/dev/null"), b"gone").unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        assert_eq!(
            target(Path::new("/dev/null")).unwrap(),
            Target::WriteThrough("/dev/null".into())
        );
    }

    #[test]
    fn dev_full_reports_the_write_error() {
        let e = write_file(Path::new("/dev/full"), b"no room").unwrap_err();
        let Error::Write { source, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(source.raw_os_error(), Some(libc::ENOSPC), "{source}");
    }

    #[test]
    fn a_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_file(dir.path(), b"x").unwrap_err();
        assert!(e.to_string().contains("folder"), "{e}");
    }

    #[test]
    fn dev_stdout_is_written_through_by_its_name() {
        // /dev/stdout is a link to /proc/self/fd/1: a pipe, a file or a terminal under the
        // test harness; whichever it is, the name is kept (never canonicalised to `pipe:[…]`).
        match target(Path::new("/dev/stdout")).unwrap() {
            Target::WriteThrough(p) => assert_eq!(p, Path::new("/dev/stdout")),
            Target::Replace(p) => assert!(p.is_file(), "{p:?}"),
            Target::Stdout => panic!("only `-` is Stdout"),
        }
    }

    #[test]
    fn dash_is_stdout() {
        assert_eq!(target(Path::new("-")).unwrap(), Target::Stdout);
    }

    #[test]
    fn two_outputs_on_stdout_are_refused() {
        let dash = Path::new("-");
        let file = Path::new("x.xml");
        assert!(at_most_one_stdout([("--junit", Some(dash)), ("--json", Some(file))]).is_ok());
        let e = at_most_one_stdout([
            ("--junit", Some(dash)),
            ("--json", Some(dash)),
            ("--prom", None),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("--junit, --json"), "{e}");
        assert_eq!(e.exit_code(), crate::exit::BAD_INPUT);
    }

    #[test]
    fn an_output_on_an_input_or_on_another_output_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("r.json");
        std::fs::write(&input, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let dotted = dir.path().join(".").join("r.json");
        let new = dir.path().join("new.xml");
        let i = [("RESULTS", Some(input.as_path()))];
        for same in [&input, &link, &dotted] {
            let e = distinct_paths(i, [("--json", Some(same.as_path()))]).unwrap_err();
            assert!(
                e.to_string().contains("same file as the input RESULTS"),
                "{e}"
            );
            assert_eq!(e.exit_code(), crate::exit::BAD_INPUT);
        }
        let e = distinct_paths(
            i,
            [
                ("--junit", Some(new.as_path())),
                ("--prom", Some(new.as_path())),
            ],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("--junit and --prom both name"),
            "{e}"
        );
        // Different files, stdout and devices are fine.
        let dash = Path::new("-");
        let null = Path::new("/dev/null");
        distinct_paths(
            i,
            [
                ("--junit", Some(new.as_path())),
                ("--json", Some(dash)),
                ("--prom", Some(null)),
                ("--markdown", Some(null)),
            ],
        )
        .unwrap();
    }
}
