//! `netcheck analyze` on excerpts: one small log per kind of evidence for the node count and
//! the transport (DESIGN.md "Analysis JSON", `basis`), and one that must not decide.
//!
//! Every log here is written by hand from the format strings of NCCL and aws-ofi-nccl (the
//! release each appeared in is noted), not copied from anyone's log. Host names, pids and
//! addresses are made up.

use netcheck::logscan::{Severity, Transport};

use crate::excerpt::{Row, decides, finding, has, run};

#[rustfmt::skip]
const ROWS: &[Row] = &[
    // --- node count ---------------------------------------------------------------------
    ("nNodes > 1 (2.20.3+) with the IB module",
     "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network IB\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n",
     Transport::Ib, Some(false), Some("nnodes")),
    ("must not: nNodes 1 is one node, whatever the module",
     "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network IB\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n",
     Transport::None, Some(false), Some("nnodes")),
    ("must not: nNodes 1 of a split (a tensor-parallel group) is not the job's",
     "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network IB\n\
      a:1:1 [0] NCCL INFO ncclCommSplit comm 0x5 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 101d0 parent 0x4 splitCount 1 color 2003953581 key 0- Init START\n\
      a:1:1 [0] NCCL INFO comm 0x5 rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 0\n",
     Transport::Ib, Some(false), Some("network-module")),
    ("NET channel lines behind a torchrun prefix",
     "[rank0]:a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      [rank0]:a:1:1 [0] NCCL INFO Using network Socket\n\
      [rank0]:a:1:9 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0\n",
     Transport::Socket, Some(false), Some("channel-lines")),
    ("two host names; aws-ofi-nccl <= 1.5 refused, NCCL fell to Socket (2.5 has no Using network)",
     "a:1:1 [0] ofi_init:700 NCCL WARN NET/OFI Only EFA provider is supported\n\
      a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [0] NCCL INFO NET/Socket : Using [0]ens5:172.16.0.1<0>\n\
      b:2:2 [0] ofi_init:700 NCCL WARN NET/OFI Only EFA provider is supported\n\
      b:2:2 [0] NCCL INFO NET/IB : No device found.\n\
      b:2:2 [0] NCCL INFO NET/Socket : Using [0]ens5:172.16.0.2<0>\n",
     Transport::Socket, Some(true), Some("distinct-hosts")),
    ("must not: the same on one host shows no node count",
     "a:1:1 [0] ofi_init:700 NCCL WARN NET/OFI Only EFA provider is supported\n\
      a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [0] NCCL INFO NET/Socket : Using [0]ens5:172.16.0.1<0>\n",
     Transport::Unknown, Some(true), None),
    ("a global rank past the GPUs its host shows",
     "a:1:1 [3] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [3] NCCL INFO Using network Socket\n\
      a:1:1 [3] NCCL INFO comm 0x1 rank 155 nranks 256 cudaDev 3 busId 40 - Init COMPLETE\n",
     Transport::Socket, Some(false), Some("rank-numbering")),
    ("must not: rank 3 on device 3 fits one host",
     "a:1:1 [3] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [3] NCCL INFO Using network Socket\n\
      a:1:1 [3] NCCL INFO comm 0x1 rank 3 nranks 8 cudaDev 3 busId 40 - Init COMPLETE\n",
     Transport::Unknown, Some(false), None),
    ("mpirun tags number ranks past the GPUs the host shows",
     "[1,9]<stdout>:a:1:1 [1] NCCL INFO NET/IB : No device found.\n\
      [1,9]<stdout>:a:1:1 [1] NCCL INFO Using network Socket\n\
      [1,8]<stdout>:a:2:2 [0] NCCL INFO Using network Socket\n",
     Transport::Socket, Some(false), Some("launcher-tags")),
    ("must not: tags within the host's GPUs",
     "[1,1]<stdout>:a:1:1 [1] NCCL INFO NET/IB : No device found.\n\
      [1,1]<stdout>:a:1:1 [1] NCCL INFO Using network Socket\n\
      [1,0]<stdout>:a:2:2 [0] NCCL INFO Using network Socket\n",
     Transport::Unknown, Some(false), None),
    // `Trees%s` with ` [%d] %d/%d/%d->%d->%d` pieces (init.cc, 2.5.6+; 2.4.8 lists the
    // children last): inside a node the tree is a chain, a second child is on another node.
    ("a tree that gives a rank a second child, on another node",
     "a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [0] NCCL INFO Using network Socket\n\
      a:1:1 [0] NCCL INFO Trees [0] 1/8/-1->0->-1 [1] 1/-1/-1->0->8\n",
     Transport::Socket, Some(false), Some("tree-peers")),
    ("2.4's tree listing, children last",
     "a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [0] NCCL INFO Using network Socket\n\
      a:1:1 [0] NCCL INFO Trees [0] -1->0->1/8/-1 [1] 8->0->1/-1/-1\n",
     Transport::Socket, Some(false), Some("tree-peers")),
    ("must not: a chain of one node's GPUs, whatever their order",
     "a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [0] NCCL INFO Using network Socket\n\
      a:1:1 [0] NCCL INFO Trees [0] 3/-1/-1->0->-1 [1] 3/-1/-1->0->-1\n",
     Transport::Unknown, Some(false), None),
    ("a plugin named by its WARN location",
     "g:1:5 [0] net_fastsocket.cc:321 NCCL WARN Call to connect returned Connection refused, retrying\n",
     Transport::Unknown, Some(false), Some("plugin-symbols")),
    ("nccl-tests' device list over two hosts, 2.5 init sequence with IB ports",
     "#  Rank  0 Group  0 Pid   100 on      hosta device  0 [0x1b] Tesla V100\n\
      #  Rank  1 Group  0 Pid   200 on      hostb device  0 [0x1b] Tesla V100\n\
      hosta:100:100 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n\
      hosta:100:100 [0] NCCL INFO NET/IB : Using [0]mlx4_0:1/IB ; OOB eth0:10.0.0.1<0>\n",
     Transport::Ib, Some(false), Some("nccl-tests-device-list")),
    ("nccl-tests' device list with every rank on one host",
     "#  Rank  0 Group  0 Pid   100 on      hosta device  0 [0x1b] Tesla T4\n\
      #  Rank  1 Group  0 Pid   100 on      hosta device  1 [0x1c] Tesla T4\n\
      hosta:100:100 [0] NCCL INFO NET/Socket : Using [0]em1:10.0.0.1<0>\n\
      hosta:100:100 [0] NCCL INFO Using network Socket\n",
     Transport::None, Some(false), Some("nccl-tests-device-list")),
    ("nccl-tests' device list printed once per test, every rank on one host",
     "#  Rank  0 Group  0 Pid   100 on      hosta device  0 [0x1b] Tesla T4\n\
      #  Rank  1 Group  0 Pid   100 on      hosta device  1 [0x1c] Tesla T4\n\
      hosta:100:100 [0] NCCL INFO NET/Socket : Using [0]em1:10.0.0.1<0>\n\
      hosta:100:100 [0] NCCL INFO Using network Socket\n\
      #  Rank  0 Group  0 Pid   100 on      hosta device  0 [0x1b] Tesla T4\n\
      #  Rank  1 Group  0 Pid   100 on      hosta device  1 [0x1c] Tesla T4\n",
     Transport::None, Some(false), Some("nccl-tests-device-list")),
    ("a communicator of one rank (2.4)",
     "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eno1:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO comm 0x7f rank 0 nranks 1 cudaDev 0 nvmlDev 0 - Init COMPLETE\n",
     Transport::None, Some(false), Some("one-rank-comm")),
    ("ncclCommInitAll (2.23+ names the API): one process",
     "a:5:6 [1] NCCL INFO ncclCommInitAll comm 0x5 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 34000 commId 0x7 - Init COMPLETE\n",
     Transport::None, Some(false), Some("one-process")),
    ("P2P/direct pointer joins ranks of one process; the ring lists them all",
     "a:5:5 [0] NCCL INFO Using network Socket\n\
      a:5:6 [0] NCCL INFO Channel 00/02 :    0   1\n\
      a:5:6 [0] NCCL INFO Channel 00 : 0[18000] -> 1[af000] via P2P/direct pointer\n",
     Transport::None, Some(false), Some("one-process")),
    ("every rank of the communicator on one host (2.3 rank lines)",
     "a:1:1 [0] NCCL INFO Using internal Network Socket\n\
      a:1:1 [0] NCCL INFO rank 0 nranks 2\n\
      a:2:2 [1] NCCL INFO Using internal Network Socket\n\
      a:2:2 [1] NCCL INFO rank 1 nranks 2\n",
     Transport::None, Some(false), Some("all-ranks-one-host")),
    ("more than half of the ranks on a host with a GPU for each",
     "a:1:1 [0] NCCL INFO Channel 00/04 :    0   1   2   3\n\
      a:1:1 [0] NCCL INFO Using network Socket\n\
      a:2:2 [1] NCCL INFO Using network Socket\n\
      a:4:4 [3] NCCL INFO threadThresholds 8/8/64 | 32/8/64\n",
     Transport::None, Some(false), Some("all-ranks-one-host")),
    ("must not: half of the ranks leave room for another node",
     "a:1:1 [0] NCCL INFO Channel 00/04 :    0   1   2   3\n\
      a:1:1 [0] NCCL INFO Using network Socket\n\
      a:2:2 [1] NCCL INFO Using network Socket\n",
     Transport::Unknown, Some(false), None),
    ("an IB completion error names the peer: the IB verbs path between nodes",
     "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n\
      a:1:9 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n",
     Transport::Ib, Some(false), Some("net-errors")),
    ("a NET/Socket progress error: TCP between nodes, nothing of init in the excerpt",
     "a:1:9 [0] transport/net_socket.cc:219 NCCL WARN NET/Socket : socket progress error\n",
     Transport::Socket, None, Some("net-errors")),
    // --- transport --------------------------------------------------------------------
    ("node count not shown, module explicitly RDMA over RoCE ports",
     "64:2:2 [0] NCCL INFO NET/IB : Using [0]mlx5_bond_0:1/RoCE [1]mlx5_bond_1:1/RoCE [RO]; OOB bond1:10.0.0.1<0>\n\
      64:2:2 [0] NCCL INFO Using network IB\n",
     Transport::Roce, Some(false), Some("network-module")),
    ("must not: node count not shown and Socket selected",
     "a:1:1 [0] NCCL INFO Failed to open libibverbs.so[.1]\n\
      a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network Socket\n",
     Transport::Unknown, Some(false), None),
    ("2.4 init sequence: no plugin, NET/IB lists IB ports, no Using network",
     "[1,0]<stdout>:a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
      [1,0]<stdout>:a:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).\n\
      [1,0]<stdout>:a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n",
     Transport::Ib, Some(false), Some("init-sequence")),
    ("aws-ofi-nccl 1.14+ provider line on a 2-node communicator, no Using network",
     "a:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)\n\
      a:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.16.2\n\
      a:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0\n",
     Transport::Efa, Some(false), Some("ofi-provider")),
    ("aws-ofi-nccl on libfabric's TCP provider between nodes",
     "a:1:1 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm (found 1 nics)\n\
      a:1:1 [0] NCCL INFO Using network AWS Libfabric\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 4 nNodes 2 localRanks 2 localRank 0 MNNVL 0\n",
     Transport::Socket, Some(true), Some("ofi-provider")),
    ("provider_filter efa (1.6+) and Libfabric channel lines",
     "a:1:1 [0] NCCL INFO NET/OFI Setting provider_filter to efa\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Libfabric/0\n",
     Transport::Efa, Some(false), Some("ofi-provider")),
    ("GPUDirect RDMA over aws-ofi-nccl (2.7 channel format) without the provider line",
     "a:1:9 [2] NCCL INFO Channel 05 : 2[201c0] -> 11[201d0] [send] via NET/AWS Libfabric/1/GDRDMA\n",
     Transport::Efa, Some(false), Some("gdr")),
    ("must not: Libfabric channel lines without GDR or provider",
     "a:1:9 [2] NCCL INFO Channel 05 : 2[201c0] -> 11[201d0] [send] via NET/AWS Libfabric/1\n",
     Transport::Unknown, None, None),
    ("FastSocket names itself and reports connections",
     "g:1:5 [0] NCCL INFO NET/FastSocket : Connected after 18 retries.\n\
      g:1:5 [0] NCCL INFO NET/FastSocket : Accepted data socket 2\n",
     Transport::Socket, Some(false), Some("plugin-symbols")),
    ("GPUDirect-TCPX, prefix cut to the device",
     "[0] NCCL INFO NET/GPUDirectTCPX : GPUDirectTCPX enable: 1\n\
      [0] NCCL INFO Using network GPUDirectTCPX_v7\n",
     Transport::Tcpx, Some(false), Some("network-module")),
    ("the HPC-X plugin's display name over RoCE ports (2.28)",
     "a:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v9 (v9)\n\
      a:1:1 [0] NCCL INFO P2P plugin v9 IBext_v9\n\
      a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network NCCL RDMA Plugin v9\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n",
     Transport::Roce, Some(false), Some("link-layer")),
    ("an RDMA plugin loaded, found no device, NCCL selected Socket: a fallback",
     "a:1:1 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n\
      a:1:1 [0] NCCL INFO P2P plugin v8 IBext_v8\n\
      a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network Socket\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0\n",
     Transport::Socket, Some(true), Some("channel-lines")),
    ("NET/IB channel lines without the port list: IB verbs, `ib` (issue 25)",
     "a:1:9 [7] NCCL INFO Channel 08/0 : 7[7] -> 15[7] [send] via NET/IB/8/GDRDMA\n",
     Transport::Ib, Some(false), Some("channel-lines")),
    ("MNNVL 1 on a 2-node communicator (GB200 NVL72)",
     "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 1\n",
     Transport::Nvlink, Some(false), Some("nnodes")),
    ("P2P/MNNVL links between hosts",
     "a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL/read\n",
     Transport::Nvlink, Some(false), Some("channel-lines")),
    ("NCCL 2.2 records without the word NCCL",
     "INFO:tensorflow:Done running local_init_op.\n\
      h:24:25 [0] INFO NET : Using interface eth0:10.0.0.1<0>\n\
      h:24:25 [0] INFO NET/IB: [0] mlx4_0:1/IB\n\
      h:24:25 [0] INFO Using internal Network IB\n",
     Transport::Ib, Some(false), Some("link-layer")),
    ("must not: a training line with `] INFO ` is no record",
     "[2024-05-01 10:00:00] INFO step 10 loss 2.3\n",
     Transport::Unknown, None, None),
];

