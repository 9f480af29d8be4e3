//! Step 2 of the pipeline: classify one NCCL message into an event, or `None` for the many
//! lines that carry no transport evidence (topology dumps, tuner tables, proxy threads).
//!
//! Dispatch is on the message's first byte and fixed prefixes, so the common noise lines cost
//! a byte comparison; regexes run only on rare lines. Network-setup lines (`NET/...`, plugin
//! loading, aws-ofi-nccl) are parsed in `net_lines.rs`. Format references are to
//! shared/docs/nccl-log-grammar.md.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use memchr::memmem;

mod memo;
mod model;

pub use memo::{Memo, Offset, text_at};
pub use model::*;

use super::net_lines;
use super::prefix::{Level, parse_u32};

/// A plugin named by the source location of its WARN (`net_fastsocket.cc:123`,
/// `tcpxCommProgress:456`): the plugin whose code printed it was loaded.
pub fn plugin_in_location(before_marker: &[u8]) -> Option<&'static str> {
    static NAMES: LazyLock<AhoCorasick> = LazyLock::new(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(["fastsocket", "tcpx"])
            .expect("valid patterns")
    });
    // Both names hold an `x` or a `k`, which most prefixes lack: two byte searches, cheaper
    // than starting the automaton on every WARN.
    memchr::memchr3(b'x', b'X', b'k', before_marker)
        .or_else(|| memchr::memchr(b'K', before_marker))?;
    let found = NAMES.find(before_marker)?;
    Some(match found.pattern().as_u32() {
        0 => "FastSocket",
        _ => "GPUDirectTCPX",
    })
}

/// Classifies one NCCL record: `Presence` when it carries no evidence but shows that its
/// rank exists (a rank whose only lines are `threadThresholds ...` still counts).
pub fn classify(level: Level, msg: &str) -> Option<Event<'_>> {
    Some(classify_record(level, msg).unwrap_or(Event::Presence))
}

fn classify_record(level: Level, msg: &str) -> Option<Event<'_>> {
    if level == Level::Warn {
        return Some(classify_warn(msg));
    }
    let first = *msg.as_bytes().first()?;
    match first {
        b'C' => classify_c(msg),
        b'R' if msg.starts_with("Ring ") => connection_or_layout(msg),
        b'T' if msg.starts_with("Trees") => Some(trees(msg)),
        b'T' if msg.starts_with("Tree ") => Some(Event::Topology),
        b'T' if msg.starts_with("TUNER/Plugin: Failed to find ncclTunerPlugin_v4 ") => {
            Some(Event::TunerProbe)
        }
        b'N' => classify_n(msg),
        b'U' => {
            let name = msg
                .strip_prefix("Using network ")
                .or_else(|| msg.strip_prefix("Using internal Network "))?;
            Some(Event::UsingNetwork(network_name(name)))
        }
        b'A' => {
            let rest = msg.strip_prefix("Assigned NET plugin ")?;
            Some(Event::UsingNetwork(
                rest.strip_suffix(" to comm").unwrap_or(rest).trim(),
            ))
        }
        b'D' => net_device_mismatch(msg, false),
        // 2.7+ (graph/paths.cc): NCCL's GPUDirect RDMA decision for a GPU and a NIC, by their
        // PCI distance (`GPU Direct RDMA Disabled for GPU 1a000 / HCA 0 (distance 5 > 4)`).
        b'G' if msg.starts_with("GPU Direct RDMA ") => net_lines::gdr_from(msg),
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
        // 2.23+ (bootstrap.cc): printed once `bootstrapInit` is done.
        b'B' if msg.starts_with("Bootstrap timings ") => Some(Event::Bootstrapped),
        // 2.21+ (init.cc, fillInfo): a GPU's NVLink fabric state, printed as
        // initTransportsRank starts, which every release runs once bootstrap is done.
        b'M' if msg.starts_with("MNNVL busId ") && msg.contains(" cliqueId ") => {
            Some(Event::Bootstrapped)
        }
        b'B' => {
            let rest = msg
                .strip_prefix("Bootstrap : Using ")
                .or_else(|| msg.strip_prefix("Bootstrap: Using "))?;
            Some(Event::BootstrapInterface(rest.trim()))
        }
        b'P' => {
            // 2.12–2.20 (net.cc): `Plugin name set by env to libnccl-net-X.so`, without the
            // `NET/Plugin:` that later releases put in front.
            if let Some(name) = msg.strip_prefix("Plugin name set by env to ") {
                return Some(Event::PluginRequested(name.trim()));
            }
            // `P2P plugin IBext` (2.12–2.19), `P2P plugin v8 IBext_v8` (2.20+).
            let name = msg.strip_prefix("P2P plugin ")?;
            let mut words = name.split_whitespace();
            let first = words.next()?;
            let is_api = first.len() > 1
                && first.starts_with('v')
                && first[1..].bytes().all(|b| b.is_ascii_digit());
            let name = if is_api { words.next()? } else { first };
            Some(Event::PluginLoaded(name))
        }
        b'c' => {
            if let Some(driver) = msg.strip_prefix("cudaDriverVersion ") {
                Some(Event::CudaDriver(driver.trim()))
            } else if msg.starts_with("comm 0x") {
                comm_line(msg, false)
            } else {
                breadcrumb(msg)
            }
        }
        b'n' if msg.starts_with("ncclComm") => comm_line(msg, false),
        b'r' if msg.starts_with("rank ") => comm_line(msg, false),
        // 2.29+: `[Rank 3] ncclCommInitRankConfig comm 0x.. rank 3 nranks 16 ... - Init START`.
        b'[' => comm_line(without_rank_tag(msg)?, true),
        // 2.29+ (net.cc): the library loaded but offers no NET API version this NCCL takes;
        // the per-version `Failed to find ncclNetPlugin_vN symbol.` lines are gone.
        b'E' if msg.starts_with("External network plugin ") && msg.ends_with(" is unsupported") => {
            Some(Event::PluginIncompatible)
        }
        // 2.18–2.21 (bootstrap.cc): a split communicator's bootstrap is done.
        b'b' if msg.starts_with("bootstrapSplit: ") && msg.ends_with(" - DONE") => {
            Some(Event::Bootstrapped)
        }
        b'a'..=b'z' => breadcrumb(msg),
        _ => None,
    }
}

