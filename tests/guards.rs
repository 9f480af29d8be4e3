//! Nothing lost, nothing silently passed, every flag checked (issue 26): outputs that would
//! overwrite an input or each other, output writes that fail, thresholds for ops that were
//! not measured, per-run Prometheus series, `--expect nvlink` everywhere, `ingest --expect`,
//! analyze on empty input, and one message style for every numeric flag.

use std::path::{Path, PathBuf};

use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

use crate::util::{
    fixture, gate, gate_against_baseline, ingest_fixture, ingest_to, netcheck, results, stderr_text,
};

fn copy_to(dir: &Path, from: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    to
}

// ---- item 2: an output on an input, or two outputs on one path ----

#[test]
fn gate_refuses_an_output_that_is_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let r = copy_to(dir.path(), &results("healthy.json"), "r.json");
    let before = std::fs::read(&r).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&r, &link).unwrap();
    for flag in ["--json", "--junit", "--prom", "--markdown"] {
        for out in [&r, &link] {
            netcheck()
                .current_dir(dir.path())
                .arg("gate")
                .arg("r.json")
                .arg(flag)
                .arg(out)
                .assert()
                .code(2)
                .stderr(contains("same file as the input RESULTS"));
        }
    }
    // The baseline is an input too.
    gate("healthy.json")
        .arg("--baseline")
        .arg(&r)
        .arg("--junit")
        .arg(&r)
        .assert()
        .code(2)
        .stderr(contains("--baseline"));
    assert_eq!(
        std::fs::read(&r).unwrap(),
        before,
        "the results are untouched"
    );
}

#[test]
fn gate_refuses_two_outputs_on_one_path() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x");
    gate("healthy.json")
        .arg("--junit")
        .arg(&x)
        .arg("--prom")
        .arg(dir.path().join(".").join("x"))
        .assert()
        .code(2)
        .stderr(contains("--junit and --prom both name"));
    assert!(!x.exists());
}

#[test]
fn ingest_refuses_to_write_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let log = copy_to(
        dir.path(),
        &fixture("nccl-tests/all_reduce_2nodes_efa.txt"),
        "in.log",
    );
    let before = std::fs::read(&log).unwrap();
    ingest_to(&log, &log)
        .assert()
        .code(2)
        .stderr(contains("same file as the input FILE"));
    assert_eq!(std::fs::read(&log).unwrap(), before);
}

#[test]
fn report_refuses_to_write_over_its_input_and_says_when_out_is_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("rep");
    std::fs::create_dir(&rep).unwrap();
    let input = copy_to(&rep, &results("healthy.json"), "report.json");
    netcheck()
        .arg("report")
        .arg(&input)
        .arg("--out")
        .arg(&rep)
        .assert()
        .code(2)
        .stderr(contains("same file as the input RESULTS"));
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    netcheck()
        .arg("report")
        .arg(results("healthy.json"))
        .arg("--out")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(contains("is a file; a report is a folder").and(contains("os error").not()));
}

// ---- item 8: a failed output write does not hide the verdict ----

#[test]
fn an_unwritable_output_path_is_refused_before_judging() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("p.prom");
    gate_against_baseline("regressed.json")
        .args(["--junit", "/nonexistent/dir/j.xml", "--prom"])
        .arg(&prom)
        .assert()
        .code(2)
        .stderr(contains("--junit `/nonexistent/dir/j.xml`").and(contains("does not exist")));
}

#[test]
fn a_write_that_fails_late_keeps_the_verdict_and_the_other_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("p.prom");
    let json = dir.path().join("g.json");
    // A regression: exit 1 stands, the other outputs are written, the failed write is named.
    gate_against_baseline("regressed.json")
        .args(["--junit", "/dev/full", "--prom"])
        .arg(&prom)
        .arg("--json")
        .arg(&json)
        .assert()
        .code(1)
        .stderr(contains("/dev/full").and(contains("FAIL")));
    assert!(prom.is_file() && json.is_file());
    std::fs::remove_file(&prom).unwrap();
    // A pass with a failed write is the write error (exit 2), the others still written.
    gate("healthy.json")
        .args(["--profile", "h200x2", "--junit", "/dev/full", "--prom"])
        .arg(&prom)
        .assert()
        .code(2)
        .stderr(contains("/dev/full"));
    assert!(prom.is_file());
}

// ---- item 3: the headline gate passes the headline run ----