#[test]
fn each_kind_of_evidence_decides_and_is_named() {
    for row in ROWS {
        let a = decides(row);
        if a.inter_node_transport != Transport::Unknown {
            assert!(!a.why.is_empty(), "{}: no why", row.0);
        }
    }
}

#[test]
fn why_is_in_the_text_and_markdown_output() {
    let a = run(ROWS[0].1);
    assert_eq!(a.why, "nNodes 2; network IB; link layer IB");
    assert!(
        netcheck::logscan::render::text(&a).contains("why: nNodes 2; network IB; link layer IB")
    );
    assert!(netcheck::logscan::render::markdown(&a).contains("| why | nNodes 2; network IB"));
}

#[test]
fn garbled_host_names_are_not_more_hosts() {
    // Interleaved output glued a record onto another's text; a line lost the host's front.
    let a = run("ljm:803564:1 [1] NCCL INFO Using network Socket\n\
                 ljm:803563:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n\
                 ljm:803563:1 [0] NCCL INFO comm 0x9 rank 0 nranks 280356ljm:803564:1 [1] NCCL INFO comm 0x8 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n\
                 ljm:803563:1 [0] NCCL INFO comm 0x9 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n");
    assert_eq!(a.hosts, ["ljm"]);
    assert_eq!(a.inter_node_transport, Transport::None);
}

#[test]
fn a_host_name_torn_before_any_whole_one_is_not_another_host() {
    // Interleaved output cut the front off a process's first line (`pu-node-7` for
    // `gpu-node-7`), before any line showed the whole name; the other processes print it whole.
    let log = "pu-node-7:200:200 [1] NCCL INFO cudaDriverVersion 12040\n\
               gpu-node-7:200:200 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>\n\
               gpu-node-7:200:201 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n\
               gpu-node-7:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>\n\
               gpu-node-7:100:101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n\
               gpu-node-7:100:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
               gpu-node-7:200:201 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n";
    let a = run(log);
    assert_eq!(a.hosts, ["gpu-node-7"]);
    assert_eq!(a.inter_node_transport, Transport::None);
    // The whole name first, as before: the same answer.
    let whole_first: String = log
        .lines()
        .skip(1)
        .chain(log.lines().take(1))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(run(&whole_first).hosts, ["gpu-node-7"]);
    // A torn spelling that a process dropped for the whole name is no one's name: the same
    // tear on another process's line later keeps that process's whole name.
    let log = "tesla-106:100:100 [0] NCCL INFO Bootstrap : Using eno2:192.168.1.106<0>\n\
               sla-106:200:200 [1] NCCL INFO Bootstrap : Using eno2:192.168.1.106<0>\n\
               tesla-106:200:200 [1] NCCL INFO NET/Socket : Using [0]eno2:192.168.1.106<0>\n\
               sla-106:100:101 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n\
               tesla-106:100:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
               tesla-106:200:201 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n";
    let a = run(log);
    assert_eq!(a.hosts, ["tesla-106"]);
    assert_eq!(a.inter_node_transport, Transport::None);
    // One process alone, its first NCCL line glued onto the program's output and another
    // onto an earlier record: three spellings, one host. (Which one is the name the lines
    // cannot say: a torn `23` ends `worker-23` as `node01` ends `trainingnode01`.)
    let log = "Use GPU: 0 for trainingnode01:3384:3384 [0] NCCL INFO Bootstrap : Using [0]eno1:192.168.50.11<0>\n\
               node01:3384:3384 [0] NCCL INFO NET/Socket : Using [0]eno1:192.168.50.11<0>\n\
               node01:3384:3414 [0] NCCL INFO Setting affinity for GPU 0 to 03f03fnode01:3384:3414 [0] NCCL INFO Using 256 threads, Min Comp Cap 6, Trees enabled up to size -2\n\
               node01:3384:3414 [0] NCCL INFO comm 0x7fe3d4001980 rank 0 nranks 1 cudaDev 0 nvmlDev 0 - Init COMPLETE\n";
    let a = run(log);
    assert_eq!(a.hosts.len(), 1, "{:?}", a.hosts);
    assert_eq!(a.inter_node_transport, Transport::None);
}

#[test]
fn records_glued_by_interleaved_output_keep_their_messages() {
    // Rank 0's `Init COMPLETE` lost its newline: the word runs into rank 1's host, which an
    // earlier line showed whole. Rank 1's `Using network` came with Ray's tag and dedup tail.
    let log = "(W pid=1) h-7:1:1 [0] NCCL INFO Using network IB\n\
               (W pid=2) h-7:2:2 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.7<0>\n\
               (W pid=1) h-7:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n\
               (W pid=2) h-7:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n\
               (W pid=1) h-7:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETEh-7:2:2 [1] NCCL INFO Using network IB [repeated 3x across cluster](W pid=2) h-7:2:2 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n";
    let a = run(log);
    assert_eq!(a.hosts, ["h-7"]);
    assert_eq!(a.networks, ["IB"]);
    assert_eq!(a.inter_node_transport, Transport::None);
    assert!(!has(&a, "init-incomplete"), "{:?}", a.findings);
    for rank in &a.per_rank {
        assert_eq!(
            rank.last_phase.as_deref(),
            Some("init-complete"),
            "{rank:?}"
        );
    }
}

#[test]
fn link_local_socket_addresses() {
    let two_nodes = "a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
        a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]pod-id-link0:169.254.170.23<0>\n\
        a:1:1 [0] NCCL INFO Using network Socket\n\
        a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n";
    let a = run(two_nodes);
    let f = a
        .findings
        .iter()
        .find(|f| f.id == "socket-link-local")
        .expect("finding");
    assert!(f.message.contains("pod-id-link0"), "{}", f.message);
    assert!(f.hint.as_deref().unwrap().contains("^pod-id-link0"));
    // One node: the sockets never leave the host.
    let one_node = two_nodes.replace("nNodes 2 localRanks 1", "nNodes 1 localRanks 2");
    assert!(!has(&run(&one_node), "socket-link-local"));
    // RDMA between nodes: the Socket list is not used.
    let rdma = "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:fe80::1%eth1<0>\n\
        a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n\
        a:1:1 [0] NCCL INFO Using network IB\n";
    assert!(!has(&run(rdma), "socket-link-local"));
}

