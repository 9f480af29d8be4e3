//! A stderr that cannot be written (`2>/dev/full`, `2>&1 | head -1`, a CI log collector that
//! went away) must not change what a command does: its messages are dropped, it finishes,
//! writes its files and exits with the code it has with a working stderr (never 101, a panic).
//! Every command is run three ways: stderr captured (the reference), to /dev/full, and to a
//! pipe whose reader is already closed.

use std::path::Path;
use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;

use crate::util::fixture;

enum Stderr {
    Captured,
    Full,
    ClosedPipe,
}

/// Runs netcheck with `args` in `dir` and returns its exit code.
fn code(dir: &Path, args: &[&str], stderr: Stderr) -> i32 {
    let mut cmd = Command::cargo_bin("netcheck").unwrap();
    cmd.args(args)
        .current_dir(dir)
        .env_remove("NCCL_DEBUG")
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    match stderr {
        Stderr::Captured => {
            cmd.stderr(Stdio::piped());
        }
        Stderr::Full => {
            cmd.stderr(
                std::fs::File::options()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            );
        }
        Stderr::ClosedPipe => {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            cmd.stderr(writer);
        }
    }
    let out = cmd.output().unwrap();
    out.status
        .code()
        .unwrap_or_else(|| panic!("{args:?}: killed by a signal: {out:?}"))
}

/// The commands, each with the files it must write (relative to its folder).
fn commands() -> Vec<(Vec<String>, Vec<&'static str>)> {
    let f = |p: &str| fixture(p).display().to_string();
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (
            vec!["analyze".into(), f("logs/grammar/efa-2node.log")],
            vec![],
        ),
        (
            vec![
                "ingest".into(),
                f("nccl-tests/all_reduce_2nodes_efa.txt"),
                "--out".into(),
                "r.json".into(),
            ],
            vec!["r.json"],
        ),
        (
            vec![
                "report".into(),
                f("results/healthy.json"),
                "--out".into(),
                "rep".into(),
            ],
            vec!["rep/report.json"],
        ),
        (
            [
                s(&["gate"]),
                vec![f("results/regressed.json")],
                s(&["--baseline"]),
                vec![f("results/baseline.json")],
                s(&["--junit", "j.xml", "--prom", "p.prom"]),
            ]
            .concat(),
            vec!["j.xml", "p.prom"],
        ),
        (
            [
                s(&["gate"]),
                vec![f("results/healthy.json")],
                s(&["--profile", "h200x2", "--json", "g.json"]),
            ]
            .concat(),
            vec!["g.json"],
        ),
        (s(&["run", "--gpus", "1", "--out", "run"]), vec![]),
        (s(&["doctor", "--format", "json"]), vec![]),
        (s(&["fabric", "--list"]), vec![]),
        (s(&["check", "--out", "chk"]), vec![]),
        (
            s(&[
                "launch",
                "--dry-run",
                "--nodes",
                "a,b",
                "--gpus-per-node",
                "8",
                "--image",
                "example.com/netcheck:1",
            ]),
            vec![],
        ),
        (s(&["launch", "--nodes", "a,b", "--image", "x"]), vec![]),
        (s(&["gate", "/nonexistent/results.json"]), vec![]),
    ]
}

#[test]
fn a_full_or_closed_stderr_changes_nothing_but_the_messages() {
    for (args, files) in commands() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reference = {
            let dir = tempfile::tempdir().unwrap();
            code(dir.path(), &args, Stderr::Captured)
        };
        assert_ne!(reference, 101, "{args:?} panics even with a working stderr");
        for (how, stderr) in [
            ("/dev/full", Stderr::Full),
            ("a closed pipe", Stderr::ClosedPipe),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let got = code(dir.path(), &args, stderr);
            assert_eq!(
                got, reference,
                "{args:?} with stderr to {how}: exit {got}, {reference} with a working stderr"
            );
            for file in &files {
                assert!(
                    dir.path().join(file).is_file(),
                    "{args:?} with stderr to {how} did not write {file}"
                );
            }
        }
    }
}
