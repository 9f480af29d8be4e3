//! `netcheck ingest`: nccl-tests text and -J JSON → results.json (fixtures written from the
//! format, see tests/fixtures/nccl-tests/README.md).

use predicates::prelude::PredicateBooleanExt;
use serde_json::Value;

use crate::util::{fixture, ingest_fixture, ingest_to, netcheck};

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
    ingest_to(fixture("nccl-tests/all_gather_nccl_failure.txt"), &out)
        .args(["--expect", "efa"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("FAIL").and(predicates::str::contains("expected efa")));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        r["analysis"]["verdict"], "fail",
        "efa expected, not shown in the log"
    );
    ingest_to(fixture("nccl-tests/all_reduce_2nodes_efa.txt"), &out)
        .args(["--expect", "efa"])
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
fn two_collectives_in_one_output_are_two_runs() {
    let runs = ingest(&["ag_rs_single_host.txt"], &[]);
    let runs = runs.as_array().unwrap();
    assert_eq!(rows(&runs[0], "all_gather", false).len(), 9);
    assert_eq!(rows(&runs[1], "reduce_scatter", true).len(), 9);
    for r in runs {
        assert_eq!(r["world_size"], 4);
        assert_eq!(r["hosts"][0]["gpus"][3]["name"], "NVIDIA L4");
        assert_eq!(r["status"], "complete");
        assert_eq!(r["ingest"]["collective_basis"][0], "collective-line");
    }
}

#[test]
fn unrelated_files_are_several_runs() {
    let runs = ingest(
        &["reduce_scatter_2nodes.json", "ag_rs_single_host.txt"],
        &["--label", "node group 7"],
    );
    let runs = runs.as_array().expect("several runs: a list of records");
    // The JSON is one run; the text holds two (all_gather, then reduce_scatter).
    assert_eq!(runs.len(), 3);
    assert_eq!(rows(&runs[0], "reduce_scatter", false).len(), 11);
    assert_eq!(runs[0]["world_size"], 16);
    assert_eq!(runs[0]["hosts"].as_array().unwrap().len(), 2);
    assert_eq!(rows(&runs[1], "all_gather", false).len(), 9);
    assert_eq!(runs[1]["world_size"], 4, "not the 16 of the other file");
    assert_eq!(runs[1]["hosts"].as_array().unwrap().len(), 1);
    assert!(
        runs[1]["label"]
            .as_str()
            .unwrap()
            .starts_with("node group 7 (ag_rs_single_host.txt run 1: all_gather")
    );
}

#[test]
fn report_and_gate_read_every_run_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    ingest_fixture("nccl-tests/two_runs_terminal.log", &out);
    let junit = dir.path().join("junit.xml");
    netcheck()
        .arg("gate")
        .arg(&out)
        .arg("--junit")
        .arg(&junit)
        .assert()
        .success()
        .stderr(predicates::str::contains("PASS"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("run 1: broadcast") && xml.contains("run 2: alltoall"),
        "{xml}"
    );
    netcheck()
        .arg("report")
        .arg(&out)
        .arg("--out")
        .arg(dir.path().join("report"))
        .assert()
        .success();
    let summary = std::fs::read_to_string(dir.path().join("report/summary.md")).unwrap();
    assert!(summary.contains("run 2: alltoall"), "{summary}");
    // Runs of different collectives make one baseline; runs measuring the same points do not.
    netcheck()
        .arg("gate")
        .arg(&out)
        .arg("--baseline")
        .arg(&out)
        .assert()
        .success();
    let twice = dir.path().join("twice.json");
    let log = fixture("nccl-tests/two_runs_terminal.log");
    // The same runs in two files (the same file named twice is read once).
    let copy = dir.path().join("copy.log");
    std::fs::copy(&log, &copy).unwrap();
    netcheck()
        .arg("ingest")
        .arg(&log)
        .arg(&copy)
        .arg("--out")
        .arg(&twice)
        .assert()
        .success();
    netcheck()
        .arg("gate")
        .arg(&out)
        .arg("--baseline")
        .arg(&twice)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("which one is the baseline"));
}

#[test]
fn truncated_text_keeps_complete_rows_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let assert = ingest_fixture("nccl-tests/all_gather_truncated.txt", &out);
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
fn a_file_without_a_collective_name_is_read_from_its_table_and_op_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("output.txt");
    std::fs::copy(
        fixture("nccl-tests/mpi_tagged_reduce_scatter.txt"),
        &renamed,
    )
    .unwrap();
    let out = dir.path().join("r.json");
    // redop sum, root -1, count = 1/2 of the buffer, busbw = algbw/2: reduce_scatter.
    ingest_to(&renamed, &out).assert().success();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(r["ingest"]["collective"], "reduce_scatter");
    assert_eq!(r["ingest"]["collective_basis"][0], "table");
    ingest_to(&renamed, &out)
        .args(["--op", "all_reduce"])
        .assert()
        .success()
        .stderr(predicates::str::contains("does not look like all_reduce"));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(rows(&r, "all_reduce", false).len(), 5);
    assert_eq!(r["ingest"]["collective_basis"][0], "--op");
}

