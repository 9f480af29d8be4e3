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

/// `netcheck gate <record>`, the record from tests/fixtures/results; the caller adds the rest.
#[allow(dead_code)]
pub fn gate(record: &str) -> assert_cmd::Command {
    let mut cmd = netcheck();
    cmd.arg("gate").arg(results(record));
    cmd
}

/// `netcheck gate <record> --baseline baseline.json`, both from tests/fixtures/results; the
/// caller adds the rest.
#[allow(dead_code)]
pub fn gate_against_baseline(record: &str) -> assert_cmd::Command {
    let mut cmd = gate(record);
    cmd.arg("--baseline").arg(results("baseline.json"));
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

/// `netcheck ingest <input> --out <out>`; the caller adds the rest.
#[allow(dead_code)]
pub fn ingest_to(
    input: impl AsRef<std::ffi::OsStr>,
    out: impl AsRef<std::ffi::OsStr>,
) -> assert_cmd::Command {
    let mut cmd = netcheck();
    cmd.arg("ingest").arg(input).arg("--out").arg(out);
    cmd
}

/// `netcheck ingest <fixture> --out <out>`, which must succeed; its assert, for the output.
#[allow(dead_code)]
pub fn ingest_fixture(rel: &str, out: &std::path::Path) -> assert_cmd::assert::Assert {
    ingest_to(fixture(rel), out).assert().success()
}

/// The RunSpec of tests/fixtures/kube's golden manifests (`golden` in `gpu-validation`, a
/// sweep of two ops, strict transport, 16 GiB /dev/shm); a test changes what it is about with
/// `RunSpec { .., ..run_spec() }`.
#[allow(dead_code)]
pub fn run_spec() -> netcheck::launch::kube::manifest::RunSpec {
    use netcheck::launch::kube::manifest::{RunSpec, Shm};
    RunSpec {
        run: "golden".into(),
        namespace: "gpu-validation".into(),
        image: "123456789012.dkr.ecr.us-west-2.amazonaws.com/netcheck:0.1.0".into(),
        image_pull_policy: Some("IfNotPresent".into()),
        port: 29400,
        worker_args: vec![
            "--ops".into(),
            "all_gather,reduce_scatter".into(),
            "--timeout".into(),
            "5m".into(),
        ],
        fabric_check: None,
        env: vec![("NCCL_DEBUG".into(), "INFO".into())],
        tolerations: netcheck::launch::kube::nodes::default_tolerations(),
        strict_net: true,
        ipc_lock: true,
        shm: Shm::Memory { bytes: 16 << 30 },
        deadline_secs: 1620,
        ttl_secs: Some(600),
        service_account: None,
        image_opts: Default::default(),
    }
}

/// What a finished command printed on stdout.
#[allow(dead_code)]
pub fn stdout_text(done: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(done.get_output().stdout.clone()).expect("stdout is UTF-8")
}

/// What a finished command printed on stderr.
#[allow(dead_code)]
pub fn stderr_text(done: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(done.get_output().stderr.clone()).expect("stderr is UTF-8")
}