/// A tree listing: `TreeBranches` when a channel gives the rank two or more children
/// (`d0/d1/d2->rank->up` since 2.5, `up->rank->d0/d1/d2` in 2.4; -1 is none).
fn trees(msg: &str) -> Event<'static> {
    // Two children of three (`d0/d1/d2`) means d1 or d2 is a rank, a number right after a
    // `/`; most Trees lines (chains inside a node, `-1/-1/-1`) have none, and skip the parse.
    let bytes = msg.as_bytes();
    let second_child = memchr::memchr_iter(b'/', bytes)
        .any(|at| bytes.get(at + 1).is_some_and(u8::is_ascii_digit));
    if !second_child {
        return Event::Topology;
    }
    // NCCL separates the pieces with ASCII blanks; a Unicode-aware split costs a char decode
    // per byte of a line that can list 32 channels.
    let branches = msg.split_ascii_whitespace().any(|piece| {
        let Some((first, _, last)) = three_by_arrows(piece) else {
            return false;
        };
        let children = if first.contains('/') { first } else { last };
        let mut listed = children.split('/');
        let count = listed
            .by_ref()
            .take(3)
            .filter(|c| c.parse::<u32>().is_ok())
            .count();
        children.contains('/') && listed.next().is_none() && count >= 2
    });
    if branches {
        Event::TreeBranches
    } else {
        Event::Topology
    }
}

/// `a->b->c` split at its two `->` (as `split("->")` would, left to right), or `None` for
/// any other count. A Trees line has a piece per channel, so this runs dozens of times per
/// line: a byte scan, not a substring searcher built per piece.
fn three_by_arrows(piece: &str) -> Option<(&str, &str, &str)> {
    let bytes = piece.as_bytes();
    let mut arrows = [0; 2];
    let mut found = 0;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'-' && bytes[i + 1] == b'>' {
            if found == 2 {
                return None;
            }
            arrows[found] = i;
            found += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    (found == 2).then(|| {
        (
            &piece[..arrows[0]],
            &piece[arrows[0] + 2..arrows[1]],
            &piece[arrows[1] + 2..],
        )
    })
}

fn classify_c(msg: &str) -> Option<Event<'_>> {
    if msg.starts_with("Channel ") || msg.starts_with("CollNet ") || msg.starts_with("Coll ") {
        return connection_or_layout(msg);
    }
    if let Some(rest) = msg.strip_prefix("Connected ") {
        // 2.21+ `Connected to proxy localRank 0 -> connection 0x...` comes before the channels
        // connect: not the end of connection setup that `Connected all rings` is.
        if rest.starts_with("to proxy ") {
            return None;
        }
        let gdr = split_once(rest, &GDR_WORD)
            .and_then(|(_, after)| after.bytes().next())
            .and_then(|b| match b {
                b'0' => Some(false),
                b'1' => Some(true),
                _ => None,
            });
        return Some(Event::Connected { gdr });
    }
    // 2.29+ (init.cc): NCCL echoes NCCL_NET only as it overrides the communicator's config.
    if let Some(value) = msg.strip_prefix("Comm config netName reset to NCCL_NET=") {
        return Some(Event::Env {
            var: "NCCL_NET",
            value: value.trim(),
        });
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
    // 2.18+ (transport/nvls.cc): whether NVLink SHARP is there, found in initTransportsRank,
    // which every release runs once bootstrap is done.
    if msg.starts_with("NVLS multicast support is ") {
        return Some(Event::Bootstrapped);
    }
    if msg.starts_with("No network plugin found") {
        return Some(Event::PluginNotFound);
    }
    None
}

/// NCCL's verbs wrapper (misc/ibvwrap.cc, every release) as a WARN: `Call to ibv_reg_mr
/// failed with error Bad address` (2.21+ adds ` errno 14`), 2.26+ `Call to ibv_modify_qp
/// failed with 110 Connection timed out, on dev …`, or `Call to ibv_create_qp failed`. The
/// optional calls NCCL probes print the same text as INFO, which says nothing.
fn verbs_call_failed(msg: &str) -> Option<Event<'_>> {
    let rest = msg.strip_prefix("Call to ")?;
    let (call, after) = rest.split_once(' ')?;
    let after = after.strip_prefix("failed")?;
    if !call.starts_with("ibv_") || !call.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    // ` with error Bad address errno 14`, ` with 110 Connection timed out, on dev …`.
    let detail = after.trim_start().strip_prefix("with ").map(|d| {
        let d = d.strip_prefix("error ").unwrap_or(d);
        let end = [" errno ", ", "]
            .iter()
            .filter_map(|sep| d.find(sep))
            .min()
            .unwrap_or(d.len());
        d[..end].trim()
    });
    Some(Event::VerbsCallFailed {
        call,
        detail: detail.filter(|d| !d.is_empty()),
    })
}

