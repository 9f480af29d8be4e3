//! `netcheck analyze` on the kinds of evidence real excerpts share (issue 25): each row is a
//! general rule with the NCCL behaviour it encodes, written by hand from the format strings of
//! NCCL and aws-ofi-nccl (release noted), not copied from anyone's log. Host names, pids and
//! addresses are made up. Each rule has a row that decides and one that must not.

use std::io::Cursor;

use netcheck::logscan::{Options, Severity, Transport, Verdict, analyze_reader};

use crate::excerpt::{Row, decides, finding, run};

/// The loader rows' log after their `NET/Plugin` line: two hosts, NCCL's Socket between them.
macro_rules! two_hosts_on_socket {
    ($plugin_line:literal) => {
        concat!(
            $plugin_line,
            "\n\
      h1:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      h1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
      h1:1:1 [0] NCCL INFO Using network Socket\n\
      h2:2:2 [0] NCCL INFO Using network Socket\n\
      h1:1:9 [0] NCCL INFO Channel 00 : 0[170] -> 1[170] [send] via NET/Socket/0\n"
        )
    };
}

/// Two hosts on NCCL's Socket over `$interface` (`name:address`), after `$lines`.
macro_rules! two_hosts_socket_over {
    ($lines:literal, $interface:literal) => {
        concat!(
            $lines,
            "g1:1:1 [0] NCCL INFO NET/Socket : Using [0]",
            $interface,
            "<0>\n\
      g1:1:1 [0] NCCL INFO Using network Socket\n\
      g2:2:2 [0] NCCL INFO Using network Socket\n\
      g1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
        )
    };
}

