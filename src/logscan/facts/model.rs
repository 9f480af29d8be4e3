//! The data the fold builds: per-process and per-rank facts, each with the line that showed
//! it, and the caps that keep it bounded.

use std::collections::HashSet;

use crate::logscan::analysis::Evidence;
use crate::logscan::event::IbDevice;

/// Upper bounds that keep memory flat on huge or hostile inputs.
pub const MAX_PROCESSES: usize = 16_384;
pub const MAX_RANKS: usize = 16_384;
pub const MAX_EVIDENCE: usize = 5;
pub(super) const MAX_CONNECTION_KINDS: usize = 16;
pub(in crate::logscan) const MAX_PEERS: usize = 64;
pub(super) const MAX_OPEN_INITS: usize = 64;
pub(super) const MAX_COMM_GROUPS: usize = 4_096;
pub(super) const MAX_RANKS_PER_GROUP: usize = 1_024;
pub(super) const MAX_LIST: usize = 64;
pub(super) const MAX_TEXT: usize = 400;
pub(super) const MAX_MERGED_LISTS: usize = 256;

/// Where a line came from; turned into `Evidence` only when a fact needs it.
#[derive(Clone, Copy)]
pub struct Seen<'a> {
    pub source: &'a std::sync::Arc<str>,
    /// Index of `source` in `Facts::sources`.
    pub source_index: usize,
    pub line: u64,
    /// The line as read (not necessarily UTF-8).
    pub raw: &'a [u8],
}

impl Seen<'_> {
    /// The line as text for evidence: trailing blanks removed, invalid UTF-8 replaced,
    /// at most `MAX_TEXT` bytes.
    pub fn text(&self) -> String {
        let mut clean = Vec::new();
        let raw = if self.raw.contains(&0x1b) {
            crate::logscan::prefix::strip_ansi(self.raw, &mut clean);
            &clean
        } else {
            self.raw
        };
        let text = decode(raw);
        truncate(text.trim_end(), MAX_TEXT).to_string()
    }

    pub fn evidence(&self) -> Evidence {
        Evidence::new(self.source.clone(), self.line, self.text())
    }
}

/// Bytes as text, invalid UTF-8 replaced. `from_utf8` first: it checks ASCII a word at a
/// time, `from_utf8_lossy` a byte at a time.
pub fn decode(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(raw) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(raw),
    }
}

pub fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The first few pieces of evidence for something, and how often it happened in total.
#[derive(Debug, Default, Clone)]
pub struct EvidenceList {
    pub items: Vec<Evidence>,
    pub total: u64,
}

