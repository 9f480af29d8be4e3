//! `netcheck gate`: exit codes, and the JUnit, Prometheus, Markdown and JSON outputs, on the
//! synthetic RunRecords in tests/fixtures/results (test inputs, not measurements).

use std::collections::{BTreeSet, HashMap};

use predicates::prelude::PredicateBooleanExt;

use crate::util::{gate, gate_against_baseline, ingest_fixture, netcheck, results, stdout_text};

#[test]
fn healthy_run_within_the_baseline_passes() {
    gate_against_baseline("healthy.json")
        .args(["--profile", "h200x2"])
        .assert()
        .code(0)
        .stderr(predicates::str::contains("gate: PASS"));
}

#[test]
fn regression_fails_with_what_and_by_how_much() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let prom = dir.path().join("netcheck.prom");
    let md = dir.path().join("gate.md");
    let json = dir.path().join("gate.json");
    gate_against_baseline("regressed.json")
        .args(["--profile", "h200x2", "--junit"])
        .arg(&junit)
        .arg("--prom")
        .arg(&prom)
        .arg("--markdown")
        .arg(&md)
        .arg("--json")
        .arg(&json)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("below the baseline's"));

    // JUnit: well-formed, a testcase per op×size and per expectation, counts that add up.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let cases: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let failed: Vec<_> = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
        .collect();
    assert_eq!(
        root.attribute("tests"),
        Some(cases.len().to_string().as_str())
    );
    assert_eq!(
        root.attribute("failures"),
        Some(failed.len().to_string().as_str())
    );
    let names: BTreeSet<(String, String)> = cases
        .iter()
        .map(|c| {
            (
                c.attribute("classname").unwrap().into(),
                c.attribute("name").unwrap().into(),
            )
        })
        .collect();
    assert_eq!(names.len(), cases.len(), "testcase names are unique");
    // 2 ops × 21 sizes, and the expectations.
    let curve = names
        .iter()
        .filter(|(c, _)| c.starts_with("netcheck.curve."))
        .count();
    assert_eq!(curve, 42);
    for expectation in ["run status", "transport", "correctness"] {
        assert!(
            names.contains(&("netcheck.expect".into(), expectation.into())),
            "{expectation}"
        );
    }
    let at_64m = cases
        .iter()
        .find(|c| {
            c.attribute("classname") == Some("netcheck.curve.all_gather")
                && c.attribute("name") == Some("float32 64M")
        })
        .unwrap();
    let failure = at_64m
        .children()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    let text = failure.text().unwrap();
    assert!(text.contains("3 wrong elements (allowed 0)"), "{text}");
    assert!(
        text.contains("% below the 187 GB/s minimum (threshold[0])"),
        "{text}"
    );
    assert!(text.contains("% below the baseline's"), "{text}");
    assert!(failure.attribute("message").is_some_and(|m| !m.is_empty()));

    check_prometheus_textfile(&std::fs::read_to_string(&prom).unwrap());
    let prom = std::fs::read_to_string(&prom).unwrap();
    assert!(
        prom.contains(
            "netcheck_gate_passed{run=\"SYNTHETIC TEST INPUT: 2x H200 NVLink, regressed\"} 0"
        ),
        "{prom}"
    );

    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.starts_with("# netcheck gate: FAIL"), "{md}");
    assert!(
        md.contains("| curve.all_gather | float32 64M | correctness |"),
        "{md}"
    );
    assert!(md.len() < 1 << 20);

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "netcheck.gate.v1");
    assert_eq!(v["verdict"], "fail");
    assert_eq!(v["failed"].as_u64().unwrap() as usize, failed.len());
}

#[test]
fn socket_fallback_fails_the_transport_expectation() {
    gate("socket-fallback.json")
        .args(["--expect", "efa"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "inter-node traffic used socket; expected efa",
        ))
        .stderr(predicates::str::contains("fell back to TCP sockets"));
}