#[test]
fn a_profile_threshold_for_an_op_not_measured_is_listed_not_failed() {
    // healthy.json: all_gather + reduce_scatter (run's default), one host. p5's all_reduce
    // floor cannot judge it; its all_gather / reduce_scatter floors do.
    gate("healthy.json")
        .args(["--profile", "p5.48xlarge", "--expect", "any"])
        .assert()
        .code(0)
        .stderr(
            contains("gate: PASS")
                .and(contains("all_reduce not measured"))
                .and(contains("matches no measured row").not())
                .and(contains("bandwidth 4")),
        );
    gate("healthy.json")
        .args(["--profile", "p5.48xlarge", "--expect", "any"])
        .arg("--require-bandwidth")
        .assert()
        .code(1)
        .stderr(contains(
            "all_reduce was not measured in this run (--require-bandwidth)",
        ));
    // Gating a file against itself.
    gate("healthy.json")
        .arg("--baseline")
        .arg(results("healthy.json"))
        .args(["--profile", "p5.48xlarge", "--expect", "any"])
        .assert()
        .code(0);
}

// ---- item 4: Prometheus per run, naive start times as UTC ----

#[test]
fn prometheus_has_one_gate_series_per_run_and_a_timestamp_for_naive_times() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("r.json");
    ingest_fixture("nccl-tests/two_runs_terminal.log", &r);
    let prom = dir.path().join("p.prom");
    netcheck()
        .arg("gate")
        .arg(&r)
        .arg("--prom")
        .arg(&prom)
        .assert()
        .code(0);
    let text = std::fs::read_to_string(&prom).unwrap();
    let passed: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("netcheck_gate_passed{"))
        .collect();
    assert_eq!(passed.len(), 2, "{text}");
    assert_ne!(passed[0], passed[1]);
    let cases: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("netcheck_gate_cases{") && l.contains("outcome=\"pass\""))
        .collect();
    assert_eq!(cases.len(), 2, "{text}");

    // nccl-tests -J: `start_time` without a timezone, taken as UTC.
    ingest_fixture("nccl-tests/reduce_scatter_2nodes.json", &r);
    netcheck()
        .arg("gate")
        .arg(&r)
        .arg("--prom")
        .arg(&prom)
        .assert()
        .code(0);
    let text = std::fs::read_to_string(&prom).unwrap();
    let stamp = text
        .lines()
        .find(|l| l.starts_with("netcheck_run_timestamp_seconds{"))
        .unwrap_or_else(|| panic!("no timestamp sample:\n{text}"));
    // 2026-11-29 18:04:11 UTC.
    assert!(stamp.ends_with(" 1795975451"), "{stamp}");
}

// ---- item 12: --expect nvlink in every command that takes --expect ----

#[test]
fn expect_nvlink_is_taken_by_run_ingest_gate_and_launch() {
    let dir = tempfile::tempdir().unwrap();
    // gate: a single-host run did not use multi-node NVLink: a failed check, not a usage error.
    gate("healthy.json")
        .args(["--expect", "nvlink"])
        .assert()
        .code(1)
        .stderr(contains("expected nvlink"));
    ingest_to(
        fixture("nccl-tests/all_reduce_2nodes_efa.txt"),
        dir.path().join("r.json"),
    )
    .args(["--expect", "nvlink"])
    .assert()
    .code(1);
    let out = netcheck()
        .args([
            "launch",
            "--dry-run",
            "--nodes",
            "a,b",
            "--gpus-per-node",
            "4",
        ])
        .args(["--image", "example.com/netcheck:1", "--expect", "nvlink"])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&out).contains("nvlink"));
    // run: accepted; it then stops for the missing GPU (3) or runs, never a usage error.
    let code = netcheck()
        .args(["run", "--expect", "nvlink", "--out"])
        .arg(dir.path().join("run"))
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap()
        .status
        .code();
    assert_ne!(code, Some(2), "run --expect nvlink is a valid flag");
}

// ---- item 9: ingest --expect judges ----

#[test]
fn ingest_expect_fails_a_run_whose_log_shows_another_transport() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    ingest_to(fixture("nccl-tests/all_reduce_2nodes_efa.txt"), &out)
        .args(["--expect", "socket"])
        .assert()
        .code(1)
        .stderr(contains("netcheck: FAIL").and(contains("expected socket")));
    assert!(out.is_file(), "the results are written all the same");
    // Text without NCCL lines cannot show the transport.
    ingest_to(fixture("nccl-tests/ag_rs_single_host.txt"), &out)
        .args(["--expect", "efa"])
        .assert()
        .code(1)
        .stderr(contains("no NCCL_DEBUG=INFO lines"));
}

// ---- item 10: analyze on empty input ----

