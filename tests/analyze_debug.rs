//! Real logs under NCCL's and libfabric's own debug settings (tests/fixtures/logs/debug,
//! captured on the GPU host by scripts/device/log-shapes.sh): which subsystems print,
//! timestamps on every line, libfabric's log in between, the quieter debug levels. Each case
//! changes how the job logs, not what NCCL did; the labels say what `analyze` must answer.

use std::path::PathBuf;

use netcheck::logscan::{Analysis, Options, Transport, Verdict, analyze_paths};
use serde::Deserialize;

use crate::util::{fixture, netcheck};

#[derive(Deserialize)]
struct Label {
    case: String,
    /// The case this one logs differently: the same run of NCCL.
    same_as: Option<String>,
    analyze: Want,
}

#[derive(Deserialize)]
struct Want {
    transport: String,
    fallback: Option<bool>,
    verdict: String,
    exit: i32,
    findings: Vec<String>,
}

fn labels() -> Vec<Label> {
    let text = std::fs::read_to_string(fixture("logs/debug/labels.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn log(case: &str) -> PathBuf {
    fixture(&format!("logs/debug/{case}.log"))
}

fn analysis(case: &str) -> Analysis {
    analyze_paths(&[log(case)], &Options::default()).unwrap()
}

#[test]
fn every_log_is_labelled_once() {
    let mut labelled: Vec<String> = labels().into_iter().map(|l| l.case).collect();
    labelled.sort();
    let mut logs: Vec<String> = std::fs::read_dir(fixture("logs/debug"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    logs.sort();
    assert_eq!(labelled, logs);
    assert!(logs.len() >= 16, "{logs:?}");
}

/// `netcheck analyze --format json` on each log: transport, fallback, verdict, exit code and
/// the findings, all of them.
#[test]
fn each_log_reads_as_labelled() {
    for label in labels() {
        let out = netcheck()
            .args(["analyze", "--format", "json"])
            .arg(log(&label.case))
            .output()
            .unwrap();
        let case = &label.case;
        let want = &label.analyze;
        assert_eq!(out.status.code(), Some(want.exit), "{case}");
        let a: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(a["inter_node_transport"], want.transport.as_str(), "{case}");
        assert_eq!(a["socket_fallback"].as_bool(), want.fallback, "{case}");
        assert_eq!(a["verdict"], want.verdict.as_str(), "{case}");
        let mut ids: Vec<&str> = a["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        ids.sort();
        assert_eq!(ids, want.findings, "{case}");
    }
}

/// A variant reads as the case it logs differently: the same transport, nodes, ranks,
/// networks, and per rank the same host, device, rank and connections.
#[test]
fn each_variant_reads_as_its_base_case() {
    let summary = |a: &Analysis| {
        let rows: Vec<String> = a
            .per_rank
            .iter()
            .map(|r| {
                // Each capture ran its own processes: their pids differ.
                let who = (&r.host, r.cuda_dev, r.rank, r.nodes);
                format!(
                    "{:?}",
                    (who, r.inter_node_transport, &r.transports, &r.connections)
                )
            })
            .collect();
        format!(
            "{:?}",
            (
                a.inter_node_transport,
                a.socket_fallback,
                a.nodes,
                a.ranks,
                &a.networks,
                rows
            )
        )
    };
    let mut variants = 0;
    for label in labels() {
        let Some(base) = &label.same_as else {
            continue;
        };
        variants += 1;
        assert_eq!(
            summary(&analysis(&label.case)),
            summary(&analysis(base)),
            "{} against {base}",
            label.case
        );
    }
    assert!(variants >= 11, "{variants}");
}

/// `NCCL_DEBUG=VERSION`, or `WARN` with nothing to warn about: NCCL prints its banner alone.
/// Nothing to judge (exit 2), and the message says why rather than that NCCL printed nothing.
#[test]
fn a_version_banner_alone_says_which_debug_level_printed_it() {
    for case in ["socket-debug-warn", "socket-debug-version"] {
        let a = analysis(case);
        let finding = a.findings.iter().find(|f| f.id == "no-nccl-lines").unwrap();
        assert!(
            finding
                .message
                .contains("only NCCL's version banner (NCCL 2.28.9)")
                && finding.message.contains("NCCL_DEBUG=VERSION or WARN"),
            "{case}: {}",
            finding.message
        );
        assert_eq!(finding.evidence.len(), 1, "{case}");
        assert_eq!(finding.evidence[0].text, "NCCL version 2.28.9+cuda13.0");
        assert_eq!(finding.evidence[0].line, 1);
    }
}

/// PyTorch's NCCL error ends with the version too, whatever NCCL_DEBUG was: that is no banner,
/// and the message stays that the log has no NCCL lines.
#[test]
fn pytorchs_error_with_the_version_is_no_banner() {
    let log = "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n";
    let a = netcheck::logscan::analyze_reader(log.as_bytes(), "t", &Options::default()).unwrap();
    let finding = a.findings.iter().find(|f| f.id == "no-nccl-lines").unwrap();
    assert!(
        finding.message.starts_with("no NCCL lines at all"),
        "{}",
        finding.message
    );
    assert_eq!(a.nccl_versions, ["2.21.5"]);
}

/// NCCL prints `Connected all rings, use ring PXN 0 GDR 1` over aws-ofi-nccl on libfabric's tcp
/// provider too, though no connection ran GPUDirect RDMA (no `/GDRDMA`): the flag is no
/// evidence of GDR, and so none of EFA. With the provider's line gone (an excerpt, a log cut
/// at the top) the real logs must not read as EFA with GDR.
#[test]
fn gdr_1_after_the_rings_is_not_gpudirect_rdma() {
    for rel in ["logs/debug/ofi-tcp.log", "logs/ofi/ofi-fi-tcp/rank-0.log"] {
        let text = std::fs::read_to_string(fixture(rel)).unwrap();
        assert!(text.contains("use ring PXN 0 GDR 1"), "{rel}");
        assert!(!text.contains("/GDRDMA"), "{rel}");
        let cut: String = text
            .lines()
            .filter(|l| !l.contains("Selected provider"))
            .map(|l| format!("{l}\n"))
            .collect();
        let a =
            netcheck::logscan::analyze_reader(cut.as_bytes(), rel, &Options::default()).unwrap();
        assert_ne!(a.inter_node_transport, Transport::Efa, "{rel}: {:?}", a.why);
        assert_ne!(a.gdr, Some(true), "{rel}");
        // The full log: libfabric's tcp provider, no GDR.
        let a = analyze_paths(&[fixture(rel)], &Options::default()).unwrap();
        assert_eq!(a.inter_node_transport, Transport::Socket, "{rel}");
        assert_eq!(a.gdr, Some(false), "{rel}");
    }
}

/// Two ranks on one host that NCCL counted as two nodes because `NCCL_HOSTID` differs: the
/// traffic between them never left the machine, whether or not the log shows the NET links
/// (an excerpt, `NCCL_DEBUG_SUBSYS` without them). Without the links the real logs must read
/// as with them: no fallback, the same verdict.
#[test]
fn one_machine_split_by_nccl_hostid_without_its_net_links() {
    for rel in [
        "logs/debug/ofi-tcp.log",
        "logs/debug/ofi-efa.log",
        "logs/h200/fakehosts-plugin-missing.log",
        "logs/h200/fakehosts-socket.log",
    ] {
        let text = std::fs::read_to_string(fixture(rel)).unwrap();
        assert!(text.contains("NCCL_HOSTID set by environment"), "{rel}");
        let cut: String = text
            .lines()
            .filter(|l| !l.contains("via NET/"))
            .map(|l| format!("{l}\n"))
            .collect();
        let full = analyze_paths(&[fixture(rel)], &Options::default()).unwrap();
        let a =
            netcheck::logscan::analyze_reader(cut.as_bytes(), rel, &Options::default()).unwrap();
        assert_eq!(full.socket_fallback, Some(false), "{rel}");
        assert_eq!(
            (a.inter_node_transport, a.socket_fallback, a.verdict),
            (
                full.inter_node_transport,
                full.socket_fallback,
                full.verdict
            ),
            "{rel}: {:?}",
            a.findings.iter().map(|f| &f.id).collect::<Vec<_>>()
        );
    }
}

/// The same real logs of one machine (two ranks NCCL counted as two nodes, or P2P and SHM
/// disabled) as `grep NET/` gives them, which is also close to what `NCCL_DEBUG_SUBSYS=NET`
/// prints: no communicator line numbers the ranks and no `NCCL_HOSTID` line explains the
/// nodes, but each rank's NET lines name it (`[send]` on the left, `[receive]` on the
/// right) and the other end is the other process shown. The traffic stayed on the machine:
/// the same transport and fallback as the whole log, and never a FAIL.
#[test]
fn net_lines_alone_of_one_machine_read_as_the_whole_log() {
    for rel in [
        "logs/debug/ofi-tcp.log",
        "logs/debug/ofi-efa.log",
        "logs/h200/fakehosts-plugin-missing.log",
        "logs/h200/fakehosts-socket.log",
        "logs/h200/socket-intranode.log",
    ] {
        let text = std::fs::read_to_string(fixture(rel)).unwrap();
        let cut: String = text
            .lines()
            .filter(|l| l.contains("NET/"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            cut.contains("[send] via NET/") && !cut.contains(" nNodes "),
            "{rel}"
        );
        let full = analyze_paths(&[fixture(rel)], &Options::default()).unwrap();
        let a =
            netcheck::logscan::analyze_reader(cut.as_bytes(), rel, &Options::default()).unwrap();
        assert_eq!(
            (a.inter_node_transport, a.socket_fallback),
            (full.inter_node_transport, full.socket_fallback),
            "{rel}: {:?}",
            a.findings.iter().map(|f| &f.id).collect::<Vec<_>>()
        );
        assert_ne!(a.verdict, Verdict::Fail, "{rel}");
    }
}
