//! Step 4a: decide, from the folded facts, what carried inter-node traffic, whether that was a
//! TCP fallback, and whether GPUDirect RDMA was used — exactly as DESIGN.md's Analysis contract
//! defines `inter_node_transport`, `socket_fallback` and `gdr`.
//!
//! Evidence ranking (grammar §8): per-connection `via NET/...` lines first; then, for a rank in
//! a communicator with `nNodes > 1` but no connection lines, `Assigned NET plugin` /
//! `Using network`. `Using network` alone never proves inter-node traffic. No evidence →
//! `unknown`, never a guess.

use super::analysis::{Evidence, Transport};
use super::facts::{Facts, PluginFailure, Process, Rank};

/// What the facts say about the job as a whole.
#[derive(Debug)]
pub struct Decision {
    /// Per rank index: what its inter-node connections used, with the line that shows it;
    /// `None` when the rank's log says nothing about it.
    pub per_rank: Vec<Option<(Transport, Evidence)>>,
    pub inter_node: Transport,
    /// Distinct inter-node transports seen on different ranks (more than one: mixed).
    pub seen: Vec<Transport>,
    pub socket_fallback: Option<bool>,
    /// Why an RDMA path was evidently attempted or present.
    pub rdma_signals: Vec<Signal>,
    pub gdr: Option<bool>,
    pub nodes: Option<u32>,
    pub hosts: Vec<String>,
    /// TCP chosen on purpose: a TCP-only plugin (FastSocket) or `NCCL_NET=Socket`.
    pub deliberate_tcp: bool,
}

/// Orders transports from worst to best for picking the job-wide value when ranks disagree:
/// one rank on TCP makes the job's inter-node path TCP.
fn badness(t: Transport) -> u8 {
    match t {
        Transport::Socket => 0,
        Transport::Tcpx => 1,
        Transport::Other => 2,
        Transport::Roce | Transport::Ib | Transport::Efa => 3,
        Transport::Unknown => 4,
        Transport::None => 5,
    }
}

pub fn decide(facts: &Facts, expect: Option<Transport>) -> Decision {
    let job_provider = job_provider(facts);
    let hosts = hosts(facts);
    let per_rank: Vec<_> = facts
        .ranks
        .iter()
        .map(|rank| {
            let process = &facts.processes[rank.process];
            rank_transport(rank, process, job_provider.as_deref(), hosts.len() > 1)
        })
        .collect();
    let nodes = node_count(facts, &hosts);

    let mut seen: Vec<Transport> = per_rank
        .iter()
        .flatten()
        .map(|(t, _)| *t)
        .filter(|t| !matches!(t, Transport::None | Transport::Unknown))
        .collect();
    seen.sort_by_key(|t| (badness(*t), *t));
    seen.dedup();

    let any = |t: Transport| per_rank.iter().flatten().any(|(x, _)| *x == t);
    let multi_node_signal = nodes.is_some_and(|n| n > 1);
    let inter_node = if let Some(worst) = seen.first() {
        *worst
    } else if any(Transport::Unknown) {
        Transport::Unknown
    } else if any(Transport::None) && !multi_node_signal {
        Transport::None
    } else {
        // Several nodes but no inter-node connection in the log, or no evidence at all.
        Transport::Unknown
    };

    let rdma_signals = rdma_signals(facts, &per_rank);
    let socket_fallback = socket_fallback(facts, inter_node, expect, &rdma_signals);
    let gdr = gdr(facts, &per_rank);
    let deliberate_tcp = deliberate_tcp(facts);
    Decision {
        per_rank,
        inter_node,
        seen,
        socket_fallback,
        rdma_signals,
        gdr,
        nodes,
        hosts,
        deliberate_tcp,
    }
}