/// NCCL's socket layer gave up connecting to a peer (a WARN; the bootstrap and NET/Socket
/// both connect this way): `Connect to 10.0.0.2<43215> failed : No route to host` (2.4–2.7;
/// `Net : ` in front 2.10–2.12, `socketStartConnect: ` 2.18–2.23, `<function>: ` 2.26),
/// `socketPollConnect to X failed with error E` (2.27), `socketPollConnect: Connect to X
/// returned N(E) errno …` (2.21–2.23), `<function>: connect to X returned E, exceeded error
/// retry count after N attempts` (2.26–2.27), `socketStartConnect: exceeded timeouts (N)`
/// (2.18–2.23). Each is printed once the retries are spent.
fn socket_connect_failed(msg: &str) -> Option<Event<'_>> {
    let at = msg
        .find("onnect to ")
        .filter(|&at| at > 0 && matches!(&msg[at - 1..at], "C" | "c"));
    let Some(at) = at else {
        let function =
            msg.starts_with("socketStartConnect: ") || msg.starts_with("socketPollConnect: ");
        let gave_up = msg.contains("exceeded retries") || msg.contains("exceeded timeouts");
        if function && gave_up {
            return Some(Event::SocketConnectFailed {
                peer: None,
                error: None,
            });
        }
        // 2.26: `<function>: connect returned E, exceeded error retry count (N)`.
        let error = msg.split_once(": connect returned ")?.1;
        let error = error.split_once(", exceeded")?.0;
        return Some(Event::SocketConnectFailed {
            peer: None,
            error: Some(error.trim()),
        });
    };
    // Only the socket layer's own forms: nothing but a function name (or `Net :`) before.
    let head = msg[..at - 1].trim_end();
    let head_ok = head.is_empty()
        || head == "Net :"
        || (head.ends_with(':') && !head[..head.len() - 1].contains(' '))
        // 2.27's `socketPollConnect to …`: the `C` is the function's.
        || head == "socketPoll";
    if !head_ok {
        return None;
    }
    let rest = &msg[at + "onnect to ".len()..];
    let (peer, after) = rest.split_once(' ')?;
    let error = if let Some(e) = after.strip_prefix("failed : ") {
        e
    } else if let Some(e) = after.strip_prefix("failed with error ") {
        e
    } else if let Some(e) = after.strip_prefix("returned ") {
        // `returned E, exceeded …`, `returned 111(Connection refused) errno …`.
        let e = e.split_once(", exceeded").map_or(e, |(e, _)| e);
        e.split_once(" errno ").map_or(e, |(e, _)| e)
    } else {
        return None;
    };
    Some(Event::SocketConnectFailed {
        peer: Some(peer),
        error: Some(error.trim()).filter(|e| !e.is_empty()),
    })
}

fn classify_warn(msg: &str) -> Event<'_> {
    if msg.starts_with("Failed to initialize any NET plugin") {
        return Event::NoNetPlugin;
    }
    let no_interface = [
        "Bootstrap : no socket interface found",
        "NET/Socket : no interface found",
        "NET/Socket : No usable listening interface found",
        "no device found matching ",
        "no device found after excluding ",
    ];
    if no_interface.iter().any(|p| msg.starts_with(p)) {
        return Event::NoInterface;
    }
    if let Some(name) = msg
        .strip_prefix("Error: network ")
        .and_then(|rest| rest.trim_end().strip_suffix(" not found."))
    {
        return Event::NetNotFound(name);
    }
    if let Some(version) = peer_version(msg) {
        return Event::PeerVersion(version);
    }
    if let Some(event) = net_device_mismatch(msg, true) {
        return event;
    }
    if let Some(event) = mnnvl_broken(msg) {
        return event;
    }
    if msg.starts_with("Failed to open libibverbs") {
        return Event::VerbsMissing;
    }
    if let Some(event) = verbs_call_failed(msg) {
        return event;
    }
    if let Some(event) = socket_connect_failed(msg) {
        return event;
    }
    if msg.starts_with("NET/")
        && let Some(event) = net_lines::classify(msg)
    {
        return event;
    }
    Event::Warn
}

/// The remote's version in 2.30's `NCCL version mismatch with remote peer 10.0.0.2<5000>
/// (local: 2.30.7, remote 2.28.9)` (as printed, when it is no dotted version).
fn peer_version(msg: &str) -> Option<&str> {
    let rest = msg.strip_prefix("NCCL version mismatch with remote peer ")?;
    let (_, remote) = rest.rsplit_once(", remote ")?;
    let remote = remote.trim_end().strip_suffix(')')?.trim();
    (!remote.is_empty()).then(|| version_number(remote).unwrap_or(remote))
}

/// 2.30 (init.cc): `Detected mixed local Net device counts across ranks (min 3, max 4).`
/// followed by `Set NCCL_IGNORE_NET_MISMATCH=1 to continue.` (WARN) or `Ignoring due to
/// NCCL_IGNORE_NET_MISMATCH.` (INFO).
fn net_device_mismatch(msg: &str, warn: bool) -> Option<Event<'static>> {
    let rest = msg.strip_prefix("Detected mixed local Net device counts across ranks (min ")?;
    let (min, rest) = rest.split_once(", max ")?;
    let (max, _) = rest.split_once(')')?;
    Some(Event::NetDeviceMismatch {
        min: parse_u32(min.as_bytes())?,
        max: parse_u32(max.as_bytes())?,
        stopped: warn,
    })
}

/// 2.26+ (mnnvl.cc): `MNNVL (cliqueSize 72) is available but not working on this system. …`
/// (2.27+, NCCL stops unless `NCCL_MNNVL_ENABLE=0`) or `… but not supported on this system.
/// Check the IMEX configuration.` (2.26).
fn mnnvl_broken(msg: &str) -> Option<Event<'static>> {
    let rest = msg.strip_prefix("MNNVL (cliqueSize ")?;
    let (clique, rest) = rest.split_once(") is available but not ")?;
    Some(Event::MnnvlBroken {
        clique: parse_u32(clique.as_bytes())?,
        stopped: rest.starts_with("working"),
    })
}

/// `[Rank 3] ncclCommInitRankConfig comm ...` → `ncclCommInitRankConfig comm ...` (2.29+
/// `Init START`).
fn without_rank_tag(msg: &str) -> Option<&str> {
    let (number, rest) = msg.strip_prefix("[Rank ")?.split_once("] ")?;
    parse_u32(number.as_bytes())?;
    Some(rest)
}

/// `2.23.4+cuda12.6 ...` → `2.23.4`.
pub fn version_number(text: &str) -> Option<&str> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let version = text[..end].trim_end_matches('.');
    (version.contains('.') && version.starts_with(|c: char| c.is_ascii_digit())).then_some(version)
}

/// The network's name in `Using network <name>`: a net module's name (`IB`, `Socket`,
/// `AWS Libfabric`, `IBext_v8`) never holds a bracket, so a launcher's tail after it (Ray's
/// ` [repeated 6x across cluster]`, cut short by a console) is not part of it.
fn network_name(text: &str) -> &str {
    text.split_once(" [").map_or(text, |(name, _)| name).trim()
}

/// `eth0:10.0.0.1<0>` → `eth0`.
pub fn interface_name(text: &str) -> &str {
    let text = text.trim_start();
    let end = text.find([':', ' ', '<']).unwrap_or(text.len());
    &text[..end]
}

