//! `netcheck report`: every exporter's output, checked for structure, on the synthetic
//! RunRecords in tests/fixtures/results (test inputs, not measurements).

use std::path::{Path, PathBuf};

use crate::util::{fixture, netcheck, results};

fn report(args: &[&Path], extra: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = netcheck();
    cmd.arg("report");
    for a in args {
        cmd.arg(a);
    }
    cmd.arg("--out")
        .arg(dir.path())
        .args(extra)
        .assert()
        .success();
    dir
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn single_run_with_baseline_writes_every_format() {
    let dir = report(
        &[&results("healthy.json")],
        &[
            "--baseline",
            results("baseline.json").to_str().unwrap(),
            "--profile",
            "h200x2",
        ],
    );
    let p = dir.path();
    for f in [
        "bandwidth.png",
        "bandwidth.svg",
        "latency.png",
        "latency.svg",
        "summary.md",
        "report.html",
        "report.json",
    ] {
        assert!(p.join(f).is_file(), "{f} missing");
    }
    assert!(
        !p.join("heatmap-all_gather-1.png").exists(),
        "no pairs, no heatmap"
    );
    assert_eq!(
        png_size(&std::fs::read(p.join("bandwidth.png")).unwrap()),
        (1280, 720)
    );

    // SVG: an svg element whose text uses the registered family.
    let svg = std::fs::read_to_string(p.join("bandwidth.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    for text in [
        "bus bandwidth (GB/s)",
        "1K",
        "1G",
        "gate threshold: minimum busbw",
        "NVLink4 (NV18): 450 GB/s per GPU, one",
    ] {
        assert!(svg.contains(text), "SVG lacks `{text}`");
    }
    let latency = std::fs::read_to_string(p.join("latency.svg")).unwrap();
    assert!(latency.contains("µs") && latency.contains("(p99)"));

    // Markdown: small, a table per op, % of line rate and the change against the baseline.
    let md = std::fs::read_to_string(p.join("summary.md")).unwrap();
    assert!(md.len() < 1 << 20);
    assert!(md.starts_with("# netcheck report"));
    assert!(md.contains("![bandwidth](bandwidth.png)"));
    assert!(md.contains("| size | busbw out-of-place (GB/s) | busbw in-place (GB/s) | time (mean) | p50 | p99 | wrong | baseline (GB/s) | vs baseline | % of line rate |"), "{md}");
    assert!(md.contains("| 1G |"));

    // HTML: one file, images inline as data URIs, nothing fetched from elsewhere.
    let html = std::fs::read_to_string(p.join("report.html")).unwrap();
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), 2);
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    assert!(
        html.contains("NCCL_NVLS_ENABLE=0"),
        "environment in the support bundle"
    );
    let b64 = html
        .split("data:image/png;base64,")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(
        png,
        std::fs::read(p.join("bandwidth.png")).unwrap(),
        "the same picture"
    );

    // JSON: decoded with the test's own expectations of the schema.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("report.json")).unwrap()).unwrap();
    assert_eq!(v["schema"], "netcheck.report.v1");
    let run = &v["runs"][0];
    assert_eq!(run["line_rate"]["gbs"], 450.0);
    let ag = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == "all_gather" && s["placement"] == "out-of-place")
        .unwrap();
    let last = ag["points"].as_array().unwrap().last().unwrap();
    assert_eq!(last["bytes"], 1u64 << 30);
    let pct = last["pct_of_line_rate"].as_f64().unwrap();
    let busbw = last["busbw_gbs"].as_f64().unwrap();
    assert!((pct - busbw / 450.0 * 100.0).abs() < 1e-9);
    assert!(last["vs_baseline_pct"].as_f64().unwrap() < 0.0);
}

