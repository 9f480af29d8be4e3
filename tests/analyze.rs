//! `netcheck analyze`: the transport decision on real and hand-written logs, one trigger and
//! one must-not fixture per rule, and the command's input handling, formats and exit codes.
//!
//! Fixtures: `tests/fixtures/logs/h200/` are real logs from the project's 2× H200 machine;
//! `tests/fixtures/logs/grammar/` are written by hand from the NCCL log grammar (their header
//! says so).

use std::io::Write;

use netcheck::logscan::{Analysis, Options, Severity, Transport, Verdict, analyze_paths};
use serde::Deserialize;

use crate::excerpt::has;
use crate::util::{fixture, netcheck, stderr_text};

fn analyze_with(rel: &str, expect: Option<Transport>) -> Analysis {
    let path = fixture(&format!("logs/{rel}"));
    analyze_paths(
        &[path],
        &Options {
            expect,
            ..Default::default()
        },
    )
    .expect("fixture readable")
}

fn analyze(rel: &str) -> Analysis {
    analyze_with(rel, None)
}

fn ids(a: &Analysis) -> Vec<&str> {
    a.findings.iter().map(|f| f.id.as_str()).collect()
}

fn severity(a: &Analysis, id: &str) -> Severity {
    a.findings.iter().find(|f| f.id == id).expect(id).severity
}

// ---------------------------------------------------------------------------------------------
// The transport decision