#[test]
fn a_libfabric_warning_that_leaves_efa_usable_is_not_a_missing_provider() {
    let log = "libfabric:12:1700000000::efa:mr:efa_mr_reg_impl():123<warn> Unable to register MR with FI_HMEM\n\
        a:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 nics)\n\
        a:1:1 [0] NCCL INFO Using network Libfabric\n\
        a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n";
    let a = run(log);
    assert_eq!(a.inter_node_transport, Transport::Efa);
    assert!(!has(&a, "efa-provider-missing"), "{:?}", a.findings);
    // Without a provider selected, the same warning is one.
    let missing = "libfabric:12:1700000000::efa:core:efa_device_init():99<warn> provider efa output empty list\n\
        a:1:1 [0] NCCL INFO NET/OFI No eligible providers were found\n";
    assert!(has(&run(missing), "efa-provider-missing"));
}

#[test]
fn multi_node_nvlink_beside_efa_says_which_fabric_each_link_used() {
    let log = "a:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)\n\
        a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL/read\n\
        b:2:9 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)\n\
        b:2:9 [0] NCCL INFO Channel 00/0 : 72[0] -> 0[0] [receive] via NET/Libfabric/0/GDRDMA\n";
    let a = run(log);
    assert_eq!(a.inter_node_transport, Transport::Efa);
    assert!(!has(&a, "mixed-transports"), "{:?}", a.findings);
    let f = a
        .findings
        .iter()
        .find(|f| f.id == "multi-node-nvlink")
        .expect("finding");
    assert!(f.message.contains("efa"), "{}", f.message);
    // NVLink alone: the nvlink transport, not single-node, not a layout error.
    let nvl = run("a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL/read\n");
    assert_eq!(nvl.inter_node_transport, Transport::Nvlink);
    assert!(has(&nvl, "multi-node-nvlink"));
    assert!(!has(&run(ROWS[0].1), "multi-node-nvlink"));
}

#[test]
fn one_pod_of_a_multi_node_job_is_not_simulated_nodes_nor_a_hang() {
    let mut log = String::new();
    for dev in 0..8 {
        log.push_str(&format!(
            "pod-0:{p}:{p} [{dev}] NCCL INFO ncclCommInitRankConfig comm 0x{dev}1 rank {dev} nranks 16 cudaDev {dev} nvmlDev {dev} busId 1000 commId 0xabc - Init START\n\
             pod-0:{p}:{p} [{dev}] NCCL INFO comm 0x{dev}1 rank {dev} nRanks 16 nNodes 2 localRanks 8 localRank {dev} MNNVL 0\n",
            p = 100 + dev
        ));
    }
    let a = run(&log);
    assert!(!has(&a, "simulated-nodes"), "{:?}", a.findings);
    let stuck = a
        .findings
        .iter()
        .find(|f| f.id == "init-incomplete")
        .expect("finding");
    assert_eq!(stuck.severity, netcheck::logscan::Severity::Warn);
}

/// aws-ofi-nccl 1.13+'s tuner prints each communicator's size and node count as NCCL hands
/// them over (`Tuner init: comm with 16 ranks and 2 nodes.`), a `NET/` line that `grep NET/`
/// keeps where the communicator lines are gone. Several nodes over the OFI plugin's TCP
/// provider is a fallback; `1 nodes` proves nothing (under multi-node NVLink NCCL counts a
/// clique as one node, and this line does not say whether the communicator is one).
#[test]
fn the_ofi_tuner_counts_the_nodes_of_a_net_excerpt() {
    let log = |tuner: &str| {
        format!(
            "a:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0\n\
             a:1:1 [0] NCCL INFO NET/OFI Using Libfabric version 1.22\n\
             a:1:1 [0] NCCL INFO NET/OFI Selected Provider is tcp (found 1 nics)\n\
             a:1:1 [0] NCCL INFO NET/OFI {tuner}\n"
        )
    };
    let a = run(&log("Tuner init: comm with 16 ranks and 2 nodes."));
    assert_eq!(
        (a.inter_node_transport, a.socket_fallback, a.nodes),
        (Transport::Socket, Some(true), Some(2)),
        "{}",
        a.why
    );
    assert!(a.basis.iter().any(|b| b == "nnodes"), "{:?}", a.basis);
    let a = run(&log(
        "Region Tuner init (platform 2): comm with 4 ranks and 1 nodes.",
    ));
    assert_eq!(
        (a.inter_node_transport, a.socket_fallback, a.nodes),
        (Transport::Unknown, None, None),
        "{}",
        a.why
    );
}

/// Bootstrap ends only once every rank of the communicator has checked in with the root
/// (bootstrap.cc prints `Bootstrap timings` at the end of `bootstrapInit`, 2.23+). One rank
/// of a two-rank communicator that stops there shows that its peer started, elsewhere: the
/// log is one pod's, not a rank that never came (a warning); the same rank stopped before it
/// is the hang captured on the H200 (`h200/hang-init.log`: an error).
#[test]
fn a_rank_past_bootstrap_shows_that_no_rank_is_missing() {
    let start = "\
pod-a:7:7 [0] NCCL INFO Using network Socket
pod-a:7:7 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init START
";
    let stuck = |log: &str| {
        let a = run(log);
        let f = finding(&a, "init-incomplete")
            .expect("init-incomplete")
            .clone();
        (
            f.severity,
            f.message,
            f.hint.unwrap_or_default(),
            a.per_rank[0].last_phase.clone(),
        )
    };
    let (severity, message, hint, _) = stuck(start);
    assert_eq!(severity, Severity::Error, "{message}");
    assert!(hint.contains("check that every rank started"), "{hint}");
    let past = format!(
        "{start}pod-a:7:7 [0] NCCL INFO Bootstrap timings total 0.633247 (create 0.000033, send 0.000110, recv 0.632491, ring 0.000067, delay 0.000002)\n"
    );
    let (severity, message, hint, phase) = stuck(&past);
    assert_eq!(severity, Severity::Warn, "{message}");
    assert!(message.contains("stopped at `bootstrapped`"), "{message}");
    assert!(message.contains("only 1 of 2 ranks"), "{message}");
    assert!(hint.contains("none is missing"), "{hint}");
    assert_eq!(phase.as_deref(), Some("bootstrapped"));
}

/// Up to NCCL 2.22, `Init START` is printed once bootstrap is done (init.cc prints it after
/// bootstrapInit returns, and the bootstrap root answers no rank before all have checked
/// in); 2.23+ print it before bootstrap. So a rank whose last line is an old-form `Init
/// START` shows that the ranks missing from the log did start. The form decides where it
/// can (no API name in front: before 2.21; `[Rank N]` in front: 2.29+); `ncclCommInitRank
/// comm …` is the form of 2.21 to 2.28, and there the release the log names decides; a
/// log that names none is read as the newer order, where the rank may wait for a rank that
/// never came. `MNNVL busId …` (2.21+) is printed as initTransportsRank starts, past
/// bootstrap in every release.
#[test]
fn an_init_start_of_releases_before_2_23_comes_after_bootstrap() {
    let version = |v: &str| format!("pod-a:7:7 [0] NCCL INFO NCCL version {v}+cuda12.4\n");
    let named = "pod-a:7:7 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init START\n";
    let stuck = init_incomplete;
    let cases = [
        // 2.18's form: past bootstrap whatever the version line says.
        (
            "pod-a:7:7 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init START\n".to_string(),
            Severity::Warn,
            "bootstrapped",
        ),
        (format!("{}{named}", version("2.21.5")), Severity::Warn, "bootstrapped"),
        (format!("{}{named}", version("2.23.4")), Severity::Error, "init-start (bootstrap)"),
        (named.to_string(), Severity::Error, "init-start (bootstrap)"),
        (
            format!("{named}pod-a:7:7 [0] NCCL INFO MNNVL busId 0x1000 fabric UUID 0.0 cliqueId 0x0 state 3 healthMask 0x0\n"),
            Severity::Warn,
            "bootstrapped",
        ),
    ];
    for (log, severity, phase) in cases {
        let (got, message) = stuck(&log);
        assert_eq!(got, severity, "{log}{message}");
        assert!(
            message.contains(&format!("stopped at `{phase}`")),
            "{log}{message}"
        );
    }
}

/// Ranks of one communicator that finished init show that one which did not was left behind
/// only where the log goes on after that rank's last record: a log (one source) that ends
/// while the rank still prints its init lines was cut there, or the job is still starting.
#[test]
fn a_rank_still_connecting_when_the_log_ends_was_not_left_behind() {
    let head = "\
h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init START
h:2:2 [1] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 commId 0xabc - Init START
h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0
h:2:2 [1] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0
";
    let done = "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init COMPLETE\n";
    let connecting = "h:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n";
    let severity = |log: &str| {
        let a = run(log);
        let f = finding(&a, "init-incomplete").expect("init-incomplete");
        assert!(
            f.message.contains("(rank 1) stopped at `connecting`"),
            "{}",
            f.message
        );
        f.severity
    };
    // Rank 1 connected after rank 0 finished, and then the log ends.
    assert_eq!(
        severity(&format!("{head}{done}{connecting}")),
        Severity::Warn
    );
    // Rank 0 finished after rank 1's last line, and rank 1 never did: left behind.
    assert_eq!(
        severity(&format!("{head}{connecting}{done}")),
        Severity::Error
    );
}

