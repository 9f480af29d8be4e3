//! Output paths, the same for every command: `-` is stdout, devices and FIFOs are written
//! through, symbolic links are followed, regular files are replaced atomically, and a write
//! error (ENOSPC from /dev/full) is an error with an exit code.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use predicates::prelude::PredicateBooleanExt;

use crate::util::{fixture, gate, netcheck, results};

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

fn is_char_device(path: &str) -> bool {
    std::fs::metadata(path)
        .unwrap()
        .file_type()
        .is_char_device()
}

#[test]
fn gate_junit_through_a_symlink_writes_the_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.xml");
    let link = dir.path().join("junit.xml");
    std::fs::write(&real, "stale").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    gate("healthy.json")
        .args(["--profile", "h200x2", "--junit"])
        .arg(&link)
        .assert()
        .code(0);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let xml = std::fs::read_to_string(&real).unwrap();
    assert!(xml.contains("<testsuites"), "{xml}");
}

#[test]
fn gate_prom_into_a_fifo_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("netcheck.prom");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    gate("healthy.json")
        .args(["--profile", "h200x2", "--prom"])
        .arg(&fifo)
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(0);
    let text = reader.join().unwrap();
    assert!(text.contains("netcheck_"), "{text}");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file beside the FIFO");
}

#[test]
fn gate_json_to_dev_null_leaves_the_device_alone() {
    gate("healthy.json")
        .args([
            "--profile",
            "h200x2",
            "--json",
            "/dev/null",
            "--junit",
            "/dev/null",
        ])
        .assert()
        .code(0);
    assert!(is_char_device("/dev/null"));
}

#[test]
fn ingest_out_dev_full_reports_enospc_and_exits_2() {
    netcheck()
        .arg("ingest")
        .arg(fixture("nccl-tests/ag_rs_single_host.txt"))
        .args(["--out", "/dev/full"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot write `/dev/full`"))
        .stderr(predicates::str::contains("No space left on device"))
        .stderr(predicates::str::contains("wrote").not());
    assert!(is_char_device("/dev/full"));
}

#[test]
fn gate_markdown_to_dev_full_fails() {
    gate("healthy.json")
        .args(["--profile", "h200x2", "--markdown", "/dev/full"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("No space left on device"));
}

#[test]
fn ingest_out_dash_is_stdout_and_creates_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = netcheck()
        .current_dir(dir.path())
        .arg("ingest")
        .arg(fixture("nccl-tests/ag_rs_single_host.txt"))
        .args(["--out", "-"])
        .assert()
        .code(0)
        .stderr(predicates::str::contains("to stdout"))
        .get_output()
        .stdout
        .clone();
    // The file holds two runs (all_gather, then reduce_scatter): a list of two records.
    let records: serde_json::Value = serde_json::from_slice(&out).expect("stdout is the records");
    assert_eq!(records.as_array().map(Vec::len), Some(2), "{records}");
    assert_eq!(records[0]["schema"], "netcheck.results.v1");
    assert!(!dir.path().join("-").exists());
}

#[test]
fn two_gate_outputs_on_stdout_are_a_usage_error() {
    gate("healthy.json")
        .args(["--profile", "h200x2", "--junit", "-", "--json", "-"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicates::str::contains("--junit, --json"));
}

#[test]
fn a_dangling_symlink_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("gate.json");
    std::os::unix::fs::symlink(dir.path().join("missing/dir/gate.json"), &link).unwrap();
    gate("healthy.json")
        .args(["--profile", "h200x2", "--json"])
        .arg(&link)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("symbolic link"));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_folder_output_cannot_be_stdout() {
    let dir = tempfile::tempdir().unwrap();
    netcheck()
        .current_dir(dir.path())
        .arg("report")
        .arg(results("healthy.json"))
        .args(["--out", "-"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("folder"));
    assert!(!dir.path().join("-").exists());
}

#[test]
fn dev_stdout_is_written_through_and_stays_a_link() {
    gate("healthy.json")
        .args(["--profile", "h200x2", "--junit", "/dev/stdout"])
        .assert()
        .code(0)
        .stdout(predicates::str::contains("<testsuites"));
    assert!(
        std::fs::symlink_metadata("/dev/stdout")
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