#[test]
fn failed_pair_fails_and_markdown_goes_to_stdout() {
    let md = stdout_text(
        &gate("pairs.json")
            .args(["--markdown", "-"])
            .assert()
            .code(1),
    );
    assert!(md.contains("pair gpu-node-2+gpu-node-7"), "{md}");
    assert!(md.contains("timeout"), "{md}");
    assert!(
        md.contains("| expect | node gpu-node-8 | pair | fail: failed with gpu-node-1"),
        "launch's node verdicts are gated: {md}"
    );
    assert!(md.contains("| expect | pair gpu-node-1+gpu-node-8 transport | transport | NCCL fell back to TCP sockets"), "{md}");
}

/// assert_cmd's failure message names the command line, so each case below is named.
#[test]
fn bad_input_exits_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    std::fs::write(
        &config,
        "[[threshold]]\nop = \"all_gather\"\nmin_busbw_gbs = 1.0\nlatency_stat = \"p42\"\n",
    )
    .unwrap();
    let flag = |flag: &str, path: &std::path::Path| vec![flag.into(), path.display().to_string()];
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        ("partial.json", vec![], "partial.json: not valid JSON"),
        ("other-schema.json", vec![], "other-schema.json: schema"),
        ("empty.json", vec![], "empty.json: rows"),
        (
            "healthy.json",
            flag("--baseline", &results("empty.json")),
            "empty.json: rows",
        ),
        (
            "healthy.json",
            flag("--config", &config),
            "threshold[0].latency_stat",
        ),
        (
            "healthy.json",
            [
                flag("--baseline", &results("baseline.json")),
                vec!["--tolerance".into(), "150".into()],
            ]
            .concat(),
            "150 is out of range; allowed: 0 to below 100",
        ),
        (
            "healthy.json",
            vec!["--profile".into(), "p9.huge".into()],
            "p5.48xlarge",
        ),
    ];
    for (record, args, says) in cases {
        gate(record)
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
}

#[test]
fn ingested_nccl_tests_output_can_be_gated_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("r.json");
    ingest_fixture("nccl-tests/all_gather_truncated.txt", &r);
    // The truncated sweep must not pass.
    netcheck()
        .arg("gate")
        .arg(&r)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("ended early"));
}

/// The text exposition format: HELP/TYPE once per family before its samples, samples of a
/// family together, valid names and label syntax, numeric values, no duplicate series.
fn check_prometheus_textfile(text: &str) {
    let sample = regex::Regex::new(
        r#"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*)?\})? (-?[0-9.]+(?:e[+-]?[0-9]+)?|NaN|[+-]Inf)$"#,
    )
    .unwrap();
    let mut typed: HashMap<String, usize> = HashMap::new();
    let mut finished: BTreeSet<String> = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut series = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert_eq!(rest.split(' ').nth(1), Some("gauge"), "{line}");
            assert!(
                typed.insert(name.clone(), 0).is_none(),
                "TYPE twice: {line}"
            );
            if let Some(prev) = current.replace(name) {
                finished.insert(prev);
            }
        } else if line.starts_with("# HELP ") {
            continue;
        } else {
            let c = sample
                .captures(line)
                .unwrap_or_else(|| panic!("bad sample line: {line}"));
            let name = c[1].to_string();
            assert_eq!(
                current.as_deref(),
                Some(name.as_str()),
                "sample outside its family: {line}"
            );
            assert!(!finished.contains(&name));
            *typed.get_mut(&name).unwrap() += 1;
            assert!(
                series.insert(format!("{}{}", &c[1], c.get(2).map_or("", |m| m.as_str()))),
                "duplicate series: {line}"
            );
        }
    }
    assert!(typed["netcheck_busbw_gbytes_per_second"] > 0);
}

#[test]
fn a_gate_without_a_bandwidth_criterion_says_what_it_did_not_judge() {
    gate("healthy.json")
        .assert()
        .code(0)
        .stderr(predicates::str::contains("gate: judged: "))
        .stderr(predicates::str::contains("correctness"))
        .stderr(predicates::str::contains("not judged: bandwidth"))
        .stderr(predicates::str::contains("baseline (no --baseline)"))
        .stderr(predicates::str::contains("notice: no bandwidth criterion"));
    // With thresholds, the notice goes.
    gate("healthy.json")
        .args(["--profile", "h200x2"])
        .assert()
        .code(0)
        .stderr(predicates::str::contains("notice").not());
}