/// Processes that share one stdout (a pod running one process per GPU, a job writing to one
/// file) tear each other's lines where their output reaches it in blocks rather than lines
/// (C stdio fully buffering a pipe or a file, 4 KiB at a time; a launcher relaying each
/// pipe in fixed-size reads): the file holds each process's output in the order the blocks
/// were written, and a line cut at a block's end goes on where that process's next block
/// lands. There the order of different processes' lines shows nothing about who finished
/// first; the same lines unbroken (written a line at a time) do.
#[test]
fn torn_lines_of_block_buffered_processes_do_not_show_a_rank_left_behind() {
    let start = |host: &str, pid: u32, rank: u32| {
        format!(
            "{host}:{pid}:{pid} [{rank}] NCCL INFO ncclCommInitRank comm 0x{pid} rank {rank} nranks 2 cudaDev {rank} nvmlDev {rank} busId {rank}000 commId 0xabc - Init START\n\
                 {host}:{pid}:{pid} [{rank}] NCCL INFO comm 0x{pid} rank {rank} nRanks 2 nNodes 1 localRanks 2 localRank {rank} MNNVL 0\n"
        )
    };
    let connect = |host: &str, pid: u32, rank: u32| {
        format!(
            "{host}:{pid}:{pid} [{rank}] NCCL INFO Channel 00/0 : {rank}[{rank}] -> {peer}[{peer}] via P2P/IPC",
            peer = 1 - rank
        )
    };
    let done = "ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 0000 commId 0xabc - Init COMPLETE\n";
    let stuck = |log: &str| {
        let (severity, message) = init_incomplete(log);
        assert!(
            message.contains("(rank 1) stopped at `connecting`"),
            "{message}"
        );
        (severity, message)
    };
    let (a0, a1) = (start("node-a", 1, 0), start("node-a", 2, 1));
    let (c0, c1) = (connect("node-a", 1, 0), connect("node-a", 2, 1));

    // Line-buffered: rank 0 finished after rank 1's last line, and rank 1 never did.
    let whole = format!("{a0}{a1}{c1}\n{c0}\nnode-a:1:1 [0] NCCL INFO {done}");
    let (severity, message) = stuck(&whole);
    assert_eq!(severity, Severity::Error, "{message}");
    assert!(!message.contains("in blocks"), "{message}");

    // Rank 0's buffer ended inside a message, rank 1's was written next, and the rest of
    // the cut line starts rank 0's next buffer: two processes' records on one line.
    let (cut, rest) = c0.split_at(c0.len() - "P2P/IPC".len());
    let glued = format!("{a0}{cut}{a1}{c1}\n{rest}\nnode-a:1:1 [0] NCCL INFO {done}");
    let (severity, message) = stuck(&glued);
    assert_eq!(severity, Severity::Warn, "{message}");
    assert!(
        message.contains("glued together (output passed on in blocks, not lines)"),
        "{message}"
    );

    // Cut inside the prefix instead: `node-` ends one buffer, `a:1:1 [0] …` starts the next,
    // and the host name comes glued (`node-node-a`) and cut (`a`).
    let garbled = format!("{a0}{c0}\nnode-{a1}{c1}\na:1:1 [0] NCCL INFO {done}");
    let (severity, message) = stuck(&garbled);
    assert_eq!(severity, Severity::Warn, "{message}");
    assert!(message.contains("in blocks, not lines"), "{message}");
}

/// A job restarted after a failed init (torchrun's `--max-restarts`, an elastic agent, Ray
/// Train's retries) starts new processes on the same GPUs, and a container's log keeps every
/// attempt: the first attempt's rank stuck in init was given up, not the job, once a process
/// that started later on its GPU completes. Two processes sharing a GPU at the same time
/// (simulated nodes) are no restart.
#[test]
fn a_restart_that_got_through_is_no_hang_of_the_job() {
    let line = |pid: u32, dev: u32, rank: u32, comm: &str, end: &str| {
        format!(
            "node-a:{pid}:{pid} [{dev}] NCCL INFO ncclCommInitRank comm 0x{pid} rank {rank} nranks 2 cudaDev {dev} nvmlDev {dev} busId {dev}000 commId 0x{comm} - Init {end}\n"
        )
    };
    let comm = |pid: u32, dev: u32, rank: u32| {
        format!(
            "node-a:{pid}:{pid} [{dev}] NCCL INFO comm 0x{pid} rank {rank} nRanks 2 nNodes 1 localRanks 2 localRank {rank} MNNVL 0\n"
        )
    };
    let connect = |pid: u32, dev: u32, rank: u32| {
        format!(
            "node-a:{pid}:{pid} [{dev}] NCCL INFO Channel 00/0 : {rank}[{dev}] -> {peer}[{dev}] via P2P/IPC\n",
            peer = 1 - rank
        )
    };
    let stuck = init_incomplete;
    // The first attempt: rank 0 waits in bootstrap for a rank 1 that never comes.
    let first = line(10, 0, 0, "111", "START");
    let (severity, message) = stuck(&first);
    assert_eq!(severity, Severity::Error, "{message}");

    // The agent restarts the workers; both ranks of the new attempt get through.
    let second = [
        line(20, 0, 0, "222", "START"),
        line(21, 1, 1, "222", "START"),
        comm(20, 0, 0),
        comm(21, 1, 1),
        line(20, 0, 0, "222", "COMPLETE"),
        line(21, 1, 1, "222", "COMPLETE"),
    ]
    .concat();
    let (severity, message) = stuck(&format!("{first}[W] Restarting worker group\n{second}"));
    assert_eq!(severity, Severity::Warn, "{message}");
    assert!(message.contains("node-a:10 (rank 0)"), "{message}");
    assert!(message.contains("the job was restarted"), "{message}");

    // Two processes on GPU 0 at once (simulated nodes): rank 0 finished after rank 1's last
    // line, and rank 1 never did. Left behind, as before.
    let shared = [
        line(30, 0, 0, "333", "START"),
        line(31, 0, 1, "333", "START"),
        comm(30, 0, 0),
        comm(31, 0, 1),
        connect(31, 0, 1),
        connect(30, 0, 0),
        line(30, 0, 0, "333", "COMPLETE"),
    ]
    .concat();
    let (severity, message) = stuck(&shared);
    assert_eq!(severity, Severity::Error, "{message}");
    assert!(!message.contains("restarted"), "{message}");
}

/// Ray's log deduplication (on by default since Ray 2.5) prints the first of several
/// workers' lines that match once every word holding a digit is dropped, then one copy with
/// `[repeated Nx across cluster]` for the rest: communicator init lines differ only in such
/// words, so most workers' `Init COMPLETE` never reaches the driver's log. Where init lines
/// carry that marker, a rank without its completion is no hang; without it, it is.
#[test]
fn ray_folding_init_lines_hides_completions_not_a_hang() {
    let log = |repeated: &str| {
        format!(
            "(RayTrainWorker pid=1, ip=10.0.0.1) h1:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init START\n\
             (RayTrainWorker pid=2, ip=10.0.0.2) h2:2:2 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 4 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init START{repeated}\n\
             (RayTrainWorker pid=1, ip=10.0.0.1) h1:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init COMPLETE\n"
        )
    };
    let stuck = init_incomplete;
    let (severity, message) = stuck(&log(" [repeated 3x across cluster]"));
    assert_eq!(severity, Severity::Warn, "{message}");
    assert!(message.contains("Ray folded init lines"), "{message}");
    let (severity, message) = stuck(&log(""));
    assert_eq!(severity, Severity::Error, "{message}");
    assert!(!message.contains("Ray folded"), "{message}");
}

/// The severity and message of the `init-incomplete` finding of `log`, which must have one.
fn init_incomplete(log: &str) -> (Severity, String) {
    let a = run(log);
    let f = finding(&a, "init-incomplete").expect("init-incomplete");
    (f.severity, f.message.clone())
}

/// The finding `id` of the analysis of `log`, which must fail.
fn failed_with(log: &str, id: &str) -> netcheck::logscan::Finding {
    let a = run(log);
    assert_eq!(
        a.verdict,
        netcheck::logscan::Verdict::Fail,
        "{:?}",
        a.findings
    );
    finding(&a, id)
        .unwrap_or_else(|| panic!("{id}: {:?}", a.findings))
        .clone()
}

/// A verbs work request that completes with an error fails NCCL's operation (net_ib.cc), as
/// does an aws-ofi-nccl request that completes with one:
/// at `NCCL_DEBUG=WARN` that WARN is often all the log holds of a failed job, without the
/// INFO breadcrumbs (`net.cc:1227 -> 6`) that `nccl-error` reads. The status is libibverbs'
/// `enum ibv_wc_status`; a flushed request (5) only follows an earlier failure.
#[test]
fn a_completion_error_fails_the_job_and_names_its_status() {
    let failed = |log: &str| failed_with(log, "net-traffic-error").message;
    // 2.21+ form; another process's flushed request first.
    let message = failed(
        "a:1:1 [0] transport/net_ib.cc:2453 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<36473> with status=5 opcode=0 len=0 vendor err 249 (Recv) localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2 hca mlx5_0\n\
         b:2:2 [0] transport/net_ib.cc:2453 NCCL WARN NET/IB: Got completion from peer 10.0.0.1<36473> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.2 remoteGids ::ffff:10.0.0.1 hca mlx5_0\n",
    );
    assert!(
        message.contains("status 12 IBV_WC_RETRY_EXC_ERR"),
        "{message}"
    );
    // 2.4–2.7 form.
    let message = failed(
        "a:1:1 [0] transport/net_ib.cc:786 NCCL WARN NET/IB : Got completion with error 4, opcode 0, len 0, vendor err 81\n",
    );
    assert!(
        message.contains("status 4 IBV_WC_LOC_PROT_ERR"),
        "{message}"
    );
    let message = failed(
        "a:1:1 [0] transport/net_socket.cc:219 NCCL WARN NET/Socket : socket progress error\n",
    );
    assert!(
        message.contains("NET/Socket progress error on a:1"),
        "{message}"
    );
    // aws-ofi-nccl: a request over the provider completed with an error.
    let message = failed(
        "a:1:1 [0] nccl_net_ofi_rdma.c:1487 NCCL WARN NET/OFI Request 0x7f3c completed with error. RC: -5. Error: 5 (Input/output error). Completed length: 0, Request: { dev: 0, size: 0 }\n",
    );
    assert!(
        message.contains("NET/OFI request completed with an error (5 (Input/output error)) on a:1"),
        "{message}"
    );
}