#[test]
fn pairs_give_a_heatmap_and_the_slowest_nodes() {
    let dir = report(&[&results("pairs.json")], &[]);
    let p = dir.path();
    let svg = std::fs::read_to_string(p.join("heatmap-all_gather-1.svg")).unwrap();
    assert!(svg.contains("slowest nodes"));
    assert_eq!(
        png_size(&std::fs::read(p.join("heatmap-reduce_scatter-1.png")).unwrap()),
        (1280, 720)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("report.json")).unwrap()).unwrap();
    let m = &v["runs"][0]["pair_matrices"][0];
    assert_eq!(m["nodes"].as_array().unwrap().len(), 8);
    assert_eq!(m["bytes"], 1u64 << 30);
    assert_eq!(
        m["nodes_by_busbw"][0]["node"], "gpu-node-6",
        "the slow node comes first"
    );
    assert!(
        m["cells"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["failed"] == true)
    );
    let md = std::fs::read_to_string(p.join("summary.md")).unwrap();
    assert!(md.contains("| 6 gpu-node-6 |"), "{md}");
    assert!(
        md.contains("| gpu-node-8 | fail |"),
        "node verdicts, worst first: {md}"
    );
    assert!(md.contains("| gpu-node-9 | ineligible |"), "{md}");
    assert_eq!(v["runs"][0]["node_verdicts"].as_array().unwrap().len(), 9);
    assert!(
        md.contains("26 pairs, e.g."),
        "agreeing pairs share a transport row"
    );
    let tcp = m["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["nodes"][0] == "gpu-node-1" && c["nodes"][1] == "gpu-node-8")
        .unwrap();
    assert!(
        tcp["failed"] == true && tcp["busbw_gbs"].as_f64().unwrap() < 10.0,
        "measured but failed: {tcp}"
    );
    let html = std::fs::read_to_string(p.join("report.html")).unwrap();
    assert_eq!(html.matches("data:image/png;base64,").count(), 4);
}

#[test]
fn several_runs_share_one_plot_and_the_line_rate_comes_from_the_instance_type() {
    let dir = report(
        &[&results("healthy.json"), &results("socket-fallback.json")],
        &[],
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    // socket-fallback.json's hosts are p5.48xlarge: the bundled profile gives 32×100 Gb/s.
    assert_eq!(v["runs"][1]["line_rate"]["gbs"], 400.0);
    assert_eq!(
        v["runs"][0]["line_rate"],
        serde_json::Value::Null,
        "no hardware known"
    );
    let svg = std::fs::read_to_string(dir.path().join("bandwidth.svg")).unwrap();
    // One legend entry per run and op (long labels wrap onto a second line).
    assert_eq!(
        svg.matches("all_gather, out-of-place").count(),
        2,
        "one line per run and op"
    );
    assert!(svg.contains("EFA line rate: 32×100 Gb/s"));
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.contains("**yes**"), "socket fallback stands out");

    // Alone, the socket run peaks at ~1% of the line rate: the ceiling is named, not drawn.
    let alone = report(&[&results("socket-fallback.json")], &[]);
    let svg = std::fs::read_to_string(alone.path().join("bandwidth.svg")).unwrap();
    assert!(
        svg.contains("off the chart"),
        "a far-away ceiling is named, not drawn"
    );
}