#[test]
fn require_bandwidth_fails_a_gate_that_judged_no_bandwidth() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    gate("healthy.json")
        .arg("--require-bandwidth")
        .arg("--junit")
        .arg(&junit)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("nothing judged the bandwidth"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("bandwidth criterion"), "{xml}");
    for extra in [
        vec!["--profile".to_string(), "h200x2".to_string()],
        vec![
            "--baseline".to_string(),
            results("baseline.json").display().to_string(),
        ],
    ] {
        gate("healthy.json")
            .arg("--require-bandwidth")
            .args(&extra)
            .assert()
            .code(0);
    }
}

#[test]
fn markdown_names_a_tolerance_only_with_a_baseline() {
    let without = stdout_text(
        &gate("healthy.json")
            .args(["--profile", "h200x2", "--markdown", "-"])
            .assert()
            .code(0),
    );
    assert!(!without.contains("tolerance"), "{without}");
    assert!(without.contains("not judged: baseline"), "{without}");
    let with = stdout_text(
        &gate_against_baseline("healthy.json")
            .args(["--profile", "h200x2", "--markdown", "-"])
            .assert()
            .code(0),
    );
    assert!(with.contains("baseline tolerance 10%"), "{with}");
}

#[test]
fn baseline_flags_without_a_baseline_are_usage_errors() {
    for flags in [["--baseline-from", "1M"], ["--tolerance", "5"]] {
        gate("healthy.json")
            .args(flags)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("--baseline"));
    }
    netcheck()
        .arg("report")
        .arg(results("healthy.json"))
        .args(["--out", "unused", "--tolerance", "5"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--baseline"));
}

#[test]
fn thresholds_that_cannot_fail_or_always_fail_are_rejected_by_field() {
    let dir = tempfile::tempdir().unwrap();
    for (value, why) in [
        ("-5", "can never fail"),
        ("nan", "compares as false"),
        ("inf", "always fails"),
    ] {
        let config = dir.path().join("bad.toml");
        std::fs::write(&config, format!("[[threshold]]\nmin_busbw_gbs = {value}\n")).unwrap();
        gate("healthy.json")
            .arg("--config")
            .arg(&config)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("threshold[0].min_busbw_gbs"))
            .stderr(predicates::str::contains(why));
    }
}

#[test]
fn prometheus_has_a_metric_per_node_and_times_in_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("netcheck.prom");
    gate("pairs.json").arg("--prom").arg(&prom).assert().code(1); // gpu-node-8 failed
    let text = std::fs::read_to_string(&prom).unwrap();
    check_prometheus_textfile(&text);
    assert!(
        text.contains(
            "netcheck_node_passed{run=\"SYNTHETIC TEST INPUT: 8-node ring\",node=\"gpu-node-8\",verdict=\"fail\"} 0"
        ),
        "{text}"
    );
    assert!(
        text.contains("node=\"gpu-node-1\",verdict=\"pass\"} 1"),
        "{text}"
    );
    assert!(!text.contains("microseconds"), "{text}");
    // 1 GiB all-gather of the first pair: 5461.865 µs mean, written as seconds.
    assert!(
        text.lines().any(|l| l.starts_with("netcheck_time_seconds{")
            && l.contains("group=\"gpu-node-1+gpu-node-2\"")
            && l.contains("bytes=\"1073741824\"")
            && l.contains("placement=\"out_of_place\"")
            && l.contains("stat=\"mean\"")
            && l.ends_with(" 0.005461865")),
        "{text}"
    );
}

#[test]
fn format_json_prints_the_verdict_like_the_other_commands() {
    let out = gate("healthy.json")
        .args(["--profile", "h200x2", "--format", "json"])
        .assert()
        .code(0);
    let v: serde_json::Value =
        serde_json::from_str(&stdout_text(&out)).expect("stdout is the verdict");
    assert_eq!(v["schema"], "netcheck.gate.v1");
    assert_eq!(v["verdict"], "pass");
    gate("healthy.json")
        .args(["--format", "json", "--markdown", "-"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--markdown, --json"));
}