/// NCCL's verbs wrapper WARNs when a verbs call fails (misc/ibvwrap.cc, every release) and
/// NCCL returns a system error: the finding names the call and what usually causes it. The
/// same text as INFO is a probe of an optional call, and says nothing.
#[test]
fn a_failed_verbs_call_is_named_with_its_likely_cause() {
    let verbs = |log: &str| {
        let a = run(log);
        finding(&a, "ib-verbs-failed").map(|f| {
            (
                a.verdict,
                f.message.clone(),
                f.hint.clone().unwrap_or_default(),
            )
        })
    };
    let (verdict, message, hint) =
        verbs("a:1:1 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed with error Bad address\n").expect("finding");
    assert_eq!(verdict, netcheck::logscan::Verdict::Fail);
    assert!(
        message.contains("ibv_reg_mr (Bad address) on a:1"),
        "{message}"
    );
    assert!(hint.contains("nvidia-peermem"), "{hint}");
    let (_, message, hint) = verbs(
        "a:1:1 [0] misc/ibvwrap.cc:60 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory errno 12\n",
    )
    .expect("finding");
    assert!(
        message.contains("ibv_reg_mr_iova2 (Cannot allocate memory)"),
        "{message}"
    );
    assert!(hint.contains("ulimit -l"), "{hint}");
    let (_, _, hint) = verbs(
        "a:1:1 [0] misc/ibvwrap.cc:376 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.0.2\n",
    )
    .expect("finding");
    assert!(hint.contains("NCCL_IB_GID_INDEX"), "{hint}");
    assert!(
        verbs("a:1:1 [0] NCCL INFO Call to ibv_reg_dmabuf_mr failed with error Bad file descriptor errno 9\n").is_none()
    );
}

/// NCCL's socket layer WARNs once it gives up connecting to a peer (every release, in
/// several forms): the bootstrap and NET/Socket both connect this way, to ports chosen at
/// random, so the finding names the peer and the error and says what each error means.
#[test]
fn a_socket_connect_that_gave_up_names_the_peer_and_the_likely_cause() {
    let connect = |log: &str| {
        let f = failed_with(log, "socket-connect-failed");
        (f.message, f.hint.unwrap_or_default())
    };
    let (message, hint) = connect(
        "a:1:1 [0] include/socket.h:390 NCCL WARN Connect to 192.168.80.157<34630> failed : No route to host\n",
    );
    assert!(
        message.contains("to 192.168.80.157<34630>: No route to host"),
        "{message}"
    );
    assert!(hint.contains("security group"), "{hint}");
    let (message, hint) = connect(
        "a:1:1 [0] misc/socket.cc:578 NCCL WARN socketPollConnect: connect to 10.0.0.2<43215> returned Connection refused, exceeded error retry count after 35 attempts\n",
    );
    assert!(
        message.contains("to 10.0.0.2<43215>: Connection refused"),
        "{message}"
    );
    assert!(hint.contains("exited or has not started"), "{hint}");
}

/// The same job told in an earlier release's lines and in 2.29/2.30's, which changed how
/// several lines look (each change noted): both must read the same. Two hosts over RoCE, a
/// completion error, NCCL's error traceback, and a rank whose init never completed.
#[test]
fn nccl_2_29_and_2_30_lines_read_as_the_releases_before() {
    // 2.26-2.28 forms.
    let before = "\
a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
a:1:1 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>
a:1:2 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.
a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
a:1:2 [0] NCCL INFO Initialized NET plugin IB
a:1:2 [0] NCCL INFO Assigned NET plugin IB to comm
a:1:2 [0] NCCL INFO Using network IB
a:1:1 [0] NCCL INFO ncclCommInitRankConfig comm 0x5a rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x77 - Init START
a:1:1 [0] NCCL INFO comm 0x5a rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
a:1:9 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA

[2026-06-04 10:00:00] a:1:9 [0] transport/net_ib/connect.cc:1200 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45678> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2 hca mlx5_0
a:1:9 [0] NCCL INFO transport/net.cc:1311 -> 6
a:1:1 [0] NCCL INFO init.cc:1917 -> 6
";
    // 2.29/2.30 forms of the same lines: `[Rank %d] ` before `Init START` (2.29), the rail
    // and plane ids in the port list, the function in a WARN's location and in the
    // traceback (2.30 `INFO_LOC`).
    let after = "\
a:1:1 [0] NCCL INFO NCCL version 2.30.7+cuda13.0
a:1:1 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>
a:1:2 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.
a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1:0:0/RoCE [1]mlx5_1:1::1/RoCE [RO]; OOB eth0:10.0.0.1<0>
a:1:2 [0] NCCL INFO Initialized NET plugin IB
a:1:2 [0] NCCL INFO Assigned NET plugin IB to comm
a:1:2 [0] NCCL INFO Using network IB
a:1:1 [0] NCCL INFO [Rank 0] ncclCommInitRankConfig comm 0x5a rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x77 - Init START
a:1:1 [0] NCCL INFO comm 0x5a rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
a:1:9 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA

[2026-06-04 10:00:00] a:1:9 [0] transport/net_ib/connect.cc:1200 (ncclIbTest) NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45678> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2 hca mlx5_0
a:1:9 [0] NCCL INFO transport/net.cc:1311 (recvProxyProgress) -> 6
a:1:1 [0] NCCL INFO init.cc:1917 (ncclCommInitRankDev) -> 6
";
    let (b, a) = (run(before), run(after));
    let findings = |x: &netcheck::logscan::Analysis| {
        let ids: Vec<_> = x
            .findings
            .iter()
            .map(|f| (f.id.clone(), f.severity))
            .collect();
        ids
    };
    let phases = |x: &netcheck::logscan::Analysis| {
        let phases: Vec<_> = x.per_rank.iter().map(|r| r.last_phase.clone()).collect();
        phases
    };
    assert_eq!(b.inter_node_transport, Transport::Roce, "{:?}", b.why);
    assert_eq!(
        b.verdict,
        netcheck::logscan::Verdict::Fail,
        "{:?}",
        findings(&b)
    );
    assert!(has(&b, "nccl-error"), "{:?}", findings(&b));
    assert_eq!(
        (
            a.inter_node_transport,
            a.socket_fallback,
            a.verdict,
            &a.basis
        ),
        (
            b.inter_node_transport,
            b.socket_fallback,
            b.verdict,
            &b.basis
        )
    );
    assert_eq!(findings(&a), findings(&b));
    assert_eq!(phases(&a), phases(&b));
}

/// 2.29+ no longer prints a line per NET API version it looked for in a plugin library; a
/// library with none it can take is `External network plugin %s is unsupported`, and NCCL
/// goes on with its own modules: the plugin failed, as the earlier releases' last
/// `Failed to find ncclNetPlugin symbol (...)` line says.
#[test]
fn an_unsupported_plugin_library_is_a_failed_plugin_in_2_29() {
    let log = |unsupported: &str| {
        format!(
            "a:1:1 [0] NCCL INFO NET/Plugin: Plugin name set by env to libnccl-net-ofi.so\n\
             a:1:1 [0] NCCL INFO {unsupported}\n\
             a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
             a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
             a:1:1 [0] NCCL INFO Using network Socket\n\
             a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
        )
    };
    let before = run(&log(
        "NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols v4 and lower are not supported.",
    ));
    let after = run(&log(
        "External network plugin libnccl-net-ofi.so is unsupported",
    ));
    assert_eq!(before.socket_fallback, Some(true), "{:?}", before.why);
    assert_eq!(
        (
            after.inter_node_transport,
            after.socket_fallback,
            after.verdict
        ),
        (
            before.inter_node_transport,
            before.socket_fallback,
            before.verdict
        )
    );
    let ids = |x: &netcheck::logscan::Analysis| {
        let ids: Vec<_> = x.findings.iter().map(|f| f.id.clone()).collect();
        ids
    };
    assert_eq!(ids(&after), ids(&before));
}

/// aws-ofi-nccl refuses EFA when the libfabric it loaded is older than its EFA support needs
/// (`EFA provider requires at least libfabric version 1.22.0.`, a WARN of 1.13.0+; 1.18.0
/// before): NCCL goes on over TCP. The finding says which libfabric is needed, not the
/// generic EFA checklist.
#[test]
fn a_libfabric_older_than_aws_ofi_nccl_needs_is_named() {
    let log = "\
a:1:1 [0] NCCL INFO NCCL version 2.27.7+cuda12.9
a:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)
a:1:2 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.17.0
a:1:2 [0] NCCL INFO NET/OFI Using Libfabric version 1.21

a:1:2 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):651 NCCL WARN NET/OFI EFA provider requires at least libfabric version 1.22.0.

a:1:2 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):418 NCCL WARN NET/OFI aws-ofi-nccl initialization failed
a:1:2 [0] NCCL INFO NET/IB : No device found.
a:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
a:1:2 [0] NCCL INFO Using network Socket
a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
";
    let a = run(log);
    assert_eq!(
        (a.inter_node_transport, a.socket_fallback),
        (Transport::Socket, Some(true)),
        "{:?}",
        a.why
    );
    let fallback = finding(&a, "socket-fallback").expect("socket-fallback");
    let hint = fallback.hint.as_deref().unwrap_or_default();
    assert!(
        hint.contains("libfabric 1.22.0 or newer and loaded libfabric 1.21"),
        "{hint}"
    );
    assert!(
        fallback
            .evidence
            .iter()
            .any(|e| e.text.contains("requires at least libfabric")),
        "{:?}",
        fallback.evidence
    );
}

/// 1.21's C++ entry points catch what init throws and say so (`Caught exception in plugin
/// init: %s`); `fi_fabric` failing is `Couldn't open a fabric provider` (every release). Either
/// is the plugin failing, as `aws-ofi-nccl initialization failed` is.
#[test]
fn aws_ofi_nccl_init_failures_of_every_release_are_plugin_failures() {
    let log = |failure: &str| {
        format!(
            "a:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)\n\
             a:1:2 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.21.1\n\
             \n\
             a:1:2 [0] ncclResult_t nccl_net_ofi_init_v10(ncclDebugLogger_t):120 NCCL WARN NET/OFI {failure}\n\
             a:1:2 [0] NCCL INFO NET/IB : No device found.\n\
             a:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
             a:1:2 [0] NCCL INFO Using network Socket\n\
             a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
        )
    };
    let reference = run(&log("aws-ofi-nccl initialization failed"));
    assert_eq!(reference.socket_fallback, Some(true), "{:?}", reference.why);
    for failure in [
        "Caught exception in plugin init: fi_getinfo failed: No data available",
        "Couldn't open a fabric provider. RC: -61, ERROR: No data available",
        "Couldn't create fabric. RC: -12, ERROR: Cannot allocate memory",
    ] {
        let a = run(&log(failure));
        assert_eq!(
            (a.inter_node_transport, a.socket_fallback, a.verdict),
            (
                reference.inter_node_transport,
                reference.socket_fallback,
                reference.verdict
            ),
            "{failure}"
        );
        let said = |x: &netcheck::logscan::Analysis| {
            let said: Vec<_> = x
                .findings
                .iter()
                .map(|f| (f.id.clone(), f.message.clone()))
                .collect();
            said
        };
        // The fallback names the failed plugin, and the line is no stray WARN.
        assert_eq!(said(&a), said(&reference), "{failure}");
    }
}

