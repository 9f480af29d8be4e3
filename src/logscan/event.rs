//! Step 2 of the pipeline: classify one NCCL message into an event, or `None` for the many
//! lines that carry no transport evidence (topology dumps, tuner tables, proxy threads).
//!
//! Dispatch is on the message's first byte and fixed prefixes, so the common noise lines cost
//! a byte comparison; regexes run only on rare lines. Network-setup lines (`NET/...`, plugin
//! loading, aws-ofi-nccl) are parsed in `net_lines.rs`. Format references are to
//! shared/docs/nccl-log-grammar.md.

use memchr::memmem;

use super::net_lines;
use super::prefix::{Level, parse_u32};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    /// `NCCL version 2.23.4+cuda12.6` (§2); the `+cuda` part is dropped.
    Version(&'a str),
    CudaDriver(&'a str),
    /// `NET/Plugin: Plugin name set by env to X` or `NCCL_NET_PLUGIN set by environment to X`.
    PluginRequested(&'a str),
    /// The routine "no external plugin" lines of every NCCL release (§3). A failure only when
    /// a plugin was requested by name.
    PluginNotFound,
    /// `Loaded net plugin X (vN)`, `P2P plugin IBext`: an external plugin library loaded.
    PluginLoaded(&'a str),
    /// Every `ncclNetPlugin_*` symbol probe failed: the library is unusable (§3).
    PluginIncompatible,
    /// 2.27+: `Initialized NET plugin X`.
    NetInitialized(&'a str),
    /// 2.28+: `Failed to initialize NET plugin X`.
    NetInitFailed(&'a str),
    /// WARN `Failed to initialize any NET plugin`: NCCL cannot run at all.
    NoNetPlugin,
    /// `Using network X`, `Assigned NET plugin X to comm`, 2.3 `Using internal Network X`.
    UsingNetwork(&'a str),
    /// `NET/IB : Using [0]mlx5_0:1/IB ...`: the device list text, parsed by
    /// `net_lines::ib_devices` when first stored; it lists nothing on a host without IB
    /// (`NET/IB : Using [RO]; OOB eth0` after `No device found`).
    IbDevices(&'a str),
    IbNoDevice,
    /// `Failed to open libibverbs.so`.
    VerbsMissing,
    /// `NET/Socket : Using [0]eth0:10.0.0.1<0> [1]...` (also 2.3 `NET : Using interface`):
    /// the list text, parsed by `net_lines::socket_interfaces` when first stored.
    SocketInterfaces(&'a str),
    /// `Bootstrap : Using eth0:...`: bootstrap only, not a transport.
    BootstrapInterface(&'a str),
    /// `NET/<name> : GPU Direct RDMA Enabled|Disabled for HCA ...` (§4.3).
    GdrNic {
        enabled: bool,
    },
    Ofi(OfiEvent<'a>),
    /// `NCCL_X set by environment to V` (§4.3); explains a choice, proves nothing.
    Env {
        var: &'a str,
        value: &'a str,
    },
    /// A per-connection line (§5): the authoritative transport evidence.
    Connection(Conn<'a>),
    /// `NVLS comm 0x...`: this communicator uses NVLink SHARP.
    Nvls,
    /// `comm 0x... rank R nRanks N nNodes K localRanks L ...` (2.20+, §6).
    CommNodes {
        comm: &'a str,
        rank: u32,
        nranks: u32,
        nnodes: u32,
    },
    InitStart(InitLine<'a>),
    InitComplete(InitLine<'a>),
    Destroyed,
    /// Ring/tree layout lines: the rank reached topology setup.
    Topology,
    /// `Connected all rings[, use ring PXN x GDR y]`, `Connected all trees`, ...
    Connected {
        gdr: Option<bool>,
    },
    /// `init.cc:421 -> 5`: an error propagating up NCCL's call stack (§1.1).
    Breadcrumb {
        code: u32,
    },
    /// 2.22–2.25: `TUNER/Plugin: Failed to find ncclTunerPlugin_v4 symbol.` means some library
    /// (usually a net plugin) is on the library path (§3).
    TunerProbe,
    /// Any other NCCL WARN.
    Warn,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbDevice {
    pub name: String,
    /// `IB`, `RoCE`, `UNSPECIFIED`: the only per-device RoCE-vs-IB evidence.
    pub link_layer: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfiEvent<'a> {
    /// `Initializing aws-ofi-nccl X` / `Using aws-ofi-nccl X`.
    PluginVersion(&'a str),
    Provider {
        provider: &'a str,
        fabric: Option<&'a str>,
        nics: Option<u32>,
    },
    /// No usable libfabric provider (no EFA device in the container, wrong FI_PROVIDER).
    ProviderMissing,
    /// The plugin gave up initialising (§7 failure messages).
    InitFailed,
    /// `disabling GDR`, `GDR not supported`: EFA without GPUDirect RDMA.
    GdrOff,
    /// Runtime text that only an EFA endpoint produces (`fi_addr_efa`, `EFA device`).
    EfaRuntime,
}

/// What a per-connection line says carried the link (§5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conn<'a> {
    /// `P2P/IPC`, `P2P/CUMEM`, `P2P/direct pointer`, ...: label without `/read` etc.
    P2p(&'a str),
    Shm,
    /// `P2P/MNNVL`: NVLink across hosts (NVL72-class), not NET.
    Mnnvl,
    Net {
        name: &'a str,
        gdr: bool,
    },
    CollNet {
        name: &'a str,
        gdr: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitLine<'a> {
    pub comm: &'a str,
    pub rank: Option<u32>,
    pub nranks: Option<u32>,
    pub comm_id: Option<&'a str>,
}

/// Classifies one NCCL record.
pub fn classify(level: Level, msg: &str) -> Option<Event<'_>> {
    if level == Level::Warn {
        return Some(classify_warn(msg));
    }
    let first = *msg.as_bytes().first()?;
    match first {
        b'C' => classify_c(msg),
        b'R' if msg.starts_with("Ring ") => connection_or_layout(msg),
        b'T' if msg.starts_with("Trees") || msg.starts_with("Tree ") => Some(Event::Topology),
        b'T' if msg.starts_with("TUNER/Plugin: Failed to find ncclTunerPlugin_v4 ") => {
            Some(Event::TunerProbe)
        }
        b'N' => classify_n(msg),
        b'U' => {
            if let Some(name) = msg.strip_prefix("Using network ") {
                Some(Event::UsingNetwork(name.trim()))
            } else {
                let name = msg.strip_prefix("Using internal Network ")?;
                Some(Event::UsingNetwork(name.trim()))
            }
        }
        b'A' => {
            let rest = msg.strip_prefix("Assigned NET plugin ")?;
            Some(Event::UsingNetwork(
                rest.strip_suffix(" to comm").unwrap_or(rest).trim(),
            ))
        }
        b'I' => Some(Event::NetInitialized(
            msg.strip_prefix("Initialized NET plugin ")?.trim(),
        )),
        b'F' => {
            if let Some(name) = msg.strip_prefix("Failed to initialize NET plugin ") {
                Some(Event::NetInitFailed(name.trim()))
            } else if msg.starts_with("Failed to open libibverbs") {
                Some(Event::VerbsMissing)
            } else {
                None
            }
        }
        b'B' => {
            let rest = msg
                .strip_prefix("Bootstrap : Using ")
                .or_else(|| msg.strip_prefix("Bootstrap: Using "))?;
            Some(Event::BootstrapInterface(interface_name(rest)))
        }
        b'P' => {
            let name = msg.strip_prefix("P2P plugin ")?;
            Some(Event::PluginLoaded(name.split_whitespace().next()?))
        }
        b'c' => {
            if let Some(driver) = msg.strip_prefix("cudaDriverVersion ") {
                Some(Event::CudaDriver(driver.trim()))
            } else if msg.starts_with("comm 0x") {
                comm_line(msg)
            } else {
                breadcrumb(msg)
            }
        }
        b'n' if msg.starts_with("ncclComm") => comm_line(msg),
        b'a'..=b'z' => breadcrumb(msg),
        _ => None,
    }
}

fn classify_c(msg: &str) -> Option<Event<'_>> {
    if msg.starts_with("Channel ") || msg.starts_with("CollNet ") || msg.starts_with("Coll ") {
        return connection_or_layout(msg);
    }
    if let Some(rest) = msg.strip_prefix("Connected ") {
        let gdr = rest
            .find(" GDR ")
            .and_then(|at| rest[at + 5..].bytes().next())
            .and_then(|b| match b {
                b'0' => Some(false),
                b'1' => Some(true),
                _ => None,
            });
        return Some(Event::Connected { gdr });
    }
    None
}

fn classify_n(msg: &str) -> Option<Event<'_>> {
    if msg.starts_with("NET") || msg.starts_with("Net/IB") {
        return net_lines::classify(msg);
    }
    if let Some(rest) = msg.strip_prefix("NCCL version ") {
        return Some(Event::Version(version_number(rest)?));
    }
    if msg.starts_with("NCCL_") {
        return env_echo(msg);
    }
    if msg.starts_with("NVLS comm 0x") {
        return Some(Event::Nvls);
    }
    if msg.starts_with("No network plugin found") {
        return Some(Event::PluginNotFound);
    }
    None
}

fn classify_warn(msg: &str) -> Event<'_> {
    if msg.starts_with("Failed to initialize any NET plugin") {
        return Event::NoNetPlugin;
    }
    if msg.starts_with("Failed to open libibverbs") {
        return Event::VerbsMissing;
    }
    if msg.starts_with("NET/")
        && let Some(event) = net_lines::classify(msg)
    {
        return event;
    }
    Event::Warn
}

/// `2.23.4+cuda12.6 ...` → `2.23.4`.
pub fn version_number(text: &str) -> Option<&str> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let version = text[..end].trim_end_matches('.');
    (version.contains('.') && version.starts_with(|c: char| c.is_ascii_digit())).then_some(version)
}

/// `eth0:10.0.0.1<0>` → `eth0`.
pub fn interface_name(text: &str) -> &str {
    let text = text.trim_start();
    let end = text.find([':', ' ', '<']).unwrap_or(text.len());
    &text[..end]
}

/// `NCCL_IB_DISABLE set by environment to 1.` / `NCCL_IB_HCA set to mlx5_2`.
fn env_echo(msg: &str) -> Option<Event<'_>> {
    let (var, value) = msg
        .split_once(" set by environment to ")
        .or_else(|| msg.split_once(" set to "))?;
    if var.contains(' ') {
        return None;
    }
    let value = value.trim().trim_end_matches('.');
    if var == "NCCL_NET_PLUGIN" {
        return Some(Event::PluginRequested(value));
    }
    Some(Event::Env { var, value })
}

static VIA: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new(b" via "));

/// A connection (` via <transport>`), else a ring/graph layout line; `None` for a connection
/// line cut before its transport is complete (Ray's dedup does that), which says nothing.
fn connection_or_layout(msg: &str) -> Option<Event<'_>> {
    match VIA.find(msg.as_bytes()) {
        Some(at) => connection(&msg[at + 5..]),
        None => Some(Event::Topology),
    }
}

/// The transport after ` via `.
fn connection(via: &str) -> Option<Event<'_>> {
    let via = via.trim();
    let conn = if let Some(rest) = via.strip_prefix("NET/") {
        let (name, gdr) = net_link(rest)?;
        Conn::Net { name, gdr }
    } else if let Some(rest) = via.strip_prefix("COLLNET/") {
        let (name, gdr) = net_link(rest)?;
        Conn::CollNet { name, gdr }
    } else if via.starts_with("P2P/MNNVL") {
        Conn::Mnnvl
    } else if let Some(rest) = via.strip_prefix("P2P/") {
        let kind = rest.split('/').next().unwrap_or("");
        if kind.is_empty() {
            return None;
        }
        Conn::P2p(&via[..4 + kind.len()])
    } else if via.starts_with("SHM") || via.starts_with("direct shared memory") {
        Conn::Shm
    } else {
        return None;
    };
    Some(Event::Connection(conn))
}

/// `<name>/<dev>[(<proxy>)][/GDRDMA[(PCI)]][/Shared]` → (name, GDR). The device index must be
/// there: a line cut in the middle of the name is not evidence.
fn net_link(rest: &str) -> Option<(&str, bool)> {
    let mut parts = rest.split('/');
    let name = parts.next()?.trim();
    let dev = parts.next()?;
    if name.is_empty() || !dev.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let gdr = parts.any(|flag| flag.starts_with("GDRDMA"));
    Some((name, gdr))
}

/// The communicator summary lines (§6): `comm 0x.. rank R nRanks N nNodes K ...`,
/// `[ncclCommInitRank..] comm 0x.. rank R nranks N ... [commId 0x..] - Init START|COMPLETE`,
/// `comm 0x.. ... - Destroy COMPLETE`.
fn comm_line(msg: &str) -> Option<Event<'_>> {
    enum Kind {
        Start,
        Complete,
        Nodes,
    }
    let kind = if msg.ends_with("Init START") {
        Kind::Start
    } else if msg.ends_with("Init COMPLETE") {
        Kind::Complete
    } else if msg.ends_with("Destroy COMPLETE") {
        return Some(Event::Destroyed);
    } else if msg.starts_with("comm 0x") && msg.contains(" nNodes ") {
        Kind::Nodes
    } else {
        return None;
    };
    let mut comm = None;
    let mut rank = None;
    let mut nranks = None;
    let mut nnodes = None;
    let mut comm_id = None;
    let mut words = msg.split_ascii_whitespace();
    while let Some(word) = words.next() {
        let slot = match word {
            "comm" => &mut comm,
            "rank" if rank.is_none() => &mut rank,
            "nranks" | "nRanks" if nranks.is_none() => &mut nranks,
            "nNodes" => &mut nnodes,
            "commId" => &mut comm_id,
            _ => continue,
        };
        *slot = words.next();
        if slot.is_none() {
            break;
        }
    }
    let number = |word: Option<&str>| word.and_then(|w| parse_u32(w.as_bytes()));
    let (rank, nranks) = (number(rank), number(nranks));
    let init = InitLine {
        comm: comm?,
        rank,
        nranks,
        comm_id,
    };
    Some(match kind {
        Kind::Start => Event::InitStart(init),
        Kind::Complete => Event::InitComplete(init),
        Kind::Nodes => Event::CommNodes {
            comm: init.comm,
            rank: rank?,
            nranks: nranks?,
            nnodes: number(nnodes)?,
        },
    })
}

static ARROW: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new(b" -> "));

/// `init.cc:421 -> 5`, `group.cc:76 -> 5 [Async thread]`, `transport/net.cc:753 -> 6`.
fn breadcrumb(msg: &str) -> Option<Event<'_>> {
    let at = ARROW.find(msg.as_bytes())?;
    let (location, code) = (&msg[..at], &msg[at + 4..]);
    let (file, line) = location.rsplit_once(':')?;
    let is_source = file.ends_with(".cc") || file.ends_with(".h") || file.ends_with(".cu");
    if !is_source || file.contains(' ') || parse_u32(line.as_bytes()).is_none() {
        return None;
    }
    let digits = code.split(' ').next()?;
    Some(Event::Breadcrumb {
        code: parse_u32(digits.as_bytes())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(msg: &str) -> Option<Event<'_>> {
        classify(Level::Info, msg)
    }

    #[test]
    fn connection_lines_of_every_era() {
        let net = |name, gdr| Some(Event::Connection(Conn::Net { name, gdr }));
        assert_eq!(
            info("Ring 00 : 3 -> 4 [send] via NET/IB/0/GDRDMA"),
            net("IB", true)
        );
        assert_eq!(
            info("Channel 00 : 1[101d0] -> 8[101c0] [send] via NET/AWS Libfabric/0/GDRDMA"),
            net("AWS Libfabric", true)
        );
        assert_eq!(
            info("Channel 00/0 : 3[0] -> 0[0] [receive] via NET/Libfabric/0"),
            net("Libfabric", false)
        );
        assert_eq!(
            info("Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/3(8)/GDRDMA(PCI)/Shared"),
            net("IB", true)
        );
        assert_eq!(
            info("Channel 01/0 : 0[0] -> 1[1] [send] via NET/Socket/0"),
            net("Socket", false)
        );
        assert_eq!(
            info("Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer"),
            Some(Event::Connection(Conn::P2p("P2P/direct pointer")))
        );
        assert_eq!(
            info("Channel 00/0 : 3[3] -> 0[0] via P2P/CUMEM/read"),
            Some(Event::Connection(Conn::P2p("P2P/CUMEM")))
        );
        assert_eq!(
            info("Channel 01 : 2[201c0] -> 7[a01d0] via P2P/IPC/read"),
            Some(Event::Connection(Conn::P2p("P2P/IPC")))
        );
        assert_eq!(
            info("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"),
            Some(Event::Connection(Conn::Shm))
        );
        assert_eq!(
            info("Ring 00 : 0[0] -> 1[1] via direct shared memory"),
            Some(Event::Connection(Conn::Shm))
        );
        assert_eq!(
            info("CollNet 00/0 : 3 [send] via COLLNET/IB/0/GDRDMA"),
            Some(Event::Connection(Conn::CollNet {
                name: "IB",
                gdr: true
            }))
        );
        assert_eq!(
            info("Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL"),
            Some(Event::Connection(Conn::Mnnvl))
        );
    }

    #[test]
    fn lookalikes_carry_no_transport() {
        assert_eq!(
            info("Channel 00/02 :    0   7   6   5"),
            Some(Event::Topology)
        );
        assert_eq!(info("Ring 08 : 0 -> 1 -> 2"), Some(Event::Topology));
        assert_eq!(
            info("Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1"),
            Some(Event::Topology)
        );
        // Cut by a wrapper in the middle of the transport: no evidence either way.
        assert_eq!(
            info("Channel 00/0 : 3[0] -> 0[0] [receive] via NET/Libfa"),
            None
        );
        assert_eq!(
            info("Connected all rings, use ring PXN 0 GDR 1"),
            Some(Event::Connected { gdr: Some(true) })
        );
        assert_eq!(
            info("Connected all trees"),
            Some(Event::Connected { gdr: None })
        );
        assert_eq!(info("CC Off, workFifoBytes 1048576"), None);
        assert_eq!(info("Check P2P Type isAllDirectP2p 1 directMode 0"), None);
    }

    #[test]
    fn network_selection() {
        assert_eq!(
            info("Using network AWS Libfabric"),
            Some(Event::UsingNetwork("AWS Libfabric"))
        );
        assert_eq!(
            info("Assigned NET plugin Socket to comm"),
            Some(Event::UsingNetwork("Socket"))
        );
        assert_eq!(
            info("Using internal Network Socket"),
            Some(Event::UsingNetwork("Socket"))
        );
        assert_eq!(info("Using non-device net plugin version 0"), None);
        assert_eq!(
            info("Initialized NET plugin Libfabric"),
            Some(Event::NetInitialized("Libfabric"))
        );
        assert_eq!(
            info("Failed to initialize NET plugin IB"),
            Some(Event::NetInitFailed("IB"))
        );
        assert_eq!(
            classify(Level::Warn, "Failed to initialize any NET plugin"),
            Some(Event::NoNetPlugin)
        );
    }

    #[test]
    fn comm_lines() {
        assert_eq!(
            info("comm 0x36680cd0 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0"),
            Some(Event::CommNodes {
                comm: "0x36680cd0",
                rank: 0,
                nranks: 2,
                nnodes: 2
            })
        );
        let start = info(
            "ncclCommInitRankConfig comm 0x1624efc0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 70 commId 0x4c64857d1447e24c - Init START",
        );
        assert_eq!(
            start,
            Some(Event::InitStart(InitLine {
                comm: "0x1624efc0",
                rank: Some(1),
                nranks: Some(2),
                comm_id: Some("0x4c64857d1447e24c")
            }))
        );
        let done =
            info("comm 0x7fece4000dc0 rank 1 nranks 16 cudaDev 1 busId 101d0 - Init COMPLETE");
        assert!(matches!(
            done,
            Some(Event::InitComplete(InitLine {
                rank: Some(1),
                nranks: Some(16),
                comm_id: None,
                ..
            }))
        ));
        assert_eq!(
            info("comm 0x1 rank 1 nranks 2 cudaDev 1 busId 70 - Destroy COMPLETE"),
            Some(Event::Destroyed)
        );
        assert!(info("ncclCommSplit comm 0x5 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 101d0 parent 0x4 splitCount 1 color 2003953581 key 0- Init START").is_some());
    }

    #[test]
    fn breadcrumbs_and_versions() {
        assert_eq!(
            info("init.cc:421 -> 5"),
            Some(Event::Breadcrumb { code: 5 })
        );
        assert_eq!(
            info("group.cc:76 -> 5 [Async thread]"),
            Some(Event::Breadcrumb { code: 5 })
        );
        assert_eq!(
            info("transport/net.cc:753 -> 6"),
            Some(Event::Breadcrumb { code: 6 })
        );
        assert_eq!(
            info("cudaDriverVersion 13000"),
            Some(Event::CudaDriver("13000"))
        );
        assert_eq!(
            info("NCCL version 2.28.9+cuda13.0"),
            Some(Event::Version("2.28.9"))
        );
        assert_eq!(info("NCCL version garbage"), None);
        assert_eq!(
            info("NCCL_IB_DISABLE set by environment to 1."),
            Some(Event::Env {
                var: "NCCL_IB_DISABLE",
                value: "1"
            })
        );
        assert_eq!(
            info("NCCL_NET_PLUGIN set by environment to ofi"),
            Some(Event::PluginRequested("ofi"))
        );
        assert_eq!(
            info("Bootstrap: Using lo:127.0.0.1<0>"),
            Some(Event::BootstrapInterface("lo"))
        );
    }
}