/// One rank's inter-node transport and the line that shows it. `multi_host`: the log shows
/// several hosts, which before 2.20 (no `nNodes`) is how a multi-node communicator shows.
fn rank_transport(
    rank: &Rank,
    process: &Process,
    job_provider: Option<&str>,
    multi_host: bool,
) -> Option<(Transport, Evidence)> {
    let mut best: Option<(Transport, &Evidence)> = None;
    for conn in rank.conns.iter().filter(|c| c.is_network()) {
        let name = conn.network.as_deref().unwrap_or_default();
        let t = network_transport(name, process, job_provider);
        if best.is_none_or(|(b, _)| badness(t) < badness(b)) {
            best = Some((t, &conn.evidence));
        }
    }
    if let Some((t, evidence)) = best {
        return Some((t, evidence.clone()));
    }
    if let Some(conn) = rank.conns.iter().find(|c| c.label == "P2P/MNNVL") {
        // NVLink between hosts (NVL72-class): inter-node, but neither NET nor one of ours.
        return Some((Transport::Other, conn.evidence.clone()));
    }
    let nnodes = rank.max_nnodes.as_ref();
    let multi_node = match nnodes {
        Some(n) => n.value > 1,
        None => multi_host && rank.conns.is_empty(),
    };
    if multi_node {
        if let Some(net) = &rank.network {
            let t = network_transport(&net.value, process, job_provider);
            return Some((t, net.evidence.clone()));
        }
        return nnodes.map(|n| (Transport::Unknown, n.evidence.clone()));
    }
    if let Some(conn) = rank.conns.first() {
        return Some((Transport::None, conn.evidence.clone()));
    }
    nnodes.map(|n| (Transport::None, n.evidence.clone()))
}

/// Maps a network name (grammar §4.2) to a transport, using the process's provider and IB
/// link layers where the name alone is ambiguous.
pub fn network_transport(name: &str, process: &Process, job_provider: Option<&str>) -> Transport {
    let lower = name.to_ascii_lowercase();
    if lower == "socket" || lower == "fastsocket" {
        Transport::Socket
    } else if lower.contains("tcpx") || lower.contains("fastrak") {
        Transport::Tcpx
    } else if lower == "ib" || lower.starts_with("ibext") {
        let roce = |d: &super::event::IbDevice| d.link_layer.eq_ignore_ascii_case("roce");
        if !process.ib_devices.is_empty() && process.ib_devices.iter().all(roce) {
            Transport::Roce
        } else {
            Transport::Ib
        }
    } else if lower.contains("libfabric") || lower == "ofi" || lower == "aws ofi" {
        let provider = process
            .ofi_provider
            .as_ref()
            .map(|f| f.value.as_str())
            .or(job_provider);
        match provider {
            Some(p) => provider_transport(p),
            None if process.efa_runtime.is_some() => Transport::Efa,
            None => Transport::Unknown,
        }
    } else {
        Transport::Other
    }
}

/// A libfabric provider name → transport: `efa` is EFA; `tcp;ofi_rxm`, `tcp`, `sockets`, `udp`
/// are plain TCP/IP inside libfabric; anything else (`cxi`, `verbs;ofi_rxm`) is some other fabric.
pub fn provider_transport(provider: &str) -> Transport {
    let lower = provider.to_ascii_lowercase();
    if lower.starts_with("efa") {
        Transport::Efa
    } else if is_tcp_provider(&lower) {
        Transport::Socket
    } else {
        Transport::Other
    }
}

pub fn is_tcp_provider(provider: &str) -> bool {
    let lower = provider.to_ascii_lowercase();
    lower.starts_with("tcp") || lower.starts_with("sockets") || lower.starts_with("udp")
}

/// The one provider every process that logged one agrees on, or EFA when only EFA runtime
/// text (`fi_addr_efa`) names it. Used for processes whose provider line is not in the log.
pub fn job_provider(facts: &Facts) -> Option<String> {
    let mut providers = facts
        .processes
        .iter()
        .filter_map(|p| p.ofi_provider.as_ref().map(|f| f.value.as_str()));
    let first = providers.next();
    match first {
        Some(first) if providers.all(|p| p == first) => Some(first.to_string()),
        Some(_) => None,
        None => facts
            .processes
            .iter()
            .any(|p| p.efa_runtime.is_some())
            .then(|| "efa".to_string()),
    }
}