#[test]
fn the_2018_layout_is_timed_in_milliseconds() {
    let r = ingest(&["v1_2018_all_reduce.txt"], &[]);
    let last = *rows(&r, "all_reduce", false).last().unwrap();
    assert_eq!(last["bytes"], 1048576);
    assert!((last["time_us"]["mean"].as_f64().unwrap() - 276.0).abs() < 1e-6);
    assert_eq!(last["wrong"], Value::Null, "res N/A: not checked");
    assert_eq!(r["ingest"]["collective_basis"][0], "command-line");
    assert_eq!(r["nccl"]["version"], "2.3");
    assert_eq!(r["world_size"], 2);
    assert_eq!(
        r["ranks"][1]["pid"],
        Value::Null,
        "2018 rank lines have no Pid"
    );
}

#[test]
fn pre_2_13_all_gather_behind_srun_labels_is_told_by_its_columns() {
    let r = ingest(&["pre213_srun.txt"], &[]);
    assert_eq!(r["ingest"]["collective"], "all_gather");
    assert_eq!(
        r["ingest"]["collective_basis"],
        serde_json::json!(["table"])
    );
    assert_eq!(r["world_size"], 4);
    assert_eq!(r["hosts"].as_array().unwrap().len(), 2);
    assert_eq!(rows(&r, "all_gather", true).len(), 4);
    // `error` holds a maximum error, not a count of wrong elements.
    assert_eq!(rows(&r, "all_gather", false)[0]["wrong"], Value::Null);
    assert_eq!(r["ingest"]["avg_busbw_gbs"], 30.5);
    assert_eq!(r["ingest"]["out_of_bounds"], 0);
}

#[test]
fn a_docs_page_with_stripped_hashes_and_no_device_list() {
    let r = ingest(&["docs_all_reduce.md"], &[]);
    assert_eq!(r["ingest"]["collective"], "all_reduce");
    // busbw/algbw = 2(n-1)/n = 1.875: 16 ranks, though no rank is listed.
    assert_eq!(r["world_size"], 16);
    assert_eq!(r["ingest"]["ranks_basis"], "table");
    assert_eq!(r["hosts"].as_array().unwrap().len(), 0);
    assert_eq!(r["started_at"], Value::Null, "never the time of ingest");
    assert_eq!(r["status"], "complete");
}

#[test]
fn a_terminal_log_with_two_runs_and_a_split_row() {
    let runs = ingest(&["two_runs_terminal.log"], &[]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["ingest"]["collective"], "broadcast");
    assert_eq!(runs[1]["ingest"]["collective"], "alltoall");
    assert_eq!(runs[1]["ingest"]["run_in_file"], 2);
    // The 16 MiB row was cut by an NCCL INFO line and continued on the next line.
    let a2a = rows(&runs[1], "alltoall", false);
    assert_eq!(a2a.len(), 4);
    assert_eq!(a2a[2]["bytes"], 16777216);
    assert_eq!(a2a[2]["busbw_gbs"], 11.15);
    assert_eq!(rows(&runs[1], "alltoall", true)[2]["wrong"], Value::Null);
}

#[test]
fn per_iteration_columns_and_an_empty_redop() {
    let r = ingest(&["per_iter_gather_2_19.txt"], &[]);
    let first = rows(&r, "gather", false)[0];
    let t = &first["time_us"];
    assert!(t["min"].as_f64().unwrap() < t["mean"].as_f64().unwrap());
    assert!(t["p99"].as_f64().unwrap() > t["mean"].as_f64().unwrap());
    assert_eq!(r["ingest"]["nccl_tests_version"], "2.19.6");
    assert_eq!(r["nccl"]["version"], "2.28.9");
    let r = ingest(&["hypercube_empty_redop.txt"], &[]);
    assert_eq!(r["ingest"]["collective"], "hypercube");
    assert_eq!(rows(&r, "hypercube", false).len(), 2);
    // Before 2.13 (no root column): 11 fields under a 12-column header, the redop empty.
    let r = ingest(&["sendrecv_pre213_empty_redop.txt"], &["--op", "sendrecv"]);
    assert_eq!(r["ingest"]["collective"], "sendrecv");
    let oop = rows(&r, "sendrecv", false);
    assert_eq!(oop.len(), 3, "{r}");
    assert_eq!(oop[2]["busbw_gbs"], 21.76);
    assert_eq!(rows(&r, "sendrecv", true).len(), 3);
}

