//! `netcheck ingest`: nccl-tests text and -J JSON → results.json (fixtures written from the
//! format, see tests/fixtures/nccl-tests/README.md).

use serde_json::Value;

use crate::util::{fixture, netcheck};

/// Runs `ingest` on fixtures and returns the written record as plain JSON.
fn ingest(files: &[&str], extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.json");
    let mut cmd = netcheck();
    cmd.arg("ingest");
    for f in files {
        cmd.arg(fixture(&format!("nccl-tests/{f}")));
    }
    cmd.arg("--out").arg(&out).args(extra).assert().success();
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

fn rows<'a>(record: &'a Value, op: &str, in_place: bool) -> Vec<&'a Value> {
    record["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["op"] == op && r["in_place"] == in_place)
        .collect()
}

#[test]
fn text_with_nccl_info_lines_mixed_in() {
    let r = ingest(&["all_reduce_2nodes_efa.txt"], &[]);
    assert_eq!(r["schema"], "netcheck.results.v1");
    assert_eq!(r["source"], "ingest");
    assert_eq!(r["status"], "complete");
    assert_eq!(r["world_size"], 16);
    assert_eq!(r["nccl"]["version"], "2.27.7");
    let hosts: Vec<&str> = r["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["hostname"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["gpu-node-a", "gpu-node-b"]);
    assert_eq!(r["hosts"][1]["gpus"].as_array().unwrap().len(), 8);
    assert_eq!(r["ranks"].as_array().unwrap().len(), 16);
    let oop = rows(&r, "all_reduce", false);
    assert_eq!(
        oop.len(),
        11,
        "1K..1G step 4, the NCCL line inside the table skipped"
    );
    let last = oop.last().unwrap();
    assert_eq!(last["bytes"], 1u64 << 30);
    assert_eq!(last["count"], 268435456);
    assert_eq!(last["dtype"], "float32");
    assert_eq!(last["redop"], "sum");
    assert_eq!(last["iters"], 20);
    assert_eq!(last["wrong"], 0);
    assert!((last["busbw_gbs"].as_f64().unwrap() - 470.21).abs() < 1e-9);
    assert!((last["time_us"]["mean"].as_f64().unwrap() - 4281.67).abs() < 1e-9);
    assert_eq!(rows(&r, "all_reduce", true).len(), 11);
    // The NCCL_DEBUG lines mixed into the output were analysed.
    let a = &r["analysis"];
    assert_eq!(a["inter_node_transport"], "efa");
    assert_eq!(a["socket_fallback"], false);
    assert_eq!(
        (a["nodes"].as_u64(), a["ranks"].as_u64()),
        (Some(2), Some(16))
    );
    assert_eq!(a["verdict"], "pass");
}

#[test]
fn outputs_without_nccl_lines_carry_no_analysis() {
    for f in ["reduce_scatter_2nodes.json", "ag_rs_single_host.txt"] {
        let r = ingest(&[f], &[]);
        assert_eq!(
            r["analysis"],
            Value::Null,
            "{f}: nothing analysed is not `unknown`"
        );
    }
}

#[test]
fn expect_reaches_the_analysis_and_the_gate_passes_efa() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    netcheck()
        .arg("ingest")
        .arg(fixture("nccl-tests/all_gather_nccl_failure.txt"))
        .args(["--expect", "efa", "--out"])
        .arg(&out)
        .assert()
        .success();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        r["analysis"]["verdict"], "fail",
        "efa expected, not shown in the log"
    );
    netcheck()
        .arg("ingest")
        .arg(fixture("nccl-tests/all_reduce_2nodes_efa.txt"))
        .args(["--expect", "efa", "--out"])
        .arg(&out)
        .assert()
        .success();
    netcheck()
        .arg("gate")
        .arg(&out)
        .args(["--expect", "efa"])
        .assert()
        .code(0)
        .stderr(predicates::str::contains("gate: PASS"));
}

#[test]
fn two_collectives_in_one_output() {
    let r = ingest(&["ag_rs_single_host.txt"], &[]);
    assert_eq!(rows(&r, "all_gather", false).len(), 9);
    assert_eq!(rows(&r, "reduce_scatter", true).len(), 9);
    assert_eq!(r["world_size"], 4);
    assert_eq!(r["hosts"][0]["gpus"][3]["name"], "NVIDIA L4");
    assert_eq!(r["status"], "complete");
}

#[test]
fn several_files_make_one_record() {
    let r = ingest(
        &["reduce_scatter_2nodes.json", "all_reduce_2nodes_efa.txt"],
        &["--label", "node group 7"],
    );
    assert_eq!(rows(&r, "reduce_scatter", false).len(), 11);
    assert_eq!(rows(&r, "all_reduce", false).len(), 11);
    assert_eq!(r["label"], "node group 7");
}

