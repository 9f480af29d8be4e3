//! Step 4a: decide, from the folded facts, what carried inter-node traffic, whether that was a
//! TCP fallback, and whether GPUDirect RDMA was used — exactly as DESIGN.md's Analysis contract
//! defines `inter_node_transport`, `socket_fallback` and `gdr`.
//!
//! As an NCCL expert reads an excerpt: first the node count, from every kind of evidence
//! (`NODE_RULES`, one small function each: `nNodes`, NET connection lines, host names, rank
//! numbers, tree peers, nccl-tests' table, one-rank communicators, one process, ...); then per rank the
//! network — its `via NET/<name>` lines, else the module NCCL selected (`Using network`, a
//! plugin naming itself, aws-ofi-nccl's provider, the init sequence of versions without
//! `Using network`). With the node count unknown only an explicitly RDMA (or TCPX) module
//! decides: `Using network Socket` is printed by single-node runs too. Each decision keeps
//! its `Basis`, so the output says why. A wrong `none` or RDMA verdict passes a broken
//! cluster, so neither is a default: no evidence → `unknown`.

use super::analysis::{Evidence, Transport};
use super::facts::{Fact, Facts, MAX_PEERS, PluginFailure, Process, Rank};

/// A kind of evidence that decided the node count or the transport (DESIGN.md `basis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Basis {
    /// `nNodes K` on a communicator line (2.20+).
    Nnodes,
    /// Per-connection `via NET/...` (or `P2P/MNNVL`) lines.
    ChannelLines,
    /// Two or more host names in NCCL's prefix.
    DistinctHosts,
    /// A global rank at or above the number of GPUs its host shows.
    RankNumbering,
    /// nccl-tests' `# Rank N Pid P on HOST device D` table.
    NcclTestsDeviceList,
    /// A launcher's rank tag (`[1,12]`, `[rank12]`) past the GPUs its host shows.
    LauncherTags,
    /// A tree listing that gives a rank two children: one is on another node.
    TreePeers,
    /// Every rank of the communicator is in the log, all on one host.
    AllRanksOneHost,
    /// The largest communicator has one rank.
    OneRankComm,
    /// Every rank in one process (`ncclCommInitAll`, nccl-tests `-g N`).
    OneProcess,
    /// NCCL bootstraps on loopback only: no other host can reach it.
    Loopback,
    /// Errors only a network connection produces (`NET/IB : Got completion from peer`).
    NetErrors,
    /// `MNNVL 1` on the communicator line.
    Mnnvl,
    /// `Using network X` / `Assigned NET plugin X to comm`.
    NetworkModule,
    /// The version's init sequence without `Using network` (`NET/IB : Using [0]mlx5_0:1/IB`,
    /// `No device found` then `NET/Socket : Using`).
    InitSequence,
    /// aws-ofi-nccl's `Selected provider is X` or `Setting provider_filter to X`.
    OfiProvider,
    /// The IB ports' link layer (`/IB`, `/RoCE`).
    LinkLayer,
    /// A plugin naming itself in its lines (`NET/FastSocket : ...`).
    PluginSymbols,
    /// GPUDirect RDMA over aws-ofi-nccl, which only its EFA provider offers.
    Gdr,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Nnodes => "nnodes",
            Basis::ChannelLines => "channel-lines",
            Basis::DistinctHosts => "distinct-hosts",
            Basis::RankNumbering => "rank-numbering",
            Basis::NcclTestsDeviceList => "nccl-tests-device-list",
            Basis::LauncherTags => "launcher-tags",
            Basis::TreePeers => "tree-peers",
            Basis::AllRanksOneHost => "all-ranks-one-host",
            Basis::OneRankComm => "one-rank-comm",
            Basis::OneProcess => "one-process",
            Basis::Loopback => "loopback",
            Basis::NetErrors => "net-errors",
            Basis::Mnnvl => "mnnvl",
            Basis::NetworkModule => "network-module",
            Basis::InitSequence => "init-sequence",
            Basis::OfiProvider => "ofi-provider",
            Basis::LinkLayer => "link-layer",
            Basis::PluginSymbols => "plugin-symbols",
            Basis::Gdr => "gdr",
        }
    }
}

/// What the log shows about the number of nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeCount {
    Several,
    One,
    Unknown,
}

/// The node count, the evidence kind that showed it, a few words for the "why" line and
/// the line that shows it.
#[derive(Debug, Clone)]
pub struct Nodes {
    pub count: NodeCount,
    pub basis: Option<Basis>,
    pub why: String,
    pub evidence: Option<Evidence>,
}

/// One rank's inter-node transport: the value, the line that shows it, and why.
#[derive(Debug, Clone)]
pub struct RankDecision {
    pub transport: Transport,
    pub evidence: Evidence,
    pub basis: Vec<Basis>,
    /// What a reader should check, e.g. `network IB; link layer RoCE`.
    pub why: String,
    /// The network module it was decided from, if any.
    pub network: Option<String>,
}

impl RankDecision {
    /// A rank whose printed links all stayed inside its node: no inter-node traffic.
    fn inside_node(rank: &Rank) -> RankDecision {
        RankDecision {
            transport: Transport::None,
            evidence: rank.conns[0].evidence.clone(),
            basis: vec![],
            why: String::new(),
            network: None,
        }
    }
}

/// What the facts say about the job as a whole.
#[derive(Debug)]
pub struct Decision {
    /// Per rank index: what its inter-node connections used, with the line that shows it;
    /// `None` when the rank's log says nothing about it.
    pub per_rank: Vec<Option<(Transport, Evidence)>>,
    pub inter_node: Transport,
    /// Distinct inter-node transports seen on different ranks (more than one: mixed).
    /// NVLink beside a network (NVL72 with EFA between domains) is not mixed.
    pub seen: Vec<Transport>,
    pub socket_fallback: Option<bool>,
    /// Why an RDMA path was evidently attempted or present.
    pub rdma_signals: Vec<Signal>,
    pub gdr: Option<bool>,
    pub nodes: Option<u32>,
    pub node_count: Nodes,
    pub hosts: Vec<String>,
    /// TCP chosen on purpose: a TCP-only plugin (FastSocket) or `NCCL_NET=Socket`.
    pub deliberate_tcp: bool,
    /// The evidence kinds that decided `inter_node` and `socket_fallback`.
    pub basis: Vec<Basis>,
    /// One line for people: `2 hosts; network AWS Libfabric; provider efa`.
    pub why: String,
    /// Ranks whose links between hosts went over multi-node NVLink.
    pub nvlink_ranks: usize,
    /// RDMA carried traffic (NCCL's IB module) although the transport stays unknown.
    pub rdma_carried: bool,
    /// The log shows one machine without proving one node (see `OneHost`).
    pub one_host: Option<OneHost>,
}

/// Orders transports from worst to best for picking the job-wide value when ranks disagree:
/// one rank on TCP makes the job's inter-node path TCP.
fn badness(t: Transport) -> u8 {
    match t {
        Transport::Socket => 0,
        Transport::Tcpx => 1,
        Transport::Other => 2,
        Transport::Roce | Transport::Ib | Transport::Efa => 3,
        Transport::Nvlink => 4,
        Transport::Unknown => 5,
        Transport::None => 6,
    }
}

fn is_rdma(t: Transport) -> bool {
    matches!(t, Transport::Efa | Transport::Ib | Transport::Roce)
}

