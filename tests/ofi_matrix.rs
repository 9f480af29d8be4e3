//! The real aws-ofi-nccl plugin's logs (tests/fixtures/logs/ofi, captured on the GPU host by
//! scripts/device/ofi-matrix.sh): for every case, the bare logs through `analyze` and, knowing
//! the environment the workers ran in, through the judgement `run`, `check` and a pod's own
//! run make. The labels say what NCCL did and what each must answer.

use std::path::PathBuf;

use netcheck::config::BenchConfig;
use netcheck::launch::local::{judge, network_failed};
use netcheck::logscan::{Options, Verdict, analyze_paths};
use netcheck::results::RunRecord;
use serde::Deserialize;

use crate::util::{fixture, netcheck};

#[derive(Deserialize)]
struct Label {
    case: String,
    analyze: Bare,
    run: Judged,
}

#[derive(Deserialize)]
struct Bare {
    transport: String,
    fallback: bool,
    verdict: String,
    exit: i32,
}

#[derive(Deserialize)]
struct Judged {
    fallback: bool,
    exit: i32,
    #[serde(default)]
    network_failed: bool,
}

fn labels() -> Vec<Label> {
    let text = std::fs::read_to_string(fixture("logs/ofi/labels.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn logs(case: &str) -> Vec<PathBuf> {
    let dir = fixture(&format!("logs/ofi/{case}"));
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 2, "{case}: two rank logs");
    logs
}

/// What `run --simulate-nodes` tells the analysis: the workers' environment, and that its nodes
/// share one machine on purpose.
fn as_run(environment: &std::collections::BTreeMap<String, String>) -> Options {
    Options {
        environment: environment.clone().into_iter().collect(),
        simulated_nodes: true,
        ..Default::default()
    }
}

/// The one fallback finding of an analysis.
fn fallback_finding(a: &netcheck::logscan::Analysis) -> &netcheck::logscan::Finding {
    a.findings
        .iter()
        .find(|f| f.id == "socket-fallback")
        .expect("a socket-fallback finding")
}

#[test]
fn every_case_is_labelled() {
    let labelled: Vec<String> = labels().into_iter().map(|l| l.case).collect();
    for entry in std::fs::read_dir(fixture("logs/ofi")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            assert!(labelled.contains(&name), "{name} has no label");
        }
    }
    assert_eq!(labelled.len(), 19);
}

#[test]
fn bare_logs_through_analyze() {
    for label in labels() {
        let a = analyze_paths(&logs(&label.case), &Options::default()).unwrap();
        let case = &label.case;
        assert_eq!(
            a.inter_node_transport.as_str(),
            label.analyze.transport,
            "{case}"
        );
        assert_eq!(a.socket_fallback, Some(label.analyze.fallback), "{case}");
        let verdict = match a.verdict {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        };
        assert_eq!(verdict, label.analyze.verdict, "{case}");
        // The communicator never formed: no node count to argue with the launcher's.
        if label.run.network_failed {
            assert!(a.findings.iter().any(|f| f.id == "no-net-plugin"), "{case}");
        } else {
            assert!(
                a.basis.iter().any(|b| b == "nnodes"),
                "{case}: {:?}",
                a.basis
            );
        }
        let mut cmd = netcheck();
        cmd.arg("analyze").args(logs(case));
        let code = cmd.output().unwrap().status.code();
        assert_eq!(
            code,
            Some(label.analyze.exit),
            "{case}: analyze's exit code"
        );
    }
}

#[test]
fn knowing_the_environment_as_run_does() {
    let config = BenchConfig::embedded_default();
    for label in labels() {
        let case = &label.case;
        let mut record =
            RunRecord::load(&fixture(&format!("logs/ofi/{case}/results.json"))).unwrap();
        let a = analyze_paths(&logs(case), &as_run(&record.environment)).unwrap();
        if label.run.fallback {
            assert_eq!(a.socket_fallback, Some(true), "{case}");
        } else {
            assert_ne!(a.socket_fallback, Some(true), "{case}");
        }
        record.analysis = Some(a);
        assert_eq!(network_failed(&record), label.run.network_failed, "{case}");
        let failed = !judge(&config, &record).is_empty() || network_failed(&record);
        assert_eq!(i32::from(failed), label.run.exit, "{case}: run's exit code");
    }
}

/// As `run --simulate-nodes` judges it (the bare logs show one machine: no fallback there).
#[test]
fn the_ofi_plugin_on_tcp_is_named_for_what_ran() {
    let a = analyze_paths(&logs("ofi-fi-tcp"), &as_run(&Default::default())).unwrap();
    let fallback = fallback_finding(&a);
    assert!(
        fallback
            .message
            .contains("OFI plugin (`Libfabric`) on libfabric's `tcp` provider"),
        "{}",
        fallback.message
    );
    assert!(
        !fallback.message.contains("yet NCCL used Socket"),
        "{}",
        fallback.message
    );
    assert!(
        !fallback.message.contains("no usable libfabric provider"),
        "{}",
        fallback.message
    );
}

#[test]
fn the_environment_is_the_evidence_when_the_log_cannot_show_it() {
    let mut record = RunRecord::load(&fixture("logs/ofi/noplugin-fi-efa/results.json")).unwrap();
    let a = analyze_paths(&logs("noplugin-fi-efa"), &as_run(&record.environment)).unwrap();
    let fallback = fallback_finding(&a);
    assert!(
        fallback.message.contains("FI_PROVIDER=efa"),
        "{}",
        fallback.message
    );
    assert!(
        fallback
            .evidence
            .iter()
            .any(|e| &*e.source == "environment")
    );
    // TCP pinned on purpose is not a fallback, whatever FI_PROVIDER says.
    record
        .environment
        .insert("NCCL_NET".into(), "Socket".into());
    let options = as_run(&record.environment);
    let a = analyze_paths(&logs("noplugin-fi-efa"), &options).unwrap();
    assert_eq!(a.socket_fallback, Some(false));
}

/// The plugin behind an older libfabric: the loader's own words are the reason and the
/// evidence, on libfabric's tcp provider too (where nothing asked for EFA).
#[test]
fn a_plugin_the_loader_refuses_is_the_fallback_named_by_the_loaders_line() {
    for case in ["ofi-system-libfabric", "ofi-system-libfabric-tcp"] {
        let record = RunRecord::load(&fixture(&format!("logs/ofi/{case}/results.json"))).unwrap();
        let a = analyze_paths(&logs(case), &as_run(&record.environment)).unwrap();
        let fallback = fallback_finding(&a);
        assert!(
            fallback
                .message
                .contains("a net plugin was found but could not be loaded"),
            "{case}: {}",
            fallback.message
        );
        assert!(
            fallback
                .evidence
                .iter()
                .any(|e| e.text.contains("version `FABRIC_1.9' not found")),
            "{case}: {:?}",
            fallback.evidence
        );
        assert!(
            fallback
                .hint
                .as_deref()
                .unwrap_or_default()
                .contains("LD_LIBRARY_PATH"),
            "{case}: {:?}",
            fallback.hint
        );
    }
}