impl EvidenceList {
    pub fn push(&mut self, seen: &Seen) {
        self.total += 1;
        if self.items.len() < MAX_EVIDENCE {
            self.items.push(seen.evidence());
        }
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// A fact and the line that first showed it.
#[derive(Debug, Clone)]
pub struct Fact<T> {
    pub value: T,
    pub evidence: Evidence,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginFailure {
    /// `NCCL_NET_PLUGIN` named a library that could not be loaded.
    RequestedNotFound,
    /// A plugin library was there and the dynamic loader could not load it.
    LoadFailed,
    /// The library has no usable `ncclNetPlugin_*` symbols.
    Incompatible,
    /// aws-ofi-nccl found no usable libfabric provider.
    OfiProviderMissing,
    /// aws-ofi-nccl gave up initialising.
    OfiInitFailed,
    /// aws-ofi-nccl needs a newer libfabric for EFA than the one it loaded.
    OfiLibfabricTooOld,
    /// 2.28+: `Failed to initialize NET plugin X` for an external plugin (or IB with devices).
    InitFailed,
    /// `Failed to initialize any NET plugin`.
    NoneUsable,
}

impl PluginFailure {
    /// aws-ofi-nccl's own failures, whose cause is the EFA setup.
    pub fn is_ofi(self) -> bool {
        matches!(
            self,
            PluginFailure::OfiProviderMissing
                | PluginFailure::OfiInitFailed
                | PluginFailure::OfiLibfabricTooOld
        )
    }
}

#[derive(Debug, Default)]
pub struct Process {
    pub host: Option<String>,
    pub pid: Option<u32>,
    /// The wrapper's tag when NCCL's `host:pid` was missing.
    pub tag: Option<String>,
    pub version: Option<Fact<String>>,
    pub cuda_driver: Option<String>,
    pub requested_plugin: Option<Fact<String>>,
    pub loaded_plugin: Option<Fact<String>>,
    pub plugin_failures: Vec<(PluginFailure, Evidence)>,
    /// Network modules that initialised (2.27+), e.g. `Socket`, `Libfabric`.
    pub initialized: Vec<String>,
    pub ib_devices: Vec<IbDevice>,
    pub ib_devices_evidence: Option<Evidence>,
    /// Hashes of the device list texts already merged into `ib_devices` (at most
    /// `MAX_MERGED_LISTS`): each communicator repeats its list, and parsing it again would
    /// add nothing.
    pub ib_lists_merged: Vec<u64>,
    pub ib_no_device: bool,
    pub ib_init_failed: Option<Evidence>,
    /// `NET/IB : Unable to open device X`: an IB device exists but could not be opened.
    pub ib_open_failed: Option<Evidence>,
    pub verbs_missing: Option<Evidence>,
    pub socket_interfaces: Option<Fact<Vec<String>>>,
    /// NET/Socket interfaces on a link-local address (`169.254.x`, `fe80::`).
    pub link_local: Option<Fact<Vec<String>>>,
    /// `text_hash` of the last interface list searched for link-local addresses (0: none):
    /// NCCL prints the same list for every communicator, and one without them has none the
    /// next time either.
    pub link_local_checked: u64,
    /// The bootstrap interface is on a link-local address.
    pub bootstrap_link_local: Option<Evidence>,
    pub bootstrap_interface: Option<Fact<String>>,
    /// The address NCCL bootstraps on (`eth0:10.0.0.1<0>` → `10.0.0.1`), else that of the
    /// first NET/Socket interface: a host's own address on that interface.
    pub address: Option<(String, String)>,
    pub env: Vec<(String, Fact<String>)>,
    pub ofi_version: Option<String>,
    pub ofi_provider: Option<Fact<String>>,
    pub ofi_fabric: Option<String>,
    pub ofi_nics: Option<u32>,
    pub ofi_gdr_off: Option<Evidence>,
    /// NCCL's first `GPU Direct RDMA Disabled for …` line (a NIC without the kernel module,
    /// or a GPU too far from the NIC on PCI).
    pub gdr_nic_off: Option<Evidence>,
    /// The EC2 instance type aws-ofi-nccl's platform table matched (`Running on … platform`).
    pub ofi_platform: Option<Fact<String>>,
    /// The libfabric version aws-ofi-nccl said its EFA support needs (`requires at least`).
    pub ofi_libfabric_needed: Option<String>,
    /// The libfabric version aws-ofi-nccl loaded (`Using Libfabric version`).
    pub ofi_libfabric: Option<String>,
    pub efa_runtime: Option<Evidence>,
    /// aws-ofi-nccl's `Setting provider_filter to X`: the only provider it may select.
    pub ofi_filter: Option<String>,
    /// An external plugin that named itself in its own lines (`NET/FastSocket : ...`).
    pub self_named: Option<Fact<String>>,
    /// That plugin listed IB verbs ports in NCCL's own form (`NET/gIB : Using
    /// [0]mlx5_0:1/RoCE`): a network of that name is IB verbs.
    pub verbs_plugin: Option<Fact<String>>,
    /// That plugin reported a connection made or accepted: NET connections exist.
    pub self_named_connected: Option<Evidence>,
    /// `NET/IB : Got completion from peer ...`: the IB verbs transport carried data.
    pub ib_traffic: Option<Evidence>,
    /// `NET/Socket : socket progress error`: a NET/Socket connection carried data.
    pub socket_traffic: Option<Evidence>,
    /// Verbs calls that failed (NCCL's verbs wrapper WARNs), the first of each call (at
    /// most `MAX_LIST`), with the error as printed.
    pub verbs_failures: Vec<(String, Fact<Option<String>>)>,
    /// aws-ofi-nccl's `Request … completed with error …`: a connection over the plugin
    /// failed while it carried data; and the error as printed.
    pub ofi_traffic: Option<Fact<Option<String>>>,
    pub tuner_probe: Option<Evidence>,
    /// NCCL's routine "no external plugin, using internal implementation" line (§3): the
    /// network is NCCL's own IB, else its Socket.
    pub internal_net: Option<Evidence>,
    /// Any line about choosing or initialising a network: we know what NCCL tried.
    pub net_init_seen: bool,
    pub ranks: Vec<usize>,
    /// NCCL records folded for this process.
    pub records: u64,
    /// The source (file, pod) of its first record: index into `Facts::sources`.
    pub source: Option<usize>,
}

impl Process {
    pub fn env(&self, var: &str) -> Option<&Fact<String>> {
        self.env
            .iter()
            .find(|(name, _)| name == var)
            .map(|(_, fact)| fact)
    }

    /// `host:pid`, `host`, or the wrapper tag: how people will recognise this process.
    pub fn label(&self) -> String {
        self.name()
            .unwrap_or_else(|| "(no host in log)".to_string())
    }

    /// `host:pid` or the wrapper tag; `None` when the log names the process neither way (a
    /// message then says nothing rather than "on (no host in log)").
    pub fn name(&self) -> Option<String> {
        match (&self.host, self.pid, &self.tag) {
            (Some(host), Some(pid), _) => Some(format!("{host}:{pid}")),
            (_, _, Some(tag)) => Some(tag.clone()),
            _ => None,
        }
    }
}

/// How far a rank got; later phases compare greater. The last phase a rank logged is where
/// it stopped if it hangs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Phase {
    #[default]
    Started,
    NetInit,
    InitStart,
    /// Past bootstrap: every rank of the communicator had checked in.
    Bootstrapped,
    Topology,
    Connecting,
    InitComplete,
    Connected,
    Destroyed,
    Error,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Started => "started",
            Phase::NetInit => "net-init",
            Phase::InitStart => "init-start (bootstrap)",
            Phase::Bootstrapped => "bootstrapped",
            Phase::Topology => "topology",
            Phase::Connecting => "connecting",
            Phase::InitComplete => "init-complete",
            Phase::Connected => "connected",
            Phase::Destroyed => "destroyed",
            Phase::Error => "error",
        }
    }
}