#[rustfmt::skip]
const ROWS: &[Row] = &[
    // --- IB verbs without a visible link layer is `ib` ---------------------------------
    // net_ib.cc is NCCL's verbs transport for InfiniBand and RoCE alike; only the port list
    // `NET/IB : Using [0]mlx5_0:1/IB|RoCE` (2.4+) says which. Without it: RDMA, `ib`.
    ("NET/IB channel lines (2.18.3+ format), no port list",
     "a:1:9 [7] NCCL INFO Channel 08/0 : 7[7] -> 15[7] [send] via NET/IB/8/GDRDMA\n",
     Transport::Ib, Some(false), Some("channel-lines")),
    ("HPC-X IBext_v8 channel lines (`P2P plugin v8 IBext_v8`, 2.20+), no port list",
     "a:1:1 [0] NCCL INFO P2P plugin v8 IBext_v8\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [receive] via NET/IBext_v8/0/GDRDMA\n",
     Transport::Ib, Some(false), Some("channel-lines")),
    ("`Using network IB` (2.6+), node count not shown, no port list",
     "a:1:1 [0] NCCL INFO Using network IB\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n",
     Transport::Ib, Some(false), Some("network-module")),
    ("the SHARP plugin's display name (`Loaded net plugin NCCL RDMA Plugin v9`, 2.28) on 2 nodes",
     "a:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v9 (v9)\n\
      a:1:1 [0] NCCL INFO Using network NCCL RDMA Plugin v9\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n",
     Transport::Ib, Some(false), Some("nnodes")),
    ("must not: a RoCE port list makes the same module `roce`",
     "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n\
      a:1:9 [7] NCCL INFO Channel 08/0 : 7[7] -> 15[7] [send] via NET/IB/0\n",
     Transport::Roce, Some(false), Some("link-layer")),
    // Other plugins built on IB verbs: nccl-rdma-sharp-plugins' UCX networks (`UCX`,
    // `UCX-RMA`) open the verbs devices NCCL's IB code lists; Google's gIB is a verbs plugin
    // for RoCE NICs. A plugin that prints NCCL's port list under its own name
    // (`NET/<name> : Using [0]mlx5_0:1/RoCE`) is built on net_ib.cc and names the link layer.
    ("the UCX network of nccl-rdma-sharp-plugins, its IB port list, 2 nodes",
     "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network UCX\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/UCX/0/GDRDMA\n",
     Transport::Ib, Some(false), Some("link-layer")),
    ("gIB by name, no port list: IB verbs",
     "a:1:1 [0] NCCL INFO Using network gIB\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n",
     Transport::Ib, Some(false), Some("nnodes")),
    ("a plugin listing RoCE ports under its own name (`NET/gIB : Using [0]mlx5_0:1/RoCE`)",
     "a:1:1 [0] NCCL INFO NET/gIB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network gIB\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/gIB/0/GDRDMA\n",
     Transport::Roce, Some(false), Some("link-layer")),
    ("any plugin that lists verbs ports in NCCL's form is verbs, whatever its name",
     "a:1:1 [0] NCCL INFO NET/AcmeNet : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network AcmeNet\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/AcmeNet/0\n",
     Transport::Roce, Some(false), Some("link-layer")),
    // CollNet (transport/coll_net.cc, `CollNet %02d/%1d : %d [send] via COLLNET/%s/%d%s`)
    // names the CollNet plugin, HPC-X's `SHARP`: in-network reduction on InfiniBand switches,
    // beside the point-to-point network it does not replace.
    ("CollNet through SHARP beside IBext connections (2.18)",
     "a:1:1 [0] NCCL INFO P2P plugin IBext\n\
      a:1:1 [0] NCCL INFO Using network IBext\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IBext/0/GDRDMA\n\
      a:1:9 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/SHARP/0/GDRDMA\n",
     Transport::Ib, Some(false), Some("channel-lines")),
    ("CollNet through SHARP, the only network connections shown",
     "a:1:9 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/SHARP/0/GDRDMA\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n",
     Transport::Ib, Some(false), Some("channel-lines")),
    ("must not: a plugin listing socket interfaces under its own name is no verbs plugin",
     "a:1:1 [0] NCCL INFO NET/AcmeNet : Using [0]eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network AcmeNet\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/AcmeNet/0\n",
     Transport::Other, Some(false), None),
    // --- one host, shown several ways ---------------------------------------------------
    // bootstrap.cc: each rank listens on its bootstrap address for its ring neighbours;
    // 127.0.0.1 cannot be reached from another host.
    ("bootstrap on loopback only (2.4.8-2.23 `Bootstrap : Using lo:127.0.0.1<0>`)",
     "c0ffee012345:10:20 [0] ofi_init:1355 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
      c0ffee012345:10:20 [0] NCCL INFO NET/IB : No device found.\n\
      c0ffee012345:10:20 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:172.17.0.2<0>\n\
      c0ffee012345:10:20 [0] NCCL INFO Using network Socket\n\
      c0ffee012345:11:11 [1] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n\
      c0ffee012345:12:12 [2] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n",
     Transport::None, Some(false), Some("loopback")),
    ("2.24+ `Bootstrap: Using lo:127.0.0.1<0>` (no space)",
     "a:1:1 [0] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network Socket\n",
     Transport::None, Some(false), Some("loopback")),
    ("must not: one process bootstraps on eth0, so ranks may be elsewhere",
     "a:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n\
      a:2:2 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n\
      a:1:1 [0] NCCL INFO Using network Socket\n",
     Transport::Unknown, Some(false), None),
    // Docker names a container's host after its id (12 hex digits): all ranks in one
    // container are on one machine, and nothing shows another. A plugin failing there is
    // no evident fallback (see one_host_container_plugin_failure_is_a_warning).
    ("ranks of one container, node count not shown, the OFI plugin failed: not a fallback",
     "c0ffee012345:10:20 [0] ofi_init:1355 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
      c0ffee012345:10:20 [0] NCCL INFO NET/IB : No device found.\n\
      c0ffee012345:10:20 [0] NCCL INFO NET/Socket : Using [0]eth0:172.17.0.2<0>\n\
      c0ffee012345:10:20 [0] NCCL INFO Using network Socket\n\
      c0ffee012345:11:11 [1] NCCL INFO Using network Socket\n",
     Transport::Unknown, None, None),
    ("must not: one pod's process of a larger job, the same failure: still evident",
     "train-worker-0:10:20 [0] ofi_init:1355 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
      train-worker-0:10:20 [0] NCCL INFO NET/IB : No device found.\n\
      train-worker-0:10:20 [0] NCCL INFO NET/Socket : Using [0]eth0:172.17.0.2<0>\n\
      train-worker-0:10:20 [0] NCCL INFO Using network Socket\n",
     Transport::Unknown, Some(true), None),
    // A connection line names its printer (transport/net.cc, p2p.cc, shm.cc, every release):
    // a `[send]` line, and a P2P or SHM line (no direction), is printed by the rank on the
    // left, a `[receive]` line by the rank on the right. So ranks without a communicator line
    // (NCCL_DEBUG_SUBSYS=NET prints none, nor `nNodes`; a `grep via` excerpt) are numbered
    // by their own lines, and links whose both ends are ranks shown stayed among them.
    ("NET links printed at both ends by two processes of one host, no communicator line, the OFI plugin failed",
     "vm:10:10 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.21.1\n\
      vm:10:10 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):418 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
      vm:11:11 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.21.1\n\
      vm:11:11 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):418 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
      vm:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
      vm:10:30 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n\
      vm:10:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n\
      vm:11:31 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n\
      vm:11:31 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0\n",
     Transport::Socket, Some(false), Some("channel-lines")),
    ("must not: one host's side of a two-host job, its NET links end at ranks nobody shown prints",
     "a:10:10 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):418 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
      a:10:30 [0] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [receive] via NET/Socket/0\n\
      a:10:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
      a:11:31 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/Socket/0\n",
     Transport::Socket, Some(true), Some("channel-lines")),
    ("must not: ranks of different communicators print the same number, so the numbers prove nothing",
     "a:10:10 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):418 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
      a:10:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[2] [send] via NET/Socket/0\n\
      a:12:32 [2] NCCL INFO Channel 00/0 : 0[0] -> 1[2] [receive] via NET/Socket/0\n\
      a:11:31 [1] NCCL INFO Channel 00/0 : 0[1] -> 1[1] [send] via NET/Socket/0\n",
     Transport::Socket, Some(true), Some("channel-lines")),
    ("must not: a communicator line numbers one rank, so another's connection lines (of any communicator) number no one",
     "a:10:10 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):418 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
      a:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 4 nNodes 2 localRanks 2 localRank 0 MNNVL 0\n\
      a:10:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n\
      a:11:31 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[1] [send] via NET/Socket/0\n",
     Transport::Socket, Some(true), Some("nnodes")),
    ("P2P links printed at both ends by two processes of one host, no communicator line, an RDMA plugin loaded yet Socket",
     "sn:10:20 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)\n\
      sn:10:20 [0] NCCL INFO Using network Socket\n\
      sn:11:21 [1] NCCL INFO Using network Socket\n\
      sn:10:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n\
      sn:11:31 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read\n",
     Transport::Unknown, None, None),
    ("must not: the same with a ring of four ranks, two of them not shown",
     "sn:10:20 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)\n\
      sn:10:20 [0] NCCL INFO Using network Socket\n\
      sn:11:21 [1] NCCL INFO Using network Socket\n\
      sn:10:30 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n\
      sn:10:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n\
      sn:11:31 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read\n",
     Transport::Unknown, Some(true), None),
    // --- several hosts, shown several ways ----------------------------------------------
    ("a NET link to a rank no shown process holds (0 -> 8 while 0 prints)",
     "a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE\n\
      a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0\n",
     Transport::Socket, Some(false), Some("channel-lines")),
    // One host has one address per interface: two on `eth0` behind one (placeholder) name
    // are two hosts.
    ("distinct bootstrap addresses on one interface name behind one host name",
     "localhost:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n\
      localhost:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      localhost:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
      localhost:1:1 [0] NCCL INFO Using network Socket\n\
      localhost:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n\
      localhost:2:2 [0] NCCL INFO Using network Socket\n",
     Transport::Socket, Some(false), Some("distinct-hosts")),
    ("must not: the same address twice is one host",
     "localhost:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n\
      localhost:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      localhost:1:1 [0] NCCL INFO Using network Socket\n\
      localhost:2:2 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n\
      localhost:2:2 [1] NCCL INFO Using network Socket\n",
     Transport::Unknown, Some(false), None),
    // 2.4-2.5 print no `Using network`: plugin absent, `NET/IB : No device found.`, then
    // `NET/Socket : Using` on each host is the Socket module.
    ("many hosts, each `NET/IB : No device found.` then `NET/Socket : Using` (2.4)",
     "h1:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).\n\
      h1:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      h1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
      h2:2:2 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).\n\
      h2:2:2 [0] NCCL INFO NET/IB : No device found.\n\
      h2:2:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n\
      h3:3:3 [0] NCCL INFO NET/IB : No device found.\n\
      h3:3:3 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.3<0>\n",
     Transport::Socket, Some(false), Some("init-sequence")),
    // net.cc tries the external plugin, then IB, then Socket: with no plugin and
    // NCCL_IB_DISABLE=1 Socket is all that is left; IPoIB (`ib-bond0`) on a host of the job
    // means the IB fabric was there.
    ("several hosts, no plugin, NCCL_IB_DISABLE=1, IPoIB bootstrap: a Socket fallback",
     "g1:1:1 [0] NCCL INFO Bootstrap : Using ib-bond0:172.22.0.1<0>\n\
      g2:2:2 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n\
      g2:2:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n\
      g3:3:3 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n",
     Transport::Socket, Some(true), Some("init-sequence")),
    ("must not: the same without IB hardware in sight is TCP by choice, not a fallback",
     "g1:1:1 [0] NCCL INFO Bootstrap : Using eth0:172.22.0.1<0>\n\
      g2:2:2 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n\
      g2:2:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n",
     Transport::Socket, Some(false), Some("init-sequence")),
    // net_ib.cc (2.4.8+): `NET/IB : Unable to open device X` comes after the device list
    // named X: the HCA is there and NCCL's IB transport failed on it, unlike the routine
    // `No device found` probe of a host without IB.
    ("an IB device that could not be opened, then Socket: a fallback, node count not shown",
     "NCCL INFO NCCL_IB_DISABLE set by environment to 0.
      misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed
      transport/net_ib.cc:148 NCCL WARN NET/IB : Unable to open device mlx5_bond_0
      NCCL INFO NET/IB : No device found.
      NCCL INFO NET/Socket : Using [0]bond0:10.9.0.2<0>
      NCCL INFO Using network Socket
",
     Transport::Unknown, Some(true), None),
    ("must not: `No device found` alone is the routine probe",
     "NCCL INFO NET/IB : No device found.
      NCCL INFO NET/Socket : Using [0]bond0:10.9.0.2<0>
      NCCL INFO Using network Socket
",
     Transport::Unknown, Some(false), None),
    // ibvwrap.cc (every release) prints `Failed to open libibverbs.so[.1]` when the verbs
    // library is not in the image, and `NET/IB : No device found.` when it lists no device
    // (no /dev/infiniband in the container); an IPoIB interface (`ib0`, the ipoib driver on an
    // IB HCA) shows the fabric was there all the same.
    ("several hosts, libibverbs missing, Socket over IPoIB: a fallback",
     two_hosts_socket_over!("g1:1:1 [0] NCCL INFO Failed to open libibverbs.so[.1]\n", "ib0:192.168.1.1"),
     Transport::Socket, Some(true), Some("channel-lines")),
    ("several hosts, no IB device found, Socket over IPoIB: a fallback",
     two_hosts_socket_over!("g1:1:1 [0] NCCL INFO NET/IB : No device found.\n", "ib0:192.168.1.1"),
     Transport::Socket, Some(true), Some("channel-lines")),
    // net_ib.cc echoes NCCL_IB_HCA when it is set (`NCCL_IB_HCA set to %s`, 2.7+) and
    // filters its devices by it; none left is `NET/IB : No device found.`, and NCCL goes on
    // with Socket. The job was set up for IB (a wrong name, or no /dev/infiniband).
    ("several hosts, NCCL_IB_HCA set and no IB device found, then Socket: a fallback",
     two_hosts_socket_over!(
         "g1:1:1 [0] NCCL INFO NCCL_IB_HCA set to mlx5_9\n\
          g1:1:1 [0] NCCL INFO NET/IB : No device found.\n",
         "eth0:10.0.0.1"),
     Transport::Socket, Some(true), Some("channel-lines")),
    ("must not: NCCL_IB_HCA set and its devices found, IB used",
     "g1:1:1 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0\n\
      g1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n\
      g1:1:1 [0] NCCL INFO Using network IB\n\
      g2:2:2 [0] NCCL INFO Using network IB\n\
      g1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n",
     Transport::Ib, Some(false), Some("channel-lines")),
    ("must not: libibverbs missing with Socket over Ethernet is TCP by choice",
     two_hosts_socket_over!(
         "g1:1:1 [0] NCCL INFO Failed to open libibverbs.so[.1]\n\
          g1:1:1 [0] NCCL INFO NET/IB : No device found.\n",
         "eth0:10.0.0.1"),
     Transport::Socket, Some(false), Some("channel-lines")),
    // --- a net plugin that is there and will not load ------------------------------------
    // NCCL dlopens `libnccl-net.so` (or the NCCL_NET_PLUGIN library) and prints dlerror()
    // when it fails (§3: 2.4-2.21 after `Plugin load ... returned N :` or `dlerror=`, 2.26+
    // alone). The loader naming the plugin itself as missing is the routine "no plugin";
    // naming a library the plugin needs, or a symbol version the plugin was built against,
    // means the image ships a plugin that did not load: NCCL went on with IB or Socket.
    ("several hosts, the plugin's libfabric not on the library path (2.4-2.16), then Socket",
     two_hosts_on_socket!("h1:1:1 [0] NCCL INFO NET/Plugin : Plugin load returned 2 : libfabric.so.1: cannot open shared object file: No such file or directory."),
     Transport::Socket, Some(true), Some("channel-lines")),
    ("2 nodes, the plugin built against a newer libfabric than the one loaded (2.26+), then Socket",
     "a:1:1 [0] NCCL INFO NET/Plugin: /lib/x86_64-linux-gnu/libfabric.so.1: version `FABRIC_1.8' not found (required by /opt/amazon/ofi-nccl/lib/libnccl-net.so)\n\
      a:1:1 [0] NCCL INFO NET/IB : No device found.\n\
      a:1:1 [0] NCCL INFO Using network Socket\n\
      a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n",
     Transport::Socket, Some(true), Some("nnodes")),
    ("must not: the loader naming the plugin itself as missing is no plugin at all",
     two_hosts_on_socket!("h1:1:1 [0] NCCL INFO NET/Plugin : Plugin load returned 17 : libnccl-net.so: cannot open shared object file: No such file or directory."),
     Transport::Socket, Some(false), Some("channel-lines")),
    // --- MNNVL: nNodes counts an NVLink clique as one node --------------------------------
    // init.cc 2.21.5+: with MNNVL the clique id replaces the host hash, so a GB200 NVL72
    // rack's trays are `nNodes 1`; host names decide how many machines there are.
    ("`nNodes 1 ... MNNVL 1` on two hosts: NVLink between machines",
     "tray-a:1:1 [0] NCCL INFO Using network IB\n\
      tray-a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 1\n\
      tray-b:2:2 [0] NCCL INFO Using network IB\n\
      tray-b:2:2 [0] NCCL INFO comm 0x1 rank 4 nRanks 8 nNodes 1 localRanks 8 localRank 4 MNNVL 1\n",
     Transport::Nvlink, Some(false), Some("distinct-hosts")),
    ("must not: `nNodes 1 ... MNNVL 1` with all ranks on one tray is one node",
     "tray-a:1:1 [0] NCCL INFO Using network IB\n\
      tray-a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 1\n\
      tray-a:2:2 [1] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 1\n",
     Transport::None, Some(false), Some("all-ranks-one-host")),
    // init.cc 2.21.5+ looks for a clique only when the host hashes make several nodes, unless
    // NCCL_MNNVL_ENABLE=1 forces it; p2p.cc names every P2P link of an MNNVL communicator
    // `P2P/MNNVL`, whichever hosts its ends are on.
    ("`MNNVL 1` not forced, one rank's excerpt: NCCL formed the clique across hosts",
     "tray-a:1:1 [0] NCCL INFO Using network IB\n\
      tray-a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 1\n\
      tray-a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/MNNVL\n",
     Transport::Nvlink, Some(false), Some("mnnvl")),
    ("must not: `NCCL_MNNVL_ENABLE=1`, half the clique on one host: one tray or several, not IB",
     "tray-a:1:1 [0] NCCL INFO Using network IB\n\
      tray-a:1:1 [0] NCCL INFO NCCL_MNNVL_ENABLE set by environment to 1.\n\
      tray-a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 1\n\
      tray-a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/MNNVL\n\
      tray-a:2:2 [1] NCCL INFO NCCL_MNNVL_ENABLE set by environment to 1.\n\
      tray-a:2:2 [1] NCCL INFO comm 0x1 rank 1 nRanks 4 nNodes 1 localRanks 4 localRank 1 MNNVL 1\n",
     Transport::Unknown, Some(false), Some("mnnvl")),
    ("must not: `NCCL_MNNVL_ENABLE=1` and `P2P/MNNVL` links, every rank on one tray",
     "tray-a:1:1 [0] NCCL INFO NCCL_MNNVL_ENABLE set by environment to 1.\n\
      tray-a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 1\n\
      tray-a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/MNNVL\n\
      tray-a:2:2 [1] NCCL INFO NCCL_MNNVL_ENABLE set by environment to 1.\n\
      tray-a:2:2 [1] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 1\n\
      tray-a:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/MNNVL\n",
     Transport::None, Some(false), Some("all-ranks-one-host")),
];