/// `nNodes` (2.20+) when logged; else the host names when there are several; one host only
/// when every rank of the communicator is in the log and none used the network.
fn node_count(facts: &Facts, hosts: &[String]) -> Option<u32> {
    let nnodes = facts
        .ranks
        .iter()
        .filter_map(|r| r.max_nnodes.as_ref().map(|f| f.value))
        .max();
    if nnodes.is_some() || hosts.len() >= 2 {
        return nnodes.or(Some(hosts.len() as u32));
    }
    let world = facts.ranks.iter().map(|r| r.world).max().unwrap_or(0) as usize;
    let networked = facts
        .ranks
        .iter()
        .any(|r| r.conns.iter().any(|c| c.is_network()));
    (hosts.len() == 1 && world > 0 && facts.ranks.len() >= world && !networked).then_some(1)
}

fn hosts(facts: &Facts) -> Vec<String> {
    let mut hosts: Vec<String> = facts
        .processes
        .iter()
        .filter(|p| !p.ranks.is_empty())
        .filter_map(|p| p.host.clone())
        .chain(facts.header_hosts.iter().cloned())
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// Why an RDMA path counts as attempted or present, where, and the line that shows it.
#[derive(Debug, Clone)]
pub struct Signal {
    pub why: String,
    /// The process (`host:pid`) it was seen on, if it is about one.
    pub on: Option<String>,
    pub evidence: Evidence,
}

/// Evidence that an RDMA path was attempted or present (DESIGN.md `socket_fallback`).
fn rdma_signals(facts: &Facts, per_rank: &[Option<(Transport, Evidence)>]) -> Vec<Signal> {
    let mut signals = Vec::new();
    let mut push = |why: String, on: Option<String>, evidence: &Evidence| {
        if signals.len() < 64 {
            signals.push(Signal {
                why,
                on,
                evidence: evidence.clone(),
            });
        }
    };
    for p in &facts.processes {
        let on = || Some(p.label());
        for (failure, evidence) in &p.plugin_failures {
            if *failure != PluginFailure::NoneUsable {
                push(failure_text(*failure).to_string(), on(), evidence);
            }
        }
        if let Some(evidence) = &p.ib_devices_evidence {
            push("IB/RoCE devices are listed".into(), on(), evidence);
            if let Some(failed) = &p.ib_init_failed {
                push("NCCL's IB transport failed".into(), on(), failed);
            }
        }
        if let Some(provider) = &p.ofi_provider {
            let used_tcp = p
                .ranks
                .iter()
                .any(|&r| rank_is(per_rank, r, Transport::Socket));
            if is_tcp_provider(&provider.value) {
                let why = format!(
                    "the OFI plugin runs on libfabric's TCP provider `{}`",
                    provider.value
                );
                push(why, on(), &provider.evidence);
            } else if used_tcp {
                let why = format!(
                    "provider `{}` was selected, yet TCP was used",
                    provider.value
                );
                push(why, on(), &provider.evidence);
            }
        }
        if let Some(disabled) = p.env("NCCL_IB_DISABLE").filter(|f| f.value == "1") {
            let ipoib = p
                .socket_interfaces
                .iter()
                .flat_map(|f| f.value.iter())
                .chain(p.bootstrap_interface.iter().map(|f| &f.value))
                .any(|name| name.starts_with("ib"));
            if ipoib || !p.ib_devices.is_empty() {
                let why = "NCCL_IB_DISABLE=1 although the host has IB interfaces".to_string();
                push(why, on(), &disabled.evidence);
            }
        }
    }
    // Ranks that used RDMA while others used TCP: RDMA was there.
    let socket = per_rank
        .iter()
        .flatten()
        .any(|(t, _)| *t == Transport::Socket);
    let rdma = per_rank
        .iter()
        .flatten()
        .find(|(t, _)| matches!(t, Transport::Efa | Transport::Ib | Transport::Roce));
    if let (true, Some((t, evidence))) = (socket, rdma) {
        push(format!("other ranks used {}", t.as_str()), None, evidence);
    }
    signals
}

/// `why on a, b; other why`: the signals grouped by reason, for a message.
pub fn describe(signals: &[Signal]) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for s in signals {
        let on = s.on.as_deref();
        match groups.iter_mut().find(|(why, _)| *why == s.why) {
            Some((_, places)) => places.extend(on),
            None => groups.push((&s.why, on.into_iter().collect())),
        }
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(why, mut places)| {
            places.dedup();
            match places.len() {
                0 => why.to_string(),
                n if n <= 3 => format!("{why} on {}", places.join(", ")),
                n => format!("{why} on {} and {} more", places[..3].join(", "), n - 3),
            }
        })
        .collect();
    parts.join("; ")
}