pub fn decide(facts: &Facts, expect: Option<Transport>) -> Decision {
    let job = JobContext::new(facts);
    let hosts = hosts(facts);
    let node_count = node_count(facts, &hosts);
    let decided: Vec<Option<RankDecision>> = super::halves::map(&facts.ranks, |rank| {
        rank_transport(rank, &facts.processes[rank.process], &job, &node_count)
    });
    let per_rank: Vec<Option<(Transport, Evidence)>> = decided
        .iter()
        .map(|d| d.as_ref().map(|d| (d.transport, d.evidence.clone())))
        .collect();

    let mut seen: Vec<Transport> = decided
        .iter()
        .flatten()
        .map(|d| d.transport)
        .filter(|t| !matches!(t, Transport::None | Transport::Unknown))
        .collect();
    seen.sort_by_key(|t| (badness(*t), *t));
    seen.dedup();
    let nvlink_ranks = decided
        .iter()
        .flatten()
        .filter(|d| d.transport == Transport::Nvlink)
        .count();
    // Multi-node NVLink beside a network: the network is what links the NVLink domains.
    if seen.len() > 1 {
        seen.retain(|t| *t != Transport::Nvlink);
    }

    let any = |t: Transport| decided.iter().flatten().any(|d| d.transport == t);
    let inter_node = if let Some(worst) = seen.first() {
        *worst
    } else if any(Transport::Unknown) {
        Transport::Unknown
    } else if node_count.count == NodeCount::One
        || any(Transport::None) && node_count.count != NodeCount::Several
    {
        Transport::None
    } else {
        Transport::Unknown
    };

    let rdma_signals = rdma_signals(facts, &per_rank);
    let rdma_carried = rdma_carried(facts, &decided);
    let socket_module = decided.iter().flatten().any(|d| {
        d.network.as_deref().is_some_and(|n| {
            n.eq_ignore_ascii_case("socket") || n.eq_ignore_ascii_case("fastsocket")
        })
    });
    let one_host = one_host_shown(facts, &hosts, node_count.count);
    let mut socket_fallback = socket_fallback(
        facts,
        inter_node,
        expect,
        &rdma_signals,
        rdma_carried,
        clique_only(facts, &decided),
        socket_module,
    );
    // One host, shown: TCP between NCCL's "nodes" stayed on it (NCCL_HOSTID, P2P and SHM
    // disabled), or nothing shows a second node. A plugin that failed there is the
    // `net-plugin-failed` warning, not a fallback of traffic between machines; `--expect`
    // still fails on its own finding.
    // Nodes simulated on one machine by the launcher are nodes as NCCL counted them.
    if socket_fallback == Some(true) && expect.is_none() && !facts.simulated_nodes {
        match one_host {
            Some(OneHost::LinksStayed) => socket_fallback = Some(false),
            Some(OneHost::NothingElseShown) => socket_fallback = None,
            None => {}
        }
    }
    let gdr = gdr(facts, &per_rank);
    let deliberate_tcp = deliberate_tcp(facts);

    // Basis and "why": the node evidence, then what the deciding ranks showed.
    let mut basis: Vec<Basis> = node_count.basis.into_iter().collect();
    let mut why_parts: Vec<String> = Vec::new();
    if !node_count.why.is_empty() {
        why_parts.push(node_count.why.clone());
    }
    let deciding = decided
        .iter()
        .flatten()
        .filter(|d| d.transport == inter_node || inter_node == Transport::Unknown);
    for d in deciding {
        for b in &d.basis {
            if !basis.contains(b) {
                basis.push(*b);
            }
        }
        // One rank's reasons speak for the rest; more would repeat them.
        if !d.why.is_empty() && why_parts.len() < 1 + usize::from(!node_count.why.is_empty()) {
            why_parts.push(d.why.clone());
        }
    }
    if inter_node == Transport::Unknown && why_parts.is_empty() {
        why_parts.push("no NCCL line shows the node count or the network".into());
    }
    let nodes = match node_count.count {
        NodeCount::One => Some(1),
        // `nNodes 1` of an NVLink clique (MNNVL) beside several hosts: the hosts count.
        NodeCount::Several => job
            .max_nnodes
            .filter(|&n| n > 1)
            .or((hosts.len() >= 2).then_some(hosts.len() as u32)),
        // `nNodes 1` that did not prove one node (a split, an NVLink clique) is no count.
        NodeCount::Unknown => None,
    };
    Decision {
        per_rank,
        inter_node,
        seen,
        socket_fallback,
        rdma_signals,
        gdr,
        nodes,
        node_count,
        hosts,
        deliberate_tcp,
        basis,
        why: why_parts.join("; "),
        nvlink_ranks,
        rdma_carried,
        one_host,
    }
}

/// Job-wide facts a rank's decision may borrow when its own lines lack them.
struct JobContext {
    provider: Option<String>,
    /// Link layers of every IB port listed anywhere (one rank's log often has the list).
    link_layers: Vec<String>,
    max_nnodes: Option<u32>,
    /// Some rank printed a `via NET/...` link: the excerpt has connection lines.
    net_links_shown: bool,
}

impl JobContext {
    fn new(facts: &Facts) -> Self {
        let mut link_layers: Vec<String> = facts
            .processes
            .iter()
            .flat_map(|p| {
                p.ib_devices
                    .iter()
                    .map(|d| d.link_layer.to_ascii_lowercase())
            })
            .collect();
        link_layers.sort();
        link_layers.dedup();
        JobContext {
            provider: job_provider(facts),
            link_layers,
            net_links_shown: facts
                .ranks
                .iter()
                .any(|r| r.conns.iter().any(|c| c.is_network())),
            max_nnodes: facts
                .ranks
                .iter()
                .filter_map(|r| r.max_nnodes.as_ref().map(|f| f.value))
                .max(),
        }
    }
}

/// What a node-count rule sees: the facts, the host names and the communicator size.
struct NodeView<'a> {
    facts: &'a Facts,
    hosts: &'a [String],
    /// The largest `nNodes` line.
    nnodes: Option<&'a Fact<u32>>,
    /// The most ranks any communicator line or ring listing showed.
    world: u32,
}

type NodeRule = fn(&NodeView) -> Option<Nodes>;

/// The node-count rules, strongest evidence first: several nodes, then one node. The first
/// that applies decides; none: the node count is unknown, never one by default.
const NODE_RULES: &[NodeRule] = &[
    several_by_nnodes,
    several_by_channel_lines,
    several_by_hosts,
    several_by_addresses,
    several_by_net_errors,
    several_by_rank_numbers,
    several_by_tree_peers,
    one_by_nnodes,
    one_by_loopback,
    one_by_one_rank_comm,
    one_by_comm_init_all,
    one_by_one_process,
    one_by_nccl_tests_table,
    one_by_all_ranks_on_one_host,
];

/// What the log shows about the node count (DESIGN.md: the evidence kinds of `basis`).
pub fn node_count(facts: &Facts, hosts: &[String]) -> Nodes {
    let view = NodeView {
        facts,
        hosts,
        nnodes: facts
            .ranks
            .iter()
            .filter_map(|r| r.max_nnodes.as_ref())
            .max_by_key(|f| f.value),
        world: facts
            .ranks
            .iter()
            .map(|r| r.world.max(r.ring_ranks))
            .max()
            .unwrap_or(0),
    };
    NODE_RULES
        .iter()
        .find_map(|rule| rule(&view))
        .unwrap_or(Nodes {
            count: NodeCount::Unknown,
            basis: None,
            why: String::new(),
            evidence: None,
        })
}

fn found(
    count: NodeCount,
    basis: Basis,
    why: String,
    evidence: Option<&Evidence>,
) -> Option<Nodes> {
    Some(Nodes {
        count,
        basis: Some(basis),
        why,
        evidence: evidence.cloned(),
    })
}

/// `nNodes K` with K > 1 (2.20.3+).
fn several_by_nnodes(v: &NodeView) -> Option<Nodes> {
    let n = v.nnodes.filter(|n| n.value > 1)?;
    let why = format!("nNodes {}", n.value);
    found(NodeCount::Several, Basis::Nnodes, why, Some(&n.evidence))
}

/// A `via NET/...` connection line, or `P2P/MNNVL` where the environment did not force
/// MNNVL (see `mnnvl_transport`: unforced, NCCL forms a clique only across hosts).
fn several_by_channel_lines(v: &NodeView) -> Option<Nodes> {
    let conn = v.facts.ranks.iter().find_map(|r| {
        let forced = mnnvl_forced(&v.facts.processes[r.process]);
        r.conns
            .iter()
            .find(|c| c.is_network() || (c.label == "P2P/MNNVL" && !forced))
    })?;
    let why = format!("{} connections between ranks", conn.label);
    found(
        NodeCount::Several,
        Basis::ChannelLines,
        why,
        Some(&conn.evidence),
    )
}