/// 2.30 checks the peer's version in the bootstrap handshake and WARNs `NCCL version
/// mismatch with remote peer %s (local: %s, remote %s)`: the other host's version is known
/// even when its lines are not in the log.
#[test]
fn a_peer_version_mismatch_is_mixed_versions() {
    let log = "\
a:1:1 [0] NCCL INFO NCCL version 2.30.7+cuda13.0
a:1:1 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>

[2026-06-04 10:00:00] a:1:5 [0] bootstrap.cc:880 (bootstrapInit) NCCL WARN NCCL version mismatch with remote peer 10.0.0.2<45678> (local: 2.30.7, remote 2.28.9)
a:1:5 [0] NCCL INFO bootstrap.cc:884 (bootstrapInit) -> 3
";
    let a = run(log);
    let mixed = finding(&a, "mixed-nccl-versions").expect("mixed-nccl-versions");
    assert!(
        mixed.message.contains("2.28.9") && mixed.message.contains("2.30.7"),
        "{}",
        mixed.message
    );
    assert!(has(&a, "nccl-error"), "{:?}", a.findings);
    // One version and no such WARN: nothing mixed.
    assert!(!has(
        &run(&log[..log.find("\n\n").unwrap() + 1]),
        "mixed-nccl-versions"
    ));
}

/// 2.26+ bootstraps over the network plugin when asked (`NCCL_OOB_NET_ENABLE=1`) and says
/// `Bootstrap: Using %s:%d`: a device and its index, not an interface and its address. Two
/// processes of one host on two indexes are not two hosts.
#[test]
fn bootstrap_over_the_network_plugin_names_no_address() {
    let log = "\
a:1:1 [0] NCCL INFO Bootstrap: Using mlx5_0:0
a:2:2 [1] NCCL INFO Bootstrap: Using mlx5_0:1
a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>
a:1:1 [0] NCCL INFO Using network IB
";
    let a = run(log);
    assert!(
        !a.basis.iter().any(|b| b == "distinct-hosts"),
        "{:?}",
        a.why
    );
    // The socket form still tells hosts apart by address.
    let two = run(&log
        .replace("mlx5_0:0", "eth0:10.0.0.1<0>")
        .replace("mlx5_0:1", "eth0:10.0.0.2<0>"));
    assert!(
        two.basis.iter().any(|b| b == "distinct-hosts"),
        "{:?}",
        two.why
    );
}

/// 2.26–2.27's graph/topo.cc WARNs `NET/TOPO : Couldn't find net with name %s` (a topology
/// file naming a NIC the host lacks; aws-ofi-nccl sets one on P-series): `TOPO` is NCCL's
/// own code, not a plugin naming itself. It was read as a network called TOPO, which
/// decided the transport (`other`) over the OFI provider's line, and the WARN went uncounted.
#[test]
fn a_topology_warning_names_no_network_plugin() {
    let host = |h: &str, pid: u32, rank: u32| {
        format!(
            "{h}:{pid}:{pid} [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n\
             {h}:{pid}:{pid} [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.16.3\n\
             {h}:{pid}:{pid} [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)\n\
             \n\
             {h}:{pid}:{pid} [0] graph/topo.cc:1316 NCCL WARN NET/TOPO : Couldn't find net with name rdmap16s27\n\
             {h}:{pid}:{pid} [0] NCCL INFO comm 0x{rank} rank {rank} nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
        )
    };
    let a = run(&(host("ip-10-0-1-5", 100, 0) + &host("ip-10-0-1-6", 200, 1)));
    assert_eq!(a.inter_node_transport, Transport::Efa, "{:?}", a.why);
    assert!(!a.why.contains("TOPO"), "{}", a.why);
    let warned = finding(&a, "nccl-warn").expect("the WARNs are counted");
    assert!(warned.message.contains('2'), "{}", warned.message);
}

/// 2.10–2.26 WARN `Error: network %s not found.` when `NCCL_NET` names a network that no
/// plugin or built-in transport registered: init fails, and the finding names the network.
/// aws-ofi-nccl's names (`AWS Libfabric` up to 1.12, `Libfabric` from 1.13, `OFI`) point at
/// the plugin.
#[test]
fn a_network_that_nccl_net_names_and_nobody_provides_is_named() {
    let log = |name: &str| {
        format!(
            "ip-10-0-1-5:1234:1234 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n\
             ip-10-0-1-5:1234:1234 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory\n\
             ip-10-0-1-5:1234:1234 [0] NCCL INFO NET/IB : No device found.\n\
             ip-10-0-1-5:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.1.5<0>\n\
             \n\
             ip-10-0-1-5:1234:1234 [0] misc/net.cc:232 NCCL WARN Error: network {name} not found.\n\
             ip-10-0-1-5:1234:1234 [0] NCCL INFO init.cc:1234 -> 5\n"
        )
    };
    for (name, plugin) in [("AWS Libfabric", true), ("OFI", true), ("IB", false)] {
        let a = run(&log(name));
        assert_eq!(a.verdict, netcheck::logscan::Verdict::Fail, "{name}");
        let f = finding(&a, "no-net-plugin").expect("no-net-plugin");
        assert!(f.message.contains(&format!("`{name}`")), "{}", f.message);
        let hint = f.hint.as_deref().unwrap_or("");
        assert_eq!(hint.contains("aws-ofi-nccl"), plugin, "{hint}");
        assert!(
            !has(&a, "nccl-warn"),
            "the WARN is the finding: {:?}",
            a.findings
        );
    }
}

/// 2.21+ `Connected to proxy localRank %d -> connection %p` (2.30: `tpRank`) comes while the
/// channels connect: a rank whose last line it is stopped connecting, not after its rings
/// were connected.
#[test]
fn a_proxy_connection_is_not_the_end_of_connection_setup() {
    let log = "\
a:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 101c0 commId 0xabc - Init START
a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0
a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0
a:1:3 [0] NCCL INFO Connected to proxy localRank 0 -> connection 0x7d41d0004f40
";
    let a = run(log);
    let phase = a.per_rank[0].last_phase.as_deref();
    assert_eq!(phase, Some("connecting"), "{:?}", a.per_rank);
    let stuck = finding(&a, "init-incomplete").expect("init-incomplete");
    assert!(stuck.message.contains("`connecting`"), "{}", stuck.message);
    let done = run(&format!(
        "{log}a:1:1 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n"
    ));
    assert_eq!(done.per_rank[0].last_phase.as_deref(), Some("connected"));
}

/// 2.12–2.20 echo `NCCL_NET_PLUGIN` as the library NCCL will load, without `NET/Plugin:`:
/// `Plugin name set by env to libnccl-net-ofi.so`. A plugin asked for by name and not found
/// is a fallback to sockets; `NCCL_NET_PLUGIN=none` (echoed `libnccl-net-none.so`, in either
/// form) turns plugins off on purpose and is not.
#[test]
fn a_plugin_asked_for_in_the_2_12_to_2_20_form_and_not_found_is_a_fallback() {
    let log = |echo: &str, library: &str| {
        let host = |h: &str, pid: u32, rank: u32| {
            format!(
                "{h}:{pid}:{pid} [0] NCCL INFO {echo}{library}\n\
                 {h}:{pid}:{pid} [0] NCCL INFO NET/Plugin : dlerror={library}: cannot open shared object file: No such file or directory No plugin found ({library}), using internal implementation\n\
                 {h}:{pid}:{pid} [0] NCCL INFO NET/IB : No device found.\n\
                 {h}:{pid}:{pid} [0] NCCL INFO NET/Socket : Using [0]ens5:10.0.0.{rank}<0>\n\
                 {h}:{pid}:{pid} [0] NCCL INFO Using network Socket\n\
                 {h}:{pid}:{pid} [0] NCCL INFO comm 0x{rank} rank {rank} nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n\
                 {h}:{pid}:{pid} [0] NCCL INFO Channel 00/0 : {other}[0] -> {rank}[0] [receive] via NET/Socket/0\n",
                other = 1 - rank
            )
        };
        host("a", 1, 0) + &host("b", 2, 1)
    };
    for echo in [
        "Plugin name set by env to ",
        "NET/Plugin: Plugin name set by env to ",
    ] {
        let asked = run(&log(echo, "libnccl-net-ofi.so"));
        assert_eq!(
            (asked.inter_node_transport, asked.socket_fallback),
            (Transport::Socket, Some(true)),
            "{echo}: {}",
            asked.why
        );
        let off = run(&log(echo, "libnccl-net-none.so"));
        assert_eq!(
            (off.inter_node_transport, off.socket_fallback),
            (Transport::Socket, Some(false)),
            "{echo}: {}",
            off.why
        );
    }
}

