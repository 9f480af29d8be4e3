//! Property tests: no input makes the analyzer panic, and the JSON it produces always follows
//! the contract. Inputs are arbitrary bytes, and lines spliced from real NCCL line fragments
//! (which reach the deeper parsers far more often than random bytes do).

use netcheck::logscan::{Options, Transport, analyze_reader};
use proptest::prelude::*;

/// Pieces of real NCCL lines: prefixes, markers and message starts, cut at odd places.
const FRAGMENTS: &[&str] = &[
    "vm:1643:1643 [0] ",
    "[1,3]<stdout>:",
    "(RayTrainWorker pid=1, ip=10.0.0.1) ",
    "3: ",
    "  | 2024-01-01T00:00:00Z | ",
    "NCCL INFO ",
    "NCCL WARN ",
    "NCCL ",
    "[2026-01-02 10:24:27] ",
    "int f(x**):208 ",
    "Channel 00/0 : 1[1] -> 0[0] [receive] via NET/Socket/0",
    "via NET/",
    "via P2P/CUMEM/read",
    "via SHM/direct/direct",
    "via NET/AWS Libfabric/0/GDRDMA",
    "via COLLNET/IB/",
    "Ring 00 : 3 -> 4 [send] via NET/IB/0",
    "comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1",
    "ncclCommInitRankConfig comm 0x1 rank 1 nranks 2 commId 0x9 - Init START",
    "- Init COMPLETE",
    "Using network ",
    "Assigned NET plugin ",
    "Failed to initialize NET plugin ",
    "NET/Plugin: Could not find: ",
    "NET/OFI Selected provider is efa, fabric is efa (found ",
    "NET/OFI Selected Provider is ",
    "NET/IB : Using [0]mlx5_0:1/RoCE ; OOB ",
    "NET/Socket : Using [0]lo:127.0.0.1<0>",
    "Bootstrap: Using ",
    "NCCL version 2.",
    "NCCL_NET_PLUGIN set by environment to ",
    "init.cc:421 -> ",
    "Failed to initialize any NET plugin",
    "[repeated 3x across cluster]",
    "\u{1b}[36m",
    "\u{1b}[",
    "[",
    "]",
    ":",
    "#  Rank  0 Group  0 Pid   1 on vm device  0",
    "libfabric:1:2::efa:core:f():1<warn> provider efa output empty list",
    // Evidence kinds of the excerpt rules (tests/analyze_evidence.rs).
    "] INFO ",
    "h:1:1 [3] INFO NET/IB: [0] mlx4_0:1/IB",
    "Using internal Network ",
    "rank 155 nranks ",
    "Channel 00/02 :    0   1   4294967295",
    "ncclCommInitAll comm 0x5 rank 1 nranks 2 - Init COMPLETE",
    "P2P plugin v8 ",
    "via P2P/direct pointer",
    "via P2P/MNNVL",
    " MNNVL 1",
    "NET/FastSocket : Connected after ",
    "NET/GPUDirectTCPX : ",
    "NET/IB : Got completion from peer ",
    "NET/Socket : socket progress error",
    "NET/OFI Setting provider_filter to ",
    "NET/OFI Only EFA provider is supported",
    "[1]pod-id-link0:169.254.170.23<0>",
    "eth1:fe80::1%eth1<0>",
    "#  Rank 4294967295 Group  0 Pid 4294967295 on vm device 4294967295",
    " ",
    "\r",
    "é",
    "\u{0}",
    // What web pages and log viewers do to a log (logscan::text_form, hard_wrap).
    "-&gt; ",
    "&lt;0&gt;",
    "&amp;",
    "&",
    "\u{a0}",
    "NCCL\u{a0}INFO ",
    ",\"",
    "\",",
    "\"\"",
    ",stdout",
    "2026-12-06T05:00:00Z,\"",
    "\n",
    "\u{1b}[0m",
];

fn spliced_line() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..8).prop_map(|parts| parts.concat())
}

fn check(input: &[u8]) {
    let a = analyze_reader(input, "prop", &Options::default()).expect("in-memory input");
    let json = serde_json::to_value(&a).unwrap();
    for field in [
        "inter_node_transport",
        "socket_fallback",
        "gdr",
        "verdict",
        "findings",
        "per_rank",
    ] {
        assert!(json.get(field).is_some(), "{field} missing");
    }
    if a.inter_node_transport == Transport::None || a.inter_node_transport == Transport::Unknown {
        assert_ne!(a.socket_fallback, Some(true));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn wrapped_spliced_lines_never_panic(lines in prop::collection::vec(spliced_line(), 0..64), width in 1usize..120) {
        // Hard-wrapped at `width` bytes (pieces may split a character: lossy).
        let text = lines.join("\n");
        let mut wrapped = Vec::new();
        for line in text.as_bytes().split(|b| *b == b'\n') {
            for piece in line.chunks(width) {
                wrapped.extend_from_slice(piece);
                wrapped.push(b'\n');
            }
        }
        check(&wrapped);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        // Bytes that start as gzip does are read as gzip: a broken or cut stream is a read
        // error (exit 2 for a file, naming it), never a panic. Anything else is read as text.
        if bytes.starts_with(&[0x1f, 0x8b]) {
            if let Err(e) = analyze_reader(&bytes[..], "prop", &Options::default()) {
                use std::io::ErrorKind::{InvalidData, InvalidInput, UnexpectedEof};
                prop_assert!(matches!(e.kind(), InvalidData | InvalidInput | UnexpectedEof), "{e:?}");
            }
        } else {
            check(&bytes);
        }
    }

    #[test]
    fn spliced_nccl_lines_never_panic(lines in prop::collection::vec(spliced_line(), 0..64)) {
        check(lines.join("\n").as_bytes());
    }

    #[test]
    fn expectations_never_panic(lines in prop::collection::vec(spliced_line(), 0..32), expect in 0usize..6) {
        let expect = [None, Some(Transport::Efa), Some(Transport::Ib), Some(Transport::Roce), Some(Transport::Socket), Some(Transport::Tcpx)][expect];
        let input = lines.join("\n");
        let a = analyze_reader(input.as_bytes(), "prop", &Options { expect, ..Default::default() }).unwrap();
        if expect.is_some_and(|t| t != a.inter_node_transport) {
            prop_assert_eq!(a.verdict, netcheck::logscan::Verdict::Fail);
        }
    }
}