/// One kind of connection a rank made, e.g. `NET/Socket` or `P2P/CUMEM`.
#[derive(Debug, Clone)]
pub struct ConnSeen {
    pub label: String,
    /// For NET and CollNet: the network name as NCCL printed it.
    pub network: Option<String>,
    pub gdr: bool,
    pub count: u64,
    /// The NCCL ranks at the other end, sorted (at most `MAX_PEERS`).
    pub peers: Vec<u32>,
    pub evidence: Evidence,
}

impl ConnSeen {
    pub fn is_network(&self) -> bool {
        self.network.is_some()
    }

    /// A CollNet connection (`via COLLNET/SHARP`): the CollNet plugin, which runs beside the
    /// point-to-point network on the same fabric.
    pub fn is_collnet(&self) -> bool {
        self.label.starts_with("COLLNET")
    }
}

/// A line remembered cheaply: the source index instead of its name, the raw bytes (decoded
/// only if it becomes evidence), and a buffer reused when the mark moves.
#[derive(Debug, Clone, Default)]
pub struct LineMark {
    pub source: usize,
    pub line: u64,
    pub raw: Vec<u8>,
}

impl LineMark {
    /// Points the mark at `seen`, reusing the buffer.
    pub fn set(&mut self, seen: &Seen) {
        self.source = seen.source_index;
        self.line = seen.line;
        self.raw.clear();
        self.raw
            .extend_from_slice(&seen.raw[..seen.raw.len().min(MAX_TEXT + 4)]);
    }
}

/// A communicator init that started (`Init START`) and has not completed yet.
#[derive(Debug, Clone)]
pub struct OpenInit {
    pub comm: u64,
    pub comm_id: Option<u64>,
    pub nranks: Option<u32>,
    pub mark: LineMark,
    /// Whether the `Init START` line's form shows it was printed once bootstrap was done
    /// (`InitLine::after_bootstrap`).
    pub after_bootstrap: Option<bool>,
}

/// `0x7f10...` → its value; anything else gets a stable hash, so ids stay comparable.
pub fn hex_id(text: &str) -> u64 {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    // The common case, 1 to 16 hex digits, without `from_str_radix`'s per-digit checks (a
    // communicator line has one or two ids, and every rank prints several).
    if (1..=16).contains(&digits.len()) {
        let value = digits.bytes().try_fold(0u64, |value, b| {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return None,
            };
            Some(value << 4 | u64::from(digit))
        });
        if let Some(value) = value {
            return value;
        }
    }
    u64::from_str_radix(digits, 16).unwrap_or_else(|_| {
        // FNV-1a: ids only need to be compared, never shown.
        text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    })
}