#[test]
fn bad_input_exits_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    for (file, says) in [
        ("partial.json", "partial.json: not valid JSON"),
        ("other-schema.json", "other-schema.json: schema"),
        ("empty.json", "empty.json: rows"),
    ] {
        netcheck()
            .arg("report")
            .arg(results("healthy.json"))
            .arg(results(file))
            .arg("--out")
            .arg(dir.path())
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
    netcheck()
        .arg("report")
        .arg(fixture("nccl-tests/reduce_scatter_2nodes.json"))
        .arg("--out")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("netcheck ingest"));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn multi_node_runs_list_ranks_their_place_and_links() {
    // The real logs of `run --simulate-nodes 2 --gpus-per-node 2` with the ranks as that run
    // placed them; one row so the record is a valid result.
    let logs: Vec<PathBuf> = (0..4)
        .map(|r| fixture(&format!("logs/h200/sim-2x2/rank-{r}.log")))
        .collect();
    let analysis =
        netcheck::logscan::analyze_paths(&logs, &netcheck::logscan::Options::default()).unwrap();
    let mut record = netcheck::results::RunRecord::new("run");
    record.world_size = Some(4);
    record.analysis = Some(analysis);
    for (rank, pid) in [783u32, 789, 792, 795].into_iter().enumerate() {
        let rank = rank as u32;
        record.ranks.push(
            serde_json::from_value(serde_json::json!({
                "rank": rank, "host": "vm", "gpu": rank % 2, "pid": pid,
                "node": rank / 2, "local_rank": rank % 2
            }))
            .unwrap(),
        );
    }
    record.rows.push(
        serde_json::from_value(serde_json::json!({
            "op": "all_gather", "dtype": "float32", "bytes": 16777216, "count": 1048576,
            "in_place": false, "time_us": {"mean": 3687.3}, "algbw_gbs": 4.55, "busbw_gbs": 3.41,
            "wrong": 0
        }))
        .unwrap(),
    );
    let input = tempfile::tempdir().unwrap();
    let path = input.path().join("results.json");
    record.save(&path).unwrap();
    let dir = report(&[&path], &[]);
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.contains("## Ranks and links"), "{md}");
    assert!(
        md.contains("| 1 | vm | 0 | 1 | 1 | 1 of 2 | NET/Socket with 2; P2P/CUMEM with 0 |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("Ranks and links"));
}

#[test]
fn single_node_runs_have_no_rank_table() {
    let dir = report(&[&results("healthy.json")], &[]);
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(!md.contains("Ranks and links"));
}

#[test]
fn one_rank_runs_draw_time_not_zero_bandwidth() {
    // `netcheck run` on a one-GPU H200 host (2026-12-01): every bus bandwidth is 0.
    let dir = report(&[&results("one-gpu.json")], &[]);
    assert!(
        !dir.path().join("bandwidth.png").exists(),
        "a plot of zeros"
    );
    assert!(dir.path().join("latency.png").exists());
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(!md.contains("bandwidth.png"), "{md}");
    assert!(
        md.contains("one rank, so NCCL moved nothing between GPUs"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("one rank, so NCCL moved nothing"));
}

#[test]
fn wording_units_nodes_and_failed_pairs() {
    let dir = report(&[&results("pairs.json")], &[]);
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    // Eight nodes were measured in pairs (and one left out): not "2 nodes".
    assert!(md.contains("| 9, 2 per pair |"), "{md}");
    assert!(md.contains("busbw out-of-place (GB/s)"), "{md}");
    assert!(md.contains("pairs)"), "{md}");
    // The timed-out pair gpu-node-2+gpu-node-7 is not a 0 GB/s measurement.
    assert!(md.contains("(did not pass)"), "{md}");
    assert!(
        !md.contains("(0 GB/s)") && !md.contains("(0.00 GB/s)"),
        "{md}"
    );
}

#[test]
fn repeated_sizes_of_one_run_are_samples_not_pairs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results("healthy.json")).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap().clone();
    v["rows"].as_array_mut().unwrap().extend(rows);
    let twice = tmp.path().join("twice.json");
    std::fs::write(&twice, v.to_string()).unwrap();
    let dir = report(&[&twice], &[]);
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.contains("(median over up to 2 samples)"), "{md}");
    assert!(!md.contains("pairs)"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("bandwidth.svg")).unwrap();
    assert!(svg.contains("2 samples"), "the legend says samples too");
}

#[test]
fn a_reused_out_folder_keeps_no_stale_plots() {
    let dir = report(&[&results("pairs.json")], &[]);
    assert!(dir.path().join("heatmap-all_gather-1.png").exists());
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    netcheck()
        .arg("report")
        .arg(results("healthy.json"))
        .arg("--out")
        .arg(dir.path())
        .assert()
        .success();
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("heatmap-")),
        "{names:?}"
    );
    assert!(names.contains(&"bandwidth.png".to_string()), "{names:?}");
    assert!(
        names.contains(&"notes.txt".to_string()),
        "other files stay: {names:?}"
    );
}