/// The log of the row whose description starts with `what`.
fn row(what: &str) -> &'static str {
    ROWS.iter()
        .find(|r| r.0.starts_with(what))
        .expect("a row")
        .1
}

#[test]
fn each_rule_decides_and_is_named() {
    for row in ROWS {
        decides(row);
    }
}

#[test]
fn a_plugin_failing_on_one_host_is_a_warning_never_a_fail() {
    // A 4-GPU host, loopback bootstrap, aws-ofi-nccl without EFA (a g5.12xlarge).
    let a = run(row("bootstrap on loopback"));
    assert_eq!(a.verdict, Verdict::Warn, "{:?}", a.findings);
    let f = finding(&a, "net-plugin-failed").expect("net-plugin-failed");
    assert_eq!(f.severity, Severity::Warn);
    assert!(finding(&a, "socket-fallback").is_none());
    // `--expect efa` still fails: the user asked for EFA between nodes.
    let strict = analyze_reader(
        Cursor::new(row("bootstrap on loopback").as_bytes()),
        "t.log",
        &Options {
            expect: Some(Transport::Efa),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(strict.verdict, Verdict::Fail);
}

#[test]
fn a_plugin_the_loader_could_not_load_is_named_with_the_loaders_reason() {
    let row = ROWS
        .iter()
        .find(|r| r.0.contains("built against a newer libfabric"))
        .unwrap();
    let a = run(row.1);
    assert_eq!(a.verdict, Verdict::Fail, "{:?}", a.findings);
    let f = finding(&a, "socket-fallback").expect("socket-fallback");
    assert!(
        f.message
            .contains("a net plugin was found but could not be loaded"),
        "{}",
        f.message
    );
    assert!(
        f.evidence.iter().any(|e| e.text.contains("FABRIC_1.8")),
        "{:?}",
        f.evidence
    );
    // On one host the same failure is a warning that names it.
    let one_host = row.1.replace("nNodes 2", "nNodes 1");
    let b = run(&one_host);
    assert_ne!(b.verdict, Verdict::Fail, "{:?}", b.findings);
}

#[test]
fn one_host_container_plugin_failure_is_a_warning() {
    let a = run(ROWS
        .iter()
        .find(|r| r.0.starts_with("ranks of one container"))
        .unwrap()
        .1);
    assert_ne!(a.verdict, Verdict::Fail, "{:?}", a.findings);
    assert!(
        finding(&a, "net-plugin-failed").is_some(),
        "{:?}",
        a.findings
    );
}

#[test]
fn net_links_between_ranks_of_one_host_are_not_a_fallback() {
    // NCCL_HOSTID splits one machine into two NCCL nodes; the missing plugin leaves Socket.
    let log = "vm:1:1 [0] NCCL INFO NCCL_HOSTID set by environment to fake0\n\
        vm:1:1 [0] NCCL INFO NET/Plugin: Could not find: ofi libnccl-net-ofi.so\n\
        vm:1:1 [0] NCCL INFO NCCL_NET_PLUGIN set by environment to ofi\n\
        vm:1:1 [0] NCCL INFO Using network Socket\n\
        vm:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n\
        vm:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0\n\
        vm:2:2 [1] NCCL INFO NCCL_HOSTID set by environment to fake1\n\
        vm:2:2 [1] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n\
        vm:2:9 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [send] via NET/Socket/0\n";
    let a = run(log);
    assert_eq!(a.inter_node_transport, Transport::Socket);
    assert_eq!(a.socket_fallback, Some(false), "{:?}", a.findings);
    assert!(finding(&a, "simulated-nodes").is_some());
    // The same links to a rank no process of the log holds: another machine.
    let other = log.replace("0[0] -> 1[1] [send]", "0[0] -> 3[1] [send]");
    let b = run(&other);
    assert_eq!(b.inter_node_transport, Transport::Socket);
}

#[test]
fn ranks_whose_links_stay_inside_their_node_carried_no_inter_node_traffic() {
    let log = "a:1:1 [0] NCCL INFO Using network Socket\n\
        a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 4 nNodes 2 localRanks 2 localRank 0 MNNVL 0\n\
        a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n\
        a:1:9 [0] NCCL INFO Channel 00/0 : 2[0] -> 0[0] [receive] via NET/Socket/0\n\
        a:2:2 [1] NCCL INFO Using network Socket\n\
        a:2:2 [1] NCCL INFO comm 0x1 rank 1 nRanks 4 nNodes 2 localRanks 2 localRank 1 MNNVL 0\n\
        a:2:9 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM\n";
    let a = run(log);
    assert_eq!(a.inter_node_transport, Transport::Socket);
    let by_rank = |r: u32| {
        a.per_rank
            .iter()
            .find(|x| x.rank == Some(r))
            .and_then(|x| x.inter_node_transport)
    };
    assert_eq!(by_rank(0), Some(Transport::Socket));
    assert_eq!(by_rank(1), Some(Transport::None));
}

#[test]
fn why_without_a_deciding_basis_has_no_empty_brackets() {
    // Nothing shows the node count or the network: `why` says so, with no `[]` after it.
    let a = run("a:1:1 [0] NCCL INFO cudaDriverVersion 12020\n");
    assert!(a.basis.is_empty(), "{:?}", a.basis);
    let text = netcheck::logscan::render::text(&a);
    let why = text
        .lines()
        .find(|l| l.starts_with("why: "))
        .expect("why line");
    assert!(!why.ends_with("[]"), "{why}");
    let md = netcheck::logscan::render::markdown(&a);
    assert!(!md.contains("(``)"), "{md}");
    // With a basis the brackets stay.
    let b = run(ROWS[0].1);
    assert!(netcheck::logscan::render::text(&b).contains("[channel-lines]"));
}

#[test]
fn two_jobs_read_as_one_are_named() {
    let job = |host: &str| {
        format!(
            "{host}:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
             {host}:2:2 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n"
        )
    };
    let mut analyzer = netcheck::logscan::Analyzer::new(Options::default());
    analyzer
        .feed(Cursor::new(job("a").into_bytes()), "a.log")
        .unwrap();
    analyzer
        .feed(Cursor::new(job("b").into_bytes()), "b.log")
        .unwrap();
    let a = analyzer.finish();
    let f = finding(&a, "duplicate-ranks").expect("duplicate-ranks");
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.message.contains("a.log") && f.message.contains("b.log"),
        "{}",
        f.message
    );
    // One job's ranks split over two files (one file per rank) is no clash.
    let mut split = netcheck::logscan::Analyzer::new(Options::default());
    let text = job("a");
    let (first, second) = text.split_once('\n').unwrap();
    split
        .feed(Cursor::new(format!("{first}\n").into_bytes()), "rank-0.log")
        .unwrap();
    split
        .feed(Cursor::new(second.as_bytes().to_vec()), "rank-1.log")
        .unwrap();
    assert!(finding(&split.finish(), "duplicate-ranks").is_none());
}

#[test]
fn the_efa_hint_is_not_given_for_one_machine() {
    // The g5.12xlarge case: aws-ofi-nccl fails on a host without EFA, one node.
    let a = run(row("bootstrap on loopback"));
    let f = finding(&a, "net-plugin-failed").expect("net-plugin-failed");
    let hint = f.hint.as_deref().unwrap_or_default();
    assert!(!hint.contains("vpc.amazonaws.com/efa"), "{hint}");
    assert!(hint.contains("one host"), "{hint}");
    // Between nodes the EFA hint stays.
    let two = row("bootstrap on loopback").replace(
        "Bootstrap : Using lo:127.0.0.1<0>",
        "Bootstrap : Using eth0:10.0.0.9<0>",
    ) + "c0ffee012345:10:20 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0\n";
    let b = run(&two);
    assert_eq!(b.socket_fallback, Some(true), "{:?}", b.findings);
}

#[test]
fn an_ib_hca_that_matched_nothing_is_named_with_the_ib_hint() {
    let a = run(row("several hosts, NCCL_IB_HCA set"));
    assert_eq!(a.verdict, Verdict::Fail, "{:?}", a.findings);
    let f = finding(&a, "socket-fallback").expect("socket-fallback");
    assert!(f.message.contains("NCCL_IB_HCA=mlx5_9"), "{}", f.message);
    let hint = f.hint.as_deref().unwrap_or_default();
    assert!(
        hint.contains("NCCL_IB_HCA") && !hint.contains("efa"),
        "{hint}"
    );
}

#[test]
fn a_collnet_plugin_is_not_listed_as_a_network_beside_one() {
    let a = run(row("CollNet through SHARP beside IBext"));
    assert_eq!(a.networks, ["IBext"]);
    let only = run(row("CollNet through SHARP, the only"));
    assert_eq!(only.networks, ["SHARP"]);
}