#[test]
fn analyze_on_nothing_says_so_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    for expect in ["any", "efa"] {
        netcheck()
            .arg("analyze")
            .arg(&empty)
            .args(["--expect", expect, "--format", "json"])
            .assert()
            .code(2)
            .stdout(contains("\"no-nccl-lines\""));
    }
    netcheck()
        .arg("analyze")
        .write_stdin("")
        .assert()
        .code(2)
        .stdout(contains("no NCCL lines at all"));
    // A log that is not empty but has no NCCL line: the same.
    netcheck()
        .arg("analyze")
        .arg(fixture("logs/grammar/no-nccl.log"))
        .assert()
        .code(2);
}

#[test]
fn analyze_reads_a_utf16_log() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("logs/grammar/efa-2node.log")).unwrap();
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let path = dir.path().join("powershell.log");
    std::fs::write(&path, utf16).unwrap();
    let plain = netcheck()
        .arg("analyze")
        .arg(fixture("logs/grammar/efa-2node.log"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    let wide = netcheck()
        .arg("analyze")
        .arg(&path)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(wide.status.code(), plain.status.code());
    let field = |out: &[u8]| {
        let v: serde_json::Value = serde_json::from_slice(out).unwrap();
        (v["inter_node_transport"].clone(), v["nodes"].clone())
    };
    assert_eq!(field(&wide.stdout), field(&plain.stdout));
    assert_eq!(field(&wide.stdout).0, "efa");
}

// ---- item 11: kube-only flags with a file ----

#[test]
fn analyze_refuses_kube_flags_with_a_file() {
    for flags in [
        &["-n", "ml"][..],
        &["-l", "app=train"],
        &["-n", "ml", "-l", "app=train"],
        &["--pod", "p0"],
    ] {
        netcheck()
            .arg("analyze")
            .args(flags)
            .arg(fixture("logs/grammar/efa-2node.log"))
            .assert()
            .code(2);
    }
}

// ---- item 6: one parser for every numeric flag ----

#[test]
fn numeric_flags_name_the_value_and_the_allowed_range() {
    let h = results("healthy.json").display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--gpus", "0"],
            "'0' for '--gpus <N>': 0 is out of range; allowed: 1 or more",
        ),
        (&["run", "--simulate-nodes", "0"], "allowed: 1 or more"),
        (
            &["run", "--min-bytes", "-5"],
            "'-5' for '--min-bytes <SIZE>': -5 is out of range",
        ),
        (&["run", "--iters", "0"], "allowed: 1 or more"),
        (&["run", "--step-factor", "1"], "allowed: 2 or more"),
        (
            &["run", "--warmup", "-1"],
            "-1 is out of range; allowed: 0 or more",
        ),
        (
            &[
                "launch",
                "--gpus-per-node",
                "0",
                "--nodes",
                "a,b",
                "--image",
                "x",
                "--dry-run",
            ],
            "'0' for '--gpus-per-node <N>': 0 is out of range",
        ),
        (
            &[
                "launch",
                "--slow-fraction",
                "-1",
                "--nodes",
                "a,b",
                "--image",
                "x",
            ],
            "-1 is out of range; allowed: 0 to below 1",
        ),
        (
            &["launch", "--port", "0", "--nodes", "a,b"],
            "allowed: 1 to 65535",
        ),
        (
            &["gate", &h, "--baseline", &h, "--tolerance", "1e99"],
            "1e99 is out of range; allowed: 0 to below 100",
        ),
        (
            &["gate", &h, "--baseline", &h, "--tolerance", "-3"],
            "-3 is out of range",
        ),
        (
            &[
                "report",
                &h,
                "--out",
                "x",
                "--baseline",
                &h,
                "--tolerance",
                "100",
            ],
            "allowed: 0 to below 100",
        ),
        (
            &["doctor", "--expect-gpus", "-1"],
            "-1 is out of range; allowed: 0 or more",
        ),
        (
            &["fabric", "--local", "--iters", "0"],
            "allowed: 1 to 1000000",
        ),
        (
            &["fabric", "--local", "--sizes", "8,1G"],
            "1G is out of range; allowed: 1 to 64M",
        ),
        (
            &["analyze", "--kube", "-l", "a=b", "--max-streams", "0"],
            "allowed: 1 to 256",
        ),
    ];
    for (args, message) in cases {
        netcheck()
            .args(*args)
            .env("KUBECONFIG", "/nonexistent/kubeconfig")
            .assert()
            .code(2)
            .stderr(contains(*message).and(contains("unexpected argument").not()));
    }
    // A decimal size is a size.
    netcheck()
        .args(["gate", &h, "--baseline", &h, "--baseline-from", "1.5M"])
        .assert()
        .code(0);
}