#[test]
fn truncated_text_keeps_complete_rows_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let assert = netcheck()
        .arg("ingest")
        .arg(fixture("nccl-tests/all_gather_truncated.txt"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains("truncated"), "{stderr}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(r["status"], "interrupted");
    assert_eq!(rows(&r, "all_gather", false).len(), 7);
    assert!(r["errors"][0].as_str().unwrap().contains("line"));
}

#[test]
fn mpi_tagged_old_format_takes_the_op_from_the_file_name() {
    let r = ingest(&["mpi_tagged_reduce_scatter.txt"], &[]);
    let oop = rows(&r, "reduce_scatter", false);
    assert_eq!(oop.len(), 5);
    assert_eq!(oop[0]["wrong"], Value::Null, "#wrong N/A = not checked");
    assert_eq!(r["world_size"], 2);
    assert_eq!(r["hosts"][0]["gpus"][1]["pci_bus_id"], "0x57");
    // Completed (footer present) although the old format has no `concluded` line.
    assert_eq!(r["status"], "complete");
}

#[test]
fn op_flag_overrides_a_file_without_a_collective_name() {
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("output.txt");
    std::fs::copy(
        fixture("nccl-tests/mpi_tagged_reduce_scatter.txt"),
        &renamed,
    )
    .unwrap();
    let out = dir.path().join("r.json");
    netcheck()
        .arg("ingest")
        .arg(&renamed)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--op"));
    netcheck()
        .arg("ingest")
        .arg(&renamed)
        .args(["--op", "reduce_scatter", "--out"])
        .arg(&out)
        .assert()
        .success();
}

#[test]
fn nccl_tests_failures_mark_the_run_failed() {
    let r = ingest(&["all_gather_nccl_failure.txt"], &[]);
    assert_eq!(r["status"], "failed");
    assert_eq!(rows(&r, "all_gather", false).len(), 4);
    let errors = r["errors"].to_string();
    assert!(
        errors.contains("Test NCCL failure common.cu:1220"),
        "{errors}"
    );
}

#[test]
fn json_with_devices_and_environment() {
    let r = ingest(&["reduce_scatter_2nodes.json"], &[]);
    assert_eq!(r["world_size"], 16);
    assert_eq!(r["started_at"], "2026-11-29T18:04:11");
    assert_eq!(r["finished_at"], "2026-11-29T18:04:40");
    assert_eq!(r["environment"]["FI_PROVIDER"], "efa");
    assert!(
        r["environment"].get("HOME").is_none(),
        "only NCCL/libfabric variables are kept"
    );
    let oop = rows(&r, "reduce_scatter", false);
    assert_eq!(oop[3]["redop"], "sum");
    assert_eq!(oop[3]["count"], 65536 / 4 / 16);
    assert_eq!(r["status"], "complete");
}

#[test]
fn truncated_json_keeps_complete_results() {
    let r = ingest(&["all_gather_truncated.json"], &[]);
    assert_eq!(r["status"], "interrupted");
    assert_eq!(rows(&r, "all_gather", false).len(), 7);
    assert_eq!(rows(&r, "all_gather", true).len(), 7);
    assert!(r["errors"].to_string().contains("truncated"));
}

#[test]
fn per_iteration_statistics_are_kept() {
    let r = ingest(&["all_gather_per_iter.json"], &[]);
    let first = rows(&r, "all_gather", false)[0];
    let t = &first["time_us"];
    assert!(t["p50"].as_f64().unwrap() < t["mean"].as_f64().unwrap());
    assert!(t["p99"].as_f64().unwrap() > t["mean"].as_f64().unwrap());
    assert!(t["min"].is_number() && t["max"].is_number());
    // One listed device, but busbw = algbw/2: two ranks.
    assert_eq!(r["world_size"], 2);
}

#[test]
fn gzip_and_stdin_inputs() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("all_gather.txt.gz");
    let text = std::fs::read(fixture("nccl-tests/ag_rs_single_host.txt")).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&text).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let out = dir.path().join("r.json");
    netcheck()
        .arg("ingest")
        .arg(&gz)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    netcheck()
        .args(["ingest", "-", "--out"])
        .arg(&out)
        .write_stdin(text)
        .assert()
        .success();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(rows(&r, "reduce_scatter", false).len(), 9);
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    for (file, says) in [
        ("not_nccl_tests.txt", "no nccl-tests results found"),
        ("broken.json", "not valid JSON"),
    ] {
        netcheck()
            .arg("ingest")
            .arg(fixture(&format!("nccl-tests/{file}")))
            .arg("--out")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(file))
            .stderr(predicates::str::contains(says));
    }
    let missing = dir.path().join("results-field.json");
    std::fs::write(&missing, r#"{"version": 3, "config": {}}"#).unwrap();
    netcheck()
        .arg("ingest")
        .arg(&missing)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("results-field.json: results"));
    let bad_entry = dir.path().join("bad-entry.json");
    std::fs::write(
        &bad_entry,
        r#"{"version": 3, "results": [{"size": 1024, "count": "x", "type": "float"}], "end_time": "x"}"#,
    )
    .unwrap();
    netcheck()
        .arg("ingest")
        .arg(&bad_entry)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("results[0].count"));
    assert!(!out.exists(), "nothing written on bad input");
}