/// Two or more host names (NCCL's prefix, or nccl-tests' rank table).
fn several_by_hosts(v: &NodeView) -> Option<Nodes> {
    if v.hosts.len() < 2 {
        return None;
    }
    let basis = if v.facts.header_hosts.len() >= 2 {
        Basis::NcclTestsDeviceList
    } else {
        Basis::DistinctHosts
    };
    found(
        NodeCount::Several,
        basis,
        format!("{} hosts", v.hosts.len()),
        None,
    )
}

/// Processes that share a host name but bootstrap on different addresses of the same
/// interface (`Bootstrap : Using eth0:10.0.0.1<0>` and `eth0:10.0.0.2<0>`): one host has one
/// address per interface, so these are several hosts behind a placeholder or a copied name
/// (`localhost`, `node`, a redacted `xxx`). Loopback says nothing.
fn several_by_addresses(v: &NodeView) -> Option<Nodes> {
    let why = addresses_differ(v.facts)?;
    found(NodeCount::Several, Basis::DistinctHosts, why, None)
}

/// Two processes of one host name on different addresses of one interface, in words.
fn addresses_differ(facts: &Facts) -> Option<String> {
    let mut first: std::collections::HashMap<(Option<&str>, &str), &str> = Default::default();
    for p in &facts.processes {
        let Some((name, address)) = &p.address else {
            continue;
        };
        if name == "lo" || address.starts_with("127.") || address == "::1" {
            continue;
        }
        let known = *first
            .entry((p.host.as_deref(), name.as_str()))
            .or_insert(address.as_str());
        if known != address {
            return Some(format!(
                "{name} addresses {known} and {address} behind one host name"
            ));
        }
    }
    None
}

/// Lines only a network connection produces: IB completion errors, NET/Socket progress
/// errors, a plugin's own connection reports.
fn several_by_net_errors(v: &NodeView) -> Option<Nodes> {
    let (why, evidence) = v.facts.processes.iter().find_map(|p| {
        let named = || {
            let name = p.self_named.as_ref().map_or("plugin", |f| f.value.as_str());
            format!("NET/{name} connections")
        };
        p.ib_traffic
            .as_ref()
            .map(|e| ("NET/IB completion errors from a peer".to_string(), e))
            .or_else(|| {
                p.socket_traffic
                    .as_ref()
                    .map(|e| ("NET/Socket transfer errors".to_string(), e))
            })
            .or_else(|| p.self_named_connected.as_ref().map(|e| (named(), e)))
    })?;
    found(NodeCount::Several, Basis::NetErrors, why, Some(evidence))
}

/// A global rank, or a launcher's rank tag, past the GPUs its host shows.
fn several_by_rank_numbers(v: &NodeView) -> Option<Nodes> {
    let (rank, dev, gpus, tag) = rank_past_host(v.facts)?;
    let (basis, what) = if tag {
        (Basis::LauncherTags, "launcher rank")
    } else {
        (Basis::RankNumbering, "rank")
    };
    let why = format!("{what} {rank} on local device {dev} of a host showing {gpus} GPUs");
    found(NodeCount::Several, basis, why, None)
}

/// A tree listing that gives a rank two or more children (`Trees [0] 1/8/-1->0->-1`): inside
/// a node NCCL's tree is a chain, so the second child is on another node.
fn several_by_tree_peers(v: &NodeView) -> Option<Nodes> {
    let (r, evidence) = v
        .facts
        .ranks
        .iter()
        .find_map(|r| r.tree_branches.as_ref().map(|e| (r, e)))?;
    let who = r
        .rank
        .map_or_else(|| "a rank".to_string(), |n| format!("rank {n}"));
    let why = format!("{who}'s tree has a child on another node");
    found(NodeCount::Several, Basis::TreePeers, why, Some(evidence))
}

/// `nNodes 1` on every multi-rank communicator, one of them not a split: a sub-communicator
/// (a tensor-parallel group) on one node says nothing about the job.
fn one_by_nnodes(v: &NodeView) -> Option<Nodes> {
    let n = v.nnodes.filter(|n| n.value == 1)?;
    if !v.facts.ranks.iter().any(|r| r.whole_comm_one_node) {
        return None;
    }
    found(
        NodeCount::One,
        Basis::Nnodes,
        "nNodes 1".into(),
        Some(&n.evidence),
    )
}

/// Every process that names its bootstrap interface bootstraps on loopback (`Bootstrap :
/// Using lo:127.0.0.1<0>`, bootstrap.cc 2.4.8+; a process without that line: the first
/// interface of its `NET/Socket : Using` list, since both come from `ncclFindInterfaces`
/// with the same NCCL_SOCKET_IFNAME and the bootstrap takes the first): each rank listens on
/// that address for its ring neighbours (bootstrapInit), and 127.0.0.1 cannot be reached from
/// another host, so the job can only have run on this one. NCCL picks `lo` only when it finds
/// no other interface or is told to (`NCCL_SOCKET_IFNAME`).
fn one_by_loopback(v: &NodeView) -> Option<Nodes> {
    let mut shown = None;
    for p in &v.facts.processes {
        let (name, evidence) = match (&p.bootstrap_interface, &p.socket_interfaces) {
            (Some(b), _) => (b.value.as_str(), &b.evidence),
            (None, Some(s)) => (s.value.first().map_or("", String::as_str), &s.evidence),
            (None, None) => continue,
        };
        if name != "lo" {
            return None;
        }
        shown.get_or_insert(evidence);
    }
    let why = "bootstrap on loopback only (lo:127.0.0.1): no other host can reach it".to_string();
    found(NodeCount::One, Basis::Loopback, why, Some(shown?))
}

/// The largest communicator has one rank.
fn one_by_one_rank_comm(v: &NodeView) -> Option<Nodes> {
    let multi_rank = v.facts.ranks.iter().any(|r| r.multi_rank_comm);
    (v.world == 1 && !multi_rank).then(|| Nodes {
        count: NodeCount::One,
        basis: Some(Basis::OneRankComm),
        why: "a communicator of one rank".into(),
        evidence: None,
    })
}

/// `ncclCommInitAll` (2.23+ names the API): one process made every rank.
fn one_by_comm_init_all(v: &NodeView) -> Option<Nodes> {
    let evidence = v
        .facts
        .ranks
        .iter()
        .find_map(|r| r.all_in_one_process.as_ref())?;
    let why = "every rank in one process (ncclCommInitAll)".to_string();
    found(NodeCount::One, Basis::OneProcess, why, Some(evidence))
}

/// One process holds every rank of the communicator (its devices, or the ranks its
/// `P2P/direct pointer` links join).
fn one_by_one_process(v: &NodeView) -> Option<Nodes> {
    if v.world <= 1 {
        return None;
    }
    let p = v
        .facts
        .processes
        .iter()
        .find(|p| process_ranks(v.facts, p) >= v.world as usize)?;
    let why = format!("all {} ranks in process {}", v.world, p.label());
    found(NodeCount::One, Basis::OneProcess, why, None)
}

/// nccl-tests' whole rank table on one host.
fn one_by_nccl_tests_table(v: &NodeView) -> Option<Nodes> {
    let f = v.facts;
    let complete = f.header_hosts.len() == 1
        && f.header_max_rank.is_some_and(|max| {
            max.checked_add(1) == Some(f.header_ranks) && f.header_ranks >= v.world
        });
    if !complete {
        return None;
    }
    let why = format!(
        "nccl-tests lists all {} ranks on {}",
        f.header_ranks, f.header_hosts[0]
    );
    found(
        NodeCount::One,
        Basis::NcclTestsDeviceList,
        why,
        f.header_evidence.as_ref(),
    )
}