// ---- item 7: check --kube checks its flags before anything runs or is written ----

#[test]
fn check_kube_without_image_is_a_usage_error_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chk");
    netcheck()
        .args(["check", "--out"])
        .arg(&out)
        .args(["--kube", "--nodes", "a,b"])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .assert()
        .code(2)
        .stderr(contains("--image is required").and(contains("doctor").not()));
    assert!(!out.exists(), "nothing written before the usage error");
    // A dry run prints the manifests and leaves no folder behind.
    netcheck()
        .args(["check", "--out"])
        .arg(&out)
        .args(["--kube", "--dry-run", "--nodes", "a,b", "--image", "img:1"])
        .args(["--gpus-per-node", "8"])
        .assert()
        .code(0)
        .stdout(contains("kind: Service"));
    assert!(!out.exists(), "a dry run leaves no empty folder");
}

// ---- ingest polish ----

#[test]
fn ingest_says_stdin_can_be_read_once_and_reads_a_file_named_twice_once() {
    netcheck()
        .args(["ingest", "-", "-", "--out", "-"])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(contains("FILE is `-` 2 times: stdin can be read only once"));
    let dir = tempfile::tempdir().unwrap();
    let f = fixture("nccl-tests/all_reduce_2nodes_efa.txt");
    let out = dir.path().join("r.json");
    netcheck()
        .current_dir(f.parent().unwrap())
        .arg("ingest")
        .arg(&f)
        .arg("./all_reduce_2nodes_efa.txt")
        .arg("--out")
        .arg(&out)
        .assert()
        .code(0)
        .stderr(contains("is the same file as").and(contains("read once")));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(r.is_object(), "one run, not two: {r}");
}

#[test]
fn ingest_names_netcheck_files_and_truncated_json() {
    netcheck()
        .arg("ingest")
        .arg(results("healthy.json"))
        .args(["--out", "-"])
        .assert()
        .code(2)
        .stderr(contains("a netcheck results file already"));
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("nccl-tests/reduce_scatter_2nodes.json")).unwrap();
    // Cut before the first result: JSON, not "a table header".
    let cut = dir.path().join("cut.json");
    let at = text.find("\"results\"").unwrap();
    std::fs::write(&cut, &text[..at + "\"results\": [".len()]).unwrap();
    netcheck()
        .arg("ingest")
        .arg(&cut)
        .args(["--out", "-"])
        .assert()
        .code(2)
        .stderr(
            contains("-J JSON file with no complete result").and(contains("table header").not()),
        );
    // Cut inside the third result's in-place measurement: the rows kept are counted as rows.
    let third = text.match_indices("\"in_place\"").nth(2).unwrap().0;
    std::fs::write(&cut, &text[..third + 5]).unwrap();
    let out = dir.path().join("r.json");
    let assert = ingest_to(&cut, &out).assert().code(0);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let rows = r["rows"].as_array().unwrap().len();
    let err = stderr_text(&assert);
    assert!(
        err.contains(&format!("kept {rows} rows from the 3 results")),
        "{rows} rows: {err}"
    );
}

// ---- gate polish ----

#[test]
fn gate_notices_suggest_only_what_was_not_given() {
    let h = results("healthy.json");
    netcheck()
        .arg("gate")
        .arg(&h)
        .args(["--profile", "default"])
        .assert()
        .code(0)
        .stderr(
            contains("--profile default has no min_busbw_gbs threshold")
                .and(contains("give --profile").not()),
        );
    netcheck()
        .arg("gate")
        .arg(&h)
        .args(["--profile", "default", "--require-bandwidth"])
        .assert()
        .code(1)
        .stderr(contains("--require-bandwidth makes this").not());
    let dir = tempfile::tempdir().unwrap();
    let verdict = dir.path().join("verdict.json");
    netcheck()
        .arg("gate")
        .arg(&h)
        .arg("--json")
        .arg(&verdict)
        .assert()
        .code(0);
    netcheck()
        .arg("gate")
        .arg(&verdict)
        .assert()
        .code(2)
        .stderr(contains("is a gate verdict").and(contains("not a results file")));
}

#[test]
fn check_help_gives_its_own_out_default() {
    netcheck()
        .args(["check", "--help"])
        .assert()
        .success()
        .stdout(contains("reports/check-<time>/").and(contains("reports/<timestamp>/").not()));
}