/// aws-ofi-nccl's AWS builds name the instance type their platform table matched (`Running
/// on p4d.24xlarge platform, …`). EFA without `/GDRDMA` is a problem on a P-series instance
/// from p4d on, which has GPUDirect RDMA, and expected on a G-series one, which has none.
#[test]
fn efa_without_gdr_is_judged_by_the_instance_type_the_plugin_names() {
    let log = |platform: &str| {
        let host = |h: &str, pid: u32, rank: u32| {
            format!(
                "{h}:{pid}:{pid} [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.16.3\n\
                 {h}:{pid}:{pid} [0] NCCL INFO NET/OFI Running on {platform} platform, topology file /opt/amazon/ofi-nccl/share/aws-ofi-nccl/xml/topo.xml\n\
                 {h}:{pid}:{pid} [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 nics)\n\
                 {h}:{pid}:{pid} [0] NCCL INFO Using network Libfabric\n\
                 {h}:{pid}:{pid} [0] NCCL INFO comm 0x{rank} rank {rank} nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n\
                 {h}:{pid}:{pid} [0] NCCL INFO Channel 00/0 : {other}[0] -> {rank}[0] [receive] via NET/Libfabric/0\n",
                other = 1 - rank
            )
        };
        host("a", 1, 0) + &host("b", 2, 1)
    };
    let p4d = run(&log("p4d.24xlarge"));
    assert_eq!(p4d.inter_node_transport, Transport::Efa, "{}", p4d.why);
    let f = finding(&p4d, "gdr-disabled").expect("gdr-disabled");
    assert_eq!(f.severity, netcheck::logscan::Severity::Warn);
    assert!(f.message.contains("p4d.24xlarge"), "{}", f.message);
    assert!(
        f.evidence[0].text.contains("Running on p4d"),
        "{:?}",
        f.evidence
    );
    let g6e = run(&log("g6e.48xlarge"));
    let f = finding(&g6e, "gdr-disabled").expect("gdr-disabled");
    assert_eq!(f.severity, netcheck::logscan::Severity::Info);
    assert!(f.message.contains("g6e.48xlarge"), "{}", f.message);
    // No platform line: the general finding, as before.
    let bare = run(&log("p4d.24xlarge").replace("Running on", "Looking at"));
    let f = finding(&bare, "gdr-disabled").expect("gdr-disabled");
    assert!(!f.message.contains("p4d"), "{}", f.message);
}

/// NCCL 2.30 compares the ranks' network device counts in init (init.cc): `Detected mixed
/// local Net device counts across ranks (min 3, max 4). Set NCCL_IGNORE_NET_MISMATCH=1 to
/// continue.` (WARN, init stops) or `... Ignoring due to NCCL_IGNORE_NET_MISMATCH.` (INFO):
/// a node short of a NIC, named as such whatever the network.
#[test]
fn nccl_2_30_mixed_net_device_counts_are_a_nic_count_mismatch() {
    let stopped = "\
a:1:1 [0] NCCL INFO NCCL version 2.30.7+cuda13.0
a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [RO]; OOB ib0:10.0.0.1<0>
a:1:1 [0] NCCL INFO Using network IB

[2026-06-04 10:00:00] a:1:1 [0] init.cc:1339 (initTransportsRank) NCCL WARN Detected mixed local Net device counts across ranks (min 3, max 4). Set NCCL_IGNORE_NET_MISMATCH=1 to continue.
a:1:1 [0] NCCL INFO init.cc:1340 (initTransportsRank) -> 5
";
    let a = run(stopped);
    assert_eq!(a.verdict, netcheck::logscan::Verdict::Fail);
    let f = finding(&a, "nic-count-mismatch").expect("nic-count-mismatch");
    assert_eq!(f.severity, netcheck::logscan::Severity::Error);
    assert!(f.message.contains("min 3, max 4"), "{}", f.message);
    assert!(
        !has(&a, "nccl-warn"),
        "the WARN is the finding: {:?}",
        a.findings
    );
    let went_on = run(&stopped
        .replace(
            "\n[2026-06-04 10:00:00] a:1:1 [0] init.cc:1339 (initTransportsRank) NCCL WARN",
            "a:1:1 [0] NCCL INFO",
        )
        .replace(
            "Set NCCL_IGNORE_NET_MISMATCH=1 to continue.",
            "Ignoring due to NCCL_IGNORE_NET_MISMATCH.",
        )
        .replace(
            "a:1:1 [0] NCCL INFO init.cc:1340 (initTransportsRank) -> 5\n",
            "",
        ));
    let f = finding(&went_on, "nic-count-mismatch").expect("nic-count-mismatch");
    assert_eq!(
        f.severity,
        netcheck::logscan::Severity::Warn,
        "{}",
        f.message
    );
    assert!(
        f.message.contains("NCCL_IGNORE_NET_MISMATCH"),
        "{}",
        f.message
    );
}

/// NCCL says why it turned GPUDirect RDMA off: `NET/IB : GPU Direct RDMA Disabled for HCA 0
/// 'mlx5_0' (no module)` (2.7–2.12: no nvidia-peermem) or, per GPU and NIC, `GPU Direct RDMA
/// Disabled for GPU 1a000 / HCA 0 (distance 5 > 4)` (2.7+: too far apart on PCI). The
/// gdr-disabled finding quotes the line and its hint follows it.
#[test]
fn gdr_disabled_quotes_why_nccl_turned_it_off() {
    let log = |why: &str| {
        let host = |h: &str, pid: u32, rank: u32| {
            format!(
                "{h}:{pid}:{pid} [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.{rank}<0>\n\
                 {h}:{pid}:{pid} [0] NCCL INFO {why}\n\
                 {h}:{pid}:{pid} [0] NCCL INFO Using network IB\n\
                 {h}:{pid}:{pid} [0] NCCL INFO comm 0x{rank} rank {rank} nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n\
                 {h}:{pid}:{pid} [0] NCCL INFO Channel 00/0 : {other}[0] -> {rank}[0] [receive] via NET/IB/0\n",
                other = 1 - rank
            )
        };
        host("a", 1, 0) + &host("b", 2, 1)
    };
    for (why, hint) in [
        (
            "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)",
            "nvidia-peermem",
        ),
        (
            "GPU Direct RDMA Disabled for GPU 1a000 / HCA 0 (distance 5 > 4)",
            "nvidia-smi topo",
        ),
    ] {
        let a = run(&log(why));
        assert_eq!(a.inter_node_transport, Transport::Ib, "{}", a.why);
        let f = finding(&a, "gdr-disabled").expect("gdr-disabled");
        assert!(
            f.evidence.iter().any(|e| e.text.contains(why)),
            "{:?}",
            f.evidence
        );
        assert!(
            f.hint.as_deref().unwrap_or("").contains(hint),
            "{:?}",
            f.hint
        );
    }
}

/// Every release WARNs `Bootstrap : no socket interface found` when no interface may carry
/// NCCL's sockets: `NCCL_SOCKET_IFNAME` naming one the pod lacks, the commonest way a job
/// on Kubernetes fails before init. The finding names the setting where NCCL echoed it.
#[test]
fn no_interface_for_the_sockets_is_named_with_the_setting() {
    let log = "\
a:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens5
a:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.6

a:1:1 [0] bootstrap.cc:98 NCCL WARN Bootstrap : no socket interface found
a:1:1 [0] NCCL INFO init.cc:1876 -> 3
";
    let a = run(log);
    assert_eq!(a.verdict, netcheck::logscan::Verdict::Fail);
    let f = finding(&a, "no-interface").expect("no-interface");
    assert_eq!(f.severity, netcheck::logscan::Severity::Error);
    assert!(
        f.message.contains("NCCL_SOCKET_IFNAME=ens5"),
        "{}",
        f.message
    );
    assert!(
        !has(&a, "nccl-warn"),
        "the WARN is the finding: {:?}",
        a.findings
    );
    // Init never reached the network: no transport to ask for.
    assert!(!has(&a, "transport-unknown"), "{:?}", a.findings);
    let bare = run(&log.replace(
        "a:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens5\n",
        "",
    ));
    let f = finding(&bare, "no-interface").expect("no-interface");
    assert!(!f.message.contains("IFNAME"), "{}", f.message);
}