/// Every rank of the communicator on the one host the log shows; or more than half of them
/// on a host with a GPU numbered for each: jobs put as many ranks on every node, so the rest
/// cannot be on another.
fn one_by_all_ranks_on_one_host(v: &NodeView) -> Option<Nodes> {
    let (world, host) = (v.world, v.hosts.first()?);
    if v.hosts.len() != 1 || world == 0 {
        return None;
    }
    let on_host: Vec<&Rank> = v
        .facts
        .ranks
        .iter()
        .filter(|r| r.dev.is_some())
        .filter(|r| v.facts.processes[r.process].host.as_deref() == Some(host.as_str()))
        .collect();
    let max_dev = on_host.iter().filter_map(|r| r.dev).max().unwrap_or(0);
    let shown = on_host.len();
    if shown >= world as usize {
        let why = format!("all {world} ranks on {host}");
        return found(NodeCount::One, Basis::AllRanksOneHost, why, None);
    }
    if 2 * shown > world as usize && max_dev.saturating_add(1) >= world {
        let why =
            format!("{shown} of {world} ranks on {host}, which shows GPUs up to device {max_dev}");
        return found(NodeCount::One, Basis::AllRanksOneHost, why, None);
    }
    None
}

/// The ranks a process is seen to hold: its devices, or the ranks its `P2P/direct pointer`
/// links join, whichever is more.
fn process_ranks(facts: &Facts, p: &Process) -> usize {
    let mut linked: Vec<u32> = p
        .ranks
        .iter()
        .flat_map(|&r| facts.ranks[r].same_process_ranks.iter().copied())
        .collect();
    linked.sort_unstable();
    linked.dedup();
    p.ranks.len().max(linked.len())
}

/// A global rank at or above the number of GPUs its host shows (rank 155 on local device 3):
/// it cannot be on that host's first node. Only where device numbers are real (some rank of
/// the host on a device above 0; one GPU per process bound as device 0 says nothing).
/// The launcher's rank tag counts the same way (`launcher` in the result).
/// Returns (rank, device, GPUs shown, launcher).
fn rank_past_host(facts: &Facts) -> Option<(u32, u32, u32, bool)> {
    let mut by_host: std::collections::HashMap<&str, (u32, u32)> = Default::default();
    for r in &facts.ranks {
        let (Some(host), Some(dev)) = (facts.processes[r.process].host.as_deref(), r.dev) else {
            continue;
        };
        let entry = by_host.entry(host).or_insert((0, 0));
        entry.0 = entry.0.max(dev);
        entry.1 += 1;
    }
    facts.ranks.iter().find_map(|r| {
        let host = facts.processes[r.process].host.as_deref()?;
        let (max_dev, count) = *by_host.get(host)?;
        let shown = max_dev.saturating_add(1).max(count);
        let dev = r.dev?;
        if max_dev == 0 {
            return None;
        }
        if let Some(rank) = r.rank.filter(|&rank| rank >= shown && r.world > rank) {
            return Some((rank, dev, shown, false));
        }
        let tag = r.launcher_rank.filter(|&t| t >= shown)?;
        Some((tag, dev, shown, true))
    })
}

/// One rank's inter-node transport and why.
fn rank_transport(
    rank: &Rank,
    process: &Process,
    job: &JobContext,
    nodes: &Nodes,
) -> Option<RankDecision> {
    let mut best: Option<(Transport, &super::facts::ConnSeen)> = None;
    // CollNet runs beside the point-to-point network, on the same fabric, and its name is the
    // CollNet plugin's (`COLLNET/SHARP`): the NET connections, where shown, say more.
    let p2p_shown = rank.conns.iter().any(|c| c.is_network() && !c.is_collnet());
    for conn in rank
        .conns
        .iter()
        .filter(|c| c.is_network() && !(p2p_shown && c.is_collnet()))
    {
        let name = conn.network.as_deref().unwrap_or_default();
        let (t, _) = network_transport_why(name, process, job, conn.gdr);
        if best.is_none_or(|(b, _)| badness(t) < badness(b)) {
            best = Some((t, conn));
        }
    }
    if let Some((_, conn)) = best {
        let name = conn.network.as_deref().unwrap_or_default();
        let (t, mut basis) = network_transport_why(name, process, job, conn.gdr);
        basis.insert(0, Basis::ChannelLines);
        let why = describe_network(name, t, process, job, &basis);
        return Some(RankDecision {
            transport: t,
            evidence: conn.evidence.clone(),
            basis,
            why,
            network: Some(name.to_string()),
        });
    }
    if let Some(decision) = mnnvl_transport(rank, process, nodes) {
        return Some(decision);
    }
    if nodes.count == NodeCount::One {
        let evidence = rank
            .conns
            .first()
            .map(|c| c.evidence.clone())
            .or_else(|| rank.max_nnodes.as_ref().map(|n| n.evidence.clone()))
            .or_else(|| nodes.evidence.clone())?;
        return Some(RankDecision {
            transport: Transport::None,
            evidence,
            basis: vec![],
            why: String::new(),
            network: None,
        });
    }
    let module = module_transport(rank, process, job);
    match nodes.count {
        NodeCount::Several => {
            // Every link this rank printed stayed inside its node, while the excerpt does
            // show NET links (of other ranks): NCCL connects only the ranks at a ring's or
            // tree's node boundary over the network (graph/connect.cc), so this one carried
            // no inter-node traffic, whatever module it selected.
            let local_only = !rank.conns.is_empty() && rank.conns.iter().all(|c| !c.is_network());
            if local_only && job.net_links_shown {
                return Some(RankDecision::inside_node(rank));
            }
            if let Some(m) = module {
                return Some(m);
            }
            if !rank.conns.is_empty() && rank.max_nnodes.as_ref().is_none_or(|n| n.value <= 1) {
                // Only links inside the node are in this rank's excerpt.
                return Some(RankDecision::inside_node(rank));
            }
            let evidence = rank.max_nnodes.as_ref().map(|n| n.evidence.clone())?;
            Some(RankDecision {
                transport: Transport::Unknown,
                evidence,
                basis: vec![],
                why: String::new(),
                network: None,
            })
        }
        // Node count not shown: an explicitly RDMA (or TCPX) module is what inter-node
        // traffic uses; Socket is printed by single-node runs too.
        NodeCount::Unknown => {
            let m = module?;
            if is_rdma(m.transport) || m.transport == Transport::Tcpx {
                Some(m)
            } else {
                Some(RankDecision {
                    transport: Transport::Unknown,
                    ..m
                })
            }
        }
        NodeCount::One => None,
    }
}

/// Multi-node NVLink: what an MNNVL communicator (`MNNVL 1`, or its `P2P/MNNVL` links)
/// says about the traffic between hosts.
/// - NCCL names every P2P link of an MNNVL communicator `P2P/MNNVL` (p2p.cc: `comm->MNNVL ?
///   "MNNVL" : "CUMEM"`), so a link's label does not say that it leaves its host.
/// - NCCL looks for an NVLink clique only when the host hashes already make several nodes,
///   unless `NCCL_MNNVL_ENABLE=1` forces the check (init.cc 2.21+: `(nNodes > 1 &&
///   MNNVL_ENABLE != 0) || MNNVL_ENABLE == 1`). So `MNNVL 1` proves several hosts only where
///   the environment did not force it; forced (one GB200 tray tested alone), host names decide.
/// - With the whole communicator one clique (`nNodes 1`), every transfer between hosts, if
///   there were several, went over NVLink: never over the network NCCL selected.
///
/// `None` where the rank is not MNNVL, or where another rule decides (one node shown; a
/// forced clique that is not the whole communicator).
fn mnnvl_transport(rank: &Rank, process: &Process, nodes: &Nodes) -> Option<RankDecision> {
    let link = rank.conns.iter().find(|c| c.label == "P2P/MNNVL");
    let (evidence, basis) = match (&rank.mnnvl, link) {
        (Some(e), _) => (e, Basis::Mnnvl),
        (None, Some(conn)) => (&conn.evidence, Basis::ChannelLines),
        (None, None) => return None,
    };
    let forced = mnnvl_forced(process);
    let nvlink = |why: String| RankDecision {
        transport: Transport::Nvlink,
        evidence: evidence.clone(),
        basis: vec![basis],
        why,
        network: None,
    };
    match nodes.count {
        NodeCount::One => None,
        NodeCount::Several => Some(nvlink("an NVLink clique (MNNVL 1) across hosts".into())),
        NodeCount::Unknown if !forced => Some(nvlink(
            "MNNVL 1: NCCL forms an NVLink clique only across hosts unless NCCL_MNNVL_ENABLE=1"
                .into(),
        )),
        NodeCount::Unknown => {
            let one_clique = rank.max_nnodes.as_ref().is_none_or(|n| n.value <= 1);
            one_clique.then(|| RankDecision {
                transport: Transport::Unknown,
                evidence: evidence.clone(),
                basis: vec![basis],
                why: "NCCL_MNNVL_ENABLE=1 makes one NVLink clique of one host or several, \
                      and no line shows which"
                    .into(),
                network: None,
            })
        }
    }
}