fn rank_is(per_rank: &[Option<(Transport, Evidence)>], rank: usize, t: Transport) -> bool {
    matches!(per_rank.get(rank), Some(Some((x, _))) if *x == t)
}

pub fn failure_text(failure: PluginFailure) -> &'static str {
    match failure {
        PluginFailure::RequestedNotFound => "the requested net plugin was not found",
        PluginFailure::Incompatible => "the net plugin has no compatible API version",
        PluginFailure::OfiProviderMissing => "aws-ofi-nccl found no usable libfabric provider",
        PluginFailure::OfiInitFailed => "aws-ofi-nccl failed to initialise",
        PluginFailure::InitFailed => "a net plugin failed to initialise",
        PluginFailure::NoneUsable => "no net plugin could be initialised",
    }
}

fn socket_fallback(
    facts: &Facts,
    inter_node: Transport,
    expect: Option<Transport>,
    rdma_signals: &[Signal],
) -> Option<bool> {
    match inter_node {
        Transport::None => return Some(false),
        Transport::Unknown => return None,
        Transport::Socket => {}
        _ => return Some(false),
    }
    if matches!(
        expect,
        Some(Transport::Efa | Transport::Ib | Transport::Roce)
    ) {
        return Some(true);
    }
    if expect == Some(Transport::Socket) || deliberate_tcp(facts) {
        return Some(false);
    }
    if !rdma_signals.is_empty() {
        return Some(true);
    }
    // TCP was the only option, if we can see what NCCL tried; else the log can't tell.
    let tried_known = facts.processes.iter().any(|p| p.net_init_seen);
    tried_known.then_some(false)
}

/// A TCP-only plugin (FastSocket) or `NCCL_NET=Socket`: TCP was chosen on purpose.
fn deliberate_tcp(facts: &Facts) -> bool {
    facts.processes.iter().any(|p| {
        p.env("NCCL_NET")
            .is_some_and(|f| f.value.eq_ignore_ascii_case("socket"))
            || p.loaded_plugin
                .as_ref()
                .is_some_and(|f| f.value.eq_ignore_ascii_case("fastsocket"))
    }) || facts.ranks.iter().any(|r| {
        r.network
            .as_ref()
            .is_some_and(|f| f.value.eq_ignore_ascii_case("fastsocket"))
    })
}

/// GPUDirect RDMA on inter-node connections: true if any RDMA connection had `/GDRDMA`, false
/// if inter-node connections ran without it, null without inter-node connections.
fn gdr(facts: &Facts, per_rank: &[Option<(Transport, Evidence)>]) -> Option<bool> {
    let mut any_net = false;
    let mut any_gdr = false;
    for rank in &facts.ranks {
        for conn in rank.conns.iter().filter(|c| c.is_network()) {
            any_net = true;
            any_gdr |= conn.gdr;
        }
    }
    if any_net {
        return Some(any_gdr);
    }
    // No connection lines: `Connected all rings ... GDR x` of multi-node communicators.
    let multi_node_gdr = facts
        .ranks
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(per_rank[*i], Some((t, _)) if t != Transport::None))
        .filter_map(|(_, r)| r.ring_gdr);
    multi_node_gdr.reduce(|a, b| a || b)
}