/// (fixture, inter_node_transport, socket_fallback, gdr, verdict)
type Expected = (&'static str, Transport, Option<bool>, Option<bool>, Verdict);

#[test]
fn transport_fallback_and_gdr_of_every_fixture() {
    use Transport::*;
    #[rustfmt::skip]
    let table: &[Expected] = &[
        // Real logs from the 2× H200 machine.
        ("h200/nvlink.log", None, Some(false), Option::None, Verdict::Pass),
        ("h200/shm.log", None, Some(false), Option::None, Verdict::Pass),
        ("h200/system-nccl.log", None, Some(false), Option::None, Verdict::Pass),
        // P2P and SHM disabled: NCCL's "nodes" are one machine; `simulated-nodes` explains it.
        ("h200/socket-intranode.log", Socket, Some(false), Some(false), Verdict::Pass),
        ("h200/fakehosts-socket.log", Socket, Some(false), Some(false), Verdict::Pass),
        ("h200/fakehosts-ifname-lo.log", Socket, Some(false), Some(false), Verdict::Warn),
        // Both ends of every NET link are ranks of host `vm`: the plugin failure is a warning.
        ("h200/fakehosts-plugin-missing.log", Socket, Some(false), Some(false), Verdict::Warn),
        ("h200/fakehosts-netforced-ib.log", Unknown, Option::None, Option::None, Verdict::Fail),
        // NCCL chose Socket with no RDMA path in sight: not a fallback, whatever the node count.
        ("h200/hang-init.log", Unknown, Some(false), Option::None, Verdict::Fail),
        // Hand-written from the grammar.
        ("grammar/efa-2node.log", Efa, Some(false), Some(true), Verdict::Pass),
        ("grammar/cloudwatch-crlf.log", Efa, Some(false), Some(true), Verdict::Pass),
        ("grammar/efa-plugin-failed-ray.log", Socket, Some(true), Some(false), Verdict::Fail),
        ("grammar/efa-tcp-provider-mpirun.log", Socket, Some(true), Some(false), Verdict::Fail),
        ("grammar/efa-some-ranks-socket.log", Socket, Some(true), Some(true), Verdict::Fail),
        ("grammar/efa-nic-mismatch.log", Efa, Some(false), Some(true), Verdict::Warn),
        ("grammar/mixed-versions.log", Efa, Some(false), Some(true), Verdict::Warn),
        ("grammar/ib-2node-srun.log", Ib, Some(false), Some(true), Verdict::Pass),
        ("grammar/nccl-2.4-ib.log", Ib, Some(false), Some(true), Verdict::Pass),
        ("grammar/pasted-no-prefix.log", Ib, Some(false), Some(true), Verdict::Pass),
        ("grammar/ib-no-gdr.log", Ib, Some(false), Some(false), Verdict::Warn),
        ("grammar/roce-2node-pdsh.log", Roce, Some(false), Some(true), Verdict::Pass),
        // aws-ofi-nccl over libfabric's verbs provider is IB verbs; over cxi (Slingshot) another fabric.
        ("grammar/ofi-verbs-ib.log", Ib, Some(false), Some(true), Verdict::Pass),
        ("grammar/ofi-cxi-slingshot.log", Other, Some(false), Some(true), Verdict::Pass),
        ("grammar/hpcx-ibext-roce.log", Roce, Some(false), Some(true), Verdict::Pass),
        ("grammar/ib-disabled-socket.log", Socket, Some(true), Some(false), Verdict::Fail),
        ("grammar/fastsocket.log", Socket, Some(false), Some(false), Verdict::Pass),
        ("grammar/tcpx.log", Tcpx, Some(false), Some(true), Verdict::Pass),
        ("grammar/docker-bridge.log", Socket, Some(false), Some(false), Verdict::Warn),
        ("grammar/single-node-plugin-failed.log", None, Some(false), Option::None, Verdict::Warn),
        ("grammar/tuner-probe-socket.log", Socket, Option::None, Some(false), Verdict::Warn),
        ("grammar/verbs-missing.log", None, Some(false), Option::None, Verdict::Pass),
        ("grammar/generic-warn.log", None, Some(false), Option::None, Verdict::Warn),
        ("grammar/torch-timeout.log", None, Some(false), Option::None, Verdict::Fail),
        // No NCCL line at all: nothing to judge, an error (analyze exits 2 on it).
        ("grammar/no-nccl.log", Unknown, Option::None, Option::None, Verdict::Fail),
        ("grammar/two-nodes-no-connections.log", Unknown, Option::None, Option::None, Verdict::Warn),
    ];
    for (rel, transport, fallback, gdr, verdict) in table {
        let a = analyze(rel);
        let got = (a.inter_node_transport, a.socket_fallback, a.gdr, a.verdict);
        assert_eq!(
            got,
            (*transport, *fallback, *gdr, *verdict),
            "{rel}: findings {:?}",
            ids(&a)
        );
    }
}

#[test]
fn single_node_logs_that_say_using_network_socket_are_not_a_fallback() {
    // one-rank.log: `netcheck run` on a one-GPU host (nRanks 1 nNodes 1).
    for rel in [
        "h200/nvlink.log",
        "h200/shm.log",
        "h200/system-nccl.log",
        "h200/one-rank.log",
    ] {
        let a = analyze(rel);
        assert_eq!(a.networks, ["Socket"], "{rel}");
        assert_eq!(a.inter_node_transport, Transport::None, "{rel}");
        assert_eq!(a.socket_fallback, Some(false), "{rel}");
        assert_eq!(a.nodes, Some(1), "{rel}");
        assert!(has(&a, "single-node"), "{rel}");
    }
}

#[test]
fn facts_of_the_real_fake_hosts_log() {
    let a = analyze("h200/fakehosts-socket.log");
    assert_eq!(a.schema, "netcheck.analysis.v1");
    assert_eq!(a.nccl_versions, ["2.28.9"]);
    assert_eq!((a.nodes, a.ranks), (Some(2), Some(2)));
    assert_eq!(a.hosts, ["vm"]);
    assert_eq!(a.per_rank.len(), 2);
    for (i, r) in a.per_rank.iter().enumerate() {
        assert_eq!(r.rank, Some(i as u32));
        assert_eq!(r.cuda_dev, Some(i as u32));
        assert_eq!(r.host.as_deref(), Some("vm"));
        assert_eq!(r.network.as_deref(), Some("Socket"));
        assert_eq!(r.inter_node_transport, Some(Transport::Socket));
        assert_eq!(r.transports, ["NET/Socket"]);
        assert_eq!(r.cuda_driver.as_deref(), Some("13000"));
        assert_eq!(r.nodes, Some(2));
        assert_eq!(r.last_phase.as_deref(), Some("destroyed"));
        // One rank per simulated node: each is local rank 0 of 1, and its network
        // connections reach the other rank.
        assert_eq!((r.local_rank, r.local_ranks), (Some(0), Some(1)));
        assert_eq!(r.connections.len(), 1);
        assert_eq!(r.connections[0].transport, "NET/Socket");
        assert_eq!(r.connections[0].peers, [1 - i as u32]);
        assert!(r.connections[0].lines >= 2);
    }
}

#[test]
fn two_simulated_nodes_of_two_gpus_mix_p2p_and_network_links() {
    // `netcheck run --simulate-nodes 2 --gpus-per-node 2`: four rank logs, two per node.
    let paths: Vec<_> = (0..4)
        .map(|r| fixture(&format!("logs/h200/sim-2x2/rank-{r}.log")))
        .collect();
    let a = analyze_paths(&paths, &Options::default()).unwrap();
    assert_eq!((a.nodes, a.ranks), (Some(2), Some(4)));
    assert_eq!(a.inter_node_transport, Transport::Socket);
    assert!(has(&a, "simulated-nodes"));
    let seen: Vec<_> = a
        .per_rank
        .iter()
        .map(|r| (r.rank, r.local_rank, r.local_ranks, r.connection_text()))
        .collect();
    // Global rank = node × 2 + local rank; P2P lines are printed by the sender only.
    assert_eq!(
        seen,
        [
            (
                Some(0),
                Some(0),
                Some(2),
                "NET/Socket with 3; P2P/CUMEM with 1".to_string()
            ),
            (Some(1), Some(1), Some(2), "NET/Socket with 2".to_string()),
            (
                Some(2),
                Some(0),
                Some(2),
                "NET/Socket with 1; P2P/CUMEM with 3".to_string()
            ),
            (Some(3), Some(1), Some(2), "NET/Socket with 0".to_string()),
        ]
    );
    for r in &a.per_rank {
        assert_eq!(r.inter_node_transport, Some(Transport::Socket));
        // Two channels, and NET lines on both ends: 2 lines per kind here.
        assert!(r.connections.iter().all(|c| c.lines == 2), "{r:?}");
    }
}

#[test]
fn nvlink_ranks_share_one_node_and_reach_each_other_over_p2p() {
    let a = analyze("h200/nvlink.log");
    for (i, r) in a.per_rank.iter().enumerate() {
        assert_eq!((r.local_rank, r.local_ranks), (Some(i as u32), Some(2)));
        assert_eq!(r.connection_text(), format!("P2P/CUMEM with {}", 1 - i));
    }
}

#[test]
fn ofi_facts_per_rank() {
    let a = analyze("grammar/efa-2node.log");
    assert_eq!(a.ofi_provider.as_deref(), Some("efa"));
    assert_eq!((a.nodes, a.ranks), (Some(2), Some(4)));
    assert_eq!(a.hosts, ["train-0", "train-1"]);
    let r = &a.per_rank[1];
    assert_eq!(
        (r.rank, r.host.as_deref(), r.pid),
        (Some(1), Some("train-0"), Some(42))
    );
    assert_eq!(
        (r.ofi_fabric.as_deref(), r.nics, r.gdr),
        (Some("efa"), Some(4), Some(true))
    );
    assert_eq!(r.transports, ["NET/Libfabric"]);
    // Rank 0 connects to rank 1 over P2P and receives from rank 3 over the network.
    assert_eq!(a.per_rank[0].transports, ["NET/Libfabric", "P2P/CUMEM"]);
    let roce = analyze("grammar/roce-2node-pdsh.log");
    assert_eq!(
        roce.per_rank[0].net_devices,
        ["mlx5_0/RoCE", "mlx5_1/RoCE", "mlx5_2/RoCE"]
    );
}

#[test]
fn evidence_points_at_the_line_that_shows_it() {
    let a = analyze("h200/fakehosts-plugin-missing.log");
    let fallback = a
        .findings
        .iter()
        .find(|f| f.id == "net-plugin-failed")
        .unwrap();
    let plugin = fallback
        .evidence
        .iter()
        .find(|e| e.text.contains("Could not find"))
        .unwrap();
    assert_eq!(plugin.line, 12);
    assert!(plugin.source.ends_with("fakehosts-plugin-missing.log"));
    assert!(
        plugin
            .text
            .ends_with("NET/Plugin: Could not find: ofi libnccl-net-ofi.so")
    );
    assert!(
        fallback
            .hint
            .as_deref()
            .unwrap()
            .contains("NCCL_NET_PLUGIN=ofi")
    );
}

// ---------------------------------------------------------------------------------------------
// One trigger and one must-not fixture per rule

/// (rule id, fixture that triggers it, fixture that must not, expected severity)
#[rustfmt::skip]
const RULES: &[(&str, &str, &str, Severity)] = &[
    ("socket-fallback", "grammar/efa-plugin-failed-ray.log", "h200/fakehosts-plugin-missing.log", Severity::Error),
    ("mixed-transports", "grammar/efa-some-ranks-socket.log", "grammar/efa-2node.log", Severity::Error),
    ("no-net-plugin", "h200/fakehosts-netforced-ib.log", "h200/fakehosts-socket.log", Severity::Error),
    ("net-plugin-failed", "grammar/single-node-plugin-failed.log", "h200/fakehosts-socket.log", Severity::Warn),
    ("efa-provider-missing", "grammar/efa-plugin-failed-ray.log", "grammar/efa-2node.log", Severity::Warn),
    ("ofi-tcp-provider", "grammar/efa-tcp-provider-mpirun.log", "grammar/efa-2node.log", Severity::Warn),
    ("ib-disabled", "grammar/ib-disabled-socket.log", "grammar/docker-bridge.log", Severity::Warn),
    ("rdma-unused", "grammar/efa-pinned-socket.log", "grammar/fastsocket.log", Severity::Warn),
    ("tcp-inter-node", "grammar/docker-bridge.log", "h200/fakehosts-socket.log", Severity::Warn),
    ("no-nccl-lines", "grammar/no-nccl.log", "grammar/two-nodes-no-connections.log", Severity::Error),
    ("transport-unknown", "grammar/two-nodes-no-connections.log", "h200/hang-init.log", Severity::Warn),
    ("gdr-disabled", "grammar/ib-no-gdr.log", "grammar/efa-2node.log", Severity::Warn),
    ("socket-interface", "h200/fakehosts-ifname-lo.log", "h200/fakehosts-socket.log", Severity::Warn),
    ("init-incomplete", "h200/hang-init.log", "h200/nvlink.log", Severity::Error),
    ("nccl-error", "h200/fakehosts-netforced-ib.log", "grammar/generic-warn.log", Severity::Error),
    ("collective-timeout", "grammar/torch-timeout.log", "h200/nvlink.log", Severity::Error),
    ("nccl-warn", "grammar/generic-warn.log", "grammar/single-node-plugin-failed.log", Severity::Warn),
    ("mixed-nccl-versions", "grammar/mixed-versions.log", "grammar/efa-2node.log", Severity::Warn),
    ("nic-count-mismatch", "grammar/efa-nic-mismatch.log", "grammar/efa-2node.log", Severity::Warn),
    ("single-node", "h200/nvlink.log", "h200/socket-intranode.log", Severity::Info),
    ("simulated-nodes", "h200/fakehosts-socket.log", "grammar/tuner-probe-socket.log", Severity::Info),
    ("plugin-on-path", "grammar/tuner-probe-socket.log", "h200/fakehosts-socket.log", Severity::Info),
    ("verbs-missing", "grammar/verbs-missing.log", "h200/nvlink.log", Severity::Info),
];

#[test]
fn every_rule_has_a_trigger_and_a_must_not_fixture() {
    for (id, trigger, must_not, expected) in RULES {
        let a = analyze(trigger);
        assert!(has(&a, id), "{id} not raised by {trigger}: {:?}", ids(&a));
        assert_eq!(severity(&a, id), *expected, "{id} on {trigger}");
        let finding = a.findings.iter().find(|f| f.id == *id).unwrap();
        assert!(!finding.message.is_empty());
        let b = analyze(must_not);
        assert!(
            !has(&b, id),
            "{id} wrongly raised by {must_not}: {:?}",
            b.findings
        );
    }
}

#[test]
fn expectation_rule() {
    let a = analyze_with("h200/fakehosts-socket.log", Some(Transport::Efa));
    assert_eq!((a.verdict, a.socket_fallback), (Verdict::Fail, Some(true)));
    assert!(has(&a, "expectation-not-met") && has(&a, "socket-fallback"));
    assert_eq!(a.expected, Some(Transport::Efa));
    // Single node: nothing crossed a node, so EFA was not shown either.
    let a = analyze_with("h200/nvlink.log", Some(Transport::Efa));
    assert_eq!((a.verdict, a.socket_fallback), (Verdict::Fail, Some(false)));
    let message = &a
        .findings
        .iter()
        .find(|f| f.id == "expectation-not-met")
        .unwrap()
        .message;
    assert!(message.contains("no inter-node traffic"), "{message}");
    // Met expectations.
    for (rel, expect) in [
        ("grammar/efa-2node.log", Transport::Efa),
        ("grammar/ib-2node-srun.log", Transport::Ib),
        ("grammar/roce-2node-pdsh.log", Transport::Roce),
        ("grammar/tcpx.log", Transport::Tcpx),
    ] {
        let a = analyze_with(rel, Some(expect));
        assert!(!has(&a, "expectation-not-met"), "{rel}: {:?}", ids(&a));
        assert_eq!(a.verdict, Verdict::Pass, "{rel}");
    }
    // `--expect socket` makes TCP the deliberate choice: no fallback, no TCP warning.
    let a = analyze_with("h200/fakehosts-socket.log", Some(Transport::Socket));
    assert_eq!((a.verdict, a.socket_fallback), (Verdict::Pass, Some(false)));
    // An unknown transport never meets an expectation.
    let a = analyze_with("grammar/no-nccl.log", Some(Transport::Socket));
    assert_eq!(a.verdict, Verdict::Fail);
}

#[test]
fn hang_names_the_rank_and_the_phase() {
    let a = analyze("h200/hang-init.log");
    let f = a
        .findings
        .iter()
        .find(|f| f.id == "init-incomplete")
        .unwrap();
    assert!(f.message.contains("vm:1568 (rank 0)"), "{}", f.message);
    assert!(f.message.contains("init-start"), "{}", f.message);
    assert!(f.message.contains("only 1 of 2 ranks"), "{}", f.message);
    assert_eq!(
        a.per_rank[0].last_phase.as_deref(),
        Some("init-start (bootstrap)")
    );
}

#[test]
fn plugin_failed_in_a_single_node_run_is_a_warning_not_a_fallback() {
    let a = analyze("grammar/single-node-plugin-failed.log");
    assert_eq!(
        (a.inter_node_transport, a.socket_fallback),
        (Transport::None, Some(false))
    );
    let f = a
        .findings
        .iter()
        .find(|f| f.id == "net-plugin-failed")
        .unwrap();
    assert!(f.message.contains("no inter-node traffic"), "{}", f.message);
    assert_eq!(f.evidence.len(), 3);
}

// ---------------------------------------------------------------------------------------------
// The command: inputs, formats, exit codes

/// The JSON contract as a consumer reads it: these fields must exist with these types.
#[derive(Deserialize)]
#[allow(dead_code)]
struct ContractAnalysis {
    schema: String,
    nccl_versions: Vec<String>,
    networks: Vec<String>,
    ofi_provider: Option<String>,
    nodes: Option<u32>,
    ranks: Option<u32>,
    inter_node_transport: String,
    socket_fallback: Option<bool>,
    gdr: Option<bool>,
    per_rank: Vec<serde_json::Value>,
    findings: Vec<ContractFinding>,
    verdict: String,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ContractFinding {
    id: String,
    severity: String,
    message: String,
    evidence: Vec<ContractEvidence>,
    hint: Option<String>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ContractEvidence {
    source: String,
    line: u64,
    text: String,
}

fn json_of(output: &[u8]) -> ContractAnalysis {
    serde_json::from_slice(output).expect("analyze --format json prints the Analysis contract")
}

#[test]
fn json_output_follows_the_contract_and_fail_exits_1() {
    let out = netcheck()
        .args(["analyze", "--format", "json"])
        .arg(fixture("logs/grammar/efa-plugin-failed-ray.log"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let a = json_of(&out.stdout);
    assert_eq!(a.schema, "netcheck.analysis.v1");
    assert_eq!(
        (a.inter_node_transport.as_str(), a.socket_fallback),
        ("socket", Some(true))
    );
    assert_eq!(a.verdict, "fail");
    assert!(
        a.findings
            .iter()
            .any(|f| f.id == "socket-fallback" && f.severity == "error")
    );
}

#[test]
fn expect_flag_sets_the_exit_code() {
    let log = fixture("logs/grammar/efa-2node.log");
    netcheck()
        .args(["analyze", "--expect", "efa"])
        .arg(&log)
        .assert()
        .code(0);
    netcheck()
        .args(["analyze", "--expect", "ib"])
        .arg(&log)
        .assert()
        .code(1);
    netcheck()
        .args(["analyze", "--expect", "infiniband"])
        .arg(&log)
        .assert()
        .code(2);
    // A verdict without errors passes.
    netcheck()
        .arg("analyze")
        .arg(fixture("logs/h200/fakehosts-socket.log"))
        .assert()
        .code(0);
}

#[test]
fn text_output_shows_transport_ranks_and_evidence() {
    let out = netcheck()
        .arg("analyze")
        .arg(fixture("logs/h200/fakehosts-plugin-missing.log"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // One machine split by NCCL_HOSTID: the missing plugin is a warning (issue 25).
    assert!(text.starts_with("verdict: WARN\n"), "{text}");
    assert!(text.contains("inter-node transport: socket"), "{text}");
    assert!(text.contains("vm:1193"), "{text}");
    assert!(text.contains("warn  net-plugin-failed:"), "{text}");
    assert!(text.contains("fakehosts-plugin-missing.log:12: "), "{text}");
    assert!(text.contains("hint: NCCL_NET_PLUGIN=ofi"), "{text}");
}

#[test]
fn markdown_output() {
    let out = netcheck()
        .args(["analyze", "--format", "markdown"])
        .arg(fixture("logs/grammar/efa-2node.log"))
        .output()
        .unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.starts_with("### ✅ netcheck analyze: pass"), "{md}");
    assert!(md.contains("| inter-node transport | `efa` |"), "{md}");
    assert!(md.contains("#### Ranks"), "{md}");
}

#[test]
fn reads_stdin_with_dash_or_without_arguments() {
    let log = std::fs::read(fixture("logs/h200/fakehosts-socket.log")).unwrap();
    for args in [
        &["analyze", "--format", "json"][..],
        &["analyze", "--format", "json", "-"],
    ] {
        let out = netcheck()
            .args(args)
            .write_stdin(log.clone())
            .output()
            .unwrap();
        let a = json_of(&out.stdout);
        assert_eq!(a.inter_node_transport, "socket");
        assert_eq!(a.findings[0].evidence[0].source, "<stdin>");
    }
}

#[test]
fn reads_gzip_and_several_files_as_one_job() {
    let dir = tempfile::tempdir().unwrap();
    // One file per rank, as `run` writes them; rank 1's file compressed.
    let log = std::fs::read_to_string(fixture("logs/h200/fakehosts-socket.log")).unwrap();
    let (rank0, rank1): (Vec<&str>, Vec<&str>) =
        log.lines().partition(|l| l.starts_with("vm:1066:"));
    let path0 = dir.path().join("rank0.log");
    std::fs::write(&path0, rank0.join("\n")).unwrap();
    let path1 = dir.path().join("rank1.log.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(rank1.join("\n").as_bytes()).unwrap();
    std::fs::write(&path1, gz.finish().unwrap()).unwrap();
    let a = analyze_paths(&[path0, path1.clone()], &Options::default()).unwrap();
    assert_eq!(a.inter_node_transport, Transport::Socket);
    assert_eq!(a.per_rank.len(), 2);
    let sources: Vec<&str> = a
        .findings
        .iter()
        .flat_map(|f| f.evidence.iter())
        .map(|e| &*e.source)
        .collect();
    assert!(
        sources.iter().any(|s| s.ends_with("rank1.log.gz")),
        "{sources:?}"
    );
}

#[test]
fn reads_json_lines_logs_as_the_lines_they_hold() {
    // A real two-"node" capture, one JSON object per line as Docker's json-file driver (and
    // log shippers' exports) keep container output; a line of plain output among them.
    let log = std::fs::read_to_string(fixture("logs/h200/fakehosts-socket.log")).unwrap();
    let mut json = String::new();
    for (i, line) in log.lines().enumerate() {
        let record = serde_json::json!({"log": format!("{line}\n"), "stream": "stderr", "time": "2026-12-06T03:33:30.123456789Z"});
        json += &format!("{record}\n");
        if i == 3 {
            json += "plain text between the records\n";
        }
    }
    let plain =
        netcheck::logscan::analyze_reader(log.as_bytes(), "t", &Options::default()).unwrap();
    let a = netcheck::logscan::analyze_reader(json.as_bytes(), "t", &Options::default()).unwrap();
    assert_eq!(a.inter_node_transport, Transport::Socket);
    assert_eq!(
        (
            a.inter_node_transport,
            a.socket_fallback,
            a.verdict,
            &a.hosts,
            a.per_rank.len()
        ),
        (
            plain.inter_node_transport,
            plain.socket_fallback,
            plain.verdict,
            &plain.hosts,
            plain.per_rank.len()
        )
    );
    // Evidence quotes the log text, not the JSON around it.
    let evidence: Vec<&str> = a
        .findings
        .iter()
        .flat_map(|f| &f.evidence)
        .map(|e| e.text.as_str())
        .collect();
    assert!(!evidence.is_empty());
    assert!(
        evidence.iter().all(|e| !e.contains("\"stream\"")),
        "{evidence:?}"
    );
}

#[test]
fn numbered_lines_are_not_launcher_ranks() {
    // `cat -n` and `grep -n` put a number before every line, as `srun -l` puts its task's.
    // A launcher's number stays the same on a process's lines; a line number does not, and
    // taken for a rank it made single-host logs "multi-node" (a false FAIL on sockets).
    let mut checked = 0;
    for dir in ["logs/h200", "logs/grammar"] {
        for entry in std::fs::read_dir(fixture(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let log = std::fs::read_to_string(&path).unwrap();
            let answer = |text: &str| {
                let a =
                    netcheck::logscan::analyze_reader(text.as_bytes(), "t", &Options::default())
                        .unwrap();
                (a.inter_node_transport, a.socket_fallback, a.verdict)
            };
            let plain = answer(&log);
            let numbered = |format: fn(usize, &str) -> String| -> String {
                log.lines()
                    .enumerate()
                    .map(|(i, l)| format(i + 1, l) + "\n")
                    .collect()
            };
            let cat_n = numbered(|n, l| format!("{n:6}\t{l}"));
            let grep_n = numbered(|n, l| format!("{n}:{l}"));
            assert_eq!(answer(&cat_n), plain, "cat -n {}", path.display());
            assert_eq!(answer(&grep_n), plain, "grep -n {}", path.display());
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked}");
}

#[test]
fn hard_wrapped_logs_read_as_they_were_printed() {
    // A log copied from a terminal that wraps at its width (`screen`, an old console, a web
    // viewer, an email) has a newline every W columns; read as it stands, every record
    // longer than W lost its tail (`via NE` / `T/IB/0`). The wrap is found and undone.
    let mut checked = 0;
    let mut wrapped_checked = 0;
    for dir in ["logs/h200", "logs/grammar"] {
        for entry in std::fs::read_dir(fixture(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let log = std::fs::read_to_string(&path).unwrap();
            let answer = |text: &str| {
                let a =
                    netcheck::logscan::analyze_reader(text.as_bytes(), "t", &Options::default())
                        .unwrap();
                let evidence: Vec<(u64, String)> = a
                    .findings
                    .iter()
                    .flat_map(|f| &f.evidence)
                    .map(|e| (e.line, e.text.clone()))
                    .collect();
                (
                    a.inter_node_transport,
                    a.socket_fallback,
                    a.verdict,
                    a.hosts,
                    evidence,
                )
            };
            let plain = answer(&log);
            for width in [80, 120, 200] {
                // A terminal shows no colour codes, and copies what it shows.
                let shown: String = log
                    .lines()
                    .map(|l| l.replace("\u{1b}[36m", "").replace("\u{1b}[0m", ""))
                    .collect::<Vec<_>>()
                    .join("\n");
                let long = shown.lines().filter(|l| l.chars().count() > width).count();
                // One long line cannot show a wrap (nor can two): a line of exactly the
                // width may have been printed so.
                if long < 3 {
                    continue;
                }
                let mut wrapped = String::new();
                for line in shown.lines() {
                    let chars: Vec<char> = line.chars().collect();
                    if chars.is_empty() {
                        wrapped.push('\n');
                    }
                    for piece in chars.chunks(width) {
                        wrapped.extend(piece);
                        wrapped.push('\n');
                    }
                }
                let (transport, fallback, verdict, hosts, evidence) = answer(&wrapped);
                assert_eq!(
                    (transport, fallback, verdict, &hosts),
                    (plain.0, plain.1, plain.2, &plain.3),
                    "{} wrapped at {width}",
                    path.display()
                );
                // Evidence quotes whole records, at the number of their first piece.
                let lines: Vec<&str> = wrapped.lines().collect();
                for (line, text) in &evidence {
                    assert!(lines[*line as usize - 1].len() <= text.len(), "{text}");
                }
                wrapped_checked += 1;
            }
            checked += 1;
        }
    }
    assert!(
        checked > 20 && wrapped_checked > 20,
        "{checked} {wrapped_checked}"
    );
}

#[test]
fn logs_from_web_pages_and_log_viewers_read_as_they_were_printed() {
    // A page's HTML source escapes `<`, `>` and `&`: `0[0] -&gt; 8[0]`, `10.0.0.1&lt;0&gt;`;
    // a rendered page or a chat copies blanks as no-break spaces; a log viewer's CSV export
    // puts a time before each line and quotes it (RFC 4180: every field, or where needed).
    let mut checked = 0;
    for dir in ["logs/h200", "logs/grammar"] {
        for entry in std::fs::read_dir(fixture(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let log = std::fs::read_to_string(&path).unwrap();
            let answer = |text: &str| {
                let a =
                    netcheck::logscan::analyze_reader(text.as_bytes(), "t", &Options::default())
                        .unwrap();
                let evidence: Vec<(u64, String)> = a
                    .findings
                    .iter()
                    .flat_map(|f| &f.evidence)
                    .map(|e| (e.line, e.text.clone()))
                    .collect();
                let ranks: Vec<_> = a
                    .per_rank
                    .iter()
                    .map(|r| (r.rank, r.transports.clone(), r.net_devices.clone()))
                    .collect();
                (
                    a.inter_node_transport,
                    a.socket_fallback,
                    a.verdict,
                    ranks,
                    evidence,
                )
            };
            let plain = answer(&log);
            let page = log
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            assert_eq!(answer(&page), plain, "{} escaped", path.display());
            let copied = log.replace(' ', "\u{a0}");
            assert_eq!(answer(&copied), plain, "{} no-break", path.display());
            let quote = |field: &str| format!("\"{}\"", field.replace('"', "\"\""));
            let exported = |quote_all: bool| -> String {
                // (No header line, so evidence keeps its line numbers.)
                let mut csv = String::new();
                for line in log.lines() {
                    let message = match quote_all || line.contains([',', '"']) {
                        true => quote(line),
                        false => line.to_string(),
                    };
                    csv += &format!("2026-12-06T05:00:00.000Z,{message},stdout\n");
                }
                csv
            };
            assert_eq!(answer(&exported(true)), plain, "{} CSV", path.display());
            assert_eq!(
                answer(&exported(false)),
                plain,
                "{} CSV, quoted where needed",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked}");
}

#[test]
fn a_zip_of_logs_is_read_as_its_logs() {
    // GitHub issues take attachments as .zip: each entry is a log of its own (gzip inside
    // too); folders and macOS's resource forks are skipped.
    let dir = tempfile::tempdir().unwrap();
    let a = fixture("logs/grammar/efa-2node.log");
    let b = fixture("logs/grammar/efa-some-ranks-socket.log");
    let zipped = dir.path().join("logs.zip");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&zipped).unwrap());
        let deflated = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.add_directory("run/", deflated).unwrap();
        zip.start_file("run/rank0.log", deflated).unwrap();
        zip.write_all(&std::fs::read(&a).unwrap()).unwrap();
        // The second log gzipped, stored as it is.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&std::fs::read(&b).unwrap()).unwrap();
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        zip.start_file("run/rank1.log.gz", stored).unwrap();
        zip.write_all(&gz.finish().unwrap()).unwrap();
        zip.start_file("__MACOSX/run/._rank0.log", stored).unwrap();
        zip.write_all(b"\0\x05\x16\x07 NCCL INFO Using network Socket")
            .unwrap();
        zip.finish().unwrap();
    }
    let options = Options::default();
    let from_zip = analyze_paths(std::slice::from_ref(&zipped), &options).unwrap();
    let from_files = analyze_paths(&[a, b], &options).unwrap();
    assert_eq!(job(&from_zip), job(&from_files));
    assert!(from_zip.per_rank.len() > 2);
    // Evidence names the archive and the entry.
    assert_evidence_from_entries(&from_zip, &zipped);
    // On stdin an archive cannot be unpacked: exit 2, saying what to do.
    let out = netcheck()
        .args(["analyze", "-"])
        .pipe_stdin(&zipped)
        .unwrap()
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("pass its path"), "{err}");
    // A damaged archive: exit 2 naming it.
    let bytes = std::fs::read(&zipped).unwrap();
    let damaged = dir.path().join("cut.zip");
    std::fs::write(&damaged, &bytes[..bytes.len() / 2]).unwrap();
    let out = netcheck()
        .arg("analyze")
        .arg(&damaged)
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8(out.stderr).unwrap().contains("cut.zip"));
}

/// What a job's analysis says, rank by rank: the same for its logs however they are packed.
type Job = (
    Transport,
    Option<bool>,
    Verdict,
    Vec<String>,
    Vec<(Option<u32>, Option<String>, Option<Transport>)>,
);

fn job(x: &Analysis) -> Job {
    let ranks = x
        .per_rank
        .iter()
        .map(|r| (r.rank, r.host.clone(), r.inter_node_transport))
        .collect();
    (
        x.inter_node_transport,
        x.socket_fallback,
        x.verdict,
        x.hosts.clone(),
        ranks,
    )
}

/// Every finding's evidence names `archive` and an entry under `run/rank`.
fn assert_evidence_from_entries(x: &Analysis, archive: &std::path::Path) {
    let prefix = format!("{}:run/rank", archive.display());
    let sources: std::collections::BTreeSet<String> = x
        .findings
        .iter()
        .flat_map(|f| &f.evidence)
        .map(|e| e.source.to_string())
        .collect();
    assert!(
        sources.iter().all(|s| s.starts_with(&prefix)),
        "{sources:?}"
    );
}

#[test]
fn a_tar_of_logs_is_read_as_its_logs() {
    // Support bundles, `kubectl cp` and `tar czf - logs/ | netcheck analyze`: each entry a
    // log of its own, gzip inside too; folders, links and macOS's `._` forks skipped.
    let dir = tempfile::tempdir().unwrap();
    let a = fixture("logs/grammar/efa-2node.log");
    let b = fixture("logs/grammar/efa-some-ranks-socket.log");
    let mut tar = tar::Builder::new(Vec::new());
    let mut add = |name: &str, kind: tar::EntryType, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        if kind == tar::EntryType::Symlink {
            header.set_link_name("rank0.log").unwrap();
        }
        tar.append_data(&mut header, name, bytes).unwrap();
    };
    add("run/", tar::EntryType::Directory, b"");
    add(
        "run/rank0.log",
        tar::EntryType::Regular,
        &std::fs::read(&a).unwrap(),
    );
    add(
        "run/._rank0.log",
        tar::EntryType::Regular,
        b"\0\x05\x16\x07 NCCL INFO Using network Socket",
    );
    add("run/latest.log", tar::EntryType::Symlink, b"");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&std::fs::read(&b).unwrap()).unwrap();
    add(
        "run/rank1.log.gz",
        tar::EntryType::Regular,
        &gz.finish().unwrap(),
    );
    let tar = tar.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    let tgz = gz.finish().unwrap();

    let options = Options::default();
    let from_files = analyze_paths(&[a, b], &options).unwrap();
    assert!(from_files.per_rank.len() > 2);
    for (name, bytes) in [("logs.tar", &tar), ("logs.tgz", &tgz)] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let from_tar = analyze_paths(std::slice::from_ref(&path), &options).unwrap();
        assert_eq!(job(&from_tar), job(&from_files), "{name}");
        assert_evidence_from_entries(&from_tar, &path);
    }
    // From stdin too, as a stream: the same report, its sources named `<stdin>:…`.
    let report = |input: &str, stdin: Option<Vec<u8>>| {
        let mut cmd = netcheck();
        cmd.current_dir(dir.path())
            .args(["analyze", "--format", "json", input]);
        if let Some(bytes) = stdin {
            cmd.write_stdin(bytes);
        }
        String::from_utf8(cmd.output().unwrap().stdout).unwrap()
    };
    let from_stdin = report("-", Some(tgz.clone()));
    assert!(
        from_stdin.contains("\"<stdin>:run/rank0.log\""),
        "{from_stdin}"
    );
    let from_path = report("logs.tgz", None);
    assert_eq!(from_stdin.replace("<stdin>:", "logs.tgz:"), from_path);
    // A cut archive: exit 2 naming it, the tar archive and where it stopped.
    let cut = dir.path().join("cut.tar");
    std::fs::write(&cut, &tar[..tar.len() - 1536]).unwrap();
    let err = stderr_text(&netcheck().arg("analyze").arg(&cut).assert().code(2));
    assert!(
        err.contains("cut.tar") && err.contains("tar archive"),
        "{err}"
    );
}

#[test]
fn a_log_in_a_compression_not_unpacked_here_is_exit_2_saying_how_to_read_it() {
    // The first bytes each format's specification gives (xz, zstd, lz4 frame, bzip2 with
    // its block magic), then anything: read as text they would be a log without NCCL lines.
    let dir = tempfile::tempdir().unwrap();
    for (name, start, tool) in [
        (
            "x.log.xz",
            &b"\xfd7zXZ\0\0\x04\xe6\xd6\xb4\x46"[..],
            "xz -dc",
        ),
        ("x.log.zst", b"\x28\xb5\x2f\xfd\x24\x10\x81", "zstd -dc"),
        ("x.log.lz4", b"\x04\x22\x4d\x18\x64\x40\xa7", "lz4 -dc"),
        ("x.log.bz2", b"BZh91AY&SY\x8a\x01", "bzip2 -dc"),
    ] {
        let path = dir.path().join(name);
        let mut bytes = start.to_vec();
        bytes.extend_from_slice(b"h:1:1 [0] NCCL INFO Using network Socket\n");
        std::fs::write(&path, &bytes).unwrap();
        let err = stderr_text(&netcheck().arg("analyze").arg(&path).assert().code(2));
        assert!(err.contains(name) && err.contains(tool), "{err}");
        // In a tar, the entry is named.
        let mut tar = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_ustar();
        header.set_size(bytes.len() as u64);
        tar.append_data(&mut header, name, &bytes[..]).unwrap();
        let tar = tar.into_inner().unwrap();
        let err = stderr_text(
            &netcheck()
                .args(["analyze", "-"])
                .write_stdin(tar)
                .assert()
                .code(2),
        );
        assert!(
            err.contains(&format!("at {name}")) && err.contains(tool),
            "{err}"
        );
    }
    // A log whose first word happens to start as bzip2's magic is a log.
    let path = dir.path().join("bzh.log");
    std::fs::write(
        &path,
        b"BZh9 host up\nh:1:1 [0] NCCL INFO Using network Socket\n",
    )
    .unwrap();
    netcheck().arg("analyze").arg(&path).assert().code(0);
}

#[test]
fn missing_or_unreadable_input_exits_2_naming_it() {
    let out = netcheck()
        .args(["analyze", "/no/such/nccl.log"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/no/such/nccl.log"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let out = netcheck()
        .arg("analyze")
        .arg(dir.path())
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("is a directory")
    );
    // A corrupt gzip file is bad input too, said as gzip's.
    let bad = dir.path().join("bad.log.gz");
    std::fs::write(&bad, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff]).unwrap();
    let out = netcheck().arg("analyze").arg(&bad).assert().code(2);
    let err = stderr_text(&out);
    assert!(
        err.contains("bad.log.gz") && err.contains("gzip stream is damaged"),
        "{err}"
    );
}

#[test]
fn a_gzip_log_cut_short_says_so_and_how_to_read_the_rest() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(
        &std::fs::read(fixture("logs/h200/fakehosts-socket.log"))
            .unwrap()
            .repeat(50),
    )
    .unwrap();
    let whole = gz.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Cut in the middle of the deflate data, and right after the magic bytes.
    for (name, len) in [("cut.log.gz", whole.len() / 2), ("head.log.gz", 3)] {
        let path = dir.path().join(name);
        std::fs::write(&path, &whole[..len]).unwrap();
        let out = netcheck().arg("analyze").arg(&path).assert().code(2);
        let err = stderr_text(&out);
        assert!(err.contains(name), "{err}");
        assert!(err.contains("gzip stream ends early"), "{err}");
        assert!(err.contains("zcat"), "{err}");
    }
}

#[test]
fn binary_garbage_is_unknown_not_a_crash() {
    let garbage: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let out = netcheck()
        .args(["analyze", "--format", "json"])
        .write_stdin(garbage)
        .assert()
        // No NCCL line in it: nothing to judge.
        .code(2)
        .get_output()
        .clone();
    assert_eq!(json_of(&out.stdout).inter_node_transport, "unknown");
}

#[test]
fn memory_stays_bounded_on_many_processes() {
    let mut log = String::new();
    for pid in 0..20_000 {
        log.push_str(&format!(
            "h{}:{pid}:{pid} [0] NCCL INFO Using network Socket\n",
            pid % 7
        ));
    }
    let a = netcheck::logscan::analyze_reader(log.as_bytes(), "many", &Options::default()).unwrap();
    assert!(has(&a, "input-capped"), "{:?}", ids(&a));
    assert!(a.per_rank.len() <= 16_384);
}

#[test]
fn line_numbers_survive_chunk_boundaries_gaps_and_crlf() {
    // Well over one 1 MiB read chunk of training output around two NCCL-related lines.
    let mut log = String::new();
    for i in 0..40_000 {
        log.push_str(&format!("step {i} loss 1.0 some training output\r\n"));
    }
    log.push_str("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\r\n");
    for _ in 0..30_000 {
        log.push_str("more output without the magic word\n");
    }
    log.push_str("[rank0]: ncclRemoteError: A call failed possibly due to a network error\n");
    log.push_str("trailing line without newline");
    let a = netcheck::logscan::analyze_reader(log.as_bytes(), "big", &Options::default()).unwrap();
    let line_of = |id: &str| {
        a.findings
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.evidence[0].line)
    };
    assert_eq!(line_of("tcp-inter-node"), Some(40_001), "{:?}", ids(&a));
    assert_eq!(line_of("nccl-error"), Some(70_002), "{:?}", ids(&a));
    let f = a
        .findings
        .iter()
        .find(|f| f.id == "tcp-inter-node")
        .unwrap();
    assert!(
        f.evidence[0].text.ends_with("via NET/Socket/0"),
        "CR stripped: {:?}",
        f.evidence[0].text
    );
}

#[test]
fn reading_on_a_second_thread_changes_nothing() {
    // `analyze_paths` reads and frames files on a second thread, `analyze_reader` on the
    // caller's: every fixture, and a multi-chunk file with cut and over-long lines, must give
    // the same analysis both ways.
    let same = |path: &std::path::Path| {
        let bytes = std::fs::read(path).unwrap();
        let name = path.display().to_string();
        let threaded = analyze_paths(&[path.to_path_buf()], &Options::default()).unwrap();
        let direct = netcheck::logscan::analyze_reader(&bytes[..], &name, &Options::default());
        assert_eq!(
            serde_json::to_string(&threaded).unwrap(),
            serde_json::to_string(&direct.unwrap()).unwrap(),
            "{name}"
        );
    };
    let mut fixtures = 0;
    for dir in ["logs/h200", "logs/grammar"] {
        for entry in std::fs::read_dir(fixture(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "log") {
                same(&path);
                fixtures += 1;
            }
        }
    }
    assert!(fixtures > 20);
    // Every NCCL line below is a process of its own, so a line lost or read twice shows.
    let mut big = Vec::new();
    for i in 0..15_000 {
        big.extend_from_slice(b"step 1 loss 0.5 lr 1e-4 some training output of a line\n");
        big.extend_from_slice(b"[rank0]:[W] torch warning about nccl things, twice\r\n");
        let line = format!(
            "h{}:{i}:{i} [{}] NCCL INFO NCCL version 2.{}.0\n",
            i % 97,
            i % 8,
            i % 30
        );
        big.extend_from_slice(line.as_bytes());
        if i % 4000 == 0 {
            big.extend(std::iter::repeat_n(b'x', 70_000 + i * 100));
            big.extend_from_slice(b" h:1:1 [0] NCCL INFO Using network IB\r\n");
            // Not UTF-8: the message is decoded with replacements.
            big.extend_from_slice(format!("g:{i}:{i} [0] NCCL INFO Using network So").as_bytes());
            big.extend_from_slice(b"\xffcket\n");
        }
    }
    // Long gaps of other output, with lines worth a look at every depth.
    for i in 0..20_000 {
        let line = match i % 53 {
            0 => format!("k{}:{i}:{i} [0] NCCL INFO Using network Socket\n", i % 13),
            17 => format!("[rank0]: ncclRemoteError number {i}\n"),
            41 => format!("#  Rank {i} Group  0 Pid {i} on host-{i} device  0 [0x1b] H200\n"),
            _ => format!("Epoch {i}/10 loss 2.31\n"),
        };
        big.extend_from_slice(line.as_bytes());
    }
    // Lines that all matter and are tiny: a chunk is split over several batches.
    for i in 0..100_000 {
        big.extend_from_slice(if i % 1000 == 999 {
            b"h:9:9 [0] NCCL WARN x\n"
        } else {
            b"#\n"
        });
    }
    big.extend_from_slice(b"h:7:7 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n");
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(&big).unwrap();
    same(file.path());
}

#[test]
fn a_line_longer_than_the_read_buffer_still_counts_as_one_line() {
    // The first 64 KiB of a line over 1 MiB are kept and the rest skipped; before, such a line
    // without NCCL in it was not counted and later evidence pointed one line too high.
    let mut log = vec![b'x'; 1_500_000];
    log.extend_from_slice(
        b"\nh:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n",
    );
    for threaded in [false, true] {
        let a = if threaded {
            let mut file = tempfile::NamedTempFile::new().unwrap();
            file.write_all(&log).unwrap();
            analyze_paths(&[file.path().to_path_buf()], &Options::default()).unwrap()
        } else {
            netcheck::logscan::analyze_reader(&log[..], "long", &Options::default()).unwrap()
        };
        let f = a.findings.iter().find(|f| f.id == "tcp-inter-node");
        assert_eq!(f.map(|f| f.evidence[0].line), Some(2), "{:?}", ids(&a));
    }
}

/// With stdin a terminal and no file, `analyze` says it is waiting for a log on stdin.
#[test]
fn analyze_on_a_terminal_says_it_reads_stdin() {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two new descriptors; the name, termios and winsize may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors are ours from here on.
    let (mut master, slave) = unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    };
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("netcheck"))
        .arg("analyze")
        .stdin(slave)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-D on an empty line: end of input on the terminal. Sent until the child ends (the
    // reader's gzip sniff takes the first end-of-file of a terminal), at most 10 s.
    let mut child = child;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if child.try_wait().unwrap().is_some() {
            break;
        }
        master.write_all(b"\x04").unwrap();
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("reading NCCL log from stdin (Ctrl-D to end)"),
        "{stderr}"
    );
    // Ended by Ctrl-D, not killed: nothing typed is nothing to judge (exit 2, not a pass).
    assert_eq!(
        out.status.code(),
        Some(2),
        "ended by Ctrl-D, not killed: {stderr}"
    );
}