/// `NCCL_MNNVL_ENABLE=1`: NCCL looked for an NVLink clique even on one host.
fn mnnvl_forced(process: &Process) -> bool {
    process
        .env("NCCL_MNNVL_ENABLE")
        .is_some_and(|f| f.value == "1")
}

/// The network module NCCL selected for this rank when no connection line shows it:
/// `Using network X`, else a plugin naming itself, else aws-ofi-nccl's provider, else the
/// version's init sequence (2.3–2.5 print no `Using network`).
fn module_transport(rank: &Rank, process: &Process, job: &JobContext) -> Option<RankDecision> {
    // No connection line, so no `/GDRDMA` to go by (`Connected all rings … GDR 1` is no
    // evidence of it: see `gdr`).
    let decision = |name: &str, first: Basis, evidence: &Evidence| {
        let (t, mut basis) = network_transport_why(name, process, job, false);
        basis.insert(0, first);
        let why = describe_network(name, t, process, job, &basis);
        RankDecision {
            transport: t,
            evidence: evidence.clone(),
            basis,
            why,
            network: Some(name.to_string()),
        }
    };
    if let Some(net) = &rank.network {
        return Some(decision(&net.value, Basis::NetworkModule, &net.evidence));
    }
    if let Some(named) = &process.self_named {
        return Some(decision(
            &named.value,
            Basis::PluginSymbols,
            &named.evidence,
        ));
    }
    let ofi_failed = process.plugin_failures.iter().any(|(f, _)| f.is_ofi());
    if let Some(provider) = process.ofi_provider.as_ref().filter(|_| !ofi_failed) {
        return Some(decision(
            "Libfabric",
            Basis::OfiProvider,
            &provider.evidence,
        ));
    }
    if let Some(devices) = &process.ib_devices_evidence
        && process.ib_init_failed.is_none()
    {
        return Some(decision("IB", Basis::InitSequence, devices));
    }
    // Errors that only a NET connection of that module produces.
    if let Some(error) = &process.ib_traffic {
        let mut d = decision("IB", Basis::NetErrors, error);
        d.basis.retain(|b| *b != Basis::NetworkModule);
        return Some(d);
    }
    if let Some(error) = &process.socket_traffic {
        return Some(decision("Socket", Basis::NetErrors, error));
    }
    let ib_disabled = process.env("NCCL_IB_DISABLE").filter(|f| f.value == "1");
    let ib_absent =
        process.ib_no_device || process.verbs_missing.is_some() || ib_disabled.is_some();
    if ib_absent
        && process.ib_devices.is_empty()
        && let Some(sockets) = &process.socket_interfaces
    {
        return Some(decision("Socket", Basis::InitSequence, &sockets.evidence));
    }
    // No external plugin (`No plugin found ..., using internal implementation`) and the IB
    // module off (`NCCL_IB_DISABLE set by environment to 1.`): net.cc tries the plugin, then
    // IB, then Socket, so Socket is the only network left, `NET/Socket : Using` line or not.
    if let (Some(disabled), Some(_)) = (ib_disabled, &process.internal_net)
        && process.ib_devices.is_empty()
        && process.loaded_plugin.is_none()
    {
        return Some(decision("Socket", Basis::InitSequence, &disabled.evidence));
    }
    None
}

/// `network IB; link layer RoCE`, `network AWS Libfabric; provider efa`.
fn describe_network(
    name: &str,
    t: Transport,
    process: &Process,
    job: &JobContext,
    basis: &[Basis],
) -> String {
    let mut parts = vec![format!("network {name}")];
    if basis.contains(&Basis::OfiProvider) {
        let provider = process
            .ofi_provider
            .as_ref()
            .map(|f| f.value.clone())
            .or_else(|| process.ofi_filter.clone())
            .or_else(|| job.provider.clone());
        if let Some(p) = provider {
            parts.push(format!("provider {p}"));
        }
    }
    if basis.contains(&Basis::LinkLayer) {
        parts.push(format!(
            "link layer {}",
            if t == Transport::Roce { "RoCE" } else { "IB" }
        ));
    }
    if t == Transport::Ib && !basis.contains(&Basis::LinkLayer) {
        parts.push("IB verbs, port link layer not shown".into());
    }
    if basis.contains(&Basis::Gdr) {
        parts.push("GPUDirect RDMA through aws-ofi-nccl (EFA)".into());
    }
    parts.join("; ")
}

/// Is this network name NCCL's IB verbs module or a plugin built on it: HPC-X's
/// nccl-rdma-sharp-plugins (`IBext`, its `NCCL RDMA Plugin`, `UCX`, `UCX-RMA`, `UCX-UCT`,
/// which open the same verbs devices through UCX, and the CollNet plugin `SHARP`, in-network
/// reduction on InfiniBand switches), Google's `gIB` (A3 Ultra, A4)?
fn is_ib_module(lower: &str) -> bool {
    lower == "ib"
        || lower.starts_with("ibext")
        || lower.contains("rdma plugin")
        || lower.starts_with("ucx")
        || lower == "gib"
        || lower == "sharp"
}

fn network_transport_why(
    name: &str,
    process: &Process,
    job: &JobContext,
    gdr: bool,
) -> (Transport, Vec<Basis>) {
    let lower = name.to_ascii_lowercase();
    if lower == "socket" || lower == "fastsocket" {
        (Transport::Socket, vec![])
    } else if lower.contains("tcpx") || lower.contains("fastrak") {
        (Transport::Tcpx, vec![])
    } else if is_ib_module(&lower) {
        verbs_transport(process, job)
    } else if lower.contains("libfabric") || lower == "ofi" || lower == "aws ofi" {
        let provider = process
            .ofi_provider
            .as_ref()
            .map(|f| f.value.clone())
            .or_else(|| job.provider.clone());
        match provider {
            // libfabric's verbs provider is RDMA over the same IB verbs as NCCL's IB module.
            Some(p) if provider_transport(&p) == Transport::Ib => {
                let (t, mut basis) = verbs_transport(process, job);
                basis.insert(0, Basis::OfiProvider);
                (t, basis)
            }
            Some(p) => (provider_transport(&p), vec![Basis::OfiProvider]),
            None if process
                .ofi_filter
                .as_deref()
                .is_some_and(|f| f.eq_ignore_ascii_case("efa")) =>
            {
                (Transport::Efa, vec![Basis::OfiProvider])
            }
            None if process.efa_runtime.is_some() => (Transport::Efa, vec![]),
            // GPUDirect RDMA over aws-ofi-nccl: its TCP providers cannot do it.
            None if gdr => (Transport::Efa, vec![Basis::Gdr]),
            None => (Transport::Unknown, vec![]),
        }
    } else if process
        .verbs_plugin
        .as_ref()
        .is_some_and(|f| f.value.eq_ignore_ascii_case(name))
    {
        // A plugin that lists verbs ports in NCCL's own form is built on its IB code.
        verbs_transport(process, job)
    } else {
        (Transport::Other, vec![])
    }
}

/// IB verbs (NCCL's IB module, a plugin built on it, libfabric's verbs provider): `ib`, or
/// `roce` where every port's link layer says RoCE. They run over InfiniBand and RoCE alike,
/// and the port list (`NET/IB : Using [0]mlx5_0:1/IB|RoCE`) is the only per-port link-layer
/// evidence.
fn verbs_transport(process: &Process, job: &JobContext) -> (Transport, Vec<Basis>) {
    let own: Vec<String> = process
        .ib_devices
        .iter()
        .map(|d| d.link_layer.to_ascii_lowercase())
        .collect();
    let layers = if own.is_empty() {
        &job.link_layers
    } else {
        &own
    };
    if layers.is_empty() {
        // RDMA either way; RoCE is the refinement a port must show.
        (Transport::Ib, vec![])
    } else if layers.iter().all(|l| l == "roce") {
        (Transport::Roce, vec![Basis::LinkLayer])
    } else {
        (Transport::Ib, vec![Basis::LinkLayer])
    }
}

