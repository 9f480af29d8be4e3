//! The command-line contract: every command exists, help works, exit codes are documented.

use predicates::prelude::PredicateBooleanExt;

use crate::util::{netcheck, stderr_text, stdout_text};

#[test]
fn help_lists_every_command_of_the_contract() {
    let help = stdout_text(&netcheck().arg("--help").assert().success());
    for cmd in [
        "analyze", "run", "ingest", "report", "gate", "launch", "doctor", "fabric", "check",
    ] {
        assert!(help.contains(cmd), "--help lacks `{cmd}`:\n{help}");
    }
    assert!(!help.contains("worker"), "the worker command is internal");
    assert!(
        help.contains("124 timeout"),
        "exit codes are documented in --help"
    );
}

#[test]
fn unknown_flag_is_a_usage_error() {
    netcheck()
        .args(["analyze", "--no-such-flag"])
        .assert()
        .code(2);
}

#[test]
fn run_without_a_gpu_exits_3_and_says_what_to_install() {
    if netcheck::engine::gpu::driver_present() {
        eprintln!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let out = netcheck()
        .args(["run", "--out"])
        .arg(tempfile::tempdir().unwrap().path())
        .assert()
        .code(3);
    let err = stderr_text(&out);
    assert!(
        err.contains("no NVIDIA driver") && err.contains("hint:"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn run_rejects_a_bad_config_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "[sweep]\nops = [\"all_gather\"]\niters = 0\n").unwrap();
    let out = netcheck()
        .args(["run", "--config"])
        .arg(&cfg)
        .assert()
        .code(2);
    let err = stderr_text(&out);
    assert!(
        err.contains("sweep.iters") && err.contains("bad.toml"),
        "{err}"
    );
}

#[test]
fn check_without_a_gpu_gives_one_verdict_line_and_exit_3() {
    if netcheck::engine::gpu::driver_present() {
        eprintln!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = netcheck()
        .args(["check", "--out"])
        .arg(dir.path())
        .assert()
        .code(3);
    let stdout = stdout_text(&out);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with("netcheck check: FAIL") && stdout.contains("no NVIDIA driver"),
        "{stdout}"
    );
    let doctor: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("doctor.json")).unwrap())
            .unwrap();
    assert_eq!(
        doctor["verdict"], "fail",
        "GPU and NCCL are required for a local check"
    );
}

#[test]
fn check_passes_launch_flags_through_after_kube() {
    let dir = tempfile::tempdir().unwrap();
    let out = netcheck()
        .args(["check", "--out"])
        .arg(dir.path())
        .args(["--kube", "--no-such-flag"])
        .assert()
        .code(2);
    let err = stderr_text(&out);
    assert!(
        err.contains("after --kube") && err.contains("--no-such-flag"),
        "{err}"
    );
}

#[test]
fn every_command_has_working_help() {
    // Builds each subcommand's parser, which also runs clap's consistency checks.
    for cmd in [
        "analyze", "run", "ingest", "report", "gate", "launch", "doctor", "fabric", "check",
        "worker",
    ] {
        netcheck().args([cmd, "--help"]).assert().success();
    }
}

#[test]
fn durations_are_sums_and_bits_are_not_bytes() {
    // `1m30s` is a duration: the error is about the plan, not the timeout.
    netcheck()
        .args(["fabric", "--local", "--timeout", "1m30s", "--iters", "0"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--iters"))
        .stderr(predicates::str::contains("duration").not());
    netcheck()
        .args(["fabric", "--local", "--timeout", "1m30"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("needs a unit"));
    // `1Kb` is kilobits to a network engineer: refused, with the byte spelling.
    netcheck()
        .args(["fabric", "--local", "--sizes", "1Kb"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("bits"))
        .stderr(predicates::str::contains("write 1K"));
}

#[test]
fn check_usage_errors_are_errors_not_a_fail_verdict() {
    let dir = tempfile::tempdir().unwrap();
    netcheck()
        .args(["check", "--out"])
        .arg(dir.path())
        .args(["--ops", "bogus"])
        .assert()
        .code(2)
        .stdout(predicates::str::contains("FAIL").not())
        .stderr(predicates::str::contains("sweep.ops"))
        .stderr(predicates::str::contains("doctor").not());
}

#[test]
fn check_kube_dry_run_runs_no_local_doctor() {
    let dir = tempfile::tempdir().unwrap();
    netcheck()
        .args(["check", "--out"])
        .arg(dir.path())
        .args(["--kube", "--dry-run", "--nodes", "a,b", "--image", "img:1"])
        .args(["--gpus-per-node", "8"])
        .assert()
        .stderr(predicates::str::contains("netcheck: doctor").not());
    assert!(!dir.path().join("doctor.json").exists());
}

#[test]
fn check_says_where_doctor_json_is() {
    if netcheck::engine::gpu::driver_present() {
        eprintln!("skipped: this machine has an NVIDIA driver (the check would measure)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doctor = dir.path().join("doctor.json");
    netcheck()
        .args(["check", "--out"])
        .arg(dir.path())
        .assert()
        .code(3)
        .stderr(predicates::str::contains(format!(
            "doctor: wrote {}",
            doctor.display()
        )));
    assert!(doctor.exists());
}

#[test]
fn version_names_the_commit() {
    let out = netcheck().arg("--version").assert().success();
    let text = stdout_text(&out);
    assert!(
        text.starts_with(&format!("netcheck {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let describe = std::process::Command::new("git")
        .args(["describe", "--always", "--tags"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Ok(d) = describe
        && d.status.success()
        && std::env::var_os("NETCHECK_GIT_COMMIT").is_none()
    {
        let commit = String::from_utf8_lossy(&d.stdout).trim().to_string();
        assert!(
            text.contains(&format!("(commit {commit})")),
            "{text} vs {commit}"
        );
    }
}

/// A user's clone has no DESIGN.md and no `shared/` folder: the docs, README and bundled
/// profiles must not send readers there.
#[test]
fn docs_stand_alone() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "bench-configs"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md" || x == "toml") {
                files.push(p);
            }
        }
    }
    let mut cites = vec![];
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains("DESIGN.md") || line.contains("shared/") {
                cites.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
    }
    assert!(cites.is_empty(), "{}", cites.join("\n"));
}

#[test]
fn run_help_states_the_sweep_defaults() {
    let out = netcheck().args(["run", "--help"]).assert().success();
    let help = stdout_text(&out);
    for default in [
        "[default: all_gather,reduce_scatter",
        "[default: 1K",
        "[default: 1G",
        "[default: 2",
        "[default: 20",
        "[default: 5",
        "[default: float32",
    ] {
        assert!(help.contains(default), "{default}: {help}");
    }
}