#[derive(Debug, Default)]
pub struct Rank {
    pub process: usize,
    pub dev: Option<u32>,
    /// NCCL rank in the largest communicator this rank joined.
    pub rank: Option<u32>,
    pub world: u32,
    pub network: Option<Fact<String>>,
    pub conns: Vec<ConnSeen>,
    pub max_nnodes: Option<Fact<u32>>,
    /// NCCL's `localRanks` / `localRank` in the largest communicator: its view of the layout.
    pub local_ranks: Option<u32>,
    pub local_rank: Option<u32>,
    /// Joined a communicator with more than one rank.
    pub multi_rank_comm: bool,
    pub phase: Phase,
    /// The line that moved the rank into `phase` (see `Facts::phase_evidence`).
    pub phase_mark: Option<LineMark>,
    /// Where the rank's first and last records stand: (source index, line); lines count
    /// from 1, so `(_, 0)` is none yet.
    pub first_at: (usize, u64),
    pub last_at: (usize, u64),
    pub open_inits: Vec<OpenInit>,
    pub completed_inits: u64,
    /// `Connected all rings, use ring PXN x GDR y`: NCCL's flag as printed. Only `GDR 0`
    /// is evidence (of network connections without GPUDirect RDMA); see `transport::gdr`.
    pub ring_gdr: Option<bool>,
    /// The most ranks a ring listing of this rank showed (every rank of its communicator).
    pub ring_ranks: u32,
    /// Joined a communicator made by `ncclCommInitAll`: all its ranks in this one process.
    pub all_in_one_process: Option<Evidence>,
    /// `MNNVL 1` on a communicator line (2.20+): the nodes share an NVLink domain.
    pub mnnvl: Option<Evidence>,
    /// A tree listing that gave this rank a child on another node (`Event::TreeBranches`).
    pub tree_branches: Option<Evidence>,
    /// Communicators made by `ncclCommSplit` (at most `MAX_LIST`).
    pub split_comms: Vec<u64>,
    /// A communicator that is not a split said `nNodes 1`.
    pub whole_comm_one_node: bool,
    /// The global rank the launcher's tag gives this process (`[1,12]`, `[rank12]`).
    pub launcher_rank: Option<u32>,
    /// Hash of the last wrapper looked at for `launcher_rank` (0: none yet): the same
    /// wrapper again has no number either.
    pub wrapper_checked: u64,
    /// Both ends of `P2P/direct pointer` links, which NCCL uses only between ranks of one
    /// process (sorted, at most `MAX_PEERS`).
    pub same_process_ranks: Vec<u32>,
    /// The links of connection lines seen while no communicator line had numbered this rank
    /// (a log of `NCCL_DEBUG_SUBSYS=NET`, a `grep via` excerpt), as their printer and the
    /// other end (`Link::printer_and_peer`); distinct, at most `MAX_PEERS`.
    pub printed_links: Vec<PrintedLink>,
}

/// One end of a connection line as its printer names it (`Rank::printed_links`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrintedLink {
    pub printer: u32,
    pub peer: u32,
    /// Through the network (`via NET/...`).
    pub net: bool,
}

/// Ranks that logged `Init START` for one `commId` (2.19+), to spot ranks that never joined.
#[derive(Debug, Default)]
pub struct CommGroup {
    pub nranks: Option<u32>,
    pub ranks: HashSet<usize, foldhash::fast::RandomState>,
    pub completed: bool,
    /// Where the last of its ranks' `Init COMPLETE` stands: (source index, line).
    pub last_completed_at: (usize, u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_are_what_from_str_radix_reads_else_a_hash() {
        let reference = |text: &str| {
            let digits = text.strip_prefix("0x").unwrap_or(text);
            u64::from_str_radix(digits, 16).unwrap_or_else(|_| {
                text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                })
            })
        };
        for text in [
            "0x7f10a8b0c0d0",
            "0xFFFFFFFFFFFFFFFF",
            "0xdeadBEEF",
            "0x1",
            "abc",
            "0x",
            "",
            "+1",
            "0x+1",
            "0xg1",
            "0x10000000000000000",
            "0x00000000000000001",
            "0x7f10 ",
            "0xé1",
        ] {
            assert_eq!(hex_id(text), reference(text), "{text:?}");
        }
    }
}