/// A libfabric provider name → transport: `efa` is EFA; `verbs;ofi_rxm` (libfabric over IB
/// verbs) is `ib`, refined by the ports' link layer where the caller knows it; `tcp;ofi_rxm`,
/// `tcp`, `sockets`, `udp` are plain TCP/IP inside libfabric; anything else (`cxi` on
/// Slingshot, `psm3`, `opx`) is some other fabric.
pub fn provider_transport(provider: &str) -> Transport {
    let lower = provider.to_ascii_lowercase();
    if lower.starts_with("efa") {
        Transport::Efa
    } else if lower.starts_with("verbs") {
        Transport::Ib
    } else if is_tcp_provider(&lower) {
        Transport::Socket
    } else {
        Transport::Other
    }
}

/// The kernel protocol a TCP/IP provider of libfabric carries traffic over: `udp;ofi_rxd`
/// over UDP, the others (`tcp`, `tcp;ofi_rxm`, `sockets`) over TCP.
pub fn ip_protocol(provider: &str) -> &'static str {
    if provider.to_ascii_lowercase().starts_with("udp") {
        "UDP"
    } else {
        "TCP"
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

fn hosts(facts: &Facts) -> Vec<String> {
    // Processes by how many records they logged: a name garbled by interleaved output
    // (`80356ljm:803564` beside `ljm:803564`, `23:83` beside `worker-23:83`) is seen rarely.
    let mut processes: Vec<&Process> = facts
        .processes
        .iter()
        .filter(|p| !p.ranks.is_empty())
        // `...` is an author's abbreviation, not a host.
        .filter(|p| {
            p.host
                .as_deref()
                .is_some_and(|h| h.bytes().any(|b| b.is_ascii_alphanumeric()))
        })
        .collect();
    processes.sort_by_key(|p| std::cmp::Reverse(p.records));
    let mut kept: Vec<(&str, u32)> = Vec::new();
    let mut by_pid: std::collections::HashMap<u32, Vec<&str>> = Default::default();
    for p in processes {
        let (Some(host), Some(pid)) = (p.host.as_deref(), p.pid) else {
            continue;
        };
        let same_pid = by_pid.entry(pid).or_default();
        let garbled = same_pid
            .iter()
            .any(|k| *k != host && (k.ends_with(host) || host.ends_with(k)));
        if garbled {
            continue;
        }
        if same_pid.len() < 64 {
            same_pid.push(host);
        }
        if kept.len() < MAX_HOSTS {
            kept.push((host, pid));
        }
    }
    let mut hosts: Vec<String> = kept
        .into_iter()
        .map(|(h, _)| h.to_string())
        .chain(facts.header_hosts.iter().cloned())
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// Enough host names for every decision and message; memory stays bounded.
const MAX_HOSTS: usize = 16_384;

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
    // The texts are made only for signals kept: a job of thousands of processes gives a
    // signal or two per process, and formatting each label would cost more than the rest.
    let mut push =
        |why: &dyn Fn() -> String, on: &dyn Fn() -> Option<String>, evidence: &Evidence| {
            if signals.len() < 64 {
                signals.push(Signal {
                    why: why(),
                    on: on(),
                    evidence: evidence.clone(),
                });
            }
        };
    // IPoIB interfaces or IB ports anywhere in the job.
    let ib_hardware = facts
        .processes
        .iter()
        .any(|p| !p.ib_devices.is_empty() || shows_ipoib(p));
    for p in &facts.processes {
        let on = || p.name();
        // aws-ofi-nccl that went on to select a TCP provider did find one: the provider
        // signal below says what ran.
        let on_tcp_provider = p
            .ofi_provider
            .as_ref()
            .is_some_and(|f| is_tcp_provider(&f.value));
        for (failure, evidence) in &p.plugin_failures {
            let found_later = *failure == PluginFailure::OfiProviderMissing && on_tcp_provider;
            if *failure != PluginFailure::NoneUsable && !found_later {
                push(&|| failure_text(*failure).to_string(), &on, evidence);
            }
        }
        if let Some(loaded) = &p.loaded_plugin {
            let lower = loaded.value.to_ascii_lowercase();
            let rdma_plugin = is_ib_module(&lower)
                || lower.contains("libfabric")
                || lower == "ofi"
                || lower.contains("rdma");
            let on_socket = p.ranks.iter().any(|&r| {
                facts.ranks[r]
                    .network
                    .as_ref()
                    .is_some_and(|f| f.value.eq_ignore_ascii_case("socket"))
            }) || p
                .ranks
                .iter()
                .any(|&r| rank_is(per_rank, r, Transport::Socket));
            // The plugin itself on libfabric's tcp provider is not "NCCL used Socket".
            if rdma_plugin && on_socket && !on_tcp_provider {
                let why = || {
                    format!(
                        "the RDMA net plugin `{}` was loaded, yet NCCL used Socket",
                        loaded.value
                    )
                };
                push(&why, &on, &loaded.evidence);
            }
        }
        if let Some(evidence) = &p.ib_open_failed {
            let why = || "an IB/RoCE device exists, but NCCL could not open it".to_string();
            push(&why, &on, evidence);
        }
        if let Some(evidence) = &p.ib_devices_evidence {
            push(&|| "IB/RoCE devices are listed".into(), &on, evidence);
            if let Some(failed) = &p.ib_init_failed {
                push(&|| "NCCL's IB transport failed".into(), &on, failed);
            }
        }
        if let Some(provider) = &p.ofi_provider {
            let used_tcp = p
                .ranks
                .iter()
                .any(|&r| rank_is(per_rank, r, Transport::Socket));
            if is_tcp_provider(&provider.value) {
                let why = || {
                    format!(
                        "the OFI plugin runs on libfabric's {} provider `{}`",
                        ip_protocol(&provider.value),
                        provider.value
                    )
                };
                push(&why, &on, &provider.evidence);
            } else if used_tcp {
                let why = || {
                    format!(
                        "provider `{}` was selected, yet TCP was used",
                        provider.value
                    )
                };
                push(&why, &on, &provider.evidence);
            }
        }
        // NCCL could not load libibverbs (`Failed to open libibverbs.so[.1]`: rdma-core is
        // not in the image) or found no verbs device (no /dev/infiniband in the container)
        // on a job whose hosts carry IB: the fabric was there, NCCL could not reach it.
        if ib_hardware {
            if let Some(missing) = &p.verbs_missing {
                let why = || "the hosts have IB interfaces, but libibverbs could not be loaded";
                push(&|| why().to_string(), &on, missing);
            } else if p.ib_no_device
                && shows_ipoib(p)
                && let Some(interfaces) = &p.socket_interfaces
            {
                let why = || "NCCL found no IB device, yet its sockets ran over IPoIB".to_string();
                push(&why, &on, &interfaces.evidence);
            }
        }
        // NCCL_IB_HCA chose the HCAs for NCCL's IB transport (net_ib.cc echoes it only when
        // set: `NCCL_IB_HCA set to mlx5_0`, 2.7+), and that transport then found none of them
        // (`NET/IB : No device found.`): the job was set up for IB and ran on what was left.
        if p.ib_no_device
            && let Some(hca) = p.env("NCCL_IB_HCA").filter(|f| !f.value.trim().is_empty())
        {
            let why = || {
                format!(
                    "NCCL_IB_HCA={} chose IB devices, yet NCCL's IB transport found none",
                    hca.value
                )
            };
            push(&why, &on, &hca.evidence);
        }
        // The hosts of one job share their hardware: IPoIB or IB ports shown by any process
        // mean the IB fabric is there for the process that disabled it too.
        if let Some(disabled) = p.env("NCCL_IB_DISABLE").filter(|f| f.value == "1")
            && ib_hardware
        {
            let why = || "NCCL_IB_DISABLE=1 although the host has IB interfaces".to_string();
            push(&why, &on, &disabled.evidence);
        }
    }
    // The launch environment asked for an RDMA path (run, check and a pod's own run know it).
    for (why, fact) in asked_for_rdma(facts) {
        push(&|| why.clone(), &|| None, &fact.evidence);
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
        push(
            &|| format!("other ranks used {}", t.as_str()),
            &|| None,
            evidence,
        );
    }
    signals
}

/// Whether the process's sockets or bootstrap ran over an IPoIB interface (`ib0`, `ib-bond0`,
/// `ib0.8001`: the ipoib driver's names), which exists only on a host with an IB HCA.
pub fn shows_ipoib(p: &Process) -> bool {
    p.socket_interfaces
        .iter()
        .flat_map(|f| f.value.iter())
        .chain(p.bootstrap_interface.iter().map(|f| &f.value))
        .any(|name| name.starts_with("ib"))
}

/// The launch environment's requests for an RDMA path: `FI_PROVIDER` naming a provider that
/// is not TCP (the Ray Train DLC sets `efa`), `NCCL_NET_PLUGIN` naming an RDMA plugin (by name,
/// `libnccl-net-<name>.so`, or by path), `NCCL_NET` naming an RDMA network (aws-ofi-nccl
/// answers to `Libfabric`, `AWS Libfabric` and `OFI`; NCCL's own is `IB`).
fn asked_for_rdma(facts: &Facts) -> Vec<(String, &Fact<String>)> {
    let mut out = Vec::new();
    if let Some(f) = facts.launch_env("FI_PROVIDER")
        && !f.value.trim().is_empty()
        && !is_tcp_provider(&f.value)
        && !f
            .value
            .split(',')
            .all(|p| matches!(p.trim(), "shm" | "sm2" | "udp" | "sockets"))
    {
        out.push((
            format!(
                "FI_PROVIDER={} asked libfabric for an RDMA provider",
                f.value
            ),
            f,
        ));
    }
    if let Some(f) = facts.launch_env("NCCL_NET_PLUGIN")
        && names_rdma_plugin(&f.value)
    {
        out.push((
            format!("NCCL_NET_PLUGIN={} named an RDMA net plugin", f.value),
            f,
        ));
    }
    if let Some(f) = facts.launch_env("NCCL_NET")
        && names_rdma_network(&f.value)
    {
        out.push((format!("NCCL_NET={} pinned an RDMA network", f.value), f));
    }
    out
}

/// `NCCL_NET_PLUGIN`'s value names an RDMA plugin: NCCL opens `libnccl-net-<value>.so`, or
/// the path itself; the OFI (EFA), IB/SHARP and UCX plugins carry RDMA.
pub fn names_rdma_plugin(value: &str) -> bool {
    let base = value
        .rsplit('/')
        .next()
        .unwrap_or(value)
        .to_ascii_lowercase();
    let name = base
        .split(".so")
        .next()
        .unwrap_or(&base)
        .trim_start_matches("libnccl-net")
        .trim_start_matches(['-', '_']);
    name.split(['-', '_']).any(|token| {
        matches!(
            token,
            "ofi"
                | "libfabric"
                | "efa"
                | "ib"
                | "ibext"
                | "sharp"
                | "rdma"
                | "ucx"
                | "mlx5"
                | "gib"
        )
    })
}

/// `NCCL_NET`'s value names an RDMA network module.
pub fn names_rdma_network(value: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    is_ib_module(&v) || v.contains("libfabric") || v == "ofi" || v.contains("sharp")
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
        PluginFailure::LoadFailed => "a net plugin was found but could not be loaded",
        PluginFailure::Incompatible => "the net plugin has no compatible API version",
        PluginFailure::OfiProviderMissing => "aws-ofi-nccl found no usable libfabric provider",
        PluginFailure::OfiInitFailed => "aws-ofi-nccl failed to initialise",
        PluginFailure::OfiLibfabricTooOld => {
            "aws-ofi-nccl needs a newer libfabric for EFA than the one it loaded"
        }
        PluginFailure::InitFailed => "a net plugin failed to initialise",
        PluginFailure::NoneUsable => "no net plugin could be initialised",
    }
}