/// 2.26+ mnnvl.cc WARNs when multi-node NVLink (GB200/GB300 NVL72) is there and unusable
/// because IMEX is not set up; 2.27+ stops init unless `NCCL_MNNVL_ENABLE=0`. It is its
/// own finding, not a stray WARN.
#[test]
fn multi_node_nvlink_without_imex_is_named() {
    let log = "\
gb-0:1:1 [0] NCCL INFO NCCL version 2.27.7+cuda12.9
gb-0:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>

[2026-06-04 10:00:00] gb-0:1:1 [0] mnnvl.cc:74 NCCL WARN MNNVL (cliqueSize 72) is available but not working on this system. Check the IMEX channel configuration (/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.
gb-0:1:1 [0] NCCL INFO init.cc:1500 -> 5
";
    let a = run(log);
    assert_eq!(a.verdict, netcheck::logscan::Verdict::Fail);
    let f = finding(&a, "mnnvl-not-working").expect("mnnvl-not-working");
    assert_eq!(f.severity, netcheck::logscan::Severity::Error);
    assert!(f.message.contains("72 GPUs"), "{}", f.message);
    assert!(
        f.hint.as_deref().unwrap_or("").contains("IMEX"),
        "{:?}",
        f.hint
    );
    assert!(!has(&a, "nccl-warn"), "{:?}", a.findings);
}

/// Every log of the project's fixtures (real H200 captures and grammar logs), retold in the
/// forms 2.29/2.30 print, reads as it did: the function after each WARN's and traceback's
/// source line (2.30 `(%s)`), `[Rank %d] ` before `Init START` (2.29). Transport, fallback,
/// verdict, findings and each rank's last phase are compared.
/// The captured and the grammar fixture logs (`logs/h200`, `logs/grammar`), in name order.
fn whole_fixture_logs() -> Vec<std::path::PathBuf> {
    let mut paths = Vec::new();
    for dir in ["h200", "grammar", "debug"] {
        let mut logs: Vec<_> = std::fs::read_dir(crate::util::fixture(&format!("logs/{dir}")))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        paths.extend(logs);
    }
    paths
}

/// What a retelling of a log must keep: transport, fallback, verdict, nodes, hosts, finding
/// ids and each rank's row (with its wrapper's tag when `tags`).
fn reading_of(log: &[u8], tags: bool) -> String {
    let a = netcheck::logscan::analyze_reader(
        std::io::Cursor::new(log.to_vec()),
        "t.log",
        &netcheck::logscan::Options::default(),
    )
    .expect("in memory");
    let mut ids: Vec<_> = a.findings.iter().map(|f| f.id.clone()).collect();
    ids.sort();
    let ranks: Vec<_> = (a.per_rank.iter())
        .map(|r| {
            let tag = if tags { r.tag.as_deref() } else { None };
            let place = (&r.host, r.pid, r.cuda_dev, tag, r.rank);
            format!("{place:?} {:?} {:?}", r.last_phase, r.inter_node_transport)
        })
        .collect();
    format!(
        "{:?} {:?} {:?} {:?} {:?} {ids:?} {ranks:#?}",
        a.inter_node_transport, a.socket_fallback, a.verdict, a.nodes, a.hosts
    )
}

#[test]
fn every_fixture_told_in_2_30_forms_reads_the_same() {
    use regex::bytes::Regex;
    let warn = Regex::new(r"(\[\d+\] [A-Za-z0-9_./-]+\.(?:cc|h|cu):\d+)( NCCL WARN )").unwrap();
    let crumb = Regex::new(r"( NCCL INFO [A-Za-z0-9_./-]+\.(?:cc|h|cu):\d+)( -> \d+)").unwrap();
    let start = Regex::new(
        r"( NCCL INFO )((?:ncclComm\w+ )?comm 0x[0-9a-f]+ rank (\d+) nranks \d+ .*- Init START)",
    )
    .unwrap();
    let summary = |log: &[u8]| reading_of(log, true);
    let mut retold = 0;
    for path in whole_fixture_logs() {
        let log = std::fs::read(&path).unwrap();
        let new = warn.replace_all(&log, &b"$1 (fn)$2"[..]);
        let new = crumb.replace_all(&new, &b"$1 (fn)$2"[..]);
        let new = start.replace_all(&new, &b"$1[Rank $3] $2"[..]);
        if new[..] == log[..] {
            continue;
        }
        retold += 1;
        assert_eq!(summary(&new), summary(&log), "{}", path.display());
    }
    assert!(retold >= 10, "only {retold} fixtures have such lines");
}

/// `kubectl logs --timestamps` (and `docker logs -t`) puts an RFC 3339 time in front of every
/// line; a node's own files under `/var/log/pods` (CRI) add the stream and a tag; syslog
/// writes the day in words before the host and program, `date` with the year after; docker
/// compose and CloudWatch put columns between bars in front; `ts '%.s'` writes seconds since
/// the epoch, the kernel's log seconds since boot. A record that lost NCCL's `host:pid`
/// prefix is told apart by its wrapper's tag, and the time was read as that tag: each such
/// line became a rank of its own. Every fixture told with a time on each line, in each of
/// these forms, reads as it does without.
#[test]
fn every_fixture_told_with_timestamps_reads_the_same() {
    // `tags`: compare the wrappers' tags too (syslog's host and program are one).
    let summary = reading_of;
    let mut told = 0;
    for path in whole_fixture_logs() {
        let log = std::fs::read(&path).unwrap();
        let plain = [summary(&log, false), summary(&log, true)];
        for form in 0..11 {
            let mut timed = Vec::new();
            for (n, line) in log.split_inclusive(|&b| b == b'\n').enumerate() {
                // A JSON record stays one: kubectl shows the text inside it (line numbers
                // go before it too).
                if !line.starts_with(b"{") || form == 7 || form == 8 {
                    let (s, us) = (n / 1000 % 60, n * 137 % 1_000_000);
                    let time = match form {
                        0 => format!("2026-12-06T22:00:{s:02}.{us:06}Z "),
                        1 => format!("2026-12-06T22:00:{s:02}.{us:06}123Z stdout F "),
                        2 => format!("Dec  6 22:00:{s:02} node-3 train[812]: "),
                        3 => format!("Sun Dec  6 22:00:{s:02} 2026 "),
                        4 => format!("trainer-1  | 2026-12-06T22:00:{s:02}.{us:06}Z "),
                        5 => format!("  | 2026-12-06T22:00:{s:02}.{us:06}Z | "),
                        // OpenMPI's `--timestamp-output`: `ctime`, glued onto the text.
                        6 => format!("Sun Dec  6 22:00:{s:02} 2026<stdout>:"),
                        // Line numbers: `cat -n`, `grep -n`.
                        7 => format!("{:6}\t", n + 1),
                        8 => format!("{}:", n + 1),
                        // Seconds since the epoch (`ts '%.s'`), since boot (the kernel's log).
                        9 => format!("{}.{us:06} ", 1_765_058_400 + n),
                        _ => format!("[{:5}.{us:06}] ", n / 100),
                    };
                    timed.extend_from_slice(time.as_bytes());
                }
                timed.extend_from_slice(line);
            }
            told += 1;
            // Syslog's host and program and compose's service are tags of their own.
            let tags = form != 2 && form != 4;
            let want = &plain[usize::from(tags)];
            assert_eq!(
                &summary(&timed, tags),
                want,
                "{} form {form}",
                path.display()
            );
        }
    }
    assert!(told >= 120, "only {told} retellings");
}

/// Logs exported from where clusters keep them: Elasticsearch/OpenSearch hits (`_source`),
/// Cloud Logging's structured entries (`jsonPayload`) and `gcloud logging read
/// --format=json` (a pretty-printed array), `aws logs filter-log-events` (pretty-printed,
/// `message` among other keys), OpenTelemetry records (`body.stringValue`), Splunk's search
/// export (`result._raw`), one object of an array per line. Every fixture told in each reads as its text does.
#[test]
fn every_fixture_exported_as_json_reads_the_same() {
    use serde_json::json;
    let summary = |log: &[u8]| reading_of(log, true);
    let pretty = |value: serde_json::Value| serde_json::to_string_pretty(&value).unwrap() + "\n";
    let mut told = 0;
    for path in whole_fixture_logs() {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if text.lines().any(|l| l.starts_with('{')) {
            continue;
        }
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let plain = summary(text.as_bytes());
        let one_per_line = |f: &dyn Fn(&str) -> serde_json::Value| -> String {
            lines.iter().map(|l| f(l).to_string() + "\n").collect()
        };
        let forms = [
            one_per_line(
                &|l| json!({"_index": "logs", "_source": {"@timestamp": "t", "message": l.trim_end()}}),
            ),
            one_per_line(&|l| json!({"jsonPayload": {"message": l}, "severity": "INFO"})),
            one_per_line(&|l| json!({"timeUnixNano": "1", "body": {"stringValue": l}})),
            one_per_line(&|l| json!({"preview": false, "result": {"_raw": l, "host": "h"}})),
            pretty(json!(
                lines
                    .iter()
                    .map(|l| json!({"textPayload": l, "resource": {"type": "k8s_container"}}))
                    .collect::<Vec<_>>()
            )),
            pretty(
                json!({"events": lines.iter().enumerate().map(|(i, l)| json!({"logStreamName": "s", "timestamp": i, "message": l, "eventId": i.to_string()})).collect::<Vec<_>>()}),
            ),
            format!(
                "[\n{}\n]\n",
                lines
                    .iter()
                    .map(|l| format!("  {}", json!({"message": l})))
                    .collect::<Vec<_>>()
                    .join(",\n")
            ),
        ];
        for (form, log) in forms.iter().enumerate() {
            told += 1;
            assert_eq!(
                summary(log.as_bytes()),
                plain,
                "{} form {form}",
                path.display()
            );
        }
    }
    assert!(told >= 100, "only {told} exports");
}

/// A WARN pasted without NCCL's `host:pid:tid` still carries the source location NCCL
/// prints before the marker (`<file>:<line>[ (<func>)]`). That is the record's, not a
/// wrapper's: before, each such line was a rank of its own named after a source file, and a
/// finding said NCCL failed "on transport/net_ib.cc:148".
#[test]
fn a_warn_pasted_without_its_host_is_no_rank_of_its_own() {
    let log = "NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n\
               misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed\n\
               transport/net_ib.cc:148 NCCL WARN NET/IB : Unable to open device mlx5_0\n\
               NCCL INFO NET/IB : No device found.\n\
               NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
               NCCL INFO Using network Socket\n\
               [0] init.cc:1450 (ncclCommInitRank) NCCL WARN Cuda failure 'out of memory'\n\
               [0] NCCL INFO init.cc:1450 -> 1\n";
    // A bare time of day too: `22:00:15 [0]` is no `host:pid:tid`.
    for wrapper in ["", "[default0]:", "2026-12-06T22:00:00.5Z ", "22:00:15 "] {
        let told: String = log.lines().map(|l| format!("{wrapper}{l}\n")).collect();
        let a = netcheck::logscan::analyze_reader(
            told.as_bytes(),
            "t.log",
            &netcheck::logscan::Options::default(),
        )
        .unwrap();
        let rows: Vec<_> = (a.per_rank.iter())
            .map(|r| (r.cuda_dev, r.tag.clone()))
            .collect();
        let tag = (wrapper == "[default0]:").then(|| "[default0]".to_string());
        assert_eq!(rows, [(None, tag.clone()), (Some(0), tag)], "{wrapper:?}");
        assert!(a.hosts.is_empty(), "{wrapper:?}: {:?}", a.hosts);
        let fallback = a.findings.iter().find(|f| f.id == "socket-fallback");
        let message = &fallback.expect("an IB device NCCL could not open").message;
        assert!(
            !message.contains(".cc:") && !message.contains("no host"),
            "{message}"
        );
    }
}

/// NCCL 2.2's records have no `NCCL` (`host:pid:tid [dev] INFO msg`); a log viewer or a
/// wrapper that colours every line put ANSI codes in front of the host, which was then read
/// as `32mhost` and the record as noise: an IB job answered `unknown`.
#[test]
fn nccl_2_2_records_in_colour_read_as_plain() {
    let log = "gpu-a:24499:24701 [0] INFO NET : Using interface eth0:10.141.202.75<0>\n\
               gpu-a:24499:24701 [0] INFO NET/IB: [0] mlx5_0:1/IB\n\
               gpu-a:24499:24701 [0] INFO Using internal Network IB\n\
               gpu-b:3301:3302 [0] INFO NET/IB: [0] mlx5_0:1/IB\n\
               gpu-b:3301:3302 [0] INFO Using internal Network IB\n";
    let summary = |log: &str| {
        let a = netcheck::logscan::analyze_reader(
            log.as_bytes(),
            "t.log",
            &netcheck::logscan::Options::default(),
        )
        .unwrap();
        let ids: Vec<_> = a.findings.iter().map(|f| f.id.clone()).collect();
        format!(
            "{:?} {:?} {:?} {:?} {ids:?}",
            a.inter_node_transport,
            a.verdict,
            a.hosts,
            a.per_rank.len()
        )
    };
    let plain = summary(log);
    assert!(
        plain.starts_with("Ib Pass [\"gpu-a\", \"gpu-b\"] 2"),
        "{plain}"
    );
    let coloured: String = log
        .lines()
        .map(|l| format!("\x1b[0;32m{l}\x1b[0m\n"))
        .collect();
    assert_eq!(summary(&coloured), plain);
}
