//! `-` means stdin for every input (`gate -`, `report -`, `--baseline -`, `--config -`), and
//! stdin can be read only once.

use crate::util::{netcheck, results};

/// A folder holding a stale file literally named `-`, which `-` must not read.
fn dir_with_a_file_named_dash(content_of: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(results(content_of), dir.path().join("-")).unwrap();
    dir
}

#[test]
fn gate_dash_reads_stdin_not_a_file_named_dash() {
    let dir = dir_with_a_file_named_dash("healthy.json");
    netcheck()
        .current_dir(dir.path())
        .args(["gate", "-", "--profile", "h200x2", "--baseline"])
        .arg(results("baseline.json"))
        .pipe_stdin(results("regressed.json"))
        .unwrap()
        .assert()
        .code(1)
        .stderr(predicates::str::contains("below the baseline's"));
}

#[test]
fn baseline_dash_reads_stdin() {
    let dir = dir_with_a_file_named_dash("regressed.json");
    netcheck()
        .current_dir(dir.path())
        .arg("gate")
        .arg(results("healthy.json"))
        .args(["--profile", "h200x2", "--baseline", "-"])
        .pipe_stdin(results("baseline.json"))
        .unwrap()
        .assert()
        .code(0);
}

#[test]
fn config_dash_reads_stdin() {
    let dir = tempfile::tempdir().unwrap();
    netcheck()
        .current_dir(dir.path())
        .arg("gate")
        .arg(results("healthy.json"))
        .args(["--config", "-"])
        .write_stdin("[[threshold]]\nmin_busbw_gbs = 100000\n")
        .assert()
        .code(1);
}

#[test]
fn report_dash_reads_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    netcheck()
        .current_dir(dir.path())
        .args(["report", "-", "--out"])
        .arg(&out)
        .pipe_stdin(results("healthy.json"))
        .unwrap()
        .assert()
        .code(0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert!(
        json.to_string().contains("SYNTHETIC"),
        "the run came from stdin"
    );
}

#[test]
fn stdin_for_two_inputs_is_a_usage_error() {
    netcheck()
        .args(["gate", "-", "--baseline", "-"])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "RESULTS and --baseline both read stdin",
        ));
    netcheck()
        .args(["report", "-", "-", "--out", "x"])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("stdin can be read only once"));
}