#[test]
fn a_failed_run_without_rows_is_a_failed_record_and_a_template_is_bad_input() {
    let r = ingest(&["failed_before_rows.txt"], &[]);
    assert_eq!(r["status"], "failed");
    assert_eq!(r["ingest"]["collective"], "all_gather");
    assert_eq!(r["ingest"]["collective_basis"][0], "failure-location");
    assert!(
        r["errors"][0]
            .as_str()
            .unwrap()
            .contains("Test NCCL failure")
    );
    let dir = tempfile::tempdir().unwrap();
    ingest_to(
        fixture("nccl-tests/template_placeholders.txt"),
        dir.path().join("r.json"),
    )
    .assert()
    .code(2)
    .stderr(predicates::str::contains("placeholders such as `XXX.XX`"));
}

mod props {
    use netcheck::ingest::{Input, ingest};
    use proptest::prelude::*;

    /// Pieces of nccl-tests lines and their wrappers, cut at odd places.
    const PIECES: &[&str] = &[
        "# ",
        "#",
        " 0: ",
        "[1,0]<stdout>:",
        "run(), common.cu:967, ",
        "host-1: ",
        "    ",
        "nThread 1 nGpus 1 minBytes 8 maxBytes 1024 ",
        "size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
        "bytes N type op time algbw busbw res",
        "size count type time algbw busbw error",
        "   1024   256  float  sum  -1  ",
        "  0  0  float ",
        "none",
        "-1",
        "N/A",
        "XXX.XX",
        "12.5 ",
        "0.00 ",
        "1e+00 ",
        "18446744073709551616 ",
        "-3 ",
        "Rank  0 Group  0 Pid 1 on h device  0 [0x01] GPU",
        "Collective test starting: ",
        "all_reduce_perf",
        "scatter",
        "Out of bounds values : ",
        "Avg bus bandwidth : ",
        "Test NCCL failure x.cu:1",
        "NCCL INFO ",
        "nccl-tests version 2.19.6 nccl-library=",
        "{",
        "\"results\": [",
        "\n",
        "\r\n",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Arbitrary bytes: parsed or refused as bad input, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
            let input = Input { origin: "x".into(), text: String::from_utf8_lossy(&bytes).into() };
            if let Err(e) = ingest(&[input], None, None) {
                prop_assert_eq!(e.exit_code(), netcheck::exit::BAD_INPUT);
            }
        }

        /// Spliced nccl-tests pieces reach the table and collective rules far more often.
        #[test]
        fn spliced_nccl_tests_text_never_panics(
            parts in prop::collection::vec(prop::sample::select(PIECES.to_vec()), 0..120),
            op in prop::option::of(prop::sample::select(vec!["all_gather", "hypercube", "nope"])),
        ) {
            let input = Input { origin: "y.txt".into(), text: parts.concat() };
            if let Err(e) = ingest(&[input], op, None) {
                prop_assert_eq!(e.exit_code(), netcheck::exit::BAD_INPUT);
            }
        }
    }
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
    ingest_to(&gz, &out).assert().success();
    netcheck()
        .args(["ingest", "-", "--out"])
        .arg(&out)
        .write_stdin(text)
        .assert()
        .success();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(rows(&r[1], "reduce_scatter", false).len(), 9);
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    for (file, says) in [
        ("not_nccl_tests.txt", "no nccl-tests results found"),
        ("broken.json", "not valid JSON"),
    ] {
        ingest_to(fixture(&format!("nccl-tests/{file}")), &out)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(file))
            .stderr(predicates::str::contains(says));
    }
    let missing = dir.path().join("results-field.json");
    std::fs::write(&missing, r#"{"version": 3, "config": {}}"#).unwrap();
    ingest_to(&missing, &out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("results-field.json: results"));
    let bad_entry = dir.path().join("bad-entry.json");
    std::fs::write(
        &bad_entry,
        r#"{"version": 3, "results": [{"size": 1024, "count": "x", "type": "float"}], "end_time": "x"}"#,
    )
    .unwrap();
    ingest_to(&bad_entry, &out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("results[0].count"));
    assert!(!out.exists(), "nothing written on bad input");
}