fn socket_fallback(
    facts: &Facts,
    inter_node: Transport,
    expect: Option<Transport>,
    rdma_signals: &[Signal],
    rdma_carried: bool,
    clique_only: bool,
    socket_module: bool,
) -> Option<bool> {
    match inter_node {
        Transport::None => return Some(false),
        // RDMA demonstrably carried traffic (NET/IB lines without the link layer), or the
        // node count is unknown but NCCL selected Socket: the fallback can still be evident.
        Transport::Unknown if rdma_carried => return Some(false),
        // Each communicator one NVLink clique: nothing between hosts used the network.
        Transport::Unknown if clique_only => return Some(false),
        Transport::Unknown if socket_module => {}
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

/// How a log shows that its traffic never left one machine, short of proving one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneHost {
    /// Every NET link joins two ranks that processes of this one host hold: NCCL counted
    /// nodes (NCCL_HOSTID, or no P2P/SHM path between the GPUs), the machine is one.
    LinksStayed,
    /// The node count is not shown, and every rank shown sits on one host that is one
    /// process with several ranks, or a Docker container (its default host name is the
    /// container id, 12 hex digits): nothing in the log points to another machine.
    NothingElseShown,
}

/// NCCL counted several nodes, yet they are one machine split (`NCCL_HOSTID`, or P2P and SHM
/// disabled: how `netcheck run --simulate-nodes` exercises the network path): every rank shown
/// shares one host name, and the log shows a cause, set in the environment NCCL echoes, or
/// more GPUs on the host than NCCL put on one node (`localRanks`). A lone pod's log of a
/// multi-node job shows one host too: it takes two ranks on the host and one of these to
/// tell. `Some` with the cause's lines (at most two; none for the GPU count).
pub fn machine_split(
    facts: &Facts,
    hosts: &[String],
    ranks_seen: usize,
    several_nodes: bool,
) -> Option<Vec<Evidence>> {
    if hosts.len() != 1 || ranks_seen < 2 || !several_nodes {
        return None;
    }
    let causes = ["NCCL_HOSTID", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE"];
    let evidence: Vec<Evidence> = facts
        .processes
        .iter()
        .flat_map(|p| causes.iter().filter_map(|var| p.env(var)))
        .map(|f| f.evidence.clone())
        .take(2)
        .collect();
    let per_node = facts.ranks.iter().filter_map(|r| r.local_ranks).max();
    let mut devices: Vec<u32> = facts.ranks.iter().filter_map(|r| r.dev).collect();
    devices.sort_unstable();
    devices.dedup();
    let more_than_a_node = per_node.is_some_and(|n| devices.len() > n as usize);
    (!evidence.is_empty() || more_than_a_node).then_some(evidence)
}

/// Whether the log shows one machine (see `OneHost`).
fn one_host_shown(facts: &Facts, hosts: &[String], count: NodeCount) -> Option<OneHost> {
    if hosts.len() != 1 || facts.header_hosts.len() > 1 || addresses_differ(facts).is_some() {
        return None;
    }
    let numbers = Numbers::new(facts);
    let shown = &numbers.shown;
    let net_links = || {
        facts
            .ranks
            .iter()
            .filter(|r| r.conns.iter().any(|c| c.is_network()))
    };
    let ends_shown = |r: &Rank, net: bool| {
        numbers
            .other_ends(r, net)
            .is_some_and(|peers| !peers.is_empty() && peers.iter().all(|p| shown.contains(p)))
    };
    if count == NodeCount::Several {
        let any = net_links().next().is_some();
        let stayed = net_links().all(|r| ends_shown(r, true));
        // Without NET links to go by: NCCL's nodes are one machine split.
        let split = !any && machine_split(facts, hosts, shown.len(), true).is_some();
        return ((any && stayed) || split).then_some(OneHost::LinksStayed);
    }
    if count != NodeCount::Unknown || net_links().next().is_some() {
        return None;
    }
    let host = hosts[0].as_str();
    let container = host.len() == 12
        && host
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let processes: Vec<&Process> = facts
        .processes
        .iter()
        .filter(|p| !p.ranks.is_empty())
        .collect();
    let one_process = processes.len() == 1 && processes[0].ranks.len() >= 2;
    // Every rank's links end at ranks shown, and no ring or communicator line counts more:
    // the communicator's ranks are all here (a head cut before `nNodes`, a `grep` excerpt).
    let world = facts.ranks.iter().map(|r| r.world.max(r.ring_ranks)).max();
    let closed = shown.len() >= 2
        && world.is_some_and(|w| w as usize <= shown.len())
        && facts.ranks.iter().all(|r| ends_shown(r, false));
    (container || one_process || closed).then_some(OneHost::NothingElseShown)
}

/// The ranks' numbers in one numbering: the communicator lines', or, in a log without any
/// (`NCCL_DEBUG_SUBSYS=NET`, a `grep via` excerpt), the ones the ranks' connection lines
/// print them by (`printed_number`), as long as no two ranks come out with the same number
/// (ranks of different communicators, numbered each their own way). The two are never
/// mixed: a rank without a communicator line beside ranks with one may print another
/// communicator's numbers.
struct Numbers {
    shown: Vec<u32>,
    printed_ok: bool,
}

impl Numbers {
    fn new(facts: &Facts) -> Numbers {
        let numbered: Vec<u32> = facts.ranks.iter().filter_map(|r| r.rank).collect();
        if !numbered.is_empty() {
            return Numbers {
                shown: numbered,
                printed_ok: false,
            };
        }
        let printed: Vec<u32> = facts.ranks.iter().filter_map(printed_number).collect();
        let mut distinct = printed.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let printed_ok = distinct.len() == printed.len();
        Numbers {
            shown: if printed_ok { printed } else { Vec::new() },
            printed_ok,
        }
    }

    /// The ranks at the other end of a rank's links (`net`: its network links only); `None`
    /// when a link's other end is not known: a numbered rank's connection of that kind named
    /// neither end as this rank (a smaller communicator's line), or an unnumbered rank has
    /// no printed number to go by.
    fn other_ends(&self, r: &Rank, net: bool) -> Option<Vec<u32>> {
        if r.rank.is_some() {
            let conns = || r.conns.iter().filter(|c| !net || c.is_network());
            if conns().any(|c| c.peers.is_empty()) {
                return None;
            }
            return Some(conns().flat_map(|c| c.peers.iter().copied()).collect());
        }
        if !self.printed_ok {
            return None;
        }
        printed_number(r)?;
        let links = r.printed_links.iter().filter(|l| !net || l.net);
        Some(links.map(|l| l.peer).collect())
    }
}

/// The number every connection line of a rank without a communicator line names its printer
/// by (`Link::printer_and_peer`): `None` when the lines name two (several communicators),
/// when there are none, or when more were seen than kept.
fn printed_number(r: &Rank) -> Option<u32> {
    let first = r.printed_links.first()?.printer;
    let one = r.printed_links.iter().all(|l| l.printer == first);
    (one && r.printed_links.len() < MAX_PEERS).then_some(first)
}

/// RDMA carried traffic even where the transport stays unknown: NCCL's IB module on
/// connection lines or in completion errors, without the port list that tells IB from RoCE.
fn rdma_carried(facts: &Facts, decided: &[Option<RankDecision>]) -> bool {
    let ib_lines = decided.iter().flatten().any(|d| {
        d.basis.contains(&Basis::ChannelLines)
            && d.network
                .as_deref()
                .is_some_and(|n| is_ib_module(&n.to_ascii_lowercase()))
    });
    ib_lines || facts.processes.iter().any(|p| p.ib_traffic.is_some())
}

/// Every undecided rank is undecided only because its communicator is one NVLink clique of
/// unknown extent (`mnnvl_transport`): one host or several, no traffic took the network.
fn clique_only(facts: &Facts, decided: &[Option<RankDecision>]) -> bool {
    let mut unknown = facts
        .ranks
        .iter()
        .zip(decided)
        .filter(|(_, d)| {
            d.as_ref()
                .is_some_and(|d| d.transport == Transport::Unknown)
        })
        .peekable();
    unknown.peek().is_some()
        && unknown.all(|(r, _)| {
            let mnnvl = r.mnnvl.is_some() || r.conns.iter().any(|c| c.label == "P2P/MNNVL");
            mnnvl && r.max_nnodes.as_ref().is_none_or(|n| n.value <= 1)
        })
}

/// A TCP-only plugin (FastSocket) or `NCCL_NET=Socket`: TCP was chosen on purpose.
fn deliberate_tcp(facts: &Facts) -> bool {
    let pinned_socket = facts
        .launch_env("NCCL_NET")
        .is_some_and(|f| f.value.trim().eq_ignore_ascii_case("socket"));
    pinned_socket
        || facts.processes.iter().any(|p| {
            p.env("NCCL_NET")
                .is_some_and(|f| f.value.eq_ignore_ascii_case("socket"))
                || p.loaded_plugin
                    .as_ref()
                    .is_some_and(|f| f.value.eq_ignore_ascii_case("fastsocket"))
                || p.self_named
                    .as_ref()
                    .is_some_and(|f| f.value.eq_ignore_ascii_case("fastsocket"))
        })
        || facts.ranks.iter().any(|r| {
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
    // No connection lines: `Connected all rings, use ring PXN x GDR 0` of a multi-node
    // communicator says its network connections ran without GPUDirect RDMA (NCCL's Socket
    // prints it). `GDR 1` proves nothing: NCCL 2.28.9 printed it over aws-ofi-nccl on
    // libfabric's tcp provider, whose connections had no `/GDRDMA` (tests/fixtures/logs/ofi),
    // and on one host with no network connection at all.
    let multi_node_without_gdr = facts
        .ranks
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(per_rank[*i], Some((t, _)) if t != Transport::None))
        .any(|(_, r)| r.ring_gdr == Some(false));
    multi_node_without_gdr.then_some(false)
}

#[cfg(test)]
mod tests {
    use super::{
        Transport, ip_protocol, names_rdma_network, names_rdma_plugin, provider_transport,
    };

    #[test]
    fn libfabric_providers_by_what_they_run_over() {
        for (provider, transport) in [
            ("efa", Transport::Efa),
            ("efa-direct", Transport::Efa),
            ("tcp;ofi_rxm", Transport::Socket),
            ("tcp", Transport::Socket),
            ("sockets", Transport::Socket),
            ("udp;ofi_rxd", Transport::Socket),
            // libfabric over IB verbs: RDMA, refined to RoCE by the link layer where known.
            ("verbs;ofi_rxm", Transport::Ib),
            ("verbs", Transport::Ib),
            ("cxi", Transport::Other),
            ("psm3", Transport::Other),
        ] {
            assert_eq!(provider_transport(provider), transport, "{provider}");
        }
        assert_eq!(ip_protocol("udp;ofi_rxd"), "UDP");
        for tcp in ["tcp", "tcp;ofi_rxm", "sockets"] {
            assert_eq!(ip_protocol(tcp), "TCP", "{tcp}");
        }
    }

    #[test]
    fn plugin_names_that_carry_rdma() {
        // NCCL opens libnccl-net-<name>.so for a name, or the path itself.
        for v in [
            "ofi",
            "aws-ofi",
            "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so",
            "libnccl-net-aws-ofi.so",
            "ib",
            "IBext",
        ] {
            assert!(names_rdma_plugin(v), "{v}");
        }
        for v in [
            "fastsocket",
            "/usr/lib/libnccl-net-gcpfastsocket.so",
            "none",
            "",
            "libnccl-net.so",
            "tcpx",
        ] {
            assert!(!names_rdma_plugin(v), "{v}");
        }
    }

    #[test]
    fn network_names_that_carry_rdma() {
        for v in [
            "IB",
            "AWS Libfabric",
            "Libfabric",
            "OFI",
            "IBext_v8",
            "UCX",
            "gIB",
        ] {
            assert!(names_rdma_network(v), "{v}");
        }
        for v in ["Socket", "FastSocket", ""] {
            assert!(!names_rdma_network(v), "{v}");
        }
    }
}
