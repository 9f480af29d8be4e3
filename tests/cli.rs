//! The command-line contract: every command exists, help works, exit codes are documented.

use crate::util::netcheck;

#[test]
fn help_lists_every_command_of_the_contract() {
    let out = netcheck()
        .arg("--help")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let help = String::from_utf8(out).unwrap();
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