#[test]
fn unknown_wrappers_and_the_times_the_file_prints() {
    // docker compose's `name  | ` and `kubectl logs --timestamps`, and nccl-tests' `-t` column.
    let text = "\
worker-1  | # nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
worker-1  | #  Rank  0 Group  0 Pid   1000 on      node1 device  0 [0000:01:00] NVIDIA H100
worker-1  | #  Rank  1 Group  0 Pid   1001 on      node1 device  1 [0000:02:00] NVIDIA H100
worker-1  | #       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong      timestamp
worker-1  |      1048576        262144     float     sum      -1    20.00   52.43   52.43       0    20.00   52.43   52.43       0  2026-11-30 10:00:02
worker-1  |      4194304       1048576     float     sum      -1    40.00  104.86  104.86       0    40.00  104.86  104.86       0  2026-11-30 10:00:03
worker-1  | # Out of bounds values : 0 OK
";
    let stamped: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("2026-12-01T08:00:0{i}.5Z {}\n", &l[12..]))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for (name, body, started) in [
        ("compose.txt", text.to_string(), "2026-11-30T10:00:02"),
        ("kubectl.txt", stamped, "2026-12-01T08:00:00.5Z"),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, body).unwrap();
        let out = dir.path().join("r.json");
        ingest_to(&file, &out).assert().success();
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(rows(&r, "all_reduce", true).len(), 2, "{name}");
        assert_eq!(r["world_size"], 2, "{name}");
        assert_eq!(r["started_at"], started, "{name}");
    }
}

#[test]
fn a_run_that_failed_before_measuring_fails_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    ingest_fixture("nccl-tests/failed_before_rows.txt", &out);
    netcheck()
        .arg("gate")
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "Test NCCL failure all_gather.cu:52",
        ));
}

/// What a launcher, collector or docs page puts around each line changes nothing: every own
/// fixture, wrapped line by line, gives the same runs.
#[test]
fn wrappers_around_every_line_change_nothing() {
    use netcheck::ingest::{Input, ingest};
    let key = |origin: &str, text: String| {
        let records = ingest(
            &[Input {
                origin: origin.into(),
                text,
            }],
            None,
            None,
        )
        .unwrap();
        records
            .iter()
            .map(|r| {
                let i = r.ingest.as_ref().unwrap();
                (i.collective.clone(), r.world_size, r.rows.len(), r.status)
            })
            .collect::<Vec<_>>()
    };
    let wrappers = [
        " 3: ",
        "[1,0]<stdout>:",
        "gpu-node-7: ",
        "[pod/nccl-0/worker] ",
        "2026-12-01T08:00:00.123Z ",
        "> ",
        "[0] ",
        "worker-1  | ",
        "(RayTrainWorker pid=12, ip=10.0.0.1) ",
        "    ",
    ];
    for file in [
        "two_runs_terminal.log",
        "docs_all_reduce.md",
        "v1_2018_all_reduce.txt",
        "per_iter_gather_2_19.txt",
        "hypercube_empty_redop.txt",
        "all_reduce_2nodes_efa.txt",
        "ag_rs_single_host.txt",
    ] {
        let text = std::fs::read_to_string(fixture(&format!("nccl-tests/{file}"))).unwrap();
        // The names in the file name stay out of it.
        let plain = key("x.txt", text.clone());
        assert!(!plain.is_empty());
        for w in wrappers {
            let wrapped: String = text.lines().map(|l| format!("{w}{l}\n")).collect();
            assert_eq!(key("x.txt", wrapped), plain, "{file} behind `{w}`");
        }
        let crlf = text.replace('\n', "\r\n");
        assert_eq!(key("x.txt", crlf), plain, "{file} with CRLF");
    }
}

/// Outputs pasted one after the other into one log are read as the runs each holds alone.
#[test]
fn concatenated_outputs_are_the_runs_of_each() {
    use netcheck::ingest::{Input, ingest};
    let files = [
        "failed_before_rows.txt",
        "docs_all_reduce.md",
        "two_runs_terminal.log",
        "pre213_srun.txt",
        "v1_2018_all_reduce.txt",
        "all_gather_nccl_failure.txt",
        "hypercube_empty_redop.txt",
        "ag_rs_single_host.txt",
        "per_iter_gather_2_19.txt",
    ];
    let runs = |text: String| {
        ingest(
            &[Input {
                origin: "x.txt".into(),
                text,
            }],
            None,
            None,
        )
        .unwrap()
        .iter()
        .map(|r| {
            let i = r.ingest.as_ref().unwrap();
            (i.collective.clone(), r.world_size, r.rows.len(), r.status)
        })
        .collect::<Vec<_>>()
    };
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(fixture(&format!("nccl-tests/{f}"))).unwrap())
        .collect();
    let each: Vec<_> = texts.iter().flat_map(|t| runs(t.clone())).collect();
    assert_eq!(runs(texts.join("\n")), each);
}