/// `NCCL_IB_DISABLE set by environment to 1.` / `NCCL_IB_HCA set to mlx5_2`.
fn env_echo(msg: &str) -> Option<Event<'_>> {
    let (var, value) = split_once(msg, &SET_BY_ENVIRONMENT).or_else(|| split_once(msg, &SET_TO))?;
    if var.contains(' ') {
        return None;
    }
    let value = value.trim().trim_end_matches('.');
    if var == "NCCL_NET_PLUGIN" {
        return Some(Event::PluginRequested(value));
    }
    Some(Event::Env { var, value })
}

/// A substring searcher built once: `str::find` with a `&str` pattern builds one per call,
/// which costs more than the search on lines this short.
pub type Needle = LazyLock<memmem::Finder<'static>>;

/// `text.split_once(needle)`.
pub fn split_once<'a>(text: &'a str, needle: &Needle) -> Option<(&'a str, &'a str)> {
    let at = needle.find(text.as_bytes())?;
    // The needles are ASCII, so both ends of a match are character boundaries.
    Some((&text[..at], &text[at + needle.needle().len()..]))
}

static VIA: Needle = LazyLock::new(|| memmem::Finder::new(b" via "));
static GDR_WORD: Needle = LazyLock::new(|| memmem::Finder::new(b" GDR "));
static SET_BY_ENVIRONMENT: Needle =
    LazyLock::new(|| memmem::Finder::new(b" set by environment to "));
static SET_TO: Needle = LazyLock::new(|| memmem::Finder::new(b" set to "));
static NNODES: Needle = LazyLock::new(|| memmem::Finder::new(b" nNodes "));

/// A connection (` via <transport>`), else a ring/graph layout line; `None` for a connection
/// line cut before its transport is complete (Ray's dedup does that), which says nothing.
fn connection_or_layout(msg: &str) -> Option<Event<'_>> {
    match VIA.find(msg.as_bytes()) {
        Some(at) => connection(&msg[at + 5..], link(&msg[..at])),
        None => Some(ring_order(msg).unwrap_or(Event::Topology)),
    }
}

/// `Channel 00/12 :    0   3   2   1   5   6   7   4` (2.5+) or `Channel 00 :    0   1` /
/// `Ring 00 :    0   1` (2.4): the ring over every rank of the communicator.
fn ring_order(msg: &str) -> Option<Event<'_>> {
    let (head, list) = msg.split_once(" : ")?;
    let head_ok = head
        .split_once(' ')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit() || b == b'/'));
    if !head_ok {
        return None;
    }
    let mut ranks = 0u32;
    for word in list.split_ascii_whitespace() {
        parse_u32(word.as_bytes())?;
        ranks += 1;
    }
    (ranks > 0).then_some(Event::RingOrder { ranks })
}

/// `Channel 00/0 : 3[0] -> 0[0] [receive]` / `Ring 00 : 3 -> 4 [send]` → ranks 3 and 0,
/// and whether the line is a `[receive]` one.
/// CollNet lines name one rank only: no link.
fn link(head: &str) -> Option<Link> {
    // Byte scans, not substring searches: this runs on every connection line, and the text
    // before ` via ` is a few dozen bytes.
    let bytes = head.as_bytes();
    let colon = memchr::memchr(b':', bytes)?;
    let rest = &bytes[colon + 1..];
    let arrow = memchr::memchr(b'>', rest).filter(|&at| at > 0 && rest[at - 1] == b'-')?;
    let rank = |side: &[u8]| {
        let side = &side[side.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
        let digits = side.iter().take_while(|b| b.is_ascii_digit()).count();
        parse_u32(&side[..digits])
    };
    Some(Link {
        from: rank(&rest[..arrow - 1])?,
        to: rank(&rest[arrow + 1..])?,
        receive: rest.trim_ascii_end().ends_with(b"[receive]"),
    })
}

/// The transport after ` via `.
fn connection(via: &str, link: Option<Link>) -> Option<Event<'_>> {
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
    Some(Event::Connection(conn, link))
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
/// `comm 0x.. ... - Destroy COMPLETE`. `rank_tagged`: the line began with 2.29's `[Rank N] `.
fn comm_line(msg: &str, rank_tagged: bool) -> Option<Event<'_>> {
    enum Kind {
        Start,
        Complete,
        Nodes,
        Ranks,
    }
    let kind = if msg.ends_with("Init START") {
        Kind::Start
    } else if msg.ends_with("Init COMPLETE") {
        Kind::Complete
    } else if msg.ends_with("Destroy COMPLETE") {
        return Some(Event::Destroyed);
    } else if msg.starts_with("comm 0x") && NNODES.find(msg.as_bytes()).is_some() {
        Kind::Nodes
    } else if msg.starts_with("rank ") || msg.starts_with("comm 0x") {
        Kind::Ranks
    } else {
        return None;
    };
    let mut comm = None;
    let mut rank = None;
    let mut nranks = None;
    let mut nnodes = None;
    let mut comm_id = None;
    let mut local_ranks = None;
    let mut local_rank = None;
    let mut mnnvl = None;
    let mut words = Words { text: msg, pos: 0 };
    while let Some(word) = words.next() {
        let slot = match word {
            "comm" => &mut comm,
            "rank" if rank.is_none() => &mut rank,
            "nranks" | "nRanks" if nranks.is_none() => &mut nranks,
            "nNodes" => &mut nnodes,
            "localRanks" => &mut local_ranks,
            "localRank" => &mut local_rank,
            "MNNVL" => &mut mnnvl,
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
    if let Kind::Ranks = kind {
        return Some(Event::CommRanks {
            rank: rank?,
            nranks: nranks?,
        });
    }
    let split = msg.starts_with("ncclCommSplit ");
    // Where `Init START` stands against bootstrap (init.cc, ncclCommInitRankFunc): up to
    // 2.22 NCCL prints it once bootstrapInit or bootstrapSplit has returned, and the
    // bootstrap root answers no rank before every rank has checked in; 2.23+ prints it
    // before bootstrap (which its `Init timings` then time). The form tells the era where
    // it can: no API name in front (`comm 0x.. rank ..`) is before 2.21; 2.21–2.22 name the
    // API and a split's line keeps its `commId`, which 2.23+ split lines drop (`key 3-
    // Init START`); 2.29+ put `[Rank N]` in front. `ncclCommInitRank.. commId 0x..` is the
    // form of 2.21 to 2.28, either side.
    let after_bootstrap = if rank_tagged {
        Some(false)
    } else if msg.starts_with("comm 0x") {
        Some(true)
    } else if split {
        Some(comm_id.is_some())
    } else {
        None
    };
    let init = InitLine {
        comm: comm?,
        rank,
        nranks,
        comm_id,
        all_in_one_process: msg.starts_with("ncclCommInitAll "),
        split,
        after_bootstrap,
    };
    Some(match kind {
        Kind::Start => Event::InitStart(init),
        Kind::Complete => Event::InitComplete(init),
        Kind::Nodes => Event::CommNodes {
            comm: init.comm,
            rank: rank?,
            nranks: nranks?,
            nnodes: number(nnodes)?,
            local_ranks: number(local_ranks),
            local_rank: number(local_rank),
            mnnvl: number(mnnvl),
        },
        Kind::Ranks => return None,
    })
}

/// `text.split_ascii_whitespace()`, byte by byte: the generic iterator costs several times
/// more on the communicator lines every init prints.
struct Words<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len() && bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        if self.pos == bytes.len() {
            return None;
        }
        let start = self.pos;
        while self.pos < bytes.len() && !bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        // Both ends are next to ASCII whitespace or at an end: character boundaries.
        Some(&self.text[start..self.pos])
    }
}

