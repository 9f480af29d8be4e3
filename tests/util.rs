//! Shared helpers for the integration tests.

use std::path::PathBuf;

/// The netcheck binary under test.
pub fn netcheck() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("netcheck").expect("binary built");
    // Keep tests independent of the developer's environment.
    cmd.env_remove("NCCL_DEBUG");
    cmd
}

/// A file under tests/fixtures.
#[allow(dead_code)]
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// A container's `args` from a rendered manifest, as strings.
#[allow(dead_code)]
pub fn container_args(container: &serde_json::Value) -> Vec<&str> {
    container["args"]
        .as_array()
        .expect("the container has args")
        .iter()
        .map(|a| a.as_str().expect("every arg is a string"))
        .collect()
}

/// A synthetic RunRecord under tests/fixtures/results.
#[allow(dead_code)]
pub fn results(name: &str) -> PathBuf {
    fixture(&format!("results/{name}"))
}

/// `netcheck gate <record> --baseline baseline.json`, both from tests/fixtures/results; the
/// caller adds the rest.
#[allow(dead_code)]
pub fn gate_against_baseline(record: &str) -> assert_cmd::Command {
    let mut cmd = netcheck();
    cmd.arg("gate")
        .arg(results(record))
        .arg("--baseline")
        .arg(results("baseline.json"));
    cmd
}

/// Rank 0's log as a launched `netcheck run` prints it: NCCL's lines (the captured
/// tests/fixtures/kube/worker-nccl.log), then `between`, then its RunRecord (worker-result.json)
/// after `NETCHECK_RESULT `, with the bandwidths scaled by `scale`.
#[allow(dead_code)]
pub fn rank0_log(scale: f64, between: &str) -> String {
    let nccl = std::fs::read_to_string(fixture("kube/worker-nccl.log")).unwrap();
    let mut record =
        netcheck::results::RunRecord::load(&fixture("kube/worker-result.json")).unwrap();
    for row in &mut record.rows {
        row.busbw_gbs = row.busbw_gbs.map(|b| b * scale);
        row.algbw_gbs = row.algbw_gbs.map(|b| b * scale);
    }
    format!(
        "{nccl}{between}NETCHECK_RESULT {}\n",
        serde_json::to_string(&record).unwrap()
    )
}

/// `netcheck ingest <fixture> --out <out>`, which must succeed; its assert, for the output.
#[allow(dead_code)]
pub fn ingest_fixture(rel: &str, out: &std::path::Path) -> assert_cmd::assert::Assert {
    netcheck()
        .arg("ingest")
        .arg(fixture(rel))
        .arg("--out")
        .arg(out)
        .assert()
        .success()
}