static ARROW: Needle = LazyLock::new(|| memmem::Finder::new(b" -> "));

/// `init.cc:421 -> 5`, `group.cc:76 -> 5 [Async thread]`, `transport/net.cc:753 -> 6`; 2.30
/// (`INFO_LOC`) names the function too: `init.cc:1917 (ncclCommInitRankDev) -> 2`.
fn breadcrumb(msg: &str) -> Option<Event<'_>> {
    let at = ARROW.find(msg.as_bytes())?;
    let (location, code) = (&msg[..at], &msg[at + 4..]);
    let location = without_function(location);
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

/// `init.cc:1917 (ncclCommInitRankDev)` → `init.cc:1917`: 2.30's `INFO_LOC` adds the calling
/// function, a C identifier, after the source line.
fn without_function(location: &str) -> &str {
    let Some((place, function)) = location.rsplit_once(" (") else {
        return location;
    };
    let is_identifier = function.strip_suffix(')').is_some_and(|name| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    });
    if is_identifier { place } else { location }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_named_by_a_location_in_any_case() {
        let cases: [(&[u8], Option<&str>); 6] = [
            (b"g:1:5 [0] net_fastsocket.cc:321 ", Some("FastSocket")),
            (b"g:1:5 [0] NET_FASTSOCKET.CC:321 ", Some("FastSocket")),
            (b"g:2:5 [1] tcpxCommProgress:456 ", Some("GPUDirectTCPX")),
            (b"g:2:5 [1] TCPXCommProgress:456 ", Some("GPUDirectTCPX")),
            (b"worker-x:2:5 [1] transport.cc:9 ", None),
            (b"g:1:5 [0] ", None),
        ];
        for (before, want) in cases {
            assert_eq!(
                plugin_in_location(before),
                want,
                "{}",
                String::from_utf8_lossy(before)
            );
        }
    }

    #[test]
    fn three_by_arrows_splits_as_split_does() {
        for piece in [
            "5/-1/-1->4->3",
            "-1->0->-1",
            "a-->b->c",
            "a->b",
            "a->b->c->d",
            "->->",
            "",
            "x->",
            "1/2->3->",
            "->a->b",
            "a->>b->c",
        ] {
            let parts: Vec<&str> = piece.split("->").collect();
            let expected = (parts.len() == 3).then(|| (parts[0], parts[1], parts[2]));
            assert_eq!(three_by_arrows(piece), expected, "{piece:?}");
        }
    }

    fn info(msg: &str) -> Option<Event<'_>> {
        classify_record(Level::Info, msg)
    }

    #[test]
    fn records_without_evidence_show_their_rank() {
        assert_eq!(
            classify(Level::Info, "threadThresholds 8/8/64 | 64/8/64"),
            Some(Event::Presence)
        );
        assert_eq!(
            info("Channel 00/12 :    0   3   2   1   5   6   7   4"),
            Some(Event::RingOrder { ranks: 8 })
        );
        assert_eq!(
            info("rank 5 nranks 6"),
            Some(Event::CommRanks { rank: 5, nranks: 6 })
        );
        assert_eq!(
            info("comm 0x19b0d460 rank 5 nranks 6"),
            Some(Event::CommRanks { rank: 5, nranks: 6 })
        );
        assert_eq!(
            info("P2P plugin v8 IBext_v8"),
            Some(Event::PluginLoaded("IBext_v8"))
        );
        assert_eq!(info("P2P plugin IBext"), Some(Event::PluginLoaded("IBext")));
        assert!(matches!(
            info(
                "ncclCommInitAll comm 0x5 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 34000 commId 0x7 - Init COMPLETE"
            ),
            Some(Event::InitComplete(InitLine {
                all_in_one_process: true,
                ..
            }))
        ));
    }

    fn conn(msg: &str) -> Option<Conn<'_>> {
        match info(msg)? {
            Event::Connection(conn, _) => Some(conn),
            _ => None,
        }
    }

    fn link_of(msg: &str) -> Option<(u32, u32)> {
        match info(msg)? {
            Event::Connection(_, link) => link.map(|l| (l.from, l.to)),
            _ => None,
        }
    }

    #[test]
    fn connection_lines_name_both_ranks() {
        for (line, ranks) in [
            (
                "Channel 00/0 : 3[0] -> 0[0] [receive] via NET/Libfabric/0",
                Some((3, 0)),
            ),
            ("Ring 00 : 3 -> 4 [send] via NET/IB/0/GDRDMA", Some((3, 4))),
            (
                "Channel 01 : 2[201c0] -> 7[a01d0] via P2P/IPC/read",
                Some((2, 7)),
            ),
            (
                "Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/3(8)/GDRDMA(PCI)/Shared",
                Some((7, 8)),
            ),
            // CollNet lines name one rank; a mangled arrow names none.
            ("CollNet 00/0 : 3 [send] via COLLNET/IB/0/GDRDMA", None),
            ("Channel 00/0 : x -> 1[1] via P2P/CUMEM", None),
        ] {
            assert_eq!(link_of(line), ranks, "{line}");
        }
        assert_eq!(
            conn("Channel 00/0 : x -> 1[1] via P2P/CUMEM"),
            Some(Conn::P2p("P2P/CUMEM"))
        );
    }

    #[test]
    fn connection_lines_of_every_era() {
        let net = |name, gdr| Some(Conn::Net { name, gdr });
        assert_eq!(
            conn("Ring 00 : 3 -> 4 [send] via NET/IB/0/GDRDMA"),
            net("IB", true)
        );
        assert_eq!(
            conn("Channel 00 : 1[101d0] -> 8[101c0] [send] via NET/AWS Libfabric/0/GDRDMA"),
            net("AWS Libfabric", true)
        );
        assert_eq!(
            conn("Channel 00/0 : 3[0] -> 0[0] [receive] via NET/Libfabric/0"),
            net("Libfabric", false)
        );
        assert_eq!(
            conn("Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/3(8)/GDRDMA(PCI)/Shared"),
            net("IB", true)
        );
        assert_eq!(
            conn("Channel 01/0 : 0[0] -> 1[1] [send] via NET/Socket/0"),
            net("Socket", false)
        );
        assert_eq!(
            conn("Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer"),
            Some(Conn::P2p("P2P/direct pointer"))
        );
        assert_eq!(
            conn("Channel 00/0 : 3[3] -> 0[0] via P2P/CUMEM/read"),
            Some(Conn::P2p("P2P/CUMEM"))
        );
        assert_eq!(
            conn("Channel 01 : 2[201c0] -> 7[a01d0] via P2P/IPC/read"),
            Some(Conn::P2p("P2P/IPC"))
        );
        assert_eq!(
            conn("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"),
            Some(Conn::Shm)
        );
        assert_eq!(
            conn("Ring 00 : 0[0] -> 1[1] via direct shared memory"),
            Some(Conn::Shm)
        );
        assert_eq!(
            conn("CollNet 00/0 : 3 [send] via COLLNET/IB/0/GDRDMA"),
            Some(Conn::CollNet {
                name: "IB",
                gdr: true
            })
        );
        assert_eq!(
            conn("Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL"),
            Some(Conn::Mnnvl)
        );
    }

    #[test]
    fn lookalikes_carry_no_transport() {
        assert_eq!(
            info("Channel 00/02 :    0   7   6   5"),
            Some(Event::RingOrder { ranks: 4 })
        );
        assert_eq!(info("Ring 08 : 0 -> 1 -> 2"), Some(Event::Topology));
        assert_eq!(
            info("Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1"),
            Some(Event::Topology)
        );
        // A chain inside the node has one child; a second one is on another node.
        assert_eq!(
            info("Trees [0] 1/8/-1->0->-1 [1] 1/-1/-1->0->8"),
            Some(Event::TreeBranches)
        );
        // Any two of the three child slots.
        assert_eq!(info("Trees [0] -1/5/6->0->-1"), Some(Event::TreeBranches));
        assert_eq!(info("Trees [0] 5/-1/6->0->-1"), Some(Event::TreeBranches));
        // 2.4: the children come last.
        assert_eq!(info("Trees [0] -1->0->1/8/-1"), Some(Event::TreeBranches));
        assert_eq!(info("Trees [0] -1->0->1/-1/-1"), Some(Event::Topology));
        // CollNet/NVLS chains have no child list.
        assert_eq!(info("Trees [0] 3->4->5"), Some(Event::Topology));
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
        // 2.21+ proxy connections come before the channels connect (2.30: `tpRank`).
        for line in [
            "Connected to proxy localRank 0 -> connection 0x7d41d0004f40",
            "Connected to proxy tpRank 3 -> connection 0x7d41d0004f40",
        ] {
            assert_eq!(info(line), None, "{line}");
        }
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
        // A launcher's tail, whole or cut short, is not part of the name.
        for tail in [" [repeated 6x across cluster]", " [repeated 6x ac", " [rep"] {
            assert_eq!(
                info(&format!("Using network AWS Libfabric{tail}")),
                Some(Event::UsingNetwork("AWS Libfabric")),
                "{tail}"
            );
        }
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
        // 2.12–2.20 echo the library NCCL_NET_PLUGIN names without `NET/Plugin:`.
        assert_eq!(
            info("Plugin name set by env to libnccl-net-ofi.so"),
            Some(Event::PluginRequested("libnccl-net-ofi.so"))
        );
        // 2.10–2.26 (init.cc, then plugin/net.cc): NCCL_NET names a network nobody provides.
        assert_eq!(
            classify(Level::Warn, "Error: network AWS Libfabric not found."),
            Some(Event::NetNotFound("AWS Libfabric"))
        );
        assert_eq!(
            classify(Level::Warn, "Error: network IB not found. "),
            Some(Event::NetNotFound("IB"))
        );
        assert_eq!(
            classify(Level::Warn, "Error: network IB is odd."),
            Some(Event::Warn)
        );
        for (line, enabled) in [
            (
                "GPU Direct RDMA Disabled for GPU 1a000 / HCA 0 (distance 5 > 4)",
                false,
            ),
            (
                "GPU Direct RDMA Enabled for GPU 3 / HCA 2 (distance 3 <= 4), read 1 mode Default",
                true,
            ),
            ("GPU Direct RDMA Disabled for mlx5_0", false),
        ] {
            assert_eq!(info(line), Some(Event::GdrNic { enabled }), "{line}");
        }
        // Every release: no interface for NCCL's sockets; 2.26+ for its out-of-band net.
        for line in [
            "Bootstrap : no socket interface found",
            "NET/Socket : no interface found",
            "NET/Socket : No usable listening interface found",
            "no device found matching exactly eth9, verify NCCL_OOB_NET_IFNAME",
        ] {
            assert_eq!(
                classify(Level::Warn, line),
                Some(Event::NoInterface),
                "{line}"
            );
        }
        // 2.26+: multi-node NVLink there and unusable (IMEX).
        assert_eq!(
            classify(
                Level::Warn,
                "MNNVL (cliqueSize 72) is available but not working on this system. Check the IMEX channel configuration (/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this issue."
            ),
            Some(Event::MnnvlBroken {
                clique: 72,
                stopped: true
            })
        );
        assert_eq!(
            classify(
                Level::Warn,
                "MNNVL (cliqueSize 4) is available but not supported on this system. Check the IMEX configuration."
            ),
            Some(Event::MnnvlBroken {
                clique: 4,
                stopped: false
            })
        );
        // 2.30: ranks with different numbers of NICs; NCCL stops (WARN) unless told not to.
        assert_eq!(
            classify(
                Level::Warn,
                "Detected mixed local Net device counts across ranks (min 3, max 4). Set NCCL_IGNORE_NET_MISMATCH=1 to continue."
            ),
            Some(Event::NetDeviceMismatch {
                min: 3,
                max: 4,
                stopped: true
            })
        );
        assert_eq!(
            info(
                "Detected mixed local Net device counts across ranks (min 1, max 2). Ignoring due to NCCL_IGNORE_NET_MISMATCH."
            ),
            Some(Event::NetDeviceMismatch {
                min: 1,
                max: 2,
                stopped: false
            })
        );
        assert_eq!(
            info("Detected mixed local CollNet device counts across ranks (min 1, max 2)."),
            None
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
                nnodes: 2,
                local_ranks: Some(1),
                local_rank: Some(0),
                mnnvl: Some(0),
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
                comm_id: Some("0x4c64857d1447e24c"),
                all_in_one_process: false,
                split: false,
                after_bootstrap: None,
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
        // 2.29+: `[Rank %d] %s comm %p ... - Init START`, and the split's `childCount`.
        assert_eq!(
            info(
                "[Rank 3] ncclCommInitRankConfig comm 0x55d1 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 3c000 commId 0xa1b2c3d4 - Init START"
            ),
            Some(Event::InitStart(InitLine {
                comm: "0x55d1",
                rank: Some(3),
                nranks: Some(16),
                comm_id: Some("0xa1b2c3d4"),
                all_in_one_process: false,
                split: false,
                after_bootstrap: Some(false),
            }))
        );
        assert!(matches!(
            info(
                "[Rank 0] ncclCommInitAll comm 0x9 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1 - Init START"
            ),
            Some(Event::InitStart(InitLine {
                all_in_one_process: true,
                ..
            }))
        ));
        assert!(matches!(
            info(
                "ncclCommSplit comm 0x5 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 3c000 parent 0x4 childCount 2 color 1 key 3 - Init COMPLETE"
            ),
            Some(Event::InitComplete(InitLine {
                split: true,
                nranks: Some(8),
                ..
            }))
        ));
        assert_eq!(
            info("[Rank x] ncclCommInitRank comm 0x1 rank 0 nranks 2 - Init START"),
            None
        );
        assert_eq!(info("[0] comm 0x1 rank 0 nranks 2 - Init START"), None);
    }

    #[test]
    fn a_peer_of_another_version_names_its_version() {
        let warn = |msg| classify_record(Level::Warn, msg);
        assert_eq!(
            warn(
                "NCCL version mismatch with remote peer 10.0.0.2<45678> (local: 2.30.7, remote 2.28.9)"
            ),
            Some(Event::PeerVersion("2.28.9"))
        );
        assert_eq!(
            warn(
                "NCCL version mismatch with remote peer [fe80::1%eth0]<5000> (local: 23007, remote 22809)"
            ),
            Some(Event::PeerVersion("22809"))
        );
        assert_eq!(
            warn("NCCL version mismatch with remote peer 10.0.0.2<45678>"),
            Some(Event::Warn)
        );
    }

    #[test]
    fn an_unsupported_external_plugin_is_incompatible() {
        // 2.29+ net.cc, where the per-version symbol lines no longer print.
        assert_eq!(
            info("External network plugin libnccl-net.so is unsupported"),
            Some(Event::PluginIncompatible)
        );
        assert_eq!(
            info("External tuner plugin libnccl-tuner.so is unsupported"),
            None
        );
    }

    #[test]
    fn words_split_like_split_ascii_whitespace() {
        for text in [
            "",
            "   ",
            "comm 0x1 rank 0 nRanks 2",
            " \tcomm\x0c0x1\r\nrank  0 ",
            "ünïcode wörds\u{a0}nbsp stay",
            "trailing ",
        ] {
            let ours: Vec<&str> = Words { text, pos: 0 }.collect();
            let std: Vec<&str> = text.split_ascii_whitespace().collect();
            assert_eq!(ours, std, "{text:?}");
        }
    }

    #[test]
    fn socket_connects_that_gave_up() {
        // misc/socket.cc, include/socket.h: NSOC10a-c, NSOC35, NSOC36b, NSOC40, NSOC44a-b,
        // NSOC34a-d.
        let warn = |msg| classify_record(Level::Warn, msg);
        let failed = |peer, error| Some(Event::SocketConnectFailed { peer, error });
        for (msg, peer, error) in [
            (
                "Connect to 192.168.80.157<34630> failed : No route to host",
                Some("192.168.80.157<34630>"),
                Some("No route to host"),
            ),
            (
                "Net : Connect to 10.0.0.2<43215> failed : Connection refused",
                Some("10.0.0.2<43215>"),
                Some("Connection refused"),
            ),
            (
                "socketStartConnect: Connect to 10.0.0.2<43215> failed : Connection timed out",
                Some("10.0.0.2<43215>"),
                Some("Connection timed out"),
            ),
            (
                "bootstrapConnect: Connect to 10.0.0.2<43215> failed : Software caused connection abort",
                Some("10.0.0.2<43215>"),
                Some("Software caused connection abort"),
            ),
            (
                "socketPollConnect to 10.0.0.2<43215> failed with error Connection refused",
                Some("10.0.0.2<43215>"),
                Some("Connection refused"),
            ),
            (
                "socketPollConnect: Connect to 10.0.0.2<43215> returned 111(Connection refused) errno 111(Connection refused)",
                Some("10.0.0.2<43215>"),
                Some("111(Connection refused)"),
            ),
            (
                "socketPollConnect: connect to 10.0.0.2<43215> returned Connection timed out, exceeded error retry count after 35 attempts",
                Some("10.0.0.2<43215>"),
                Some("Connection timed out"),
            ),
            (
                "socketPollConnect: connect returned Connection refused, exceeded error retry count (35)",
                None,
                Some("Connection refused"),
            ),
            ("socketStartConnect: exceeded timeouts (35)", None, None),
        ] {
            assert_eq!(warn(msg), failed(peer, error), "{msg}");
        }
        // Others that mention a connection.
        assert_eq!(
            warn("NET/IB : Unable to connect to peer 3"),
            Some(Event::Warn)
        );
        assert_eq!(
            warn("Cuda failure: could not connect to the driver"),
            Some(Event::Warn)
        );
    }

    #[test]
    fn verbs_calls_that_failed() {
        // misc/ibvwrap.cc: NIB4a (every release), NIB4b (2.21+), NIB48 (2.26+), NIB5.
        let warn = |msg| classify_record(Level::Warn, msg);
        for (msg, call, detail) in [
            (
                "Call to ibv_reg_mr failed with error Bad address",
                "ibv_reg_mr",
                Some("Bad address"),
            ),
            (
                "Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory errno 12",
                "ibv_reg_mr_iova2",
                Some("Cannot allocate memory"),
            ),
            (
                "Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.0.2",
                "ibv_modify_qp",
                Some("110 Connection timed out"),
            ),
            ("Call to ibv_create_qp failed", "ibv_create_qp", None),
        ] {
            assert_eq!(
                warn(msg),
                Some(Event::VerbsCallFailed { call, detail }),
                "{msg}"
            );
        }
        assert_eq!(
            warn("Call to cuMemGetHandleForAddressRange failed with error 1"),
            Some(Event::Warn)
        );
        // The probes of optional calls print the same text as INFO.
        assert_eq!(
            info("Call to ibv_reg_dmabuf_mr failed with error Bad file descriptor errno 9"),
            None
        );
    }

    #[test]
    fn the_end_of_bootstrap() {
        // bootstrap.cc, NBOO20 (2.23+), NBOO16a (2.18), NBOO16b (2.21); init.cc's fillInfo,
        // NINI41 (2.21+), and nvls.cc's NTRA25a/b (2.18+), which run once bootstrap is done.
        for done in [
            "MNNVL busId 0xa2000 fabric UUID 0.0 cliqueId 0x0 state 3 healthMask 0x0",
            "NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)",
            "NVLS multicast support is not available on dev 2",
            "Bootstrap timings total 0.633247 (create 0.000033, send 0.000110, recv 0.632491, ring 0.000067, delay 0.000002)",
            "bootstrapSplit: rank 0 nranks 2 color 1 key 0 prev 1 next 1 - DONE",
            "bootstrapSplit: comm 0x55d0 parent 0x55c0 rank 0 nranks 2 color 1 key 0 prev 1 next 1 - DONE",
        ] {
            assert_eq!(info(done), Some(Event::Bootstrapped), "{done}");
        }
        assert_eq!(
            info("Bootstrap: Using eth0:10.0.0.1<0>"),
            Some(Event::BootstrapInterface("eth0:10.0.0.1<0>"))
        );
        assert_eq!(info("bootstrapSplit: rank 0 nranks 2 color 1"), None);
    }

    #[test]
    fn where_init_start_stands_against_bootstrap() {
        let after = |msg: &str| match info(msg) {
            Some(Event::InitStart(init)) => init.after_bootstrap,
            other => panic!("{msg}: {other:?}"),
        };
        // init.cc: NINI26a (2.18, no API name) and 2.21's split line with its commId come
        // once bootstrap is done; 2.23+ split lines drop the commId and 2.29+ lines begin
        // with `[Rank N]`, printed before bootstrap; `ncclCommInitRank.. commId` is 2.21–2.28.
        let cases = [
            (
                "comm 0x55cc rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 1c000 commId 0x65e0 - Init START",
                Some(true),
            ),
            (
                "ncclCommSplit comm 0x5 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 101d0 parent 0x4 color 1 key 0 commId 0x9 - Init START",
                Some(true),
            ),
            (
                "ncclCommSplit comm 0x5 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 101d0 parent 0x4 splitCount 1 color 1 key 0- Init START",
                Some(false),
            ),
            (
                "[Rank 3] ncclCommInitRankConfig comm 0x55d1 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 3c000 commId 0xa1b2 - Init START",
                Some(false),
            ),
            (
                "ncclCommInitRank comm 0xafd6 rank 10 nranks 16 cudaDev 2 nvmlDev 2 busId a2000 commId 0x898b - Init START",
                None,
            ),
        ];
        for (msg, expected) in cases {
            assert_eq!(after(msg), expected, "{msg}");
        }
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
        // 2.30 `INFO_LOC`: the function after the line (`%s:%d (%s) -> %d`, with the
        // `(%s)` of strerror or `[Async thread]` after the code as before).
        assert_eq!(
            info("init.cc:1917 (ncclCommInitRankDev) -> 2"),
            Some(Event::Breadcrumb { code: 2 })
        );
        assert_eq!(
            info("misc/socket.cc:488 (socketProgressOpt) -> 6 (Connection reset by peer)"),
            Some(Event::Breadcrumb { code: 6 })
        );
        assert_eq!(
            info("group.cc:98 (asyncJobLaunch) -> 5 [Async thread]"),
            Some(Event::Breadcrumb { code: 5 })
        );
        // Not a C identifier in the brackets, or not a source file: no breadcrumb.
        assert_eq!(info("init.cc:1917 (a b) -> 2"), None);
        assert_eq!(info("model (v2) -> 2"), None);
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
            Some(Event::BootstrapInterface("lo:127.0.0.1<0>"))
        );
    }

    #[test]
    fn nccl_net_as_2_29_echoes_it() {
        assert_eq!(
            info("Comm config netName reset to NCCL_NET=Socket"),
            Some(Event::Env {
                var: "NCCL_NET",
                value: "Socket"
            })
        );
    }
}
